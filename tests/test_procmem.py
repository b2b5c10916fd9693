"""core.render.procmem: process trees and their memory from /proc, and the monitor that measures
them off the event loop.

The /proc readers run against real processes this test starts (a parent with a child);
the monitor runs with a fake scan that records the thread it runs in and can be held,
and a fake clock, so "off the loop", "one scan at a time" and "stopped on close" are
checked exactly, with no timing.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence

import pytest
from fakeclock import FakeClock

from crawldeck.core.render.procmem import (
    MemoryMonitor,
    MemoryReading,
    find_marked,
    kill_tree,
    proc_parents,
    process_tree,
    pss_bytes,
    rss_bytes,
    tree_memory,
)


def test_process_tree_walks_every_descendant_once() -> None:
    parents = {1: 0, 10: 1, 11: 1, 20: 10, 21: 10, 30: 20, 99: 98}
    assert process_tree(10, parents) == [10, 20, 21, 30]
    assert process_tree(1, parents) == [1, 10, 11, 20, 21, 30]
    assert process_tree(42, parents) == [42]


@pytest.fixture
def family() -> Iterator[tuple[subprocess.Popen[bytes], int, str]]:
    """A Python parent (with a unique marker argument) that started a child; yields the
    parent, the child's pid and the marker."""
    marker = f"--procmem-test-{os.getpid()}-{id(object()):x}"
    # the child's pid is printed once the child runs Python (it says so): just after
    # its start its memory is not yet a Python's (a loaded machine saw rss under 1 MiB)
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; print(flush=True); "
        "time.sleep(60)'], stdout=subprocess.PIPE)\n"
        "child.stdout.readline()\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code, marker], stdout=subprocess.PIPE)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        yield parent, child, marker
    finally:
        kill_tree(parent.pid)
        parent.wait(timeout=10)
        parent.stdout.close()


def test_proc_readers_on_a_real_process_tree(
    family: tuple[subprocess.Popen[bytes], int, str],
) -> None:
    parent, child, marker = family
    parents = proc_parents()
    assert parents[parent.pid] == os.getpid() and parents[child] == parent.pid
    assert process_tree(parent.pid, parents) == [parent.pid, child]
    assert find_marked(marker) == parent.pid
    assert find_marked(marker + "-nobody") is None
    each = [(rss_bytes(pid), pss_bytes(pid)) for pid in (parent.pid, child)]
    assert all(rss > 1 << 20 and 0 < pss <= rss for rss, pss in each)  # a Python each
    rss, pss = tree_memory([parent.pid])
    # the two are read again, so they may have moved a little; never by a process
    assert rss >= sum(r for r, _ in each) * 0.8 and pss >= sum(p for _, p in each) * 0.8
    assert tree_memory([]) == (0, 0)
    assert (rss_bytes(2**22 + 1), pss_bytes(2**22 + 1)) == (0, 0)  # no such process


def test_kill_tree_ends_the_parent_and_its_child(
    family: tuple[subprocess.Popen[bytes], int, str],
) -> None:
    parent, child, _ = family
    kill_tree(parent.pid)
    assert parent.wait(timeout=10) == -9
    for _ in range(100):  # bounded: the child, reparented, is reaped by init
        if child not in proc_parents():
            break
        with open(f"/proc/{child}/stat", "rb") as f:
            if f.read().split(b") ")[1].startswith(b"Z"):
                break  # killed, a zombie until reaped
        threading.Event().wait(0.05)
    else:
        pytest.fail(f"child {child} still running")


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
