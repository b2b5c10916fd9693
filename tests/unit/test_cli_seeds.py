"""Seeds where people give them and ``-o FILE`` (issue #14 item 1), through real
``crawldeck`` processes over the local web: ``crawl URL [URL ...]`` beside seeds files,
one line for an item that is neither, and the pages export written when the crawl ends.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clikit import main_in

from crawldeck.cli.crawl import gather_seeds, other_seeds


def test_seeds_from_urls_and_files_in_order_each_once(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("https://a.example/\nftp://nope.example/\n")
    seeds, problems = gather_seeds(
        [str(tmp_path / "a.txt"), "https://b.example/x", "https://A.EXAMPLE/"]
    )
    assert seeds == ["https://a.example/", "https://b.example/x"]
    assert len(problems) == 1 and problems[0].startswith(f"{tmp_path / 'a.txt'}: line 2: ")


@pytest.mark.parametrize(
    ("seed", "message"),
    [
        ("seeds.txt", "'seeds.txt' is neither an existing file nor a URL (a URL starts with "
                      "http:// or https://, or is a host name: example.org)"),
        ("docs", "'docs' is neither an existing file nor a URL"),
        ("1.5", "'1.5' is neither an existing file nor a URL"),
        ("hello world", "'hello world' is neither an existing file nor a URL"),
        ("ftp://files.example/", "seed 'ftp://files.example/': unsupported scheme 'ftp' "
                                 "(only http and https are crawled)\n"),  # the URL once
        ("example.org:99999", "seed 'example.org:99999': bad port"),
    ],
)  # fmt: skip
def test_a_seed_that_is_neither_a_file_nor_a_url_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    seed: str, message: str,
) -> None:  # fmt: skip
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "crawl", "https://ok.example/",
                             seed, "--no-ui")  # fmt: skip
    assert code == 2
    assert err.startswith(f"crawldeck crawl: error: {message}")
    assert err.count("\n") == 1 and out == ""
    assert not (tmp_path / "crawl.db").exists()  # refused before anything was opened


@pytest.mark.parametrize("given", ["docs.example.org/guide", "Example.ORG", "bücher.de:8080"])
def test_a_host_without_a_scheme_is_taken_as_http(given: str) -> None:
    """As wget and ``scrapy fetch``: ``example.org`` is ``http://example.org/``."""
    notes: list[str] = []
    seeds, problems = gather_seeds([given], notes)
    expected = {"docs.example.org/guide": "http://docs.example.org/guide",
                "Example.ORG": "http://example.org/",
                "bücher.de:8080": "http://xn--bcher-kva.de:8080/"}[given]  # fmt: skip
    assert (seeds, problems) == ([expected], [])
    assert notes == [f"seed {given!r} has no scheme: crawling {expected} (as wget does)"]


def test_a_seeds_file_says_once_that_lines_had_no_scheme(tmp_path: Path) -> None:
    """Issue #25 trial 15: the command line said so of a seed without a scheme, a seeds
    file's lines were taken silently; one note a file names how many, and the first."""
    listed = tmp_path / "seeds.txt"
    listed.write_text("# start\nhttp://a.example/\nb.example/docs\n\nc.example:8080\n")
    notes: list[str] = []
    seeds, _ = gather_seeds([str(listed)], notes)
    assert seeds == ["http://a.example/", "http://b.example/docs", "http://c.example:8080/"]
    assert notes == [f"{listed}: 2 lines without a scheme (the first: line 3): crawled as "
                     "http:// + the line, as wget -i does"]  # fmt: skip
    listed.write_text("http://a.example/\nb.example\n")
    notes.clear()
    gather_seeds([str(listed)], notes)
    assert notes == [f"{listed}: 1 line without a scheme (line 2): crawled as http:// + the "
                     "line, as wget -i does"]  # fmt: skip
    listed.write_text("http://a.example/\n")
    notes.clear()
    gather_seeds([str(listed)], notes)
    assert notes == []


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["-o", "pages.txt"], "-o 'pages.txt': expected a file name ending in .jsonl, .jl, "
                              ".json or .csv (the export's format is taken from it)"),
        (["-o", "nowhere/pages.csv"], "-o 'nowhere/pages.csv': the directory 'nowhere' does "
                                      "not exist"),
        (["-o", "./c.csv", "--db", "c.csv"], "-o 'c.csv' is the crawl file itself"),
        # a directory no file can be made in, even by root: said before the crawl, not
        # after it (issue #25 trial 16: an immutable directory failed the finished run)
        (["-o", "/sys/pages.csv"], "-o '/sys/pages.csv': cannot write in '/sys' "
                                   "(Permission denied)"),
        (["--stats-json", "/sys/stats.json"], "--stats-json '/sys/stats.json': cannot write "
                                              "in '/sys' (Permission denied)"),
        (["-o", "-"], "-o -: the crawl's progress and summary go to stdout; write the pages "
                      "there with crawldeck export crawl.db -o -"),
    ],
)  # fmt: skip
def test_a_bad_output_is_refused_before_the_crawl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    flags: list[str], message: str,
) -> None:  # fmt: skip
    (tmp_path / "c.csv").write_bytes(b"")
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "crawl", "http://127.0.0.1:9/",
                             "--no-ui", *flags)  # fmt: skip
    assert (code, out, err) == (2, "", f"crawldeck crawl: error: {message}\n")
    assert not (tmp_path / "crawl.db").exists() and (tmp_path / "c.csv").read_bytes() == b""


def test_other_seeds_are_named_only_when_no_host_is_shared() -> None:
    db = Path("crawl.db")
    earlier = ["http://a.test/", "http://a.test/docs/", "https://b.test/"]
    assert other_seeds(earlier, ["http://a.test/new"], db) is None  # a host shared
    assert other_seeds([], ["http://c.test/"], db) is None  # a crawl without seeds
    assert other_seeds(earlier, ["http://c.test/", "not a url"], db) == (
        "crawl.db holds a crawl of other seeds (http://a.test/ and 2 more): this run goes "
        "on with it, the seeds given added; --db NEW.db starts a new crawl"
    )
