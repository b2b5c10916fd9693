"""One HTTP GET with caps on time and bytes: the crawler's only door to the network.

``AiohttpFetcher.fetch(url)`` (the aiohttp ``core.protocols.Fetcher``) sends one request
with aiohttp and never follows a redirect (the engine sends each ``Location`` back
through the URL gates as a new hop). A 3xx comes back with its ``Location`` header as
the server sent it, whatever it says (``mailto:``, a raw UTF-8 host, junk; bytes that
are not UTF-8 read as Latin-1, as RFC 9110 §5.5 allows for obs-text): the engine
resolves it with ``core.urls.clean``, which blocks what cannot be crawled. It reads the
*decoded* body (gzip, deflate and br undone here, in steps of at most 64 KiB and what is left of
``max_bytes``) and stops at ``max_bytes``, so a compression bomb costs at most
``max_bytes`` plus one network read and one decoded step (64 KiB, and for brotli one
output block more, about 32 KiB), held once in one buffer, never joined. Every
aiohttp error is translated here into the ``core.errors`` tree; nothing foreign
escapes, and each error says in ``retryable`` whether it is transient (timeouts, refused
or lost connections) or deterministic (malformed replies, short bodies, bad codings, TLS
that cannot work, URLs that cannot be sent).

Bodies not needed are not downloaded: ``fetch(url, want_body=...)`` asks the caller,
once the media type is known, whether to read the body at all; if not, the
connection is closed right after the head (a 700 MB zip costs a few network reads).
The media type is the one WHATWG MIME Sniffing computes (``core.sniff``): a response
without a usable ``Content-Type`` (absent, unparsable, ``unknown/unknown``,
``application/unknown``, ``*/*``) is sniffed from its first 1445 decoded bytes (§5.2,
§7.1) before it is called non-HTML, and so is the ``text/plain`` of the Apache bug
(§7.2).

Bodies read as they arrive: ``fetch(url, on_body=...)`` hands a 2xx body to a reader
(a sitemap's, ``core.sitemap_reader``) in decoded steps of at most 64 KiB instead of
holding it (the inflaters' held-back input drained step by step by ``more``), within
the same byte cap and time budget, keeping only its first ``STREAM_KEEP_BYTES`` as
transferred for the WARC record; the reader may stop the read.

``fetch(url, headers=...)`` adds request headers for that request only: the session
keeps no cookies, so a cookie the engine carries within one redirect chain is sent
that way and is gone with the request.

Connections: aiohttp resends a GET once when its connection closes or resets before
the reply, right for a kept-alive connection the server closed while idle (RFC 9112
§9.3.1.1) but, on a new connection, only a second request to a host that drops them:
that resend is kept for reused connections and not done for new ones. A reset
(TCP RST) before the end of a close-delimited body is a ``ConnectionLost``, not the
end of the body (aiohttp's parser cannot tell them apart).

Why aiohttp: per request it costs about a third of httpcore's CPU and a thirtieth of
httpx's with hundreds of hosts in the pool (httpx 0.28 scans every pooled connection
on each request: 24.8 ms of CPU per request at 500 hosts, against 0.17 ms for aiohttp;
``benchmarks/RESULTS.md``).

Content codings: requests say ``Accept-Encoding: gzip, deflate, br`` (the codings
whose decoding is bounded: zlib's ``max_length``, and the ``output_buffer_limit`` of
the ``Brotli`` package, 1.2 or later, RFC 7932); a response whose ``Content-Encoding``
lists more than one coding (``gzip, gzip``: each layer multiplies the bomb, 4 MB on the
wire became 8 GB of memory) or one we do not decode (``compress``, ``zstd``, junk) is
refused with ``ProtocolViolation`` before its body is read. ``identity`` is no coding.

Request options (``core.request_options.RequestOptions``, read from the config at
start): the ``header`` fields go with every request; Basic credentials (``auth``,
``netrc``) are chosen per request from its URL's origin (host, for netrc), so a
redirect's target, fetched as a request of its own, gets its own or none; a proxy
(``proxy``, or the environment's with ``trust_env``) carries the request, ``CONNECT``
for https. Through a proxy the proxy resolves the name and opens the connection: the
address policy and per-IP politeness still act on the crawler's own lookup of the
name (the engine's ``PinningResolver.choose`` before each request; an IP-literal URL is
checked here), the socket's peer (the proxy) is not taken as the host's address, and
the proxy's own name is resolved by the system, not checked by the policy
(``core.transport.ProxyNameResolver``). ``Authorization`` is left out of
``FetchResult.request_headers`` (and so of the WARC request records).

Budgets (``CrawlConfig``):
    connect_timeout_ms  TCP (and TLS) connection setup.
    read_timeout_ms     the longest silence while waiting for headers or body bytes.
    total_timeout_ms    the whole fetch, headers and body, whatever the server drips.
    max_body_bytes      decoded body bytes kept; more sets ``truncated``.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import io
import os
import resource
import ssl
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar

import aiohttp
import brotli
from aiohttp.abc import AbstractResolver
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ClientRequest, ConnectionKey
from aiohttp.connector import Connection
from aiohttp.http_exceptions import (
    ContentLengthError,
    HttpProcessingError,
    TransferEncodingError,
)
from aiohttp.tracing import Trace
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from crawldeck.core import sniff
from crawldeck.core.address_policy import ip_literal
from crawldeck.core.clock import LoopClock
from crawldeck.core.config import CrawlConfig
from crawldeck.core.errors import (
    ConnectFailed,
    ConnectionLost,
    ConnectRefused,
    FetchError,
    FetchTimeout,
    ProtocolViolation,
    RequestInvalid,
    TlsFailed,
)
from crawldeck.core.records import BodySink, FetchResult, Headers
from crawldeck.core.request_options import RequestOptions
from crawldeck.core.transport import PinningResolver, ProxyNameResolver

#: Sent with every request; the engine only parses HTML, the rest is recorded as is.
_ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"
#: The content codings we accept and decode (only codings whose decoding we bound).
_ACCEPT_ENCODING = "gzip, deflate, br"
_DECODED_CODINGS = frozenset({"gzip", "x-gzip", "deflate", "br"})
#: Request fields left out of ``FetchResult.request_headers`` (credentials).
_UNRECORDED = frozenset({"authorization", "proxy-authorization"})
#: The size of one read from the connection, bytes.
_READ_BYTES = 64 * 1024
#: Bytes of a streamed body (``fetch(on_body=...)``) kept as transferred, for its WARC
#: record (a sitemap of up to 50 MiB is parsed as it arrives, never held whole).
STREAM_KEEP_BYTES = 1024 * 1024


def _content_coding(headers: Headers, url: str) -> str | None:
    """The one content coding of ``headers`` (lowercase), or ``None`` for none.

    ``identity`` and empty items do not count (RFC 9110 §8.4).

    Raises:
        ProtocolViolation: more than one coding (stacked, in one header or several),
            or a coding other than gzip/x-gzip/deflate/br.
    """
    codings = [
        coding
        for value in headers.getall("content-encoding", ())
        for item in value.split(",")
        if (coding := item.strip().lower()) and coding != "identity"
    ]
    if not codings:
        return None
    if len(codings) > 1:
        listed = ", ".join(codings)[:200]
        if not listed.isprintable():
            listed = repr(listed)
        raise ProtocolViolation(f"stacked content codings {listed} refused: {url}")
    if codings[0] not in _DECODED_CODINGS:
        raise ProtocolViolation(f"unknown content coding {codings[0][:100]!r} refused: {url}")
    return codings[0]


def _as_received(headers: Headers) -> Headers:
    """``headers`` with values that were not UTF-8 read as Latin-1 (RFC 9110 §5.5).

    aiohttp decodes header bytes as UTF-8 with ``surrogateescape``; a lone surrogate
    cannot be stored in SQLite, so such values are turned back into their bytes and
    decoded as ISO-8859-1, as httpx and browsers do. Returns ``headers`` itself when
    every value is ASCII (the usual case). Never raises.
    """
    if all(value.isascii() for value in headers.values()):
        return headers
    fixed: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "surrogateescape").decode("latin-1")
        fixed.add(name, value)
    return CIMultiDictProxy(fixed)


class _Inflater:
    """Bounded decoding of one gzip or deflate body (RFC 9110 §8.4.1.2, §8.4.1.3).

    ``feed(data, room)`` returns at most ``room`` decoded bytes. Output that would not
    fit stays undecoded in zlib's input tail, and the caller stops there (the body is
    truncated), so a bomb never expands past what the caller still wants. ``deflate``
    is tried zlib-wrapped first (the RFC) and raw if that fails (what many servers
    send), as browsers do; the choice waits for the first two bytes (zlib's header).
    ``complete`` tells whether the compressed stream ended. Raises ``zlib.error`` on
    bad data.
    """

    def __init__(self, coding: str) -> None:
        self._deflate = coding == "deflate"
        wbits = zlib.MAX_WBITS if self._deflate else 16 + zlib.MAX_WBITS
        self._z = zlib.decompressobj(wbits)
        self._head = b""  # deflate: bytes held until the header can be judged

    def feed(self, data: bytes, room: int) -> bytes:
        """Decode ``data``; at most ``room`` (>= 1) bytes out."""
        if self._deflate:
            data = self._head + data
            if len(data) < 2:
                self._head = data
                return b""
            self._deflate = False
            self._head = b""
            try:
                return self._z.decompress(data, room)
            except zlib.error:
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)
        return self._z.decompress(data, room)

    def more(self, room: int) -> bytes:
        """Decode more of what earlier ``feed`` calls held back (the output did not
        fit their ``room``); at most ``room`` (>= 1) bytes, ``b""`` when none is held."""
        tail = self._z.unconsumed_tail
        return self._z.decompress(tail, room) if tail else b""

    @property
    def complete(self) -> bool:
        """Whether the end of the compressed stream was reached."""
        return self._z.eof


class _Unbrotli:
    """Bounded decoding of one brotli body (RFC 7932; ``br``, RFC 9110 §18.6).

    ``feed(data, room)`` returns what brotli decodes of ``data`` with its output
    buffer capped at ``room`` bytes (``output_buffer_limit``, Brotli 1.2): brotli
    fills its buffer in blocks, so up to one block (about 32 KiB) past ``room``
    may come out; past ``room`` the caller cuts and stops (the body is truncated),
    so a bomb never expands past what the caller still wants plus a block. The
    decoder then holds the rest, and is not fed again. ``complete`` tells whether the
    stream ended. Raises ``brotli.error`` on bad data.
    """

    def __init__(self) -> None:
        self._decoder = brotli.Decompressor()

    def feed(self, data: bytes, room: int) -> bytes:
        """Decode ``data``; about ``room`` (>= 1) bytes out at most (see the class)."""
        out: bytes = self._decoder.process(data, output_buffer_limit=room)
        return out

    def more(self, room: int) -> bytes:
        """Decode more of what earlier ``feed`` calls held back; about ``room`` bytes
        at most, ``b""`` when none is held."""
        if self._decoder.is_finished() or self._decoder.can_accept_more_data():
            return b""
        out: bytes = self._decoder.process(b"", output_buffer_limit=room)
        return out

    @property
    def complete(self) -> bool:
        """Whether the end of the compressed stream was reached."""
        finished: bool = self._decoder.is_finished()
        return finished


#: Statuses that have no body (RFC 9110 §6.4.1): bytes a server sends after one would
#: be read as the next response on a kept-alive connection, so it is not kept
#: (``_AiohttpInternals.Response``).
_NO_BODY = frozenset({204, 304})


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` value: lowercased, parameters dropped.

    ``"Text/HTML; charset=UTF-8"`` -> ``"text/html"``; ``None`` or ``""`` -> ``""``
    (RFC 9110 §8.3.1). Never raises.
    """
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


#: The longest detail from a foreign error kept in a message, characters.
_DETAIL_CHARS = 300


def _one_line(exc: BaseException | str) -> str:
    """``str(exc)`` on one line, at most ``_DETAIL_CHARS`` characters, or the
    exception's class name when it says nothing. Lines holding only a caret (the
    pointer under the bad byte in aiohttp's parser messages) are dropped."""
    lines = str(exc).splitlines()
    text = " ".join(" ".join(line.split()) for line in lines if line.strip(" ^"))
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1]  # the caller goes on with ": url"
    if len(text) > _DETAIL_CHARS:
        text = text[: _DETAIL_CHARS - 3] + "..."
    return text or type(exc).__name__


def idle_connections() -> int:
    """How many hosts may keep an idle keep-alive connection: half this process's
    soft limit on open files (RLIMIT_NOFILE), between 64 and 8 192.

    A crawl going round many hosts reuses a host's connection only if it is still
    open when the host comes round again, so the cap should cover the hosts in
    rotation; half the descriptor limit leaves the rest for connections in use, the
    SQLite files and DNS. ``crawldeck`` raises the soft limit (``tui.cli``), so this is
    8 192 there; at the usual default of 1 024 it is 512.
    """
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return 8192
    return max(64, min(8192, soft // 2))


class _LostOnFresh(Exception):
    """A new connection closed or reset before the response head: raised in place
    of aiohttp's error so that aiohttp does not send the request again (it resends
    any GET once on ``ServerDisconnectedError``/``ClientOSError``, meant for a
    kept-alive connection the server closed meanwhile, RFC 9112 §9.3.1.1; on a
    new connection it only doubles the requests to a host that drops them).
    ``AiohttpFetcher.fetch`` translates ``error`` as it would have been."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


#: Called by the connector with the URL's host, the transport of each new TCP
#: connection and whether it goes to a proxy (``AiohttpFetcher._connected``).
OnConnect = Callable[[str, asyncio.BaseTransport | None, bool], None]


class _AiohttpInternals:
    """Every use of aiohttp's private or undocumented API, in one place.

    aiohttp has no public seam for what the crawler needs at four points, so three of
    its classes are subclassed here (nowhere else in ``core``), and only here is an
    underscore attribute of an aiohttp object read, written or overridden:

    ========================================  =========================================
    what (aiohttp's class: member)            what breaks if aiohttp changes it
    ========================================  =========================================
    ``ResponseHandler`` (``client_proto``,    the class is not exported: an import
    not exported), subclassed as              error (loud)
    ``Protocol``
    ``ResponseHandler.connection_lost(exc)``  not called: ``lost_error`` stays ``None``
    overridden (keeps ``exc``)                and a reset close-delimited body reads
                                              as complete (silently cut bodies)
    ``ResponseHandler.data_received(data)``   not called: a body that turns malformed
    overridden (fails the body's reader)      after the head (bad chunk framing in a
                                              later packet) hangs until the total
                                              time budget, a retryable timeout
                                              instead of a ``ProtocolViolation``
    ``ResponseHandler._payload`` read (the    renamed: ``AttributeError`` on every
    body stream being fed)                    response (loud); no longer the body's
                                              stream: as the row above
    ``ClientResponse.start(connection)``      not called: a 204/304 connection stays
    overridden as ``Response.start``          in the pool (a body sent after one
                                              fails the next URL on it), a new
                                              connection lost before the head is
                                              requested twice
    ``TCPConnector._create_connection(req,    not called: ``connects`` stays 0 and
    traces, timeout)`` overridden             ``DnsCache.pinned`` is not set from the
                                              socket's peer (per-IP politeness keyed
                                              by the DNS answer's first address)
    ``TCPConnector._release(key, protocol,    not called: idle connections are not
    *, should_close)`` overridden             capped (a socket per host fetched in the
                                              keep-alive time, descriptors run out)
    ``TCPConnector._conns`` read (``{key:     reshaped: the idle cap raises or closes
    [(protocol, released_at), ...]}``)        nothing; ``statistics().idle`` is wrong
    ``TCPConnector._factory`` written (the    ignored: plain ``ResponseHandler``s, none
    protocol factory)                         of ``Protocol``'s additions (the rows
                                              on ``connection_lost``/``data_received``)
    ========================================  =========================================

    Checked against aiohttp 3.10 to 3.14: each member above has the same name and
    signature in aiohttp's source at v3.10.0, v3.11.0, v3.12.0, v3.13.0 and v3.14.3
    (``_conns`` holds lists in 3.10 and deques from 3.11: both are read only as
    iterables of pairs), and ``tests/test_aiohttp_internals.py`` passes on 3.10.11,
    3.12.15, 3.13.5, 3.14.0 and 3.14.5. The fetcher's other tests pass on 3.14.5 only
    (older ones word parser errors otherwise, 3.12 and older have no 128-header limit,
    3.14.0 fails ``test_one_known_coding_is_decoded[ deflate ]``), so ``pyproject.toml`` pins
    ``aiohttp>=3.14.5,<3.15``. ``tests/test_aiohttp_internals.py`` fails, naming the
    member, when the installed aiohttp is outside that pin, when a method in
    ``OVERRIDDEN`` is missing or has another signature, when a member in ``READ`` is
    missing from a real connector, protocol or response, when aiohttp stops calling an
    override during a real request, or when an underscore attribute of aiohttp's is used
    in ``core/fetcher.py`` or ``core/transport.py`` outside this class.
    """

    class Protocol(ResponseHandler):
        """aiohttp's connection protocol, with two additions:

        * it remembers how the connection ended (``lost_error``) and how many
          responses it has begun (``responses``): a reset (TCP RST) ends a
          close-delimited body exactly like a clean close as far as aiohttp's parser
          is concerned, and only the error given to ``connection_lost`` tells a cut
          body from a whole one;
        * a body that turns malformed after the head (bad chunk framing in a later
          packet) fails the body's reader: aiohttp 3.14's C parser drops the body's
          stream without an error there, and its reader then waits forever, past the
          read timeout (only the total time budget ended it, as a retryable timeout).
        """

        lost_error: BaseException | None = None
        responses = 0

        def connection_lost(self, exc: BaseException | None) -> None:
            self.lost_error = exc
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            payload = self._payload
            super().data_received(data)
            failed = self.exception()
            if (
                payload is not None
                and failed is not None
                and payload.exception() is None
                and not payload.is_eof()
            ):
                payload.set_exception(
                    aiohttp.ClientPayloadError(f"Response payload is not completed: {failed!r}"),
                    failed,
                )

    @staticmethod
    def new_protocol(loop: asyncio.AbstractEventLoop) -> ResponseHandler:
        """The connector's protocol factory: a ``Protocol`` on ``loop``."""
        return _AiohttpInternals.Protocol(loop=loop)

    class Response(aiohttp.ClientResponse):
        """aiohttp's response, with three changes:

        * the connection of a 204 or 304 is not kept alive: bytes a server sends after
          one (a body it should not have) would be read as the next response on that
          connection, failing an innocent URL. aiohttp has already put the connection
          back in its pool when ``start`` returns, so its protocol is closed there
          and the pool drops it;
        * a new connection lost before the head raises ``_LostOnFresh`` (no resend);
        * ``lost_error`` tells how the connection ended (``Protocol``).
        """

        _handler: _AiohttpInternals.Protocol | None = None

        async def start(self, connection: Connection) -> _AiohttpInternals.Response:
            protocol = connection.protocol
            handler = protocol if isinstance(protocol, _AiohttpInternals.Protocol) else None
            self._handler = handler
            fresh = handler is not None and handler.responses == 0
            if handler is not None:
                handler.responses += 1
            try:
                await super().start(connection)
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                if fresh:
                    raise _LostOnFresh(exc) from None
                raise
            if self.status in _NO_BODY and protocol is not None:
                protocol.close()
            return self

        @property
        def lost_error(self) -> BaseException | None:
            """The error the connection ended with (``None``: open, or closed cleanly)."""
            return self._handler.lost_error if self._handler is not None else None

    class Connector(aiohttp.TCPConnector):
        """aiohttp's connector, with ``Protocol`` connections, telling ``on_connect``
        of each new connection (to count them and to pin the host to the address the
        socket really went to), and keeping idle keep-alive connections for at most
        ``max_idle`` hosts, the least recently used closed first (aiohttp's ``limit``
        counts only connections in use: a crawl of 50 000 hosts would otherwise hold a
        socket per host fetched in the keep-alive time). Made inside the running loop.

        Args:
            on_connect: called with ``req.host``, the transport of each new
                connection and whether it is to a proxy (``req.proxy`` set).
            max_idle: the most hosts with idle connections kept (``idle_connections()``).
            kwargs: ``aiohttp.TCPConnector``'s.
        """

        def __init__(self, on_connect: OnConnect, *, max_idle: int, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._factory = functools.partial(
                _AiohttpInternals.new_protocol, asyncio.get_running_loop()
            )
            self._on_connect = on_connect
            self._max_idle = max_idle
            self._idle_hosts: OrderedDict[ConnectionKey, None] = OrderedDict()

        def idle(self) -> int:
            """Idle keep-alive connections in the pool now (open ones: a closed one
            stays listed until aiohttp next looks for a connection to its host)."""
            return sum(
                protocol.is_connected()
                for pooled in self._conns.values()
                for protocol, _since in pooled
            )

        def _release(
            self, key: ConnectionKey, protocol: ResponseHandler, *, should_close: bool = False
        ) -> None:
            super()._release(key, protocol, should_close=should_close)
            idle = self._idle_hosts
            idle[key] = None
            idle.move_to_end(key)
            while len(idle) > self._max_idle:
                oldest, _ = idle.popitem(last=False)
                for old, _since in self._conns.pop(oldest, ()):
                    old.close()

        async def _create_connection(
            self,
            req: ClientRequest,
            traces: list[Trace],
            timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109 - aiohttp's interface
        ) -> ResponseHandler:
            protocol = await super()._create_connection(req, traces, timeout)
            self._on_connect(req.host, protocol.transport, req.proxy is not None)
            return protocol

    #: ``(ours, aiohttp's class, method)``: each method ours overrides, with the
    #: parameters of aiohttp's.
    OVERRIDDEN: ClassVar[tuple[tuple[type, type, str], ...]] = (
        (Protocol, ResponseHandler, "connection_lost"),
        (Protocol, ResponseHandler, "data_received"),
        (Response, aiohttp.ClientResponse, "start"),
        (Connector, aiohttp.TCPConnector, "_create_connection"),
        (Connector, aiohttp.TCPConnector, "_release"),
    )
    #: ``(aiohttp's class, attribute)``: each private attribute read or written above
    #: on an instance of that class.
    READ: ClassVar[tuple[tuple[type, str], ...]] = (
        (ResponseHandler, "_payload"),
        (aiohttp.TCPConnector, "_conns"),
        (aiohttp.TCPConnector, "_factory"),
    )


@dataclass(frozen=True, slots=True)
class FetcherStatistics:
    """An ``AiohttpFetcher``'s connections at one moment.

    Attributes:
        connects: TCP connections opened so far (keep-alive reuse opens none; a
            connection that failed in its TCP or TLS handshake is not counted).
        idle: idle keep-alive connections in the pool now (at most one host per
            ``idle_connections()`` keeps some).
    """

    connects: int
    idle: int


class AiohttpFetcher:
    """An aiohttp session set up for crawling; ``fetch`` is safe to call concurrently.

    The aiohttp implementation of ``core.protocols.Fetcher``; what it needs of
    aiohttp's internals is in ``_AiohttpInternals``.

    Args:
        config: the crawl configuration (User-Agent, time budgets in ms, body cap,
            the request options: ``header``, ``proxy``, ``trust_env``, ``netrc``,
            ``auth``).
        resolver: an ``aiohttp.abc.AbstractResolver`` for host names (the crawl's
            ``core.transport.PinningResolver``: DNS pinning and the address policy);
            ``None``: aiohttp's default (the system resolver). A proxy's name is
            resolved by the system either way (``ProxyNameResolver``).
        ssl_context: certificate verification for https (``None``: the system's
            default CA store, hostname checked).
        clock: what ``FetchResult.elapsed_ms`` is timed on, seconds (the engine's
            one clock; default ``core.clock.LoopClock``), so virtual-time tests and
            politeness's learnt delay read the clock deadlines are set on.

    Raises:
        ConfigError: from ``RequestOptions.from_config`` (a ``password_env`` not set,
            a netrc file missing or malformed, a bad proxy variable with
            ``trust_env``).

    The session: HTTP/1.1, no automatic redirects, no cookies kept (every fetch is
    stateless, so no session-id trap can grow from a cookie; a caller that needs one
    for a request passes it in ``fetch(headers=...)``), aiohttp's own reading of the
    environment (proxies, ``.netrc``) off (``RequestOptions`` reads them, when the
    config asks), keep-alive pool of ``max(64, 4 x concurrency)``
    connections in use (any number per host: the engine's politeness decides), idle
    ones kept ``2 x delay_ms`` (5-60 s) so a connection outlives one politeness delay,
    for the ``idle_connections()`` hosts used last; name
    lookups are never cached by aiohttp (the resolver caches, with TTLs). It is opened
    on the first fetch (aiohttp wants a running event loop). ``statistics()`` counts
    the connections. Close it with ``await fetcher.aclose()`` or use
    ``async with AiohttpFetcher(config) as fetcher``.
    """

    def __init__(
        self,
        config: CrawlConfig,
        *,
        resolver: AbstractResolver | None = None,
        ssl_context: ssl.SSLContext | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._config = config
        self._clock = clock or LoopClock()
        self._options = options = RequestOptions.from_config(config)
        self._per_url = bool(options.proxies or options.credentials or options.netrc)
        if resolver is not None and options.proxy_hosts:
            resolver = ProxyNameResolver(resolver, options.proxy_hosts)
        self._resolver = resolver
        pinning = resolver.crawl if isinstance(resolver, ProxyNameResolver) else resolver
        self._pinning = pinning if isinstance(pinning, PinningResolver) else None
        self._ssl: ssl.SSLContext | bool = ssl_context or True
        self._session: aiohttp.ClientSession | None = None
        self._connector: _AiohttpInternals.Connector | None = None
        self._closed = False
        self._connects = 0

    def _open(self) -> aiohttp.ClientSession:
        """The session, created on first use inside the running loop."""
        config = self._config
        connections = max(64, 4 * config.concurrency)
        connector = _AiohttpInternals.Connector(
            self._connected,
            max_idle=idle_connections(),
            limit=connections,
            limit_per_host=0,
            keepalive_timeout=min(60.0, max(5.0, 2 * config.delay_ms / 1000)),
            use_dns_cache=False,
            resolver=self._resolver,
            ssl=self._ssl,
            happy_eyeballs_delay=None,
        )
        self._connector = connector
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers={
                "User-Agent": config.user_agent,
                "Accept": _ACCEPT,
                "Accept-Encoding": _ACCEPT_ENCODING,
                **dict(self._options.headers),
            },
            timeout=aiohttp.ClientTimeout(
                total=None,
                sock_connect=config.connect_timeout_ms / 1000,
                sock_read=config.read_timeout_ms / 1000,
            ),
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            trust_env=False,
            read_bufsize=_READ_BYTES,
            response_class=_AiohttpInternals.Response,
        )
        return self._session

    def _connected(self, host: str, transport: asyncio.BaseTransport | None, proxied: bool) -> None:
        """Called by the connector for each new connection to ``host`` (``proxied``:
        the socket goes to a proxy, whose address is not ``host``'s)."""
        self._connects += 1
        peer = transport.get_extra_info("peername") if transport is not None else None
        if self._pinning is not None and peer and not proxied:
            self._pinning.connected(host, peer[0])

    def statistics(self) -> FetcherStatistics:
        """The connections now (``FetcherStatistics``); never raises."""
        connector = self._connector
        idle = connector.idle() if connector is not None else 0
        return FetcherStatistics(connects=self._connects, idle=idle)

    async def __aenter__(self) -> AiohttpFetcher:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the session and its pooled connections; idempotent. Never raises."""
        self._closed = True
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def fetch(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        headers: Mapping[str, str] | None = None,
        want_body: Callable[[str], bool] | None = None,
        on_body: BodySink | None = None,
    ) -> FetchResult:
        """GET ``url`` once, without following redirects, reading at most ``max_bytes``.

        Args:
            url: an absolute http(s) URL (cleaned by ``core.urls.clean``: it is sent as
                it is, not re-quoted).
            max_bytes: cap on the decoded body in bytes; ``None`` means
                ``config.max_body_bytes``. A longer body is cut to its first
                ``max_bytes`` bytes and the result has ``truncated=True``; the rest is
                not read (the connection is dropped, not reused).
            headers: extra request headers for this request only (a ``Cookie`` kept
                within one redirect chain, say); they override the session's
                (User-Agent, Accept, Accept-Encoding) of the same name. Nothing of
                them is kept for the next request.
            want_body: called once with the response's media type (``content_type``
                of the result: after sniffing, see ``FetchResult``) as soon as it is
                known, before the body is read; when it returns ``False`` the body is
                not read, the connection is dropped (unless the whole body had
                already arrived with the head) and the result has ``body=b""`` and
                ``skipped=True``. ``None``: every body is read.
            on_body: stream the body instead of holding it (a sitemap's reader):
                the decoded body is handed to ``on_body`` in chunks of at most 64 KiB
                as it arrives (a compressed chunk is decoded in such steps, so a bomb
                never expands in memory), within the same byte cap and the same
                ``total_timeout_ms``; it returns ``False`` to stop the read there
                (the rest is not read, the connection is dropped, ``truncated``).
                The result's ``body`` is then ``b""``, its ``wire_body`` the first
                ``STREAM_KEEP_BYTES`` bytes as transferred (for the WARC record;
                ``truncated`` when more came), and its media type is not sniffed.
                Only a 2xx body is streamed: another status's is skipped, as
                ``want_body`` would. ``None``: the body is held (see ``max_bytes``).

        Returns:
            A ``FetchResult`` for any HTTP status.

        Raises (each ``FetchError`` says in ``retryable`` whether to try again):
            FetchTimeout: connect timeout, read timeout, or the whole fetch took longer
                than ``total_timeout_ms``.
            ConnectFailed: connection refused, unreachable, reset or dropped during the
                TCP or TLS handshake, or the fetcher was closed.
            ConnectionLost: the connection closed or was reset before the response
                head was complete, or was reset before the end of the body.
            TlsFailed: the certificate does not verify, or no TLS can be agreed.
            RequestInvalid: a URL (or header) that cannot be requested (an IPv4
                host not in dotted-quad form included).
            ProtocolViolation: the reply is not valid HTTP/1.1 (status line, header
                syntax, a line over 8 190 bytes, more than 128 headers, chunked
                framing), its body is short (a clean close before ``Content-Length``
                bytes or the last chunk, a compressed stream that does not end), its
                Content-Encoding is stacked (``gzip, gzip``) or not gzip/deflate/br, or
                its body cannot be decoded.
            DnsNotFound, DnsTemporaryFailure, PrivateAddress: from the resolver, as
                themselves.

        A 3xx is a result like any other: its ``Location`` is returned untouched,
        however malformed; nothing is done with it here.
        """
        if self._closed:
            raise ConnectFailed(f"the fetcher is closed: {url}")
        limit = self._config.max_body_bytes if max_bytes is None else max_bytes
        total_ms = self._config.total_timeout_ms
        started = self._clock()
        try:
            target = URL(url, encoded=True)
        except (ValueError, TypeError) as exc:
            raise RequestInvalid(f"cannot request {url!r}: {_one_line(exc)}") from None
        try:
            async with asyncio.timeout(total_ms / 1000):
                return await self._get(target, url, limit, started, headers, want_body, on_body)
        except _LostOnFresh as lost:
            raise self._translate(lost.error, url) from None
        except FetchError:
            raise
        except Exception as exc:
            raise self._translate(exc, url) from None

    def _translate(self, exc: Exception, url: str) -> Exception:
        """The ``core.errors`` error for ``exc``, an error aiohttp (or the socket, or
        zlib) raised while fetching ``url``; anything else is returned as it is.

        What aiohttp raises, each met by a test against a real loopback server
        (``tests/test_fetcher.py``, ``tests/test_failure_kinds.py``): a refused or
        unreachable port ``ClientConnectorError``; an untrusted certificate
        ``ClientConnectorCertificateError``; no TLS on the port
        ``ClientConnectorSSLError``; a close before the head
        ``ServerDisconnectedError``, a reset ``ClientOSError``; a bad status line,
        header or chunk size, a line too long, too many headers ``ClientResponseError``
        (its message from the parser's ``BadHttpMessage``/``LineTooLong``); a short
        body ``ClientPayloadError`` (handled in ``_get``, which knows the connection).
        """
        if isinstance(exc, aiohttp.ConnectionTimeoutError):
            return FetchTimeout(f"connect timeout ({self._config.connect_timeout_ms} ms): {url}")
        if isinstance(exc, aiohttp.ServerTimeoutError):
            return FetchTimeout(f"read timeout ({self._config.read_timeout_ms} ms): {url}")
        if isinstance(exc, TimeoutError):
            total_ms = self._config.total_timeout_ms
            return FetchTimeout(f"total time budget of {total_ms} ms exceeded: {url}")
        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            problem = _one_line(exc.certificate_error)
            return TlsFailed(f"TLS certificate refused: {problem}: {url}")
        if isinstance(exc, aiohttp.ClientConnectorSSLError) and not isinstance(
            exc.os_error,
            ssl.SSLEOFError,  # dropped mid-handshake: a ConnectFailed
        ):
            return TlsFailed(f"TLS handshake failed: {_one_line(exc.os_error)}: {url}")
        if isinstance(exc, aiohttp.ClientConnectorError):
            where = f"{exc.host}:{exc.port}"
            code = exc.os_error.errno
            refused = code == errno.ECONNREFUSED
            # asyncio's "[Errno 111] Connect call failed ('127.0.0.1', 9)" names the
            # address once more: the OS's words for the errno say what happened
            problem = (
                f"[Errno {code}] {os.strerror(code)}"
                if isinstance(code, int) and not isinstance(exc.os_error, ssl.SSLError)
                else _one_line(exc.os_error)
            )
            return (ConnectRefused if refused else ConnectFailed)(
                f"connection failed: cannot connect to {where}: {problem}: {url}"
            )
        if isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError | ValueError):
            return RequestInvalid(f"cannot request {url!r}: {_one_line(exc)}")
        if isinstance(exc, aiohttp.ServerDisconnectedError):
            return ConnectionLost(f"connection closed before the response head was complete: {url}")
        if isinstance(exc, aiohttp.ClientOSError | ConnectionError):
            return ConnectionLost(f"connection lost: {_one_line(exc)}: {url}")
        if isinstance(exc, aiohttp.ClientResponseError):  # aiohttp's parser refused it
            problem = _one_line(exc.message) if exc.message else _one_line(exc)
            return ProtocolViolation(f"invalid HTTP response: {problem}: {url}")
        if isinstance(exc, aiohttp.ClientPayloadError | zlib.error | brotli.error):
            return ProtocolViolation(f"invalid HTTP response: {_one_line(exc)}: {url}")
        if isinstance(exc, aiohttp.ClientError | OSError):
            return ConnectFailed(f"connection failed: {_one_line(exc)}: {url}")
        return exc

    async def _get(
        self,
        target: URL,
        url: str,
        limit: int,
        started: float,
        headers: Mapping[str, str] | None,
        want_body: Callable[[str], bool] | None,
        on_body: BodySink | None = None,
    ) -> FetchResult:
        """The request itself; aiohttp errors propagate to ``fetch``, which translates
        them (but for a short or reset body, told apart here)."""
        session = self._session or self._open()
        host = target.raw_host
        if host and (host[-1].isdigit() or host[-1] == "." or ":" in host):
            # address_policy.ip_literal: memoised, so a host's literal check is parsed once, not per
            # request (issue #23)
            literal = ip_literal(host) is not None
            if not literal and host.replace(".", "").isdigit():
                # aiohttp would take it for an IPv4 literal without asking the resolver
                raise RequestInvalid(f"cannot request {url!r}: {host!r} is not a dotted-quad IPv4")
            if literal and self._pinning is not None:
                self._pinning.check_literal(host)
        proxy: str | None = None
        proxy_headers: dict[str, str] | None = None
        if self._per_url and host:
            options, scheme, port = self._options, target.scheme, target.port
            extra: dict[str, str] = {}
            chosen = options.proxy_for(scheme, host, port)
            if chosen is not None:
                proxy = chosen.url
                if chosen.user is not None:
                    value = aiohttp.encode_basic_auth(chosen.user, chosen.password or "")
                    if scheme == "https":  # on the CONNECT request
                        proxy_headers = {"Proxy-Authorization": value}
                    else:  # on the request itself, which the proxy reads
                        extra["Proxy-Authorization"] = value
            credentials = options.credentials_for(scheme, host, port)
            if credentials is not None:  # UTF-8 (RFC 7617 §2.1)
                extra["Authorization"] = aiohttp.encode_basic_auth(*credentials)
            if extra:
                headers = {**(headers or {}), **extra}
        async with session.get(
            target,
            allow_redirects=False,
            headers=headers,
            proxy=proxy,
            proxy_headers=proxy_headers,
        ) as response:
            assert isinstance(response, _AiohttpInternals.Response)  # the response_class
            received = _as_received(response.headers)
            reader = _Reader(response, _content_coding(received, url), limit, url)
            supplied = sniff.supplied_mime_type(
                received.getall("content-type", ()),
                received.getall("x-content-type-options", ()),
            )
            content_type = supplied.essence or ""
            sniffed = False
            if supplied.needs_header and on_body is None:
                await reader.read(sniff.RESOURCE_HEADER_BYTES)
                if reader.size:  # an empty body has nothing to sniff
                    computed = sniff.computed_mime_type(supplied, reader.head())
                    sniffed = computed != supplied.essence
                    content_type = computed
            skipped = want_body is not None and not want_body(content_type)
            if on_body is not None and not 200 <= response.status < 300:
                skipped = True  # a streamed read wants a 2xx body only
            if skipped:
                if not response.content.is_eof():
                    response.close()  # the body is not read: drop the connection
            elif on_body is not None:
                await reader.stream(on_body, STREAM_KEEP_BYTES)
                if reader.truncated:
                    response.close()  # the rest is not read: drop the connection
            else:
                await reader.read(None)
                if reader.truncated:
                    response.close()  # the rest is not read: drop the connection
            elapsed_ms = (self._clock() - started) * 1000
            version = response.version
            return FetchResult(
                url=url,
                status=response.status,
                headers=received,
                body=b"" if skipped else reader.body(),
                content_type=content_type,
                elapsed_ms=elapsed_ms,
                truncated=(reader.truncated or reader.wire_cut) and not skipped,
                skipped=skipped,
                sniffed=sniffed,
                http_version=f"{version.major}.{version.minor}" if version else "1.1",
                reason=response.reason or "",
                raw_headers=response.raw_headers,
                request_headers=tuple(
                    (name, value)
                    for name, value in response.request_info.headers.items()
                    if name.lower() not in _UNRECORDED
                ),
                wire_body=None if skipped else reader.wire(),
            )


class _Reader:
    """Reads the decoded body of one response, in steps, up to ``limit`` bytes.

    ``read(upto)`` reads network chunks, decoding them (``_Inflater``, ``_Unbrotli``)
    in steps of at most ``_READ_BYTES`` decoded bytes (and one more than what is left
    of ``limit``), until ``upto`` bytes are held (``None``: the whole body), the body
    ends, or it overflows ``limit`` (``truncated``: cut to ``limit``). The decoded bytes
    go into one growing buffer (``io.BytesIO``, whose ``getvalue`` hands over its own
    buffer without a copy), so a body costs its size once, plus one step: never a list
    of chunks and their join, nor a decoder's output of megabytes at once (a brotli or
    gzip bomb decodes a step at a time, as ``stream`` does).

    Raises (from ``read``):
        ConnectionLost: the connection was reset before the end of the body.
        ProtocolViolation: a short body (the connection closed cleanly before
            ``Content-Length`` bytes or the last chunk; a compressed stream that does
            not end), bad chunked framing, or undecodable compressed bytes.
    """

    def __init__(
        self, response: _AiohttpInternals.Response, coding: str | None, limit: int, url: str
    ) -> None:
        self._response = response
        self._inflater: _Inflater | _Unbrotli | None = None
        if coding:
            self._inflater = _Unbrotli() if coding == "br" else _Inflater(coding)
        self._limit = limit
        self._url = url
        self._body = io.BytesIO()
        self._wire: io.BytesIO | None = io.BytesIO() if coding else None  # coded bytes read
        self._fed = False
        self._wire_size = 0
        self.size = 0
        self.truncated = False
        self.wire_cut = False  # streamed: more was transferred than the prefix kept
        self.ended = False

    def head(self) -> bytes:
        """The resource header: the first ``RESOURCE_HEADER_BYTES`` bytes held."""
        return self._body.getvalue()[: sniff.RESOURCE_HEADER_BYTES]

    def body(self) -> bytes:
        """Every decoded byte held (the buffer itself, not a copy: call once, at the
        end of the read)."""
        return self._body.getvalue()

    def wire(self) -> bytes | None:
        """Every byte read as transferred (content coding kept), ``None`` without a
        content coding (then it is ``body()``)."""
        return None if self._wire is None else self._wire.getvalue()

    async def read(self, upto: int | None) -> None:
        """Read until ``upto`` bytes are held (``None``: to the end or the cut)."""
        inflater = self._inflater
        while not self.ended and not self.truncated and (upto is None or self.size < upto):
            if inflater is not None and self._fed:
                held = inflater.more(self._step())  # what the last step left in the decoder
                if held:
                    self._keep(held)
                    continue
            data = await self._next_read()
            if not data:
                return
            if inflater is None:
                self._keep(data)
                continue
            assert self._wire is not None
            self._wire.write(data)
            self._fed = True
            self._keep(inflater.feed(data, self._step()))

    def _keep(self, data: bytes) -> None:
        """Hold the decoded ``data``, cut at the cap (``truncated`` past it)."""
        room = self._limit - self.size
        if len(data) > room:
            data = data[:room]
            self.truncated = True
        self._body.write(data)
        self.size += len(data)

    async def stream(self, sink: BodySink, keep: int) -> None:
        """Read the whole body (to its end or the cut), handing the decoded bytes to
        ``sink`` in steps of at most ``_READ_BYTES`` instead of holding them; keep the
        first ``keep`` bytes as transferred (``wire``; ``wire_cut`` when more came).
        ``sink`` returning ``False`` stops the read (``truncated``)."""
        inflater = self._inflater
        wire = self._wire = io.BytesIO()
        while not self.ended:
            data = await self._next_read()
            if not data:
                return
            if self._wire_size < keep:
                wire.write(data[: keep - self._wire_size])
            self._wire_size += len(data)
            self.wire_cut = self._wire_size > keep
            if inflater is None:
                for start in range(0, len(data), _READ_BYTES):
                    if not await self._hand(data[start : start + _READ_BYTES], sink):
                        return
                continue
            self._fed = True
            out = inflater.feed(data, self._step())
            while out:
                if not await self._hand(out, sink):
                    return
                out = inflater.more(self._step())

    async def _next_read(self) -> bytes:
        """The next bytes as transferred; ``b""`` at the end of the body (``ended``).

        Raises:
            FetchError: the body was cut short or malformed (``_cut``, ``_check_end``).
        """
        try:
            data = await self._response.content.readany()
        except (aiohttp.ClientPayloadError, HttpProcessingError) as exc:
            raise self._cut(exc) from None
        if not data:
            self.ended = True
            self._check_end()
        return data

    def _step(self) -> int:
        """The most decoded bytes to take in one step: a read, and one more byte than
        the cap leaves (it tells a longer body from an exact one)."""
        return min(_READ_BYTES, self._limit - self.size + 1)

    async def _hand(self, data: bytes, sink: BodySink) -> bool:
        """Give ``data`` to ``sink`` within the cap; whether to read on."""
        if self.size + len(data) > self._limit:
            data = data[: self._limit - self.size]
            self.truncated = True
        self.size += len(data)
        if data and not await sink(data):
            self.truncated = True
        return not self.truncated

    def _check_end(self) -> None:
        """At the end of the body: a reset close-delimited body, or a compressed stream
        that did not end, is not a complete body."""
        url = self._url
        lost = self._response.lost_error
        headers = self._response.headers
        delimited = (
            "content-length" in headers or "chunked" in headers.get("transfer-encoding", "").lower()
        )
        if isinstance(lost, OSError) and not delimited:
            raise ConnectionLost(
                f"connection lost before the end of the body: {_one_line(lost)}: {url}"
            )
        if self._fed and self._inflater is not None and not self._inflater.complete:
            raise ProtocolViolation(f"invalid HTTP response: compressed body cut short: {url}")

    def _cut(self, exc: aiohttp.ClientPayloadError | HttpProcessingError) -> FetchError:
        """The error for a body aiohttp found incomplete or malformed."""
        url = self._url
        lost = self._response.lost_error
        if isinstance(lost, OSError):
            return ConnectionLost(
                f"connection lost before the end of the body: {_one_line(lost)}: {url}"
            )
        cause = exc if isinstance(exc, HttpProcessingError) else exc.__cause__
        if isinstance(cause, ContentLengthError | TransferEncodingError) and (
            "not enough data" in str(cause.message).lower()
        ):
            return ProtocolViolation(f"short body: {_one_line(cause.message)}: {url}")
        detail = (
            _one_line(cause.message) if isinstance(cause, HttpProcessingError) else _one_line(exc)
        )
        return ProtocolViolation(f"invalid HTTP response: {detail}: {url}")


__all__ = [
    "STREAM_KEEP_BYTES",
    "AiohttpFetcher",
    "FetcherStatistics",
    "idle_connections",
    "media_type",
]
