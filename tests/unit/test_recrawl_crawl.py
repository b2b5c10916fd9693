"""A recrawl end to end: the tests that need no server, process or console (pure logic, the
store, virtual time); the others are in ``tests/loopback/test_recrawl_crawl.py``."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from crawldeck.cli.main import main
from crawldeck.core.records import FrontierRow, PageRecord
from crawldeck.core.storage.store import Store


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


def test_a_refused_recrawl_leaves_the_file_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recrawl refused at start-up (here a ``password_env`` that is not set) queues
    nothing again (issue #25: a trial's refused recrawl left every page queued, and the
    next crawl fetched them all again, one of them into a 401)."""
    monkeypatch.delenv("CRAWLDECK_TEST_PW", raising=False)
    db = tmp_path / "crawl.db"
    auth = {"http://a.test": {"user": "me", "password_env": "CRAWLDECK_TEST_PW"}}
    with Store(db) as store:
        run = store.begin_run({"auth": auth})
        store.enqueue_urls([FrontierRow("http://a.test/", "http://a.test/", "a.test", 0, 0)])
        store.record_page(
            PageRecord(
                "http://a.test/", "http://a.test/", "a.test", 0, 200, "text/html", 10, 1.0,
                1.7e9, False, None, False,
            ),
            key="http://a.test/", links=(), new_rows=(), state="done",
        )  # fmt: skip
        store.end_run(run, "finished")

    def states() -> list[tuple[str, str]]:
        with closing(sqlite3.connect(db)) as conn:
            return conn.execute("SELECT key, state FROM frontier ORDER BY key").fetchall()

    assert states() == [("http://a.test/", "done")]
    assert main(["recrawl", str(db), "--no-ui"]) == 2
    err = capsys.readouterr().err
    assert "CRAWLDECK_TEST_PW" in err and err.count("\n") == 1
    assert states() == [("http://a.test/", "done")]  # not queued again
