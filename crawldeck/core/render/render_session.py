"""One page render: the router of its browser context, its requests in flight, settling.

``core.render.browser_pool.RenderPool`` opens a fresh browser context per page and hands its
events to a ``RenderSession``, which:

- answers the main document from the body the crawler already fetched
  (``route.fulfill``), so it is not requested twice;
- aborts resource types in ``render_block_resources`` (images, fonts, media) without
  a request, and WebSockets (answered by a silent mock);
- asks the ``gate`` (robots.txt and politeness, in the engine) about every other
  request, aborts and records those it refuses (``blocked``), and reports each one it
  let through exactly once when it ends (``Report``, ``SubRequestEnd``);
- aborts and records navigations of a top-level frame away from the page (a script
  redirect, a popup: ``navigations``);
- tells when the page has settled: its load event has fired (the pool awaits it) and
  none of its requests has been in flight for ``render_idle_ms`` (``settle``, whose
  decisions are ``settle_step``, pure); a page still busy at the budget's deadline is
  cut.

Times are seconds of the session's ``clock``: the render pool's, which is the engine's
one clock (``core.clock.LoopClock`` in production; a test gives a fake or a virtual-time
loop's), so the render budget runs out on a virtual-time loop too (issue #24 item 6).

Sources: Playwright for Python API (``BrowserContext.route``,
``Route.fulfill/abort/continue_``, ``Request.resource_type``, ``Request.failure``,
``BrowserContext.route_web_socket``); Chromium's ``net::ERR_*`` error names
(``net/base/net_error_list.h``) for ``NO_RESPONSE``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Literal
from urllib.parse import urlsplit

from crawldeck.core.errors import CrawldeckError
from crawldeck.core.render_types import EndKind, Gate, Report, SubRequestEnd

if TYPE_CHECKING:
    from playwright.async_api import Page, Request, Route, WebSocketRoute
    from playwright.async_api import Response as PlaywrightResponse

#: Chromium failures that mean the server gave no response (``no_response``).
NO_RESPONSE: Final = (
    "net::ERR_CONNECTION_",
    "net::ERR_TIMED_OUT",
    "net::ERR_EMPTY_RESPONSE",
    "net::ERR_ADDRESS_UNREACHABLE",
    "net::ERR_NAME_NOT_RESOLVED",
    "net::ERR_INVALID_HTTP_RESPONSE",
    "net::ERR_INCOMPLETE_CHUNKED_ENCODING",
)
#: Seconds ``settle`` waits at least between two looks (a wait of 0 would spin).
MIN_WAIT_S: Final = 0.001


def settle_step(
    *, now: float, last_activity: float, inflight: int, deadline: float, idle_s: float
) -> Literal["settled", "cut"] | float:
    """What settling a page does next, at ``now`` (all times in seconds of one clock).

    Args:
        now: the time now.
        last_activity: when a request of the page last started or ended.
        inflight: the page's requests in flight.
        deadline: when the page's budget ends (its render's start + ``render_timeout_ms``).
        idle_s: how long no request may be in flight for the page to count as settled
            (``render_idle_ms`` / 1000).

    Returns:
        ``"settled"`` when no request is in flight and none has been for ``idle_s``
        (this wins when the deadline has come too); else ``"cut"`` when ``now`` is at
        or past ``deadline``; else the seconds to wait for a request event at most
        before asking again: until the deadline, or until the quiet time reaches
        ``idle_s`` if that comes first; at least ``MIN_WAIT_S``. Never raises.
    """
    quiet = now - last_activity
    if inflight == 0 and quiet >= idle_s:
        return "settled"
    if now >= deadline:
        return "cut"
    wait = deadline - now
    if inflight == 0:
        wait = min(wait, idle_s - quiet)
    return max(wait, MIN_WAIT_S)


class RenderSession:
    """The state of one page render (see the module docstring).

    Args:
        body: the main document's body already fetched (served as it is), or
            ``None``: the browser requests it, through the gate.
        content_type: the ``Content-Type`` to serve ``body`` with.
        gate: asked about every request that is not the main document, a skipped
            resource type or a non-http(s) URL (``Gate``).
        report: told when each request the gate let through ends (``Report``);
            optional.
        block_types: Playwright resource types aborted without a request
            (``render_block_resources``).
        clock: seconds, the pool's (the engine's one clock, ``core.clock``).

    Attributes (read by the pool when the render is over):
        blocked, skipped, navigations, requests: as in ``RenderResult``.
        page: the page being rendered, set by the pool once it is open; until then
            no navigation counts as the main document.
        closing: set by ``cut`` when the render is over and the page is being closed:
            a request routed from then on is aborted without asking the gate (a route
            left waiting would be let through by Playwright when the context closes),
            and requests that fail are ``cancelled``, not ``no_response``.
        bug: the first unexpected exception of the router (a bug), re-raised by the
            pool from ``render``; ``None`` normally.
    """

    def __init__(
        self,
        body: bytes | None,
        content_type: str,
        gate: Gate,
        report: Report | None,
        block_types: frozenset[str],
        *,
        clock: Callable[[], float],
    ) -> None:
        self.body = body
        self.content_type = content_type
        self.gate = gate
        self.report = report
        self.block_types = block_types
        self.clock = clock
        self.sent: dict[Request, float] = {}  # requests the gate let through -> when
        self.closing = False
        self.page: Page | None = None
        self.main_served = False
        self.inflight = 0
        self.last_activity = clock()
        self.changed = asyncio.Event()
        self.blocked: list[str] = []
        self.skipped: list[str] = []
        self.navigations: list[str] = []
        self.requests = 0
        self.gates: set[asyncio.Task[bool]] = set()
        self.bug: BaseException | None = None

    # -- events ---------------------------------------------------------------

    def _touch(self) -> None:
        self.last_activity = self.clock()
        self.changed.set()

    def on_request(self, request: Request) -> None:
        """A request started (any page of the context)."""
        self.inflight += 1
        self._touch()

    def on_request_done(self, request: Request) -> None:
        """A request finished or failed (aborted requests fail)."""
        self.inflight = max(0, self.inflight - 1)
        self._touch()
        sent_at = self.sent.pop(request, None)
        if sent_at is None:
            return  # not one the gate let through, or its response was reported
        failure = request.failure or ""
        lost = failure.startswith(NO_RESPONSE) and not self.closing
        self._end(request.url, "no_response" if lost else "cancelled", None, sent_at, None)

    def on_response(self, response: PlaywrightResponse) -> None:
        """Response headers came for a request: report it if the gate let it through."""
        sent_at = self.sent.pop(response.request, None)
        if sent_at is not None:
            retry_after = response.headers.get("retry-after")
            self._end(response.url, "response", response.status, sent_at, retry_after)

    def end_all(self) -> None:
        """Report every request still open as ``cancelled`` (the render is over)."""
        sent, self.sent = self.sent, {}
        for request, sent_at in sent.items():
            self._end(request.url, "cancelled", None, sent_at, None)

    def _end(
        self, url: str, kind: EndKind, status: int | None, sent_at: float, retry_after: str | None
    ) -> None:
        if self.report is not None:
            elapsed = self.clock() - sent_at
            self.report(SubRequestEnd(url, kind, status, elapsed, retry_after))

    def on_websocket(self, ws: WebSocketRoute) -> None:
        """A WebSocket: never connected to its server (the route mocks it silently)."""
        self.skipped.append(ws.url)

    # -- the router -----------------------------------------------------------

    async def handle(self, route: Route, request: Request) -> None:
        """Route one request: serve the main document, skip, gate, or abort. Never
        raises (a bug is kept in ``bug``)."""
        from playwright.async_api import Error as PlaywrightError

        try:
            await self._handle(route, request)
        except PlaywrightError:
            pass  # the page or context closed while this request waited: nothing to do
        except Exception as exc:  # a bug here: surface it from render(), drop the request
            self.bug = self.bug or exc
            with contextlib.suppress(PlaywrightError):
                await route.abort("failed")

    async def _handle(self, route: Route, request: Request) -> None:
        url = request.url
        if urlsplit(url).scheme.lower() not in ("http", "https"):
            await route.continue_()  # data:, blob: and the like never reach a server
            return
        if request.is_navigation_request() and self._top_level(request):
            if not self.main_served and self.page is not None:
                self.main_served = True
                if self.body is not None:
                    await route.fulfill(
                        status=200, headers={"content-type": self.content_type}, body=self.body
                    )
                    return
            else:  # a script redirect, a popup, a redirect of the main document
                self.navigations.append(url)
                await route.abort("aborted")
                return
        kind = request.resource_type
        if self.closing:
            await route.abort("aborted")  # the render is over: nothing more is sent
            return
        if kind in self.block_types:
            self.skipped.append(url)
            await route.abort("blockedbyclient")
            return
        allowed = await self._ask_gate(url, kind)
        if allowed and self.closing:  # the gate said yes as the render was cut
            self.requests += 1
            self._end(url, "cancelled", None, self.clock(), None)
            await route.abort("aborted")
        elif allowed:
            self.requests += 1
            self.sent[request] = self.clock()  # ended by on_response/..._done/end_all
            await route.continue_()
        else:
            self.blocked.append(url)
            await route.abort("blockedbyclient")

    def _top_level(self, request: Request) -> bool:
        """Whether a navigation request is for a top-level frame (our page, a popup)."""
        from playwright.async_api import Error as PlaywrightError

        try:
            return request.frame.parent_frame is None
        except PlaywrightError:  # a popup's first navigation comes before its frame
            return True

    async def _ask_gate(self, url: str, kind: str) -> bool:
        """The gate's answer; ``False`` when it refuses, raises ours, or is cancelled
        because the page's budget ran out."""
        task = asyncio.ensure_future(self.gate(url, kind))
        self.gates.add(task)
        try:
            return bool(await task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and (current is None or current.cancelling() == 0):
                return False  # cut at the budget: the request is not sent
            raise
        except CrawldeckError:
            return False  # e.g. a URL the engine cannot parse: refuse it
        finally:
            self.gates.discard(task)

    def cut(self) -> None:
        """The render is over (settled, cut at the budget, or failed): from now on every
        request is aborted unsent (``closing``), and every gate still waiting (for a
        politeness slot) is stopped, so no slot is taken. Called by the pool before it
        closes the page."""
        self.closing = True
        for task in list(self.gates):
            task.cancel()

    # -- settling -------------------------------------------------------------

    async def settle(self, deadline: float, idle_s: float) -> bool:
        """Wait until no request has been in flight for ``idle_s`` seconds: ``True``;
        ``False`` when the ``deadline`` (seconds of ``clock``) comes first (the rules
        are ``settle_step``'s). Wakes on every request event and when a wait ends."""
        while True:  # each pass waits for a request event or a timer; ends by deadline
            step = settle_step(
                now=self.clock(),
                last_activity=self.last_activity,
                inflight=self.inflight,
                deadline=deadline,
                idle_s=idle_s,
            )
            if isinstance(step, str):
                return step == "settled"
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(step):
                    await self.changed.wait()


__all__ = ["MIN_WAIT_S", "NO_RESPONSE", "RenderSession", "settle_step"]
