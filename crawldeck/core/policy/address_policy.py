"""Which addresses a fetch may connect to: host names and IP literals as the crawl
compares them, the IANA special-purpose address registries, and the policy that
refuses those addresses (the private-address guard).

* ``bare_host`` and ``ip_literal``: a host key's bare name, an IP literal's compressed
  form (memoised: both are asked once per fetch or per address resolved).
* ``special_purpose``: the category and source (RFC 6890 and its updates: loopback,
  private, link-local, multicast, reserved) of an address, judging an IPv6 address
  that carries an IPv4 one by that IPv4 address.
* ``AddressPolicy`` refuses special-purpose addresses unless the config allows them
  (``allow_private``, ``allow_networks``) or the host is trusted (a seed's own host:
  the operator named it). ``core.net.transport`` checks it on the very address it
  connects to, so a name that rebinds is caught; the fetcher checks IP literals.

Separate from ``core.net.dns`` (the resolver and its cache) because it judges addresses
however they were found, DNS or a literal in a URL, and does no I/O: pure, no clock.
It logs to the ``crawldeck.dns`` logger, as it did inside ``core.net.dns``.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from crawldeck.core.config import CrawlConfig
from crawldeck.core.errors import PrivateAddress

log = logging.getLogger("crawldeck.dns")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def bare_host(host: str) -> str:
    """The name or address of ``host`` without port, brackets or trailing dot, lowercased.

    Accepts a bare name (``"Example.COM."`` -> ``"example.com"``), a host key with a port
    (``"a.test:8080"`` -> ``"a.test"``), a bracketed IPv6 address with or without a port
    (``"[::1]:80"`` -> ``"::1"``) or a bare IPv6 address (``"::1"``). Never raises.
    """
    host = host.strip().lower()
    if host.startswith("["):
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


#: Distinct strings ``ip_literal`` and ``special_purpose`` remember (each asked once per
#: fetch or per address resolved: parsing with ``ipaddress`` was about 1 % of a crawl's
#: CPU, issue #23 item 2).
ADDRESS_MEMO: Final = 4096


@functools.lru_cache(maxsize=ADDRESS_MEMO)
def ip_literal(host: str) -> str | None:
    """The compressed form of ``host`` if it is an IPv4/IPv6 literal, else ``None``
    (the last ``ADDRESS_MEMO`` hosts asked are remembered)."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


# ------------------------------------------------------------ the address policy

#: The special-purpose blocks refused by default, most specific first: (network,
#: category, source). From the IANA IPv4 and IPv6 Special-Purpose Address Registries
#: (RFC 6890 and the RFCs named). 2001::/23 is refused whole, even its few globally
#: reachable sub-blocks (anycast and AS112 services, nothing to crawl).
_SPECIAL: tuple[tuple[IPNetwork, str, str], ...] = tuple(
    (ipaddress.ip_network(net), category, source)
    for net, category, source in (
        ("0.0.0.0/8", "reserved", "RFC 791 'this network'"),
        ("10.0.0.0/8", "private", "RFC 1918"),
        ("100.64.0.0/10", "private", "RFC 6598 shared address space"),
        ("127.0.0.0/8", "loopback", "RFC 1122"),
        ("169.254.0.0/16", "link-local", "RFC 3927"),
        ("172.16.0.0/12", "private", "RFC 1918"),
        ("192.0.0.0/24", "reserved", "RFC 6890 IETF protocol assignments"),
        ("192.0.2.0/24", "reserved", "RFC 5737 documentation"),
        ("192.88.99.0/24", "reserved", "RFC 7526 6to4 relay anycast"),
        ("192.168.0.0/16", "private", "RFC 1918"),
        ("198.18.0.0/15", "reserved", "RFC 2544 benchmarking"),
        ("198.51.100.0/24", "reserved", "RFC 5737 documentation"),
        ("203.0.113.0/24", "reserved", "RFC 5737 documentation"),
        ("224.0.0.0/4", "multicast", "RFC 5771"),
        ("240.0.0.0/4", "reserved", "RFC 1112, with 255.255.255.255 broadcast (RFC 919)"),
        ("::/128", "reserved", "RFC 4291 unspecified"),
        ("::1/128", "loopback", "RFC 4291"),
        ("::/96", "reserved", "RFC 4291 IPv4-compatible (deprecated)"),
        ("64:ff9b:1::/48", "private", "RFC 8215 local-use NAT64"),
        ("100::/64", "reserved", "RFC 6666 discard-only"),
        ("2001::/23", "reserved", "RFC 2928 IETF protocol assignments"),
        ("2001:db8::/32", "reserved", "RFC 3849 documentation"),
        ("fc00::/7", "private", "RFC 4193 unique local"),
        ("fe80::/10", "link-local", "RFC 4291"),
        ("fec0::/10", "private", "RFC 3879 site-local (deprecated)"),
        ("ff00::/8", "multicast", "RFC 4291"),
    )
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052: the IPv4 address is inside


@functools.lru_cache(maxsize=ADDRESS_MEMO)
def special_purpose(address: str) -> tuple[str, str] | None:
    """``(category, source)`` if ``address`` is special-purpose, ``None`` if public
    (the last ``ADDRESS_MEMO`` addresses asked are remembered).

    Categories: ``loopback``, ``private``, ``link-local``, ``multicast``, ``reserved``;
    the source names the RFC (table ``_SPECIAL``, IANA special-purpose registries,
    RFC 6890). IPv6 addresses that carry an IPv4 address (IPv4-mapped ``::ffff:0:0/96``,
    RFC 4291; NAT64 ``64:ff9b::/96``, RFC 6052; 6to4 ``2002::/16``, RFC 3056) are
    judged by that IPv4 address. Anything else Python's ``ipaddress`` does not call
    global is ``reserved``.

    Raises:
        ValueError: ``address`` is not an IP address.
    """
    ip: IPAddress = ipaddress.ip_address(address)
    ip = _embedded_v4(ip)
    for network, category, source in _SPECIAL:
        if ip in network:
            return category, source
    if not ip.is_global:
        return "reserved", "RFC 6890 special-purpose registry"
    return None


def _embedded_v4(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4), else ``ip``."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if ip.sixtofour is not None:
            return ip.sixtofour
    return ip


@dataclass(frozen=True, slots=True)
class AddressPolicySettings:
    """The settings ``AddressPolicy`` uses, named as ``CrawlConfig``'s keys.

    Attributes:
        allow_private: allow every address, special-purpose or not.
        allow_networks: CIDR strings (``"127.0.5.0/24"``) whose addresses are allowed
            even though special-purpose; ``from_config`` takes them from a
            ``CrawlConfig``, which checked that each is an IP network.
    """

    allow_private: bool
    allow_networks: tuple[str, ...]

    @classmethod
    def from_config(cls, config: CrawlConfig) -> AddressPolicySettings:
        """The address-policy settings of ``config`` (its keys of the same names)."""
        return cls(allow_private=config.allow_private, allow_networks=config.allow_networks)


class AddressPolicy:
    """Which addresses a host's connections may go to (the private-address guard).

    Args:
        settings: ``allow_private`` and ``allow_networks``
            (``AddressPolicySettings.from_config(config)``).
        inform: called with one line the first time a trusted host is let through
            to a special-purpose address (the engine's log, an information line: the
            operator named the host, nothing is wrong); default: the
            ``crawldeck.dns`` logger at INFO.

    An address is allowed when it is public (``special_purpose`` is ``None``), when
    ``allow_private`` is set, when it lies in ``allow_networks``, or when the host was
    ``trust``-ed (a seed's own host). Hosts are compared by ``bare_host``.
    """

    def __init__(
        self, settings: AddressPolicySettings, inform: Callable[[str], None] | None = None
    ) -> None:
        """A policy with ``settings``; raises ``ValueError`` for an ``allow_networks``
        entry that is not an IP network (``CrawlConfig`` refuses those first)."""
        self._allow_private = settings.allow_private
        self._networks: tuple[IPNetwork, ...] = tuple(
            ipaddress.ip_network(n, strict=False) for n in settings.allow_networks
        )
        self._inform = inform or (lambda line: log.info("%s", line))
        self._trusted: set[str] = set()
        self._announced: set[str] = set()
        self._allowed: dict[str, bool] = {}  # address -> in allow_networks

    def trust(self, host: str) -> None:
        """Trust ``host`` (a name, IP literal or host key; its port is ignored) to
        connect to any address: the engine calls this for each seed's host."""
        self._trusted.add(bare_host(host))

    def is_trusted(self, host: str) -> bool:
        """Whether ``host`` was ``trust``-ed."""
        return bare_host(host) in self._trusted

    def check(self, host: str, address: str) -> None:
        """Allow a connection of ``host`` to ``address``, or raise.

        Raises:
            PrivateAddress: ``address`` is special-purpose (RFC 6890; see
                ``special_purpose``), not in ``allow_networks``, ``allow_private`` is
                off and ``host`` is not trusted; or ``address`` is not an IP address.
        """
        name = bare_host(host)
        try:
            special = special_purpose(address)
        except ValueError:
            raise PrivateAddress(
                f"{name}: {address!r} is not an IP address", host=name, address=address
            ) from None
        if special is None or self._allow_private or self._in_allowed(address):
            return
        category, source = special
        if name in self._trusted:
            if name not in self._announced:
                self._announced.add(name)
                self._inform(
                    f"{name}: seed host at {category} address {address} ({source}) "
                    f"trusted: the operator named it"
                )
            return
        raise PrivateAddress(
            f"{name} resolves to {category} address {address} ({source}); "
            f"not allowed (allow_private / allow_networks)",
            host=name,
            address=address,
        )

    def allows(self, host: str, address: str) -> bool:
        """``check`` as a boolean (never raises, never audits a refusal)."""
        try:
            self.check(host, address)
        except PrivateAddress:
            return False
        return True

    def select(self, host: str, addresses: Iterable[str]) -> list[str]:
        """The allowed ones of ``addresses``, in order.

        Raises:
            PrivateAddress: none is allowed (the error names the first refused one).
        """
        allowed: list[str] = []
        first: PrivateAddress | None = None
        for address in addresses:
            try:
                self.check(host, address)
            except PrivateAddress as exc:
                first = first or exc
                continue
            allowed.append(address)
        if allowed:
            return allowed
        if first is None:
            raise PrivateAddress(f"{bare_host(host)}: no address", host=bare_host(host))
        raise first

    def _in_allowed(self, address: str) -> bool:
        """Whether ``address`` (or the IPv4 address it carries) is in ``allow_networks``
        (the last ``ADDRESS_MEMO`` answers remembered)."""
        known = self._allowed.get(address)
        if known is None:
            ip = ipaddress.ip_address(address)
            candidates = {ip, _embedded_v4(ip)}
            known = any(c in network for c in candidates for network in self._networks)
            if len(self._allowed) >= ADDRESS_MEMO:
                self._allowed.clear()
            self._allowed[address] = known
        return known


__all__ = [
    "AddressPolicy",
    "AddressPolicySettings",
    "bare_host",
    "ip_literal",
    "special_purpose",
]
