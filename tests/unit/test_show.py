"""``crawldeck show``: the tests that need no server, process or console (pure logic,
the store); the others are in ``tests/loopback/test_show.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from clikit import main_in

from crawldeck.core.records import BlockedRecord, FrontierRow, PageRecord
from crawldeck.core.storage.store import Store


def test_show_of_a_refused_url_says_why_it_has_no_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``show`` of a URL robots.txt refused: why, not "not a page" (issue #25 trial 6)."""
    with Store(tmp_path / "c.db") as store:
        store.begin_run({})
        url = "http://a.test/private/secret"
        store.record_blocked(BlockedRecord(url, "a.test", "robots", "disallowed", 1.7e9))
        store.end_run(1, "finished")
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "show", "c.db", "a.test/private/secret")
    assert (code, out) == (2, "")
    assert err == (
        "crawldeck show: error: a.test/private/secret was refused, never fetched (robots: "
        "disallowed): no page in c.db\n"
    )


def test_show_of_another_spelling_of_a_page_shows_that_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``?sid=2`` beside the ``?sid=1`` fetched (one dedupe key) is that page, as
    ``links`` says it (issue #25 trial 7: "is not a page"); here it has no WARC record."""
    fetched = "http://a.test/p?sid=1"
    with Store(tmp_path / "c.db") as store:
        store.begin_run({})
        store.enqueue_urls([FrontierRow("http://a.test/p", fetched, "a.test", 0, 0)])
        page = PageRecord(
            fetched, fetched, "a.test", 0, 200, "text/html", 10, 1.0, 1.7e9, False, None, False
        )
        store.record_page(page, key="http://a.test/p", links=(), new_rows=(), state="done")
        store.end_run(1, "finished")
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "show", "c.db", "http://a.test/p?sid=2")
    assert (code, err) == (
        2,
        "crawldeck show: error: http://a.test/p?sid=2 has no WARC record (fetched with warc off)\n",
    )


def test_show_of_a_url_that_got_no_response_says_what_happened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #25 trial 16: ``show`` of a drip's URL said "fetched with warc off, or no
    response" where ``links --broken`` gave the timeout; it gives the error too."""
    drip = "http://a.test/drip"
    error = "timeout: total time budget of 60000 ms exceeded"
    with Store(tmp_path / "c.db") as store:
        store.begin_run({})
        store.enqueue_urls([FrontierRow(drip, drip, "a.test", 0, 0)])
        page = PageRecord(drip, drip, "a.test", 0, None, None, 0, 60000.0, 1.7e9, False, error,
                          False)  # fmt: skip
        store.record_page(page, key=drip, links=(), new_rows=(), state="failed")
        store.end_run(1, "finished")
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "show", "c.db", drip)
    assert (code, err) == (
        2,
        f"crawldeck show: error: {drip} has no WARC record: no response ({error})\n",
    )
