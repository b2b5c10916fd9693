"""One clock in production (``core.clock.LoopClock``, issue #24 item 6): the tests that
start a real server on loopback or a process; the others are in
``tests/unit/test_clock.py``."""

from __future__ import annotations

import virtualtime
from fakeclock import FakeClock
from fakesite import config

from crawldeck.core.clock import LoopClock
from crawldeck.core.errors import ParseTimeout
from crawldeck.core.net.parse import ParsePool

A = "http://127.0.0.1"
SMALL = b'<html><body><a href="/one">1</a></body></html>'


def test_a_parse_budget_is_read_on_the_pool_s_clock() -> None:
    """A small page whose parse took longer than ``parse_timeout_ms`` on the pool's
    clock is a ``ParseTimeout``, even though it ended before its timer ran; on a clock
    that stands still the same page parses (virtual time holds while a thread works)."""

    async def extract(clock: FakeClock | LoopClock, step_s: float) -> str:
        def read() -> float:
            now = clock()
            if isinstance(clock, FakeClock):
                clock.advance(step_s)  # each reading is step_s later than the last
            return now

        pool = ParsePool(config(parse_timeout_ms=1000, parse_workers=1), clock=read)
        try:
            extracted = await pool.extract(SMALL, f"{A}/", {}, "crawldeck")
            return f"links {extracted.links}"
        except ParseTimeout as exc:
            assert pool.statistics().timeouts == 1
            return str(exc)
        finally:
            await pool.aclose()

    slow = virtualtime.run(extract(FakeClock(), 2.0))
    assert slow == f"parsing {A}/ took over 1000 ms (parse_timeout_ms)"
    held = virtualtime.run(extract(LoopClock(), 0.0))
    assert held == "links ['/one']"
