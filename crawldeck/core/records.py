"""The plain values that cross the seams between the crawler's parts (issue #24 item 3).

A record is data only: frozen dataclasses and type aliases, no I/O, no clock, no
network or database library (the ``pure-no-io`` and ``seams-no-clients`` contracts in
``pyproject.toml`` keep ``aiohttp``, ``sqlite3`` and ``redis`` out of this module,
directly or through another). So a part that only reads or passes a response, e.g.
``core.protocols``, ``core.net.robots`` or ``core.crawl.content``, does not import the fetcher
that makes one, and a test can build one by hand (``tests/fakesite.py``).

* ``FetchResult``: the response to one GET (``core.net.fetcher.AiohttpFetcher`` and the
  fetchers that wrap it make them; the engine and its parts read them).
* ``WarcRef``: where a response went in the WARC files (``core.storage.archive``).
* ``WarcHome``: where the WARC files of a store without a crawl file go.
* ``Headers``: response headers as received, case-insensitive.
* ``BodySink``: a streamed body's reader (``Fetcher.fetch(on_body=...)``).

The records of the crawl file (``core.storage.store`` writes and reads them; its module
docstring has the schema): ``PageRecord`` (a ``pages`` row), ``BlockedRecord``,
``SitemapRecord``, ``SitemapUrlRecord``, ``HostRecord``, ``FrontierRow`` (and
``FrontierState``, ``FRONTIER_STATES``, ``SPILL_SEQ_SPAN``), the read results
``SeedOutcome``, ``LinkCheck``, ``BrokenGroup``, ``Counts``, and the plain functions
over them: ``to_iso_utc``/``from_iso_utc`` (the ``*_at`` columns' text),
``status_class``/``status_mix`` (issue #24 item 3: they sat in ``core.storage.store``, so 21
modules reached ``sqlite3`` for a type).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal, TypedDict

from multidict import CIMultiDictProxy

from crawldeck.core.errors import StoreError, without_url

#: A streamed body's reader (``fetch(on_body=...)``): takes a decoded chunk, returns
#: whether to read on.
BodySink = Callable[[bytes], Awaitable[bool]]

#: Response headers as received: case-insensitive, every value of a repeated field kept
#: in order (``multidict``, what aiohttp hands out).
Headers = CIMultiDictProxy[str]


@dataclass(frozen=True, slots=True)
class FetchResult:
    """The response to one GET, with its body cut at the byte cap.

    Attributes:
        url: the URL requested, exactly as passed to ``fetch`` (no redirect is
            followed, so it is also the final URL).
        status: the HTTP status code (any code: 3xx, 4xx and 5xx are results, not errors).
        headers: the response headers, case-insensitive, in the order received
            (``multidict.CIMultiDictProxy[str]``; ``headers[name]`` and ``get`` give the
            first value of a header sent several times, ``getall(name, ())`` all of
            them).
        body: the decoded body (Content-Encoding gzip/deflate/br undone), at most
            ``max_bytes`` bytes; ``b""`` when ``skipped``.
        content_type: the computed MIME type's essence, lowercased, without parameters
            (``"text/html"``): that of the last ``Content-Type`` value, or, when that
            is absent, does not parse or says "unknown", the type sniffed from the
            body's first bytes (``core.policy.sniff``, WHATWG MIME Sniffing §7: ``text/html``
            only from HTML-looking bytes, never with ``X-Content-Type-Options:
            nosniff``); an Apache-bug ``text/plain`` becomes
            ``application/octet-stream`` when its first bytes are binary (§7.2).
            ``""`` when there is no ``Content-Type`` and no body to sniff.
        elapsed_ms: milliseconds from the start of the request to the end of the body
            read (or to the cut, when truncated or skipped), to the microsecond (3
            decimals: the clock's noise digits are not exported, issue #25).
        truncated: ``True`` when the decoded body was longer than ``max_bytes`` and was
            cut to its first ``max_bytes`` bytes; for a streamed body
            (``fetch(on_body=...)``) also when its reader stopped the read, or more was
            transferred than ``wire_body`` keeps.
        skipped: ``True`` when ``want_body(content_type)`` said no: the body was not
            read (beyond what sniffing needed) and ``body`` is ``b""``.
        sniffed: ``True`` when ``content_type`` comes from the body's bytes rather
            than from ``Content-Type``.
        http_version: the status line's version (``"1.1"``, ``"1.0"``).
        reason: the status line's reason phrase as sent (``"OK"``; may be ``""``).
        raw_headers: the response header fields as received, name and value bytes in
            order (aiohttp's ``raw_headers``); ``()`` (a fake fetcher): rebuilt from
            ``headers`` when written to WARC.
        request_headers: the request header fields sent (aiohttp's
            ``request_info.headers``: Host, User-Agent, Accept, Accept-Encoding, the
            config's ``header`` fields and any extra ``headers``), in order, but
            ``Authorization`` and ``Proxy-Authorization`` (credentials are not
            recorded).
        wire_body: the body as transferred (its Content-Encoding kept, the transfer
            coding removed), at most what was read before the cut; ``None`` when it
            is ``body`` itself (no content coding). For a streamed body, its first
            ``core.net.fetcher.STREAM_KEEP_BYTES`` bytes as transferred, coded or not. The WARC
            response record holds it (``core.storage.warc``), so its payload matches its
            ``Content-Encoding``.
        warc: where the response went in the WARC files (``core.storage.archive``), ``None``
            when no WARC is written.
    """

    url: str
    status: int
    headers: Headers
    body: bytes
    content_type: str
    elapsed_ms: float
    truncated: bool
    skipped: bool = False
    sniffed: bool = False
    http_version: str = "1.1"
    reason: str = ""
    raw_headers: tuple[tuple[bytes, bytes], ...] = ()
    request_headers: tuple[tuple[str, str], ...] = ()
    wire_body: bytes | None = None
    warc: WarcRef | None = None

    @property
    def payload(self) -> bytes:
        """The body as transferred: ``wire_body``, or ``body`` when not content-coded."""
        return self.body if self.wire_body is None else self.wire_body


@dataclass(frozen=True, slots=True)
class WarcRef:
    """Where one response was archived (``core.storage.archive.ArchivingFetcher``).

    Attributes:
        file: the WARC file's name; a page row's adds the directory when the files
            are not beside the crawl file (``core.storage.archive.recorded_prefix``).
        offset: the byte offset of the record's gzip member in ``file``.
        length: the member's length in bytes (compressed).
        record_id: the record's ``WARC-Record-ID`` (``<urn:uuid:...>``).
        payload_digest: ``sha1:BASE32`` of the payload as transferred (WARC/1.1 §5.9,
            what warcio computes), ``None`` for a record without payload.
        duplicate_of: the URL whose earlier response had the same payload digest (the
            record is a ``revisit``), else ``None``.
    """

    file: str
    offset: int
    length: int
    record_id: str
    payload_digest: str | None
    duplicate_of: str | None = None


@dataclass(frozen=True, slots=True)
class WarcHome:
    """Where the WARC files of a store without a crawl file of its own go: a cluster
    worker's ``ClusterStore`` (its pages reach the crawl file through Redis) has one
    as its ``warc_home`` attribute.

    Attributes:
        directory: the files' directory.
        stem: their name stem (``<stem>-NNNNN.warc.gz``), this writer's alone.
        part_of: the ``warcinfo`` record's ``isPartOf`` (the crawl's name).
    """

    directory: Path
    stem: str
    part_of: str


# --------------------------------------------------------------- the crawl file's

FrontierState = Literal["queued", "spilled", "in_flight", "done", "failed", "blocked"]
#: Frontier states. ``blocked``: refused at dispatch time (robots.txt), never fetched.
FRONTIER_STATES: Final = frozenset({"queued", "spilled", "in_flight", "done", "failed", "blocked"})
#: ``load_spilled``'s read-back position: ``priority * SPILL_SEQ_SPAN + seq``.
SPILL_SEQ_SPAN: Final = 1 << 40

_ISO_FORMAT: Final = "%Y-%m-%dT%H:%M:%S.%fZ"

#: ``to_iso_utc``'s last whole second and its text up to the seconds (one tuple,
#: replaced whole: a thread reads a consistent pair).
_iso_second: tuple[float, str] = (-1.5, "")


def to_iso_utc(epoch_s: float) -> str:
    """``epoch_s`` (wall-clock seconds since the epoch) as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``.

    Always UTC, always 27 characters, rounded to the microsecond half to even as
    ``datetime.fromtimestamp`` does, so the text sorts in time order. Example:
    ``to_iso_utc(0.25) == "1970-01-01T00:00:00.250000Z"``. The text up to the seconds
    is formatted once per second (a crawl formats several dates a page; ``strftime``
    cost 3.6-30 us a call).
    """
    fraction, whole = math.modf(epoch_s)
    micros = round(fraction * 1e6)
    if micros >= 1_000_000:
        micros -= 1_000_000
        whole += 1.0
    elif micros < 0:
        micros += 1_000_000
        whole -= 1.0
    global _iso_second
    second, text = _iso_second
    if second != whole:
        text = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _iso_second = (whole, text)
    return f"{text}.{micros:06d}Z"


def from_iso_utc(text: str) -> float:
    """The epoch seconds of a ``to_iso_utc`` string (exact to the microsecond).

    Raises:
        StoreError: ``text`` is not in that format.
    """
    try:
        return datetime.strptime(text, _ISO_FORMAT).replace(tzinfo=UTC).timestamp()
    except ValueError:
        raise StoreError(
            f"not a UTC timestamp of the form YYYY-MM-DDTHH:MM:SS.ffffffZ: {text!r}"
        ) from None


@dataclass(frozen=True, slots=True)
class PageRecord:
    """One fetched (or finally failed) URL: a row of ``pages``.

    Attributes:
        url: the URL requested. final_url: where it led (a redirect's target, else ``url``).
        host: its host key. depth: link hops from a seed (seed = 0).
        status: the HTTP status, ``None`` when no response came (see ``error``).
        content_type: the Content-Type header ("" or ``None`` when absent).
        bytes: body bytes read. elapsed_ms: fetch time in milliseconds.
        fetched_at: fetch start, wall-clock epoch seconds (stored as UTC ISO text).
        rendered: the page went through a browser. error: a ``reason: detail`` line or
        ``None``. noindex: meta robots / X-Robots-Tag said noindex.
        warc_file, warc_offset, warc_length: the WARC record of the response (file
        name, byte offset and length of its gzip member), ``None`` without one.
        payload_digest: ``sha1:BASE32`` of the payload as transferred.
        title: the HTML ``<title>``. etag, last_modified: those headers as sent.
        content_length: the ``Content-Length`` header as an int (``None``: absent or
        not a number). canonical_url: ``<link rel="canonical">`` resolved and cleaned.
        duplicate_of: the first URL with the same payload digest (a ``revisit``).
        simhash: the page text's 64-bit SimHash, unsigned (stored signed).
        near_duplicate_of: an earlier page of the host within Hamming distance 3.
    """

    url: str
    final_url: str | None
    host: str
    depth: int
    status: int | None
    content_type: str | None
    bytes: int
    elapsed_ms: float
    fetched_at: float
    rendered: bool
    error: str | None
    noindex: bool
    warc_file: str | None = None
    warc_offset: int | None = None
    warc_length: int | None = None
    payload_digest: str | None = None
    title: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    content_length: int | None = None
    canonical_url: str | None = None
    duplicate_of: str | None = None
    simhash: int | None = None
    near_duplicate_of: str | None = None


#: The start of a page's ``error`` when its body was read in part (``Recorder``:
#: a truncated result; ``Store.partial_pages``).
PARTIAL_ERROR: Final = "body_too_large"

#: The starts of a page's ``error`` when some of its links were not read or kept:
#: ``parse_cut`` (links read from the first ``parse_max_bytes`` of its body only:
#: ``core.net.parse``) and ``links_cut`` (past ``max_links_per_page``:
#: ``core.policy.links``); ``Store.links_cut_pages``, ``RunTally.links_cut``.
LINKS_CUT_ERRORS: Final = ("parse_cut:", "links_cut:")
#: The SQL condition of a ``pages`` row whose error starts with one of them.
LINKS_CUT_SQL: Final = "(" + " OR ".join(f"error LIKE '{s}%'" for s in LINKS_CUT_ERRORS) + ")"


@dataclass(frozen=True, slots=True)
class BlockedRecord:
    """A refused URL: a row of ``blocked`` (``url`` is unique; later copies are dropped).

    Attributes:
        url, host: the URL and its host key. reason: a ``traps.BlockReason`` token.
        detail: one line for people. at: wall-clock epoch seconds (stored as UTC ISO text).
    """

    url: str
    host: str
    reason: str
    detail: str
    at: float


@dataclass(frozen=True, slots=True)
class SitemapRecord:
    """A sitemap file read: a row of ``sitemaps`` (``url`` is unique; read again, replaced).

    Attributes:
        url, host: the sitemap's URL and host key. fetched_at: wall-clock epoch seconds
        (stored as UTC ISO text). status: the HTTP status, ``None`` without an answer.
        kind: ``urlset``, ``sitemapindex``, ``text`` or ``None``. urls: entries kept.
        error: a ``reason: detail`` line (``core.policy.sitemaps``, ``core.crawl.sitemaps``).
    """

    url: str
    host: str
    fetched_at: float
    status: int | None
    kind: str | None
    urls: int
    error: str | None


@dataclass(frozen=True, slots=True)
class SitemapUrlRecord:
    """A URL a sitemap lists: a row of ``sitemap_urls`` (unique with its sitemap).

    Attributes:
        url: the cleaned URL. sitemap: the sitemap's URL. lastmod: epoch seconds (stored
        as UTC ISO text) or ``None``. changefreq: a protocol word or ``None``.
        priority: in [0.0, 1.0] or ``None``.
    """

    url: str
    sitemap: str
    lastmod: float | None
    changefreq: str | None
    priority: float | None


@dataclass(frozen=True, slots=True)
class HostRecord:
    """The saved politeness state of one host: a row of ``hosts`` (``host`` is the key).

    Attributes:
        host: the host key. ip: its address if known. robots_status: ``ok``,
        ``missing``, ``unreachable``, ... robots_expires_at: epoch seconds.
        crawl_delay_ms: robots.txt Crawl-delay in ms or ``None``. delay_ms: the current
        delay in ms. backoff_attempts: consecutive 429/503/timeouts. backoff_until:
        epoch seconds or ``None``. pages_fetched: pages of the host so far.
        state: ``active``, ``backoff``, ``demoted``, ...
        backoff_started: epoch seconds when the current continuous backoff began
        (for demotion after ``demote_after_s``), or ``None``.
        learnt_delay_ms: the delay learnt from 429/503 answers (``Politeness``), in
        ms, or ``None`` (none, or a file written before the column existed).
    """

    host: str
    ip: str | None
    robots_status: str | None
    robots_expires_at: float | None
    crawl_delay_ms: float | None
    delay_ms: float
    backoff_attempts: int
    backoff_until: float | None
    pages_fetched: int
    state: str
    backoff_started: float | None = None
    learnt_delay_ms: float | None = None


@dataclass(frozen=True, slots=True)
class FrontierRow:
    """One admitted URL: a row of ``frontier``.

    Attributes:
        key: the dedupe key (unique). url: the URL to request. host: its host key.
        depth: link hops from a seed. priority: front queue (0 = highest).
        state: one of ``FRONTIER_STATES``. available_at: not before this epoch second.
        attempts: tries made so far. redirects: the URLs requested in the redirect chain
        that led here (stored as a JSON list). via: the page it was found on, if any.
        score: its OPIC cash (``core.policy.prioritizer``; ``0.0`` under other orderings).
        inlinks: the fetched pages that linked to it so far (``FrontierEntry.inlinks``).
    """

    key: str
    url: str
    host: str
    depth: int
    priority: int
    state: str = "queued"
    available_at: float = 0.0
    attempts: int = 0
    redirects: tuple[str, ...] = ()
    via: str | None = None
    score: float = 0.0
    inlinks: int = 1


@dataclass(frozen=True, slots=True)
class SeedOutcome:
    """How one seed of the crawl ended (``Store.seed_outcomes``).

    Attributes:
        url: the seed as requested. state: its frontier state (``done``, ``failed``,
        ``blocked``, ``queued``, ...). status: its page's HTTP status, ``None`` without
        a page or a response. error: its page's error line, if any. blocked: the
        ``blocked`` reason and detail (``"robots: ..."``) when it was refused.
    """

    url: str
    state: str
    status: int | None
    error: str | None
    blocked: str | None


@dataclass(frozen=True, slots=True)
class LinkCheck:
    """One link and what its target got, as a link checker reports it (a row of the
    ``broken_links`` view, or of ``crawldeck links``).

    Attributes:
        from_url: the referring page (a ``pages.url``); ``None`` for a seed no page
            links to (``crawldeck links --broken`` lists a broken one, as linkchecker
            lists its start URL).
        to_url: the link, resolved against the referring page.
        status: the target's HTTP status, ``None`` without a response or not fetched.
        error: the target's ``pages.error`` (``reason: detail``), ``None`` for a plain
            HTTP status or a target not fetched.
        final_url: where the target led: the broken end (``broken_links``), or the
            target's ``pages.final_url``.
        blocked: why the target was refused untried (``blocked.reason``: ``robots``,
            ``scope``, ...), ``None`` otherwise; a refused target is not broken.
        tried: whether the target was tried: it has a ``pages`` row, or its name did
            not resolve (``BROKEN_BLOCK_REASONS``).
        broken: a row of ``broken_links``, whose ``final_url`` is the broken end (in
            ``crawldeck links`` without ``--broken``, ``final_url`` is the target's
            ``pages.final_url``, a redirect's next hop, and ``broken`` false).
        anchor: the link's anchor text (``links.anchor``), ``None`` without one.
        same_as: the URL fetched for the link when the link is another spelling of
            that page (the same dedupe key: a ``sid`` the key drops), whose answer the
            other fields give; ``None`` otherwise.
        pending: for a target not tried yet, what its frontier row says when it was
            tried before or its host is held (``queued after 2 tries, its host
            parked``: issue #25 trial 20 read a URL twice answered 429 as plain "not
            fetched"); ``None`` otherwise.
    """

    from_url: str | None
    to_url: str
    status: int | None
    error: str | None
    final_url: str | None
    blocked: str | None = None
    tried: bool = True
    broken: bool = True
    anchor: str | None = None
    same_as: str | None = None
    pending: str | None = None

    def why(self) -> str:
        """The target's state in a few words: ``HTTP 404``, ``HTTP 301: redirect_loop:
        ...``, the error alone without a response (``connect: ...``, ``dns: ...``),
        ``blocked: robots`` or ``not fetched``; ``(redirected to URL)`` after it when
        ``final_url`` is another URL (a broken link's end, ``broken_links``, or a
        redirect's next hop); ``(fetched as URL)`` when the link is another spelling of
        a page fetched (``same_as``: issue #25 trial 7)."""
        if self.blocked is not None:
            return f"blocked: {self.blocked}"
        if not self.tried:
            return "not fetched" if self.pending is None else f"not fetched yet: {self.pending}"
        error = None if self.error is None else without_url(self.error, self.to_url)
        if self.status is None:
            why = error or "no response"
        elif error is None:
            why = f"HTTP {self.status}"
        else:
            why = f"HTTP {self.status}: {error}"
        if self.same_as is not None:
            why += f" (fetched as {self.same_as})"
        moved = self.status is not None and 300 <= self.status < 400
        shown = self.same_as or self.to_url
        if self.final_url is not None and self.final_url != shown and (self.broken or moved):
            why += f" (redirected to {self.final_url})"
        return why


@dataclass(frozen=True, slots=True)
class BrokenGroup:
    """Broken links whose targets got the same (``Store.broken_groups``).

    Attributes:
        status: the HTTP status the targets got, ``None`` without a response.
        reason: the reason of their error (``connect``, ``dns``, ``redirect_loop``,
            the ``reason`` of ``reason: detail``), ``None`` for a plain HTTP status.
        count: how many broken links the group holds.
        urls: how many distinct URLs they link to.
        first: the first of them: one to each URL first (``Store.broken_groups``).
    """

    status: int | None
    reason: str | None
    count: int
    urls: int
    first: list[LinkCheck]

    def label(self) -> str:
        """``HTTP 404``, ``HTTP 301: redirect_loop``, ``connect``, ``dns``."""
        if self.status is None:
            return self.reason or "no response"
        if self.reason is None:
            return f"HTTP {self.status}"
        return f"HTTP {self.status}: {self.reason}"


class Counts(TypedDict):
    """What ``Store.counts`` returns (committed rows only).

    ``pages``: rows of ``pages``; ``blocked``: rows of ``blocked`` by reason;
    ``queued``, ``in_flight``, ``done``, ``failed``: frontier rows by state (``queued``
    counts the ``spilled`` rows too: they are queued, only not in memory);
    ``frontier_blocked``: frontier rows in state ``blocked``; ``retrying``: ``pages``
    rows of a transient failure whose URL is queued again (``Store.requeue_failed``):
    their fetch is counted, their next one will replace them.
    """

    pages: int
    blocked: dict[str, int]
    queued: int
    in_flight: int
    done: int
    failed: int
    frontier_blocked: int
    retrying: int


def status_class(status: int | None) -> str:
    """``2xx`` ... ``5xx`` for an HTTP status, ``error`` for none (``page_totals``)."""
    return "error" if status is None else f"{status // 100}xx"


#: Keys of the page totals (``pages_added``, ``page_totals``) that are no status class.
_NOT_STATUS: Final = frozenset({"pages", "bytes", "duplicates", "near_duplicates"})


def status_mix(totals: Mapping[str, int]) -> dict[str, int]:
    """The status classes with pages in ``totals`` (``pages_added`` or ``page_totals``
    keys; the other counts dropped): ``{"2xx": 10, "error": 1}``."""
    return {k: v for k, v in totals.items() if k not in _NOT_STATUS and v > 0}


__all__ = [
    "FRONTIER_STATES",
    "SPILL_SEQ_SPAN",
    "BlockedRecord",
    "BodySink",
    "BrokenGroup",
    "Counts",
    "FetchResult",
    "FrontierRow",
    "FrontierState",
    "Headers",
    "HostRecord",
    "LinkCheck",
    "PageRecord",
    "SeedOutcome",
    "SitemapRecord",
    "SitemapUrlRecord",
    "WarcHome",
    "WarcRef",
    "from_iso_utc",
    "status_class",
    "status_mix",
    "to_iso_utc",
]
