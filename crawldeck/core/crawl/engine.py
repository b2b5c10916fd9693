"""The crawl engine: the workers and the awaits, over parts that own their state.

The parts (``core.crawl.assembly`` wires them) decide; the engine asks them, does the I/O
they hand back and feeds the outcome back (issue #11). A worker takes the next ready URL
from the frontier (the host with the earliest deadline of the host gate), resolves its
host, checks robots.txt, waits for the gate, fetches (``Fetcher``), hands failures and
backoffs to ``core.crawl.retries``, reads the page (``core.crawl.content``), records it
(``core.crawl.recording``) and gives the host back at the gate's next deadline. Workers sleep
on one wake-up event until the frontier's next ready time: nothing polls.

The engine publishes a ``CrawlSnapshot`` every ``snapshot_interval_ms`` to its
subscribers and takes commands (``pause``, ``resume``, ``add_seeds``, ``request_stop``)
from any UI running on the same loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal

from crawldeck.core.clock import LoopClock
from crawldeck.core.config import CrawlConfig, asdict
from crawldeck.core.crawl.assembly import ClusterHooks, assemble
from crawldeck.core.crawl.content import Content
from crawldeck.core.crawl.gcpolicy import fewer_gc_passes
from crawldeck.core.crawl.observer import SNAPSHOT_HOSTS, HostStats, ObserverStatistics
from crawldeck.core.crawl.resume import restore
from crawldeck.core.crawl.retries import Retries
from crawldeck.core.crawl.snapshot import Counters, CrawlSnapshot, CrawlState, HostDetail, HostRow
from crawldeck.core.errors import (
    CrawldeckError,
    DnsNotFound,
    DnsTemporaryFailure,
    FetchError,
    PrivateAddress,
    StoreError,
    UrlError,
)
from crawldeck.core.net import redirects
from crawldeck.core.net.dns import DnsCache
from crawldeck.core.policy import urls
from crawldeck.core.policy.admission import AdmissionStatistics
from crawldeck.core.policy.backoff import BACKOFF_STATUSES
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.gate import GateStatistics, Go, Held, WaitUntil
from crawldeck.core.policy.slots import SLOW_FETCH_FACTOR, SLOW_FETCH_S, FastSlot
from crawldeck.core.policy.traps import Verdict
from crawldeck.core.policy.window import WindowStatistics
from crawldeck.core.protocols import Clock, CrawlFrontier, CrawlStore, Fetcher
from crawldeck.core.records import FrontierRow

log = logging.getLogger("crawldeck.engine")

Subscriber = Callable[[CrawlSnapshot], None]
#: How a run ended: nothing left, stopped (a signal, the console, an error), or one of
#: the budgets (``max_pages``, ``max_time_s``, ``max_bytes``) reached.
Outcome = Literal["finished", "stopped", "max_pages", "max_time", "max_bytes"]
#: ``runs.status`` and the stats' ``finish_reason`` of a run that finished having done
#: nothing (no fetch, no page, no URL refused: a rerun of a crawl with nothing left);
#: its outcome is still ``finished`` (issue #25 trial: it is recorded, as such).
NOTHING_TO_DO: Final = "nothing_to_do"

#: Seconds an in-flight fetch may still run after a stop was asked for.
STOP_GRACE_S = 5.0


@dataclass(frozen=True, slots=True)
class EngineStatistics:
    """The engine's parts at one moment, each its module's ``statistics()``."""

    gate: GateStatistics
    frontier: WindowStatistics
    observer: ObserverStatistics
    admission: AdmissionStatistics


@dataclass(frozen=True, slots=True)
class CrawlResult:
    """How a run ended: ``outcome`` and the totals at the end."""

    outcome: Outcome
    counters: Counters


class Engine:
    """Runs one crawl over a ``CrawlStore``.

    Args:
        config: the crawl's settings.
        store: the open SQLite store (if it holds an earlier run, the crawl resumes:
            its ``LocalHistory`` role), or a cluster worker's ``ClusterStore``
            (``core.cluster``), or any ``CrawlStore``: the optional roles it plays
            (``CrawlStore.roles``) are wired once, when the parts are assembled.
        clock: the one time source, epoch seconds (default: ``core.clock.LoopClock``,
            the running loop's clock aligned to epoch seconds; a test's: a
            virtual-time loop's); every part reads it (issue #24 item 6).
        fetcher: the HTTP edge (default: the aiohttp one on ``config``, pinned to ``dns``).
        rng: randomness for backoff jitter.
        dns: the resolver cache (default: a ``DnsCache`` on ``config`` and ``clock``).
        cluster: a cluster worker's hooks (``core.crawl.assembly.ClusterHooks``).

    Call ``add_seeds`` then ``await run()``. ``run`` returns when the frontier is empty
    and nothing is in flight (``finished``), when ``max_pages`` pages were fetched
    (``max_pages``), when the pages' bodies reached ``max_bytes`` (``max_bytes``), when
    the run has run ``max_time_s`` seconds, paused time not counted (``max_time``:
    stopped as by ``request_stop``, its cut fetches left queued), or after
    ``request_stop`` (``stopped``).
    """

    def __init__(
        self,
        config: CrawlConfig,
        store: CrawlStore,
        *,
        clock: Clock | None = None,
        fetcher: Fetcher | None = None,
        rng: random.Random | None = None,
        dns: DnsCache | None = None,
        cluster: ClusterHooks | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self._clock = clock = clock or LoopClock()
        self._wake = asyncio.Event()  # a URL is ready or a worker may be done
        parts = assemble(
            config, store, clock=clock, wake=self._wake.set, fetcher=fetcher, rng=rng, dns=dns,
            cluster=cluster,
        )  # fmt: skip
        self._dns, self._policy, self._fetcher = parts.dns, parts.policy, parts.fetcher
        self._addresses = parts.addresses
        self._frontier: CrawlFrontier = parts.frontier
        self._gate, self._side = parts.gate, parts.side
        self._robots, self._obs, self._scope = parts.robots, parts.observer, parts.scope
        self._admission, self._recorder = parts.admission, parts.recorder
        self._seen, self._content, self._sitemaps = parts.seen, parts.content, parts.sitemaps
        self._retries = Retries(
            config,
            store,
            self._gate,
            self._frontier,
            self._obs,
            self._recorder,
            parked=self._side.slot_freed,
        )
        self._side.backed_off = self._retries.check_park
        self._fast = asyncio.Semaphore(config.concurrency)
        self._resume_event = asyncio.Event()
        self._resume_event.set()
        self._state: CrawlState = "running"
        self._stopping = False
        self.stop_asked_by: str | None = None  # who asked the stop (``request_stop``)
        #: Seeds added while the run ran (``add_seeds_live``): the file keeps them.
        self.seeds_added_live = 0
        self._budget: Outcome | None = None  # the time budget, once it ended the run
        self._time_up_at: asyncio.TimerHandle | None = None  # ``max_time_s``'s timer
        self._time_left_s: float | None = None  # ``max_time_s`` left while paused
        self._subscribers: list[Subscriber] = []
        self._run_id: int | None = None
        self._workers: list[asyncio.Task[None]] = []
        self._crash: Exception | None = None
        #: The run's stats (``core.crawl.stats``), stored in ``runs.stats``: set when ``run``
        #: ends cleanly, ``None`` before and after a store failure.
        self.stats: dict[str, Any] | None = None
        self._run_log = parts.roles.run_log
        history = parts.roles.history  # a file of earlier runs: the crawl resumes
        resumed = history is not None and restore(
            history, observer=self._obs, admission=self._admission, seen=self._seen,
            guard=parts.guard, scope=self._scope, policy=self._policy, frontier=self._frontier,
            gate=self._gate,
        )  # fmt: skip
        if resumed:
            self._obs.log(resumed)

    def subscribe(self, callback: Subscriber) -> None:
        """Call ``callback(snapshot)`` every ``snapshot_interval_ms`` and at the end."""
        self._subscribers.append(callback)

    def add_seeds(
        self,
        seed_urls: Iterable[str],
        *,
        known: Container[str] | None = None,
        cleaned: bool = False,
    ) -> list[tuple[str, str]]:
        """Admit seed URLs (depth 0, highest priority); they also define the scope.
        ``known``: the seeds' dedupe keys the seen set holds, asked beforehand
        (``add_seeds_live``); ``None``: asked here, on this thread (before a crawl).
        ``cleaned``: every URL is already ``urls.clean``'s result (a seeds file read
        by ``core.policy.seeds``), so it is not cleaned a second time. All fresh seeds'
        frontier rows go to the store in one batch (one ``executemany``).

        Returns:
            ``(url, reason)`` for each seed that was refused (bad URL or a trap
            guard). A seed already known from an earlier run is silently kept.
        """
        refused: list[tuple[str, str]] = []
        fresh: list[FrontierRow] = []
        for raw in seed_urls:
            try:
                url = raw if cleaned else urls.clean(raw)
                link = self._admission.link(url)
            except UrlError as exc:
                refused.append((raw, str(exc)))
                continue
            self._scope.add_seed(url, host=link.host)
            self._policy.trust(link.host)
            seen = None if known is None else link.key in known
            outcome = self._admission.admit(link, 0, is_seed=True, seen=seen)
            if isinstance(outcome, Verdict):
                refused.append((url, f"{outcome.reason}: {outcome.detail}"))
            elif outcome:
                fresh.append(self._recorder.queue_seed(link))
        if fresh:
            self.store.enqueue_urls(fresh)
        self._seen.handed_over()
        self._wake.set()
        return refused

    async def add_seeds_live(self, seed_urls: Iterable[str]) -> list[tuple[str, str]]:
        """``add_seeds`` while the crawl runs (the console's ``a``): the seen set's exact
        checks first, in a thread (``SeenSet.seen_among``), so the loop reads no SQLite."""
        seeds, keys = list(seed_urls), []
        for raw in seeds:
            with contextlib.suppress(UrlError):
                keys.append(self._admission.link(urls.clean(raw)).key)
        refused = self.add_seeds(seeds, known=await self._seen.seen_among(keys))
        self.seeds_added_live += len(seeds) - len(refused)
        not_added = {url for url, _ in refused}
        for url in seeds:  # the operator's commands are in the crawl's log, as Heritrix's
            if url not in not_added:
                self._obs.log(f"seed added: {url}")
        return refused

    def log(self, line: str) -> None:
        """Add ``line`` to the crawl's log (the console's Log tab, a headless run's
        output): a command from outside the engine (``core.crawl.attach``)."""
        self._obs.log(line)

    def pause(self, by: str = "") -> None:
        """Dispatch nothing new, sitemap readings included (``SitemapReader.pause``);
        in-flight fetches finish. The time budget (``max_time_s``) stops counting until
        ``resume``, as Heritrix leaves paused time out of a crawl's elapsed time. The
        crawl's log says so (``paused``, then ``by``: who asked, ``from an attached
        console (crawldeck attach)``)."""
        if self._state == "running":
            self._obs.log(f"paused {by}" if by else "paused: fetches in flight finish")
            self._state = "paused"
            self._resume_event.clear()
            self._sitemaps.pause()
            self._obs.pause(self._clock())
            if self._time_up_at is not None:
                loop = asyncio.get_running_loop()
                self._time_left_s = max(0.0, self._time_up_at.when() - loop.time())
                self._time_up_at.cancel()
                self._time_up_at = None

    def resume(self, by: str = "") -> None:
        """Dispatch again after ``pause``; the time budget counts on from where it was.
        The crawl's log says so, with ``by`` as ``pause``'s."""
        if self._state == "paused":
            self._obs.log(f"resumed {by}" if by else "resumed")
            self._state = "running"
            self._obs.resume(self._clock())
            self._start_time_budget()
            self._resume_event.set()
            self._sitemaps.go_on()
            self._wake.set()

    def _start_time_budget(self) -> None:
        """Arm ``max_time_s``'s timer for the time left of it (all of it at the start)."""
        left = self._time_left_s
        if left is not None:
            self._time_left_s = None
            self._time_up_at = asyncio.get_running_loop().call_later(left, self._time_up)

    def request_stop(self, by: str | None = None) -> None:
        """Stop cleanly: nothing new is dispatched, in-flight fetches get a grace period.

        ``by`` names who asked, as the end-of-run summary says it (``from an attached
        console (crawldeck attach)``), kept in ``stop_asked_by`` (the first asker's);
        ``None``: the crawl's own process (Ctrl-C, ``q``, a signal)."""
        if not self._stopping:
            asyncio.get_running_loop().call_later(STOP_GRACE_S, self._cancel_workers)
            self.stop_asked_by = by
        self._stopping = True
        if self._state == "paused":
            self._obs.resume(self._clock())  # the pause ends with the run
        if self._state in ("running", "paused"):
            self._state = "stopping"
        self._resume_event.set()
        self._wake.set()

    @property
    def paused(self) -> bool:
        """True while paused."""
        return self._state == "paused"

    async def run(self) -> CrawlResult:
        """Crawl until finished, a budget reached, or stopped; always flushes the store.

        While it runs, the cyclic GC's youngest generation is collected every
        ``core.crawl.gcpolicy.GC_GEN0_THRESHOLD`` allocations, not 700: the crawl allocates
        many short-lived containers, and the passes took about 5 % of its CPU (about
        1 % with the threshold, issue #23). The thresholds are restored when it
        returns, raises or is cancelled.

        Raises:
            StoreError: the SQLite file could not be written.
            Exception: a bug in a worker is re-raised here after the crawl was stopped
                and its state saved.
        """
        with fewer_gc_passes():
            return await self._run()

    async def _run(self) -> CrawlResult:
        """``run`` without the GC policy."""
        self._obs.begin()
        if self._run_log is not None:
            # the stats' start_time and the runs row's started_at are one time
            self._run_id = self._run_log.begin_run(
                asdict(self.config), started_at=self._obs.started_at
            )
        self._sitemaps.resume()  # hosts whose sitemaps an earlier run did not read
        reporter = asyncio.create_task(self._report_loop())
        if self.config.max_time_s is not None and not self._stopping:
            self._time_left_s = float(self.config.max_time_s)
            if self._state == "running":  # paused before the run: armed by ``resume``
                self._start_time_budget()
        self._workers = [
            asyncio.create_task(self._worker(), name=f"worker-{i}")
            for i in range((1 + SLOW_FETCH_FACTOR) * self.config.concurrency)
        ]
        try:
            await asyncio.gather(*self._workers, return_exceptions=True)
        finally:
            if self._time_up_at is not None:
                self._time_up_at.cancel()
            reporter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reporter  # it never raises: its failures stop the run (``_crash``)
            await self._content.aclose()
            await self._sitemaps.aclose()  # before robots.txt and the fetcher it uses
            await self._robots.aclose()
            await self._fetcher.aclose()
            await self._dns.aclose()
            await self._frontier.settle()  # no read-back thread outlives the run
            if not isinstance(self._crash, StoreError):
                self._frontier.save_credits()  # before the final flush
            outcome = self._outcome()
            self._state = "finished" if outcome == "finished" else "stopped"
            self._obs.ended_at = self._clock()
            if not isinstance(self._crash, StoreError):  # a failed store takes no more writes
                self._obs.flush_hosts(final=True)
                await self.store.drain()  # the run's rows are all counted
                self.stats = self._obs.run_stats(self._run_id, outcome)
                status: str = outcome
                if outcome == "finished" and not any(
                    self.stats[key] for key in ("fetches", "pages_added", "blocked")
                ):  # a rerun with nothing left: said as such, not as a crawl that ran
                    status = self.stats["finish_reason"] = NOTHING_TO_DO
                if self._run_log is not None and self._run_id is not None:
                    self._run_log.end_run(
                        self._run_id, status, stats=self.stats, finished_at=self._obs.ended_at
                    )
                await self.store.drain()
            self._publish()
        if self._crash is not None:
            raise self._crash
        return CrawlResult(outcome, self._obs.counters())

    def _cancel_workers(self) -> None:
        """End the stop grace period: cancel fetches still running (they stay queued)."""
        for task in self._workers:
            task.cancel()

    def _time_up(self) -> None:
        """``max_time_s`` has passed since the run began: stop as ``request_stop`` does."""
        if not self._stopping:
            self._budget = "max_time"
            self.request_stop()

    def _outcome(self) -> Outcome:
        """How the run ended: its time budget, asked to stop, ``max_pages`` or
        ``max_bytes`` reached with URLs left, or nothing left (``finished`` also when a
        cap is reached with nothing left: issue #25, a rerun of a finished crawl said
        its --max-pages was reached and to raise it)."""
        if self._budget is not None:
            return self._budget
        if self._stopping:
            return "stopped"
        if not len(self._frontier) and not self._frontier.spilled:
            return "finished"
        if self._page_cap_reached():
            return "max_pages"
        return "max_bytes" if self._bytes_cap_reached() else "finished"

    def _page_cap_reached(self) -> bool:
        cap = self.config.max_pages
        return cap is not None and self._obs.pages + self._obs.in_flight >= cap

    def _bytes_cap_reached(self) -> bool:
        cap = self.config.max_bytes
        return cap is not None and self._obs.bytes >= cap

    async def _worker(self) -> None:
        """One of ``(1 + SLOW_FETCH_FACTOR) x concurrency`` workers; it fetches only while
        it holds a fast slot (``core.policy.slots``), given up when its fetch turns slow."""
        try:
            while True:
                await self._fast.acquire()
                slot = FastSlot(self._fast)
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
            if self._page_cap_reached() or self._bytes_cap_reached():
                return None
            if await self.store.room():
                continue  # the store's writer was behind: things may have changed
            now = self._clock()
            entry = self._frontier.pop(now)
            if entry is not None:
                return entry
            self._frontier.bring_in()  # nothing was ready: read hosts back (they wake us)
            if len(self._frontier) == 0 and self._obs.in_flight == 0 and not self._sitemaps.busy:
                if not self._frontier.spilled:
                    return None
                if not await self._frontier.drain():
                    self._obs.log(f"{self._frontier.spilled} spilled URLs could not be read back")
                    return None
                continue
            ready_at = self._frontier.next_ready_at()
            self._wake.clear()
            timeout = None if ready_at is None else max(0.0, ready_at - now) + 0.001
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()

    async def _process(self, entry: FrontierEntry, slot: FastSlot) -> None:
        """Robots check, fetch, record, extract; gives the host back to the frontier.

        ``slot`` is the worker's fast slot: given back early if the fetch is slow."""
        host = entry.host
        stats = self._obs.stats(host, None)
        self._obs.start(host, stats)
        # Another fetch of this host is allowed (per_host_concurrency > 1): the host may
        # be taken again as soon as politeness says so, while this fetch runs.
        released = stats.in_flight < self.config.per_host_concurrency
        given = False

        def give_back(answer: WaitUntil | Held | None = None) -> None:
            # once per visit, whatever raised; ``answer``: the gate's, when it said no
            nonlocal given
            if given:
                return
            given = True
            if answer is None:
                self._give_back(host, self._clock())
            elif isinstance(answer, WaitUntil):
                self._frontier.release(host, answer.at)
            # HELD: the gate holds the host until a request of it ends

        try:
            timer = asyncio.get_running_loop().call_later(SLOW_FETCH_S, slot.give_back)
            try:
                await self._visit(
                    entry, stats, release_early=released, timer=timer, give_back=give_back
                )
            except asyncio.CancelledError:
                stats.cut = True  # cut by a stop: its URL stays queued in SQLite
                self._obs.cut += 1  # and is counted queued (issue #25 trial 10)
                raise
            finally:
                timer.cancel()
        finally:
            self._obs.end(host, stats)
            give_back()
            self._wake.set()

    async def _resolve(self, entry: FrontierEntry, stats: HostStats) -> str | None:
        """The address to fetch ``entry`` from, through the DNS cache and the address
        policy; ``None`` when the URL was blocked (``dns``, ``private_address``) or put
        back for a retry (a temporary DNS failure backs the host off)."""
        host = entry.host
        try:
            ip = (await self._addresses.choose(host))[0]
        except (DnsNotFound, PrivateAddress) as exc:
            self._retries.refuse(entry, stats, exc)
            return None
        except DnsTemporaryFailure as exc:
            self._retries.dns_failed(entry, stats, exc, self._clock())
            return None
        self._gate.note_address(host, ip)
        stats.dns_failing = False
        return ip

    async def _visit(
        self,
        entry: FrontierEntry,
        stats: HostStats,
        *,
        release_early: bool,
        timer: asyncio.TimerHandle,
        give_back: Callable[[WaitUntil | Held | None], None],
    ) -> None:
        """Resolve, check robots.txt, ask the gate, fetch and record ``entry``.

        The gate is asked once, after robots.txt (whose request, if one was made, counts
        against the host): ``GO`` starts the fetch, ``WaitUntil`` and ``HELD`` put the
        URL back at the head of its host's queue and the host back to the frontier at
        that time, or held by the gate until a slot frees (issue #24 item 5).
        ``give_back`` (the caller's, once per visit) is called as soon as the fetch is
        answered and any backoff it calls for is set: the host may be handed out again
        while the page is parsed and recorded, as politeness counts from the fetch's
        end (``HostGate``); a retry's put-back and a refusal leave it to the caller."""
        host = entry.host
        ip = await self._resolve(entry, stats)
        if ip is None:
            return
        decision = await self._robots.check(entry.url)
        self._gate.set_crawl_delay(host, decision.crawl_delay_s)
        if not decision.allowed:
            # refused without a request: no politeness slot, host or per-IP, is used
            self._retries.disallowed(entry, decision)
            return
        if stats.parked:
            # robots.txt's answer parked the host (a Retry-After of an hour: the side
            # requests' check_park): this URL stays queued in the file for the next
            # run, as the host's others, not put back to wait the hour out
            return
        if decision.fetched and decision.http_status in BACKOFF_STATUSES:
            self._obs.log(
                f"{host}: robots.txt answered {decision.http_status}: backing off before "
                "its pages (crawled under its last good copy, else allowed: robots_on_failure)"
            )
        start = self._clock()
        answer = self._gate.acquire(host, start)
        if not isinstance(answer, Go):
            # its address was used by another host too recently (per-IP limit),
            # robots.txt was just requested, or a side request holds its slot
            self._frontier.push_front(entry)
            give_back(answer)
            return
        if release_early:
            self._give_back(host, start)
        headers = None
        if entry.cookies:
            cookie = redirects.cookie_header(entry.cookies, entry.url)
            if cookie is not None:
                headers = {"Cookie": cookie}
        try:
            try:
                result = await self._fetcher.fetch(
                    entry.url, headers=headers, want_body=self._content.wants_body
                )
            finally:
                timer.cancel()
                self._gate.end_page(host, self._clock())
                self._side.slot_freed()
        except (DnsNotFound, PrivateAddress) as exc:
            # The name changed between our lookup and the connection (DNS rebinding).
            self._retries.refuse(entry, stats, exc)
            return
        except FetchError as exc:
            self._retries.fetch_failed(entry, stats, start, self._clock(), exc)
            return
        outcome = self._retries.answered(entry, stats, start, self._clock(), result)
        if outcome is None:
            return  # put back for a retry
        # counted before the host can be handed out again: a --max-bytes budget then
        # stops at the body that reaches it, not one fetched while it was parsed
        self._obs.bytes += len(result.body)
        give_back(None)
        content = Content() if outcome.retry else await self._content.read(host, stats, result)
        await self._recorder.response(
            entry,
            stats,
            result,
            start,
            failed=outcome.retry,
            extracted=content.extracted,
            rendered=content.rendered,
            parse_error=content.parse_error,
        )

    def _give_back(self, host: str, now: float) -> None:
        """Let the frontier hand ``host`` out again when the gate allows (its one
        deadline, ``HostGate.ready_at``), or, while side requests fill its slots, when
        the last of them ends (``_end_side_request``): no polling."""
        at = self._gate.ready_at(host, now)
        if at is None:
            self._gate.hold(host)
        else:
            self._frontier.release(host, at)

    async def _report_loop(self) -> None:
        interval = self.config.snapshot_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                self._obs.flush_hosts()
            except CrawldeckError as exc:  # the store failed (disk full): stop like a worker
                self._stop_on_error(exc)
                return
            try:
                self._publish()
            except Exception as exc:  # a subscriber's bug: stop cleanly, re-raise from run()
                log.exception("a snapshot subscriber failed")
                if self._crash is None:
                    self._crash = exc
                self.request_stop()
                return

    def _stop_on_error(self, exc: CrawldeckError) -> None:
        """Stop cleanly after ``exc`` (a store write failed: a full disk); the first one is
        re-raised from ``run`` and printed once by the caller (the log line: the Log tab)."""
        if self._crash is None:
            self._obs.log(f"stopping: {exc}", level=logging.WARNING)
            self._crash = exc
        self.request_stop()

    def _publish(self) -> None:
        snap = self.snapshot()
        for callback in self._subscribers:
            callback(snap)

    def statistics(self) -> EngineStatistics:
        """The figures of the engine's parts now (each part's ``statistics()``)."""
        gate, frontier, admission = self._gate, self._frontier, self._admission
        return EngineStatistics(
            gate.statistics(), frontier.statistics(), self._obs.statistics(), admission.statistics()
        )

    @property
    def retried(self) -> int:
        """Failed URLs of earlier runs queued again by this run (``Store.requeue_failed``)."""
        return self._obs.retried

    def query_hosts(self, text: str = "", limit: int = SNAPSHOT_HOSTS) -> tuple[HostRow, ...]:
        """Rows of the known hosts whose key contains ``text`` (``Observer.query_hosts``)."""
        return self._obs.query_hosts(text, limit)

    def host_detail(self, host: str, queue_head: int = 20) -> HostDetail | None:
        """The detail view of ``host``, ``None`` if never seen (``Observer.host_detail``)."""
        return self._obs.host_detail(host, queue_head)

    def snapshot(self) -> CrawlSnapshot:
        """A read-only picture of the crawl now (see ``core.crawl.snapshot``)."""
        return self._obs.snapshot(self._state, self._content.render_stats())
