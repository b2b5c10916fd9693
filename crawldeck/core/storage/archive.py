"""Capture at the fetch edge: every response the crawler's own HTTP client gets, archived.

``ArchivingFetcher`` is a ``core.protocols.Fetcher`` decorator: ``assemble`` wraps the
crawl's fetcher in it when ``warc`` is on, so every fetch made through it (pages,
redirect hops, robots.txt, sitemaps) becomes a ``request`` and a ``response`` (or
``revisit``) record in the crawl's WARC files (``core.storage.warc``). It returns as soon as
the records are queued, not written, so the fetch's host slot is free while the writer
thread works: the result is an ``ArchivedResult``, whose ``archived`` future gives where
the record went (a ``WarcRef``: file, offset, length, payload digest, the URL it
duplicates); ``PageArchive.page`` awaits it when the page is recorded, after its parse
(by then it is written, most often). Its ``warc`` stays ``None``. Render sub-requests
are the browser's, not the crawler's client's, and are not archived; a rendered page's
DOM is (``PageArchive.page``, a ``conversion`` record). A fetch that raised (no
response) archives nothing.

``PageArchive`` queues what the recorder learns after the fetch (not awaited: the
writer thread appends them in order, ``core.storage.warc``): each page's ``metadata`` record
(``via:`` its referrer, ``outlink:`` each link found) and the canonical rule of the
dedupe: a page whose ``<link rel="canonical">`` names another URL of the same host
(another dedupe key), and whose payload was the first of its digest, hands that digest
to the canonical URL (``WarcWriter.alias``): the two count as one page, so the
canonical's own fetch of the same payload is a full response, not a revisit of the
page that named it, and the copies after it are revisits of the canonical URL. On
resume the duplicate map is rebuilt by the same rule (``first_payloads``): a page
row's canonical URL counts only when it is on the page's host with another key (a
page naming itself, or another host, as canonical keeps its payload).

A 304's revisit record names the full response the page's row points to
(``PageRecords``: one read of the crawl file and of that record's WARC head per 304,
in the writer thread).

A response record keeps the body as it was transferred, its content coding on (the
WARC payload is the HTTP entity body as sent); ``decode_content`` undoes it for the
readers (``crawldeck show``, ``export --with-body``, ``core.storage.export.read_record``),
bounded as the fetcher's decoding is: at most the page's recorded body size, so a
bomb in a WARC file is cut, not expanded.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sqlite3
import zlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Final

import brotli

from crawldeck.core.config import CrawlConfig
from crawldeck.core.errors import StoreError
from crawldeck.core.policy import urls
from crawldeck.core.protocols import Clock, Fetcher, LocalHistory, StoreRoles
from crawldeck.core.records import BodySink, FetchResult, WarcHome, WarcRef, to_iso_utc
from crawldeck.core.render_types import RenderResult
from crawldeck.core.storage.store.schema import connect_reader
from crawldeck.core.storage.warc_reader import warc_stem
from crawldeck.core.storage.warc_writer import Exchange, WarcWriter

#: The WARC/1.1 specification the files conform to (``warcinfo``'s ``conformsTo``).
WARC_1_1: Final = "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"


#: The content codings ``decode_content`` undoes (RFC 9110 §8.4.1: gzip, deflate;
#: ``x-gzip`` as gzip, §8.4.1.3; ``br``, RFC 7932), as the fetcher asks for them.
CONTENT_CODINGS: Final = frozenset({"gzip", "x-gzip", "deflate", "br"})


def _decode_one(data: bytes, coding: str, max_bytes: int) -> bytes:
    """``data`` decoded from one content coding of ``CONTENT_CODINGS``, at most
    ``max_bytes + 1`` bytes (brotli: one output block more, about 32 KiB); ``deflate``
    zlib-wrapped first (RFC 9110 §8.4.1.2), raw when that fails (what many servers
    send, as browsers and the fetcher accept). Raises ``zlib.error`` or
    ``brotli.error`` on bad data."""
    if coding == "br":
        decoded: bytes = brotli.Decompressor().process(data, output_buffer_limit=max_bytes + 1)
        return decoded
    if coding == "deflate":
        try:
            return zlib.decompressobj(zlib.MAX_WBITS).decompress(data, max_bytes + 1)
        except zlib.error:
            return zlib.decompressobj(-zlib.MAX_WBITS).decompress(data, max_bytes + 1)
    return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, max_bytes + 1)


def decode_content(payload: bytes, content_encoding: str, max_bytes: int) -> tuple[bytes, bool]:
    """A stored payload with its ``Content-Encoding`` undone, cut at ``max_bytes``.

    Args:
        payload: the response record's payload, as transferred.
        content_encoding: the response's ``Content-Encoding`` field value, codings
            in the order they were applied (``"gzip"``, ``"br"``, ``"gzip, br"``;
            RFC 9110 §8.4), case and spaces ignored; ``""`` or ``identity``: none.
        max_bytes: the most decoded bytes to give (>= 0), e.g. the page's recorded
            body size (``pages.bytes``): what the fetcher kept under ``max_body_bytes``.

    Returns:
        ``(body, cut)``: the decoded body, at most ``max_bytes`` bytes, and whether
        decoding stopped there (more was encoded). A coding not in
        ``CONTENT_CODINGS`` (``compress``, ``zstd``) leaves the payload as stored,
        ``(payload, False)``, as the fetcher keeps such a body.

    Raises:
        ValueError: the payload does not decode as its coding says (one line).
    """
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not payload or not codings or not CONTENT_CODINGS.issuperset(codings):
        return payload, False
    body, cut = payload, False
    for coding in reversed(codings):  # the last coding applied is undone first
        try:
            body = _decode_one(body, coding, max_bytes)
        except (zlib.error, brotli.error) as exc:
            raise ValueError(f"its {coding} body does not decode: {exc}") from None
        if len(body) > max_bytes:  # a cut stream of an inner coding still decodes
            body, cut = body[:max_bytes], True
    return body, cut


def recorded_prefix(db: Path, directory: Path) -> str:
    """What a page row's ``warc_file`` puts before a WARC file's name when the files
    of crawl file ``db`` go to ``directory`` (config ``warc_dir``): ``""`` when it is
    the crawl file's own directory, ``"SUB/DIR/"`` when it lies below it (the two move
    together), else its absolute path and ``/``. Every reader joins the crawl file's
    directory with ``warc_file`` (``pathlib`` keeps an absolute one whole), so
    ``show``, ``export --with-body`` and ``mirror`` find the files there."""
    here = Path(os.path.abspath(db)).parent
    there = Path(os.path.abspath(directory))
    if there == here:
        return ""
    try:
        return there.relative_to(here).as_posix() + "/"
    except ValueError:
        return there.as_posix() + "/"


def warc_writer(config: CrawlConfig, roles: StoreRoles) -> WarcWriter | None:
    """The crawl's WARC writer: files ``<db stem>-NNNNN.warc.gz`` (``warc_prefix``, when
    set, for the stem) beside the crawl file of a store with a ``LocalHistory``
    (``roles.history``), or in ``warc_dir`` when set (the page rows name them from the
    crawl file's directory: ``recorded_prefix``), rotated at ``warc_max_bytes``, each
    opened by a ``warcinfo`` record (software, format, robots policy ``obey``, the user
    agent); the duplicate map read back from the store's pages (``first_payloads``), a
    304's earlier record found through its page row (``PageRecords``), the first file
    numbered past every one the page rows name (``Store.warc_file_names``). A store without
    a crawl file of its own but with a ``warc_home`` (a cluster worker's) gets files
    ``<stem>-NNNNN.warc.gz`` there, a duplicate map of this run's responses only and
    no 304 lookup. ``None`` when ``warc`` is off or the store has neither."""
    if not config.warc:
        return None
    first: Callable[[], Iterator[tuple[str, str, str, str | None]]] | None = None
    recorded: Callable[[], list[str]] | None = None
    locate = None
    prefix = ""
    history = roles.history
    if history is not None:
        db = history.path
        stem = config.warc_prefix or warc_stem(db)
        directory = Path(config.warc_dir) if config.warc_dir else db.parent
        home = WarcHome(directory, stem, db.name)
        prefix = recorded_prefix(db, directory)
        first, locate = lambda: first_payloads(history, config.strip_params), PageRecords(db)
        recorded = history.warc_file_names
    elif roles.warc_home is not None:
        home = roles.warc_home
    else:
        return None
    try:
        version = metadata.version("crawldeck")
    except metadata.PackageNotFoundError:
        version = "unknown"
    info = [
        ("software", f"crawldeck/{version}"),
        ("format", "WARC File Format 1.1"),
        ("conformsTo", WARC_1_1),
        ("isPartOf", home.part_of),
        ("robots", "obey"),
        ("http-header-user-agent", config.user_agent),
    ]
    return WarcWriter(
        home.directory,
        home.stem,
        max_bytes=config.warc_max_bytes,
        info=info,
        first_payloads=first,
        locate=locate,
        recorded_prefix=prefix,
        recorded_files=recorded,
    )


def first_payloads(
    store: LocalHistory, strip_params: Collection[str]
) -> Iterator[tuple[str, str, str, str | None]]:
    """``Store.first_payloads`` with the canonical rule of the dedupe (module
    docstring): ``(payload_digest, url, fetched_at, canonical_url)``, the canonical URL
    kept only when it is on the page's host with another dedupe key, else ``None``.

    Raises:
        StoreError: the crawl file cannot be read.
    """
    for digest, url, fetched_at, canonical in store.first_payloads():
        if canonical is not None and (
            urls.host_key(canonical) != urls.host_key(url)
            or urls.normalize(canonical, strip_params) == urls.normalize(url, strip_params)
        ):
            canonical = None
        yield digest, url, fetched_at, canonical


class PageRecords:
    """``core.storage.warc.Locator`` over a SQLite crawl file: where a URL's ``pages`` row
    points in the WARC files (``warc_file``, ``warc_offset``), read on a read-only
    connection of its own, opened at the first lookup in the thread that makes them
    (the WARC writer's), one index probe of ``pages.url`` per lookup.

    Args:
        db: the crawl file.
    """

    def __init__(self, db: Path) -> None:
        self._db = db
        self._home = os.path.abspath(db.parent)
        self._conn: sqlite3.Connection | None = None

    def __call__(self, url: str) -> tuple[str, int] | None:
        """``(file, offset)`` of ``url``'s committed page row, ``None`` when it has no
        row or no WARC record; ``file`` the absolute path of its WARC file (the row's
        ``warc_file`` from the crawl file's directory: ``recorded_prefix``).

        Raises:
            StoreError: the crawl file cannot be read.
        """
        try:
            if self._conn is None:
                self._conn = connect_reader(self._db)
            row = self._conn.execute(
                "SELECT warc_file, warc_offset FROM pages WHERE url = ?", (url,)
            ).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"{self._db.name}: cannot read a page's WARC record: {exc}") from None
        if row is None or row[0] is None or row[1] is None:
            return None
        return os.path.join(self._home, str(row[0])), int(row[1])

    def close(self) -> None:
        """Close the connection (a later lookup opens another)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


@dataclass(frozen=True, slots=True)
class ArchivedResult(FetchResult):
    """A ``FetchResult`` whose records are queued for the WARC files.

    Attributes:
        archived: the future of its response record's ``WarcRef``
            (``WarcWriter.exchange``); awaiting it raises ``StoreError`` when the
            records could not be written.
    """

    archived: asyncio.Future[WarcRef] | None = None


_RESULT_FIELDS: Final = tuple(f.name for f in dataclasses.fields(FetchResult))


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
        on_body: BodySink | None = None,
    ) -> FetchResult:
        """``inner.fetch`` (same arguments, same errors), its response queued for the
        WARC files: an ``ArchivedResult`` (waits only while ``max_pending`` exchanges
        wait for the writer thread). A streamed body (``on_body``) is archived as far
        as the fetcher kept it (``STREAM_KEEP_BYTES``, ``WARC-Truncated: length`` when
        cut).

        Raises:
            FetchError: from ``inner`` (nothing is archived).
            StoreError: the WARC writer failed earlier (a full disk).
        """
        date = to_iso_utc(self._clock())
        result = await self._inner.fetch(
            url, max_bytes=max_bytes, headers=headers, want_body=want_body, on_body=on_body
        )
        archived = await self._writer.exchange(Exchange(result, date))
        fields = {name: getattr(result, name) for name in _RESULT_FIELDS}
        return ArchivedResult(**fields, archived=archived)

    async def aclose(self) -> None:
        """Close ``inner``, then finish the WARC writes queued and close the file."""
        try:
            await self._inner.aclose()
        finally:
            await self._writer.aclose()


class PageArchive:
    """The records a page gets after its fetch (``core.crawl.recording.Recorder``).

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
    ) -> WarcRef | None:
        """Where ``result``'s response record is (awaited: ``ArchivedResult``; its
        ``file`` as the page row names it, ``recorded_prefix`` first), after
        queueing its ``metadata`` record (``via: REFERRER`` when it has one,
        ``outlink: URL`` for each link it gave, in order) and, for a rendered page with
        a DOM, the ``conversion`` record holding it; ``None`` and nothing queued for a
        result that was not archived.

        Raises:
            StoreError: the records could not be written (a full disk).
        """
        ref = result.warc
        if isinstance(result, ArchivedResult) and result.archived is not None:
            ref = await result.archived
        if ref is None:
            return None
        if self._writer.recorded_prefix:
            ref = dataclasses.replace(ref, file=self._writer.recorded_prefix + ref.file)
        date = to_iso_utc(self._clock())
        self._writer.metadata(result.url, ref.record_id, date, via=via, outlinks=outlinks)
        if rendered is not None and rendered.html:
            self._writer.conversion(result.url, ref.record_id, rendered.html, date)
        return ref

    def canonical(self, ref: WarcRef, page_url: str, canonical_url: str) -> None:
        """The page ``page_url``, archived at ``ref``, names ``canonical_url`` (same
        host, another key): if its payload was the first of its digest, the canonical
        URL takes it over (module docstring; queued like ``page``'s records).

        Raises:
            StoreError: the WARC writer failed earlier (a full disk).
        """
        if ref.payload_digest and ref.duplicate_of is None:
            self._writer.alias(ref.payload_digest, page_url, canonical_url)


__all__ = [
    "CONTENT_CODINGS",
    "WARC_1_1",
    "ArchivedResult",
    "ArchivingFetcher",
    "PageArchive",
    "PageRecords",
    "WarcHome",
    "decode_content",
    "first_payloads",
    "recorded_prefix",
    "warc_writer",
]
