"""Fast slots: how many fetches run at normal speed, so slow hosts cannot take them all.

The engine runs ``(1 + SLOW_FETCH_FACTOR) x concurrency`` workers, and a worker fetches
only while it holds one of ``concurrency`` fast slots (a semaphore). A fetch that runs
longer than ``SLOW_FETCH_S`` gives its slot up, so tarpits and drips stop counting
against ``concurrency``: at most ``concurrency`` fetches at normal speed and at most
``SLOW_FETCH_FACTOR x concurrency`` slow ones besides (issue #10 item 10: 40 tarpit
hosts beside one good host do not starve it).
"""

from __future__ import annotations

import asyncio

#: A fetch running longer than this (s) stops counting against ``concurrency`` ...
SLOW_FETCH_S = 2.0
#: ... and at most ``SLOW_FETCH_FACTOR x concurrency`` such slow fetches run at once
#: besides the ``concurrency`` others (64 with the defaults: each holds a socket and at
#: most ``max_body_bytes`` of body).
SLOW_FETCH_FACTOR = 4


class FastSlot:
    """A worker's hold on one fast slot of ``semaphore`` (taken by the caller), given
    back once: when its fetch turns slow (``SLOW_FETCH_S``), or when its URL is done."""

    __slots__ = ("_held", "_semaphore")

    def __init__(self, semaphore: asyncio.Semaphore) -> None:
        self._semaphore = semaphore
        self._held = True

    def give_back(self) -> None:
        """Release the slot unless it was released already."""
        if self._held:
            self._held = False
            self._semaphore.release()


__all__ = ["SLOW_FETCH_FACTOR", "SLOW_FETCH_S", "FastSlot"]
