"""Politeness and failures against real loopback servers (issue #10, items 7, 9-11): the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_politeness_real.py``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from crawlkit import rows

from crawldeck.core.storage.store import Store


def test_an_older_crawl_file_gets_the_learnt_delay_column(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    store = Store(db)
    store.close()
    conn = sqlite3.connect(db)
    conn.execute("DROP VIEW host_summary")  # it names the column
    conn.execute("ALTER TABLE hosts DROP COLUMN learnt_delay_ms")  # as written before it
    conn.execute(
        "INSERT INTO hosts (host, delay_ms, backoff_attempts, pages_fetched, state)"
        " VALUES ('a.test', 1000, 0, 3, 'done')"
    )
    conn.commit()
    conn.close()
    store = Store(db)
    try:
        assert store.load_hosts()["a.test"].learnt_delay_ms is None
    finally:
        store.close()
    assert rows(db, "SELECT learnt_delay_ms FROM hosts") == [(None,)]
