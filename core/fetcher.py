"""One HTTP GET with caps on time and bytes: the crawler's only door to the network.

``Fetcher.fetch(url)`` sends one request with aiohttp and never follows a redirect (the
engine sends each ``Location`` back through the URL gates as a new hop). A 3xx comes
back with its ``Location`` header as the server sent it, whatever it says
(``mailto:``, a raw UTF-8 host, junk; bytes that are not UTF-8 read as Latin-1, as
RFC 9110 §5.5 allows for obs-text): the engine resolves it with ``core.urls.clean``,
which blocks what cannot be crawled. It reads the *decoded* body (gzip and deflate
undone here, in steps bounded by what is left of ``max_bytes``) and stops at
``max_bytes``, so a compression bomb costs at most ``max_bytes`` plus one network read.
Every aiohttp error is translated here into the ``core.errors`` tree; nothing foreign
escapes.

Why aiohttp: per request it costs about a third of httpcore's CPU and a thirtieth of
httpx's with hundreds of hosts in the pool (httpx 0.28 scans every pooled connection
on each request: 24.8 ms of CPU per request at 500 hosts, against 0.17 ms for aiohttp;
``benchmarks/RESULTS.md``).

Content codings: requests say ``Accept-Encoding: gzip, deflate`` (the codings whose
cost we know); a response whose ``Content-Encoding`` lists more than one coding
(``gzip, gzip``: each layer multiplies the bomb, 4 MB on the wire became 8 GB of
memory) or one we do not decode (``br``, ``compress``, junk) is refused with
``ProtocolViolation`` before its body is read. ``identity`` is no coding.

Budgets (``CrawlConfig``):
    connect_timeout_ms  TCP (and TLS) connection setup.
    read_timeout_ms     the longest silence while waiting for headers or body bytes.
    total_timeout_ms    the whole fetch, headers and body, whatever the server drips.
    max_body_bytes      decoded body bytes kept; more sets ``truncated``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import resource
import ssl
import time
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ClientRequest, ConnectionKey
from aiohttp.connector import Connection
from aiohttp.tracing import Trace
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from core.config import CrawlConfig
from core.errors import ConnectFailed, FetchTimeout, ProtocolViolation
from core.transport import PinningResolver

#: Sent with every request; the engine only parses HTML, the rest is recorded as is.
_ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"
#: The content codings we accept and decode (only codings whose decoding we bound).
_ACCEPT_ENCODING = "gzip, deflate"
_DECODED_CODINGS = frozenset({"gzip", "x-gzip", "deflate"})
#: The size of one read from the connection, bytes.
_READ_BYTES = 64 * 1024

Headers = CIMultiDictProxy[str]


def _content_coding(headers: Headers, url: str) -> str | None:
    """The one content coding of ``headers`` (lowercase), or ``None`` for none.

    ``identity`` and empty items do not count (RFC 9110 §8.4).

    Raises:
        ProtocolViolation: more than one coding (stacked, in one header or several),
            or a coding other than gzip/x-gzip/deflate.
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

    @property
    def complete(self) -> bool:
        """Whether the end of the compressed stream was reached."""
        return self._z.eof


#: Statuses that have no body (RFC 9110 §6.4.1): bytes a server sends after one would
#: be read as the next response on a kept-alive connection, so it is not kept
#: (``_Response``).
_NO_BODY = frozenset({204, 304})


@dataclass(frozen=True, slots=True)
class FetchResult:
    """The response to one GET, with its body cut at the byte cap.

    Attributes:
        url: the URL requested, exactly as passed to ``Fetcher.fetch`` (no redirect is
            followed, so it is also the final URL).
        status: the HTTP status code (any code: 3xx, 4xx and 5xx are results, not errors).
        headers: the response headers, case-insensitive, in the order received
            (``multidict.CIMultiDictProxy[str]``; ``headers[name]`` and ``get`` give the
            first value of a header sent several times, ``getall(name, ())`` all of
            them).
        body: the decoded body (Content-Encoding gzip/deflate undone), at most
            ``max_bytes`` bytes.
        content_type: the media type of ``Content-Type``, lowercased, without parameters
            (``"text/html"``); ``""`` when the header is absent.
        elapsed_ms: milliseconds from the start of the request to the end of the body
            read (or to the cut, when truncated).
        truncated: ``True`` when the decoded body was longer than ``max_bytes`` and was
            cut to its first ``max_bytes`` bytes.
    """

    url: str
    status: int
    headers: Headers
    body: bytes
    content_type: str
    elapsed_ms: float
    truncated: bool


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` value: lowercased, parameters dropped.

    ``"Text/HTML; charset=UTF-8"`` -> ``"text/html"``; ``None`` or ``""`` -> ``""``
    (RFC 9110 §8.3.1). Never raises.
    """
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def _is_ip_literal(host: str) -> bool:
    """Whether ``host`` (a URL's host, IPv6 without brackets) is an IP address."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _one_line(exc: BaseException) -> str:
    """``str(exc)`` on one line, or the exception's class name when it says nothing."""
    text = " ".join(str(exc).split())
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


class _Response(aiohttp.ClientResponse):
    """aiohttp's response, not keeping alive the connection of a 204 or 304: bytes a
    server sends after one (a body it should not have) would be read as the next
    response on that connection, failing an innocent URL. aiohttp has already put the
    connection back in its pool when ``start`` returns, so its protocol (the private
    ``_protocol``, aiohttp 3.x) is closed there and the pool drops it;
    ``tests/test_hostile_edges.py`` fails if that changes."""

    async def start(self, connection: Connection) -> _Response:
        await super().start(connection)
        if self.status in _NO_BODY and self._protocol is not None:
            self._protocol.close()
        return self


class _Connector(aiohttp.TCPConnector):
    """aiohttp's connector, telling its fetcher of each new connection (to count them
    and to pin the host to the address the socket really went to), and keeping idle
    keep-alive connections for at most ``max_idle`` hosts, the least recently used
    closed first (aiohttp's ``limit`` counts only connections in use: a crawl of
    50 000 hosts would otherwise hold a socket per host fetched in the keep-alive time).

    Overrides ``_create_connection`` and ``_release`` and reads ``_conns``, private parts
    of aiohttp's connector that have kept their shape since aiohttp 3.0;
    ``tests/test_dns.py`` (fall-over to a second address) and ``tests/test_fetcher.py``
    (keep-alive count, the idle cap) fail if they change.
    """

    def __init__(self, fetcher: Fetcher, *, max_idle: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._fetcher = fetcher
        self._max_idle = max_idle
        self._idle_hosts: OrderedDict[ConnectionKey, None] = OrderedDict()

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
        self._fetcher._connected(req.host, protocol.transport)
        return protocol


class Fetcher:
    """An aiohttp session set up for crawling; ``fetch`` is safe to call concurrently.

    Args:
        config: the crawl configuration (User-Agent, time budgets in ms, body cap).
        resolver: an ``aiohttp.abc.AbstractResolver`` for host names (the crawl's
            ``core.transport.PinningResolver``: DNS pinning and the address policy);
            ``None``: aiohttp's default (the system resolver).
        ssl_context: certificate verification for https (``None``: the system's
            default CA store, hostname checked).

    The session: HTTP/1.1, no automatic redirects, no cookies kept (every fetch is
    stateless, so no session-id trap can grow from a cookie), proxies and ``.netrc``
    from the environment ignored, keep-alive pool of ``max(64, 4 x concurrency)``
    connections in use (any number per host: the engine's politeness decides), idle
    ones kept ``2 x delay_ms`` (5-60 s) so a connection outlives one politeness delay,
    for the ``idle_connections()`` hosts used last; name
    lookups are never cached by aiohttp (the resolver caches, with TTLs). It is opened
    on the first fetch (aiohttp wants a running event loop). ``connects`` counts TCP
    connections opened (keep-alive reuse opens none). Close it with
    ``await fetcher.aclose()`` or use ``async with Fetcher(config) as fetcher``.
    """

    def __init__(
        self,
        config: CrawlConfig,
        *,
        resolver: AbstractResolver | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._config = config
        self._resolver = resolver
        self._pinning = resolver if isinstance(resolver, PinningResolver) else None
        self._ssl: ssl.SSLContext | bool = ssl_context or True
        self._session: aiohttp.ClientSession | None = None
        self._closed = False
        self.connects = 0

    def _open(self) -> aiohttp.ClientSession:
        """The session, created on first use inside the running loop."""
        config = self._config
        connections = max(64, 4 * config.concurrency)
        connector = _Connector(
            self,
            max_idle=idle_connections(),
            limit=connections,
            limit_per_host=0,
            keepalive_timeout=min(60.0, max(5.0, 2 * config.delay_ms / 1000)),
            use_dns_cache=False,
            resolver=self._resolver,
            ssl=self._ssl,
            happy_eyeballs_delay=None,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers={
                "User-Agent": config.user_agent,
                "Accept": _ACCEPT,
                "Accept-Encoding": _ACCEPT_ENCODING,
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
            response_class=_Response,
        )
        return self._session

    def _connected(self, host: str, transport: asyncio.BaseTransport | None) -> None:
        """Called by the connector for each new connection to ``host``."""
        self.connects += 1
        peer = transport.get_extra_info("peername") if transport is not None else None
        if self._pinning is not None and peer:
            self._pinning.connected(host, peer[0])

    async def __aenter__(self) -> Fetcher:
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

    async def fetch(self, url: str, *, max_bytes: int | None = None) -> FetchResult:
        """GET ``url`` once, without following redirects, reading at most ``max_bytes``.

        Args:
            url: an absolute http(s) URL (cleaned by ``core.urls.clean``: it is sent as
                it is, not re-quoted).
            max_bytes: cap on the decoded body in bytes; ``None`` means
                ``config.max_body_bytes``. A longer body is cut to its first
                ``max_bytes`` bytes and the result has ``truncated=True``; the rest is
                not read (the connection is dropped, not reused).

        Returns:
            A ``FetchResult`` for any HTTP status.

        Raises:
            FetchTimeout: connect timeout, read timeout, or the whole fetch took longer
                than ``total_timeout_ms``.
            ConnectFailed: connection refused or reset, TLS failure, a URL that cannot
                be requested (an IPv4 host not in dotted-quad form included), or the
                fetcher was closed.
            ProtocolViolation: the server's reply is not valid HTTP/1.1, its body is
                cut short (connection lost mid-body, a compressed stream that does not
                end), its Content-Encoding is stacked (``gzip, gzip``) or not
                gzip/deflate, or its body cannot be decoded.
            DnsNotFound, DnsTemporaryFailure, PrivateAddress: from the resolver, as
                themselves.

        A 3xx is a result like any other: its ``Location`` is returned untouched,
        however malformed; nothing is done with it here.
        """
        if self._closed:
            raise ConnectFailed(f"the fetcher is closed: {url}")
        limit = self._config.max_body_bytes if max_bytes is None else max_bytes
        total_ms = self._config.total_timeout_ms
        started = time.perf_counter()
        try:
            target = URL(url, encoded=True)
        except (ValueError, TypeError) as exc:
            raise ConnectFailed(f"cannot request {url!r}: {_one_line(exc)}") from None
        try:
            async with asyncio.timeout(total_ms / 1000):
                return await self._get(target, url, limit, started)
        except aiohttp.ConnectionTimeoutError:
            connect_ms = self._config.connect_timeout_ms
            raise FetchTimeout(f"connect timeout ({connect_ms} ms): {url}") from None
        except aiohttp.ServerTimeoutError:
            read_ms = self._config.read_timeout_ms
            raise FetchTimeout(f"read timeout ({read_ms} ms): {url}") from None
        except TimeoutError:
            raise FetchTimeout(f"total time budget of {total_ms} ms exceeded: {url}") from None
        except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError, ValueError) as exc:
            raise ConnectFailed(f"cannot request {url!r}: {_one_line(exc)}") from None
        except aiohttp.ClientResponseError as exc:  # aiohttp's parser refused the reply
            problem = _one_line(Exception(exc.message)) if exc.message else _one_line(exc)
            raise ProtocolViolation(f"invalid HTTP response: {problem}: {url}") from None
        except aiohttp.ClientPayloadError as exc:  # cut short, or bad chunked framing
            raise ProtocolViolation(f"invalid HTTP response: {_one_line(exc)}: {url}") from None
        except zlib.error as exc:
            raise ProtocolViolation(f"invalid HTTP response: {_one_line(exc)}: {url}") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise ConnectFailed(f"connection failed: {_one_line(exc)}: {url}") from None

    async def _get(self, target: URL, url: str, limit: int, started: float) -> FetchResult:
        """The request itself; aiohttp errors propagate to ``fetch``, which translates them."""
        session = self._session or self._open()
        host = target.raw_host
        if host and (host[-1].isdigit() or host[-1] == "." or ":" in host):
            literal = _is_ip_literal(host)
            if not literal and host.replace(".", "").isdigit():
                # aiohttp would take it for an IPv4 literal without asking the resolver
                raise ConnectFailed(f"cannot request {url!r}: {host!r} is not a dotted-quad IPv4")
            if literal and self._pinning is not None:
                self._pinning.check_literal(host)
        async with session.get(target, allow_redirects=False) as response:
            headers = _as_received(response.headers)
            coding = _content_coding(headers, url)
            inflater = _Inflater(coding) if coding else None
            chunks: list[bytes] = []
            size = 0
            truncated = False
            content = response.content
            fed = False
            while data := await content.readany():
                if inflater is not None:
                    fed = True
                    # one more byte than fits tells a longer body from an exact one
                    data = inflater.feed(data, limit - size + 1)
                if size + len(data) > limit:
                    chunks.append(data[: limit - size])
                    size = limit
                    truncated = True
                    break
                chunks.append(data)
                size += len(data)
            if fed and not truncated and inflater is not None and not inflater.complete:
                raise ProtocolViolation(f"invalid HTTP response: compressed body cut short: {url}")
            if truncated:
                response.close()  # the rest is not read: drop the connection
            elapsed_ms = (time.perf_counter() - started) * 1000
            return FetchResult(
                url=url,
                status=response.status,
                headers=headers,
                body=b"".join(chunks),
                content_type=media_type(headers.get("content-type")),
                elapsed_ms=elapsed_ms,
                truncated=truncated,
            )


__all__ = ["FetchResult", "Fetcher", "idle_connections", "media_type"]
