"""Capture at the fetch edge: every response the crawler's own HTTP client gets, archived.

``ArchivingFetcher`` is a ``core.protocols.Fetcher`` decorator: ``assemble`` wraps the
crawl's fetcher in it when ``warc`` is on, so every fetch made through it (pages,
redirect hops, robots.txt, sitemaps) becomes a ``request`` and a ``response`` (or
``revisit``) record in the crawl's WARC files (``core.warc``), and the ``FetchResult``
it returns carries where (``FetchResult.warc``: file, offset, length, payload digest,
the URL it duplicates). Render sub-requests are the browser's, not the crawler's
client's, and are not archived; a rendered page's DOM is (``PageArchive.page``, a
``conversion`` record). A fetch that raised (no response) archives nothing.

``PageArchive`` writes what the recorder learns after the fetch: each page's
``metadata`` record (``via:`` its referrer, ``outlink:`` each link found) and the
canonical rule of the dedupe: a page whose ``<link rel="canonical">`` names another URL
of the same host, and whose payload was the first of its digest, hands that digest to
the canonical URL (``WarcWriter.alias``): the two count as one page, so the
canonical's own fetch of the same payload is a full response, not a revisit of the
page that named it, and later copies are revisits of the canonical URL.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from typing import Final

from crawldeck.core.config import CrawlConfig
from crawldeck.core.fetcher import FetchResult
from crawldeck.core.protocols import Clock, Fetcher, ResultSink
from crawldeck.core.render_types import RenderResult
from crawldeck.core.store import Store, to_iso_utc
from crawldeck.core.warc import Exchange, WarcWriter, warc_stem

#: The WARC/1.1 specification the files conform to (``warcinfo``'s ``conformsTo``).
WARC_1_1: Final = "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"


def warc_writer(config: CrawlConfig, store: ResultSink) -> WarcWriter | None:
    """The crawl's WARC writer: files ``<db stem>-NNNNN.warc.gz`` beside the SQLite
    crawl file of ``store``, rotated at ``warc_max_bytes``, each opened by a
    ``warcinfo`` record (software, format, robots policy ``obey``, the user agent);
    the duplicate map read back from the store's pages. ``None`` when ``warc`` is off
    or the store is not a SQLite ``Store`` (a cluster worker's: its pages reach the
    crawl file through Redis, and it writes no WARC; README, "Many workers")."""
    if not config.warc or not isinstance(store, Store):
        return None
    try:
        version = metadata.version("crawldeck")
    except metadata.PackageNotFoundError:
        version = "unknown"
    info = [
        ("software", f"crawldeck/{version} (warcio)"),
        ("format", "WARC File Format 1.1"),
        ("conformsTo", WARC_1_1),
        ("isPartOf", store.path.name),
        ("robots", "obey"),
        ("http-header-user-agent", config.user_agent),
    ]
    return WarcWriter(
        store.path.parent,
        warc_stem(store.path),
        max_bytes=config.warc_max_bytes,
        info=info,
        first_payloads=store.first_payloads,
    )


class ArchivingFetcher:
    """A ``Fetcher`` that archives every response of ``inner`` into ``writer``.

    Args:
        inner: the fetcher doing the requests (``AiohttpFetcher``, or a test's fake).
        writer: the WARC writer (its thread appends; ``fetch`` awaits the append).
        clock: the crawl's clock (epoch s): a record's ``WARC-Date`` is the fetch's
            start.
    """

    def __init__(self, inner: Fetcher, writer: WarcWriter, clock: Clock) -> None:
        self._inner = inner
        self._writer = writer
        self._clock = clock

    async def fetch(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        headers: Mapping[str, str] | None = None,
        want_body: Callable[[str], bool] | None = None,
    ) -> FetchResult:
        """``inner.fetch`` (same arguments, same errors), its response archived; the
        result has ``warc`` set.

        Raises:
            FetchError: from ``inner`` (nothing is archived).
            StoreError: the WARC file could not be written (a full disk).
        """
        date = to_iso_utc(self._clock())
        result = await self._inner.fetch(
            url, max_bytes=max_bytes, headers=headers, want_body=want_body
        )
        ref = await self._writer.exchange(Exchange(result, date))
        return dataclasses.replace(result, warc=ref)

    async def aclose(self) -> None:
        """Close ``inner``, then finish the WARC writes queued and close the file."""
        try:
            await self._inner.aclose()
        finally:
            await self._writer.aclose()


class PageArchive:
    """The records a page gets after its fetch (``core.recording.Recorder``).

    Args:
        writer: the crawl's WARC writer.
        clock: the crawl's clock (epoch s), for the records' ``WARC-Date``.
    """

    def __init__(self, writer: WarcWriter, clock: Clock) -> None:
        self._writer = writer
        self._clock = clock

    async def page(
        self,
        result: FetchResult,
        *,
        via: str | None,
        outlinks: Sequence[str],
        rendered: RenderResult | None,
    ) -> None:
        """The ``metadata`` record of an archived response (``via: REFERRER`` when it
        has one, ``outlink: URL`` for each link it gave, in order) and, for a rendered
        page with a DOM, the ``conversion`` record holding it. Nothing for a result
        that was not archived (``warc`` is ``None``).

        Raises:
            StoreError: the WARC file could not be written.
        """
        ref = result.warc
        if ref is None:
            return
        date = to_iso_utc(self._clock())
        fields = [("via", via)] if via else []
        fields += [("outlink", link) for link in outlinks]
        await self._writer.metadata(result.url, ref.record_id, fields, date)
        if rendered is not None and rendered.html:
            await self._writer.conversion(result.url, ref.record_id, rendered.html, date)

    async def canonical(self, result: FetchResult, canonical_url: str) -> None:
        """``result``'s page names ``canonical_url`` (same host, another URL): if its
        payload was the first of its digest, the canonical URL takes it over (module
        docstring)."""
        ref = result.warc
        if ref is not None and ref.payload_digest and ref.duplicate_of is None:
            await self._writer.alias(ref.payload_digest, result.url, canonical_url)


__all__ = ["WARC_1_1", "ArchivingFetcher", "PageArchive", "warc_writer"]
