"""Process memory accounting from ``/proc``: the RSS and PSS of a browser's process tree.

Chromium runs as a tree of processes (browser, renderers, GPU and network services);
what a render worker costs is the memory of the whole tree under the process it
launched. The functions here read ``/proc`` synchronously (a few ms for a few hundred
processes; a read of ``smaps_rollup`` can wait on the kernel's memory-map lock), so
the event loop never calls them: ``MemoryMonitor`` runs ``tree_memory`` in a thread
(``asyncio.to_thread``), one scan at a time, and keeps the last figures with the time
they were measured; ``find_marked`` and ``kill_tree`` are called through
``asyncio.to_thread`` by ``core.render.browser_pool`` (issue #11, items 4 and 5).

Without ``/proc`` (not Linux) every figure is 0 and no process is found. No function
here raises: a process that ends while it is read counts 0.

Source: proc(5) for ``/proc/PID/stat`` (field 4, the parent pid, after the
parenthesised command name), ``/proc/PID/statm`` (field 2, resident pages),
``/proc/PID/smaps_rollup`` (``Pss:`` in KiB) and ``/proc/PID/cmdline`` (NUL-separated
arguments).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

#: Seconds between two measurements of the browsers' memory while any browser runs.
MEMORY_INTERVAL_S: Final = 1.0


def proc_parents() -> dict[int, int]:
    """pid -> parent pid of every process in ``/proc`` (empty without ``/proc``)."""
    parents: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return parents
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 2:
            parents[int(name)] = int(fields[1])
    return parents


def process_tree(root: int, parents: Mapping[int, int]) -> list[int]:
    """``root`` and its descendants according to ``parents`` (pid -> parent pid),
    breadth first, each pid once; ``[root]`` when it has no child."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    out = [root]
    for pid in out:  # grows while iterating: a breadth-first walk, each pid once
        out.extend(children.get(pid, ()))
    return out


def rss_bytes(pid: int) -> int:
    """Resident set size of one process in bytes (``/proc/PID/statm``), 0 if gone."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def pss_bytes(pid: int) -> int:
    """Proportional set size of one process in bytes (``/proc/PID/smaps_rollup``), 0 if
    gone or where the kernel lacks the file."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def tree_memory(roots: Sequence[int]) -> tuple[int, int]:
    """(RSS, PSS) in bytes summed over the process trees under ``roots``.

    RSS counts pages shared between processes once per process (an upper bound); PSS
    splits them between their users. ``(0, 0)`` for no roots (no scan then). Blocking:
    call it in a thread.
    """
    rss = pss = 0
    if roots:
        parents = proc_parents()
        for root in roots:
            for pid in process_tree(root, parents):
                rss += rss_bytes(pid)
                pss += pss_bytes(pid)
    return rss, pss


def find_marked(marker: str) -> int | None:
    """The pid of the process one of whose arguments is exactly ``marker`` (the
    browser a pool launched with a unique flag), or ``None``. Blocking: call it in a
    thread."""
    needle = marker.encode()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if needle in f.read().split(b"\0"):
                    return int(name)
        except OSError:
            continue
    return None


def kill_tree(root: int) -> None:
    """SIGKILL ``root``'s descendants, deepest first, then ``root`` (a browser that did
    not close). Processes already gone are skipped. Blocking: call it in a thread."""
    for pid in reversed(process_tree(root, proc_parents())):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


@dataclass(frozen=True, slots=True)
class MemoryReading:
    """One measurement of the browsers' process trees.

    Attributes:
        rss_bytes, pss_bytes: the trees' RSS and PSS in bytes (``tree_memory``).
        measured_at: when the scan ended, in seconds of the monitor's clock (the
            render pool's, which is the engine's one clock; ``time.monotonic`` for a
            monitor built on its own: read in the monitor's thread, never stored).
    """

    rss_bytes: int
    pss_bytes: int
    measured_at: float


class MemoryMonitor:
    """Measures the memory of some process trees in a thread, every ``interval_s``.

    Args:
        roots: called on the event loop before each scan: the pids whose trees to
            measure (the pool's running browsers); no scan while it returns none.
        interval_s: seconds between the end of one scan and the start of the next,
            while there are roots (``MEMORY_INTERVAL_S``).
        clock: monotonic seconds, for ``MemoryReading.measured_at``.
        measure: the blocking scan, run in a thread by ``asyncio.to_thread``
            (``tree_memory``; a test gives a fake).

    One scan at a time (the next starts only after the previous one ended, however
    long it takes), never on the event loop; ``latest()`` returns the last figures at
    once. ``wake()`` asks for a scan now (a browser started or stopped). ``start`` and
    ``aclose`` must be called on the loop that runs the monitor.
    """

    def __init__(
        self,
        roots: Callable[[], Sequence[int]],
        *,
        interval_s: float = MEMORY_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        measure: Callable[[Sequence[int]], tuple[int, int]] = tree_memory,
    ) -> None:
        self._roots = roots
        self._interval_s = interval_s
        self._clock = clock
        self._measure = measure
        self._wake = asyncio.Event()
        self._latest: MemoryReading | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the periodic scans (idempotent; needs a running event loop)."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="render-memory")

    def wake(self) -> None:
        """Scan now rather than at the end of the interval (cheap; never blocks)."""
        self._wake.set()

    def latest(self) -> MemoryReading | None:
        """The last measurement, ``None`` before the first one. Never blocks."""
        return self._latest

    async def aclose(self) -> None:
        """Stop the scans; a scan under way in its thread ends there and is dropped.

        Idempotent. Raises what a faulty ``measure`` raised (a bug: ``tree_memory``
        never raises).
        """
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # aclose itself was cancelled

    async def _run(self) -> None:
        while True:  # ends when aclose() cancels this task
            self._wake.clear()
            roots = tuple(self._roots())
            if roots:
                rss, pss = await asyncio.to_thread(self._measure, roots)
                self._latest = MemoryReading(rss, pss, self._clock())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval_s if roots else None):
                    await self._wake.wait()


__all__ = [
    "MEMORY_INTERVAL_S",
    "MemoryMonitor",
    "MemoryReading",
    "find_marked",
    "kill_tree",
    "proc_parents",
    "process_tree",
    "pss_bytes",
    "rss_bytes",
    "tree_memory",
]
