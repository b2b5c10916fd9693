"""Seeds where people give them and ``-o FILE`` (issue #14 item 1), through real
``crawldeck`` processes over the local web: ``crawl URL [URL ...]`` beside seeds files,
one line for an item that is neither, and the pages export written when the crawl ends.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from clikit import main_in, run
from httpserver import HTTPTestServer, Response

from crawldeck.cli.crawl import gather_seeds, other_seeds
from crawldeck.localweb import LocalWeb


@pytest.fixture
def web() -> Iterator[LocalWeb]:
    with LocalWeb(delay_scale=0.2) as w:
        yield w


def fetched(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {url for (url,) in conn.execute("SELECT url FROM pages WHERE status = 200")}
    finally:
        conn.close()


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
        ("ftp://files.example/", "seed 'ftp://files.example/': "),
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


def test_a_missing_seeds_file_in_a_real_process(tmp_path: Path) -> None:
    proc = run("crawl", "seeds.txt", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == ("crawldeck crawl: error: 'seeds.txt' is neither an existing file nor a "
                           "URL (a URL starts with http:// or https://, or is a host name: "
                           "example.org)\n")  # fmt: skip


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


def test_a_seed_without_a_scheme_is_crawled_with_one_info_line(tmp_path: Path) -> None:
    """A real crawl of ``127.0.0.1:PORT/`` (no scheme) over loopback: fetched over
    http, one line on stderr says so."""
    with HTTPTestServer() as srv:
        srv.set("/", Response(200, {"Content-Type": "text/html"}, b"<p>home</p>"))
        given = srv.url("/").removeprefix("http://")
        proc = run("crawl", given, "--no-ui", "--no-warc", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    note = f"crawldeck: seed {given!r} has no scheme: crawling http://{given} (as wget does)"
    assert proc.stderr.splitlines()[0] == note
    assert fetched(tmp_path / "crawl.db") == {f"http://{given}"}


def test_urls_on_the_command_line_and_a_seeds_file_together(tmp_path: Path, web: LocalWeb) -> None:
    (tmp_path / "more.txt").write_text(web.hosts["www"] + "/\n")
    home = web.hosts["norobots"] + "/"
    proc = run("crawl", home, "more.txt", "--no-ui", "--delay-ms", "5", "--scope", "host",
               "--max-depth", "0", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert fetched(tmp_path / "crawl.db") == {home, web.hosts["www"] + "/"}


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_output_writes_the_pages_export_when_the_crawl_ends(
    tmp_path: Path, web: LocalWeb, suffix: str
) -> None:
    home = web.hosts["norobots"] + "/"
    proc = run("crawl", home, "--no-ui", "--delay-ms", "5", "-o", f"pages{suffix}",
               cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    fmt = suffix[1:]
    same = run("export", "crawl.db", "--table", "pages", "--format", fmt, cwd=tmp_path)
    written = (tmp_path / f"pages{suffix}").read_text()
    assert written == same.stdout  # the export of the crawl file, as crawldeck export
    if fmt == "jsonl":
        rows = [json.loads(line) for line in written.splitlines()]
    else:
        rows = list(csv.DictReader(written.splitlines()))
    assert {r["url"] for r in rows} >= {home} and len(rows) == len(fetched(tmp_path / "crawl.db"))
    assert f"{len(rows)} pages written to pages{suffix}" in proc.stdout.splitlines()[-1]
    # it wrote the export: no hint to export it again (issue #25)
    assert "crawl saved in crawl.db\n" in proc.stdout and "export with:" not in proc.stdout


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["-o", "pages.txt"], "-o 'pages.txt': expected a file name ending in .jsonl, .jl, "
                              ".json or .csv (the export's format is taken from it)"),
        (["-o", "nowhere/pages.csv"], "-o 'nowhere/pages.csv': the directory 'nowhere' does "
                                      "not exist"),
        (["-o", "./c.csv", "--db", "c.csv"], "-o 'c.csv' is the crawl file itself"),
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


def test_a_crawl_of_other_seeds_into_an_old_file_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new user's trial: ``crawldeck crawl URL`` in a directory holding an old
    ``crawl.db`` of other seeds resumed it silently (0 fetches, exit 0)."""
    with HTTPTestServer() as first, HTTPTestServer("127.0.0.2") as second:
        for server in (first, second):
            server.set("/robots.txt", Response(404))
            server.set("/", Response(200, {"Content-Type": "text/html"}, b"<p>hello</p>"))
        args = ("--no-ui", "--delay-ms", "0", "-s", "sitemaps=false", "-s", "render=never")
        code, _, err = main_in(tmp_path, monkeypatch, capsys, "crawl", first.url("/"), *args)
        assert code == 0 and "other seeds" not in err
        code, _, err = main_in(tmp_path, monkeypatch, capsys, "crawl", second.url("/"), *args)
        assert code == 0
        assert (
            f"crawldeck: warning: crawl.db holds a crawl of other seeds ({first.url('/')})" in err
        )
        code, _, err = main_in(tmp_path, monkeypatch, capsys, "crawl", first.url("/"), *args)
        assert code == 0 and "other seeds" not in err
    assert fetched(tmp_path / "crawl.db") == {first.url("/"), second.url("/")}
