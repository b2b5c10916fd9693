"""DNS pinning at aiohttp's resolver seam: connections go to the addresses ``core.dns``
resolved and the ``AddressPolicy`` allowed, while the URL, the Host header and TLS SNI
keep the name.

``core.fetcher.AiohttpFetcher`` -> aiohttp's ``TCPConnector`` (``use_dns_cache=False``) ->
``PinningResolver.resolve(host, port)``: called once for every new TCP connection to a
named host, and the only addresses the connector may connect to are the ones it
returns. There the name is resolved through the crawl's ``DnsCache`` and every
candidate address is checked by the ``AddressPolicy``, so the check is on the address
actually connected to and a name that rebinds to a refused address between two lookups
is caught. The connector tries the returned addresses in order (the one this host was
pinned to first) and runs TLS with ``server_hostname`` = the URL's host; aiohttp writes
``Host`` from the URL: nothing in the request is rewritten, and the keep-alive pool is
keyed by the name.

IP literals never reach a resolver in aiohttp, so the fetcher checks them with
``check_literal`` (the same policy) before sending; no rebinding is possible for them.

Errors: ``DnsNotFound``, ``DnsTemporaryFailure`` and ``PrivateAddress`` are not
``OSError``s, so aiohttp lets them out of the connector unchanged and they reach
``AiohttpFetcher.fetch``'s caller as themselves. A refused or unreachable address raises
aiohttp's connector errors, which ``core.fetcher`` translates (``ConnectFailed`` /
``FetchTimeout``).
"""

from __future__ import annotations

import socket

from aiohttp.abc import AbstractResolver, ResolveResult

from crawldeck.core.dns import AddressPolicy, DnsCache


class PinningResolver(AbstractResolver):
    """An aiohttp resolver that answers from ``dns`` what ``policy`` allows.

    Args:
        dns: the crawl's ``DnsCache``.
        policy: the ``AddressPolicy`` every candidate address is checked against.

    ``lookups`` counts calls (one per new connection to a named host).
    """

    def __init__(self, dns: DnsCache, policy: AddressPolicy) -> None:
        self._dns = dns
        self._policy = policy
        self.lookups = 0

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The allowed addresses of ``host``, the one it was pinned to first.

        Args:
            host: the URL's host as aiohttp gives it (IDNA name; a trailing dot kept).
            port: the TCP port, copied into each result.
            family: ignored: the ``DnsCache`` applies ``dns_prefer``.

        Returns:
            aiohttp's ``ResolveResult`` dicts, numeric hosts only.

        Raises:
            DnsNotFound, DnsTemporaryFailure: from ``DnsCache.resolve``.
            PrivateAddress: no address of ``host`` is allowed (nothing is sent).
        """
        self.lookups += 1
        addresses = await self._dns.resolve(host)
        allowed = self._policy.select(host, addresses)
        pinned = self._dns.pinned(host)
        if pinned in allowed and allowed[0] != pinned:
            allowed.remove(pinned)
            allowed.insert(0, pinned)
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": socket.AF_INET6 if ":" in address else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address in allowed
        ]

    def check_literal(self, host: str) -> None:
        """Apply the policy to an IP-literal host (aiohttp connects to literals without
        asking a resolver; the fetcher calls this first). ``host`` without brackets.

        Raises:
            PrivateAddress: the address is not allowed (nothing is sent).
        """
        self._policy.select(host, [host])

    def connected(self, host: str, address: str) -> None:
        """Record that a connection to ``host`` went to ``address`` (the fetcher calls
        this with the peer of each response), so ``DnsCache.pinned`` and the per-IP
        politeness agree with the socket. Never raises."""
        self._dns.note_connected(host, address)

    async def close(self) -> None:
        """Nothing to close: the ``DnsCache`` belongs to the crawl."""


__all__ = ["PinningResolver"]
