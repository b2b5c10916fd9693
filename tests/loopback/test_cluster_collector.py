"""The collector (``core.cluster.collector``) against real ``redis-server`` processes:
entries XADDed as a worker's fenced commit appends them, collected into a real
``Store``, the SQLite file read back with ``sqlite3``. Plus the ``Store`` seams it uses
(``atomic``, ``set_meta``/``meta_items``, ``known_keys``)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import collectorkit
import pytest
import redis.asyncio as aioredis
from collectorkit import A, B, C, row, url
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redisfix import LocalRedisCluster, LoopbackRedis

from crawldeck.core.cluster import wire
from crawldeck.core.cluster.collector import REDIS_ERRORS, Collector
from crawldeck.core.cluster.keys import SHARDS, Keyspace, shard_of
from crawldeck.core.records import BlockedRecord, FrontierRow, HostRecord, PageRecord
from crawldeck.core.storage.store import Store

#: The fixtures shared with the other tier's file, as fixtures of this module.
store = collectorkit.store

KEYS = Keyspace("t1")
T0 = 1_700_000_000.0
assert len({shard_of(A), shard_of(B), shard_of(C)}) == 3


def page(u: str, host: str, status: int | None = 200, depth: int = 1) -> PageRecord:
    return PageRecord(
        url=u, final_url=u, host=host, depth=depth, status=status, content_type="text/html",
        bytes=100, elapsed_ms=5.0, fetched_at=T0, rendered=False,
        error=None if status else "connect: refused", noindex=False,
    )  # fmt: skip


def host_rec(host: str, pages: int) -> HostRecord:
    return HostRecord(host, "127.0.0.1", "ok", T0 + 3600, None, 100.0, 0, None, pages, "active")


def done(
    u: str, host: str, *, links: Sequence[str] = (), new: Sequence[FrontierRow] = ()
) -> list[Any]:
    """The op of ``u`` fetched (200, ``done``) with its links and new rows."""
    return wire.op_record_page(
        page(u, host), key=u, links=[(u, t) for t in links], new_rows=new, state="done",
        next_url=None, next_host=None, redirects=(),
    )  # fmt: skip


async def xadd(
    client: Any, host: str, ops: list[list[Any]], *, m: str | None = None, entry_id: str = "*"
) -> str:
    """Append an entry as the fenced commit does: to ``host``'s shard stream."""
    fields = {"w": "w1", "h": host, "e": 1, "m": wire.encode_ops(ops) if m is None else m}
    added = await client.xadd(KEYS.stream(shard_of(host)), fields, id=entry_id)
    return added.decode() if isinstance(added, bytes) else str(added)


def tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table the collector writes, sorted, as committed."""
    queries = {
        "pages": "SELECT url, host, status, error FROM pages",
        "links": "SELECT from_url, to_url FROM links",
        "blocked": "SELECT url, host, reason FROM blocked",
        "hosts": "SELECT host, pages_fetched, state FROM hosts",
        "frontier": "SELECT key, host, depth, state, attempts, via FROM frontier",
    }
    with sqlite3.connect(path) as conn:
        return {name: sorted(conn.execute(sql).fetchall()) for name, sql in queries.items()}


async def stream_lengths(client: Any) -> list[int]:
    return [int(await client.xlen(s)) for s in KEYS.streams()]


async def until(check: Callable[[], Any], timeout_s: float = 10.0) -> None:
    """Wait (polling every 20 ms) until ``await check()`` is true; fail after the timeout.
    A Redis error counts as false (a pooled connection of a killed server fails once)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if await check():
                return
        except REDIS_ERRORS:
            pass
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


@pytest.fixture
async def client(redis_server: LoopbackRedis) -> AsyncIterator[aioredis.Redis]:
    c = aioredis.Redis.from_url(redis_server.url)
    yield c
    await c.aclose()


def crawl_ops() -> list[tuple[str, list[list[Any]]]]:
    """A small crawl as its workers commit it: ``(host, ops)`` entries in commit order.
    A's seed finds A/x and C/; B's seed is done; A/x is refused by robots.txt; C/ fails."""
    a, ax, b, c = url(A), url(A, "x"), url(B), url(C)
    return [
        (A, [wire.op_enqueue([row(a, A, 0)])]),
        (B, [wire.op_enqueue([row(b, B, 0)])]),
        (A, [done(a, A, links=[ax, c], new=[row(ax, A, via=a), row(c, C, via=a)]),
             wire.op_upsert_host(host_rec(A, 1))]),
        (B, [done(b, B), wire.op_upsert_host(host_rec(B, 1))]),
        (A, [wire.op_record_blocked(BlockedRecord(ax, A, "robots", "disallowed", T0)),
             wire.op_mark(ax, "blocked", None, None)]),
        (C, [wire.op_record_page(page(c, C, None), key=c, links=(), new_rows=(),
                                 state="failed", next_url=None, next_host=None, redirects=()),
             wire.op_upsert_host(host_rec(C, 1))]),
    ]  # fmt: skip


#: What ``crawl_ops`` leaves in the file.
CRAWL_TABLES = {
    "pages": [
        (url(A), A, 200, None),
        (url(B), B, 200, None),
        (url(C), C, None, "connect: refused"),
    ],
    "links": [(url(A), url(A, "x")), (url(A), url(C))],
    "blocked": [(url(A, "x"), A, "robots")],
    "hosts": [(A, 1, "active"), (B, 1, "active"), (C, 1, "active")],
    "frontier": [
        (url(A), A, 0, "done", 0, None),
        (url(A, "x"), A, 1, "blocked", 0, url(A)),
        (url(B), B, 0, "done", 0, None),
        (url(C), C, 1, "failed", 0, url(A)),
    ],
}


async def test_entries_of_several_shards_become_the_exact_rows(
    client: aioredis.Redis, store: Store
) -> None:
    before = time.time()
    for host, ops in crawl_ops():
        await xadd(client, host, ops)
    after = time.time()  # the collector's clock: Redis ids its entries by this clock
    collector = Collector(client, KEYS, store, clock=lambda: after)
    assert not await collector.drained()
    assert await collector.collect_once() == 6
    assert tables(store.path) == CRAWL_TABLES
    assert await stream_lengths(client) == [0] * SHARDS
    assert await collector.drained()
    stats = collector.statistics()
    assert (stats.entries, stats.ops, stats.bad_entries, stats.batches) == (6, 10, 0, 1)
    # the newest entry's age at the clock's time: ids are whole ms, hence the 1 ms
    assert stats.lag_ms is not None and 0 <= stats.lag_ms <= (after - before) * 1000 + 1
    assert await collector.collect_once() == 0  # nothing new
    assert collector.statistics().batches == 1


async def test_small_batches_apply_each_entry_once_in_stream_order(
    client: aioredis.Redis, store: Store
) -> None:
    for host, ops in crawl_ops():
        await xadd(client, host, ops)
    collector = Collector(client, KEYS, store)
    applied = []
    while n := await collector.collect_once(max_entries=1):  # one entry per shard
        applied.append(n)
    assert sum(applied) == 6 and len(applied) > 1
    assert tables(store.path) == CRAWL_TABLES


@pytest.mark.parametrize("same_batch", [True, False])
@pytest.mark.parametrize("finish_first", [True, False])
async def test_fetched_state_wins_whatever_the_order_of_two_shards(
    client: aioredis.Redis, store: Store, finish_first: bool, same_batch: bool
) -> None:
    """C/ is found on A/ (stream of A) and fetched (stream of C): in both orders, in one
    batch or two, its row ends ``done`` with what its insert says (depth, via)."""
    a, c = url(A), url(C)
    found = (A, [wire.op_enqueue([row(a, A, 0)]), done(a, A, new=[row(c, C, via=a)])])
    fetched = (C, [done(c, C)])
    first, second = (fetched, found) if finish_first else (found, fetched)
    collector = Collector(client, KEYS, store)
    await xadd(client, *first)
    if not same_batch:
        assert await collector.collect_once() == 1
        assert collector.statistics().orphans == (1 if finish_first else 0)
    await xadd(client, *second)
    await collector.collect_once()
    frontier = tables(store.path)["frontier"]
    assert frontier == [(a, A, 0, "done", 0, None), (c, C, 1, "done", 0, a)]
    assert collector.statistics().orphans == 0
    assert store.meta_items("cluster.orphan:") == {}


async def test_a_row_being_committed_is_known_to_the_next_batch(
    client: aioredis.Redis, store: Store
) -> None:
    """``run`` reads and decodes the next batch while the last one commits: C/'s row
    (found on A/) is in the batch being committed when C/'s fetch is read; the fetch
    is applied to it, not kept as an orphan for a row that is already written (the
    read of known keys sees committed rows only; the batch in flight counts too)."""
    a, c = url(A), url(C)
    collector = Collector(client, KEYS, store)
    await xadd(client, A, [wire.op_enqueue([row(a, A, 0)]), done(a, A, new=[row(c, C, via=a)])])
    assert await collector._batch(100) == (1, 1)  # queued: its commit is in flight
    assert collector._landing is not None
    await xadd(client, C, [done(c, C)])
    assert await collector._batch(100) == (1, 1)
    assert collector.statistics().orphans == 0
    assert await collector.collect_once() == 0
    assert tables(store.path)["frontier"] == [(a, A, 0, "done", 0, None), (c, C, 1, "done", 0, a)]
    assert collector.statistics().entries == 2
    assert store.meta_items("cluster.orphan:") == {}
    assert await stream_lengths(client) == [0] * SHARDS


async def test_an_orphan_survives_a_collector_restart(
    client: aioredis.Redis, tmp_path: Path
) -> None:
    """C/'s fetch committed, the collector stops, its insert comes to the next collector:
    the kept op is in the file (``meta``), so the row still ends ``done``."""
    a, c = url(A), url(C)
    path = tmp_path / "crawl.db"
    await xadd(client, C, [wire.op_mark(c, "blocked", None, None)])
    with Store(path) as first_store:
        first = Collector(client, KEYS, first_store)
        assert await first.collect_once() == 1
        assert first.statistics().orphans == 1
    await xadd(client, A, [wire.op_enqueue([row(a, A, 0)]), done(a, A, new=[row(c, C, via=a)])])
    with Store(path) as second_store:
        second = Collector(client, KEYS, second_store)
        assert await second.collect_once() == 1
        assert second.statistics().orphans == 0
    assert tables(path)["frontier"] == [(a, A, 0, "done", 0, None), (c, C, 1, "blocked", 0, a)]


async def test_a_collector_killed_before_its_trim_applies_nothing_twice(
    client: aioredis.Redis, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Committed, not trimmed (a kill between the two): the next collector finds the
    entries in Redis and skips them (the cursors are in the file), then trims them.
    Replayed twice, ``links`` would list A/'s links twice."""
    for host, ops in crawl_ops():
        await xadd(client, host, ops)
    crashed = Collector(client, KEYS, store)

    async def no_trim() -> None:
        return None

    monkeypatch.setattr(crashed, "_trim", no_trim)
    assert await crashed.collect_once() == 6
    assert sum(await stream_lengths(client)) == 6  # still in Redis
    after = Collector(client, KEYS, store)
    assert await after.collect_once() == 0
    assert tables(store.path) == CRAWL_TABLES
    assert await after.drained()


async def test_entries_brought_back_by_redis_are_skipped(
    client: aioredis.Redis, store: Store
) -> None:
    """A Redis restarted from an AOF that lacks the last trims holds committed entries
    again, with their ids: the collector skips them and trims them."""
    added = []
    for host, ops in crawl_ops():
        added.append((host, await xadd(client, host, ops), ops))
    collector = Collector(client, KEYS, store)
    assert await collector.collect_once() == 6
    for stream in KEYS.streams():
        await client.delete(stream)
    for host, entry_id, ops in added:  # as they were (a stream's ids only grow)
        await xadd(client, host, ops, entry_id=entry_id)
    await xadd(client, B, [wire.op_upsert_host(host_rec(B, 2))])
    assert await collector.collect_once() == 1
    expected = dict(CRAWL_TABLES, hosts=[(A, 1, "active"), (B, 2, "active"), (C, 1, "active")])
    assert tables(store.path) == expected
    assert not await collector.drained()  # the old entries are back in Redis
    assert await collector.collect_once() == 0  # an idle batch trims them
    assert await collector.drained()


async def test_bad_entries_are_skipped_and_counted(
    client: aioredis.Redis, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    b = url(B)
    bad_page = wire.op_record_page(
        page(b, B), key=b, links=(), new_rows=(), state="done", next_url=None,
        next_host=None, redirects=(),
    )  # fmt: skip
    bad_page[1][0][0] = ["not", "a", "url"]  # a value SQLite cannot bind
    ids = [
        await xadd(client, B, [], m="{not json"),
        await xadd(client, B, [], m='[["drop_tables", []]]'),
        await xadd(client, B, [], m='[["mark", ["k", "done"]]]'),
        await xadd(client, B, [], m='[["mark", ["k", "bogus", null, null]]]'),
        await xadd(client, B, [bad_page]),
        # a good op then a bad one: the entry is skipped whole
        await xadd(client, B, [wire.op_upsert_host(host_rec(B, 9)), ["mark", [b]]]),
    ]
    await client.xadd(KEYS.stream(shard_of(B)), {"w": "w1", "h": B})  # no "m"
    await xadd(client, B, [wire.op_enqueue([row(b, B, 0)]), done(b, B)])
    collector = Collector(client, KEYS, store)
    assert await collector.collect_once() == 1
    stats = collector.statistics()
    assert (stats.entries, stats.bad_entries) == (1, 7)
    assert tables(store.path)["frontier"] == [(b, B, 0, "done", 0, None)]
    # no host op was good: the page's host has only the row a page's write makes
    # (core.storage.store: every host of pages has a hosts row)
    assert tables(store.path)["hosts"] == [(B, 0, "active")]
    assert await collector.drained()
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(skipped) == 7
    for entry_id, line in zip(ids, skipped, strict=False):
        assert entry_id in line and "\n" not in line


async def test_collect_once_raises_while_redis_is_down_and_loses_nothing(
    redis_server: LoopbackRedis, client: aioredis.Redis, store: Store
) -> None:
    ops = crawl_ops()
    for host, entry in ops[:3]:
        await xadd(client, host, entry)
    collector = Collector(client, KEYS, store)
    assert await collector.collect_once() == 3
    redis_server.stop()  # a clean shutdown: the AOF holds everything
    with pytest.raises(REDIS_ERRORS):
        await collector.collect_once()
    redis_server.restart()
    for host, entry in ops[3:]:
        await xadd(client, host, entry)
    assert await collector.collect_once() == 3
    assert tables(store.path) == CRAWL_TABLES
    assert await collector.drained()


async def test_run_waits_out_a_killed_redis_and_applies_everything_once(
    redis_server: LoopbackRedis, client: aioredis.Redis, store: Store
) -> None:
    ops = crawl_ops()
    collector = Collector(client, KEYS, store)
    stop = asyncio.Event()
    task = asyncio.create_task(collector.run(stop))
    for host, entry in ops[:3]:
        await xadd(client, host, entry)
    await until(lambda: collector.drained())
    redis_server.kill()  # SIGKILL: the last second of the AOF may be lost
    await until(lambda: asyncio.sleep(0, collector.statistics().redis_errors >= 1))
    redis_server.restart()
    for host, entry in ops[3:]:
        await xadd(client, host, entry)
    await until(lambda: collector.drained())
    stop.set()
    await asyncio.wait_for(task, 10)
    assert tables(store.path) == CRAWL_TABLES
    stats = collector.statistics()
    assert stats.entries == 6 and stats.bad_entries == 0


async def test_run_drains_what_came_before_stop(client: aioredis.Redis, store: Store) -> None:
    stop = asyncio.Event()
    for host, ops in crawl_ops():
        await xadd(client, host, ops)
    stop.set()  # the workers are done: one last drain, then return
    collector = Collector(client, KEYS, store)
    await asyncio.wait_for(collector.run(stop), 10)
    assert tables(store.path) == CRAWL_TABLES
    assert await collector.drained()


async def test_on_redis_cluster_each_shard_is_read_on_its_node(
    redis_cluster: LocalRedisCluster, store: Store
) -> None:
    nodes = [ClusterNode("127.0.0.1", port) for port in redis_cluster.ports]
    cluster = RedisCluster(startup_nodes=nodes)
    try:
        for host, ops in crawl_ops():
            await xadd(cluster, host, ops)
        collector = Collector(cluster, KEYS, store)
        assert await collector.collect_once() == 6
        assert tables(store.path) == CRAWL_TABLES
        assert await collector.drained()
    finally:
        await cluster.aclose()
