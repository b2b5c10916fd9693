"""robots.txt per origin (RFC 9309): fetch once, cache, decide, refresh before expiry.

``RobotsCache.check(url)`` answers whether our product token may fetch ``url``. The
first check of an origin fetches ``ORIGIN/robots.txt`` (concurrent first checks share
that one request); later checks answer from the cache. What each response means (the
RFC 9309 decisions: redirects, 4xx, unreachable, lifetime, size) is the pure policy
``core.policy.robots.interpret``; this module is its driver: it fetches, hands each
outcome to the policy, requests the hops it returns, stores the state it settles on and
audits what it says. A 2xx body bigger than 64 KiB is interpreted in a worker thread
(protego takes about 0.5 s on a 500 KiB file).

A check that finds less than 10 % of an entry's lifetime left starts one background
refresh for the origin and answers from the current copy; an expired entry is fetched
before answering. The last good copy (the last state that is not ``unreachable``) is
kept per origin for the policy's §2.4/§2.3.1.4 fallback.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from crawldeck.core.errors import FetchError, UrlError
from crawldeck.core.policy.robots import (
    CacheUpdate,
    NetworkFailure,
    RedirectHop,
    RobotsEntry,
    RobotsResponse,
    RobotsSettings,
    RobotsState,
    RobotsStatus,
    interpret,
    state_of,
)
from crawldeck.core.policy.sitemaps import declared_sitemaps
from crawldeck.core.policy.urls import origin as url_origin
from crawldeck.core.records import FetchResult

_REFRESH_FRACTION = 0.1  # refresh in the background when less than this part of TTL is left
_THREAD_PARSE_BYTES = 64 * 1024  # bigger robots.txt files are parsed off the event loop


class RobotsFetcher(Protocol):
    """What ``RobotsCache`` fetches with: a ``core.net.fetcher.AiohttpFetcher``, or the
    engine's polite fetcher that waits for each host's politeness (every robots.txt
    request, redirect hops included, counts against the host it goes to)."""

    async def fetch(self, url: str, *, max_bytes: int | None = None) -> FetchResult:
        """GET ``url`` once without following redirects; raises ``FetchError``."""
        ...


@dataclass(frozen=True, slots=True)
class RobotsDecision:
    """The answer for one URL.

    Attributes:
        allowed: whether our token may fetch the URL.
        crawl_delay_s: the ``Crawl-delay`` of our group in seconds (``None`` if absent,
            or when no file applies). Not in RFC 9309; the de-facto extension.
        status: ``ok``, ``missing``, ``unreachable`` or ``redirect_limit`` (see module).
        fetched: ``True`` only for the one call that made the robots.txt request(s) to
            the host (each redirect hop is a request too); the engine counts that as a
            request for politeness. Background refreshes are not reported here.
        http_status: the HTTP status of the robots.txt response the decision rests on
            (after redirects; ``RobotsEntry.http_status``), ``None`` after a network
            error: the engine logs a fetch that answered 429 or 503 (issue #24 item 5).
        disallow_all: everything is refused (``RobotsEntry.disallow_all``): with
            ``status == "unreachable"`` that is strict mode's §2.3.1.4 complete
            disallow (``robots_on_failure = disallow``), not a rule of the file.
    """

    allowed: bool
    crawl_delay_s: float | None
    status: RobotsStatus
    fetched: bool
    http_status: int | None
    disallow_all: bool


class RobotsCache:
    """Per-origin robots.txt cache in front of a ``RobotsFetcher`` (RFC 9309).

    Args:
        fetcher: used for every robots.txt request, each redirect hop included (a
            ``core.net.fetcher.AiohttpFetcher``, or the engine's polite one); not closed by
            this class.
        settings: the token, size and redirect caps, cache lifetimes and failure
            mode (``RobotsSettings.from_config(config)``).
        clock: the engine's one clock, epoch seconds (``core.clock.LoopClock`` in
            production, a fake or a virtual-time loop's in tests);
            ``fetched_at``/``expires_at`` are in its time (stored: epoch seconds).
        audit: called with one line each time a robots.txt is found unreachable or
            past the redirect limit or in a redirect loop (what we did instead, and
            when we retry), and once per origin when its file is cut at
            ``robots_max_bytes`` (the size served and the size read).

    Call ``await cache.aclose()`` before closing the fetcher: it cancels background
    refreshes and fetches still in flight.

    ``stored``, when set, is called with each new entry after a fetch settles (a
    cluster worker keeps it in Redis for the host's next owner, issue #12).
    ``settled``, when set, is called with the origin and the ``Sitemap:`` URLs of its
    file (``core.policy.sitemaps.declared_sitemaps``; empty for a 4xx) after each fetch that
    settles on ``ok``, ``missing`` or ``redirect_limit`` (``core.crawl.sitemaps``).
    """

    def __init__(
        self,
        fetcher: RobotsFetcher,
        settings: RobotsSettings,
        clock: Callable[[], float],
        audit: Callable[[str], None],
    ) -> None:
        self._fetcher = fetcher
        self._settings = settings
        self._clock = clock
        self._audit = audit
        self._token = settings.robots_token
        self._states: dict[str, RobotsState] = {}
        self._last_good: dict[str, RobotsState] = {}
        self._inflight: dict[str, asyncio.Task[RobotsState]] = {}
        self._capped: set[str] = set()  # origins whose size cap was logged
        self.stored: Callable[[RobotsEntry], None] | None = None
        self.settled: Callable[[str, tuple[str, ...]], None] | None = None

    def adopt(self, view: RobotsEntry) -> bool:
        """Take ``view`` (fetched by another process) as its origin's state unless it
        has expired or what is cached here is newer; ``True`` when taken."""
        now = self._clock()
        have = self._states.get(view.origin)
        if now >= view.expires_at or (have is not None and have.view.fetched_at >= view.fetched_at):
            return False
        state = state_of(replace(view, refreshing=False))
        self._states[view.origin] = state
        if view.status != "unreachable":
            self._last_good[view.origin] = state
        return True

    async def check(self, url: str) -> RobotsDecision:
        """May our token fetch ``url``? Fetches the origin's robots.txt when needed.

        ``/robots.txt`` itself is always allowed. Concurrent first checks of one origin
        wait for one shared fetch; the caller that started it gets ``fetched=True``.

        Raises:
            UrlError: ``url`` is not an http(s) URL with a host.
        """
        origin = url_origin(url)
        now = self._clock()
        state = self._states.get(origin)
        fetched = False
        if state is None or now >= state.view.expires_at:
            task = self._inflight.get(origin)
            if task is None:
                task = self._start(origin)
                fetched = True
            state = await asyncio.shield(task)
        else:
            view = state.view
            if view.expires_at - now < _REFRESH_FRACTION * (view.expires_at - view.fetched_at):
                self.refresh(origin)
        return self._decide(state, url, fetched)

    def refresh(self, origin: str) -> bool:
        """Start a background refetch of ``origin``'s robots.txt unless one is running.

        Returns ``True`` when a refresh was started. Raises ``UrlError`` for a bad origin.
        """
        origin = url_origin(origin)
        if origin in self._inflight:
            return False
        self._start(origin)
        return True

    def entry(self, origin: str) -> RobotsEntry | None:
        """The cached state of ``origin`` (any URL of it works), or ``None`` if not cached."""
        try:
            key = url_origin(origin)
        except UrlError:
            return None
        state = self._states.get(key)
        if state is None:
            return None
        view = state.view
        refreshing = key in self._inflight
        # the cached view is frozen: a copy only when the flag differs (2.6 calls a page)
        return view if view.refreshing == refreshing else replace(view, refreshing=refreshing)

    def origins(self) -> int:
        """How many origins have a cached robots.txt state."""
        return len(self._states)

    async def aclose(self) -> None:
        """Cancel background refreshes and fetches in flight and wait for them to end."""
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._inflight.clear()

    def _start(self, origin: str) -> asyncio.Task[RobotsState]:
        task = asyncio.create_task(self._load(origin), name=f"robots.txt {origin}")
        self._inflight[origin] = task

        def done(t: asyncio.Task[RobotsState]) -> None:
            if self._inflight.get(origin) is t:
                del self._inflight[origin]
            if not t.cancelled():
                t.exception()  # retrieved here so an orphaned refresh never warns

        task.add_done_callback(done)
        return task

    def _decide(self, state: RobotsState, url: str, fetched: bool) -> RobotsDecision:
        view = state.view
        return RobotsDecision(
            state.allows(url, self._token),
            view.crawl_delay_s,
            view.status,
            fetched,
            view.http_status,
            view.disallow_all,
        )

    async def _load(self, origin: str) -> RobotsState:
        """Fetch, follow redirects, interpret; store, audit and return the new state."""
        update, body = await self._fetch_state(origin)
        state = update.state
        if update.audit is not None:
            self._audit(update.audit)
        if update.capped is not None and origin not in self._capped:
            self._capped.add(origin)
            self._audit(update.capped)
        self._states[origin] = state
        if state.view.status != "unreachable":
            self._last_good[origin] = state
        if self.stored is not None:
            self.stored(state.view)
        if self.settled is not None and state.view.status != "unreachable":
            self.settled(origin, declared_sitemaps(body))
        return state

    async def _fetch_state(self, origin: str) -> tuple[CacheUpdate, bytes]:
        """Request ``ORIGIN/robots.txt`` and each hop ``interpret`` returns, until it
        settles on a state; that state and the last 2xx body (``b""`` without one)."""
        settings = self._settings
        url = f"{origin}/robots.txt"
        hops = 0
        visited = {url}
        while True:
            outcome: RobotsResponse | NetworkFailure
            try:
                result = await self._fetcher.fetch(url, max_bytes=settings.robots_max_bytes)
            except FetchError as exc:
                outcome = NetworkFailure(exc.reason)
            else:
                outcome = RobotsResponse(
                    url, result.status, result.headers, result.body, result.truncated
                )
            big = (
                isinstance(outcome, RobotsResponse)
                and 200 <= outcome.status < 300
                and len(outcome.body) > _THREAD_PARSE_BYTES
            )
            step = functools.partial(
                interpret,
                outcome,
                origin=origin,
                hops=hops,
                now=self._clock(),
                last_good=self._last_good.get(origin),
                settings=settings,
                visited=frozenset(visited),
            )
            # protego takes ~0.5 s on a 500 KiB file: keep the event loop free
            next_step = await asyncio.to_thread(step) if big else step()
            if not isinstance(next_step, RedirectHop):
                if isinstance(outcome, RobotsResponse) and 200 <= outcome.status < 300:
                    return next_step, outcome.body
                return next_step, b""
            hops += 1
            url = next_step.url
            visited.add(url)


__all__ = [
    "RobotsCache",
    "RobotsDecision",
    "RobotsEntry",
    "RobotsFetcher",
    "RobotsSettings",
    "RobotsStatus",
]
