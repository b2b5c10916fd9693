"""core.render.procmem: process trees and their memory from /proc, and the monitor that measures
them off the event loop.

The /proc readers run against real processes this test starts (a parent with a child);
the monitor runs with a fake scan that records the thread it runs in and can be held,
and a fake clock, so "off the loop", "one scan at a time" and "stopped on close" are
checked exactly, with no timing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest
from fakeclock import FakeClock

from crawldeck.core.render.procmem import (
    MemoryMonitor,
    MemoryReading,
    process_tree,
)


def test_process_tree_walks_every_descendant_once() -> None:
    parents = {1: 0, 10: 1, 11: 1, 20: 10, 21: 10, 30: 20, 99: 98}
    assert process_tree(10, parents) == [10, 20, 21, 30]
    assert process_tree(1, parents) == [1, 10, 11, 20, 21, 30]
    assert process_tree(42, parents) == [42]


class Scans:
    """A fake ``measure``: records each call's roots and thread; ``hold`` makes the next
    call wait until ``release``."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[int, ...], int]] = []
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.gate.set()

    def hold(self) -> None:
        self.gate.clear()
        self.entered.clear()

    def release(self) -> None:
        self.gate.set()

    def __call__(self, roots: Sequence[int]) -> tuple[int, int]:
        self.calls.append((tuple(roots), threading.get_ident()))
        self.entered.set()
        assert self.gate.wait(10)
        return 1000 * len(self.calls), 100 * len(self.calls)


async def until(condition: object, what: str) -> None:
    """Wait (bounded, 10 s) until ``condition()`` is true; liveness, not timing."""
    assert callable(condition)
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"never: {what}")


async def test_the_monitor_measures_in_a_thread_and_keeps_the_last_figures() -> None:
    roots: list[int] = []
    scans, clock = Scans(), FakeClock(50.0)
    monitor = MemoryMonitor(lambda: roots, interval_s=3600, clock=clock, measure=scans)
    monitor.start()
    try:
        await asyncio.sleep(0.05)
        assert scans.calls == [] and monitor.latest() is None  # nothing to measure
        roots.append(7)
        monitor.wake()
        await until(lambda: monitor.latest() is not None, "a first reading")
        assert monitor.latest() == MemoryReading(1000, 100, 50.0)
        ((measured, thread),) = scans.calls
        assert measured == (7,) and thread != threading.get_ident()  # not the loop's
        clock.now = 52.5
        roots.append(8)
        monitor.wake()  # a browser started: measure now, not in an hour
        await until(lambda: len(scans.calls) == 2, "a second scan")
        await until(lambda: monitor.latest() == MemoryReading(2000, 200, 52.5), "its figures")
        assert scans.calls[1][0] == (7, 8)
    finally:
        await monitor.aclose()


async def test_the_monitor_measures_again_after_each_interval() -> None:
    scans = Scans()
    monitor = MemoryMonitor(lambda: [7], interval_s=0.01, measure=scans)
    monitor.start()
    try:
        await until(lambda: len(scans.calls) >= 3, "three scans without a wake")
    finally:
        await monitor.aclose()


async def test_one_scan_at_a_time_and_none_after_close() -> None:
    scans = Scans()
    monitor = MemoryMonitor(lambda: [7], interval_s=0.001, clock=FakeClock(50.0), measure=scans)
    scans.hold()
    monitor.start()
    try:
        await until(scans.entered.is_set, "the scan to start")
        for _ in range(20):  # wakes and intervals while the scan is stuck in its thread
            monitor.wake()
            await asyncio.sleep(0.005)
        assert len(scans.calls) == 1 and monitor.latest() is None
        async with asyncio.timeout(10):
            await monitor.aclose()  # does not wait for the stuck scan
        await monitor.aclose()  # idempotent
    finally:
        scans.release()
    await asyncio.sleep(0.05)
    assert len(scans.calls) == 1 and monitor.latest() is None  # its result is dropped
