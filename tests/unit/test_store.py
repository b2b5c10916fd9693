"""The SQLite store against real files: schema, round trips, ordering, locking, crashes."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any, cast

import pytest
from fakeclock import FakeClock

from crawldeck.core.errors import StoreError
from crawldeck.core.records import (
    BlockedRecord,
    FrontierRow,
    HostRecord,
    PageRecord,
    from_iso_utc,
    to_iso_utc,
)
from crawldeck.core.storage.store import SCHEMA_VERSION, Store

T0 = 1714564800.25  # 2024-05-01T12:00:00.250000Z
#: Long enough that the writer never commits on its own during a test: only
#: flush(), close() or a full batch commit, which makes "not yet committed" observable.
NEVER_MS = 3_600_000


def raw(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows from a separate plain connection (what another reader of the file sees)."""
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql, params).fetchall()


def row(key: str, host: str = "a.test", **kw: Any) -> FrontierRow:
    values: dict[str, Any] = {"depth": 1, "priority": 1}
    values.update(kw)
    return FrontierRow(key=key, url=f"http://{host}/{key}", host=host, **values)


def page(url: str, **kw: Any) -> PageRecord:
    values: dict[str, Any] = {
        "url": url,
        "final_url": url,
        "host": "a.test",
        "depth": 1,
        "status": 200,
        "content_type": "text/html; charset=utf-8",
        "bytes": 5120,
        "elapsed_ms": 12.5,
        "fetched_at": T0,
        "rendered": False,
        "error": None,
        "noindex": False,
    }
    values.update(kw)
    return PageRecord(**values)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "crawl.db"


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    s = Store(db, clock=lambda: T0)
    yield s
    s.close()


# ---------------------------------------------------------------- time format


def test_iso_format_is_fixed_width_utc_with_microseconds() -> None:
    assert to_iso_utc(T0) == "2024-05-01T12:00:00.250000Z"
    assert to_iso_utc(0) == "1970-01-01T00:00:00.000000Z"
    assert from_iso_utc("2024-05-01T12:00:00.250000Z") == T0
    assert from_iso_utc(to_iso_utc(1714564800.123456)) == 1714564800.123456
    with pytest.raises(StoreError, match="not a UTC timestamp"):
        from_iso_utc("2024-05-01 12:00:00")


# ---------------------------------------------------------------- schema


def test_schema_is_created_with_the_contract_columns(store: Store, db: Path) -> None:
    def columns(table: str) -> list[str]:
        return [r[1] for r in raw(db, f"PRAGMA table_info({table})")]

    assert columns("pages") == [
        "url",
        "final_url",
        "host",
        "depth",
        "status",
        "content_type",
        "bytes",
        "elapsed_ms",
        "fetched_at",
        "rendered",
        "error",
        "noindex",
        "warc_file",
        "warc_offset",
        "warc_length",
        "payload_digest",
        "title",
        "etag",
        "last_modified",
        "content_length",
        "canonical_url",
        "duplicate_of",
        "simhash",
        "near_duplicate_of",
        "run_id",
    ]
    assert columns("blocked") == ["url", "host", "reason", "detail", "blocked_at", "run_id"]
    assert columns("hosts") == [
        "host",
        "ip",
        "robots_status",
        "robots_expires_epoch_s",
        "crawl_delay_ms",
        "delay_ms",
        "backoff_attempts",
        "backoff_until_epoch_s",
        "pages_fetched",
        "state",
        "backoff_started_epoch_s",
        "learnt_delay_ms",
    ]
    assert columns("frontier") == [
        "key",
        "url",
        "host",
        "depth",
        "priority",
        "state",
        "available_epoch_s",
        "attempts",
        "redirects",
        "via",
        "seq",
        "score",
        "inlinks",
    ]
    assert columns("links") == ["from_url", "to_url", "anchor"]
    assert columns("runs") == ["id", "started_at", "finished_at", "status", "config", "stats"]
    assert raw(db, "SELECT key, value FROM meta ORDER BY key") == [
        ("application", "crawldeck"),
        ("schema_version", str(SCHEMA_VERSION)),
    ]
    indexes = {r[0] for r in raw(db, "SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"frontier_state_seq", "pages_host", "links_to"} <= indexes
    assert raw(db, "PRAGMA journal_mode") == [("wal",)]
    # frontier key and hosts host are primary keys
    assert [r[1] for r in raw(db, "PRAGMA table_info(frontier)") if r[5]] == ["key"]
    assert [r[1] for r in raw(db, "PRAGMA table_info(hosts)") if r[5]] == ["host"]


def test_resume_query_uses_the_state_seq_index(store: Store, db: Path) -> None:
    plan = raw(db, "EXPLAIN QUERY PLAN SELECT * FROM frontier WHERE state = 'queued' ORDER BY seq")
    text = " ".join(str(r[-1]) for r in plan)
    assert "frontier_state_seq" in text
    assert "TEMP B-TREE" not in text  # no sort: rows stream in seq order


def test_reopen_keeps_data_and_seq_continues(db: Path) -> None:
    with Store(db) as s:
        s.enqueue_urls([row("a"), row("b")])
        assert s.has_crawl() is False  # not committed yet
        s.flush()
        assert s.has_crawl() is True
    with Store(db) as s:
        assert s.has_crawl() is True
        s.enqueue_urls([row("c")])
        s.flush()
        assert [r.key for r in s.load_frontier()] == ["a", "b", "c"]
    assert raw(db, "SELECT key, seq FROM frontier ORDER BY seq") == [("a", 1), ("b", 2), ("c", 3)]


def test_empty_file_gets_the_schema(db: Path) -> None:
    db.write_bytes(b"")
    with Store(db) as s:
        assert s.has_crawl() is False
    assert raw(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [("3",)]


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("content", [b"hello, not a database\n" * 50, b"x"])
def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(db: Path, content: bytes) -> None:
    db.write_bytes(content)
    with pytest.raises(StoreError) as info:
        Store(db)
    assert str(info.value) == f"{db} is not a SQLite crawl file (file is not a database)"
    assert db.read_bytes() == content
    assert not Path(f"{db}-wal").exists()


def test_another_sqlite_database_is_refused(db: Path) -> None:
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("CREATE TABLE notes (x)")
        conn.commit()
    with pytest.raises(
        StoreError, match="^" + re.escape(f"{db} is a SQLite file but not a crawldeck crawl")
    ):
        Store(db)


def test_another_schema_version_is_refused(db: Path) -> None:
    Store(db).close()
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
        conn.commit()
    with pytest.raises(StoreError) as info:
        Store(db)
    assert str(info.value) == f"{db} has schema version 99; this crawldeck reads version 3"
    # the lock was released on the failed open: fixing the file makes it usable again
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
        )
        conn.commit()
    Store(db).close()


def test_second_store_on_the_same_file_fails_fast(db: Path) -> None:
    first = Store(db)
    try:
        with pytest.raises(StoreError) as info:
            Store(db)
        assert str(info.value) == f"{db} is in use by another crawldeck (pid {os.getpid()})"
        assert "\n" not in str(info.value)
    finally:
        first.close()
    Store(db).close()  # released on close


def test_missing_directory_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"^cannot open .*/nope/crawl\.db: No such file"):
        Store(tmp_path / "nope" / "crawl.db")


# ---------------------------------------------------------------- round trips


def test_duplicates_are_counted_as_committed_and_at_open(store: Store, db: Path) -> None:
    """``pages_added`` and ``page_totals`` count the rows with ``duplicate_of`` and
    ``near_duplicate_of`` (the console's dupes line); a row recorded again is counted
    by its latest response."""
    first = "http://a.test/1"
    store.record_page(page(first), key="1", links=(), new_rows=(), state="done")
    store.record_page(
        page("http://a.test/2", duplicate_of=first), key="2", links=(), new_rows=(), state="done"
    )
    store.record_page(
        page("http://a.test/3", near_duplicate_of=first), key="3", links=(), new_rows=(),
        state="done",
    )  # fmt: skip
    store.record_page(
        page("http://a.test/3", duplicate_of=first), key="3", links=(), new_rows=(), state="done"
    )
    both = {"duplicate_of": first, "near_duplicate_of": first}  # exact is near too: once
    store.record_page(page("http://a.test/4", **both), key="4", links=(), new_rows=(), state="done")
    store.record_page(
        page("http://a.test/5", near_duplicate_of=first), key="5", links=(), new_rows=(),
        state="done",
    )  # fmt: skip
    store.flush()
    added = store.pages_added()
    assert (added["pages"], added["duplicates"], added["near_duplicates"]) == (5, 3, 1)
    mix, _bytes = store.page_totals()
    assert mix == {"2xx": 5, "duplicates": 3, "near_duplicates": 1}


def test_a_page_recorded_again_replaces_its_links(store: Store, db: Path) -> None:
    """Its latest response wins, links included (a refetch, or a cluster result that
    lands twice after a Redis restart, never doubles a page's outlinks)."""
    first = [("http://a.test/k1", "http://a.test/k2"), ("http://a.test/k1", "http://a.test/k3")]
    other = [("http://a.test/k9", "http://a.test/k2")]
    store.record_page(page("http://a.test/k9"), key="k9", links=other, new_rows=(), state="done")
    store.record_page(page("http://a.test/k1"), key="k1", links=first, new_rows=(), state="done")
    store.record_page(page("http://a.test/k1"), key="k1", links=first, new_rows=(), state="done")
    store.flush()
    assert raw(db, "SELECT from_url, to_url FROM links ORDER BY rowid") == other + first
    later = [("http://a.test/k1", "http://a.test/k4")]
    store.record_page(page("http://a.test/k1"), key="k1", links=later, new_rows=(), state="done")
    store.flush()
    assert raw(db, "SELECT from_url, to_url FROM links ORDER BY rowid") == other + later
    assert raw(db, "SELECT COUNT(*) FROM pages") == [(2,)]


def test_page_round_trip_is_one_operation(store: Store, db: Path) -> None:
    store.enqueue_urls([row("k1")])
    p = page(
        "http://a.test/k1",
        final_url="http://a.test/k1/",
        status=301,
        content_type="text/html",
        bytes=0,
        elapsed_ms=3.25,
        rendered=True,
        error="gave up after 3 tries",
        noindex=True,
    )
    new = [
        row("k2", depth=2, redirects=("k1",), via="http://a.test/k1"),
        row("k3", host="b.test", available_at=T0 + 5, attempts=1),
    ]
    links = [("http://a.test/k1", "http://a.test/k2"), ("http://a.test/k1", "http://b.test/k3")]
    store.record_page(p, key="k1", links=links, new_rows=new, state="done")
    store.flush()
    assert raw(
        db,
        "SELECT url, final_url, host, depth, status, content_type, bytes,"
        " elapsed_ms, fetched_at, rendered, error, noindex FROM pages",
    ) == [
        (
            "http://a.test/k1",
            "http://a.test/k1/",
            "a.test",
            1,
            301,
            "text/html",
            0,
            3.25,
            "2024-05-01T12:00:00.250000Z",
            1,
            "gave up after 3 tries",
            1,
        )
    ]
    assert raw(db, "SELECT from_url, to_url FROM links ORDER BY rowid") == links
    assert raw(db, "SELECT * FROM frontier ORDER BY seq") == [
        ("k1", "http://a.test/k1", "a.test", 1, 1, "done", 0.0, 0, "[]", None, 1, 0.0, 1),
        (
            "k2",
            "http://a.test/k2",
            "a.test",
            2,
            1,
            "queued",
            0.0,
            0,
            '["k1"]',
            "http://a.test/k1",
            2,
            0.0,
            1,
        ),
        ("k3", "http://b.test/k3", "b.test", 1, 1, "queued", T0 + 5, 1, "[]", None, 3, 0.0, 1),
    ]
    # FrontierRow round trip, including the JSON redirects and via
    assert list(store.load_frontier()) == [
        FrontierRow(
            "k2", "http://a.test/k2", "a.test", 2, 1, "queued", 0.0, 0, ("k1",), "http://a.test/k1"
        ),
        FrontierRow("k3", "http://b.test/k3", "b.test", 1, 1, "queued", T0 + 5, 1, (), None),
    ]


def test_failed_page_with_no_response(store: Store, db: Path) -> None:
    store.enqueue_urls([row("k1")])
    p = page("http://a.test/k1", status=None, content_type=None, bytes=0, error="timeout: read")
    store.record_page(p, key="k1", links=(), new_rows=(), state="failed")
    store.flush()
    assert raw(db, "SELECT status, content_type, error FROM pages") == [
        (None, None, "timeout: read")
    ]
    assert raw(db, "SELECT state FROM frontier") == [("failed",)]
    assert store.counts()["failed"] == 1


def test_blocked_round_trip_first_reason_wins(store: Store, db: Path) -> None:
    store.record_blocked(BlockedRecord("http://a.test/x", "a.test", "depth", "depth 11 > 10", T0))
    store.record_blocked(BlockedRecord("http://a.test/x", "a.test", "robots", "later", T0 + 1))
    store.record_blocked(BlockedRecord("http://b.test/y", "b.test", "robots", "disallowed", T0))
    store.flush()
    assert raw(db, "SELECT url, host, reason, detail, blocked_at FROM blocked ORDER BY rowid") == [
        ("http://a.test/x", "a.test", "depth", "depth 11 > 10", "2024-05-01T12:00:00.250000Z"),
        ("http://b.test/y", "b.test", "robots", "disallowed", "2024-05-01T12:00:00.250000Z"),
    ]
    assert store.counts()["blocked"] == {"depth": 1, "robots": 1}


def test_host_round_trip_and_upsert(store: Store, db: Path) -> None:
    first = HostRecord(
        "a.test", "127.0.0.1", "ok", T0 + 86400, 2000.0, 2000.0, 0, None, 3, "active"
    )
    second = HostRecord(
        "a.test", None, "unreachable", None, None, 1000.0, 2, T0 + 4.5, 7, "backoff"
    )
    other = HostRecord("b.test:8080", None, None, None, None, 1000.0, 0, None, 0, "active")
    store.upsert_host(first)
    store.upsert_host(other)
    store.flush()
    assert store.load_hosts() == {"a.test": first, "b.test:8080": other}
    store.upsert_host(second)
    store.flush()
    assert store.load_hosts() == {"a.test": second, "b.test:8080": other}
    assert raw(db, "SELECT host FROM hosts ORDER BY rowid") == [("a.test",), ("b.test:8080",)]


def test_runs(db: Path) -> None:
    clock = FakeClock(T0)
    with Store(db, clock=clock) as s:
        run = s.begin_run({"delay_ms": 1000, "strip_params": ("sid", "gclid"), "path": Path("/x")})
        assert run == 1  # allotted at once: begin_run does not wait for the writer
        s.flush()
        assert raw(db, "SELECT id, status, finished_at FROM runs") == [(1, "running", None)]
        clock.advance(60)
        s.end_run(run, "finished", stats={"run_id": 1, "fetches": 2})
    with Store(db, clock=clock) as s:
        assert s.begin_run({}) == 2
    assert raw(db, "SELECT * FROM runs ORDER BY id") == [
        (
            1,
            "2024-05-01T12:00:00.250000Z",
            "2024-05-01T12:01:00.250000Z",
            "finished",
            '{"delay_ms": 1000, "path": "/x", "strip_params": ["sid", "gclid"]}',
            '{"run_id": 1, "fetches": 2}',  # in the order given (core.crawl.stats)
        ),
        (2, "2024-05-01T12:01:00.250000Z", None, "running", "{}", None),
    ]


# ---------------------------------------------------------------- ordering


def test_writes_apply_in_call_order(store: Store, db: Path) -> None:
    store.mark("a", "done")  # before the row exists: a no-op, not reordered after it
    store.enqueue_urls([row("a"), row("b")])
    store.mark("a", "in_flight")
    store.mark("a", "queued", attempts=2, available_at=T0 + 30)
    store.mark("b", "in_flight")
    store.mark("b", "blocked")
    store.enqueue_urls([row("a", host="z.test"), row("c")])  # a known key keeps its row
    store.flush()
    assert raw(db, "SELECT key, host, state, attempts, available_epoch_s, seq FROM frontier") == [
        ("a", "a.test", "queued", 2, T0 + 30, 1),
        ("b", "a.test", "blocked", 0, 0.0, 2),
        ("c", "a.test", "queued", 0, 0.0, 4),  # seq 3 went to the ignored duplicate
    ]


def test_bad_states_are_refused_at_the_call(store: Store) -> None:
    with pytest.raises(StoreError, match="unknown frontier state 'gone'"):
        store.mark("a", cast(Any, "gone"))
    with pytest.raises(StoreError, match="state must be 'done', 'failed' or 'queued'"):
        store.record_page(
            page("http://a.test/"), key="a", links=(), new_rows=(), state=cast(Any, "spilled")
        )
    with pytest.raises(StoreError, match="state 'queued' needs next_url and next_host"):
        store.record_page(page("http://a.test/"), key="a", links=(), new_rows=(), state="queued")
    with pytest.raises(StoreError, match="unknown state 'new'"):
        store.enqueue_urls([row("a", state="new")])
    store.flush()  # the store is still usable


def test_load_frontier_order_and_in_flight_back_as_queued(store: Store) -> None:
    store.enqueue_urls([row(k) for k in "abcdef"])
    store.mark("b", "in_flight")
    store.mark("c", "done")
    store.mark("d", "in_flight", attempts=3)
    store.mark("e", "failed")
    store.mark("f", "blocked")
    store.enqueue_urls([row("g")])
    store.mark("a", "in_flight", attempts=1)
    store.flush()
    got = [(r.key, r.state, r.attempts) for r in store.load_frontier()]
    assert got == [("a", "queued", 1), ("b", "queued", 0), ("d", "queued", 3), ("g", "queued", 0)]
    assert sorted(store.iter_keys()) == list("abcdefg")
    assert store.counts() == {
        "pages": 0,
        "blocked": {},
        "queued": 1,
        "in_flight": 3,
        "done": 1,
        "failed": 1,
        "frontier_blocked": 1,
        "retrying": 0,
    }


def test_host_counts_count_every_state(store: Store) -> None:
    store.enqueue_urls([row("a1"), row("a2"), row("b1", host="b.test"), row("a3")])
    store.mark("a1", "done")
    store.flush()
    assert store.host_counts() == {"a.test": 3, "b.test": 1}


def test_readers_stream_many_rows(store: Store) -> None:
    n = 5000  # several fetchmany batches
    store.enqueue_urls([row(f"k{i:05d}", host=f"h{i % 7}.test") for i in range(n)])
    store.flush()
    keys = [r.key for r in store.load_frontier()]
    assert keys == [f"k{i:05d}" for i in range(n)]
    assert sum(1 for _ in store.iter_keys()) == n
    assert sum(store.host_counts().values()) == n


# ---------------------------------------------------------------- pending keys


def test_contains_sees_pending_keys_before_they_are_committed(db: Path) -> None:
    with Store(db, flush_interval_ms=NEVER_MS) as s:
        assert s.contains("a") is False
        s.enqueue_urls([row("a")])
        s.record_page(page("http://a.test/a"), key="a", links=(), new_rows=[row("b")], state="done")
        assert s.contains("a") is True
        assert s.contains("b") is True
        assert s.contains("c") is False
        assert raw(db, "SELECT count(*) FROM frontier") == [(0,)]  # nothing committed yet
        s.flush()
        assert raw(db, "SELECT key FROM frontier ORDER BY seq") == [("a",), ("b",)]
        assert s._pending == set()  # cleared as the batch committed; SQLite answers now
        assert s.contains("a") is True
        assert s.contains("b") is True
        assert s.contains("c") is False


# ---------------------------------------------------------------- failures


def test_a_failed_write_is_raised_by_the_next_call(db: Path) -> None:
    s = Store(db)
    s.enqueue_urls([row("a")])
    s.flush()
    assert s._wconn is not None
    # Simulate a full disk: the writer is idle (waiting on its queue) while we cap the file.
    pages_now = s._wconn.execute("PRAGMA page_count").fetchone()[0]
    s._wconn.execute(f"PRAGMA max_page_count = {pages_now + 2}")
    big = [("http://a.test/a", "http://a.test/" + "x" * 2000 + str(i)) for i in range(200)]
    s.record_page(page("http://a.test/a"), key="a", links=big, new_rows=(), state="done")
    with pytest.raises(StoreError) as info:
        s.flush()
    assert str(info.value) == f"{db}: disk full (No space left on device)"  # SQLITE_FULL
    with pytest.raises(StoreError, match="disk full"):
        s.enqueue_urls([row("b")])
    with pytest.raises(StoreError, match="disk full"):
        s.contains("a")
    s.close()  # already reported: close releases everything without raising again
    with Store(db) as again:  # the lock is free; the failed batch left nothing behind
        assert again.counts()["pages"] == 0
        assert again.counts()["queued"] == 1


def test_an_unreported_writer_failure_is_raised_by_close(db: Path) -> None:
    s = Store(db)
    unstorable = cast(Any, [1.0])  # a value SQLite cannot bind: the writer's batch fails
    s.upsert_host(HostRecord("a.test", None, None, None, None, unstorable, 0, None, 0, "x"))
    with pytest.raises(StoreError, match="write failed"):
        s.close()
    s.close()  # idempotent


def test_calls_after_close_raise(db: Path) -> None:
    s = Store(db)
    s.close()
    s.close()
    with pytest.raises(StoreError, match="the store is closed"):
        s.enqueue_urls([row("a")])
    with pytest.raises(StoreError, match="the store is closed"):
        s.load_frontier()


def test_partial_pages_counts_the_bodies_read_in_part(store: Store) -> None:
    """The summary's "read in part" (issue #25): pages whose body was cut."""
    cut = {"error": "body_too_large: over 10485760 bytes"}
    store.record_page(page("http://a.test/1"), key="1", links=(), new_rows=(), state="done")
    store.record_page(page("http://a.test/2", **cut), key="2", links=(), new_rows=(), state="done")
    store.record_page(
        page("http://a.test/3", error="links_cut: kept 1 of 2 links (max_links_per_page)"),
        key="3", links=(), new_rows=(), state="done",
    )  # fmt: skip
    store.flush()
    assert store.partial_pages() == 1


def test_links_cut_pages_counts_the_pages_whose_links_were_cut(store: Store) -> None:
    """The summary's "links cut" (issue #25): parse_max_bytes or max_links_per_page."""
    errors = [
        None,
        "body_too_large: over 10485760 bytes",
        "links_cut: kept 1 of 2 links (max_links_per_page)",
        "parse_cut: links read from the first 32768 of 40000 bytes (parse_max_bytes)",
        "parse_timeout: no links",
    ]
    for i, error in enumerate(errors):
        url = f"http://a.test/{i}"
        store.record_page(page(url, error=error), key=url, links=(), new_rows=(), state="done")
    store.flush()
    assert store.links_cut_pages() == 2
