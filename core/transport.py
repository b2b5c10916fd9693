"""DNS pinning at httpcore's network-backend seam: connections go to the address
``core.dns`` resolved and the ``AddressPolicy`` allowed, while the URL, the Host
header and TLS SNI keep the name.

httpx -> ``PinnedTransport`` (an ``httpx.AsyncHTTPTransport``) -> httpcore's connection
pool -> ``PinningBackend.connect_tcp(host, port)``: the one place a TCP connection is
opened. There the name is resolved through the crawl's ``DnsCache``, every candidate
address is checked by the ``AddressPolicy`` (so the check is on the address actually
connected to and a name that rebinds to a refused address between two lookups is
caught), and the first allowed address that accepts the connection is used. httpcore
then runs TLS with ``server_hostname`` = the URL's host (``httpcore._async.connection``,
"sni_hostname or origin.host"), and httpx writes ``Host`` from the URL: nothing in the
request is rewritten, so redirects, keep-alive (the pool is keyed by origin = name)
and HTTP/2 work as without pinning.

Errors: ``DnsNotFound``, ``DnsTemporaryFailure`` and ``PrivateAddress`` leave
``connect_tcp`` as themselves; httpcore and httpx re-raise exceptions that are not
theirs unchanged (``httpx._transports.default.map_httpcore_exceptions``), so they reach
``Fetcher.fetch``'s caller as themselves. A refused or unreachable address raises
httpcore's ``ConnectError`` / ``ConnectTimeout``, which httpx maps and
``core.fetcher`` translates as before (``ConnectFailed`` / ``FetchTimeout``).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterable

import httpcore
import httpx

from core.config import CrawlConfig
from core.dns import AddressPolicy, DnsCache

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


class PinningBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that resolves with ``dns`` and connects by address.

    Args:
        dns: the crawl's ``DnsCache`` (it also learns which address each host's
            connection went to: ``dns.pinned(host)``).
        policy: the ``AddressPolicy`` every candidate address is checked against.
        inner: the backend that opens sockets to IP literals (default: httpcore's
            ``AnyIOBackend``, what httpx uses under asyncio).

    ``connects`` counts TCP connections opened (keep-alive reuse opens none).
    """

    def __init__(
        self,
        dns: DnsCache,
        policy: AddressPolicy,
        inner: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        self._dns = dns
        self._policy = policy
        self._inner = inner or httpcore.AnyIOBackend()
        self.connects = 0

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Resolve ``host``, keep the allowed addresses, connect to the first that answers.

        Args:
            host: the URL's host as httpcore gives it (IDNA name or IP literal, IPv6
                without brackets).
            port: the TCP port.
            timeout: connect budget in s for all addresses together (httpx's connect
                timeout); DNS has its own budget (``dns_timeout_ms``, retries).
            local_address, socket_options: passed on as httpcore defines them.

        Returns:
            The connected stream; the address used first is the one this host was
            pinned to before, if it is still among the answers.

        Raises:
            DnsNotFound, DnsTemporaryFailure: from ``DnsCache.resolve``.
            PrivateAddress: no address of ``host`` is allowed (nothing was sent).
            httpcore.ConnectError: every allowed address refused or failed.
            httpcore.ConnectTimeout: ``timeout`` ran out.
        """
        addresses = await self._dns.resolve(host)
        allowed = self._policy.select(host, addresses)
        pinned = self._dns.pinned(host)
        if pinned in allowed and allowed[0] != pinned:
            allowed.remove(pinned)
            allowed.insert(0, pinned)
        deadline = None if timeout is None else time.monotonic() + timeout
        error: Exception | None = None
        for address in allowed:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise httpcore.ConnectTimeout(f"connect timeout: {host} ({address})")
            try:
                stream = await self._inner.connect_tcp(
                    address,
                    port,
                    timeout=remaining,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
                continue
            self.connects += 1
            self._dns.note_connected(host, address)
            return stream
        assert error is not None  # ``allowed`` is never empty
        raise error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:  # pragma: no cover - the crawler never uses one
        """Unix sockets are not pinned (no name to resolve): passed to ``inner``."""
        return await self._inner.connect_unix_socket(
            path, timeout=timeout, socket_options=socket_options
        )

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` (httpcore's connect-retry pause), through ``inner``."""
        await self._inner.sleep(seconds)


class PinnedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport (request/response mapping, ``map_httpcore_exceptions``)
    over an httpcore pool whose network backend is a ``PinningBackend``.

    httpx 0.28 has no argument for a network backend, so the pool httpx builds is
    replaced by an equal one with ``network_backend=`` (httpcore's documented seam,
    docs/network-backends.md). ``tests/test_dns.py`` checks that requests really go
    through the backend, so a change of httpx's private ``_pool`` attribute is caught.
    """

    def __init__(
        self,
        backend: PinningBackend,
        *,
        ssl_context: ssl.SSLContext | None = None,
        limits: httpx.Limits,
        http1: bool = True,
        http2: bool = False,
    ) -> None:
        context = ssl_context or httpx.create_ssl_context(trust_env=False)
        super().__init__(verify=context, limits=limits, http1=http1, http2=http2, trust_env=False)
        self.backend = backend
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=http1,
            http2=http2,
            network_backend=backend,
        )


def fetcher_limits(config: CrawlConfig) -> httpx.Limits:
    """The connection limits ``core.fetcher.Fetcher`` gives its default transport:
    ``max(64, 4 x concurrency)`` connections, idle ones kept ``2 x delay_ms`` (5-60 s)
    so a connection outlives one politeness delay."""
    connections = max(64, 4 * config.concurrency)
    return httpx.Limits(
        max_connections=connections,
        max_keepalive_connections=connections,
        keepalive_expiry=min(60.0, max(5.0, 2 * config.delay_ms / 1000)),
    )


def build_transport(
    config: CrawlConfig,
    dns: DnsCache,
    policy: AddressPolicy,
    *,
    ssl_context: ssl.SSLContext | None = None,
    http2: bool = False,
) -> PinnedTransport:
    """The pinning transport for ``Fetcher(config, transport=...)``.

    Args:
        config: limits as in ``fetcher_limits(config)``.
        dns: the crawl's one ``DnsCache`` (shared with the engine).
        policy: the crawl's ``AddressPolicy`` (the engine trusts seed hosts on it).
        ssl_context: certificate verification (default: httpx's, certifi CAs).
        http2: offer HTTP/2 by ALPN (needs the ``h2`` package; the Fetcher is HTTP/1.1).

    Returns:
        A ``PinnedTransport``; ``transport.backend.connects`` counts TCP connections.
    """
    return PinnedTransport(
        PinningBackend(dns, policy),
        ssl_context=ssl_context,
        limits=fetcher_limits(config),
        http2=http2,
    )


__all__ = [
    "PinnedTransport",
    "PinningBackend",
    "build_transport",
    "fetcher_limits",
]
