"""A new user's trial of the command line (issue #14's loose ends): every one-line error
names its command as argparse's do (``crawldeck COMMAND: error: ...``), a bare number
is seconds for ``--max-time`` and bytes for ``--max-bytes`` as ``--help`` says, and
``--help`` says where the crawl file and its WARC files go."""

from __future__ import annotations

from pathlib import Path

import pytest
from clikit import main_in

from crawldeck.cli.flags import parse_size, parse_time_budget
from crawldeck.cli.parser import build_parser


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["crawl", "seeds.txt"],
         "crawldeck crawl: error: 'seeds.txt' is neither an existing file nor a URL "
         "(a URL starts with http:// or https://, or is a host name: example.org)"),
        (["demo", "--db", " "], "crawldeck demo: error: --db needs a file name"),
        (["recrawl", "missing.db"],
         "crawldeck recrawl: error: missing.db does not exist or is not a file"),
        (["export", "notes.txt"],
         "crawldeck export: error: notes.txt is not a SQLite crawl file (file is not a "
         "database)"),
        (["show", "missing.db", "http://a.example/"],
         "crawldeck show: error: missing.db does not exist or is not a file"),
        (["config", "-s", "delay=5"],
         "crawldeck config: error: -s: unknown config key 'delay' (did you mean 'delay_ms'?)"),
    ],
)  # fmt: skip
def test_every_command_error_is_one_line_naming_the_command(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    line: str,
) -> None:
    (tmp_path / "notes.txt").write_text("not a database\n")
    code, out, err = main_in(tmp_path, monkeypatch, capsys, *args)
    assert (code, out, err) == (2, "", line + "\n")


def crawl_help() -> str:
    """``crawldeck crawl --help`` as one line (argparse wraps it to the terminal)."""
    return " ".join(build_parser().commands["crawl"].format_help().split())


def test_a_bare_number_is_seconds_and_bytes_as_help_says() -> None:
    assert parse_time_budget("5") == parse_time_budget("5s") == 5
    assert parse_size("5") == parse_size("5b") == 5
    text = crawl_help()
    assert "(s, m, h, d, w; a bare number is seconds, as timeout(1): 90 = 90s)" in text
    assert "(kB = 1000, KiB = 1024 bytes; a bare number is bytes: 4096 = 4KiB)" in text


def test_help_says_where_the_crawl_file_and_the_warc_files_go() -> None:
    assert (
        "--db FILE the crawl's SQLite file, and where the WARC files go: beside it, named "
        "after it (NAME-00001.warc.gz); a crawl in it resumes (default crawl.db, in the "
        "current directory)"
    ) in crawl_help()
