"""The plain values that cross the seams between the crawler's parts (issue #24 item 3).

A record is data only: frozen dataclasses and type aliases, no I/O, no clock, no
network or database library (the ``records-at-the-bottom`` contract in
``pyproject.toml`` keeps ``aiohttp``, ``sqlite3`` and ``redis`` out of this module,
directly or through another). So a part that only reads or passes a response, e.g.
``core.protocols``, ``core.robots`` or ``core.content``, does not import the fetcher
that makes one, and a test can build one by hand (``tests/fakesite.py``).

* ``FetchResult``: the response to one GET (``core.fetcher.AiohttpFetcher`` and the
  fetchers that wrap it make them; the engine and its parts read them).
* ``WarcRef``: where a response went in the WARC files (``core.archive``).
* ``Headers``: response headers as received, case-insensitive.
* ``BodySink``: a streamed body's reader (``Fetcher.fetch(on_body=...)``).

The records of the crawl file (``PageRecord``, ``FrontierRow``, ``HostRecord``, ...)
are still in ``core.store``; they are to move here too (issue #24 item 3).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from multidict import CIMultiDictProxy

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
            body's first bytes (``core.sniff``, WHATWG MIME Sniffing §7: ``text/html``
            only from HTML-looking bytes, never with ``X-Content-Type-Options:
            nosniff``); an Apache-bug ``text/plain`` becomes
            ``application/octet-stream`` when its first bytes are binary (§7.2).
            ``""`` when there is no ``Content-Type`` and no body to sniff.
        elapsed_ms: milliseconds from the start of the request to the end of the body
            read (or to the cut, when truncated or skipped).
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
            ``core.fetcher.STREAM_KEEP_BYTES`` bytes as transferred, coded or not. The WARC
            response record holds it (``core.warc``), so its payload matches its
            ``Content-Encoding``.
        warc: where the response went in the WARC files (``core.archive``), ``None``
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
    """Where one response was archived (``core.archive.ArchivingFetcher``).

    Attributes:
        file: the WARC file's name; a page row's adds the directory when the files
            are not beside the crawl file (``core.archive.recorded_prefix``).
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


__all__ = ["BodySink", "FetchResult", "Headers", "WarcRef"]
