"""Side requests: every request outside a worker's page fetch, through the host gate.

robots.txt (its redirect hops and background refreshes included) and a rendered page's
sub-requests go to a host like its pages do (RFC 9309 §2.3.1: the robots.txt request is
a request to the host; issue #10 item 9): each resolves its host through the DNS cache
and the address policy, waits for the gate's one deadline (``HostGate.ready_at``: the
host's politeness, its address's per-IP limit and a free slot), counts against all
three, and teaches politeness like a page (a robots.txt 429 backs the host off). A
side request that ends gives back a host a worker left held (``HostGate.hold``).
Waiting needs no poll: a waiter sleeps until the deadline, or, while the host's slots
are all taken, until a slot is freed (``slot_freed``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from crawldeck.core.crawl.observer import HostStats, Observer
from crawldeck.core.errors import (
    DnsNotFound,
    DnsTemporaryFailure,
    FetchError,
    HostParked,
    PrivateAddress,
    UrlError,
)
from crawldeck.core.net.robots import RobotsCache
from crawldeck.core.net.transport import PinningResolver
from crawldeck.core.policy import urls
from crawldeck.core.policy.admission import Admission
from crawldeck.core.policy.gate import HostGate
from crawldeck.core.policy.politeness import Outcome
from crawldeck.core.policy.traps import BlockReason, Verdict
from crawldeck.core.policy.window import FrontierWindow
from crawldeck.core.protocols import Clock, Fetcher
from crawldeck.core.records import BodySink, FetchResult
from crawldeck.core.render_types import SubRequestEnd


def learn(
    gate: HostGate,
    host: str,
    start: float,
    now: float,
    result: FetchResult | None,
    *,
    repeat: bool = False,
) -> Outcome:
    """Feed the end at ``now`` of a request to ``host`` started at ``start`` (epoch s) to
    ``gate``: the response's status, time, Retry-After and Date (RFC 9110 §10.2.3,
    §6.6.1), or ``None`` for no response (a transient failure); ``repeat``: it retried a
    URL that failed before (``HostGate.learn``)."""
    if result is None:
        return gate.learn(host, now, None, now - start, None, repeat=repeat)
    headers = result.headers
    return gate.learn(
        host, now, result.status, now - start, headers.get("retry-after"), headers.get("date"),
        repeat=repeat,
    )  # fmt: skip


class SideRequests:
    """robots.txt requests and render sub-requests, politely.

    Args:
        clock: the engine's one time source (epoch s).
        fetcher: the HTTP edge.
        addresses: the crawl's ``PinningResolver``: each request's address is its
            ``choose`` (the DNS cache, then the address policy), which a new
            connection then takes without resolving again.
        gate: the host gate every request passes.
        frontier: where a held host goes back when a side request frees its slot.
        robots_token: the user-agent token robots.txt rules are matched against.
        wake: called when a slot was freed (a worker may go on).

    :meth:`bind` gives it the parts made after it (the robots.txt cache fetches
    through :meth:`fetch`, so it comes later), before the crawl starts.
    """

    def __init__(
        self,
        clock: Clock,
        fetcher: Fetcher,
        addresses: PinningResolver,
        gate: HostGate,
        frontier: FrontierWindow,
        robots_token: str,
        wake: Callable[[], None],
    ) -> None:
        self._clock = clock
        self._fetcher = fetcher
        self._addresses = addresses
        self._gate = gate
        self._frontier = frontier
        self._token = robots_token
        self._wake = wake
        self._freed = asyncio.Event()
        self._parts: tuple[Observer, Admission, RobotsCache] | None = None
        #: Called with a host and its figures after a request of this class backed the
        #: host off (429, 503, no answer): the engine's ``Retries.check_park``, so a
        #: host that asks to be left alone is parked whether a page, its robots.txt or
        #: its sitemap heard it (issue #25 trial 20: a sitemap's 429 with Retry-After
        #: 7200 held the host for an hour, where a page's parked it).
        self.backed_off: Callable[[str, HostStats], None] | None = None

    def bind(self, observer: Observer, admission: Admission, robots: RobotsCache) -> None:
        """The observer (host figures), admission (records a refused sub-request once)
        and the robots.txt cache (render sub-requests check it)."""
        self._parts = (observer, admission, robots)

    @property
    def _bound(self) -> tuple[Observer, Admission, RobotsCache]:
        assert self._parts is not None, "SideRequests.bind was not called"
        return self._parts

    def slot_freed(self) -> None:
        """A slot of some host was freed (a page fetch ended) or a host was parked:
        waiters look again."""
        self._freed.set()

    async def acquire(self, host: str, going: asyncio.Event | None = None) -> float:
        """Wait until a side request may go to ``host``, then take its slot; the start
        time (epoch s). End it with :meth:`end`. While it waits, the host's page
        fetches wait behind it (``HostGate.want_side``): a sitemap or a robots.txt
        refresh takes the host's next turn, not the turn after its last page. With
        ``going``, it also waits while that event is clear (a sitemap reading while the
        crawl is paused: ``SitemapReader.pause``).

        Raises:
            HostParked: ``host`` is parked, or was parked while this waited (a parked
                host's backoff may run for ``retry_after_max_s``: nothing waits it out).
        """
        stats = self._bound[0].stats(host, None)
        self._gate.want_side(host)  # the host's pages wait behind it (HostGate.acquire)
        try:
            while True:
                if stats.parked:
                    raise HostParked(f"{host} is parked: no request sent")
                now = self._clock()
                at = self._gate.ready_at(host, now)
                if at is not None and at <= now:
                    if going is None or going.is_set():
                        break
                    await going.wait()  # then look at the host again
                    continue
                self._freed.clear()
                timeout = None if at is None else at - now + 0.001
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await self._freed.wait()
        except BaseException:
            now = self._clock()
            if self._gate.drop_side_want(host, now):
                self._frontier.release(host, self._gate.ready_at(host, now) or now)
            raise
        self._gate.start_side(host, now)
        return now

    def end(self, host: str, now: float) -> None:
        """A request taken with :meth:`acquire` ended at ``now``: free its slot, and
        give ``host`` back to the frontier if a worker left it held."""
        if self._gate.end_side(host, now):
            self._frontier.release(host, self._gate.ready_at(host, now) or now)
        self._bound[0].changed(host)
        self._freed.set()
        self._wake()

    async def _address(self, host: str) -> str:
        """The address of ``host`` (DNS cache, then the address policy), noted in the gate.

        Raises:
            DnsNotFound, DnsTemporaryFailure, PrivateAddress: as the cache and policy.
        """
        ip = (await self._addresses.choose(host))[0]
        self._gate.note_address(host, ip)
        return ip

    async def fetch(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        on_body: BodySink | None = None,
        going: asyncio.Event | None = None,
    ) -> FetchResult:
        """GET ``url`` (robots.txt, a hop of it, its refresh, a sitemap) through the gate;
        ``on_body`` streams its body (``Fetcher.fetch``: a sitemap's reader); ``going``:
        not sent while that event is clear (``acquire``).

        Raises:
            FetchError: as ``Fetcher.fetch``, DNS errors (``DnsNotFound``,
                ``DnsTemporaryFailure``) and ``PrivateAddress`` included;
                ``HostParked`` when the host is parked, or was while the request
                waited for its slot (nothing is sent to a parked host).
            UrlError: ``url`` has no valid host.
        """
        host = urls.host_key(url)
        stats = self._bound[0].stats(host, urls.origin(url))
        if stats.parked:
            raise HostParked(f"{host} is parked: {url} not requested")
        await self._address(host)
        try:
            start = await self.acquire(host, going)
        except HostParked:
            raise HostParked(f"{host} was parked while {url} waited: not requested") from None
        backed_off = False
        try:
            result = await self._fetcher.fetch(url, max_bytes=max_bytes, on_body=on_body)
        except FetchError as exc:
            now = self._clock()
            if exc.retryable:
                backed_off = learn(self._gate, host, start, now, None).retry
            else:
                self._gate.forget(host, now)
            raise
        finally:
            self.end(host, self._clock())
            if backed_off and self.backed_off is not None:
                self.backed_off(host, stats)
        if learn(self._gate, host, start, self._clock(), result).retry and self.backed_off:
            self.backed_off(host, stats)
        return result

    async def render_gate(self, url: str, resource_type: str) -> bool:
        """May a rendered page request ``url`` now? Applies the crawl's rules to the
        browser: address policy, robots.txt, and the host's slot (waits for it; the
        pool cancels the wait at the page's budget). Refusals go to ``blocked``."""
        try:
            url = urls.clean(url)
        except UrlError:
            return False
        host = urls.host_key(url)
        observer, admission, robots = self._bound
        observer.stats(host, urls.origin(url))  # its figures, made on first sight
        what = f"render sub-request ({resource_type})"
        try:
            await self._address(host)
        except (DnsNotFound, PrivateAddress) as exc:
            reason = (
                BlockReason.DNS if isinstance(exc, DnsNotFound) else BlockReason.PRIVATE_ADDRESS
            )
            admission.block_once(url, host, Verdict(reason, f"{what}: {exc}"))
            return False
        except DnsTemporaryFailure:
            return False
        decision = await robots.check(url)
        self._gate.set_crawl_delay(host, decision.crawl_delay_s)
        if not decision.allowed:
            detail = f"{what} disallowed for {self._token!r}"
            admission.block_once(url, host, Verdict(BlockReason.ROBOTS, detail))
            return False
        try:
            await self.acquire(host)
        except HostParked:
            return False
        return True

    def render_report(self, end: SubRequestEnd) -> None:
        """A sub-request :meth:`render_gate` let through has ended: free its slot,
        learn from its answer."""
        try:
            host = urls.host_key(urls.clean(end.url))
        except UrlError:
            return
        now = self._clock()
        if end.kind == "cancelled":
            self._gate.forget(host, now)
        else:
            self._gate.learn(host, now, end.status, end.elapsed_s, end.retry_after)
        self.end(host, now)


__all__ = ["SideRequests", "learn"]
