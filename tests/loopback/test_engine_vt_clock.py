"""The two test doubles of the engine tests on virtual time: the tests that start a real
server on loopback or a process; the others are in
``tests/unit/test_engine_vt_clock.py``."""

from __future__ import annotations

import asyncio

import virtualtime
from fakesite import (
    config,
)

from crawldeck.core.net.parse import THREAD_PARSE_MAX_BYTES, ParsePool

A = "http://127.0.0.1"


def test_a_small_page_parsed_in_a_thread_costs_no_virtual_time() -> None:
    """``ParsePool`` parses pages up to 32 KiB in threads with a budget counted on the
    loop's timers; the clock holds still, so no budget fires spuriously."""
    body = b"<html><body>" + b'<a href="/x">x</a>' * 1500 + b"</body></html>"
    assert len(body) <= THREAD_PARSE_MAX_BYTES

    async def main() -> tuple[int, float]:
        loop = asyncio.get_running_loop()
        # a budget under the timer below, which a jump would fire first, and far over
        # the parse's real time on a loaded machine (10 ms could be spent preempted)
        pool = ParsePool(config(parse_timeout_ms=400))
        loop.call_later(0.5, lambda: None)  # a timer the clock could jump to
        t0 = loop.time()
        try:
            extracted = await pool.extract(body, A + "/", {}, "crawldeck")
        finally:
            await pool.aclose()
        return len(extracted.links), loop.time() - t0

    assert virtualtime.run(main()) == (1, 0.0)
