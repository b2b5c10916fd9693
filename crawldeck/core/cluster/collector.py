"""The collector: the one process that writes a cluster crawl's SQLite file (issue #12).

Workers do not write SQLite: each ``ResultSink`` call of theirs is an op
(``core.cluster.wire``) in an entry of their host's shard stream (``Keyspace.stream``;
fields ``w`` worker, ``h`` host, ``e`` lease epoch, ``m`` the ops). ``Collector`` reads
the 64 streams and replays the ops on the crawl's ``core.storage.store.Store``, so the file has
the schema and the rows a single-process crawl writes.

One batch (``collect_once``): one ``XREAD`` of the 64 streams from their cursors (the
last entry ids applied; on Redis Cluster, which refuses one command over keys of
several slots, a pipeline of one per shard), the ops replayed in stream order per shard, then ONE
``Store.atomic`` block that also holds each shard's new cursor (``meta`` row
``cluster.cursor:<stream>``), then ``flush`` (committed), then ``XTRIM MINID`` of what
was committed, so Redis holds only what is not in the file yet. Exactly once, whatever
dies when: the cursors are committed with the rows, so entries a killed collector
committed but did not trim are skipped on the next start (and trimmed then), and a
Redis restarted from an AOF that lacks the last trims brings back entries that are
skipped too (an idle batch trims every shard to its cursor, at most once a second).
``run`` overlaps the two threads: a batch's commit runs in the store's writer thread
while the loop reads and decodes the next one, which is queued once that commit is
done (its trim then follows with the next read); the keys of the rows being committed
count as known. While it runs, the cyclic GC's youngest generation passes less often
(``core.crawl.gcpolicy``).
A replayed op writes no row twice either (pages by url, links by their ``(from_url,
to_url)`` key since schema version 3, INSERT OR IGNORE, replace).

Two streams are not ordered: the op that adds URL K's frontier row (a page's
``new_rows``, in the stream of the page's host) and the op that records K fetched (in
the stream of K's host) arrive in either order, by seconds when the page's commit is
retried or fenced (``core.cluster.store``: outlinks are pushed before the page is
committed). ``Store.mark``/``record_page`` of a key without a row change nothing, so
(1) in a batch, every frontier row is inserted before any other op is replayed; (2) an
op that changes the row of a key that has no row after that (``Store.known_keys``) is
kept as an *orphan* (in memory and in ``meta`` row ``cluster.orphan:<key>``, committed
with the batch) and replayed right after the row is inserted, in a later batch. The
final ``frontier`` state is the fetched one in either order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import redis.asyncio as aioredis
from redis import exceptions as rexc
from redis.asyncio.cluster import RedisCluster

from crawldeck.core.cluster import wire
from crawldeck.core.cluster.keys import SHARDS, Keyspace
from crawldeck.core.crawl.gcpolicy import fewer_gc_passes
from crawldeck.core.records import (
    BlockedRecord,
    FrontierRow,
    FrontierState,
    HostRecord,
    PageRecord,
    SitemapRecord,
    SitemapUrlRecord,
)
from crawldeck.core.storage.store import Store

log = logging.getLogger(__name__)

#: Errors after which the collector waits and reads again: Redis restarting (loading
#: its AOF), unreachable, or a cluster without a master for a slot.
REDIS_ERRORS: Final[tuple[type[Exception], ...]] = (
    rexc.ConnectionError,  # BusyLoadingError too
    rexc.TimeoutError,
    rexc.ClusterError,
    rexc.TryAgainError,
    OSError,
)
#: ``meta`` key prefixes of the collector's state in the crawl file.
CURSOR_PREFIX: Final = "cluster.cursor:"
ORPHAN_PREFIX: Final = "cluster.orphan:"
#: Entries one batch reads at most (about: ``ceil(n / 64)`` per shard).
DEFAULT_MAX_ENTRIES: Final = 2000
#: An idle batch trims every shard up to its cursor at most this often (s): entries
#: a Redis restarted from an older AOF brought back, already in the file.
SWEEP_INTERVAL_S: Final = 1.0
#: ``run``'s wait after a batch that read nothing: first, then doubled up to (s).
IDLE_FIRST_S: Final = 0.05
IDLE_MAX_S: Final = 0.5
#: ``run``'s wait after a Redis error: first, then doubled up to (s).
BACKOFF_FIRST_S: Final = 0.05
BACKOFF_MAX_S: Final = 2.0

_Client = aioredis.Redis | RedisCluster


@dataclass(frozen=True, slots=True)
class CollectorStatistics:
    """The collector's figures since it was made (trio's ``statistics()`` rule).

    Attributes:
        entries: stream entries applied (committed to the file), bad ones not counted.
        ops: ops of those entries replayed.
        bad_entries: entries skipped as unreadable (``WireError``, no ``m`` field).
        lag_ms: at the last commit, its newest entry's age: now minus the entry id's
            millisecond part (Redis's clock), in ms; ``None`` before the first.
        batches: batches committed (``collect_once`` calls that applied entries).
        orphans: ops waiting for their key's frontier row (see the module).
        redis_errors: Redis errors ``run`` waited out.
    """

    entries: int
    ops: int
    bad_entries: int
    lag_ms: float | None
    batches: int
    orphans: int
    redis_errors: int


@dataclass(slots=True)
class _Call:
    """One replayed sink call: ``apply`` makes it on a sink; ``frontier`` the keys whose
    row it changes, each with the op to keep if that key has no row yet."""

    apply: Callable[[Store], None]
    frontier: list[tuple[str, list[Any]]]


@dataclass(slots=True)
class _Landing:
    """A batch queued in the store, being committed: ``commit`` (the store's flush),
    its shards' last entry ids, the keys of the frontier rows it inserts, its figures
    and its newest entry's id time (ms)."""

    commit: asyncio.Task[None]
    cursors: dict[int, str]
    inserted: frozenset[str]
    entries: int
    ops: int
    bad: int
    newest_ms: int


class _Split:
    """A ``ResultSink`` that records one entry's calls: the frontier rows apart (they
    are inserted first), the rest as ``_Call`` in order. Replaying onto it first means a
    bad entry is skipped whole."""

    def __init__(self) -> None:
        self.rows: list[FrontierRow] = []
        self.calls: list[_Call] = []

    def enqueue_urls(self, rows: Sequence[FrontierRow]) -> None:
        self.rows.extend(rows)

    def record_page(
        self,
        page: PageRecord,
        *,
        key: str,
        links: Sequence[tuple[str, str]],
        new_rows: Sequence[FrontierRow],
        state: Literal["done", "failed", "queued"],
        next_url: str | None = None,
        next_host: str | None = None,
        redirects: Sequence[str] = (),
        anchors: Mapping[str, str] | None = None,
    ) -> None:
        self.rows.extend(new_rows)
        if state == "queued":  # the chain goes on: the row takes the next hop
            kept = wire.op_record_page(
                page, key=key, links=(), new_rows=(), state=state,
                next_url=next_url, next_host=next_host, redirects=redirects,
            )  # fmt: skip
        else:
            kept = wire.op_mark(key, state, None, None)

        def apply(store: Store) -> None:
            store.record_page(
                page, key=key, links=links, new_rows=(), state=state,
                next_url=next_url, next_host=next_host, redirects=redirects, anchors=anchors,
            )  # fmt: skip

        self.calls.append(_Call(apply, [(key, kept)]))

    def fail_urls(self, urls: Sequence[tuple[str, str]], error: str) -> None:
        pairs = list(urls)
        kept = [(key, wire.op_fail_urls([(key, url)], error)) for key, url in pairs]
        self.calls.append(_Call(lambda store: store.fail_urls(pairs, error), kept))

    def record_blocked(self, rec: BlockedRecord) -> None:
        self.calls.append(_Call(lambda store: store.record_blocked(rec), []))

    def mark(
        self,
        key: str,
        state: FrontierState,
        *,
        attempts: int | None = None,
        available_at: float | None = None,
    ) -> None:
        def apply(store: Store) -> None:
            store.mark(key, state, attempts=attempts, available_at=available_at)

        self.calls.append(_Call(apply, [(key, wire.op_mark(key, state, attempts, available_at))]))

    def upsert_host(self, rec: HostRecord) -> None:
        self.calls.append(_Call(lambda store: store.upsert_host(rec), []))

    def record_sitemap(self, rec: SitemapRecord, entries: Sequence[SitemapUrlRecord]) -> None:
        rows = list(entries)
        self.calls.append(_Call(lambda store: store.record_sitemap(rec, rows), []))

    def pages_added(self) -> dict[str, int]:
        return {}

    def blocked_added(self) -> dict[str, int]:
        return {}


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _id_ms(entry_id: str) -> int:
    return int(entry_id.split("-", 1)[0])


def _after(entry_id: str) -> str:
    """The smallest stream id above ``entry_id`` (``XTRIM MINID`` keeps from it on)."""
    ms, seq = entry_id.split("-", 1)
    return f"{ms}-{int(seq) + 1}"


def _entries(reply: Any) -> list[tuple[str, dict[Any, Any]]]:
    """The ``(id, fields)`` of one single-stream ``XREAD`` reply (RESP2: a list of
    ``[name, entries]``; RESP3: a dict name -> entries; ``None``/empty: nothing)."""
    if not reply:
        return []
    streams = list(reply.values()) if isinstance(reply, dict) else [s[1] for s in reply]
    return [(_text(entry_id), fields) for entry_id, fields in streams[0]]


def _by_stream(reply: Any, streams: list[str]) -> list[list[tuple[str, dict[Any, Any]]]]:
    """The ``(id, fields)`` per stream, in ``streams``' order, of one multi-stream
    ``XREAD`` reply (RESP2: a list of ``[name, entries]``; RESP3: a dict)."""
    found: dict[str, Any] = {}
    if reply:
        pairs = reply.items() if isinstance(reply, dict) else ((s[0], s[1]) for s in reply)
        found = {_text(name): entries for name, entries in pairs}
    return [[(_text(i), fields) for i, fields in found.get(s, ())] for s in streams]


class Collector:
    """Writes a cluster crawl's results from its shard streams into its ``Store``.

    Args:
        client: an asyncio Redis client, ``redis.asyncio.Redis`` or
            ``redis.asyncio.RedisCluster`` (bytes or decoded replies).
        keys: the crawl's key layout (its streams: ``Keyspace.streams``).
        store: the crawl's open SQLite store; the collector is its only writer while it
            runs (its cursors and orphans live in the store's ``meta`` rows).
        clock: wall-clock epoch seconds (``time.time``), for ``lag_ms``: the age of
            stream entries whose ids Redis stamped with its own clock, another
            process's (a stored time).

    Call its coroutines from one task at a time. See the module for the design.
    """

    def __init__(
        self,
        client: _Client,
        keys: Keyspace,
        store: Store,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._store = store
        self._clock = clock
        self._streams = keys.streams()
        self._cursors: list[str] = ["0-0"] * SHARDS  # committed: what the file holds
        self._next: list[str] = ["0-0"] * SHARDS  # read: the last entry ids applied
        self._untrimmed: set[int] = set()  # shards committed past what Redis dropped
        self._landing: _Landing | None = None  # the batch being committed
        self._orphans: dict[str, list[Any]] = {}  # key -> the op its row waits for
        self._loaded = False
        self._swept_at = -math.inf  # the loop's time() of the last idle sweep
        self._entries = self._ops = self._bad = self._batches = self._errors = 0
        self._lag_ms: float | None = None

    # ------------------------------------------------------------------ API

    async def collect_once(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> int:
        """Read, apply, commit and trim one batch (see the module): at most
        ``ceil(max_entries / 64)`` entries per shard.

        Returns:
            the entries applied (bad entries not counted; 0 when none came).

        Raises:
            redis.exceptions.RedisError, OSError: Redis failed (``REDIS_ERRORS``: gone
                for now). Nothing is lost: what was not committed is read again from
                the cursors, what was committed and not trimmed is trimmed by the next
                call.
            StoreError: the store failed (see ``core.storage.store.Store``).
        """
        applied, _read = await self._batch(max_entries)
        await self._landed()
        await self._trim()
        return applied

    async def run(self, stop: asyncio.Event) -> None:
        """``collect_once`` until ``stop`` is set, then until a batch reads nothing
        (the last drain: set ``stop`` once the workers are done).

        A batch's commit runs in the store's writer thread while the next batch is
        read and decoded (one batch in flight; the next waits for it before it is
        queued): the loop and the writer overlap (issue #23 item 3: the drain rate).
        While it runs, the process's cyclic GC runs its youngest generation every
        ``core.crawl.gcpolicy.GC_GEN0_THRESHOLD`` allocations, not 700: a batch holds tens of
        thousands of acyclic objects until its commit (records, rows, parameters), and
        with the default, passes over them took 20-25 % of the drain's CPU
        (``benchmarks/collector_drain.py``, issue #23 item 3).
        After a batch that read nothing it waits ``IDLE_FIRST_S`` doubling up to
        ``IDLE_MAX_S`` (or until ``stop``); after a Redis error (``REDIS_ERRORS``) it
        logs one line per outage and waits ``BACKOFF_FIRST_S`` doubling up to
        ``BACKOFF_MAX_S``, and reads again, for as long as Redis is away (cancel the
        task to give up).

        Raises:
            StoreError: the store failed.
        """
        with fewer_gc_passes():
            await self._run(stop)

    async def _run(self, stop: asyncio.Event) -> None:
        """``run``'s loop."""
        idle = IDLE_FIRST_S
        backoff = BACKOFF_FIRST_S
        failing = False
        while True:
            stopping = stop.is_set()
            try:
                _applied, read = await self._batch(DEFAULT_MAX_ENTRIES)
            except REDIS_ERRORS as exc:
                self._errors += 1
                self._swept_at = -math.inf  # sweep once Redis is back
                if not failing:
                    log.warning("collector: Redis failed (%s); retrying", _one_line(exc))
                failing = True
                await asyncio.sleep(backoff)
                backoff = min(BACKOFF_MAX_S, backoff * 2)
                continue
            if failing:
                log.info("collector: Redis is back")
                failing = False
            backoff = BACKOFF_FIRST_S
            if read:
                idle = IDLE_FIRST_S
                continue
            if stopping:
                await self._landed()
                await self._trim()
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), idle)
            idle = min(IDLE_MAX_S, idle * 2)

    async def drained(self) -> bool:
        """Whether every shard stream is empty (``XLEN`` 0): all written is in the file.

        Raises:
            redis.exceptions.RedisError, OSError: Redis failed.
        """
        pipe = self._client.pipeline(transaction=False)
        for stream in self._streams:
            pipe.xlen(stream)
        return not any(await pipe.execute())

    def statistics(self) -> CollectorStatistics:
        """The figures now (see ``CollectorStatistics``)."""
        return CollectorStatistics(
            entries=self._entries,
            ops=self._ops,
            bad_entries=self._bad,
            lag_ms=self._lag_ms,
            batches=self._batches,
            orphans=len(self._orphans),
            redis_errors=self._errors,
        )

    # ------------------------------------------------------------------ steps

    async def _load(self) -> None:
        """The cursors and orphans the file holds (a collector ran before)."""
        saved = await asyncio.to_thread(self._store.meta_items, "cluster.")
        for shard, stream in enumerate(self._streams):
            cursor = saved.get(CURSOR_PREFIX + stream)
            if cursor is not None:
                self._cursors[shard] = self._next[shard] = cursor
                self._untrimmed.add(shard)
        for name, text in saved.items():
            if name.startswith(ORPHAN_PREFIX):
                self._orphans[name[len(ORPHAN_PREFIX) :]] = wire.decode_ops(text)[0]
        self._loaded = True

    async def _batch(self, max_entries: int) -> tuple[int, int]:
        """Read a batch, decode it and queue its commit (``_landing``: ``_landed``
        waits for it): ``(entries applied, entries read)`` (bad ones are read). A
        batch that read nothing waits for the commit in flight."""
        if not self._loaded:
            await self._load()
        await self._trim()
        per_shard = max(1, math.ceil(max_entries / SHARDS))
        if isinstance(self._client, RedisCluster):  # one XREAD per shard: slots differ
            pipe = self._client.pipeline(transaction=False)
            for stream, cursor in zip(self._streams, self._next, strict=True):
                pipe.xread({stream: cursor}, count=per_shard)
            split = [_entries(reply) for reply in await pipe.execute()]
        else:  # one XREAD over the 64 streams: one command, not 64
            reply = await self._client.xread(
                dict(zip(self._streams, self._next, strict=True)), count=per_shard
            )
            split = _by_stream(reply, self._streams)
        read = sum(map(len, split))
        if not read:
            await self._landed()
            now = asyncio.get_running_loop().time()
            if now - self._swept_at >= SWEEP_INTERVAL_S:
                self._swept_at = now
                self._untrimmed.update(s for s, c in enumerate(self._cursors) if c != "0-0")
                await self._trim()
            return 0, 0
        applied = await self._apply(split)
        return applied, read

    async def _apply(self, split: list[list[tuple[str, dict[Any, Any]]]]) -> int:
        """Replay the entries of one batch (by shard, in stream order) in one atomic
        block with the cursors and orphans, once the batch before it is committed;
        start its commit. Returns the entries applied. The rows of the batch being
        committed count as known (a read sees committed rows only)."""
        rows: list[FrontierRow] = []
        calls: list[_Call] = []
        cursors: dict[int, str] = {}
        entries = ops = bad = 0
        newest_ms = 0
        for shard, items in enumerate(split):
            for entry_id, fields in items:
                cursors[shard] = entry_id
                sink = _Split()
                try:
                    payload = fields.get(b"m", fields.get("m"))
                    if payload is None:
                        raise wire.WireError("no 'm' field")
                    decoded = wire.decode_ops(payload)
                    for op in decoded:
                        wire.replay(op, sink)
                except wire.WireError as exc:
                    bad += 1
                    log.warning(
                        "collector: %s entry %s skipped: %s",
                        self._streams[shard], entry_id, exc,
                    )  # fmt: skip
                    continue
                rows += sink.rows
                calls += sink.calls
                entries += 1
                ops += len(decoded)
                newest_ms = max(newest_ms, _id_ms(entry_id))
        inserted = {row.key for row in rows}
        touched = {key for call in calls for key, _ in call.frontier}
        landing = self._landing
        before = landing.inserted if landing is not None else frozenset()
        unknown = [key for key in touched if key not in inserted and key not in before]
        known = await asyncio.to_thread(self._store.known_keys, unknown)
        await self._landed()
        store = self._store
        with store.atomic():
            if rows:
                store.enqueue_urls(rows)
            for key in [k for k in self._orphans if k in inserted]:
                wire.replay(self._orphans.pop(key), store)
                store.set_meta(ORPHAN_PREFIX + key, None)
            for call in calls:
                call.apply(store)
                for key, op in call.frontier:
                    if key not in inserted and key not in known and key not in before:
                        self._orphans[key] = op
                        store.set_meta(ORPHAN_PREFIX + key, wire.encode_ops([op]))
            for shard, cursor in cursors.items():
                store.set_meta(CURSOR_PREFIX + self._streams[shard], cursor)
        for shard, cursor in cursors.items():
            self._next[shard] = cursor
        commit = asyncio.get_running_loop().create_task(asyncio.to_thread(store.flush))
        self._landing = _Landing(commit, cursors, frozenset(inserted), entries, ops, bad, newest_ms)
        return entries

    async def _landed(self) -> None:
        """Wait for the batch being committed, if any; then its cursors are the
        committed ones (to trim) and its figures count.

        Raises:
            StoreError: the commit failed.
        """
        landing = self._landing
        if landing is None:
            return
        try:
            await asyncio.shield(landing.commit)
        finally:
            if landing.commit.done():
                self._landing = None
        landing.commit.result()
        for shard, cursor in landing.cursors.items():
            self._cursors[shard] = cursor
            self._untrimmed.add(shard)
        self._entries += landing.entries
        self._ops += landing.ops
        self._bad += landing.bad
        if landing.entries:
            self._batches += 1
            self._lag_ms = self._clock() * 1000 - landing.newest_ms

    async def _trim(self) -> None:
        """Drop from Redis what the file holds: ``XTRIM MINID`` past each shard's
        committed cursor, for the shards not trimmed since their last commit."""
        if not self._untrimmed:
            return
        shards = sorted(self._untrimmed)
        pipe = self._client.pipeline(transaction=False)
        for shard in shards:
            pipe.xtrim(self._streams[shard], minid=_after(self._cursors[shard]), approximate=False)
        await pipe.execute()
        self._untrimmed.difference_update(shards)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


__all__ = ["REDIS_ERRORS", "Collector", "CollectorStatistics"]
