"""A recrawl end to end: the tests that need no server, process or console (pure logic, the
store, virtual time); the others are in ``tests/loopback/test_recrawl_crawl.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawldeck.cli.main import main


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["recrawl", "{tmp}/missing.db"], "does not exist or is not a file"),
        (["recrawl", "{tmp}/empty.db"], "is empty, not a crawl file"),
        (["recrawl", "{tmp}/text.db"], "is not a SQLite crawl file"),
        (["recrawl", "{tmp}/text.db", "--older-than", "2 days"], "bad duration '2 days'"),
    ],
)
def test_recrawl_refuses_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    (tmp_path / "empty.db").write_bytes(b"")
    (tmp_path / "text.db").write_text("not a database\n")
    assert main([a.format(tmp=tmp_path) for a in args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("crawldeck recrawl: error: ")
