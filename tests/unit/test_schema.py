"""Schema version 3 of the crawl file (issue #14 item 11): keys, names, views, the: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_schema.py``."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from crawlkit import rows
from schemakit import V1, V2, counts, shape

from crawldeck.core.records import FrontierRow, PageRecord, status_mix
from crawldeck.core.storage.datasette_meta import metadata
from crawldeck.core.storage.export import export
from crawldeck.core.storage.store import RENAMED_COLUMNS, SCHEMA_VERSION, Store
from crawldeck.core.storage.store import schema as store_module


@pytest.mark.parametrize("old", [V1, V2], ids=["version-1", "version-2"])
def test_an_old_file_is_upgraded_whole_in_one_open(old: Path, tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    shutil.copy(old, db)
    before = counts(db)
    old_blocked = rows(db, "SELECT url, reason, at FROM blocked")
    old_hosts = rows(db, "SELECT host, robots_expires_at, backoff_until, pages_fetched FROM hosts")
    old_frontier = rows(db, "SELECT key, state, available_at FROM frontier ORDER BY seq")
    old_pages = rows(db, "SELECT url, status, fetched_at, bytes FROM pages ORDER BY rowid")
    assert before["pages"] == 12 and before["frontier"] == {"done": 12, "queued": 30}
    with Store(db) as store:
        assert store.counts()["pages"] == 12
    assert rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [("3",)]
    assert counts(db) == before | {"sitemaps": 0}  # a version-1 file gets the table
    assert rows(db, "SELECT url, reason, blocked_at FROM blocked") == old_blocked
    assert (
        rows(
            db,
            "SELECT host, robots_expires_epoch_s, backoff_until_epoch_s, pages_fetched FROM hosts",
        )
        == old_hosts
    )
    assert rows(db, "SELECT key, state, available_epoch_s FROM frontier ORDER BY seq") == (
        old_frontier
    )
    assert rows(db, "SELECT url, status, fetched_at, bytes FROM pages ORDER BY rowid") == old_pages
    # the old rows were all written by the file's one run
    for table in ("pages", "blocked", "page_versions"):
        assert rows(db, f"SELECT count(*) - count(run_id), max(run_id) FROM {table}") == [(0, 1)]
    # the same schema as a new file's, but for the columns a later crawldeck adds on open
    Store(tmp_path / "new.db").close()
    assert shape(db) == shape(tmp_path / "new.db")


def test_a_failed_upgrade_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "crawl.db"
    shutil.copy(V2, db)
    before, old_shape = counts(db), shape(db)
    real_rebuild = store_module._rebuild

    def fail_at_links(cur: sqlite3.Cursor, table: str, create: str, copy: str) -> None:
        if table == "links":  # pages and blocked were rebuilt, columns renamed
            raise OSError("power cut")
        real_rebuild(cur, table, create, copy)

    monkeypatch.setattr(store_module, "_rebuild", fail_at_links)
    with pytest.raises(OSError, match="power cut"):
        Store(db)
    assert rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [("2",)]
    assert counts(db) == before
    assert shape(db) == old_shape  # `at`, `backoff_until`, no keys, no _old_ tables
    monkeypatch.undo()
    with Store(db) as store:
        assert store.counts()["pages"] == 12
    assert rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [("3",)]


def test_an_export_of_an_old_file_has_the_new_names(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    shutil.copy(V1, db)
    out = io.StringIO()
    assert export(db, "blocked", "jsonl", out) == 1
    row = json.loads(out.getvalue())
    assert list(row) == ["url", "host", "reason", "detail", "blocked_at", "run_id"]
    assert row["reason"] == "scope" and row["run_id"] == 1


def test_a_page_a_rerun_requeued_keeps_only_its_new_links(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    url = "http://a.test/"

    def record(status: int, links: list[str]) -> None:
        page = PageRecord(url, url, "a.test", 0, status, "text/html", 1, 1.0, 0.0, False,
                          None, False)  # fmt: skip
        store.record_page(page, key=url, links=[(url, to) for to in links], new_rows=(),
                          state="done")  # fmt: skip

    with Store(db) as store:
        store.enqueue_urls([FrontierRow(url, url, "a.test", 0, 0)])
        record(503, [url + "old", url + "both"])
        store.flush()
        assert store.requeue_failed() == {"a.test": 1}  # its pages row waits for the retry
        record(200, [url + "both", url + "new"])
        store.flush()
    assert rows(db, "SELECT to_url FROM links ORDER BY to_url") == [
        (url + "both",),
        (url + "new",),
    ]
    assert rows(db, "SELECT count(*) FROM pragma_foreign_key_check('links')") == [(2,)]


def test_a_requeued_failure_keeps_its_answer_until_the_retry_replaces_it(tmp_path: Path) -> None:
    """Issue #25 trial 15: a rerun stopped before it fetched a failed URL again listed
    it as "not fetched"; the row of its 503 is kept and counted as awaiting a retry."""
    db = tmp_path / "crawl.db"
    home, flaky = "http://a.test/", "http://a.test/flaky"

    def record(url: str, status: int, links: list[str], state: str) -> None:
        page = PageRecord(url, url, "a.test", 0, status, "text/html", 10, 1.0, 0.0, False,
                          None, False)  # fmt: skip
        store.record_page(page, key=url, links=[(url, to) for to in links], new_rows=(),
                          state=state)  # fmt: skip

    broken = "SELECT to_url, status FROM broken_links"
    with Store(db) as store:
        store.enqueue_urls([FrontierRow(home, home, "a.test", 0, 0)])
        store.enqueue_urls([FrontierRow(flaky, flaky, "a.test", 1, 0)])
        record(home, 200, [flaky], "done")
        record(flaky, 503, [], "failed")
        store.flush()
        assert store.counts()["retrying"] == 0
        assert store.requeue_failed() == {"a.test": 1}
        counted = store.counts()
        assert (counted["pages"], counted["retrying"], counted["queued"]) == (2, 1, 1)
        assert rows(db, broken) == [(flaky, 503)]
        assert store.page_totals() == ({"2xx": 1, "5xx": 1}, 20)
        assert store.requeue_failed() == {}  # queued already: not counted twice
        record(flaky, 200, [], "done")
        store.flush()
        counted = store.counts()
        assert (counted["pages"], counted["retrying"], counted["queued"]) == (2, 0, 0)
        assert status_mix(store.pages_added()) == {"2xx": 2}  # the 503 replaced
        assert store.pages_added()["pages"] == 2
    assert rows(db, broken) == []
    assert rows(db, "SELECT state, attempts FROM frontier WHERE url = ?", flaky) == [("done", 1)]


def test_the_metadata_names_only_columns_the_schema_has(tmp_path: Path) -> None:
    Store(tmp_path / "crawl.db").close()
    tables = shape(tmp_path / "crawl.db")
    described = metadata("crawl")["databases"]["crawl"]["tables"]
    assert set(described) == set(tables) - {"meta"}
    for table, entry in described.items():
        names = {c[0] for c in tables[table][0]}
        assert set(entry.get("columns", {})) <= names, table
        assert set(entry.get("units", {})) <= names, table
    assert described["pages"]["units"]["bytes"] == "byte"
    assert described["pages"]["units"]["elapsed_ms"] == "millisecond"
    assert not {new for _, _, new in RENAMED_COLUMNS} - {
        name for table in tables.values() for name, *_ in table[0]
    }
    assert SCHEMA_VERSION == 3


def test_a_view_whose_sql_changed_is_made_anew_on_open(tmp_path: Path) -> None:
    """A view holds no data: one that says other than this version's (a file of an
    earlier crawldeck) is dropped and made again when a ``Store`` opens the file."""
    db = tmp_path / "c.db"
    Store(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("DROP VIEW broken_links")
        conn.execute("CREATE VIEW broken_links AS SELECT 1 AS stale")
    Store(db).close()
    made = store_module.BROKEN_LINKS_SQL.replace(" IF NOT EXISTS", "", 1)
    assert rows(db, "SELECT sql FROM sqlite_master WHERE name = 'broken_links'") == [(made,)]
