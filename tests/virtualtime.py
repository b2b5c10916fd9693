"""An asyncio event loop on virtual time: a test that waits 60 s runs in milliseconds.

``VirtualTimeLoop`` is a ``SelectorEventLoop`` whose ``time()`` is a virtual clock
(epoch-like seconds, ``float``) that only moves when the loop has nothing else to do:
when no callback is ready, no socket or pipe is readable, and no work handed to a
thread through ``run_in_executor`` (``asyncio.to_thread`` included) or to a parse
thread of ``core.net.parse`` (``core.net.parse.thread_jobs()``) is pending, the
loop jumps its clock to the next timer (``call_later``, ``asyncio.sleep``,
``asyncio.timeout``) and runs it at once. So ``loop.time`` can be the engine's one
``clock`` and asyncio's timers agree with it exactly.

Why thread work holds the clock: ``core.net.parse.ParsePool`` parses small pages in
threads under a time budget, and the engine ends with ``asyncio.to_thread(store.flush)``;
if the clock jumped to the next timer while such a thread ran, that work would seem
to take as long as the gap to the next timer (a parse "over budget", a fetch that
starts late). While a thread job is pending the loop waits for real (the job's end
wakes it through the loop's self-pipe) and the virtual clock stands still.

Limits (what the loop cannot see):
- work given to a thread by other means than ``run_in_executor`` or ``core.net.parse``'s
  small-page threads (a thread of one's
  own that calls ``call_soon_threadsafe``, ``executor.submit`` + ``wrap_future``): the
  clock may jump while it runs. ``core.net.parse`` sends bodies over 32 KiB to worker
  processes that way, so engine tests keep their pages under 32 KiB;
- blocking calls on the loop (``Store.flush()`` called directly) take no virtual
  time, whatever they take for real;
- timers closer than ``CLOCK_RESOLUTION_S`` (1 us) to each other run together, and
  ``time.time()``, ``time.monotonic()`` and ``datetime.now()`` stay real.

``run(main, start=EPOCH)`` runs a coroutine on a new loop (as ``asyncio.run``).
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor
from typing import Any, TypeVar, TypeVarTuple

import fakeclock

from crawldeck.core.net import parse

T = TypeVar("T")

#: The virtual clock's start is the fake clock's (``tests/fakeclock.py``):
#: 2023-11-14T22:13:20Z, so stored timestamps look real.
EPOCH = fakeclock.EPOCH
#: Timers due within this many seconds of the clock run together. Epoch-sized floats
#: have a resolution of about 0.24 us; asyncio's default (1 ns, the monotonic clock's)
#: would be lost in rounding and a due timer would never run.
CLOCK_RESOLUTION_S = 1e-6
#: How long (real s) the loop waits with no timer, no thread job and nothing ready
#: before it calls that a deadlock (a test that would hang forever fails instead).
DEADLOCK_S = 10.0

_R = TypeVar("_R")
_Ts = TypeVarTuple("_Ts")


class _VirtualSelector(selectors.DefaultSelector):
    """The platform selector whose ``select(timeout)`` advances its loop's virtual
    clock by ``timeout`` instead of sleeping, when nothing is ready and no thread job
    is pending."""

    def __init__(self) -> None:
        super().__init__()
        self.loop: VirtualTimeLoop | None = None

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        loop = self.loop
        if loop is None or (timeout is not None and timeout <= 0):
            return super().select(timeout)
        if loop.thread_jobs or parse.thread_jobs():
            # a thread is working for the loop: real time passes, virtual time stands
            return super().select(timeout)
        events = super().select(0)
        if events:
            return events
        if timeout is None:
            events = super().select(loop.deadlock_s)
            if not events and not (loop.thread_jobs or parse.thread_jobs()):
                raise RuntimeError(
                    f"virtual time: nothing scheduled, nothing to read and no thread job "
                    f"for {loop.deadlock_s} s of real time: the test would hang"
                )
            return events
        loop.advance(timeout)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose ``time()`` is virtual (see the module docstring).

    Args:
        start: the clock's first reading, epoch-like seconds (default ``EPOCH``).
        deadlock_s: real seconds with nothing to do at all (no timer, no thread job,
            nothing to read) after which ``RuntimeError`` is raised from the loop.

    Attributes:
        thread_jobs: ``run_in_executor`` jobs not finished yet (the clock waits for
            them).
    """

    def __init__(self, start: float = EPOCH, *, deadlock_s: float = DEADLOCK_S) -> None:
        selector = _VirtualSelector()
        super().__init__(selector)
        selector.loop = self
        self._now = float(start)
        self._clock_resolution = CLOCK_RESOLUTION_S
        self.deadlock_s = deadlock_s
        self.thread_jobs = 0

    def time(self) -> float:
        """The virtual clock, seconds (moves only in ``advance``)."""
        return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` (>= 0) ahead; landing within the clock's
        resolution of the next timer lands on that timer exactly."""
        target = self._now + seconds
        scheduled: list[asyncio.TimerHandle] = self._scheduled  # type: ignore[attr-defined]
        if scheduled:
            head = scheduled[0].when()
            if abs(head - target) < CLOCK_RESOLUTION_S:
                target = max(head, target)
        self._now = max(self._now, target)

    def run_in_executor(
        self, executor: Executor | None, func: Callable[[*_Ts], _R], *args: *_Ts
    ) -> asyncio.Future[_R]:
        """``SelectorEventLoop.run_in_executor``, counted in ``thread_jobs`` until the
        job's future is done (the virtual clock does not move meanwhile)."""
        future = super().run_in_executor(executor, func, *args)
        self.thread_jobs += 1
        future.add_done_callback(self._thread_job_done)
        return future

    def _thread_job_done(self, _future: asyncio.Future[Any]) -> None:
        self.thread_jobs -= 1


def run(main: Coroutine[Any, Any, T], *, start: float = EPOCH) -> T:
    """Run ``main`` to its end on a new ``VirtualTimeLoop`` starting at ``start``
    (epoch-like s), as ``asyncio.run`` does (tasks left are cancelled, async
    generators and the default executor shut down, the loop closed)."""
    with asyncio.Runner(loop_factory=lambda: VirtualTimeLoop(start)) as runner:
        return runner.run(main)


__all__ = ["CLOCK_RESOLUTION_S", "DEADLOCK_S", "EPOCH", "VirtualTimeLoop", "run"]
