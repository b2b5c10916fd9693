"""DNS pinning at aiohttp's resolver seam: connections go to the addresses ``core.net.dns``
resolved and the ``AddressPolicy`` (``core.policy.address_policy``) allowed, while the URL, the
Host header and TLS SNI keep the name.

``core.net.fetcher.AiohttpFetcher`` -> aiohttp's ``TCPConnector`` (``use_dns_cache=False``)
-> ``PinningResolver.resolve(host, port)``: called once for every new TCP connection to
a named host, and the only addresses the connector may connect to are the ones it
returns. The connector tries them in order (the one this host was pinned to first) and
runs TLS with ``server_hostname`` = the URL's host; aiohttp writes ``Host`` from the
URL: nothing in the request is rewritten, and the keep-alive pool is keyed by the name.

One choice per connection: ``PinningResolver.choose(host)`` resolves the name through
the crawl's ``DnsCache`` and checks every address with the ``AddressPolicy`` (one
``DnsCache.resolve``, one ``AddressPolicy.select``), and remembers the answer it chose
from. The engine calls it before each request (per-IP politeness needs the address
before the request starts); a new connection made for that request then takes the
chosen addresses without resolving or checking again, as long as the ``DnsCache``
still holds the very answer they were chosen from (``DnsCache.cached``, a read without
I/O). When it does not (the answer expired, was evicted, or was replaced by a new
lookup), or when no choice was made (a fetcher used on its own), the connection makes
its own choice. So every address connected to passed the policy, for a DNS answer
still current at connect time: a name that rebinds to a refused address between the
engine's lookup and the connection is refused there, and nothing is sent.

IP literals never reach a resolver in aiohttp, so the fetcher checks them with
``check_literal`` (the same policy) before sending; no rebinding is possible for them.

Errors: ``DnsNotFound``, ``DnsTemporaryFailure`` and ``PrivateAddress`` are not
``OSError``s, so aiohttp lets them out of the connector unchanged and they reach
``AiohttpFetcher.fetch``'s caller as themselves. A refused or unreachable address raises
aiohttp's connector errors, which ``core.net.fetcher`` translates (``ConnectFailed`` /
``FetchTimeout``).
"""

from __future__ import annotations

import socket
from collections import OrderedDict
from dataclasses import dataclass

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from crawldeck.core.net.dns import DnsCache
from crawldeck.core.policy.address_policy import AddressPolicy, bare_host

#: Choices kept, one per host (the default of ``dns_cache_size``: a choice outlives
#: its host's ``DnsCache`` entry only to be found stale).
CHOICES_KEPT = 100_000


@dataclass(frozen=True, slots=True)
class PinningStatistics:
    """A ``PinningResolver``'s counters (each since it was made).

    Attributes:
        choices: ``choose`` calls (the engine's, and those of connections that found
            no current choice): each runs one ``DnsCache.resolve`` and, when that
            answers, one ``AddressPolicy.select``.
        connections: new TCP connections to a named host (aiohttp's ``resolve`` calls).
        reused: connections that took a current choice (no lookup, no policy check).
    """

    choices: int
    connections: int
    reused: int


@dataclass(frozen=True, slots=True)
class _Choice:
    """The DNS answer a choice was made from, and the addresses the policy allowed."""

    answer: list[str]
    allowed: list[str]


class PinningResolver(AbstractResolver):
    """An aiohttp resolver that answers from ``dns`` what ``policy`` allows.

    Args:
        dns: the crawl's ``DnsCache``.
        policy: the ``AddressPolicy`` every candidate address is checked against.
        capacity: choices kept, one per host (the least recently made dropped first).

    ``choose(host)`` before a request; aiohttp calls ``resolve`` for each new
    connection. ``statistics()`` counts both.
    """

    def __init__(
        self, dns: DnsCache, policy: AddressPolicy, *, capacity: int = CHOICES_KEPT
    ) -> None:
        self._dns = dns
        self._policy = policy
        self._capacity = capacity
        self._choices: OrderedDict[str, _Choice] = OrderedDict()
        self._chosen = self._connections = self._reused = 0

    async def choose(self, host: str) -> list[str]:
        """The addresses ``host`` may be connected to, the one it was pinned to first:
        resolved and checked now, and remembered for its next new connection.

        Args:
            host: a name, an IP literal or a host key (``name:port``, ``[v6]:port``).

        Returns:
            a non-empty new list of address strings.

        Raises:
            DnsNotFound, DnsTemporaryFailure: from ``DnsCache.resolve``.
            PrivateAddress: no address of ``host`` is allowed (nothing is remembered).
        """
        name = bare_host(host)
        self._chosen += 1
        self._choices.pop(name, None)
        answer = await self._dns.resolve(name)
        allowed = self._policy.select(name, answer)
        self._choices[name] = _Choice(answer, allowed)
        self._choices.move_to_end(name)
        if len(self._choices) > self._capacity:
            self._choices.popitem(last=False)
        return self._pinned_first(name, allowed)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The allowed addresses of ``host`` for a new connection, the one it was pinned
        to first: the current choice's, else a new ``choose``.

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
        self._connections += 1
        name = bare_host(host)
        choice = self._choices.get(name)
        if choice is not None and self._dns.cached(name) == choice.answer:
            self._reused += 1
            allowed = self._pinned_first(name, choice.allowed)
        else:
            allowed = await self.choose(name)
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

    def _pinned_first(self, name: str, allowed: list[str]) -> list[str]:
        """A copy of ``allowed`` with the address ``name`` is pinned to first."""
        ordered = list(allowed)
        pinned = self._dns.pinned(name)
        if pinned in ordered and ordered[0] != pinned:
            ordered.remove(pinned)
            ordered.insert(0, pinned)
        return ordered

    def check_literal(self, host: str) -> None:
        """Apply the policy to an IP-literal host (aiohttp connects to literals without
        asking a resolver; the fetcher calls this first). ``host`` without brackets.

        Raises:
            PrivateAddress: the address is not allowed (nothing is sent).
        """
        self._policy.select(host, [host])

    def connected(self, host: str, address: str) -> None:
        """Record that a connection to ``host`` went to ``address`` (the fetcher calls
        this with the peer of each new connection), so ``DnsCache.pinned`` and the
        per-IP politeness agree with the socket. Never raises."""
        self._dns.note_connected(host, address)

    def statistics(self) -> PinningStatistics:
        """The counters now (``PinningStatistics``); never raises."""
        return PinningStatistics(
            choices=self._chosen, connections=self._connections, reused=self._reused
        )

    async def close(self) -> None:
        """Nothing to close: the ``DnsCache`` belongs to the crawl."""


class ProxyNameResolver(AbstractResolver):
    """The crawl's resolver for the sites' names, the system's for the proxies' names.

    A proxy (``proxy``, or ``HTTP(S)_PROXY`` with ``trust_env``) is the operator's own
    infrastructure, as the DNS servers are: its name is resolved by the system
    (``getaddrinfo``: ``/etc/hosts``, the system's DNS; aiohttp's
    ``ThreadedResolver``) and its address is not checked by the ``AddressPolicy``
    (a proxy on a private network is the usual case). Every other name goes to
    ``crawl``. An IP-literal proxy reaches no resolver at all (aiohttp connects to
    literals directly).

    Args:
        crawl: the crawl's resolver (a ``PinningResolver``).
        proxy_hosts: the proxies' host names (lowercase).
    """

    def __init__(self, crawl: AbstractResolver, proxy_hosts: frozenset[str]) -> None:
        self.crawl = crawl
        self._proxy_hosts = proxy_hosts
        self._system: ThreadedResolver | None = None  # made in the loop, on first use

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The addresses of ``host``: the system's for a proxy, else ``crawl``'s.

        Raises:
            OSError: the system cannot resolve a proxy's name (aiohttp's connector
                makes it a ``ClientConnectorError``, so a ``ConnectFailed``).
            DnsNotFound, DnsTemporaryFailure, PrivateAddress: from ``crawl``.
        """
        if host.lower().rstrip(".") in self._proxy_hosts:
            self._system = self._system or ThreadedResolver()
            return await self._system.resolve(host, port, socket.AF_UNSPEC)
        return await self.crawl.resolve(host, port, family)

    async def close(self) -> None:
        """Close the system resolver (the crawl's belongs to the crawl)."""
        if self._system is not None:
            await self._system.close()


__all__ = ["CHOICES_KEPT", "PinningResolver", "PinningStatistics", "ProxyNameResolver"]
