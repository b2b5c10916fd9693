"""Read-only pictures of a running crawl, published by the engine for the UIs.

Plain frozen dataclasses: a UI (the Textual console, the headless reporter) reads
them and never reaches into the engine's state. Times are epoch seconds (float);
durations carry their unit in the name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from crawldeck.core.policy.prioritizer import DEFAULT_ORDERING
from crawldeck.core.render_types import RenderStats

CrawlState = Literal["running", "paused", "stopping", "finished", "stopped"]


@dataclass(frozen=True, slots=True)
class HostRow:
    """One host's back queue and politeness state.

    Attributes:
        host: the host key (``example.com`` or ``127.0.0.1:8080``).
        queued: URLs of this host waiting in the frontier.
        in_flight: fetches to this host under way (its pages past their fetch,
            rendering, are in ``rendering``).
        fetched: pages fetched from this host in this crawl (all runs).
        errors: fetches that ended in a network error or a 5xx status.
        delay_ms: the politeness delay in force.
        delay_source: ``default``, ``crawl_delay``, ``adaptive``, ``rate_limit`` (a
            delay learnt from 429/503 answers) or ``backoff``.
        tokens: tokens left in the host's bucket.
        next_fetch_in_s: seconds until the host may be fetched again (0: now).
        robots_status: ``unknown``, ``ok``, ``missing``, ``unreachable`` or
            ``redirect_limit`` (see ``core.net.robots``).
        ip: the address the host's connections go to (``None`` until resolved).
        state: the ``hosts.state`` of the host now (``active``, ``backoff``,
            ``parked``, ``demoted``, ``dead``, ``dns_failing``; ``done`` or ``queued``
            once the run is over).
        rendering: pages of this host fetched and now rendering or waiting for a
            browser (0 with rendering off).
    """

    host: str
    queued: int
    in_flight: int
    fetched: int
    errors: int
    delay_ms: float
    delay_source: str
    tokens: float
    next_fetch_in_s: float
    robots_status: str
    ip: str | None = None
    state: str = "active"
    rendering: int = 0


@dataclass(frozen=True, slots=True)
class BackoffRow:
    """A host in backoff after 429/503 or network errors.

    Attributes:
        host: the host key.
        attempts: consecutive backoff attempts.
        last_status: the last HTTP status (``None``: a network error).
        retry_after_s: the last Retry-After in seconds, if the server sent one.
        backoff_until: epoch seconds until which nothing is sent to the host.
        demoted: the host was moved to the lowest-priority front queue.
        parked: the host answered only 429/503 (or nothing) ``park_after_backoffs``
            times in a row: nothing more is sent to it this run.
        last_error: with no ``last_status``, the reason code of the host's last try
            that got no response (``timeout``, ``connect``, ``connection_lost``:
            ``core.errors``); ``None`` otherwise.
    """

    host: str
    attempts: int
    last_status: int | None
    retry_after_s: float | None
    backoff_until: float | None
    demoted: bool
    parked: bool = False
    last_error: str | None = None


@dataclass(frozen=True, slots=True)
class BlockedRow:
    """One refused URL: ``at`` (epoch s), ``reason`` (a ``BlockReason`` value), host, url."""

    at: float
    reason: str
    host: str
    url: str


@dataclass(frozen=True, slots=True)
class Counters:
    """Totals of the crawl so far (all runs on the same SQLite file).

    Attributes:
        pages: pages fetched (any status, errors included).
        bytes: body bytes received (decoded).
        errors: fetches that ended without an HTTP response.
        queued: URLs waiting in the frontier.
        in_flight: fetches under way.
        hosts_known: hosts with at least one URL admitted.
        hosts_active: hosts with queued or in-flight URLs.
        hosts_backoff: hosts in backoff now.
        blocked: refused URLs by reason.
        status_mix: pages by HTTP status class (``2xx``, ``3xx``, ``4xx``, ``5xx``, ``error``).
        dns_lookups: name lookups asked of the DNS cache (every fetch makes one).
        dns_queries: queries the cache sent to a DNS server (its misses).
        dns_hit_ratio: answers from the cache / lookups (0.0 before any lookup).
        duplicates: pages whose payload digest an earlier page had (``duplicate_of``).
        near_duplicates: HTML pages within SimHash distance 3 of an earlier page of
            their host (``near_duplicate_of``) that are not exact duplicates.
        queued_by_priority: URLs queued in memory per frontier priority, index 0 the
            highest (``core.policy.prioritizer``: under ``bfs`` and ``larger-sites-first``
            seeds and redirect targets 0, links 1, demoted hosts 2; under ``opic``
            priority p holds the URLs whose cash is in [2^-p, 2^(1-p)), the last one
            the demoted hosts').
        spilled: URLs of ``queued`` waiting in SQLite only (``core.policy.window``).
        ordering: the crawl's ``ordering`` (``core.policy.prioritizer.ORDERINGS``).
    """

    pages: int = 0
    bytes: int = 0
    errors: int = 0
    queued: int = 0
    in_flight: int = 0
    hosts_known: int = 0
    hosts_active: int = 0
    hosts_backoff: int = 0
    blocked: dict[str, int] = field(default_factory=dict)
    status_mix: dict[str, int] = field(default_factory=dict)
    dns_lookups: int = 0
    dns_queries: int = 0
    dns_hit_ratio: float = 0.0
    duplicates: int = 0
    near_duplicates: int = 0
    queued_by_priority: tuple[int, ...] = ()
    spilled: int = 0
    ordering: str = DEFAULT_ORDERING


@dataclass(frozen=True, slots=True)
class CrawlSnapshot:
    """Everything a UI shows, at one instant.

    Attributes:
        at: when it was taken (epoch s).
        started_at: when this run started (epoch s).
        state: ``running``, ``paused``, ``stopping``, ``finished`` or ``stopped``.
        counters: the totals.
        pages_per_s, bytes_per_s: throughput over the last ``window_s`` seconds.
        window_s: the throughput window in seconds.
        max_pages: the page cap, if any (for progress and ETA).
        hosts: the busiest hosts (top N by in-flight, then queued), not every host.
        backoff: the hosts in backoff.
        blocked: the most recent refused URLs, newest last.
        log: the most recent warning and audit lines, newest last.
        pages_this_run: pages fetched since this run started (``counters.pages``
            counts every run on the file).
        bytes_this_run: their decoded body bytes (``bytes_fetched`` counts every run).
        render: the render pool (busy / idle / queued, pages rendered, memory), or
            ``None`` when rendering is off (``render = never`` or no Chromium).
        ended_at: when this run's crawl ended (epoch s), ``None`` while it runs: a
            console left open after the end does not count as crawl time.
        retried: URLs that had failed in earlier runs (5xx, 429, timeouts, lost
            connections, DNS failures) and were queued again by this run.
        max_time_s: the run's time budget in seconds (``max_time_s``), if any.
        paused_s: seconds this run has been paused (``Engine.pause``) up to ``at``:
            ``elapsed_s`` leaves them out, as the time budget does.
        max_bytes: the body bytes budget over all runs (``max_bytes``), if any.
        pages_fetched: pages fetched, all runs (the hosts' ``fetched`` summed, what
            ``max_pages`` counts), counted as each is recorded: ahead of
            ``counters.pages`` by the pages waiting for the store's next commit;
            ``None``: not known (``pages_done`` is then ``counters.pages``).
        bytes_fetched: the pages' decoded body bytes, all runs, counted as each is
            recorded (``pages_fetched``'s bytes); ``None``: not known (``bytes_done`` is
            then ``counters.bytes``).
    """

    at: float
    started_at: float
    state: CrawlState
    counters: Counters
    pages_per_s: float
    bytes_per_s: float
    window_s: float
    max_pages: int | None
    hosts: tuple[HostRow, ...]
    backoff: tuple[BackoffRow, ...]
    blocked: tuple[BlockedRow, ...]
    log: tuple[str, ...]
    pages_this_run: int = 0
    bytes_this_run: int = 0
    render: RenderStats | None = None
    ended_at: float | None = None
    retried: int = 0
    max_time_s: float | None = None
    paused_s: float = 0.0
    max_bytes: int | None = None
    pages_fetched: int | None = None
    bytes_fetched: int | None = None

    @property
    def pages_done(self) -> int:
        """Pages fetched so far, all runs: ``pages_fetched``, else ``counters.pages``
        (the console's header and progress: issue #25, the header's count trailed the
        hosts table's by the pages not yet committed)."""
        return self.counters.pages if self.pages_fetched is None else self.pages_fetched

    @property
    def bytes_done(self) -> int:
        """Body bytes fetched so far, all runs: ``bytes_fetched``, else
        ``counters.bytes`` (the charts' rates: the committed figure grows a commit at a
        time, and a chart of it alternated full and empty points; issue #25 trial 10)."""
        return self.counters.bytes if self.bytes_fetched is None else self.bytes_fetched

    @property
    def elapsed_s(self) -> float:
        """Seconds this run has crawled: from its start to now, or to its end, paused
        time (``paused_s``) left out, as ``max_time_s`` counts (and Heritrix's elapsed
        time)."""
        end = self.at if self.ended_at is None else min(self.at, self.ended_at)
        return max(0.0, end - self.started_at - self.paused_s)


@dataclass(frozen=True, slots=True)
class ResponseRow:
    """One recent fetch of a host: ``at`` (epoch s), url, HTTP status (``None``: no
    response), ``elapsed_ms`` and ``error`` (a ``pages.error`` text or ``None``)."""

    at: float
    url: str
    status: int | None
    elapsed_ms: float
    error: str | None


@dataclass(frozen=True, slots=True)
class HostDetail:
    """What the console's host detail view shows for one host.

    Attributes:
        row: the host's ``HostRow``.
        queue_head: the next URLs of its back queue, next first.
        robots_rules: ``(allow|disallow, pattern)`` of the robots.txt group that
            applies to our token (RFC 9309 §2.2.1), empty when none was fetched.
        crawl_delay_s: the robots.txt Crawl-delay, if any.
        responses: the host's last responses, newest last.
        overrides: ``(key, value)`` of each setting its ``[hosts."..."]`` table sets
            (``delay_ms``, ``max_pages``, ``render``; values as written), empty when
            it has none.
        queue_scores: the OPIC cash of each URL of ``queue_head`` (``opic`` and
            ``opic-inlinks``; empty under the other orderings).
        queue_inlinks: the in-links of each URL of ``queue_head`` (``opic-inlinks``;
            empty under the other orderings).
        robots_why: what the robots.txt fetch got, as the robots cache words it
            (``312 bytes``, ``connect``, ``301 without a usable Location``; its state
            is ``row.robots_status``); ``None`` before robots.txt was asked.
        robots_http: the robots.txt answer's HTTP status, ``None`` without a response.
        robots_expires_in_s: seconds (>= 0) until robots.txt is asked again, ``None``
            before it was asked.
    """

    row: HostRow
    queue_head: tuple[str, ...]
    robots_rules: tuple[tuple[str, str], ...]
    crawl_delay_s: float | None
    responses: tuple[ResponseRow, ...]
    overrides: tuple[tuple[str, str], ...] = ()
    queue_scores: tuple[float, ...] = ()
    queue_inlinks: tuple[int, ...] = ()
    robots_why: str | None = None
    robots_http: int | None = None
    robots_expires_in_s: float | None = None
