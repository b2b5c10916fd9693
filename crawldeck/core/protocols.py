"""The seams of the engine: what it needs from its collaborators, as ``typing.Protocol``s.

The engine (``core.crawl.engine``) holds the policies of a crawl (admission, the host gate,
the frontier) and does the awaits; everything that reaches the outside world comes in
through one of these small protocols, so a test can hand it an in-process fake (a
scripted site, a virtual clock) and a later capability (a cluster store, a content
store) can hand it another implementation (issue #11, as httpx's one-method transport:
``httpx/_transports/base.py``).

* ``Fetcher``: one GET, no redirect followed (``core.net.fetcher.AiohttpFetcher`` is the
  aiohttp one; ``tests/fakesite.py`` serves a scripted site in process).
* ``Clock``: the one time source, seconds since the epoch as ``float``.
* ``CrawlFrontier``: the URLs waiting, by host, ready by time (``core.policy.window``'s
  ``FrontierWindow``: Mercator's queues in memory, their tail in SQLite; a frontier
  shared by workers in Redis comes next, issue #12).
The store is split by the roles it plays (issue #24 item 4), each implemented natively
by the stores that play it (``core.storage.store.Store``, SQLite; ``core.cluster.store.
ClusterStore``, Redis, for a worker of a cluster crawl); a store that does not play a
role does not offer it, and ``core.crawl.assembly`` asks once (``CrawlStore.roles``):

* ``ResultSink``: where a crawl's results go, one call per page, refusal or state
  change, none of them waiting for a commit (both stores; the cluster collector's
  recorder too).
* ``SpillStore``: where the URLs the frontier window does not keep wait, read back
  with an ``await`` (both: SQLite in a thread of its own, Redis on the loop).
* ``CrawlStore``: what every engine's store is: a ``ResultSink`` and a
  ``SpillStore`` with back-pressure (``room``), ``drain`` and ``roles``.
* The optional roles, in ``StoreRoles``: ``RunLog`` (``runs`` rows), ``KeyStore``
  (the seen set's exact check), ``CashSink`` (OPIC cash of waiting URLs, issue #15),
  ``ScoreKeeper`` (the credits of URLs held in memory), ``LocalHistory`` (the earlier
  runs in the crawl's own file: resume, recrawl, sitemaps, near duplicates, WARC), and
  a ``WarcHome``. ``Store`` plays all but the WARC home; ``ClusterStore`` the cash
  sink (under a cash ordering) and the WARC home (with ``--warc``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from crawldeck.core.records import (
    BlockedRecord,
    BodySink,
    Counts,
    FetchResult,
    FrontierRow,
    FrontierState,
    HostRecord,
    PageRecord,
    SitemapRecord,
    SitemapUrlRecord,
    WarcHome,
)

if TYPE_CHECKING:
    from crawldeck.core.policy.frontier_entry import FrontierEntry
    from crawldeck.core.policy.window import WindowStatistics

#: The one time source, seconds since the epoch: in production ``core.clock.LoopClock``
#: (the running loop's clock, aligned to the epoch once), in tests a fake or the virtual
#: clock (``loop.time`` of a virtual-time loop). Every ``now`` the engine hands its parts
#: comes from it, and the loop's timers run on the same clock (issue #24 item 6).
Clock = Callable[[], float]


class Fetcher(Protocol):
    """The HTTP edge: one GET per call, redirects not followed, body cut at a byte cap.

    Implementations translate their own errors into ``core.errors`` types
    (``FetchError`` subclasses with ``reason`` and ``retryable``) where they enter.
    """

    async def fetch(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        headers: Mapping[str, str] | None = None,
        want_body: Callable[[str], bool] | None = None,
        on_body: BodySink | None = None,
    ) -> FetchResult:
        """GET ``url`` once (see ``core.net.fetcher.AiohttpFetcher.fetch`` for every argument).

        Args:
            url: an absolute http(s) URL cleaned by ``core.policy.urls.clean``, sent as it is.
            max_bytes: the cap on the decoded body in bytes (``None``: the config's
                ``max_body_bytes``); a longer body is cut and ``truncated``.
            headers: extra request headers for this request only (a chain's Cookie).
            want_body: called with the media type before the body is read; ``False``
                skips the body (``skipped=True``, ``body=b""``).
            on_body: streams the decoded body to it in chunks of at most 64 KiB
                instead of holding it (``body=b""``); it returns ``False`` to stop.

        Returns:
            the response, whatever its status (3xx, 4xx and 5xx are results).

        Raises:
            FetchError: no usable response (timeouts, lost connections, malformed
                responses, DNS errors and ``PrivateAddress`` at connection time).
        """
        ...

    async def aclose(self) -> None:
        """Close every connection; no fetch may start afterwards."""
        ...


class CrawlFrontier(Protocol):
    """The frontier as the engine's workers use it (times are epoch seconds).

    A host popped is checked out until ``release``; ``push_front`` puts a URL back at
    the head of its host's queue (a URL whose host was not ready after all; a retry goes
    to the tail, ``FrontierWindow.push_back``).
    """

    def pop(self, now: float) -> FrontierEntry | None:
        """The next URL whose host is ready at ``now``, or ``None``."""
        ...

    def bring_in(self) -> None:
        """Nothing is ready: start bringing in URLs kept elsewhere (spilled, shared)."""
        ...

    async def drain(self) -> bool:
        """Nothing is queued here and nothing in flight: bring in every URL kept
        elsewhere and wait for it; ``False`` when none came."""
        ...

    async def settle(self) -> None:
        """Wait until nothing is being brought in (the run ends)."""
        ...

    def save_credits(self) -> None:
        """The run ends: write what the URLs queued in memory gathered of the
        ordering's cash and in-links where they are kept (``FrontierWindow``)."""
        ...

    def statistics(self) -> WindowStatistics:
        """The frontier's figures now."""
        ...

    @property
    def spilled(self) -> int:
        """URLs kept elsewhere (not in memory)."""
        ...

    def next_ready_at(self) -> float | None:
        """When the next host is ready, ``None`` when none is queued."""
        ...

    def push_front(self, entry: FrontierEntry) -> None:
        """``entry`` first in its host's queue."""
        ...

    def release(self, host: str, at: float) -> None:
        """``host`` may be popped again from ``at`` on."""
        ...

    def __len__(self) -> int:
        """URLs queued in memory."""
        ...


class ResultSink(Protocol):
    """Where the crawl's results go (``core.storage.store.Store`` documents each call).

    Every call queues its write and returns at once; the writes of one call are
    committed together, in call order. The ``*_added`` figures count what was
    committed, so a caller's totals agree with the tables.
    """

    def enqueue_urls(self, rows: Sequence[FrontierRow]) -> None:
        """New frontier rows (a known key keeps its row)."""
        ...

    def record_page(
        self,
        page: PageRecord,
        *,
        key: str,
        links: Sequence[tuple[str, str]],
        new_rows: Sequence[FrontierRow],
        state: Literal["done", "failed", "queued"],
        next_url: str | None = None,
        next_host: str | None = None,
        redirects: Sequence[str] = (),
        anchors: Mapping[str, str] | None = None,
    ) -> None:
        """A fetched page, its links (and their anchor text by target URL), the rows
        of what it found and its frontier row's new state (``queued`` with
        ``next_url``: its redirect chain goes on)."""
        ...

    def fail_urls(self, urls: Sequence[tuple[str, str]], error: str) -> None:
        """``(key, url)`` frontier rows (a redirect chain's hops) failed with ``error``."""
        ...

    def record_blocked(self, rec: BlockedRecord) -> None:
        """A refused URL (a repeat adds nothing)."""
        ...

    def mark(
        self,
        key: str,
        state: FrontierState,
        *,
        attempts: int | None = None,
        available_at: float | None = None,
    ) -> None:
        """A frontier row's new state (a retry: ``queued`` with its attempts)."""
        ...

    def upsert_host(self, rec: HostRecord) -> None:
        """A host's row (politeness state, robots.txt, figures)."""
        ...

    def record_sitemap(self, rec: SitemapRecord, entries: Sequence[SitemapUrlRecord]) -> None:
        """A sitemap file read, and what it says of each URL it lists."""
        ...

    def pages_added(self) -> dict[str, int]:
        """Pages, bytes and status classes committed since the sink was opened."""
        ...

    def blocked_added(self) -> dict[str, int]:
        """Refused URLs committed since the sink was opened, by reason."""
        ...


class SpillStore(Protocol):
    """Where the URLs the frontier window could not keep in memory wait (spilled):
    ``core.storage.store.Store`` (SQLite rows in state ``spilled``, read in a thread) and
    ``core.cluster.store.ClusterStore`` (Redis queues, read on the loop under the
    host's lease)."""

    async def read_spilled(
        self, host: str, after: int, limit: int, *, within_s: float = 0.0
    ) -> tuple[list[FrontierRow], int]:
        """Up to ``limit`` spilled rows of ``host`` after the read-back position
        ``after`` (``priority * SPILL_SEQ_SPAN + seq``), best priority first, oldest
        first within one, writes made before the call included; and the position of
        the last one (``after`` when none, or when the store keeps no positions).
        ``within_s`` (s): how long the read may wait to share a round trip with other
        I/O (a store whose reads are remote; a local one ignores it). Never two reads
        at once (``core.policy.window.FrontierWindow``).

        Raises:
            StoreError: the read failed.
        """
        ...


class CrawlStore(ResultSink, SpillStore, Protocol):
    """The store an ``Engine`` runs over: the results, back-pressure, the spilled
    URLs, and the optional roles it plays (``roles``, asked once when the crawl is
    assembled: ``core.crawl.assembly``). ``core.storage.store.Store`` (SQLite, resumable) plays
    them all; ``core.cluster.store.ClusterStore`` (a cluster worker's, over Redis)
    the cash sink only, and has a WARC home when the worker writes WARC files."""

    async def room(self) -> bool:
        """Wait while the store's writes are too far behind; ``True`` if it waited.

        Raises:
            StoreError: the store failed (a write could not be committed or sent).
        """
        ...

    async def drain(self) -> None:
        """Return once every write made before the call is committed (or sent).

        Raises:
            StoreError: a write failed, or the store is closed.
        """
        ...

    def roles(self) -> StoreRoles:
        """The optional roles this store plays (the same answer every call)."""
        ...


class RunLog(Protocol):
    """A store that keeps a row per run (``runs``: ``core.storage.store.Store``; a cluster
    crawl's runs are its coordinator's, in the crawl file)."""

    def begin_run(self, config: Mapping[str, Any], *, started_at: float | None = None) -> int:
        """A run starts with ``config`` at ``started_at`` (epoch s; ``None``: now): its
        id (queued, nothing waits)."""
        ...

    def end_run(
        self,
        run_id: int,
        status: str,
        *,
        stats: Mapping[str, Any] | None = None,
        finished_at: float | None = None,
    ) -> None:
        """The run ``run_id`` ended with ``status`` at ``finished_at`` (epoch s;
        ``None``: now) and its figures ``stats`` (``core.crawl.stats.run_stats``;
        ``None``: none). Queued, nothing waits."""
        ...


class KeyStore(Protocol):
    """A store that answers exactly whether a dedupe key was ever admitted
    (``core.storage.store.Store``: the ``frontier`` table); the seen set asks it when its
    Bloom filter says "maybe" (``core.policy.seen.SeenSet``). A cluster worker has none:
    Redis's seen set decides when the URL is pushed."""

    def contains(self, key: str) -> bool:
        """Whether ``key`` is in the frontier, pending writes included (called in a
        thread by ``SeenSet.seen_among``, possibly in several at once).

        Raises:
            StoreError: the read failed.
        """
        ...


class CashSink(Protocol):
    """A store that keeps the OPIC cash of the URLs waiting in it (``core.policy.prioritizer``,
    issue #15: ``Store.add_scores`` in SQLite, ``ClusterStore.add_scores`` in Redis)."""

    def add_scores(self, scores: Sequence[tuple[str, float]]) -> None:
        """Add each ``(dedupe key, cash)`` to the URL ``key`` if it still waits (cash: a
        ``float``, a share of a fetched page's); a URL fetched already, or unknown, is
        left as it is. Queues the write and returns at once."""
        ...


class ScoreKeeper(Protocol):
    """A store whose spilled URLs are those not in memory, so the cash and in-links
    a URL gathered in memory are written when it leaves memory
    (``FrontierWindow(keep_credits=...)``, ``Store.set_scores``). Without one, every
    credit goes through ``CashSink.add_scores`` (a cluster's Redis entries stand for
    the URLs held in memory too)."""

    def set_scores(self, scores: Sequence[tuple[str, float, int]]) -> None:
        """Set each ``(key, cash, inlinks)`` on its URL, whatever its state; queued."""
        ...


class LocalHistory(Protocol):
    """A store that holds the crawl's earlier runs in a file of its own
    (``core.storage.store.Store``): what resume (``core.crawl.resume.restore``), recrawl
    (``core.crawl.recrawl.validators_of``), the sitemaps, the near-duplicate index and the
    WARC writer read back. ``core.storage.store.Store`` documents each call; every read sees
    committed rows and raises ``StoreError`` when it fails."""

    @property
    def path(self) -> Path:
        """The crawl file (WARC files go beside it)."""
        ...

    def has_crawl(self) -> bool:
        """Whether an earlier run left frontier rows (the crawl resumes)."""
        ...

    def last_config(self) -> dict[str, Any] | None:
        """The config of the last run, ``None`` before the first."""
        ...

    def seed_urls(self) -> list[str]:
        """The seeds of the crawl (depth 0), in order."""
        ...

    def requeue_failed(self) -> dict[str, int]:
        """Put the URLs that failed transiently back; block until committed."""
        ...

    def iter_keys(self) -> Iterator[str]:
        """Every dedupe key of the frontier."""
        ...

    def host_counts(self) -> dict[str, int]:
        """Pages per host key."""
        ...

    def fetch_records(self) -> int:
        """Recorded fetches of every run (``page_versions`` rows)."""
        ...

    def fetches_by_host(self) -> dict[str, int]:
        """Recorded fetches of every run per host key."""
        ...

    def counts(self) -> Counts:
        """Row counts by table and state."""
        ...

    def load_frontier(self) -> Iterator[FrontierRow]:
        """The queued and in-flight rows in insertion order."""
        ...

    def load_excluded(self) -> Iterator[FrontierRow]:
        """The rows an earlier run's include / exclude blocked, in insertion order."""
        ...

    def readmit_excluded(self, rows: Sequence[tuple[str, str]]) -> None:
        """Queue those ``(key, url)`` rows again; block until committed."""
        ...

    def mark(
        self,
        key: str,
        state: FrontierState,
        *,
        attempts: int | None = None,
        available_at: float | None = None,
    ) -> None:
        """A frontier row's new state (queued)."""
        ...

    def flush(self) -> None:
        """Block until every write so far is committed."""
        ...

    def spilled_counts(self) -> dict[str, int]:
        """Spilled rows per host key."""
        ...

    def load_spilled(self, host: str, after: int, limit: int) -> tuple[list[FrontierRow], int]:
        """``SpillStore.read_spilled`` of committed rows, blocking."""
        ...

    def load_hosts(self) -> dict[str, HostRecord]:
        """The saved politeness state of every host."""
        ...

    def page_totals(self) -> tuple[dict[str, int], int]:
        """Pages by status class and the bytes total."""
        ...

    def recent_blocked(self, limit: int) -> list[BlockedRecord]:
        """The last ``limit`` refused URLs."""
        ...

    def queued_validators(self) -> Iterator[tuple[str, str | None, str | None]]:
        """``(url, etag, last_modified)`` of the waiting URLs with a stored 200."""
        ...

    def sitemaps_read(self) -> set[str]:
        """The URLs of the sitemaps read so far."""
        ...

    def hosts_without_sitemaps(self) -> list[str]:
        """Hosts whose sitemaps were never read."""
        ...

    def simhashes(self) -> Iterator[tuple[str, int, str]]:
        """``(host, simhash, url)`` of the stored pages with one."""
        ...

    def first_payloads(self) -> Iterator[tuple[str, str, str, str | None]]:
        """``(digest, url, fetched_at, canonical)`` of each payload's first page."""
        ...

    def warc_file_names(self) -> list[str]:
        """The distinct ``pages.warc_file`` names (the WARC files the rows point into)."""
        ...


@dataclass(frozen=True, slots=True)
class StoreRoles:
    """The optional roles a ``CrawlStore`` plays (``CrawlStore.roles``); ``None``: it
    does not play that role, and the crawl is assembled without it.

    Attributes:
        run_log: keeps a row per run (``RunLog``).
        keys: the seen set's exact check (``KeyStore``).
        cash: keeps the OPIC cash of waiting URLs (``CashSink``).
        scores: keeps the credits of URLs held in memory (``ScoreKeeper``).
        history: the crawl's earlier runs in a file of its own (``LocalHistory``).
        warc_home: where the WARC files of a store without a crawl file of its own go
            (a cluster worker's), ``None``: beside ``history``'s file, or none.
    """

    run_log: RunLog | None = None
    keys: KeyStore | None = None
    cash: CashSink | None = None
    scores: ScoreKeeper | None = None
    history: LocalHistory | None = None
    warc_home: WarcHome | None = None


__all__ = [
    "CashSink",
    "Clock",
    "CrawlFrontier",
    "CrawlStore",
    "Fetcher",
    "KeyStore",
    "LocalHistory",
    "ResultSink",
    "RunLog",
    "ScoreKeeper",
    "SpillStore",
    "StoreRoles",
]
