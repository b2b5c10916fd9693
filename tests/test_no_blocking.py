"""Nothing blocks the event loop during a crawl (issue #11 item 4).

A real crawl over three loopback hosts, with a frontier window small enough to spill
(``frontier_window`` 16) and pages whose relative links repeat (so the seen set's exact
check runs), under a deterministic detector: every SQLite statement on the store's
connections, every wait for the store's writer and every ``open``/``listdir`` of
``/proc`` is recorded when it is made on a thread that runs an event loop. The crawl
must make none. Timing is only a report: the loop runs in debug mode with
``slow_callback_duration`` 10 ms, and callbacks slower than that are printed, not
asserted (a loaded 2-core machine makes a 10 ms bound flaky).

Construction-time reads (``core.crawl.resume.restore`` in ``Engine.__init__``, before the
loop runs) are outside the detector's window: no loop is running then.

Before issue #11 item 4 the detector caught, in one such crawl: 471 x ``Store.contains``
(``core/policy/seen.py`` ``SeenSet.contains``), 116 x ``Store.load_spilled`` and 2 x
``Store.flush`` (``core/policy/window.py`` ``FrontierWindow._read``) and 1 x the wait of
``Store.begin_run`` (``core/crawl/engine.py`` ``Engine.run``).
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
import sqlite3
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from blockbuster import blockbuster_ctx
from httpserver import HTTPTestServer, Response

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.storage.store import Store
from crawldeck.core.storage.store.ops import Op

PAGES = 40  # per host


def _on_loop_thread() -> bool:
    """Whether the calling thread is running an event loop."""
    return asyncio._get_running_loop() is not None


class Detector:
    """Records blocking calls made on a thread that runs an event loop.

    ``calls`` holds one ``"what (where)"`` line per call: ``what`` names the call
    (``sql: SELECT ...``, ``Store.flush``, ``open /proc/...``), ``where`` the first
    crawldeck frame of the caller's stack.
    """

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def record(self, what: str) -> None:
        """Add ``what`` with its crawldeck caller, if called on a loop's thread."""
        if not _on_loop_thread():
            return
        where = "?"
        for frame in reversed(traceback.extract_stack()[:-2]):
            if "/core/" in frame.filename and "store.py" not in frame.filename:
                where = f"{Path(frame.filename).name}:{frame.lineno} {frame.name}"
                break
        with self._lock:
            self.calls.append(f"{what} ({where})")

    def summary(self) -> list[str]:
        """Distinct calls, each with how many times it was made, most frequent first."""
        counts: dict[str, int] = {}
        for call in self.calls:
            counts[call] = counts.get(call, 0) + 1
        return [f"{n} x {call}" for call, n in sorted(counts.items(), key=lambda kv: -kv[1])]


class _Connection:
    """A ``sqlite3.Connection`` whose ``execute``/``executemany`` report to a detector."""

    def __init__(self, conn: sqlite3.Connection, detector: Detector) -> None:
        self._conn = conn
        self._detector = detector

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._detector.record(f"sql: {' '.join(sql.split())[:60]}")
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._detector.record(f"sql: {' '.join(sql.split())[:60]}")
        return self._conn.executemany(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@contextmanager
def detecting(store: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[Detector]:
    """Watch ``store``'s connections, its writer waits and ``/proc`` while inside."""
    detector = Detector()
    for name in ("_wconn", "_kconn", "_rconn"):
        conn = getattr(store, name)
        monkeypatch.setattr(store, name, _Connection(conn, detector))
    wait = store._wait

    def watched_wait(waiter: Any) -> None:
        detector.record("Store._wait (the writer thread)")
        wait(waiter)

    monkeypatch.setattr(store, "_wait", watched_wait)
    real_open = builtins.open
    real_listdir = os.listdir

    def watched_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file).startswith("/proc"):
            detector.record(f"open {file}")
        return real_open(file, *args, **kwargs)

    def watched_listdir(path: Any = ".") -> list[Any]:
        if str(path).startswith("/proc"):
            detector.record(f"listdir {path}")
        return real_listdir(path)

    monkeypatch.setattr(builtins, "open", watched_open)
    monkeypatch.setattr(os, "listdir", watched_listdir)
    yield detector


def html(body: str) -> Response:
    return Response(200, {"Content-Type": "text/html"}, body.encode())


def site(server: HTTPTestServer, others: list[HTTPTestServer]) -> list[str]:
    """``/`` links to ``PAGES`` pages ``/d/p{i}``; each links (relatively: no memo) to
    the next three pages of its own host, back to ``/d/p0``, and to one page of every
    other host, so links repeat across pages and hosts."""
    server.set("/robots.txt", Response(404))
    server.set("/", html("".join(f'<a href="/d/p{i}">{i}</a>' for i in range(PAGES))))
    paths = ["/"]
    for i in range(PAGES):
        near = "".join(f'<a href="p{(i + k) % PAGES}">n</a>' for k in (1, 2, 3))
        far = "".join(f'<a href="{o.url(f"/d/p{i}")}">o</a>' for o in others)
        server.set(f"/d/p{i}", html(f'{near}<a href="p0">first</a>{far}'))
        paths.append(f"/d/p{i}")
    return paths


def crawl(
    db: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> tuple[Engine, Detector, dict[str, int], list[str]]:
    """Crawl three hosts with a 16-URL window under the detector; the engine, the
    detector, each path's request count (``origin + path`` keys) and the slow-callback
    log lines."""
    servers = [HTTPTestServer(f"127.0.0.{i}").start() for i in (1, 2, 3)]
    try:
        paths: dict[str, list[str]] = {}
        for server in servers:
            paths[server.origin] = site(server, [s for s in servers if s is not server])
        store = Store(db, flush_interval_ms=20)
        config = {"delay_ms": 0, "adaptive_delay_factor": 0, "frontier_window": 16}
        engine = Engine(build_config({**config, "render": "never"}), store)
        try:
            assert engine.add_seeds([s.url("/") for s in servers]) == []

            async def go() -> None:
                loop = asyncio.get_running_loop()
                loop.slow_callback_duration = 0.01
                run = asyncio.create_task(engine.run())
                await asyncio.sleep(0.2)
                # seeds added as the console does during a crawl: known URLs (the
                # filter says "maybe": exact checks), silently kept
                again = [servers[0].url("/"), servers[1].url("/d/p1")]
                assert await engine.add_seeds_live(again) == []
                await asyncio.wait_for(run, timeout=60)

            with (
                caplog.at_level(logging.WARNING, logger="asyncio"),
                detecting(store, monkeypatch) as detector,
            ):
                asyncio.run(go(), debug=True)
        finally:
            store.close()
        counts = {
            server.origin + path: server.count(path)
            for server in servers
            for path in paths[server.origin]
        }
    finally:
        for server in servers:
            server.close()
    slow = [r.getMessage() for r in caplog.records if "took" in r.getMessage()]
    return engine, detector, counts, slow


def test_a_crawl_makes_no_blocking_call_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    engine, detector, counts, slow = crawl(tmp_path / "b.db", monkeypatch, caplog)
    print("slow callbacks (report only):", *slow, sep="\n  ")
    # the crawl is the one it should be: every page once, through the spill and the seen set
    assert counts == dict.fromkeys(counts, 1)
    assert engine.snapshot().counters.pages == len(counts)
    assert engine.statistics().frontier.read_back > 0
    assert engine._seen.exact_checks > 0
    assert detector.summary() == [], "\n".join(detector.summary())


def test_a_crawl_passes_blockbuster(tmp_path: Path) -> None:
    """The same crawl under ``blockbuster`` (a second, independent detector: it raises
    ``BlockingError`` from a blocking call on the loop's thread: sqlite3 execute/fetch,
    a blocking ``Lock.acquire`` (so ``Event.wait``, ``Store.flush``), ``time.sleep``,
    file and socket I/O, ``os.listdir``/``os.stat``). A worker that meets one stops the
    crawl and ``run`` re-raises it; before issue #11 item 4 the first was the wait of
    ``Store.begin_run``."""
    servers = [HTTPTestServer(f"127.0.0.{i}").start() for i in (1, 2, 3)]
    try:
        for server in servers:
            site(server, [s for s in servers if s is not server])
        store = Store(tmp_path / "bb.db", flush_interval_ms=20)
        config = {"delay_ms": 0, "adaptive_delay_factor": 0, "frontier_window": 16}
        engine = Engine(build_config({**config, "render": "never"}), store)
        assert engine.add_seeds([s.url("/") for s in servers]) == []

        async def go() -> int:
            with blockbuster_ctx():
                return (await engine.run()).counters.pages

        try:
            pages = asyncio.run(asyncio.wait_for(go(), timeout=60))
        finally:
            store.close()
    finally:
        for server in servers:
            server.close()
    assert pages == 3 * (PAGES + 1)
    assert engine.statistics().frontier.read_back > 0


def test_the_detector_catches_a_blocking_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The detector is not blind: a store read and a flush on the loop are caught, the
    same calls in a thread are not."""
    store = Store(tmp_path / "d.db")
    try:
        with detecting(store, monkeypatch) as detector:

            async def go() -> None:
                await asyncio.to_thread(store.contains, "k")
                await asyncio.to_thread(store.flush)
                assert detector.calls == []
                store.contains("k")
                store.flush()

            asyncio.run(go())
    finally:
        store.close()
    assert [call.rsplit(" (", 1)[0] for call in detector.calls] == [
        "sql: SELECT 1 FROM frontier WHERE key = ?",
        "Store._wait (the writer thread)",
    ]


@dataclass(frozen=True, slots=True)
class _Slow:
    """A writer operation (``core.storage.store.ops``) that takes ``delay_s`` more to apply."""

    op: Op
    delay_s: float

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        time.sleep(self.delay_s)
        self.op.apply(conn, keys, blocked, totals)


class SlowStore(Store):
    """A ``Store`` whose writer takes ``delay_s`` more per operation."""

    delay_s = 0.004

    def _put(self, op: Op) -> None:
        super()._put(cast(Op, _Slow(op, self.delay_s)))


def slow_crawl(db: Path, max_backlog: int) -> tuple[int, int]:
    """Crawl three hosts of ``PAGES + 1`` pages each into a slow store with
    ``max_backlog``; the highest backlog sampled every ms, and the pages fetched."""
    servers = [HTTPTestServer(f"127.0.0.{i}").start() for i in (1, 2, 3)]
    try:
        for server in servers:
            site(server, [])
        store = SlowStore(db, flush_interval_ms=20, max_backlog=max_backlog)
        # three workers: a host is given back once its fetch is answered, so with more
        # workers one host could have several pages being recorded at once
        config = {"delay_ms": 0, "adaptive_delay_factor": 0, "render": "never", "concurrency": 3}
        engine = Engine(build_config(config), store)
        peak = 0

        async def go() -> None:
            nonlocal peak
            task = asyncio.create_task(engine.run())
            while not task.done():
                peak = max(peak, store.backlog)
                await asyncio.sleep(0.001)
            await task

        try:
            assert engine.add_seeds([s.url("/") for s in servers]) == []
            asyncio.run(asyncio.wait_for(go(), timeout=60))
        finally:
            store.close()
        return peak, engine.snapshot().counters.pages
    finally:
        for server in servers:
            server.close()


def test_a_slow_writer_holds_the_crawl_within_the_backlog_bound(tmp_path: Path) -> None:
    """With a writer slower than the crawl, the backlog stays under ``max_backlog`` plus
    what the visits in progress record (three workers, so three visits at a time: a
    page operation, a state change, a hosts row each, at most); without a bound it grows
    past that, so the bound is what holds it."""
    bound, in_flight_ops = 8, 3 * 3
    peak, pages = slow_crawl(tmp_path / "bounded.db", bound)
    assert pages == 3 * (PAGES + 1)
    assert peak <= bound + in_flight_ops
    unbounded, pages = slow_crawl(tmp_path / "unbounded.db", 10**6)
    assert pages == 3 * (PAGES + 1)
    assert unbounded > bound + in_flight_ops


async def test_room_waits_on_the_loop_until_the_writer_is_down_to_half(tmp_path: Path) -> None:
    store = SlowStore(tmp_path / "r.db", flush_interval_ms=0, max_backlog=8)
    try:
        assert await store.room() is False  # empty: no wait
        for i in range(20):
            store.mark(f"k{i}", "done")  # an unknown key: a no-op, 4 ms of writer time
        assert store.backlog >= 8
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        ticker = asyncio.create_task(tick())
        assert await store.room() is True
        ticker.cancel()
        assert store.backlog <= 4
        assert ticks > 0  # the loop ran while room() waited
    finally:
        store.close()
