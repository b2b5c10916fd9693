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
* ``ResultSink``: where a crawl's results go, one call per page, refusal or state
  change, none of them waiting for a commit (``core.store.Store``, SQLite; a cluster
  store and a content store come next, issues #12 and #13).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from crawldeck.core.fetcher import FetchResult

if TYPE_CHECKING:
    from crawldeck.core.store import (
        BlockedRecord,
        FrontierRow,
        FrontierState,
        HostRecord,
        PageRecord,
    )

#: The one time source: wall-clock seconds since the epoch (``time.time``), or a test's
#: virtual clock (``loop.time`` of a virtual-time loop). Every ``now`` the engine hands
#: its parts comes from it.
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
    ) -> FetchResult:
        """GET ``url`` once (see ``core.fetcher.AiohttpFetcher.fetch`` for every argument).

        Args:
            url: an absolute http(s) URL cleaned by ``core.urls.clean``, sent as it is.
            max_bytes: the cap on the decoded body in bytes (``None``: the config's
                ``max_body_bytes``); a longer body is cut and ``truncated``.
            headers: extra request headers for this request only (a chain's Cookie).
            want_body: called with the media type before the body is read; ``False``
                skips the body (``skipped=True``, ``body=b""``).

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
    ) -> None:
        """A fetched page, its links, the rows of what it found and its frontier row's
        new state (``queued`` with ``next_url``: its redirect chain goes on)."""
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

    def pages_added(self) -> dict[str, int]:
        """Pages, bytes and status classes committed since the sink was opened."""
        ...

    def blocked_added(self) -> dict[str, int]:
        """Refused URLs committed since the sink was opened, by reason."""
        ...


__all__ = ["Clock", "Fetcher", "ResultSink"]
