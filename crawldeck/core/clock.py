"""The one clock of a crawl in production: the running event loop's, read as epoch seconds.

The engine's deadlines (politeness, backoff, the frontier's ready times) are waited for
with the loop's timers (``call_later``, ``asyncio.timeout``, ``asyncio.sleep``), which
run on ``loop.time()``, a monotonic clock. Scheduling them on ``time.time`` as well
would make two clocks agree only in their differences, and a step of the wall clock
(NTP, a resume from suspend) would move every deadline (issue #24 item 6). So
``LoopClock`` reads ``loop.time()`` plus an offset taken once, when it first reads a
running loop: ``time.time() - loop.time()`` then. Its readings are epoch seconds at
that moment and move with the loop from there, so the times a crawl stores (``runs``,
``pages.fetched_at``, ``hosts.backoff_until``, Redis leases' bookkeeping) remain epoch
seconds (the precision of a store's epoch is the second; a drift of the wall clock
during a run, a few ppm, is not followed). On a virtual-time loop
(``tests/virtualtime.py``) it moves with the virtual clock, as the engine's timers do.

Every module of ``core`` that measures a time (parse and render budgets, fetch timing,
cluster leases) takes a ``Clock`` (``core.protocols``) from whoever assembles it
(``core.crawl.assembly``, ``core.cluster.worker``), so one clock holds in production and in
the virtual-time tests alike.

Source: asyncio's event loop documentation (``loop.time()``: "according to the event
loop's internal monotonic clock"; timers are scheduled on it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class LoopClock:
    """Epoch seconds on the running event loop's clock (see the module).

    Call it (``clock() -> float``, epoch s). Before it first reads a running loop it
    answers ``time.time()`` (a part built before the loop starts); the first call on a
    running loop aligns it (``offset = time.time() - loop.time()``) and binds it to
    that loop. From then on it reads that loop's ``time()`` plus the offset, from any
    thread (a parse thread reads it too): ``loop.time()`` of asyncio's loops and of
    the virtual-time loop may be read off the loop's thread. Raises nothing.
    """

    __slots__ = ("_offset", "_time")

    def __init__(self) -> None:
        self._time: Callable[[], float] | None = None
        self._offset = 0.0

    def __call__(self) -> float:
        """The time now, epoch seconds."""
        read = self._time
        if read is not None:
            return read() + self._offset
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop yet: the wall clock, which the loop will align to
            return time.time()
        read = loop.time
        self._offset = time.time() - read()
        self._time = read
        return read() + self._offset


__all__ = ["LoopClock"]
