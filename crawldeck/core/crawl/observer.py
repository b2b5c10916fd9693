"""The observer: what the crawl knows about itself, and the pictures of it.

The engine reports here what happens (a host seen, a fetch started and ended, a page
recorded, a URL blocked, a log line); the observer keeps the per-host figures, the
counters and the recent lists, writes the ``hosts`` rows, and assembles the frozen
``CrawlSnapshot`` the console and the headless summary read (``core.crawl.snapshot``). It
does not decide anything: politeness lives in the host gate (``core.policy.gate``), queues in
the frontier window (``core.policy.window``).

Totals in a snapshot are those of the SQLite file (earlier runs plus what this run
committed: ``Store.pages_added``, ``Store.blocked_added``), so the console, the summary
and the tables agree (issue #10 item 18). ``pages_fetched`` is the one figure counted
as it happens (``max_pages`` counts it, the hosts' ``fetched`` sum to it): the console's
header and progress show it, so they agree with the hosts table (issue #25).
"""

from __future__ import annotations

import heapq
import logging
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from crawldeck.core.config import CrawlConfig
from crawldeck.core.config_checks import HOST_KEYS, HostOverride
from crawldeck.core.crawl.snapshot import (
    BackoffRow,
    BlockedRow,
    Counters,
    CrawlSnapshot,
    CrawlState,
    HostDetail,
    HostRow,
    ResponseRow,
)
from crawldeck.core.crawl.stats import NO_FIGURES, RunFigures, RunTally, run_stats
from crawldeck.core.net.dns import DnsCache
from crawldeck.core.net.robots import RobotsCache
from crawldeck.core.policy.gate import HostGate
from crawldeck.core.policy.politeness import Cap
from crawldeck.core.policy.prioritizer import CASH_ORDERINGS
from crawldeck.core.policy.traps import Verdict
from crawldeck.core.policy.window import FrontierWindow
from crawldeck.core.protocols import ResultSink
from crawldeck.core.records import BlockedRecord, HostRecord, status_mix
from crawldeck.core.render_types import RenderStats

log = logging.getLogger("crawldeck.engine")

#: How many busiest hosts a snapshot carries.
SNAPSHOT_HOSTS = 50
#: How many recent blocked URLs and log lines a snapshot carries.
SNAPSHOT_RECENT = 200
#: Responses remembered per host for the console's detail view.
RECENT_RESPONSES = 10
#: Throughput is measured over this many seconds.
THROUGHPUT_WINDOW_S = 10.0
#: ``hosts.state`` values of a run still going on (a run killed leaves them behind).
_LIVE_STATES = frozenset({"active", "backoff"})


@dataclass(slots=True)
class HostStats:
    """Per-host figures (politeness state lives in the host gate).

    Attributes:
        origin: ``scheme://host[:port]`` (robots.txt's unit, RFC 9309 §2.3).
        fetched: pages recorded (answers and final failures), earlier runs included.
        errors: 5xx answers and failed tries this run.
        in_flight: URLs of the host being processed now (``rendering`` included).
        rendering: those of them past their fetch, rendering or waiting for a browser.
        admitted: URLs of the host admitted to the frontier (all runs).
        demoted, parked, dead, dns_failing: the host's condition (``hosts.state``).
        recent: its last ``RECENT_RESPONSES`` responses, for the detail view.
        saved: its ``hosts`` row as an earlier run left it.
        cut: a fetch of it was cancelled by a stop (its URL stays queued).
        last_error: the reason code of its last try that got no response (``timeout``,
            ``connect``: ``core.errors``), retried or not; ``None`` before one.
        told_slow: the run's log said once that its slow answers spaced its fetches
            (``core.crawl.retries``, ``SLOW_DELAY_S``).
        tally: the run's fetch counters (``Observer.tally``) each recorded fetch is
            counted in; ``None``: none (a ``HostStats`` made outside an observer).
    """

    origin: str
    fetched: int = 0
    errors: int = 0
    in_flight: int = 0
    rendering: int = 0
    admitted: int = 0
    demoted: bool = False
    parked: bool = False
    dead: bool = False
    dns_failing: bool = False
    recent: deque[ResponseRow] | None = None
    saved: HostRecord | None = None
    cut: bool = False
    last_error: str | None = None
    told_slow: bool = False
    tally: RunTally | None = field(default=None, compare=False, repr=False)

    def remember(self, row: ResponseRow) -> None:
        """Keep ``row`` (a page fetch recorded: ``core.crawl.recording``) among the host's
        last ``RECENT_RESPONSES`` responses, and count it in ``tally``."""
        if self.tally is not None:
            self.tally.fetched(row.status, row.elapsed_ms, row.error)
        if self.recent is None:
            self.recent = deque(maxlen=RECENT_RESPONSES)
        self.recent.append(row)


@dataclass(frozen=True, slots=True)
class ObserverStatistics:
    """The observer at one moment (immutable, named fields).

    Attributes:
        hosts: hosts known (seen in a URL, a seed or an earlier run).
        busy_hosts: hosts with a URL being processed now; in_flight: such URLs.
        pages, bytes: pages recorded and their body bytes, all runs (this run's as
            they come).
        changed_hosts: hosts whose ``hosts`` row waits for the next flush.
        recent_blocked, log_lines: entries held for snapshots (at most
            ``SNAPSHOT_RECENT`` each).
        run: this run's counts (``core.crawl.stats.RunFigures``: the run's stats object
            and the Prometheus metrics are made of them).
    """

    hosts: int
    busy_hosts: int
    in_flight: int
    pages: int
    bytes: int
    changed_hosts: int
    recent_blocked: int
    log_lines: int
    run: RunFigures = NO_FIGURES


class Observer:
    """Host figures, counters, recent lists, ``hosts`` rows and snapshots.

    Args:
        config: ``max_pages`` (shown in snapshots).
        clock: the engine's one time source (epoch s).
        store: the result sink (``record_blocked``, ``upsert_host``, the committed
            totals: ``core.protocols.ResultSink``).
        gate: the host gate (politeness views, ready times).
        frontier: the frontier window (queued counts, the ready heap's next hosts).
        robots: the robots.txt cache (status shown per host).
        dns: the DNS cache (pinned addresses, its figures).
    """

    def __init__(
        self,
        config: CrawlConfig,
        clock: Callable[[], float],
        store: ResultSink,
        gate: HostGate,
        frontier: FrontierWindow,
        robots: RobotsCache,
        dns: DnsCache,
    ) -> None:
        self._config = config
        self._clock = clock
        self._store = store
        self._gate = gate
        self._frontier = frontier
        self._robots = robots
        self._dns = dns
        self.hosts: dict[str, HostStats] = {}
        self._dirty: set[str] = set()
        self.busy: set[str] = set()  # hosts with a URL in flight
        self.in_flight = 0
        self.pages = 0  # fetches recorded, all runs (a recrawl's revisits; this run's as they come)
        self.bytes = 0
        self.pages_at_start = 0
        self.bytes_at_start = 0
        self.tally = RunTally()  # this run's recorded fetches (``core.crawl.stats``)
        self.started_at = clock()
        self.ended_at: float | None = None
        self._paused_s = 0.0  # this run's ended pauses (s)
        self._paused_since: float | None = None  # the pause going on, if any (epoch s)
        self.retried = 0  # failed URLs of earlier runs queued again
        self.cut = 0  # fetches a stop cut: their URLs stay queued, out of the frontier
        self._written_live: set[str] = set()  # hosts whose row says active or backoff
        # the committed totals of earlier runs; the store adds this run's
        self._base_totals: Counter[str] = Counter()
        self._base_blocked: Counter[str] = Counter()
        self._blocked_recent: deque[BlockedRow] = deque(maxlen=SNAPSHOT_RECENT)
        self._log_lines: deque[str] = deque(maxlen=SNAPSHOT_RECENT)
        self._capped: set[tuple[str, str]] = set()  # (host, cap's config key) logged
        self._samples: deque[tuple[float, int, int]] = deque()

    # ------------------------------------------------------------ reporting

    def stats(self, host: str, origin: str | None) -> HostStats:
        """``host``'s figures, made on first sight; ``origin`` (``None``: unknown yet,
        ``http://host``) replaces the one first seen while nothing was fetched (a
        seed's ``https`` after a link's ``http``)."""
        stats = self.hosts.get(host)
        if stats is None:
            stats = HostStats(origin or f"http://{host}", tally=self.tally)
            self.hosts[host] = stats
        elif origin is not None and stats.origin != origin and stats.fetched == 0:
            stats.origin = origin
        return stats

    def changed(self, host: str) -> None:
        """``host``'s row is to be written at the next :meth:`flush_hosts`."""
        self._dirty.add(host)

    def unsaved(self, host: str) -> bool:
        """Whether ``host``'s row changed since the last :meth:`flush_hosts` (its
        state, a page count included, is not in the store yet)."""
        return host in self._dirty

    def start(self, host: str, stats: HostStats) -> None:
        """A URL of ``host`` is being processed."""
        stats.in_flight += 1
        self.busy.add(host)
        self.in_flight += 1

    def end(self, host: str, stats: HostStats) -> None:
        """The URL of ``host`` that :meth:`start` reported is done."""
        stats.in_flight -= 1
        if not stats.in_flight:
            self.busy.discard(host)
        self.in_flight -= 1
        self._dirty.add(host)

    def log(self, line: str, level: int = logging.INFO) -> None:
        """Keep ``line`` (one line, no newline) for the Log tab, stamped ``HH:MM:SS``
        (UTC, by the engine's clock)."""
        stamp = datetime.fromtimestamp(self._clock(), UTC).strftime("%H:%M:%S")
        self._log_lines.append(f"{stamp} {line}")
        log.log(level, line)

    def audit(self, line: str) -> None:
        """Keep an audit line (robots.txt treated as allow, demotions) as a warning."""
        self.log(line, level=logging.WARNING)

    def capped(self, host: str, cap: Cap) -> None:
        """A value ``host``'s server asked for was cut to a cap (``core.policy.politeness.Cap``:
        robots.txt's Crawl-delay over ``max_delay_ms``, a Retry-After over
        ``retry_after_max_s``): audit it the first time that cap hits that host, with
        the value asked and the value used; later hits of it on the host add no line
        (issue #22 item 8)."""
        key = (host, cap.setting)
        if key not in self._capped:
            self._capped.add(key)
            self.audit(cap.line(host))

    def block(self, url: str, host: str, verdict: Verdict) -> None:
        """Record a refused URL in ``blocked`` and the recent list; with ``-v`` (DEBUG)
        say it, as Scrapy's "Filtered offsite request" and "Forbidden by robots.txt"
        (issue #25 trial 19: ``-v`` showed the fetches only)."""
        now = self._clock()
        reason = str(verdict.reason)
        self._store.record_blocked(BlockedRecord(url, host, reason, verdict.detail, now))
        self._blocked_recent.append(BlockedRow(now, reason, host, url))
        if log.isEnabledFor(logging.DEBUG):
            detail = f": {verdict.detail}" if verdict.detail else ""
            log.debug("blocked (%s) %s%s", reason, url, detail)

    def restore(
        self,
        counts: dict[str, object],
        mix: dict[str, int],
        total_bytes: int,
        recent_blocked: Iterable[BlockedRecord],
        *,
        fetched: int | None = None,
    ) -> None:
        """Take the totals an earlier run left (``Store.counts``, ``Store.page_totals``),
        its recent blocked URLs, newest first (``Store.recent_blocked``), and its
        fetches, which ``pages_fetched`` counts on from (``core.crawl.resume.fetches_of``;
        ``None``: its ``pages`` rows)."""
        pages = counts.get("pages", 0)
        rows = pages if isinstance(pages, int) else 0
        self.pages = rows if fetched is None else fetched
        self.bytes = total_bytes
        self._base_totals.update(mix)
        self._base_totals["pages"] = rows
        self._base_totals["bytes"] = self.bytes
        blocked = counts.get("blocked", {})
        if isinstance(blocked, dict):
            self._base_blocked.update(blocked)
        for old in recent_blocked:
            self._blocked_recent.append(BlockedRow(old.at, old.reason, old.host, old.url))

    def begin(self) -> None:
        """The run starts now: ``this run`` and throughput count from here."""
        self.started_at = self._clock()
        self._paused_s = 0.0
        if self._paused_since is not None:  # paused before the run began
            self._paused_since = self.started_at
        self.pages_at_start = self.pages
        self.bytes_at_start = self.bytes
        self._samples.clear()
        self._samples.append((self.started_at, self.pages, self.bytes))

    def pause(self, now: float) -> None:
        """The crawl was paused at ``now`` (epoch s): its time stops counting
        (``paused_s``)."""
        if self._paused_since is None:
            self._paused_since = now

    def resume(self, now: float) -> None:
        """The pause (``pause``) ended at ``now`` (epoch s)."""
        if self._paused_since is not None:
            self._paused_s += max(0.0, now - self._paused_since)
            self._paused_since = None

    def paused_s(self, now: float) -> float:
        """Seconds this run has been paused up to ``now`` (epoch s), the pause going
        on included."""
        going = 0.0 if self._paused_since is None else max(0.0, now - self._paused_since)
        return self._paused_s + going

    def statistics(self) -> ObserverStatistics:
        """The observer's figures now."""
        return ObserverStatistics(
            hosts=len(self.hosts),
            busy_hosts=len(self.busy),
            in_flight=self.in_flight,
            pages=self.pages,
            bytes=self.bytes,
            changed_hosts=len(self._dirty),
            recent_blocked=len(self._blocked_recent),
            log_lines=len(self._log_lines),
            run=self.run_figures(),
        )

    def run_figures(self) -> RunFigures:
        """This run's counts now: the fetches recorded (``tally``), the refusals the
        store committed (``Store.blocked_added``), the robots.txt files requested.
        O(statuses + reasons)."""
        tally = self.tally
        return RunFigures(
            pages=self.pages - self.pages_at_start,
            body_bytes=self.bytes - self.bytes_at_start,
            responses_by_status=tuple(sorted(tally.by_status.items())),
            transport_errors=tuple(sorted(tally.errors.items())),
            blocked=tuple(sorted((k, v) for k, v in self._store.blocked_added().items() if v)),
            robots_txt_fetched=self._robots.origins(),
            latency=tally.latency(),
            retries=tuple(sorted(tally.retries.items())),
            links_cut=tally.links_cut,
        )

    def run_stats(self, run_id: int | None, outcome: str) -> dict[str, Any]:
        """The stats object of the run ``run_id`` (``None``: the store keeps no runs)
        that ended (``ended_at``) with
        ``outcome`` (``core.crawl.stats.run_stats``): this run's figures, the store's
        committed ones (``pages_added``, ``blocked_added``: call it after a flush)."""
        ended = self.ended_at if self.ended_at is not None else self._clock()
        return run_stats(
            run_id=run_id,
            finish_reason=outcome,
            started_at=self.started_at,
            finished_at=ended,
            figures=self.run_figures(),
            added=self._store.pages_added(),
            retried=self.retried,
            paused_s=self.paused_s(ended),
        )

    # ------------------------------------------------------------ hosts rows

    def host_state(self, host: str, stats: HostStats, now: float, *, final: bool) -> str:
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
        left = self._frontier.queued(host) > 0 or stats.in_flight > 0 or stats.cut
        if final and not left:
            return "done"
        if stats.demoted:
            return "demoted"
        if self._gate.in_backoff(host, now):
            return "backoff"
        return "queued" if final else "active"

    def flush_hosts(self, *, final: bool = False) -> None:
        """Write the state of the hosts that changed since the last flush; ``final``
        (the run is over): also of the hosts an earlier run left in a state that is
        not final (it was killed), each with its state at the end. A host this run did
        not touch keeps its row; one whose robots.txt this run did not fetch keeps its
        saved robots.txt columns.

        Raises:
            StoreError: the store failed (a full disk).
        """
        now = self._clock()
        hosts: Iterable[str] = self._dirty
        if final:
            # and the hosts this run wrote in a live state (a host left ``active`` by a
            # flush while it waited out its delay kept it: issue #25 trial 11)
            hosts = (
                self._dirty
                | self._written_live
                | {
                    host
                    for host, stats in self.hosts.items()
                    if stats.saved is None or stats.saved.state in _LIVE_STATES
                }
            )
        for host in hosts:
            record = self._host_record(host, now, final=final)
            self._store.upsert_host(record)
            if record.state in _LIVE_STATES:
                self._written_live.add(host)
            else:
                self._written_live.discard(host)
        self._dirty.clear()

    def _host_record(self, host: str, now: float, *, final: bool) -> HostRecord:
        stats = self.hosts[host]
        view = self._gate.view(host, now)
        robots = self._robots.entry(stats.origin)
        saved = stats.saved
        if robots is not None:
            robots_status: str | None = robots.status
            robots_expires: float | None = robots.expires_at
            crawl_delay_ms = None if robots.crawl_delay_s is None else robots.crawl_delay_s * 1000
        elif saved is not None:
            robots_status = saved.robots_status
            robots_expires = saved.robots_expires_at
            crawl_delay_ms = saved.crawl_delay_ms
        else:
            robots_status = robots_expires = crawl_delay_ms = None
        return HostRecord(
            host=host,
            ip=self._dns.pinned(host) or (saved.ip if saved is not None else None),
            robots_status=robots_status,
            robots_expires_at=robots_expires,
            crawl_delay_ms=crawl_delay_ms,
            delay_ms=view.delay_ms,
            backoff_attempts=view.backoff_attempts,
            backoff_until=view.backoff_until,
            pages_fetched=stats.fetched,
            state=self.host_state(host, stats, now, final=final),
            backoff_started=view.backoff_started,
            learnt_delay_ms=view.learnt_delay_ms or None,
        )

    # -------------------------------------------------------------- pictures

    def counters(self) -> Counters:
        """The crawl's counters now (totals of the SQLite file)."""
        now = self._clock()
        dns = self._dns.stats()
        totals = self._base_totals + Counter(self._store.pages_added())
        blocked = self._base_blocked + Counter(self._store.blocked_added())
        mix = status_mix(totals)
        return Counters(
            pages=totals["pages"],
            bytes=totals["bytes"],
            errors=mix.get("error", 0),
            queued=self._frontier.total() + self.cut,
            in_flight=self.in_flight,
            hosts_known=len(self.hosts),
            # hosts with queued URLs plus hosts whose last URL is in flight: no walk
            # over every known host
            hosts_active=self._frontier.hosts_active(self.busy),
            hosts_backoff=self._gate.count_in_backoff(now),
            blocked=dict(blocked),
            status_mix=mix,
            dns_lookups=dns.lookups,
            dns_queries=dns.queries,
            dns_hit_ratio=dns.hit_ratio,
            duplicates=totals["duplicates"],
            near_duplicates=totals["near_duplicates"],
            queued_by_priority=self._frontier.by_priority(),
            ordering=self._config.ordering,
            spilled=self._frontier.spilled,
        )

    def host_row(self, host: str, now: float) -> HostRow:
        """The console row of one known host now."""
        stats = self.hosts[host]
        view = self._gate.view(host, now)
        robots = self._robots.entry(stats.origin)
        return HostRow(
            host=host,
            queued=self._frontier.queued(host),
            in_flight=stats.in_flight - stats.rendering,
            fetched=stats.fetched,
            errors=stats.errors,
            delay_ms=view.delay_ms,
            delay_source=view.delay_source,
            tokens=view.tokens,
            # its politeness time even while its slots are taken (ready_at is None then)
            next_fetch_in_s=self._gate.next_fetch_at(host, now) - now,
            robots_status=robots.status if robots else "unknown",
            ip=self._dns.pinned(host),
            state=self.host_state(host, stats, now, final=self.ended_at is not None),
            rendering=stats.rendering,
        )

    def query_hosts(self, text: str = "", limit: int = SNAPSHOT_HOSTS) -> tuple[HostRow, ...]:
        """Rows of the known hosts whose key contains ``text`` (case-insensitive), the
        busiest first (in flight, then queued, then fetched), at most ``limit``.

        Walks every known host: meant for a filter the operator types, not for every
        refresh (snapshots carry the top rows already).
        """
        now = self._clock()
        needle = text.lower()
        queued = self._frontier.queued
        ranked = heapq.nlargest(
            limit,
            (
                (stats.in_flight, queued(host), stats.fetched, host)
                for host, stats in self.hosts.items()
                if needle in host
            ),
        )
        return tuple(self.host_row(host, now) for *_, host in ranked)

    def host_detail(self, host: str, queue_head: int = 20) -> HostDetail | None:
        """The detail view of ``host`` (``None`` for a host the crawl has never seen)."""
        stats = self.hosts.get(host)
        if stats is None:
            return None
        now = self._clock()
        robots = self._robots.entry(stats.origin)
        head = self._frontier.peek(host, queue_head)
        ordering = self._config.ordering
        return HostDetail(
            row=self.host_row(host, now),
            queue_head=tuple(e.url for e in head),
            queue_scores=tuple(e.score for e in head) if ordering in CASH_ORDERINGS else (),
            queue_inlinks=tuple(e.inlinks for e in head) if ordering == "opic-inlinks" else (),
            robots_rules=tuple(robots.rules) if robots else (),
            crawl_delay_s=robots.crawl_delay_s if robots else None,
            robots_why=robots.detail if robots else None,
            robots_http=robots.http_status if robots else None,
            robots_expires_in_s=max(0.0, robots.expires_at - now) if robots else None,
            responses=tuple(stats.recent or ()),
            overrides=_overrides(self._config.override(host)),
        )

    def snapshot(self, state: CrawlState, render: RenderStats | None) -> CrawlSnapshot:
        """A read-only picture of the crawl now (see ``core.crawl.snapshot``), in ``state``,
        with the render pool's figures (``None``: rendering is off)."""
        now = self._clock()
        self._samples.append((now, self.pages, self.bytes))
        while self._samples and now - self._samples[0][0] > THROUGHPUT_WINDOW_S:
            self._samples.popleft()
        t0, p0, b0 = self._samples[0]
        span = now - t0
        pages_per_s = (self.pages - p0) / span if span > 0 else 0.0
        bytes_per_s = (self.bytes - b0) / span if span > 0 else 0.0
        # The candidates are the hosts in flight and the hosts next in the ready heap,
        # so a snapshot costs O(concurrency + back queues), not O(known hosts).
        candidates = self.busy.union(self._frontier.soonest(SNAPSHOT_HOSTS))
        queued = self._frontier.queued
        busy = heapq.nlargest(
            SNAPSHOT_HOSTS,
            ((self.hosts[host].in_flight, queued(host), host) for host in candidates),
        )
        rows = [self.host_row(host, now) for _, _, host in busy]
        backoff_rows = []
        for host in self._gate.backing_off():
            view = self._gate.view(host, now)
            if view.backoff_attempts == 0:
                continue
            stats = self.hosts[host]
            backoff_rows.append(
                BackoffRow(
                    host=host,
                    attempts=view.backoff_attempts,
                    last_status=view.last_status,
                    retry_after_s=view.retry_after_s,
                    backoff_until=view.backoff_until,
                    demoted=stats.demoted,
                    parked=stats.parked,
                    last_error=stats.last_error if view.last_status is None else None,
                )
            )
        return CrawlSnapshot(
            at=now,
            started_at=self.started_at,
            state=state,
            counters=self.counters(),
            pages_per_s=pages_per_s,
            bytes_per_s=bytes_per_s,
            window_s=THROUGHPUT_WINDOW_S,
            max_pages=self._config.max_pages,
            max_time_s=self._config.max_time_s,
            paused_s=self.paused_s(now),
            max_bytes=self._config.max_bytes,
            pages_fetched=self.pages,
            bytes_fetched=self.bytes,
            pages_this_run=self.pages - self.pages_at_start,
            bytes_this_run=self.bytes - self.bytes_at_start,
            render=render,
            ended_at=self.ended_at,
            retried=self.retried,
            hosts=tuple(rows),
            backoff=tuple(backoff_rows),
            blocked=tuple(self._blocked_recent),
            log=tuple(self._log_lines),
        )


def _overrides(entry: HostOverride | None) -> tuple[tuple[str, str], ...]:
    """``(key, value)`` of each setting ``entry`` (a host's ``[hosts."..."]`` table)
    sets, in ``HOST_KEYS`` order; empty for ``None``."""
    if entry is None:
        return ()
    return tuple(
        (key, str(getattr(entry, key))) for key in HOST_KEYS if getattr(entry, key) is not None
    )


__all__ = ["HostStats", "Observer", "ObserverStatistics"]
