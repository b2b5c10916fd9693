"""One HTTP GET with caps on time and bytes: the crawler's only door to the network.

``AiohttpFetcher.fetch(url)`` (the aiohttp ``core.protocols.Fetcher``) sends one request
with aiohttp and never follows a redirect (the engine sends each ``Location`` back
through the URL gates as a new hop). A 3xx comes back with its ``Location`` header as
the server sent it, whatever it says (``mailto:``, a raw UTF-8 host, junk; bytes that
are not UTF-8 read as Latin-1, as RFC 9110 §5.5 allows for obs-text): the engine
resolves it with ``core.policy.urls.clean``, which blocks what cannot be crawled. It reads the
*decoded* body (gzip, deflate and br undone by ``core.net.body_reader``, in steps of at
most 64 KiB and what is left of ``max_bytes``) and stops at ``max_bytes``, so a
compression bomb costs at most ``max_bytes`` plus one network read and one decoded
step (64 KiB, and for brotli one output block more, about 32 KiB), held once in one
buffer, never joined. Every
aiohttp error is translated into the ``core.errors`` tree (``core.net.fetch_errors``;
the body's own in ``core.net.body_reader``); nothing foreign
escapes, and each error says in ``retryable`` whether it is transient (timeouts, refused
or lost connections) or deterministic (malformed replies, short bodies, bad codings, TLS
that cannot work, URLs that cannot be sent).

Bodies not needed are not downloaded: ``fetch(url, want_body=...)`` asks the caller,
once the media type is known, whether to read the body at all; if not, the
connection is closed right after the head (a 700 MB zip costs a few network reads).
The media type is the one WHATWG MIME Sniffing computes (``core.policy.sniff``): a response
without a usable ``Content-Type`` (absent, unparsable, ``unknown/unknown``,
``application/unknown``, ``*/*``) is sniffed from its first 1445 decoded bytes (§5.2,
§7.1) before it is called non-HTML, and so is the ``text/plain`` of the Apache bug
(§7.2).

Bodies read as they arrive: ``fetch(url, on_body=...)`` hands a 2xx body to a reader
(a sitemap's, ``core.crawl.sitemaps``) in decoded steps of at most 64 KiB instead of
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

Request options (``core.net.request_options.RequestOptions``, read from the config at
start): the ``header`` fields go with every request; Basic credentials (``auth``,
``netrc``) are chosen per request from its URL's origin (host, for netrc), so a
redirect's target, fetched as a request of its own, gets its own or none; a proxy
(``proxy``, or the environment's with ``trust_env``) carries the request, ``CONNECT``
for https. Through a proxy the proxy resolves the name and opens the connection: the
address policy and per-IP politeness still act on the crawler's own lookup of the
name (the engine's ``PinningResolver.choose`` before each request; an IP-literal URL is
checked here), the socket's peer (the proxy) is not taken as the host's address, and
the proxy's own name is resolved by the system, not checked by the policy
(``core.net.transport.ProxyNameResolver``). ``Authorization`` is left out of
``FetchResult.request_headers`` (and so of the WARC request records).

Budgets (``CrawlConfig``):
    connect_timeout_ms  TCP (and TLS) connection setup.
    read_timeout_ms     the longest silence while waiting for headers or body bytes.
    total_timeout_ms    the whole fetch, headers and body, whatever the server drips.
    max_body_bytes      decoded body bytes kept; more sets ``truncated``.
"""

from __future__ import annotations

import asyncio
import resource
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType

import aiohttp
from aiohttp.abc import AbstractResolver
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from crawldeck.core.clock import LoopClock
from crawldeck.core.config import CrawlConfig
from crawldeck.core.errors import (
    ConnectFailed,
    FetchError,
    RequestInvalid,
)
from crawldeck.core.net.aiohttp_internals import AiohttpInternals, LostOnFresh
from crawldeck.core.net.body_reader import ACCEPT_ENCODING, READ_BYTES, BodyReader, content_coding
from crawldeck.core.net.fetch_errors import one_line, translate
from crawldeck.core.net.request_options import RequestOptions
from crawldeck.core.net.transport import PinningResolver, ProxyNameResolver
from crawldeck.core.policy import sniff
from crawldeck.core.policy.address_policy import ip_literal
from crawldeck.core.records import BodySink, FetchResult, Headers

#: Sent with every request; the engine only parses HTML, the rest is recorded as is.
_ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"
#: Request fields left out of ``FetchResult.request_headers`` (credentials).
_UNRECORDED = frozenset({"authorization", "proxy-authorization"})
#: Bytes of a streamed body (``fetch(on_body=...)``) kept as transferred, for its WARC
#: record (a sitemap of up to 50 MiB is parsed as it arrives, never held whole).
STREAM_KEEP_BYTES = 1024 * 1024

#: Statuses whose response has no body (RFC 9110 §6.4.1: 204, 304): nothing to skip.
NO_BODY = frozenset({204, 304})


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


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` value: lowercased, parameters dropped.

    ``"Text/HTML; charset=UTF-8"`` -> ``"text/html"``; ``None`` or ``""`` -> ``""``
    (RFC 9110 §8.3.1). Never raises.
    """
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def idle_connections(soft: int | None = None) -> int:
    """How many hosts may keep an idle keep-alive connection: half this process's
    soft limit on open files (RLIMIT_NOFILE; ``soft``: that limit, when given, so a
    test need not lower the process's own), between 64 and 8 192.

    A crawl going round many hosts reuses a host's connection only if it is still
    open when the host comes round again, so the cap should cover the hosts in
    rotation; half the descriptor limit leaves the rest for connections in use, the
    SQLite files and DNS. ``crawldeck`` raises the soft limit (``cli.runner``), so this is
    8 192 there; at the usual default of 1 024 it is 512.
    """
    if soft is None:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return 8192
    return max(64, min(8192, soft // 2))


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
    aiohttp's internals is in ``core.net.aiohttp_internals.AiohttpInternals``.

    Args:
        config: the crawl configuration (User-Agent, time budgets in ms, body cap,
            the request options: ``header``, ``proxy``, ``trust_env``, ``netrc``,
            ``auth``).
        resolver: an ``aiohttp.abc.AbstractResolver`` for host names (the crawl's
            ``core.net.transport.PinningResolver``: DNS pinning and the address policy);
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
        self._connector: AiohttpInternals.Connector | None = None
        self._closed = False
        self._connects = 0

    def _open(self) -> aiohttp.ClientSession:
        """The session, created on first use inside the running loop."""
        config = self._config
        connections = max(64, 4 * config.concurrency)
        connector = AiohttpInternals.Connector(
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
                "Accept-Encoding": ACCEPT_ENCODING,
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
            read_bufsize=READ_BYTES,
            response_class=AiohttpInternals.Response,
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
            url: an absolute http(s) URL (cleaned by ``core.policy.urls.clean``: it is sent as
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
            raise RequestInvalid(f"cannot request {url!r}: {one_line(exc)}") from None
        try:
            async with asyncio.timeout(total_ms / 1000):
                return await self._get(target, url, limit, started, headers, want_body, on_body)
        except LostOnFresh as lost:
            raise translate(lost.error, url, self._config) from None
        except FetchError:
            raise
        except Exception as exc:
            raise translate(exc, url, self._config) from None

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
        them (but for a short or reset body, told apart by ``BodyReader``)."""
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
            assert isinstance(response, AiohttpInternals.Response)  # the response_class
            received = _as_received(response.headers)
            reader = BodyReader(response, content_coding(received, url), limit, url)
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
            if (
                skipped
                and on_body is None
                and (response.content_length == 0 or response.status in NO_BODY)
            ):
                skipped = False  # an empty body is whole: nothing left out (issue #25 trial 9)
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
            elapsed_ms = round((self._clock() - started) * 1000, 3)  # to the µs
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


__all__ = [
    "STREAM_KEEP_BYTES",
    "AiohttpFetcher",
    "FetcherStatistics",
    "idle_connections",
    "media_type",
]
