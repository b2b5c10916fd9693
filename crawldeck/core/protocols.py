"""The seams of the engine: what it needs from its collaborators, as ``typing.Protocol``s.

The engine (``core.engine``) holds the policies of a crawl (admission, the host gate,
the frontier) and does the awaits; everything that reaches the outside world comes in
through one of these small protocols, so a test can hand it an in-process fake (a
scripted site, a virtual clock) and a later capability (a cluster store, a content
store) can hand it another implementation (issue #11, as httpx's one-method transport:
``httpx/_transports/base.py``).

* ``Fetcher``: one GET, no redirect followed (``core.fetcher.AiohttpFetcher`` is the
  aiohttp one; ``tests/fakesite.py`` serves a scripted site in process).
* ``Clock``: the one time source, seconds since the epoch as ``float``.
* ``CrawlFrontier``: the URLs waiting, by host, ready by time (``core.window``'s
  ``FrontierWindow``: Mercator's queues in memory, their tail in SQLite; a frontier
  shared by workers in Redis comes next, issue #12).
* ``ResultSink``: where a crawl's results go, one call per page, refusal or state
  change, none of them waiting for a commit (``core.store.Store``, SQLite;
  ``core.cluster.store.ClusterStore``, Redis, for a worker of a cluster crawl; a
  content store comes next, issue #13).
* ``CrawlStore``: the ``ResultSink`` with what the engine and its frontier window ask
  of the store besides (backpressure, the run's lifecycle, spilled URLs, the seen
  set's exact check).
* ``CashSink``: a store that keeps the OPIC cash of waiting URLs (issue #15:
  ``Store.add_scores`` in SQLite, ``ClusterStore.add_scores`` in Redis).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from crawldeck.core.records import BodySink, FetchResult

if TYPE_CHECKING:
    from crawldeck.core.frontier import FrontierEntry
    from crawldeck.core.store import (
        BlockedRecord,
        FrontierRow,
        FrontierState,
        HostRecord,
        PageRecord,
        SitemapRecord,
        SitemapUrlRecord,
    )
    from crawldeck.core.window import WindowStatistics

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
        """GET ``url`` once (see ``core.fetcher.AiohttpFetcher.fetch`` for every argument).

        Args:
            url: an absolute http(s) URL cleaned by ``core.urls.clean``, sent as it is.
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
    the head of its host's queue (a retry, a URL whose host was not ready after all).
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
    """Where the crawl's results go (``core.store.Store`` documents each call).

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


class CrawlStore(ResultSink, Protocol):
    """The store an ``Engine`` runs over: ``core.store.Store`` (SQLite, resumable) or
    ``core.cluster.store.ClusterStore`` (a cluster worker's, over Redis)."""

    async def room(self) -> bool:
        """Wait while the store's writes are too far behind; ``True`` if it waited."""
        ...

    def begin_run(self, config: Mapping[str, Any]) -> int:
        """A run starts with ``config``: its id."""
        ...

    def end_run(self, run_id: int, status: str, *, stats: Mapping[str, Any] | None = None) -> None:
        """The run ``run_id`` ended with ``status`` and its figures ``stats``
        (``core.stats.run_stats``; ``None``: none)."""
        ...

    def flush(self) -> None:
        """Block until every write so far is done (called in a thread)."""
        ...

    def contains(self, key: str) -> bool:
        """Whether dedupe key ``key`` is known to the store (called in a thread)."""
        ...

    def load_spilled(self, host: str, after_seq: int, limit: int) -> tuple[list[FrontierRow], int]:
        """Up to ``limit`` URLs of ``host`` kept in the store (``core.window.SpillStore``)."""
        ...


@runtime_checkable
class CashSink(Protocol):
    """A store that keeps the OPIC cash of the URLs waiting in it (``core.prioritizer``,
    issue #15); the recorder finds it with ``isinstance`` once per crawl."""

    def add_scores(self, scores: Sequence[tuple[str, float]]) -> None:
        """Add each ``(dedupe key, cash)`` to the URL ``key`` if it still waits (cash: a
        ``float``, a share of a fetched page's); a URL fetched already, or unknown, is
        left as it is. Queues the write and returns at once."""
        ...


__all__ = ["CashSink", "Clock", "CrawlFrontier", "CrawlStore", "Fetcher", "ResultSink"]
