"""One clock in production (``core.clock.LoopClock``, issue #24 item 6).

The loop clock reads epoch seconds once aligned and then follows the running loop, so
on a virtual-time loop (``tests/virtualtime.py``) it moves with the virtual clock: the
engine on its default clock schedules on the loop's timers' clock, and the budgets
that read the injected clock (a render's settling, a parse) run out on it.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

import virtualtime
from fakesite import FakeFetcher, FakeSite, config, links_page

from crawldeck.core.clock import LoopClock
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.records import from_iso_utc
from crawldeck.core.render.render_session import RenderSession
from crawldeck.core.render_types import SubRequestEnd
from crawldeck.core.storage.store import Store

if TYPE_CHECKING:
    from playwright.async_api import Request

A = "http://127.0.0.1"
HTML = "text/html; charset=utf-8"

# ------------------------------------------------------------------ the clock


def test_before_a_loop_it_reads_the_wall_clock() -> None:
    clock = LoopClock()
    before = time.time()
    now = clock()
    assert before <= now <= time.time()


def test_it_is_aligned_to_epoch_seconds_once_on_the_loop() -> None:
    """The first reading on a loop is the wall clock's (the virtual loop's own time is
    its fake epoch); from then on it is the loop's time plus that offset."""

    async def main() -> tuple[float, float, float, float]:
        clock = LoopClock()
        before = time.time()
        first = clock()
        after = time.time()
        loop_then = asyncio.get_running_loop().time()
        await asyncio.sleep(3600)
        return (
            before,
            first,
            after,
            clock() - first - (asyncio.get_running_loop().time() - loop_then),
        )

    before, first, after, drift = virtualtime.run(main())
    assert before - 1e-3 <= first <= after + 1e-3  # float rounding of epoch + offset
    assert abs(drift) < 1e-6


def test_the_loop_clock_follows_a_virtual_time_loop() -> None:
    async def main() -> list[float]:
        clock = LoopClock()
        t0 = clock()
        marks = []
        await asyncio.sleep(60)
        marks.append(clock() - t0)
        fired = asyncio.Event()
        asyncio.get_running_loop().call_later(0.25, fired.set)
        await fired.wait()
        marks.append(clock() - t0)
        return marks

    marks = virtualtime.run(main())
    assert [round(m, 6) for m in marks] == [60.0, 60.25]


def test_a_thread_reads_the_loop_s_clock_once_bound() -> None:
    """A parse thread reads the pool's clock: it gets the loop's time (held still on
    virtual time while the thread works), not the wall clock."""

    async def main() -> tuple[float, float]:
        clock = LoopClock()
        await asyncio.sleep(100)
        on_loop = clock()
        in_thread = await asyncio.to_thread(clock)
        return on_loop, in_thread

    on_loop, in_thread = virtualtime.run(main())
    assert in_thread == on_loop


# -------------------------------------------------------------- the engine


def test_the_engine_schedules_on_the_loop_by_default(tmp_path: Path) -> None:
    """No ``clock=``: politeness deadlines and the loop's timers share one clock, so a
    delay of 30 s is waited for in virtual time (on ``time.time`` the workers wake on
    the virtual timers and find the wall clock not there yet: this crawl then took 90
    real s and its requests came 80 000 virtual s apart, measured)."""
    site = FakeSite()
    site.add(f"{A}/", links_page("/a", "/b"))
    site.add(f"{A}/a", links_page())
    site.add(f"{A}/b", links_page())

    db = tmp_path / "c.db"

    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        cfg = config(delay_ms=30_000)
        store = Store(db, flush_interval_ms=10, clock=LoopClock())
        try:
            engine = Engine(
                cfg,
                store,
                fetcher=FakeFetcher(site, cfg),
                rng=random.Random(0),
                dns=site.dns(cfg, loop.time),
            )
            engine.add_seeds([f"{A}/"])
            result = await engine.run()
            assert result.outcome == "finished"
        finally:
            store.close()
        return [r.start for r in site.requests if not r.url.endswith("/robots.txt")]

    before = time.time()
    starts = virtualtime.run(main())
    after = time.time()
    assert len(starts) == 3
    # the delay, and the 1 ms a worker's wake-up adds past a deadline (``Engine``)
    assert all(30.0 <= b - a <= 30.002 for a, b in itertools.pairwise(starts))
    conn = sqlite3.connect(db)
    try:
        fetched = sorted(from_iso_utc(t) for (t,) in conn.execute("SELECT fetched_at FROM pages"))
    finally:
        conn.close()
    # stored: epoch seconds of now (the wall clock when the loop clock was aligned,
    # at robots.txt's request, 30 s of loop before the first page), 30 s of loop apart
    assert len(fetched) == 3 and before <= fetched[0] - 30.0 <= after
    assert all(30.0 <= b - a <= 30.002 for a, b in itertools.pairwise(fetched))


# ------------------------------------------------------------------ budgets


async def allow(url: str, resource_type: str) -> bool:
    return True


def test_a_render_budget_runs_out_on_virtual_time() -> None:
    """A page whose request never ends is cut at the render budget's deadline, on the
    loop clock of a virtual-time loop: 20 virtual seconds, no real wait."""
    reports: list[SubRequestEnd] = []

    async def main() -> tuple[bool, float]:
        clock = LoopClock()
        session = RenderSession(
            b"<html></html>", HTML, allow, reports.append, frozenset(), clock=clock
        )
        session.on_request(cast("Request", object()))  # a request that never ends
        started = clock()
        settled = await session.settle(started + 20.0, 0.5)
        return settled, clock() - started

    settled, took = virtualtime.run(main())
    assert settled is False
    assert round(took, 6) == 20.0
