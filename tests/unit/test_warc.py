"""WARC output (issue #13): the tests that need no server, process or console (pure logic,
the store, virtual time); the others are in ``tests/loopback/test_warc.py``."""

from __future__ import annotations

import base64
import hashlib
import sqlite3
import tracemalloc
from contextlib import closing
from pathlib import Path

import pytest
from crawlkit import rows

from crawldeck.core.storage.archive import first_payloads
from crawldeck.core.storage.store import SCHEMA_VERSION, Store
from crawldeck.core.storage.warc_output import WarcFiles
from crawldeck.core.storage.warc_reader import warc_files, warc_stem

DATE = "2024-05-01T12:00:00.250000Z"


def payload_digest(data: bytes) -> str:
    """The WARC digest of ``data`` computed here, not by the writer (its fastwarc):
    ``sha1:`` and the base 32 of its SHA-1 (WARC/1.1 §5.9, as warcio checks it)."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


# ---------------------------------------------------------------- the writer alone


def test_stem_and_file_names(tmp_path: Path) -> None:
    assert warc_stem(Path("crawl.db")) == "crawl"
    assert warc_stem(Path("x.sqlite")) == "x"
    assert warc_stem(Path("plain")) == "plain"
    for name in ("c-00002.warc.gz", "c-00010.warc.gz", "c-1.warc.gz", "cc-00001.warc.gz"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in warc_files(tmp_path, "c")] == ["c-00002.warc.gz", "c-00010.warc.gz"]


class FakePages:
    """The part of ``Store`` that ``archive.first_payloads`` reads."""

    def __init__(self, rows: list[tuple[str, str, str, str | None]]) -> None:
        self.rows = rows

    def first_payloads(self) -> list[tuple[str, str, str, str | None]]:
        return self.rows


def test_on_resume_a_canonical_counts_only_on_the_same_host_with_another_key() -> None:
    rows_in = [
        ("sha1:A", "http://a.test/p", DATE, "http://a.test/q"),  # same host, another page
        ("sha1:B", "http://a.test/r", DATE, "https://docs.example/r"),  # another host
        ("sha1:C", "http://a.test/s?utm_source=x", DATE, "http://a.test/s"),  # same key
        ("sha1:D", "http://a.test/t", DATE, "http://a.test/t"),  # itself
        ("sha1:E", "http://a.test/u", DATE, None),
    ]
    got = list(first_payloads(FakePages(rows_in), ("utm_source",)))  # type: ignore[arg-type]
    assert [canonical for *_, canonical in got] == ["http://a.test/q", None, None, None, None]
    assert [row[:3] for row in got] == [row[:3] for row in rows_in]


def test_digest_map_memory_per_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The duplicate map's cost per distinct payload, measured (module docstring of
    ``core.storage.warc``: about 300 bytes)."""
    n = 5_000
    firsts = WarcFiles(tmp_path, "c", 1 << 30, [("software", "t")]).firsts
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(n):
        url = f"http://www.example.com/section/{i:08d}/page.html"
        firsts[payload_digest(url.encode())] = (url, DATE[:-1] + "Z")
    per_page = (tracemalloc.get_traced_memory()[0] - before) / n
    tracemalloc.stop()
    with capsys.disabled():
        print(f"\ndigest map: {per_page:.0f} bytes per distinct payload (52-char URLs)")
    assert 150 < per_page < 450


# ---------------------------------------------------------------- the schema


def test_a_version_1_file_is_upgraded_in_place(tmp_path: Path) -> None:
    """A file of version 1 (today's schema minus the issue #13 columns) gets them."""
    db = tmp_path / "old.db"
    with closing(sqlite3.connect(db)) as conn:
        conn.executescript(
            "CREATE TABLE pages (url TEXT NOT NULL, final_url TEXT, host TEXT NOT NULL,"
            " depth INTEGER NOT NULL, status INTEGER, content_type TEXT, bytes INTEGER NOT NULL,"
            " elapsed_ms FLOAT NOT NULL, fetched_at TEXT NOT NULL, rendered INTEGER NOT NULL,"
            " error TEXT, noindex INTEGER NOT NULL);"
            "CREATE UNIQUE INDEX pages_url ON pages (url);"
            "CREATE TABLE blocked (url TEXT, host TEXT, reason TEXT, detail TEXT, at TEXT);"
            "CREATE TABLE hosts (host TEXT PRIMARY KEY, ip TEXT, robots_status TEXT,"
            " robots_expires_at FLOAT, crawl_delay_ms FLOAT, delay_ms FLOAT,"
            " backoff_attempts INTEGER, backoff_until FLOAT, pages_fetched INTEGER,"
            " state TEXT, backoff_started FLOAT, learnt_delay_ms FLOAT);"
            "CREATE TABLE frontier (key TEXT PRIMARY KEY, url TEXT, host TEXT, depth INTEGER,"
            " priority INTEGER, state TEXT, available_at FLOAT, attempts INTEGER,"
            " redirects TEXT, via TEXT, seq INTEGER);"
            "CREATE INDEX frontier_state_seq ON frontier (state, seq);"
            "CREATE TABLE links (from_url TEXT, to_url TEXT);"
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, started_at TEXT, finished_at TEXT,"
            " status TEXT, config TEXT);"
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "INSERT INTO meta VALUES ('schema_version', '1'), ('application', 'crawldeck');"
            "INSERT INTO pages VALUES ('http://a.test/', NULL, 'a.test', 0, 200, 'text/html',"
            " 5, 1.0, '2024-05-01T12:00:00.250000Z', 0, NULL, 0);"
        )
    Store(db).close()
    columns = [r[1] for r in rows(db, "PRAGMA table_info(pages)")]
    assert columns[12:] == [
        "warc_file", "warc_offset", "warc_length", "payload_digest", "title", "etag",
        "last_modified", "content_length", "canonical_url", "duplicate_of", "simhash",
        "near_duplicate_of", "run_id",
    ]  # fmt: skip
    assert rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]
    assert rows(db, "SELECT url, bytes, warc_file FROM pages") == [("http://a.test/", 5, None)]
    assert ("pages_payload_digest",) in rows(
        db, "SELECT name FROM sqlite_master WHERE type = 'index'"
    )
