"""A pool of Chromium render workers: browsers, their lifecycle, and the queue of pages.

``RenderPool`` renders the pages the engine picks (``core.policy.shell.should_render``) in
Debian's Chromium through Playwright and returns the links of the rendered DOM
(``core.render_types.RenderResult``); one page at a time per worker, each page driven
by a ``core.render.render_session.RenderSession``.

``render_pool_size`` workers, each driving its own Chromium
(``render_browser_path``, Debian's ``/usr/bin/chromium``; never a browser Playwright
downloads) started lazily and restarted after ``render_max_pages_per_browser`` pages.
Each page gets a fresh browser context (no cookies, storage or cache from another page;
service workers blocked, so that every request passes the router) whose events go to
a ``RenderSession`` (``core.render.render_session``), in which:

- the main document is answered from the body the crawler already fetched
  (``route.fulfill``), so it is not requested twice;
- every other request is intercepted (``BrowserContext.route``): resource types in
  ``render_block_resources`` (images, fonts, media) are aborted without a request;
  the rest go through the ``gate`` (robots.txt and politeness, in the engine) and are
  aborted and recorded in ``RenderResult.blocked`` when it refuses; each one the gate
  lets through is reported once when it ends (``report``, ``SubRequestEnd``: its
  status, or that no response came, or that it was cancelled), so the engine can
  free the host's slot and learn from a 429;
- navigations of a top-level frame away from the page (a script redirect, a popup)
  are aborted and recorded in ``RenderResult.navigations``; WebSockets are never
  connected (answered by a silent mock);
- Chromium's own checks stay on: a document served from bytes counts as public for
  its Local Network Access check, so its cross-origin requests to loopback or private
  addresses fail in the browser (``net::ERR_FAILED``) before any packet is sent (a
  page cannot probe the crawler's network); same-origin requests are not affected;
- the page has settled when its load event has fired and none of its requests has
  been in flight for ``render_idle_ms``; the whole render, gate waits included, has
  ``render_timeout_ms``: a page still busy then is cut and its DOM taken as it is
  (``timed_out=True``). After the cut (or the settling) come the DOM read (at most
  ``CONTENT_GRACE_S``), then the page's unload (to ``about:blank``, so that no script
  sends anything more: from the cut on every request is aborted unsent) and the
  context's close (at most ``CLOSE_GRACE_S`` together), which
  ``RenderResult.elapsed_ms`` includes; a render that passes ``render_timeout_ms`` +
  ``CONTENT_GRACE_S`` + 2 x ``CLOSE_GRACE_S`` in all (Playwright stopped answering)
  fails and its browser is restarted.

The memory of the browsers' process trees (``RenderStats.rss_bytes``, ``pss_bytes``)
is measured from ``/proc`` in a thread by a ``core.render.procmem.MemoryMonitor`` every
``MEMORY_INTERVAL_S`` while a browser runs, and at once when one starts or stops;
``stats()`` returns the last figures and their age and never touches ``/proc``. The
browser's pid is found, and a browser that does not close is killed, through
``/proc`` in a thread too: the pool never blocks the event loop on ``/proc``.

Playwright's errors are translated here: a browser that cannot start makes the pool
unavailable (``RenderUnavailable``, one line saying how to install Chromium); a page
that fails (crash, browser gone) gives a ``RenderResult`` with ``error`` set.

Sources: Playwright for Python API (``BrowserType.launch``, ``Browser.new_context``,
``Page.goto``, ``Page.content``); Chromium's Local Network Access (the WICG Private
Network Access draft) for the loopback behaviour above.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import urldefrag

from crawldeck.core.clock import LoopClock
from crawldeck.core.config import CrawlConfig
from crawldeck.core.errors import RenderUnavailable
from crawldeck.core.policy.links import extract_links
from crawldeck.core.render.procmem import MemoryMonitor, find_marked, kill_tree
from crawldeck.core.render.render_session import RenderSession
from crawldeck.core.render_types import Gate, RenderResult, RenderStats, Report

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page, Playwright

#: Where Chromium's own Google services are pointed instead (``GOOGLE_OFF``): port 9
#: is on Chromium's list of unsafe ports, so nothing is even connected to.
GOOGLE_OFF: Final = "http://127.0.0.1:9"
#: Flags for Debian's Chromium (see shared/environment-notes.md). The last four point
#: its account check (GAIA, ``ListAccounts``), the Google APIs, the sign-in service and
#: the component updater at ``GOOGLE_OFF``: with the three ``--disable-...`` flags
#: alone, a render still looked up ``accounts.google.com`` and
#: ``update.googleapis.com`` (issue #25, trial 15): a crawl must ask nothing but the
#: pages it renders (tests/loopback/test_render_background.py reads Chromium's NetLog).
CHROMIUM_ARGS: Final[tuple[str, ...]] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    f"--gaia-url={GOOGLE_OFF}",
    f"--google-apis-url={GOOGLE_OFF}",
    f"--lso-url={GOOGLE_OFF}",
    f"--component-updater=url-source={GOOGLE_OFF}",
)
#: Seconds allowed to read the DOM once the page is cut or settled.
CONTENT_GRACE_S: Final = 2.0
#: Seconds allowed to close a page's context before its browser is restarted.
CLOSE_GRACE_S: Final = 5.0
#: Seconds allowed to start one browser.
LAUNCH_TIMEOUT_S: Final = 30.0
#: Consecutive failed browser starts after which rendering is turned off.
MAX_LAUNCH_FAILURES: Final = 3
#: The ``Content-Type`` the main document is served with when none is given.
DEFAULT_CONTENT_TYPE: Final = "text/html; charset=utf-8"


def _one_line(exc: BaseException) -> str:
    """The first line of ``str(exc)`` (Playwright appends a call log), or the class name."""
    for line in str(exc).splitlines():
        text = " ".join(line.split())
        if text:
            return text
    return type(exc).__name__


def unavailable_reason(config: CrawlConfig) -> str:
    """Why rendering cannot run with ``config`` (one line), or ``""`` if it may.

    Checks that ``render_browser_path`` is an executable file and that the
    ``playwright`` package is importable; whether the browser starts is known only
    when it is launched. Never raises.
    """
    path = Path(config.render_browser_path)
    if not path.is_file() or not os.access(path, os.X_OK):
        return (
            f"rendering is off: Chromium not found at {path} (install it with "
            "`apt-get install chromium`, or set render_browser_path); pages that build "
            "their links with JavaScript are crawled from their raw HTML only"
        )
    if importlib.util.find_spec("playwright") is None:
        return (
            "rendering is off: the Python package playwright is not installed "
            "(`pip install playwright`; the browser itself comes from "
            "`apt-get install chromium`, never from `playwright install`)"
        )
    return ""


@dataclass(slots=True)
class _Job:
    url: str
    body: bytes | None
    content_type: str
    future: asyncio.Future[RenderResult]


@dataclass(slots=True)
class _Worker:
    index: int
    lock: asyncio.Lock
    browser: Browser | None = None
    pid: int | None = None
    pages: int = 0
    busy: bool = False
    broken: bool = False
    task: asyncio.Task[None] | None = None


class RenderPool:
    """A pool of Chromium render workers (see the module docstring).

    Args:
        config: ``render_pool_size``, ``render_browser_path``, ``render_timeout_ms``,
            ``render_idle_ms``, ``render_max_pages_per_browser``,
            ``render_block_resources``, ``user_agent`` (sent by the browser) and
            ``robots_token`` (for meta robots in the rendered DOM).
        gate: ``await gate(url, resource_type) -> bool`` for every sub-request a
            rendered page makes (see ``Gate``).
        report: called once for every sub-request the gate let through, when it
            ends (see ``Report``, ``SubRequestEnd``), so the engine can free the host's
            slot and let its politeness learn from the answer; optional.
        clock: seconds (the engine's one clock; default ``core.clock.LoopClock``):
            the render budget's deadline, ``RenderResult.elapsed_ms``, each
            sub-request's time (``RenderSession``) and the memory reading's age are
            read on it, so a render budget runs out on a virtual-time loop too.

    Nothing starts until the first ``render`` (or ``start``). Use one pool per event
    loop and close it with ``await pool.aclose()``.
    """

    def __init__(
        self,
        config: CrawlConfig,
        *,
        gate: Gate,
        report: Report | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._config = config
        self._clock = clock = clock or LoopClock()
        self._gate = gate
        self._report = report
        self._block_types = frozenset(config.render_block_resources)
        self._reason = unavailable_reason(config)
        self._closed = False
        self._pw: Playwright | None = None
        self._start_lock = asyncio.Lock()
        self._queue: asyncio.Queue[_Job] = asyncio.Queue()
        self._workers = [_Worker(i, asyncio.Lock()) for i in range(config.render_pool_size)]
        self._launch_seq = itertools.count(1)
        self._launches = 0
        self._launch_failures = 0
        self._recycles = 0
        self._rendered = 0
        self._timed_out = 0
        self._failed = 0
        self._blocked = 0
        self._skipped = 0
        self._memory = MemoryMonitor(self._browser_pids, clock=clock)

    # ----------------------------------------------------------------- status

    @property
    def available(self) -> bool:
        """Whether rendering can run (no missing browser found, pool not closed)."""
        return not self._reason and not self._closed

    @property
    def reason(self) -> str:
        """Why rendering is off, one line for the user; ``""`` while available."""
        if self._reason:
            return self._reason
        return "rendering is off: the render pool is closed" if self._closed else ""

    def stats(self) -> RenderStats:
        """Counts and memory for the console; cheap, never blocks (the memory figures
        are the last ones the ``MemoryMonitor`` measured, with their age)."""
        busy = sum(1 for w in self._workers if w.busy)
        rss, pss = 0, 0
        age: float | None = 0.0
        if self._browser_pids():
            reading = self._memory.latest()
            if reading is None:
                age = None
            else:
                rss, pss = reading.rss_bytes, reading.pss_bytes
                age = max(0.0, self._clock() - reading.measured_at)
        return RenderStats(
            available=self.available,
            reason=self.reason,
            size=len(self._workers),
            busy=busy,
            idle=len(self._workers) - busy,
            queued=self._queue.qsize(),
            browsers=sum(1 for w in self._workers if w.browser is not None),
            rendered=self._rendered,
            timed_out=self._timed_out,
            failed=self._failed,
            blocked=self._blocked,
            skipped=self._skipped,
            launches=self._launches,
            recycles=self._recycles,
            rss_bytes=rss,
            pss_bytes=pss,
            memory_age_s=age,
        )

    def _browser_pids(self) -> list[int]:
        """The pids of the running browsers (the roots the memory monitor measures)."""
        return [w.pid for w in self._workers if w.browser is not None and w.pid is not None]

    # -------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Start Playwright and the first browser now (``render`` does it lazily).

        Raises:
            RenderUnavailable: Chromium is missing or does not start, Playwright is
                missing, or the pool is closed; the message is one line for the user.
        """
        await self._ensure_started()
        await self._ensure_browser(self._workers[0])

    async def _ensure_started(self) -> None:
        if not self.available:
            raise RenderUnavailable(self.reason)
        if self._pw is not None:
            return
        async with self._start_lock:
            if self._pw is not None:
                return
            try:
                from playwright.async_api import Error as PlaywrightError
                from playwright.async_api import async_playwright
            except ImportError as exc:  # pragma: no cover - checked by unavailable_reason
                self._reason = f"rendering is off: playwright cannot be imported: {exc}"
                raise RenderUnavailable(self._reason) from None
            try:
                self._pw = await async_playwright().start()
            except (PlaywrightError, OSError) as exc:
                self._reason = f"rendering is off: Playwright does not start: {_one_line(exc)}"
                raise RenderUnavailable(self._reason) from None
            for worker in self._workers:
                worker.task = asyncio.create_task(
                    self._run_worker(worker), name=f"render-worker-{worker.index}"
                )
            self._memory.start()

    async def aclose(self) -> None:
        """Stop the workers and the memory monitor, close every browser and Playwright;
        idempotent.

        Pages still queued or rendering get ``RenderUnavailable``. Never raises.
        """
        if self._closed:
            return
        self._closed = True
        await self._memory.aclose()
        tasks = [w.task for w in self._workers if w.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._fail_queued(RenderUnavailable("rendering stopped: the render pool was closed"))
        for worker in self._workers:
            await self._close_browser(worker)
        if self._pw is not None:
            pw, self._pw = self._pw, None
            with contextlib.suppress(Exception):
                async with asyncio.timeout(CLOSE_GRACE_S):
                    await pw.stop()

    def _fail_queued(self, exc: RenderUnavailable) -> None:
        while not self._queue.empty():
            job = self._queue.get_nowait()
            if not job.future.done():
                job.future.set_exception(exc)

    # ----------------------------------------------------------------- render

    async def render(
        self, url: str, body: bytes | None = None, *, content_type: str | None = None
    ) -> RenderResult:
        """Render ``url`` in the next free worker and return its DOM's links.

        Args:
            url: the page's absolute http(s) URL (as fetched).
            body: the raw body already fetched: served to the browser as the main
                document (not requested again). ``None``: the browser requests it,
                through the gate.
            content_type: the ``Content-Type`` header value to serve ``body`` with
                (its charset matters); default ``text/html; charset=utf-8``.

        Returns:
            A ``RenderResult``; a page cut at the budget has ``timed_out=True``; a
            page that failed has ``error`` set (then use the raw page's links).

        Raises:
            RenderUnavailable: Chromium is missing or does not start, or the pool was
                closed; ``pool.reason`` then says the same, once and for all.
        """
        await self._ensure_started()
        future: asyncio.Future[RenderResult] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Job(url, body, content_type or DEFAULT_CONTENT_TYPE, future))
        return await future

    async def _run_worker(self, worker: _Worker) -> None:
        """One worker: take queued pages one at a time until the pool closes."""
        job: _Job | None = None
        try:
            while True:  # ends when aclose() cancels this task
                job = await self._queue.get()
                if job.future.done():  # the caller went away while it was queued
                    continue
                worker.busy = True
                try:
                    result = await self._render_job(worker, job)
                except RenderUnavailable as exc:
                    if not job.future.done():
                        job.future.set_exception(exc)
                    if not self.available:
                        self._fail_queued(exc)
                except Exception as exc:  # a bug: give it to the caller, keep the worker
                    if not job.future.done():
                        job.future.set_exception(exc)
                else:
                    if not job.future.done():
                        job.future.set_result(result)
                finally:
                    worker.busy = False
                job = None
        except asyncio.CancelledError:
            if job is not None and not job.future.done():
                job.future.set_exception(
                    RenderUnavailable("rendering stopped: the render pool was closed")
                )
            raise

    async def _render_job(self, worker: _Worker, job: _Job) -> RenderResult:
        browser = await self._ensure_browser(worker)
        try:
            async with asyncio.timeout(
                self._config.render_timeout_ms / 1000 + CONTENT_GRACE_S + 2 * CLOSE_GRACE_S
            ):
                result = await self._render_page(worker, browser, job)
        except TimeoutError:  # Playwright itself stopped answering: restart the browser
            worker.broken = True
            result = self._failure(job, "render: the browser stopped responding", 0.0)
        worker.pages += 1
        if result.error is None:
            self._rendered += 1
        else:
            self._failed += 1
        self._timed_out += result.timed_out
        self._blocked += len(result.blocked)
        self._skipped += len(result.skipped)
        if worker.broken or not browser.is_connected():
            await self._close_browser(worker)
        elif worker.pages >= self._config.render_max_pages_per_browser:
            self._recycles += 1
            await self._close_browser(worker)
        return result

    def _failure(self, job: _Job, error: str, elapsed_ms: float) -> RenderResult:
        return RenderResult(
            url=job.url,
            final_url=job.url,
            html="",
            links=[],
            base=job.url,
            nofollow=False,
            noindex=False,
            blocked=[],
            skipped=[],
            navigations=[],
            requests=0,
            timed_out=False,
            elapsed_ms=elapsed_ms,
            error=error,
        )

    async def _render_page(self, worker: _Worker, browser: Browser, job: _Job) -> RenderResult:
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeoutError

        config, clock = self._config, self._clock
        started = clock()
        deadline = started + config.render_timeout_ms / 1000

        def remaining_ms() -> float:
            return max(1.0, (deadline - clock()) * 1000)

        session = RenderSession(
            job.body, job.content_type, self._gate, self._report, self._block_types, clock=clock
        )
        timed_out = False
        error: str | None = None
        html: str | None = None
        final_url = job.url
        try:
            context = await browser.new_context(
                user_agent=config.user_agent,
                service_workers="block",
                accept_downloads=False,
            )
        except PlaywrightError as exc:
            worker.broken = True
            elapsed = round((clock() - started) * 1000, 3)
            return self._failure(job, f"render: {_one_line(exc)}", elapsed)
        try:
            context.set_default_timeout(config.render_timeout_ms)
            context.on("request", session.on_request)
            context.on("requestfinished", session.on_request_done)
            context.on("requestfailed", session.on_request_done)
            context.on("response", session.on_response)
            await context.route("**/*", session.handle)
            await context.route_web_socket("**/*", session.on_websocket)
            page = await context.new_page()
            session.page = page
            try:
                await page.goto(job.url, wait_until="load", timeout=remaining_ms())
                timed_out = not await session.settle(deadline, config.render_idle_ms / 1000)
            except PlaywrightTimeoutError:
                timed_out = True
            except PlaywrightError as exc:
                error = f"render: {_one_line(exc)}"
            html, why = await self._content(page)
            if html is None:
                timed_out = True
                if error is None:
                    error = f"render: the page's DOM could not be read ({why})"
            final_url = urldefrag(page.url)[0] if page.url.startswith("http") else job.url
        except PlaywrightError as exc:
            error = f"render: {_one_line(exc)}"
        finally:
            session.cut()
            try:
                async with asyncio.timeout(CLOSE_GRACE_S):
                    if session.page is not None:
                        # Unload the document first, so that its scripts stop: a request
                        # routed while the context closes waits in Playwright, which lets
                        # it through at the close, past the gate. A crashed page cannot
                        # navigate: its context is closed all the same.
                        with contextlib.suppress(PlaywrightError):
                            await session.page.goto("about:blank")
                    await context.close()
            except (TimeoutError, PlaywrightError):
                worker.broken = True
            session.end_all()
        if session.bug is not None:
            raise session.bug
        elapsed_ms = round((clock() - started) * 1000, 3)  # to the µs, as a fetch's
        text = html or ""
        extracted = extract_links(
            text.encode("utf-8"),
            final_url,
            {"content-type": DEFAULT_CONTENT_TYPE},
            config.robots_token,
            obey_nofollow=config.obey_nofollow,
        )
        return RenderResult(
            url=job.url,
            final_url=final_url,
            html=text,
            links=extracted.links if text else [],
            base=extracted.base,
            nofollow=extracted.nofollow,
            noindex=extracted.noindex,
            blocked=session.blocked,
            skipped=session.skipped,
            navigations=session.navigations,
            requests=session.requests,
            timed_out=timed_out,
            elapsed_ms=elapsed_ms,
            error=error,
            simhash=extracted.simhash if text else None,
        )

    async def _content(self, page: Page) -> tuple[str | None, str]:
        """The page's serialized DOM, or ``None`` and why it could not be read within
        ``CONTENT_GRACE_S`` (a script keeps the page busy, or it is still navigating:
        then it is tried again every 100 ms)."""
        from playwright.async_api import Error as PlaywrightError

        clock = self._clock
        deadline = clock() + CONTENT_GRACE_S
        why = "its script keeps it busy"
        for _ in range(int(CONTENT_GRACE_S / 0.1) + 1):  # bounded by the grace period
            left = deadline - clock()
            if left <= 0:
                break
            try:
                async with asyncio.timeout(left):
                    return await page.content(), ""
            except TimeoutError:
                return None, "its script keeps it busy"
            except PlaywrightError as exc:  # navigating: the document is being replaced
                why = _one_line(exc).removeprefix("Page.content: ")
                await asyncio.sleep(min(0.1, max(0.0, deadline - clock())))
        return None, why

    # --------------------------------------------------------------- browsers

    async def _ensure_browser(self, worker: _Worker) -> Browser:
        """The worker's browser, started when it has none.

        Raises:
            RenderUnavailable: it does not start (after ``MAX_LAUNCH_FAILURES`` in a
                row, or the first time ever, rendering is turned off for good).
        """
        async with worker.lock:
            if worker.browser is not None and worker.browser.is_connected():
                return worker.browser
            if worker.browser is not None:
                await self._close_browser_locked(worker)
            if not self.available or self._pw is None:
                raise RenderUnavailable(self.reason or "rendering is off: the pool is not started")
            from playwright.async_api import Error as PlaywrightError

            marker = f"--crawldeck-render={os.getpid()}-{id(self):x}-{next(self._launch_seq)}"
            try:
                browser = await self._pw.chromium.launch(
                    executable_path=self._config.render_browser_path,
                    args=[*CHROMIUM_ARGS, marker],
                    timeout=LAUNCH_TIMEOUT_S * 1000,
                    handle_sigint=False,
                    handle_sigterm=False,
                    handle_sighup=False,
                )
            except PlaywrightError as exc:
                self._launch_failures += 1
                message = (
                    f"rendering is off: Chromium at {self._config.render_browser_path} "
                    f"does not start: {_one_line(exc)}"
                )
                if self._launches == 0 or self._launch_failures >= MAX_LAUNCH_FAILURES:
                    self._reason = message
                raise RenderUnavailable(message) from None
            self._launches += 1
            self._launch_failures = 0
            worker.browser = browser
            worker.pid = await asyncio.to_thread(find_marked, marker)
            worker.pages = 0
            worker.broken = False
            self._memory.wake()
            return browser

    async def _close_browser(self, worker: _Worker) -> None:
        async with worker.lock:
            await self._close_browser_locked(worker)

    async def _close_browser_locked(self, worker: _Worker) -> None:
        """Close the worker's browser; kill its process tree if it does not close."""
        browser, pid = worker.browser, worker.pid
        worker.browser, worker.pid, worker.pages, worker.broken = None, None, 0, False
        if browser is None:
            return
        self._memory.wake()
        try:
            async with asyncio.timeout(CLOSE_GRACE_S):
                await browser.close()
        except Exception:  # Playwright errors or the timeout: end it by its pid
            if pid is not None:
                await asyncio.to_thread(kill_tree, pid)


__all__ = [
    "CHROMIUM_ARGS",
    "GOOGLE_OFF",
    "RenderPool",
    "unavailable_reason",
]
