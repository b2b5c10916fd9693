"""Parsing off the event loop, with a time budget per page (issue #10 item 13).

``ParsePool.extract`` runs ``core.policy.links.extract_links`` off the event loop: a body of
at most ``THREAD_PARSE_MAX_BYTES`` (32 KiB) in a thread of this process, a bigger one
in a worker process. For the latter the event loop only hands a
job to a thread and awaits it; that thread writes the job to a worker's pipe and waits
for the answer with ``Pipe.poll(timeout)``, so neither pickling a 10 MB body nor
a parse that never ends holds the loop. A small body cannot hold its thread long:
lexbor's worst case grows with the square of the size (see ``THREAD_PARSE_MAX_BYTES``),
and the thread path saves the pickling and the pipe round trip (about 0.4 ms of CPU
per 15 KB page; a crawl of 500 hosts went from about 350 to about 470 pages/s).

Why processes, measured on this 2-core machine: lexbor's tree builder is quadratic in
the depth of nesting (a page of 100 000 nested ``<div>`` parses in 28-35 s inline as
500 KB, 38 s as 1 MB with text in each; 40 000 take 3.6 s; 11 MB of flat markup with
140 000 links take 0.44-0.64 s). selectolax releases the GIL while lexbor parses
(``with nogil`` around ``lxb_html_document_parse``), so a thread keeps the loop
responsive (longest loop gap 21 ms during a 5.8 s parse), but a thread cannot be
stopped: the page would hold a CPU and a worker until lexbor is done. A process can be
killed at the budget.

Guarantees of ``extract``:
- It returns exactly what ``extract_links`` returns for the same arguments (the
  headers that matter, ``core.policy.links.HEADERS_USED``, are sent with every value and
  repeated headers kept apart), or raises; it never blocks the event loop.
- It raises ``ParseTimeout`` at most ``parse_timeout_ms`` (plus the time to kill the
  worker, a few ms) after the job was handed to a worker; the worker is killed then
  and a new one is started for the next page, so one hostile page costs one budget
  of one worker and nothing else. No links of that page are known (a killed parse
  has none to give). A small body over the budget raises ``ParseTimeout`` too; its
  thread runs on to the end of the parse, bounded by the body's size; one whose parse
  ended over the budget before its timer ran is over it all the same. Budgets and
  parse times are read on the pool's clock (the engine's one clock, issue #24 item 6);
  a loop on virtual time holds its clock while a parse thread works, so a small page
  never runs out of budget there.
- It raises ``ParseError`` when the worker died under the page (OOM killer, a crash
  in the parser) or the pool is closed. Time waiting for a free worker (``queued``)
  does not count against the budget.
- Cancelling ``extract`` is safe: the worker finishes or is killed at the budget, and
  only then takes the next job.
- A worker found dead while idle is replaced before it is given a page; workers left
  running when the pool is dropped without ``aclose()`` are killed when it is garbage
  collected or at interpreter exit (``weakref.finalize``).

Cost, measured here for a 15 KB page with 50 links: 0.30-0.45 ms inline; through the
pool 0.7-0.8 ms of latency one page at a time, 0.25-0.34 ms of the crawler's own CPU
(threads included) per page, 1 000-1 150 pages/s with one worker and 1 350-1 700 with
two (16 in flight). Since issue #13 ``extract_links`` also takes the SimHash of the
page's text (``core.policy.simhash``): pure Python, about 0.2-0.5 us of CPU per word, which
holds the GIL (lexbor does not); on ``benchmarks/e2e_bench.py``'s 15 KB pages of
1 900 words inline extraction went from 0.12 to 0.53 ms (``simhash_bench.py``).

Workers start on first use (``start()`` starts them beforehand). Each is a fresh
interpreter (spawn semantics: ``subprocess`` forks and at once execs, which is safe
in a process with threads such as the store writer) that imports
``core.net.parse_worker`` (and through it ``core.policy.links``, nothing else of the crawl) and
says it is ready before it is given a page, so its start (about 120 ms and 16.9 MiB
here; 36 MB when it imported this module) never counts against a page's budget.
Jobs and answers are pickled over two pipes in ``core.net.parse_worker.Pipe``'s frames
(not ``multiprocessing.connection``'s: 1.6 MiB more per worker). Not
``multiprocessing.Process``:
with ``spawn`` or ``forkserver`` every worker runs the main script's top level again
as ``__mp_main__`` (for the ``crawldeck`` script that is importing the whole console,
0.6 s and 56 MB per worker, measured), and CPython 3.11's fork server never receives
the main path it would need to preload it once.

Fallback: when a worker process cannot be started (no ``/dev/shm``, a sandbox without
``fork``, a process limit), the pool parses in threads for the rest of its life and
says so once (``notice``, and a ``crawldeck.parse`` log warning). Then a page over the
budget still raises ``ParseTimeout`` at the budget, but its parse runs on to its end
in its thread (the GIL is released while lexbor parses, so the loop stays
responsive), holding that thread's worker slot until then.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import logging
import os
import queue
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from multidict import CIMultiDict

from crawldeck.core.clock import LoopClock
from crawldeck.core.errors import ParseError, ParseTimeout
from crawldeck.core.net.parse_worker import Pipe
from crawldeck.core.policy.links import HEADERS_USED, Extracted, extract_links

if TYPE_CHECKING:  # not imported at run time: a worker imports this module (see _BOOT)
    from crawldeck.core.config import CrawlConfig

log = logging.getLogger("crawldeck.parse")

#: How long a new worker may take to say it is ready (an interpreter start under load).
_READY_TIMEOUT_S = 60.0

#: Bodies up to this many bytes are parsed in a thread of this process, bigger ones in
#: a worker process. lexbor's worst case is quadratic in the nesting of block elements,
#: and nesting is bounded by the size: the worst shapes measured here at 32 KiB
#: (``<li><ul>``, ``<ol><li>``, ``<dl><dt>``, ``<div>`` repeated) take 70-115 ms, at
#: 64 KiB 260-480 ms, at 128 KiB up to 4.9 s. At 32 KiB a thread, which cannot be
#: stopped, is never held long, and a small page never waits behind a hostile one for
#: more than that. A thread skips the pickling and the pipe round trip of a worker
#: process (about 0.4 ms of CPU per 15 KB page, measured).
THREAD_PARSE_MAX_BYTES = 32 * 1024

#: One job: body, page URL, the ``HEADERS_USED`` headers as (name, value) pairs, token,
#: ``obey_nofollow``, ``max_links_per_page``.
_Job = tuple[bytes, str, list[tuple[str, str]], str, bool, int]


@dataclass(eq=False, slots=True)
class _SmallJob:
    """One small page on its way through ``_SmallParsers``: the arguments of
    ``extract_links``, the loop's future for its answer, and what its thread wrote
    (``started``/``finished``: seconds of the pool's clock; ``result`` or ``error``)."""

    future: asyncio.Future[Extracted]
    body: bytes
    url: str
    headers: Mapping[str, str]
    token: str
    obey: bool
    timer: asyncio.TimerHandle | None = None
    started: float | None = None
    finished: float = 0.0
    result: Extracted | None = None
    error: BaseException | None = None


class _SmallParsers:
    """The threads that parse small bodies, handing finished pages back in batches.

    A ``ThreadPoolExecutor`` through ``run_in_executor`` wakes the event loop once per
    page (``call_soon_threadsafe``: a write to its self-pipe, the loop's read of it, a
    ``concurrent.futures.Future`` with its condition variable and callbacks); profiled
    in a crawl that hand-off cost more CPU than the parse (issue #23: 0.4 ms a page
    against 0.2). Here a thread takes jobs from a ``queue.SimpleQueue`` (C), puts each
    finished one on a deque, and wakes the loop only when no wake-up is pending yet:
    every page finished before the loop runs ``_deliver`` rides on one wake-up.

    Args:
        size: threads (started on the first ``submit``).
        max_links: ``extract_links``'s ``max_links``.
        clock: the pool's clock (s; read in the threads: ``core.clock.LoopClock`` may
            be); a job's parse is timed on it.
        budget_ms: ``parse_timeout_ms``: a page whose parse took longer on ``clock``
            is answered with ``ParseTimeout`` even when it ended before its timer ran.

    Use from one event loop. ``pages`` and ``parse_ms`` (the pages answered and their
    parse time, ms) and ``late`` (pages over the budget answered ``ParseTimeout`` here)
    are updated on the loop.
    """

    def __init__(
        self, size: int, max_links: int, clock: Callable[[], float], budget_ms: int
    ) -> None:
        self._size = size
        self._max_links = max_links
        self._clock = clock
        self._budget_ms = budget_ms
        self._jobs: queue.SimpleQueue[_SmallJob | None] = queue.SimpleQueue()
        self._done: collections.deque[_SmallJob] = collections.deque()
        self._wake_lock = threading.Lock()
        self._wake_pending = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = False
        self._closed = False
        self._stopped = False
        self.pages = 0
        self.parse_ms = 0.0
        self.late = 0
        #: jobs submitted and not yet answered on the loop (queued, parsing, or parsed
        #: and waiting for ``_deliver``)
        self.in_flight = 0
        _SMALL_PARSERS.add(self)

    def submit(self, loop: asyncio.AbstractEventLoop, job: _SmallJob) -> bool:
        """Queue ``job`` (its future is answered on ``loop``); ``False`` once closed."""
        if self._closed:
            return False
        self._loop = loop
        if not self._started:
            # read once here, on the loop's thread: a LoopClock binds to the running loop
            # at its first read there, which a parse thread (no running loop) cannot
            # do; unbound, the threads would time a parse on the wall clock (a
            # virtual-time test's parse then ran over its budget on a loaded machine)
            self._clock()
            self._started = True
            for i in range(self._size):
                threading.Thread(
                    target=self._run, name=f"crawldeck-parse-small_{i}", daemon=True
                ).start()
        self._jobs.put(job)
        self.in_flight += 1
        return True

    def close(self) -> None:
        """On the loop: fail the jobs no thread has taken with ``ParseError`` and stop
        the threads once their page is parsed (not waited for). Idempotent."""
        if self._closed:
            return
        self._closed = True
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is None:
                continue
            self.in_flight -= 1
            if not job.future.done():
                job.future.set_exception(ParseError(f"parsing {job.url}: the parse pool is closed"))
        self.stop()

    def stop(self) -> None:
        """Make every thread end once its page is parsed (from any thread; the pool's
        ``weakref.finalize`` when it is dropped unclosed). Idempotent."""
        with self._wake_lock:
            if self._stopped:
                return
            self._stopped = True
        self._closed = True
        for _ in range(self._size):
            self._jobs.put(None)

    def _run(self) -> None:
        """A parse thread: parse jobs until ``None``; hand each to ``_finish``."""
        get = self._jobs.get
        max_links = self._max_links
        clock = self._clock
        while (job := get()) is not None:
            job.started = clock()
            try:
                job.result = extract_links(
                    job.body,
                    job.url,
                    job.headers,
                    job.token,
                    obey_nofollow=job.obey,
                    max_links=max_links,
                )
            except BaseException as exc:  # the caller's to see, as run_in_executor does
                job.error = exc
            job.finished = clock()
            self._finish(job)

    def _finish(self, job: _SmallJob) -> None:
        """A parse thread: queue ``job``'s answer; wake the loop unless a wake-up is
        already on its way (``_deliver`` clears the flag before it reads the deque, so
        a job queued after its last read always gets a wake-up of its own)."""
        self._done.append(job)
        with self._wake_lock:
            if self._wake_pending:
                return
            self._wake_pending = True
        loop = self._loop
        try:
            if loop is None:
                raise RuntimeError("no loop")
            loop.call_soon_threadsafe(self._deliver)
        except RuntimeError:  # the loop is closed: nobody waits for the answer
            with self._wake_lock:
                self._wake_pending = False

    def _deliver(self) -> None:
        """On the loop: answer every finished job's future (one that was cancelled or
        timed out meanwhile is dropped)."""
        with self._wake_lock:
            self._wake_pending = False
        done = self._done
        while done:
            job = done.popleft()
            self.in_flight -= 1
            future = job.future
            if future.done():
                continue
            if job.error is not None:
                future.set_exception(job.error)
                continue
            assert job.started is not None and job.result is not None
            took_ms = (job.finished - job.started) * 1000
            if took_ms > self._budget_ms:  # its timer had not run yet: over all the same
                self.late += 1
                self.parse_ms += self._budget_ms
                future.set_exception(
                    ParseTimeout(
                        f"parsing {job.url} took over {self._budget_ms} ms (parse_timeout_ms)"
                    )
                )
                continue
            self.pages += 1
            self.parse_ms += took_ms
            future.set_result(job.result)


#: Every ``_SmallParsers`` alive in this process (for ``thread_jobs``).
_SMALL_PARSERS: weakref.WeakSet[_SmallParsers] = weakref.WeakSet()


def thread_jobs() -> int:
    """Small pages handed to the parse threads of any ``ParsePool`` of this process and
    not yet answered on their event loop (queued, parsing, or parsed and waiting for
    the loop). A loop on virtual time (``tests/virtualtime.py``) holds its clock while
    this is above 0, as it does for ``run_in_executor`` jobs, so a parse never seems to
    take as long as the gap to the next timer."""
    return sum(p.in_flight for p in list(_SMALL_PARSERS))


@dataclass(frozen=True, slots=True)
class ParseStats:
    """A snapshot of a ``ParsePool``.

    Attributes:
        pages: pages parsed and answered (links returned).
        threaded: of them, the pages parsed in a thread (bodies of at most
            ``THREAD_PARSE_MAX_BYTES``).
        timeouts: pages over ``parse_timeout_ms`` (``ParseTimeout`` raised).
        failures: pages whose worker died or failed under them (``ParseError``).
        restarts: worker processes started to replace a killed or dead one.
        busy: workers holding a page now.
        queued: ``extract`` calls waiting for a free worker now.
        parse_ms_total: wall time of the answered and timed-out pages, from the job
            handed to the worker to its answer (or the budget), in ms.
        workers: ``parse_workers``.
        mode: ``process`` (worker processes) or ``thread`` (the fallback).
    """

    pages: int
    threaded: int
    timeouts: int
    failures: int
    restarts: int
    busy: int
    queued: int
    parse_ms_total: float
    workers: int
    mode: Literal["process", "thread"]


#: What a worker interpreter runs: the parent's ``sys.path``, then
#: ``core.net.parse_worker.serve`` (a module of its own: a worker imports what parsing needs
#: and no more, 27 against 36 MB with this module's imports, measured).
_BOOT = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    "from crawldeck.core.net.parse_worker import serve; serve(int(sys.argv[2]), int(sys.argv[3]))"
)


@dataclass(slots=True)
class _Worker:
    """A live worker process and the parent's ends of its two pipes."""

    process: subprocess.Popen[bytes]
    jobs: Pipe  # parent -> worker
    answers: Pipe  # worker -> parent

    def close(self) -> int | None:
        """Kill the process, wait for it (at most 5 s), close the pipes; its exit
        code (negative: the signal), ``None`` if it is somehow still there."""
        if self.process.poll() is None:
            self.process.kill()
        try:
            code: int | None = self.process.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        self.jobs.close()
        self.answers.close()
        return code


class ParsePool:
    """``parse_workers`` worker processes that run ``extract_links`` with a budget.

    Args:
        config: ``parse_workers`` (pool size) and ``parse_timeout_ms`` (budget per
            page) are read.
        python: the interpreter that runs the workers (default ``sys.executable``);
            one that cannot be started makes the pool fall back to threads (module
            docstring).
        clock: what the budget and the parse times are read on, seconds (the
            engine's one clock; default ``core.clock.LoopClock``). A worker process's
            answer is still waited for with a pipe's ``poll(timeout)``, real time: the
            remaining budget on ``clock`` is that timeout.

    Use from one event loop; ``aclose()`` when done (idempotent). See the module
    docstring for what ``extract`` guarantees.
    """

    def __init__(
        self,
        config: CrawlConfig,
        *,
        python: str = sys.executable,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._size = config.parse_workers
        self._clock = clock = clock or LoopClock()
        self._budget_ms = config.parse_timeout_ms
        self._max_bytes = config.parse_max_bytes
        self._max_links = config.max_links_per_page
        self._python = python
        self._workers: list[_Worker | None] = [None] * self._size
        self._ever_started = [False] * self._size
        self._executor = ThreadPoolExecutor(self._size, thread_name_prefix="crawldeck-parse")
        self._small = _SmallParsers(self._size, self._max_links, clock, self._budget_ms)
        self._idle: asyncio.Queue[int] = asyncio.Queue()
        for slot in range(self._size):
            self._idle.put_nowait(slot)
        self._lock = threading.Lock()  # worker starts and stops, _closed
        self._stats_lock = threading.Lock()  # the counters below; held for an add only
        self._closed = False
        self._mode: Literal["process", "thread"] = "process"
        self._queued = 0
        self._pages = 0
        self._timeouts = 0
        self._failures = 0
        self._restarts = 0
        self._parse_ms = 0.0
        #: Why the pool parses in threads (one line), or ``None`` while it uses processes.
        self.notice: str | None = None
        weakref.finalize(self, _kill_all, self._workers)
        weakref.finalize(self, self._small.stop)

    @property
    def pids(self) -> tuple[int, ...]:
        """Process ids of the live worker processes."""
        return tuple(w.process.pid for w in self._workers if w is not None)

    def statistics(self) -> ParseStats:
        """The counters now (cheap; never blocks the loop)."""
        with self._stats_lock:
            return ParseStats(
                pages=self._pages + self._small.pages,
                threaded=self._small.pages,
                timeouts=self._timeouts + self._small.late,
                failures=self._failures,
                restarts=self._restarts,
                busy=self._size - self._idle.qsize(),
                queued=self._queued,
                parse_ms_total=self._parse_ms + self._small.parse_ms,
                workers=self._size,
                mode=self._mode,
            )

    async def start(self) -> None:
        """Start every worker now, so the first pages do not wait for one (optional:
        ``extract`` starts a missing worker itself). Falls back to threads when they
        cannot start. Raises ``ParseError`` when the pool is closed."""
        slots = [await self._idle.get() for _ in range(self._size)]
        loop = asyncio.get_running_loop()
        try:
            await asyncio.gather(
                *(loop.run_in_executor(self._executor, self._worker, s) for s in slots)
            )
        finally:
            for slot in slots:
                self._idle.put_nowait(slot)

    async def extract(
        self,
        body: bytes,
        url: str,
        headers: Mapping[str, str],
        token: str,
        *,
        obey_nofollow: bool = True,
    ) -> Extracted:
        """``extract_links(body[:parse_max_bytes], url, headers, token,
        obey_nofollow=..., max_links=max_links_per_page)`` off the event loop: in a
        thread for a body of at most ``THREAD_PARSE_MAX_BYTES`` (its worst case is
        bounded by its size), else in a worker process that is killed at the budget.

        Args and result: as ``core.policy.links.extract_links``; ``headers`` may be a
        multidict (``FetchResult.headers``) or a plain mapping. Only the first
        ``parse_max_bytes`` of ``body`` are parsed (and sent to a worker): lexbor's
        tree costs about 35 bytes per byte of markup, measured here (a 512 KiB page
        of text or of links takes 18-20 MB, 1 MiB 31-38 MB, 10 MiB 57-306 MB), so a
        10 MiB page parsed whole would cost a worker more than the rest of a crawl.
        A longer body gives ``Extracted.cut`` ``parse_cut: ...`` (before any
        ``links_cut``).

        Raises:
            ParseTimeout: the page took over ``parse_timeout_ms`` (its worker is
                killed and replaced).
            ParseError: the worker died under the page, or the pool is closed.
        """
        if self._closed:
            raise ParseError(f"parsing {url}: the parse pool is closed")
        size = len(body)
        if size <= self._max_bytes:
            return await self._extract(body, url, headers, token, obey_nofollow)
        extracted = await self._extract(body[: self._max_bytes], url, headers, token, obey_nofollow)
        cut = f"parse_cut: links read from the first {self._max_bytes} of {size} bytes"
        cut += " (parse_max_bytes)"
        if extracted.cut is not None:
            cut += f"; {extracted.cut}"
        return dataclasses.replace(extracted, cut=cut)

    async def _extract(
        self, body: bytes, url: str, headers: Mapping[str, str], token: str, obey_nofollow: bool
    ) -> Extracted:
        """``extract`` of a body within ``parse_max_bytes``."""
        if len(body) <= THREAD_PARSE_MAX_BYTES:
            return await self._in_thread(body, url, headers, token, obey_nofollow)
        pairs = [(k, v) for k, v in headers.items() if k.lower() in HEADERS_USED]
        job: _Job = (body, url, pairs, token, obey_nofollow, self._max_links)
        self._queued += 1
        try:
            slot = await self._idle.get()
        finally:
            self._queued -= 1
        loop = asyncio.get_running_loop()
        try:
            future = self._executor.submit(self._run, slot, job)
        except RuntimeError:  # the executor is shut down: aclose() ran meanwhile
            self._idle.put_nowait(slot)
            raise ParseError(f"parsing {url}: the parse pool is closed") from None
        future.add_done_callback(lambda _: self._release_from_thread(loop, slot))
        if self._mode == "process":
            return await asyncio.wrap_future(future)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), self._budget_ms / 1000)
        except TimeoutError:
            with self._stats_lock:
                self._timeouts += 1
                self._parse_ms += self._budget_ms
            raise self._timeout_error(url) from None

    async def _in_thread(
        self, body: bytes, url: str, headers: Mapping[str, str], token: str, obey: bool
    ) -> Extracted:
        """``extract`` of a small body in one of the pool's parse threads, timed from
        when its thread starts it (time waiting for a free thread does not count)."""
        loop = asyncio.get_running_loop()
        job = _SmallJob(loop.create_future(), body, url, headers, token, obey)
        if not self._small.submit(loop, job):
            raise ParseError(f"parsing {url}: the parse pool is closed")
        job.timer = loop.call_later(self._budget_ms / 1000, self._overdue, loop, job)
        try:
            return await job.future
        finally:
            job.timer.cancel()

    def _overdue(self, loop: asyncio.AbstractEventLoop, job: _SmallJob) -> None:
        """On the loop, a budget after ``job`` was queued or last checked: fail it with
        ``ParseTimeout`` when its thread has parsed it for the budget, else check again
        when it would be (the loop's clock may be virtual: the budget is real time)."""
        if job.future.done():
            return
        budget_s = self._budget_ms / 1000
        started = job.started
        ran_s = 0.0 if started is None else self._clock() - started
        if ran_s < budget_s:
            job.timer = loop.call_later(budget_s - ran_s, self._overdue, loop, job)
            return
        with self._stats_lock:
            self._timeouts += 1
            self._parse_ms += self._budget_ms
        job.future.set_exception(self._timeout_error(job.url))

    async def aclose(self) -> None:
        """Kill and reap every worker; later ``extract`` calls raise ``ParseError``.

        Idempotent. In-flight ``extract`` calls raise ``ParseError``. In thread mode a
        parse still running is not waited for (its thread ends when lexbor does)."""
        if self._closed:
            return
        self._closed = True
        self._small.close()
        await asyncio.to_thread(self._shutdown)

    # -- in the pool's threads ---------------------------------------------------------

    def _run(self, slot: int, job: _Job) -> Extracted:
        """Parse one job on ``slot``'s worker (started if missing); see ``extract``."""
        url = job[1]
        worker = self._workers[slot]
        if worker is not None and worker.process.poll() is not None:  # died while idle
            self._discard(slot, worker)
            worker = None
        worker = worker or self._worker(slot)
        if worker is None:  # the pool fell back to threads
            return self._inline(job)
        clock = self._clock
        started = clock()
        kind: str
        payload: object = None
        try:
            worker.jobs.send(job)
            left = self._budget_ms / 1000 - (clock() - started)
            if left > 0 and worker.answers.poll(left):
                kind, payload = worker.answers.recv()
            else:
                kind = "timeout"
        except (EOFError, OSError):  # died under the page, or killed by aclose()
            kind = "died"
        took_ms = (clock() - started) * 1000
        if kind == "ok" and isinstance(payload, Extracted):
            with self._stats_lock:
                self._pages += 1
                self._parse_ms += took_ms
            return payload
        code = self._discard(slot, worker)
        if self._closed:
            raise ParseError(f"parsing {url}: the parse pool is closed")
        with self._stats_lock:
            if kind == "timeout":
                self._timeouts += 1
                self._parse_ms += took_ms
            else:
                self._failures += 1
        if kind == "timeout":
            raise self._timeout_error(url)
        if kind == "error":
            raise ParseError(f"parsing {url} failed in the parse worker: {payload}")
        raise ParseError(f"parsing {url}: the parse worker died (exit code {code})")

    def _worker(self, slot: int) -> _Worker | None:
        """``slot``'s worker, started when missing; ``None`` in thread mode (and
        switches to it when a worker cannot start)."""
        with self._lock:
            if self._closed:
                raise ParseError("the parse pool is closed")
            existing = self._workers[slot]
            if existing is not None or self._mode == "thread":
                return existing
        try:
            worker = self._spawn()
        except (OSError, ValueError, EOFError, subprocess.SubprocessError) as exc:
            self._fall_back(_one_line(exc))
            return None
        with self._lock:
            if self._closed:  # aclose() ran while it started
                worker.close()
                raise ParseError("the parse pool is closed")
            self._workers[slot] = worker
            if self._ever_started[slot]:
                with self._stats_lock:
                    self._restarts += 1
            self._ever_started[slot] = True
            return worker

    def _spawn(self) -> _Worker:
        """Start one worker interpreter and wait until it is ready.

        Raises ``OSError`` (cannot start), ``EOFError`` (died while starting)."""
        job_r, job_w = os.pipe()
        ans_r, ans_w = os.pipe()
        try:
            process = subprocess.Popen(
                [self._python, "-c", _BOOT, json.dumps(sys.path), str(job_r), str(ans_w)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(job_r, ans_w),
                close_fds=True,
                start_new_session=True,
            )
        except BaseException:
            for fd in (job_r, job_w, ans_r, ans_w):
                os.close(fd)
            raise
        os.close(job_r)
        os.close(ans_w)
        worker = _Worker(process, Pipe(job_w), Pipe(ans_r))
        try:
            if not worker.answers.poll(_READY_TIMEOUT_S):
                raise OSError(f"a new parse worker did not start in {_READY_TIMEOUT_S:g} s")
            worker.answers.recv()
        except BaseException:
            worker.close()
            raise
        return worker

    def _fall_back(self, why: str) -> None:
        """Parse in threads from now on; say why, once."""
        with self._lock:
            if self._mode == "thread":
                return
            self._mode = "thread"
        self.notice = (
            f"parse workers cannot start ({why}); parsing in threads, where a page over "
            f"parse_timeout_ms ({self._budget_ms} ms) is given up but parsed to its end"
        )
        log.warning("%s", self.notice)

    def _inline(self, job: _Job) -> Extracted:
        """Thread mode: parse ``job`` in this thread (timed by ``extract``)."""
        body, url, pairs, token, obey, max_links = job
        started = self._clock()
        result = extract_links(
            body, url, CIMultiDict(pairs), token, obey_nofollow=obey, max_links=max_links
        )
        took_ms = (self._clock() - started) * 1000
        if took_ms <= self._budget_ms:
            with self._stats_lock:
                self._pages += 1
                self._parse_ms += took_ms
        return result

    def _discard(self, slot: int, worker: _Worker) -> int | None:
        """Kill and reap ``worker``; empty ``slot``. Returns its exit code."""
        with self._lock:
            if self._workers[slot] is worker:
                self._workers[slot] = None
        return worker.close()

    def _shutdown(self) -> None:
        """Stop every worker: signal them, let in-flight jobs see it, reap them."""
        with self._lock:  # no worker starts after this
            workers = [w for w in self._workers if w is not None]
        for worker in workers:
            if worker.process.poll() is None:
                worker.process.kill()
        self._executor.shutdown(wait=self._mode == "process", cancel_futures=True)
        with self._lock:
            workers = [w for w in self._workers if w is not None]
            self._workers[:] = [None] * self._size
        for worker in workers:
            worker.close()

    def _release_from_thread(self, loop: asyncio.AbstractEventLoop, slot: int) -> None:
        """Give ``slot`` back to the idle queue, from the thread that finished it."""
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(self._idle.put_nowait, slot)

    def _timeout_error(self, url: str) -> ParseTimeout:
        return ParseTimeout(
            f"parsing {url} took over {self._budget_ms} ms (parse_timeout_ms): worker stopped"
        )


def _kill_all(workers: list[_Worker | None]) -> None:
    """Kill and reap the workers still in ``workers`` (a pool dropped unclosed)."""
    for worker in workers:
        if worker is not None:
            worker.close()


def _one_line(exc: BaseException) -> str:
    """``exc`` as ``Type: message`` on one line (multiprocessing's are paragraphs)."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


__all__ = ["ParsePool", "ParseStats", "thread_jobs"]
