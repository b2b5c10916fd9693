"""The crawl engine: wires frontier, politeness, robots, fetcher, parser and store.

One asyncio event loop runs ``config.concurrency`` worker tasks. A worker takes the
next ready URL from the frontier (the host with the earliest allowed fetch time), checks
robots.txt, fetches, records the page and its links, and gives the host back to the
frontier with the next time politeness allows. Workers sleep on one wake-up event with a
timeout equal to the frontier's next ready time: there is no polling loop.

The engine publishes a ``CrawlSnapshot`` every ``snapshot_interval_ms`` to its
subscribers and takes commands (``pause``, ``resume``, ``add_seeds``, ``request_stop``)
from any UI running on the same loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import random
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from crawldeck.core import redirects, urls
from crawldeck.core.browser_pool import RenderPool
from crawldeck.core.config import CrawlConfig, asdict
from crawldeck.core.dns import AddressPolicy, DnsCache, ip_politeness
from crawldeck.core.errors import (
    CrawldeckError,
    DnsNotFound,
    DnsTemporaryFailure,
    FetchError,
    ParseError,
    PrivateAddress,
    RenderUnavailable,
    StoreError,
    UrlError,
)
from crawldeck.core.fetcher import Fetcher as AiohttpFetcher
from crawldeck.core.fetcher import FetchResult
from crawldeck.core.frontier import Frontier, FrontierEntry
from crawldeck.core.links import Extracted, is_html
from crawldeck.core.parse import ParsePool
from crawldeck.core.politeness import BACKOFF_STATUSES, Politeness
from crawldeck.core.politeness import Outcome as PolitenessOutcome
from crawldeck.core.protocols import Clock, Fetcher
from crawldeck.core.render_types import RenderResult, SubRequestEnd
from crawldeck.core.robots import RobotsCache
from crawldeck.core.seen import SeenSet
from crawldeck.core.shell import should_render
from crawldeck.core.snapshot import (
    BackoffRow,
    BlockedRow,
    Counters,
    CrawlSnapshot,
    CrawlState,
    HostDetail,
    HostRow,
    ResponseRow,
)
from crawldeck.core.store import BlockedRecord, FrontierRow, HostRecord, PageRecord, Store
from crawldeck.core.transport import PinningResolver
from crawldeck.core.traps import BlockReason, ScopePolicy, TrapGuard, Verdict

log = logging.getLogger("crawldeck.engine")

Subscriber = Callable[[CrawlSnapshot], None]
Outcome = Literal["finished", "stopped", "max_pages"]

#: HTTP statuses that carry a Location to follow (RFC 9110 §15.4).
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
#: Priorities of the front queues: seeds and redirect targets first, then links.
PRIORITY_SEED = 0
PRIORITY_LINK = 1
#: How many busiest hosts a snapshot carries.
SNAPSHOT_HOSTS = 50
#: How many recent blocked URLs and log lines a snapshot carries.
SNAPSHOT_RECENT = 200
#: URLs remembered as already recorded in ``blocked`` (bounded, oldest forgotten).
BLOCKED_MEMORY = 100_000
#: Entries per generation of the href memo (``_HrefMemo``): at most twice this many.
HREF_MEMO_SIZE = 32_768
#: Seconds an in-flight fetch may still run after a stop was asked for.
STOP_GRACE_S = 5.0
#: Responses remembered per host for the console's detail view.
RECENT_RESPONSES = 10
#: While a request outside a worker's page fetch (a rendered page's sub-request, a
#: robots.txt redirect hop) holds a host, the host is looked at again this often.
SUB_REQUEST_RECHECK_S = 0.05
#: A fetch running longer than this (s) stops counting against ``concurrency``, so
#: slow hosts (tarpits, drips) cannot take every worker (issue #10 item 10) ...
SLOW_FETCH_S = 2.0
#: ... and at most ``SLOW_FETCH_FACTOR x concurrency`` such slow fetches run at once
#: besides the ``concurrency`` others (64 with the defaults: each holds a socket and at
#: most ``max_body_bytes`` of body).
SLOW_FETCH_FACTOR = 4
#: ``hosts.state`` values of a run still going on (a run killed leaves them behind).
_LIVE_STATES = frozenset({"active", "backoff"})
#: Throughput is measured over this many seconds.
THROUGHPUT_WINDOW_S = 10.0


@dataclass(slots=True)
class _HostStats:
    """Per-host counters kept by the engine (politeness state lives in ``Politeness``)."""

    origin: str
    fetched: int = 0
    errors: int = 0
    in_flight: int = 0
    admitted: int = 0
    demoted: bool = False
    parked: bool = False
    dead: bool = False
    dns_failing: bool = False
    fetching: int = 0
    recent: deque[ResponseRow] | None = None
    saved: HostRecord | None = None  # its row as an earlier run left it
    cut: bool = False  # a fetch of it was cancelled by a stop (its URL stays queued)

    def remember(self, row: ResponseRow) -> None:
        """Keep ``row`` among the host's last ``RECENT_RESPONSES`` responses."""
        if self.recent is None:
            self.recent = deque(maxlen=RECENT_RESPONSES)
        self.recent.append(row)


class _Resolved:
    """What an href resolved to: the cleaned URL, its dedupe key and host key, and
    whether the URL is in the seen set (then a repeat of the href is only an edge)."""

    __slots__ = ("host", "key", "seen", "url")

    def __init__(self, url: str, key: str, host: str) -> None:
        self.url = url
        self.key = key
        self.host = host
        self.seen = False


class _HrefMemo:
    """A bounded memo of resolved hrefs, keyed by ``origin_prefix(base) + href`` for a
    root-relative href and by the href itself for an absolute http(s) one (hrefs whose
    resolution does not depend on the page's path). Two generations of at most
    ``HREF_MEMO_SIZE`` entries each: when the young one is full it becomes the old one
    and the old one is dropped, and a hit in the old one moves back to the young one,
    so the hrefs that keep recurring (navigation) stay."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._young: dict[str, _Resolved] = {}
        self._old: dict[str, _Resolved] = {}

    @staticmethod
    def key(prefix: str, href: str) -> str | None:
        """The memo key of ``href`` on a page whose base has ``prefix``, or ``None``."""
        if href.startswith("/"):
            return None if href.startswith("//") else prefix + href
        if href.startswith(("http://", "https://")):
            return href
        return None

    def get(self, key: str) -> _Resolved | None:
        """The remembered resolution of ``key``, or ``None``."""
        found = self._young.get(key)
        if found is None:
            found = self._old.pop(key, None)
            if found is not None:
                self.put(key, found)
        return found

    def put(self, key: str, resolved: _Resolved) -> None:
        """Remember ``resolved`` under ``key``."""
        if len(self._young) >= self._size:
            self._old = self._young
            self._young = {}
        self._young[key] = resolved


class _FastSlot:
    """A worker's hold on one of the engine's ``concurrency`` fast slots (a semaphore
    count), given back once: when the fetch turns slow, or when the URL is done."""

    __slots__ = ("_held", "_semaphore")

    def __init__(self, semaphore: asyncio.Semaphore) -> None:
        self._semaphore = semaphore
        self._held = True

    def give_back(self) -> None:
        """Release the slot unless it was released already."""
        if self._held:
            self._held = False
            self._semaphore.release()


class _PoliteFetcher:
    """The fetcher robots.txt requests go through (``RobotsCache``): each request,
    redirect hops and refreshes included, resolves its host, waits for that host's
    politeness, the per-IP limit and a free slot, and counts as a request to it."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    async def fetch(self, url: str, *, max_bytes: int | None = None) -> FetchResult:
        """GET ``url`` politely; raises what ``Fetcher.fetch`` and ``DnsCache`` raise."""
        return await self._engine._polite_fetch(url, max_bytes)


@dataclass(frozen=True, slots=True)
class CrawlResult:
    """How a run ended: ``outcome`` and the totals at the end."""

    outcome: Outcome
    counters: Counters


class Engine:
    """Runs one crawl over a ``Store``.

    Args:
        config: the crawl's settings.
        store: the open SQLite store; if it holds an earlier run, the crawl resumes.
        clock: the one time source, wall-clock seconds since the epoch (a test's
            virtual clock: ``loop.time`` of a virtual-time loop).
        fetcher: the HTTP edge (``core.protocols.Fetcher``; default: the aiohttp
            ``core.fetcher.Fetcher`` on ``config``, pinned to ``dns``).
        rng: randomness for backoff jitter.
        dns: the resolver cache (default: a ``DnsCache`` on ``config`` and ``clock``).

    Call ``add_seeds`` then ``await run()``. ``run`` returns when the frontier is empty
    and nothing is in flight (``finished``), when ``max_pages`` pages were fetched
    (``max_pages``), or after ``request_stop`` (``stopped``).
    """

    def __init__(
        self,
        config: CrawlConfig,
        store: Store,
        *,
        clock: Clock = time.time,
        fetcher: Fetcher | None = None,
        rng: random.Random | None = None,
        dns: DnsCache | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self._clock = clock
        self._dns = dns or DnsCache(config, clock)
        self._policy = AddressPolicy(config, audit=self._audit)
        self._fetcher: Fetcher = fetcher or AiohttpFetcher(
            config, resolver=PinningResolver(self._dns, self._policy)
        )
        self._ip_politeness = ip_politeness(config)
        self._host_ip: dict[str, str] = {}
        self._sub_inflight: Counter[str] = Counter()
        self._slot_freed = asyncio.Event()
        self._robots = RobotsCache(_PoliteFetcher(self), config, clock, self._audit)
        self._politeness = Politeness(config, rng)
        self._frontier = Frontier()
        self._scope = ScopePolicy(config.scope)
        self._guard = TrapGuard(config, self._scope, datetime.now(UTC).date())
        self._seen = SeenSet(store)
        self._hosts: dict[str, _HostStats] = {}
        self._dirty_hosts: set[str] = set()
        self._backoff_hosts: set[str] = set()
        self._busy_hosts: set[str] = set()
        self._wake = asyncio.Event()
        self._fast = asyncio.Semaphore(config.concurrency)
        self._resume_event = asyncio.Event()
        self._resume_event.set()
        self._state: CrawlState = "running"
        self._stopping = False
        self._in_flight = 0
        self._pages = 0
        self._bytes = 0
        # the committed totals of earlier runs; the store adds this run's (``_counters``)
        self._base_totals: Counter[str] = Counter()
        self._base_blocked: Counter[str] = Counter()
        self.retried = 0  # failed URLs of earlier runs queued again (``_restore``)
        self._blocked_recent: deque[BlockedRow] = deque(maxlen=SNAPSHOT_RECENT)
        self._blocked_seen: dict[str, None] = {}
        self._href_memo = _HrefMemo(HREF_MEMO_SIZE)
        # The frontier window (see _unspill): per host, URLs waiting only in SQLite,
        # the seq of the last one read back, and the hosts with none in memory.
        self._spilled: Counter[str] = Counter()
        self._spilled_total = 0
        self._spill_cursor: dict[str, int] = {}
        self._waiting: dict[str, None] = {}
        self._host_cap = max(1, config.frontier_window // 8)
        self.unspilled = 0  # spilled URLs read back so far (this run)
        self._log_lines: deque[str] = deque(maxlen=SNAPSHOT_RECENT)
        self._samples: deque[tuple[float, int, int]] = deque()
        self._subscribers: list[Subscriber] = []
        self._started_at = clock()
        self._pages_at_start = 0
        self._run_id: int | None = None
        self._workers: list[asyncio.Task[None]] = []
        self._crash: Exception | None = None
        self._ended_at: float | None = None
        self._parser = ParsePool(config)
        self._parser_noticed = False
        self._render: RenderPool | None = None
        if config.render != "never":
            pool = RenderPool(config, gate=self._render_gate, report=self._render_report)
            if pool.available:
                self._render = pool
            else:
                self._audit(pool.reason)
        self._restore()

    # ----------------------------------------------------------------- set-up

    def _restore(self) -> None:
        """Load an earlier run's state from the store (no-op on a new file)."""
        if not self.store.has_crawl():
            return
        # a rerun tries again what failed transiently (5xx, 429, timeouts, lost
        # connections, DNS failures), with its attempts counted on (issue #10 item 16)
        requeued = self.store.requeue_failed()
        self.retried = sum(requeued.values())
        self._seen.rebuild(self._observed(self.store.iter_keys()))
        for host, count in self.store.host_counts().items():
            self._stats(host, None).admitted = count
        for row in self.store.load_frontier():
            entry = FrontierEntry(
                row.url,
                row.key,
                row.host,
                row.depth,
                row.priority,
                row.attempts,
                (),  # a chain cut by a stop starts over here, without its cookies
                row.via,
            )
            self._stats(row.host, urls.origin(row.url))
            if row.depth == 0:
                self._scope.add_seed(row.url)
            self._frontier.add(entry)
        self._spilled.update(self.store.spilled_counts())
        self._spilled_total = self._spilled.total()
        self._waiting.update((h, None) for h in self._spilled if not self._frontier.queued(h))
        for host, rec in self.store.load_hosts().items():
            stats = self._stats(host, None)
            stats.fetched = max(0, rec.pages_fetched - requeued.get(host, 0))
            stats.demoted = rec.state == "demoted"
            stats.dead = rec.state == "dead"  # its URLs were blocked: none is queued
            stats.saved = rec
            if requeued.get(host):
                self._dirty_hosts.add(host)
            self._politeness.restore(
                host,
                crawl_delay_s=None if rec.crawl_delay_ms is None else rec.crawl_delay_ms / 1000,
                backoff_attempts=rec.backoff_attempts,
                backoff_until=rec.backoff_until,
                backoff_started=rec.backoff_started,
                learnt_delay_s=None if rec.learnt_delay_ms is None else rec.learnt_delay_ms / 1000,
            )
            if rec.backoff_attempts:
                self._backoff_hosts.add(host)
        counts = self.store.counts()
        self._pages = int(counts.get("pages", 0))
        mix, self._bytes = self.store.page_totals()
        self._base_totals.update(mix)
        self._base_totals["pages"] = self._pages
        self._base_totals["bytes"] = self._bytes
        self._base_blocked.update(counts.get("blocked", {}))
        for old in self.store.recent_blocked(SNAPSHOT_RECENT):
            self._blocked_recent.append(BlockedRow(old.at, old.reason, old.host, old.url))
        queued = len(self._frontier) + self._spilled_total
        retried = f" ({self.retried} that failed before are tried again)" if self.retried else ""
        self._log(f"resuming: {queued} URLs queued{retried}, {self._pages} pages fetched before")

    def _observed(self, keys: Iterable[str]) -> Iterator[str]:
        """``keys`` (of an earlier run), each counted by the trap guard on the way (the
        calendar budget of a host is not handed out again on resume)."""
        observe = self._guard.observe
        for key in keys:
            observe(key)
            yield key

    def _stats(self, host: str, origin: str | None) -> _HostStats:
        stats = self._hosts.get(host)
        if stats is None:
            stats = _HostStats(origin or f"http://{host}")
            self._hosts[host] = stats
        elif origin is not None and stats.origin != origin and stats.fetched == 0:
            stats.origin = origin
        return stats

    def subscribe(self, callback: Subscriber) -> None:
        """Call ``callback(snapshot)`` every ``snapshot_interval_ms`` and at the end."""
        self._subscribers.append(callback)

    def add_seeds(self, seed_urls: Iterable[str]) -> list[tuple[str, str]]:
        """Admit seed URLs (depth 0, highest priority); they also define the scope.

        Returns:
            ``(url, reason)`` for each seed that was refused (bad URL or a trap
            guard). A seed already known from an earlier run is silently kept.
        """
        refused: list[tuple[str, str]] = []
        fresh: list[FrontierRow] = []
        for raw in seed_urls:
            try:
                url = urls.clean(raw)
            except UrlError as exc:
                refused.append((raw, str(exc)))
                continue
            self._scope.add_seed(url)
            self._policy.trust(urls.host_key(url))
            row = self._admit(url, 0, PRIORITY_SEED, (), None, is_seed=True)
            if isinstance(row, Verdict):
                refused.append((url, f"{row.reason}: {row.detail}"))
            elif row is not None:
                fresh.append(row)
        if fresh:
            self.store.enqueue_urls(fresh)
        self._seen.handed_over()
        self._wake.set()
        return refused

    # -------------------------------------------------------------- admission

    def _admit(
        self,
        url: str,
        depth: int,
        priority: int,
        redirects: tuple[str, ...],
        via: str | None,
        *,
        is_seed: bool = False,
        key: str | None = None,
        host: str | None = None,
        spill: bool = True,
        cookies: tuple[tuple[str, str], ...] = (),
    ) -> FrontierRow | Verdict | None:
        """Run ``url`` through the seen set and the trap guards.

        A URL whose dedupe key ``key`` (``urls.normalize``; computed when ``None``) was
        admitted before is dropped silently; a new one is checked by the guards, then
        added to the seen set. ``host`` is ``urls.host_key(url)`` (computed when
        ``None``). ``spill=False`` keeps the URL in memory even past the frontier
        window (a redirect hop carries its chain's cookies, which SQLite does not
        keep); ``cookies`` go with it (``FrontierEntry.cookies``). A URL of a parked
        host is written as ``queued`` for the next run and not kept in memory.

        Returns:
            the new frontier row (already in the in-memory frontier; the caller
            persists it), the ``Verdict`` when refused (already recorded in
            ``blocked``), or ``None`` when the URL was seen before.
        """
        if key is None:
            key = urls.normalize(url, self.config.strip_params)
        if self._seen.contains(key):
            return None  # seen before: dropped, whatever the guards would say now
        if host is None:
            host = urls.host_key(url)
        stats = self._hosts.get(host)
        verdict = self._guard.admit(
            url, depth, stats.admitted if stats else 0, is_seed=is_seed, key=key
        )
        if verdict is not None:
            if not self._seen_blocked(key):
                self._block(url, host, verdict)
            return verdict
        self._seen.add(key)
        if stats is None or not stats.fetched:  # its origin may still change (http/https)
            stats = self._stats(host, urls.origin(url))
        stats.admitted += 1
        in_memory = self._frontier.queued(host)
        if stats.parked:
            state = "queued"  # for the next run; nothing more is fetched from it now
        elif spill and (
            in_memory >= self._host_cap
            or len(self._frontier) >= self.config.frontier_window
            or host in self._spilled  # behind its host's spilled URLs (FIFO per host)
        ):
            # this URL waits in SQLite only (``_unspill``)
            self._spilled[host] += 1
            self._spilled_total += 1
            if not in_memory:
                self._waiting[host] = None
            state = "spilled"
        else:
            self._frontier.add(
                FrontierEntry(url, key, host, depth, priority, 0, redirects, via, cookies)
            )
            self._wake.set()
            state = "queued"
        return FrontierRow(
            key=key,
            url=url,
            host=host,
            depth=depth,
            priority=priority,
            state=state,
            available_at=0.0,
            attempts=0,
            redirects=redirects,
            via=via,
        )

    def _seen_blocked(self, key: str) -> bool:
        """True if ``key`` was recorded as blocked recently (keeps ``blocked`` writes low)."""
        if key in self._blocked_seen:
            return True
        self._blocked_seen[key] = None
        if len(self._blocked_seen) > BLOCKED_MEMORY:
            del self._blocked_seen[next(iter(self._blocked_seen))]
        return False

    def _block(self, url: str, host: str, verdict: Verdict) -> None:
        """Record a refused URL in ``blocked`` and the live counters."""
        now = self._clock()
        reason = str(verdict.reason)
        self.store.record_blocked(BlockedRecord(url, host, reason, verdict.detail, now))
        self._blocked_recent.append(BlockedRow(now, reason, host, url))

    def _audit(self, line: str) -> None:
        """Keep an audit line (robots.txt treated as allow, demotions) for the log panel."""
        self._log(line, level=logging.WARNING)

    def _log(self, line: str, level: int = logging.INFO) -> None:
        stamp = datetime.now(UTC).strftime("%H:%M:%S")
        self._log_lines.append(f"{stamp} {line}")
        log.log(level, line)

    # ---------------------------------------------------------------- control

    def pause(self) -> None:
        """Dispatch nothing new; in-flight fetches finish."""
        if self._state == "running":
            self._state = "paused"
            self._resume_event.clear()

    def resume(self) -> None:
        """Dispatch again after ``pause``."""
        if self._state == "paused":
            self._state = "running"
            self._resume_event.set()
            self._wake.set()

    def request_stop(self) -> None:
        """Stop cleanly: nothing new is dispatched, in-flight fetches get a grace period."""
        if not self._stopping:
            asyncio.get_running_loop().call_later(STOP_GRACE_S, self._cancel_workers)
        self._stopping = True
        if self._state in ("running", "paused"):
            self._state = "stopping"
        self._resume_event.set()
        self._wake.set()

    @property
    def paused(self) -> bool:
        """True while paused."""
        return self._state == "paused"

    # -------------------------------------------------------------- main loop

    async def run(self) -> CrawlResult:
        """Crawl until finished, ``max_pages`` reached, or stopped; always flushes the store.

        Raises:
            StoreError: the SQLite file could not be written.
            Exception: a bug in a worker is re-raised here after the crawl was stopped
                and its state saved.
        """
        self._started_at = self._clock()
        self._pages_at_start = self._pages
        self._samples.clear()
        self._samples.append((self._started_at, self._pages, self._bytes))
        self._run_id = self.store.begin_run(asdict(self.config))
        reporter = asyncio.create_task(self._report_loop())
        self._workers = [
            asyncio.create_task(self._worker(), name=f"worker-{i}")
            for i in range((1 + SLOW_FETCH_FACTOR) * self.config.concurrency)
        ]
        try:
            await asyncio.gather(*self._workers, return_exceptions=True)
        finally:
            reporter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reporter
            if self._render is not None:
                await self._render.aclose()
            await self._robots.aclose()
            await self._fetcher.aclose()
            await self._dns.aclose()
            await self._parser.aclose()
            outcome = self._outcome()
            self._state = "finished" if outcome == "finished" else "stopped"
            self._ended_at = self._clock()
            if not isinstance(self._crash, StoreError):  # a failed store takes no more writes
                self._flush_hosts(final=True)
                self.store.end_run(self._run_id, outcome)
                await asyncio.to_thread(self.store.flush)
            self._publish()
        if self._crash is not None:
            raise self._crash
        return CrawlResult(outcome, self._counters())

    def _cancel_workers(self) -> None:
        """End the stop grace period: cancel fetches still running (they stay queued)."""
        for task in self._workers:
            task.cancel()

    def _outcome(self) -> Outcome:
        if self._stopping:
            return "stopped"
        if self._page_cap_reached():
            return "max_pages"
        return "finished"

    def _page_cap_reached(self) -> bool:
        cap = self.config.max_pages
        return cap is not None and self._pages + self._in_flight >= cap

    async def _worker(self) -> None:
        """One of ``(1 + SLOW_FETCH_FACTOR) x concurrency`` workers; a worker fetches
        only while it holds one of the ``concurrency`` fast slots, and gives its slot up
        when its fetch runs longer than ``SLOW_FETCH_S`` (``_process``): so at most
        ``concurrency`` fetches run at normal speed and at most
        ``SLOW_FETCH_FACTOR x concurrency`` slow ones more."""
        try:
            while True:
                await self._fast.acquire()
                slot = _FastSlot(self._fast)
                try:
                    entry = await self._next_entry()
                    if entry is None:
                        self._wake.set()
                        return
                    await self._process(entry, slot)
                finally:
                    slot.give_back()
        except CrawldeckError as exc:  # e.g. the disk is full: stop cleanly, one line
            self._stop_on_error(exc)
        except Exception as exc:  # a bug: stop the crawl cleanly, re-raise from run()
            log.exception("worker crashed")
            self._crash = exc
            self.request_stop()

    async def _next_entry(self) -> FrontierEntry | None:
        """The next URL whose host may be fetched now; ``None`` when the crawl is over."""
        while True:
            if self._stopping:
                return None
            if not self._resume_event.is_set():
                await self._resume_event.wait()
                continue
            if self._page_cap_reached():
                return None
            window = self.config.frontier_window
            if self._waiting and len(self._frontier) <= window // 2:
                self._unspill_waiting()
            now = self._clock()
            entry = self._frontier.pop(now)
            if entry is not None:
                host = entry.host
                if host in self._spilled and self._frontier.queued(host) <= self._host_cap // 2:
                    self._unspill(host)
                    if not self._frontier.queued(host) and host in self._spilled:
                        self._waiting[host] = None  # the window was full: read back later
                return entry
            if self._waiting and len(self._frontier) < window:
                self._unspill_waiting()  # nothing is ready: bring other hosts in
                if self._frontier.next_ready_at() is not None:
                    continue
            if len(self._frontier) == 0 and self._in_flight == 0:
                if not self._spilled_total:
                    return None
                # URLs still wait in SQLite only: every host that has some is read back
                self._waiting.update((host, None) for host in self._spilled)
                self._unspill_waiting()
                if len(self._frontier) == 0:
                    self._log(f"{self._spilled_total} spilled URLs could not be read back")
                    return None
                continue
            ready_at = self._frontier.next_ready_at()
            self._wake.clear()
            timeout = None if ready_at is None else max(0.0, ready_at - now) + 0.001
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()

    @staticmethod
    def _prefix_host(prefix: str) -> tuple[str, str]:
        """``(prefix + "/", host key of prefix)``: a URL starting with the former has
        the latter as host key (a prefix no URL starts with when it has no valid host)."""
        try:
            return prefix + "/", urls.host_key(prefix + "/")
        except UrlError:
            return "\0", ""  # matches no URL

    def _unspill(self, host: str) -> int:
        """Read ``host``'s spilled URLs back from SQLite, oldest first, up to its share of
        the window (``frontier_window // 8``) and the window itself; the number read.

        The frontier window, after Mercator's disk-backed back queues: a host keeps at
        most its share in memory and the crawl at most ``frontier_window``; the rest of
        a host's URLs wait in SQLite (state ``spilled``) and come back when its
        in-memory queue is half empty, so a slow host (Crawl-delay, backoff) never
        fills memory and starves the others. Rows the writer has not committed yet are
        not seen: the store is flushed and read again when fewer come back than the
        host has spilled. One indexed range read (tens of microseconds) per call.
        """
        want = min(
            self._host_cap - self._frontier.queued(host),
            self.config.frontier_window - len(self._frontier),
            self._spilled[host],
        )
        if want <= 0:
            return 0
        after = self._spill_cursor.get(host, 0)
        rows, last = self.store.load_spilled(host, after, want)
        if len(rows) < want:
            self.store.flush()
            rows, last = self.store.load_spilled(host, after, want)
        self._spill_cursor[host] = last
        for row in rows:
            self._frontier.add(
                FrontierEntry(row.url, row.key, row.host, row.depth, row.priority,
                              row.attempts, row.redirects, row.via)
            )  # fmt: skip
            if row.depth == 0:
                self._scope.add_seed(row.url)  # a seed spilled before a resume
        count = len(rows)
        left = self._spilled[host] - count
        if left > 0 and count == want:
            self._spilled[host] = left
        else:  # all back (the count can only be off after a crash or a kill)
            # The cursor stays: the rows read back stay ``spilled`` in SQLite until
            # their pages are recorded, and a later read must not give them again.
            self._spilled_total -= self._spilled.pop(host) - count
        self._spilled_total -= count
        self.unspilled += count
        if count:
            self._waiting.pop(host, None)
            if host not in self._hosts:  # a resumed crawl's host, unseen this run
                self._stats(host, urls.origin(rows[0].url))
            self._wake.set()
        return count

    def _unspill_waiting(self) -> None:
        """Bring hosts whose URLs all wait in SQLite back into memory, in the order they
        started waiting, until the window is full (see ``_unspill``)."""
        self.store.flush()  # one commit for the whole batch
        window = self.config.frontier_window
        for host in list(self._waiting):
            if len(self._frontier) >= window:
                return
            if host in self._spilled:
                self._unspill(host)
            self._waiting.pop(host, None)

    # --------------------------------------------------------------- one URL

    async def _process(self, entry: FrontierEntry, slot: _FastSlot) -> None:
        """Robots check, fetch, record, extract; gives the host back to the frontier.

        ``slot`` is the worker's fast slot: given back early if the fetch is slow."""
        host = entry.host
        stats = self._stats(host, None)
        stats.in_flight += 1
        self._busy_hosts.add(host)
        self._in_flight += 1
        released = False
        try:
            if self.config.per_host_concurrency > 1 and (
                stats.in_flight < self.config.per_host_concurrency
            ):
                # More than one fetch per host is allowed: the host may be taken again
                # as soon as politeness says so, while this fetch runs.
                released = True
            timer = asyncio.get_running_loop().call_later(SLOW_FETCH_S, slot.give_back)
            try:
                await self._visit(entry, stats, release_early=released, timer=timer)
            except asyncio.CancelledError:
                stats.cut = True  # cut by a stop: its URL stays queued in SQLite
                raise
            finally:
                timer.cancel()
        finally:
            stats.in_flight -= 1
            if not stats.in_flight:
                self._busy_hosts.discard(host)
            self._in_flight -= 1
            self._dirty_hosts.add(host)
            self._frontier.release(host, self._earliest(host, self._clock()))
            self._wake.set()

    async def _resolve(self, entry: FrontierEntry, stats: _HostStats) -> str | None:
        """The address to fetch ``entry`` from, through the DNS cache and the address
        policy; ``None`` when the URL was blocked (``dns``, ``private_address``) or put
        back for a retry (a temporary DNS failure backs the host off)."""
        host = entry.host
        try:
            addresses = await self._dns.resolve(host)
            ip = self._policy.select(host, addresses)[0]
        except (DnsNotFound, PrivateAddress) as exc:
            self._refuse(entry, stats, exc)
            return None
        except DnsTemporaryFailure as exc:
            now = self._clock()
            outcome = self._politeness.on_response(host, now, None, 0.0, None)
            self._track_backoff(host, outcome.retry)
            stats.errors += 1
            if entry.attempts < self.config.max_retries:
                self._retry(entry, f"{exc.reason}: {exc}")
            else:
                if not stats.dns_failing:
                    stats.dns_failing = True
                    self._audit(f"{host}: DNS keeps failing ({exc}); host marked dns_failing")
                self._record_failure(entry, stats, now, now, exc)
            return None
        self._host_ip[host] = ip
        stats.dns_failing = False
        return ip

    def _refuse(self, entry: FrontierEntry, stats: _HostStats, exc: FetchError) -> None:
        """Block ``entry`` for a DNS answer we will not use: NXDOMAIN (``dns``, the host
        is marked dead) or a special-purpose address (``private_address``)."""
        if isinstance(exc, DnsNotFound):
            if not stats.dead:
                stats.dead = True
                self._audit(f"{entry.host}: {exc}; host marked dead")
            reason = BlockReason.DNS
        else:
            reason = BlockReason.PRIVATE_ADDRESS
        self._block(entry.url, entry.host, Verdict(reason, str(exc)))
        self.store.mark(entry.key, "blocked")

    def _held(self, host: str, stats: _HostStats, ip: str, now: float) -> bool:
        """Whether a page of ``host`` must wait although the frontier gave it: its
        address was used by another host too recently (per-IP limit), a request outside
        this worker (a render sub-request, a robots.txt hop) went to it since it was
        scheduled, or such a request holds its slot now."""
        return (
            self._ip_politeness.earliest(ip, now) > now
            or self._politeness.earliest(host, now) > now
            or self._sub_inflight[host] + stats.fetching >= self.config.per_host_concurrency
        )

    async def _visit(
        self,
        entry: FrontierEntry,
        stats: _HostStats,
        *,
        release_early: bool,
        timer: asyncio.TimerHandle,
    ) -> None:
        host = entry.host
        ip = await self._resolve(entry, stats)
        if ip is None:
            return
        if self._held(host, stats, ip, self._clock()):
            self._frontier.push_front(entry)
            return
        decision = await self._robots.check(entry.url)
        self._politeness.set_crawl_delay(host, decision.crawl_delay_s)
        if not decision.allowed:
            # refused without a request: no politeness slot, host or per-IP, is used
            robots = self._robots.entry(entry.url)
            strict = robots is not None and robots.disallow_all and decision.status == "unreachable"
            reason = BlockReason.ROBOTS_UNAVAILABLE if strict else BlockReason.ROBOTS
            detail = (
                "robots.txt unreachable and robots_on_failure = disallow"
                if strict
                else f"disallowed for {self.config.robots_token!r}"
            )
            self._block(entry.url, host, Verdict(reason, detail))
            self.store.mark(entry.key, "blocked")
            return
        if decision.fetched:
            robots = self._robots.entry(entry.url)
            if robots is not None and robots.http_status in BACKOFF_STATUSES:
                self._log(f"{host}: robots.txt answered {robots.http_status}, backing off")
        if self._held(host, stats, ip, self._clock()):
            # robots.txt was just requested (it counts as a request) or time passed
            # while another task fetched it: the page waits for its next slot
            self._frontier.push_front(entry)
            return
        start = self._clock()
        self._politeness.on_dispatch(host, start)
        self._ip_politeness.on_dispatch(ip, start)
        if release_early:
            self._frontier.release(host, self._earliest(host, start))
        headers = None
        if entry.cookies:
            cookie = redirects.cookie_header(entry.cookies, entry.url)
            if cookie is not None:
                headers = {"Cookie": cookie}
        try:
            stats.fetching += 1
            try:
                result = await self._fetcher.fetch(
                    entry.url, headers=headers, want_body=self._wants_body
                )
            finally:
                timer.cancel()
                stats.fetching -= 1
                self._ip_politeness.on_end(ip, self._clock())
                self._slot_freed.set()
        except (DnsNotFound, PrivateAddress) as exc:
            # The name changed between our lookup and the connection (DNS rebinding).
            self._refuse(entry, stats, exc)
            return
        except FetchError as exc:
            now = self._clock()
            entry.spent_s += now - start
            stats.errors += 1
            if not exc.retryable:
                # deterministic (a malformed response, a short body, a stacked coding):
                # recorded after one try; it says nothing about the server's load
                self._politeness.on_end(host, now)
                self._record_failure(entry, stats, start, now, exc)
                return
            self._learn(host, start, now, None)
            self._check_park(host, stats, now)
            if entry.attempts < self.config.max_retries and self._time_left(entry):
                self._retry(entry, f"{exc.reason}: {exc}")
                return
            self._record_failure(entry, stats, start, now, exc)
            return
        now = self._clock()
        entry.spent_s += now - start
        outcome = self._learn(host, start, now, result)
        if outcome.retry:
            self._check_park(host, stats, now)
            if entry.attempts < self.config.max_retries and not stats.parked:
                self._retry(entry, f"HTTP {result.status}, backoff {outcome.backoff_s:.1f} s")
                return
            self._log(f"{host}: giving up on {entry.url} after {entry.attempts + 1} tries")
        if self._politeness.should_demote(host, now) and not stats.demoted:
            stats.demoted = True
            self._frontier.demote(host)
            self._audit(f"{host}: in backoff for over {self.config.demote_after_s} s, demoted")
        extracted: Extracted | None = None
        rendered: RenderResult | None = None
        parse_error: str | None = None
        if (
            not outcome.retry
            and 200 <= result.status < 300
            and not result.skipped
            and is_html(result.content_type)
        ):
            # a page cut at max_body_bytes is parsed too: the links of its first part
            try:
                extracted = await self._parser.extract(
                    result.body, entry.url, result.headers, self.config.robots_token
                )
            except ParseError as exc:  # over parse_timeout_ms, or its worker died
                parse_error = f"{exc.reason}: {exc}"
                self._log(f"{host}: {exc}")
            if self._parser.notice is not None and not self._parser_noticed:
                self._parser_noticed = True
                self._audit(self._parser.notice)
            if extracted is not None and self._render is not None and not result.truncated:
                why = should_render(
                    self.config,
                    host,
                    result.body,
                    result.content_type,
                    len(extracted.links),
                    nofollow=extracted.nofollow,
                )
                if why is not None:
                    rendered = await self._render_page(entry, result, why)
        self._record(
            entry,
            stats,
            result,
            start,
            failed=outcome.retry,
            extracted=extracted,
            rendered=rendered,
            parse_error=parse_error,
        )

    @staticmethod
    def _wants_body(media_type: str) -> bool:
        """Whether a response body of ``media_type`` is read: only HTML is parsed and
        nothing else is kept, so other bodies (a 700 MB zip) are not downloaded."""
        return is_html(media_type)

    def _time_left(self, entry: FrontierEntry) -> bool:
        """Whether ``entry`` may be tried again: its tries this run took less than
        ``total_timeout_ms`` in all (so a URL costs at most about twice that, whatever
        a server drips; issue #10 item 10)."""
        return entry.spent_s * 1000 < self.config.total_timeout_ms

    def _check_park(self, host: str, stats: _HostStats, now: float) -> None:
        """Park ``host`` after ``park_after_backoffs`` straight 429/503/no-response
        answers: nothing more is sent to it this run; its queued URLs stay queued in
        SQLite for the next run (``Politeness.should_park``, issue #10 item 7)."""
        if stats.parked or not self._politeness.should_park(host):
            return
        stats.parked = True
        dropped = self._frontier.drop_host(host)
        spilled = self._spilled.pop(host, 0)
        self._spilled_total -= spilled
        self._waiting.pop(host, None)
        self._dirty_hosts.add(host)
        self._audit(
            f"{host}: parked after {self.config.park_after_backoffs} straight 429/503 or "
            f"no answer; {dropped + spilled} URLs left for the next run"
        )

    def _earliest(self, host: str, now: float) -> float:
        """When ``host`` may be fetched again: its own politeness and its address's,
        and not before ``SUB_REQUEST_RECHECK_S`` from now while requests outside the
        workers' page fetches (render sub-requests, robots.txt hops) fill its slots."""
        at = self._politeness.earliest(host, now)
        ip = self._host_ip.get(host)
        if ip is not None:
            at = max(at, self._ip_politeness.earliest(ip, now))
        stats = self._hosts.get(host)
        fetching = stats.fetching if stats is not None else 0
        side = self._sub_inflight[host]
        if side and side + fetching >= self.config.per_host_concurrency:
            at = max(at, now + SUB_REQUEST_RECHECK_S)
        return at

    async def _acquire_slot(self, host: str, ip: str, stats: _HostStats) -> float:
        """Wait until ``host`` and ``ip`` may get a request and ``host`` has a free slot
        (``per_host_concurrency``: page fetches plus side requests), then take it: the
        request counts against both (``on_dispatch``). Returns the start time (epoch s).
        The caller ends it with ``_end_side_request``."""
        while True:
            now = self._clock()
            at = max(self._politeness.earliest(host, now), self._ip_politeness.earliest(ip, now))
            free = self._sub_inflight[host] + stats.fetching < self.config.per_host_concurrency
            if at <= now and free:
                break
            self._slot_freed.clear()
            timeout = max(at - now, 0.0) + 0.001 if free else 1.0
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._slot_freed.wait()
        self._politeness.on_dispatch(host, now)
        self._ip_politeness.on_dispatch(ip, now)
        self._sub_inflight[host] += 1
        return now

    def _end_side_request(self, host: str, ip: str | None, now: float) -> None:
        """A request taken with ``_acquire_slot`` ended at ``now``: free its slot."""
        if self._sub_inflight[host] > 0:
            self._sub_inflight[host] -= 1
        if ip is not None:
            self._ip_politeness.on_end(ip, now)
        self._dirty_hosts.add(host)
        self._slot_freed.set()
        self._wake.set()

    async def _polite_fetch(self, url: str, max_bytes: int | None) -> FetchResult:
        """A request outside the workers' page fetches (robots.txt, its redirect hops,
        its background refresh): through the DNS cache and the address policy, waiting
        for its host's politeness, the per-IP limit and a free slot
        (``_acquire_slot``); its response teaches politeness like a page's (429/503 back
        the host off, a success decays a learnt delay). RFC 9309 §2.3.1: the robots.txt
        request is a request to the host; so is every redirect hop, to the host it goes
        to (issue #10 item 9).

        Raises:
            FetchError: as ``Fetcher.fetch``, DNS errors (``DnsNotFound``,
                ``DnsTemporaryFailure``) and ``PrivateAddress`` included.
            UrlError: ``url`` has no valid host.
        """
        host = urls.host_key(url)
        stats = self._stats(host, urls.origin(url))
        ip = self._policy.select(host, await self._dns.resolve(host))[0]
        self._host_ip[host] = ip
        start = await self._acquire_slot(host, ip, stats)
        try:
            result = await self._fetcher.fetch(url, max_bytes=max_bytes)
        except FetchError as exc:
            now = self._clock()
            if exc.retryable:
                self._learn(host, start, now, None)
            else:
                self._politeness.on_end(host, now)
            raise
        finally:
            self._end_side_request(host, ip, self._clock())
        now = self._clock()
        self._learn(host, start, now, result)
        return result

    # ------------------------------------------------------------- rendering

    async def _render_page(
        self, entry: FrontierEntry, result: FetchResult, why: str
    ) -> RenderResult | None:
        """Render a JavaScript shell in the pool (the host stays checked out meanwhile)."""
        assert self._render is not None
        try:
            out = await self._render.render(
                entry.url, result.body, content_type=result.headers.get("content-type")
            )
        except RenderUnavailable as exc:
            self._audit(str(exc))
            self._render = None
            return None
        if out.error is not None:
            self._log(f"{entry.host}: render of {entry.url} ({why}): {out.error}")
            if not out.timed_out:
                return None
        return out

    async def _render_gate(self, url: str, resource_type: str) -> bool:
        """May a rendered page request ``url`` now? Applies the crawl's rules to the
        browser: address policy, robots.txt, and the host's politeness slot (waits for
        it; the pool cancels the wait at the page's budget). Refusals go to ``blocked``."""
        try:
            url = urls.clean(url)
        except UrlError:
            return False
        host = urls.host_key(url)
        stats = self._stats(host, urls.origin(url))
        what = f"render sub-request ({resource_type})"
        try:
            ip = self._policy.select(host, await self._dns.resolve(host))[0]
        except (DnsNotFound, PrivateAddress) as exc:
            reason = (
                BlockReason.DNS if isinstance(exc, DnsNotFound) else BlockReason.PRIVATE_ADDRESS
            )
            self._block_once(url, host, Verdict(reason, f"{what}: {exc}"))
            return False
        except DnsTemporaryFailure:
            return False
        self._host_ip[host] = ip
        decision = await self._robots.check(url)
        self._politeness.set_crawl_delay(host, decision.crawl_delay_s)
        if not decision.allowed:
            detail = f"{what} disallowed for {self.config.robots_token!r}"
            self._block_once(url, host, Verdict(BlockReason.ROBOTS, detail))
            return False
        if stats.parked:
            return False
        await self._acquire_slot(host, ip, stats)
        return True

    def _render_report(self, end: SubRequestEnd) -> None:
        """A sub-request the gate let through has ended: free its slot, learn from it."""
        try:
            host = urls.host_key(urls.clean(end.url))
        except UrlError:
            return
        now = self._clock()
        if end.kind == "cancelled":
            self._politeness.on_end(host, now)
        else:
            outcome = self._politeness.on_response(
                host, now, end.status, end.elapsed_s, end.retry_after
            )
            self._track_backoff(host, outcome.retry)
        self._end_side_request(host, self._host_ip.get(host), now)

    def _block_once(self, url: str, host: str, verdict: Verdict) -> None:
        """``_block`` unless this URL was recorded as blocked recently."""
        if not self._seen_blocked(urls.normalize(url, self.config.strip_params)):
            self._block(url, host, verdict)

    def _learn(
        self, host: str, start: float, now: float, result: FetchResult | None
    ) -> PolitenessOutcome:
        """Feed the end at ``now`` of a request to ``host`` started at ``start`` to
        politeness: the response's status, time, Retry-After and Date (RFC 9110
        §10.2.3, §6.6.1), or ``None`` for no response (a transient failure)."""
        if result is None:
            outcome = self._politeness.on_response(host, now, None, now - start, None)
        else:
            headers = result.headers
            outcome = self._politeness.on_response(
                host, now, result.status, now - start, headers.get("retry-after"),
                date=headers.get("date"),
            )  # fmt: skip
        self._track_backoff(host, outcome.retry)
        return outcome

    def _track_backoff(self, host: str, backing_off: bool) -> None:
        """Keep the set of hosts whose last response started or continued a backoff."""
        if backing_off:
            self._backoff_hosts.add(host)
        else:
            self._backoff_hosts.discard(host)

    def _retry(self, entry: FrontierEntry, why: str) -> None:
        """Put ``entry`` back at the head of its host's queue for another try."""
        entry.attempts += 1
        self._frontier.push_front(entry)
        self.store.mark(entry.key, "queued", attempts=entry.attempts)
        self._log(f"{entry.host}: retry {entry.attempts} of {entry.url} ({why})")

    def _record_failure(
        self, entry: FrontierEntry, stats: _HostStats, start: float, now: float, exc: FetchError
    ) -> None:
        """Record a fetch that produced no HTTP response after its last try."""
        self._pages += 1
        stats.fetched += 1
        page = PageRecord(
            url=entry.url,
            final_url=entry.url,
            host=entry.host,
            depth=entry.depth,
            status=None,
            content_type="",
            bytes=0,
            elapsed_ms=(now - start) * 1000,
            fetched_at=start,
            rendered=False,
            error=f"{exc.reason}: {exc}",
            noindex=False,
        )
        stats.remember(ResponseRow(start, entry.url, None, page.elapsed_ms, page.error))
        self.store.record_page(page, key=entry.key, links=(), new_rows=(), state="failed")

    def _record(
        self,
        entry: FrontierEntry,
        stats: _HostStats,
        result: FetchResult,
        start: float,
        *,
        failed: bool,
        extracted: Extracted | None = None,
        rendered: RenderResult | None = None,
        parse_error: str | None = None,
    ) -> None:
        """Record a response: the page, its redirect (a 3xx ``Location`` or a meta
        refresh) or links (raw, then those of the rendered DOM when the page was
        rendered), and the new frontier rows.

        A redirect hop to another spelling of the same URL (same dedupe key) goes on
        as the same frontier row (state ``queued`` with the next hop's URL), so a kill
        resumes the chain; a chain that ends in a loop, past ``max_redirects`` or as a
        growing-URL trap marks its hops failed with the reason (``core.redirects``).
        """
        self._pages += 1
        self._bytes += len(result.body)
        stats.fetched += 1
        status = result.status
        if status >= 500:
            stats.errors += 1
        error: str | None = None
        if result.truncated:
            error = f"body_too_large: over {self.config.max_body_bytes} bytes"
        elif failed:
            error = f"gave up after {entry.attempts + 1} tries"
        elif parse_error is not None:
            error = parse_error
        edges: list[tuple[str, str]] = []
        new_rows: list[FrontierRow] = []
        final_url = entry.url
        noindex = False
        hop: str | None = None  # where the response redirects to (raw), if anywhere
        base = entry.url
        location = result.headers.get("location")
        if status in REDIRECT_STATUSES and location:
            hop = location
        elif extracted is not None:
            noindex = extracted.noindex
            self._follow(entry, extracted.links, extracted.base, edges, new_rows)
            if rendered is not None:
                noindex = noindex or rendered.noindex
                self._follow(entry, rendered.links, rendered.base, edges, new_rows)
                self._follow(entry, rendered.navigations, entry.url, edges, new_rows)
            if extracted.refresh is not None:
                hop, base = extracted.refresh, extracted.base
        state: Literal["done", "failed", "queued"] = "failed" if failed else "done"
        following: FrontierEntry | None = None
        if hop is not None:
            target, ended, following = self._redirect(entry, hop, base, result, new_rows)
            if target is not None:
                final_url = target
                edges.append((entry.url, target))
            if ended is not None:
                error = f"{ended.reason}: {ended.detail}"
                state = "failed"
                self.store.fail_urls(
                    [(urls.normalize(u, self.config.strip_params), u) for u in entry.redirects],
                    error,
                )
            elif following is not None:
                state = "queued"
        page = PageRecord(
            url=entry.url,
            final_url=final_url,
            host=entry.host,
            depth=entry.depth,
            status=status,
            content_type=result.content_type,
            bytes=len(result.body),
            elapsed_ms=result.elapsed_ms,
            fetched_at=start,
            rendered=rendered is not None and (rendered.error is None or rendered.timed_out),
            error=error,
            noindex=noindex,
        )
        stats.remember(ResponseRow(start, entry.url, status, result.elapsed_ms, error))
        self.store.record_page(
            page,
            key=entry.key,
            links=list(dict.fromkeys(edges)),
            new_rows=new_rows,
            state=state,
            next_url=following.url if following is not None else None,
            next_host=following.host if following is not None else None,
            redirects=following.redirects if following is not None else (),
        )
        self._seen.handed_over()
        if following is not None:
            self._frontier.push_front(following)

    def _redirect(
        self,
        entry: FrontierEntry,
        raw: str,
        base: str,
        result: FetchResult,
        new_rows: list[FrontierRow],
    ) -> tuple[str | None, Verdict | None, FrontierEntry | None]:
        """Judge the redirect of ``entry`` to ``raw`` (resolved against ``base``) as the
        next hop of its chain (``core.redirects.judge_hop``).

        Returns:
            ``(target, ended, following)``: ``target`` the cleaned URL (``None`` when
            it cannot be crawled: blocked as ``bad_url``/``scheme``); ``ended`` the
            ``Verdict`` that ends the chain (also recorded in ``blocked``), or
            ``None``; ``following`` the next hop when it goes on as this same frontier
            row (another spelling of this URL, or a URL of the chain asked again with a
            new cookie), else ``None`` (a new URL is admitted through the seen set and
            the trap guards at this depth with the highest priority, its row appended
            to ``new_rows``).
        """
        try:
            target = urls.clean(raw, base)
        except UrlError as exc:
            self._block(raw, entry.host, Verdict(_url_reason(exc), str(exc)))
            return None, None, None
        host = urls.host_key(target)
        set_by_hop = redirects.set_cookies(entry.url, result.headers.getall("set-cookie", ()))
        ended = redirects.judge_hop(
            entry.redirects,
            entry.url,
            target,
            set_cookie=bool(set_by_hop),
            max_redirects=self.config.max_redirects,
        )
        if ended is not None:
            self._block(target, host, ended)
            return target, ended, None
        strip = self.config.strip_params
        key = urls.normalize(target, strip)
        chain = (*entry.redirects, entry.url)
        cookies = entry.cookies + set_by_hop
        if key == entry.key or any(urls.normalize(u, strip) == key for u in entry.redirects):
            following = FrontierEntry(
                target, entry.key, entry.host, entry.depth, entry.priority, 0, chain,
                entry.url, cookies,
            )  # fmt: skip
            following.host = host  # another host only for a chain URL asked again
            return target, None, following
        row = self._admit(
            target, entry.depth, PRIORITY_SEED, chain, entry.url,
            key=key, host=host, spill=False, cookies=cookies,
        )  # fmt: skip
        if isinstance(row, FrontierRow):
            new_rows.append(row)
        return target, None, None

    def _follow(
        self,
        entry: FrontierEntry,
        hrefs: list[str],
        base: str,
        edges: list[tuple[str, str]],
        new_rows: list[FrontierRow],
    ) -> None:
        """Resolve, admit and collect the outlinks of a page at ``entry.depth + 1``.

        The same href on many pages (a site's navigation, its footer) is resolved once:
        ``_HrefMemo`` keeps what a root-relative or absolute href resolved to, and once
        its URL is in the seen set, a repeat costs one dict lookup.
        """
        depth = entry.depth + 1
        memo = self._href_memo
        prefix = urls.origin_prefix(base)
        page_host: tuple[str, str] | None = None  # (prefix + "/", its host key), on need
        for href in dict.fromkeys(hrefs):  # a page linking one href twice: once
            memo_key = _HrefMemo.key(prefix, href)
            known = memo.get(memo_key) if memo_key is not None else None
            if known is not None:
                edges.append((entry.url, known.url))
                if known.seen:
                    continue
                row = self._admit(known.url, depth, PRIORITY_LINK, (), entry.url,
                                  key=known.key, host=known.host)  # fmt: skip
            else:
                try:
                    url = urls.clean(href, base)
                except UrlError as exc:
                    if not self._seen_blocked(href):
                        self._block(href, entry.host, Verdict(_url_reason(exc), str(exc)))
                    continue
                edges.append((entry.url, url))
                if page_host is None:
                    page_host = self._prefix_host(prefix)
                host = page_host[1] if url.startswith(page_host[0]) else urls.host_key(url)
                known = _Resolved(url, urls.normalize(url, self.config.strip_params), host)
                if memo_key is not None:
                    memo.put(memo_key, known)
                row = self._admit(url, depth, PRIORITY_LINK, (), entry.url,
                                  key=known.key, host=known.host)  # fmt: skip
            if not isinstance(row, Verdict):
                known.seen = True
                if row is not None:
                    new_rows.append(row)

    # -------------------------------------------------------------- snapshots

    async def _report_loop(self) -> None:
        interval = self.config.snapshot_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                self._flush_hosts()
            except CrawldeckError as exc:  # the store failed (disk full): stop like a worker
                self._stop_on_error(exc)
                return
            self._publish()

    def _stop_on_error(self, exc: CrawldeckError) -> None:
        """Stop cleanly after ``exc`` (a store write failed, e.g. the disk is full); the
        first one is re-raised from ``run`` and printed once by the caller, so the log
        line is a warning (the console's Log tab, not stderr)."""
        if self._crash is None:
            self._log(f"stopping: {exc}", level=logging.WARNING)
            self._crash = exc
        self.request_stop()

    def _publish(self) -> None:
        snap = self.snapshot()
        for callback in self._subscribers:
            callback(snap)

    def _host_state(self, host: str, stats: _HostStats, now: float, *, final: bool) -> str:
        """The ``hosts.state`` of ``host``: ``dead`` (its name does not resolve),
        ``dns_failing``, ``parked``, ``demoted``, ``backoff`` (backing off now) or
        ``active``; once the run is over (``final``), ``active`` becomes ``done`` (none
        of its URLs left) or ``queued`` (URLs left for the next run), and a host with
        no URL left is ``done`` whatever its backoff."""
        if stats.dead:
            return "dead"
        if stats.dns_failing:
            return "dns_failing"
        if stats.parked:
            return "parked"
        left = self._queued(host) > 0 or stats.in_flight > 0 or stats.cut
        if final and not left:
            return "done"
        if stats.demoted:
            return "demoted"
        until = self._politeness.view(host, now).backoff_until
        if until is not None and until > now:
            return "backoff"
        return "queued" if final else "active"

    def _flush_hosts(self, *, final: bool = False) -> None:
        """Write the politeness state of the hosts that changed since the last flush;
        ``final`` (the run is over): also of the hosts an earlier run left in a state
        that is not final (it was killed), each with its state at the end. A host this
        run did not touch keeps its row; one whose robots.txt this run did not fetch
        keeps its saved robots.txt columns."""
        now = self._clock()
        hosts: Iterable[str] = self._dirty_hosts
        if final:
            hosts = self._dirty_hosts | {
                host
                for host, stats in self._hosts.items()
                if stats.saved is None or stats.saved.state in _LIVE_STATES
            }
        for host in hosts:
            stats = self._hosts[host]
            view = self._politeness.view(host, now)
            robots = self._robots.entry(stats.origin)
            state = self._host_state(host, stats, now, final=final)
            saved = stats.saved
            if robots is not None:
                robots_status: str | None = robots.status
                robots_expires: float | None = robots.expires_at
                crawl_delay_ms = (
                    None if robots.crawl_delay_s is None else robots.crawl_delay_s * 1000
                )
            elif saved is not None:
                robots_status = saved.robots_status
                robots_expires = saved.robots_expires_at
                crawl_delay_ms = saved.crawl_delay_ms
            else:
                robots_status = robots_expires = crawl_delay_ms = None
            self.store.upsert_host(
                HostRecord(
                    host=host,
                    ip=self._dns.pinned(host) or (saved.ip if saved is not None else None),
                    robots_status=robots_status,
                    robots_expires_at=robots_expires,
                    crawl_delay_ms=crawl_delay_ms,
                    delay_ms=view.delay_ms,
                    backoff_attempts=view.backoff_attempts,
                    backoff_until=view.backoff_until,
                    pages_fetched=stats.fetched,
                    state=state,
                    backoff_started=view.backoff_started,
                    learnt_delay_ms=view.learnt_delay_ms or None,
                )
            )
        self._dirty_hosts.clear()

    @property
    def spilled(self) -> int:
        """URLs waiting only in SQLite now (the in-memory frontier is at its window)."""
        return self._spilled_total

    def _queued(self, host: str) -> int:
        """URLs of ``host`` waiting: in the in-memory frontier and spilled to SQLite."""
        return self._frontier.queued(host) + self._spilled.get(host, 0)

    def _counters(self) -> Counters:
        now = self._clock()
        # Hosts with queued URLs (the frontier counts them) plus hosts whose last URL is
        # in flight: no walk over every known host.
        active = self._frontier.hosts() + sum(
            1 for host in self._busy_hosts if not self._frontier.queued(host)
        )
        if self._spilled:  # hosts whose URLs all wait in SQLite (only while spilling)
            active += sum(
                1
                for host in self._spilled
                if not self._frontier.queued(host) and host not in self._busy_hosts
            )
        backoff = sum(1 for host in self._backoff_hosts if self._in_backoff(host, now))
        dns = self._dns.stats()
        # Totals are those of the SQLite file (earlier runs + what this run committed),
        # so the console, the summary and the tables agree (issue #10 item 18).
        totals = self._base_totals + Counter(self.store.pages_added())
        blocked = self._base_blocked + Counter(self.store.blocked_added())
        mix = {k: v for k, v in totals.items() if k not in ("pages", "bytes") and v > 0}
        return Counters(
            pages=totals["pages"],
            bytes=totals["bytes"],
            errors=mix.get("error", 0),
            queued=len(self._frontier) + self._spilled_total,
            in_flight=self._in_flight,
            hosts_known=len(self._hosts),
            hosts_active=active,
            hosts_backoff=backoff,
            blocked=dict(blocked),
            status_mix=mix,
            dns_lookups=dns.lookups,
            dns_queries=dns.queries,
            dns_hit_ratio=dns.hit_ratio,
        )

    def _host_row(self, host: str, now: float) -> HostRow:
        """The console row of one host now."""
        stats = self._hosts[host]
        view = self._politeness.view(host, now)
        robots = self._robots.entry(stats.origin)
        return HostRow(
            host=host,
            queued=self._queued(host),
            in_flight=stats.in_flight,
            fetched=stats.fetched,
            errors=stats.errors,
            delay_ms=view.delay_ms,
            delay_source=view.delay_source,
            tokens=view.tokens,
            next_fetch_in_s=max(0.0, self._earliest(host, now) - now),
            robots_status=robots.status if robots else "unknown",
            ip=self._dns.pinned(host),
            state=self._host_state(host, stats, now, final=self._ended_at is not None),
        )

    def query_hosts(self, text: str = "", limit: int = SNAPSHOT_HOSTS) -> tuple[HostRow, ...]:
        """Rows of the known hosts whose key contains ``text`` (case-insensitive), the
        busiest first (in flight, then queued, then fetched), at most ``limit``.

        Walks every known host: meant for a filter the operator types, not for every
        refresh (snapshots carry the top rows already).
        """
        now = self._clock()
        needle = text.lower()
        ranked = heapq.nlargest(
            limit,
            (
                (stats.in_flight, self._queued(host), stats.fetched, host)
                for host, stats in self._hosts.items()
                if needle in host
            ),
        )
        return tuple(self._host_row(host, now) for *_, host in ranked)

    def host_detail(self, host: str, queue_head: int = 20) -> HostDetail | None:
        """The detail view of ``host`` (``None`` for a host the crawl has never seen)."""
        stats = self._hosts.get(host)
        if stats is None:
            return None
        now = self._clock()
        robots = self._robots.entry(stats.origin)
        if robots is None:
            detail = "robots.txt not fetched yet"
        else:
            code = robots.http_status if robots.http_status is not None else "no response"
            left = max(0.0, robots.expires_at - now)
            detail = f"{robots.status} (HTTP {code}; {robots.detail}); expires in {left:.0f} s"
        return HostDetail(
            row=self._host_row(host, now),
            queue_head=tuple(e.url for e in self._frontier.peek(host, queue_head)),
            robots_rules=tuple(robots.rules) if robots else (),
            robots_detail=detail,
            crawl_delay_s=robots.crawl_delay_s if robots else None,
            responses=tuple(stats.recent or ()),
        )

    def _in_backoff(self, host: str, now: float) -> bool:
        until = self._politeness.view(host, now).backoff_until
        return until is not None and until > now

    def snapshot(self) -> CrawlSnapshot:
        """A read-only picture of the crawl now (see ``core.snapshot``)."""
        now = self._clock()
        self._samples.append((now, self._pages, self._bytes))
        while self._samples and now - self._samples[0][0] > THROUGHPUT_WINDOW_S:
            self._samples.popleft()
        t0, p0, b0 = self._samples[0]
        span = now - t0
        pages_per_s = (self._pages - p0) / span if span > 0 else 0.0
        bytes_per_s = (self._bytes - b0) / span if span > 0 else 0.0
        # The candidates are the hosts in flight and the hosts next in the ready heap,
        # so a snapshot costs O(concurrency + back queues), not O(known hosts).
        candidates = self._busy_hosts.union(self._frontier.soonest(SNAPSHOT_HOSTS))
        busy = heapq.nlargest(
            SNAPSHOT_HOSTS,
            ((self._hosts[host].in_flight, self._queued(host), host) for host in candidates),
        )
        rows = [self._host_row(host, now) for _, _, host in busy]
        backoff_rows = []
        for host in sorted(self._backoff_hosts):
            view = self._politeness.view(host, now)
            if view.backoff_attempts == 0:
                continue
            backoff_rows.append(
                BackoffRow(
                    host=host,
                    attempts=view.backoff_attempts,
                    last_status=view.last_status,
                    retry_after_s=view.retry_after_s,
                    backoff_until=view.backoff_until,
                    demoted=self._hosts[host].demoted,
                    parked=self._hosts[host].parked,
                )
            )
        return CrawlSnapshot(
            at=now,
            started_at=self._started_at,
            state=self._state,
            counters=self._counters(),
            pages_per_s=pages_per_s,
            bytes_per_s=bytes_per_s,
            window_s=THROUGHPUT_WINDOW_S,
            max_pages=self.config.max_pages,
            pages_this_run=self._pages - self._pages_at_start,
            render=self._render.stats() if self._render is not None else None,
            ended_at=self._ended_at,
            retried=self.retried,
            hosts=tuple(rows),
            backoff=tuple(backoff_rows),
            blocked=tuple(self._blocked_recent),
            log=tuple(self._log_lines),
        )


def _url_reason(exc: UrlError) -> BlockReason:
    """``scheme`` for ``UnsupportedScheme`` (mailto:, javascript:), else ``bad_url``."""
    return BlockReason(exc.reason)
