"""Name resolution for every fetch: one asynchronous resolver, its cache, and the
address policy that decides which addresses may be connected to.

* ``DnsCache`` resolves names with c-ares (aiodns ``query_dns``, A and AAAA), never
  with a blocking ``getaddrinfo``. A positive answer wins: the addresses of whichever
  family gave some are used, and a name is not found only when both A and AAAA say
  NXDOMAIN or NODATA (RFC 4074 §4.2: some servers answer NXDOMAIN to AAAA alone).
  It keeps an LRU cache keyed by name; each answer lives for its TTL clamped to
  ``[dns_min_ttl_s, dns_max_ttl_s]``. NXDOMAIN and NODATA are cached too (RFC 2308
  §5: for the SOA minimum when the resolver gives it, clamped the same way, else
  ``dns_negative_ttl_s``). Concurrent lookups of one name share one query; a
  semaphore caps the queries in flight (``dns_max_in_flight``). Timeouts, SERVFAIL
  and REFUSED are retried ``dns_retries`` times with backoff and are never cached
  (RFC 2308 §7.1 allows it for 5 min at most; the engine's per-host backoff is the
  better place to wait).
* ``AddressPolicy`` refuses addresses of the IANA special-purpose registries
  (RFC 6890 and its updates: loopback, private, link-local, multicast, reserved)
  unless the config allows them (``allow_private``, ``allow_networks``) or the host
  is trusted (a seed's own host: the operator named it). ``core.transport`` checks it
  on the very address it connects to, so a name that rebinds is caught.
* ``IpLimiter``: the per-IP limit (``ip_delay_ms``) shared by hosts that resolve to
  one address, keyed by IP address.

Each takes its settings as a small frozen object built from the crawl's config
(``DnsSettings``, ``AddressPolicySettings``, ``IpLimitSettings``: ``from_config``).

Below this cache sits c-ares's own query cache (c-ares >= 1.23, on by default and not
configurable through pycares 5). It honours record TTLs (at most 1 h), so it never
serves an expired answer, but a ``dns_max_ttl_s`` shorter than a record's TTL may
see the re-query answered from it until that TTL ends. pycares 5 drops the reply of
a failed query, so aiodns never exposes an NXDOMAIN's SOA: with ``AiodnsResolver``
the negative TTL is always ``dns_negative_ttl_s`` (a ``Resolver`` that knows the SOA
minimum passes it in ``Answer.ttl_s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import logging
import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol

import aiodns
import pycares

from crawldeck.core.clock import LoopClock
from crawldeck.core.config import CrawlConfig, DnsPreference
from crawldeck.core.errors import DnsError, DnsNotFound, DnsTemporaryFailure, PrivateAddress
from crawldeck.core.token_bucket import TokenBucket

log = logging.getLogger("crawldeck.dns")

RecordType = Literal["A", "AAAA"]
AnswerStatus = Literal["ok", "nodata", "nxdomain"]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: The first retry after a temporary failure waits this long (s); each next one twice.
RETRY_BASE_S = 0.2
#: Slack (s) on top of ``dns_timeout_ms`` before a query c-ares never answered is
#: abandoned (a guard: c-ares answers every query with a result or ETIMEOUT).
GUARD_SLACK_S = 1.0
#: Names answered without a query (RFC 6761 §6.3: localhost names are loopback).
LOCALHOST_V4 = "127.0.0.1"
LOCALHOST_V6 = "::1"


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


# ------------------------------------------------------------------- resolvers


@dataclass(frozen=True, slots=True)
class Answer:
    """One A or AAAA question's answer, as a ``Resolver`` reports it.

    Attributes:
        status: ``ok`` (records came), ``nodata`` (the name exists, no record of this
            type) or ``nxdomain`` (the name does not exist).
        addresses: the addresses (empty unless ``ok``), in the server's order.
        ttl_s: for ``ok``, the least TTL in s of the answer's records (CNAMEs
            included); for ``nodata``/``nxdomain``, the negative TTL
            ``min(SOA TTL, SOA MINIMUM)`` when known (RFC 2308 §5), else ``None``.
    """

    status: AnswerStatus
    addresses: tuple[str, ...] = ()
    ttl_s: float | None = None


class Resolver(Protocol):
    """What ``DnsCache`` asks a DNS client for (``AiodnsResolver`` or a test double)."""

    async def query(self, name: str, rtype: RecordType) -> Answer:
        """Ask for ``rtype`` records of ``name``.

        Raises:
            DnsTemporaryFailure: timeout, SERVFAIL, REFUSED, a broken reply.
        """
        ...  # pragma: no cover

    async def close(self) -> None:
        """Release sockets and threads; idempotent."""
        ...  # pragma: no cover


#: c-ares status codes that mean "the name has no such record" (not a failure).
_NODATA = {aiodns.error.ARES_ENODATA}
_NXDOMAIN = {aiodns.error.ARES_ENOTFOUND, aiodns.error.ARES_EBADNAME}


class AiodnsResolver:
    """``Resolver`` on aiodns 4 / pycares 5 (c-ares): ``query_dns(name, "A"|"AAAA")``.

    Args:
        nameservers: ``"IP"``, ``"IP:port"`` or ``"[IPv6]:port"`` strings; empty: the
            system's ``/etc/resolv.conf``, read by c-ares.
        timeout_s: how long one query waits for its answer, in s (c-ares makes one try;
            ``DnsCache`` does the retrying).

    Must be created inside the running event loop (aiodns binds to it). No search
    domains apply (``query_dns`` asks for the name as given), and ``/etc/hosts`` is
    not read (c-ares reads it only for ``getaddrinfo``).
    """

    def __init__(self, nameservers: Sequence[str], timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._resolver = aiodns.DNSResolver(
            nameservers=list(nameservers) or None, timeout=timeout_s, tries=1
        )

    async def query(self, name: str, rtype: RecordType) -> Answer:
        """See ``Resolver.query``; c-ares status codes are translated here."""
        try:
            async with asyncio.timeout(self._timeout_s + GUARD_SLACK_S):
                result = await self._resolver.query_dns(name, rtype)
        except TimeoutError:
            raise DnsTemporaryFailure(f"{name}: no answer in time") from None
        except aiodns.error.DNSError as exc:
            code = exc.args[0] if exc.args else None
            if code in _NODATA:
                return Answer("nodata")
            if code in _NXDOMAIN:
                return Answer("nxdomain")
            message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
            token = pycares.errno.errorcode.get(code, "?") if isinstance(code, int) else "?"
            raise DnsTemporaryFailure(f"{name}: {message} ({token})") from None
        wanted = pycares.QUERY_TYPE_A if rtype == "A" else pycares.QUERY_TYPE_AAAA
        addresses = tuple(str(r.data.addr) for r in result.answer if r.type == wanted)  # type: ignore[union-attr]
        if not addresses:
            return Answer("nodata")
        return Answer("ok", addresses, float(min(r.ttl for r in result.answer)))

    async def close(self) -> None:
        """Close the c-ares channel; idempotent."""
        await self._resolver.close()


def _not_found_message(name: str, answers: Sequence[tuple[RecordType, Answer]]) -> str:
    """The ``DnsNotFound`` message for negative answers (``nodata``/``nxdomain``),
    e.g. ``"x.test: no A or AAAA record (A: NODATA, AAAA: NXDOMAIN)"`` (A first)."""
    statuses = {answer.status for _, answer in answers}
    if statuses == {"nxdomain"}:
        return f"{name}: no such domain (NXDOMAIN)"
    if statuses == {"nodata"}:
        return f"{name}: no A or AAAA record (NODATA)"
    each = ", ".join(
        f"{rtype}: {answer.status.upper()}"
        for rtype, answer in sorted(answers, key=lambda pair: pair[0])
    )
    return f"{name}: no A or AAAA record ({each})"


# ------------------------------------------------------------------- the cache


@dataclass(frozen=True, slots=True)
class DnsStats:
    """Counters of a ``DnsCache`` since it was made (a read-only copy).

    Attributes:
        lookups: ``resolve`` calls for names (IP literals and localhost not counted).
        hits: lookups answered from a fresh positive entry.
        negative_hits: lookups answered from a fresh NXDOMAIN/NODATA entry.
        misses: lookups that needed a query (started one or joined one in flight).
        coalesced: misses that joined a lookup of the same name already in flight.
        queries: DNS questions sent (A and AAAA count apart; retries count).
        not_found: lookups whose query ended in NXDOMAIN/NODATA.
        failures: lookups that ended in ``DnsTemporaryFailure`` after every retry.
        in_flight: questions outstanding now.
        in_flight_peak: the most questions ever outstanding at once
            (``<= dns_max_in_flight``).
        entries: names in the cache now (fresh or expired).
        evictions: entries dropped by the LRU size cap.
    """

    lookups: int
    hits: int
    negative_hits: int
    misses: int
    coalesced: int
    queries: int
    not_found: int
    failures: int
    in_flight: int
    in_flight_peak: int
    entries: int
    evictions: int

    @property
    def hit_ratio(self) -> float:
        """``(hits + negative_hits) / lookups`` (0.0 before any lookup)."""
        return (self.hits + self.negative_hits) / self.lookups if self.lookups else 0.0


class _Entry:
    """One cached name: addresses (positive) or a ``DnsNotFound`` message (negative)."""

    __slots__ = ("addresses", "expires_at", "not_found")

    def __init__(
        self, addresses: tuple[str, ...], not_found: str | None, expires_at: float
    ) -> None:
        self.addresses = addresses
        self.not_found = not_found
        self.expires_at = expires_at


@dataclass(frozen=True, slots=True)
class DnsSettings:
    """The settings ``DnsCache`` uses, named and counted as ``CrawlConfig``'s keys.

    Attributes:
        dns_nameservers: ``"IP"``, ``"IP:port"`` or ``"[IPv6]:port"`` strings; empty:
            the system's ``/etc/resolv.conf``.
        dns_prefer: ``ipv4`` or ``ipv6``: which family's addresses come first.
        dns_min_ttl_s, dns_max_ttl_s: an answer's TTL is clamped to this range (s).
        dns_negative_ttl_s: NXDOMAIN / NODATA lifetime (s) without an SOA minimum.
        dns_cache_size: names kept in the LRU cache.
        dns_max_in_flight: queries outstanding at once (A and AAAA count apart).
        dns_timeout_ms: how long one query waits for its answer (ms).
        dns_retries: further tries after a timeout / SERVFAIL / REFUSED.

    Not checked here: ``from_config`` takes them from a ``CrawlConfig``, which
    checked their ranges.
    """

    dns_nameservers: tuple[str, ...]
    dns_prefer: DnsPreference
    dns_min_ttl_s: int
    dns_max_ttl_s: int
    dns_negative_ttl_s: int
    dns_cache_size: int
    dns_max_in_flight: int
    dns_timeout_ms: int
    dns_retries: int

    @classmethod
    def from_config(cls, config: CrawlConfig) -> DnsSettings:
        """The DNS settings of ``config`` (its keys of the same names)."""
        return cls(
            dns_nameservers=config.dns_nameservers,
            dns_prefer=config.dns_prefer,
            dns_min_ttl_s=config.dns_min_ttl_s,
            dns_max_ttl_s=config.dns_max_ttl_s,
            dns_negative_ttl_s=config.dns_negative_ttl_s,
            dns_cache_size=config.dns_cache_size,
            dns_max_in_flight=config.dns_max_in_flight,
            dns_timeout_ms=config.dns_timeout_ms,
            dns_retries=config.dns_retries,
        )


class DnsCache:
    """The crawl's one resolver: an LRU cache of names in front of c-ares.

    Args:
        settings: the servers, TTL clamps, cache size, concurrency, timeout and
            retries (``DnsSettings.from_config(config)``).
        clock: wall-clock epoch seconds (entries expire by it).
        resolver_factory: makes the ``Resolver`` on first use, inside the event loop;
            default: ``AiodnsResolver(dns_nameservers, dns_timeout_ms / 1000)``.

    A and AAAA are asked at once. The addresses of either family are the answer even
    when the other said NXDOMAIN, NODATA or failed; the name is not found
    (``DnsNotFound``) only when both said NXDOMAIN or NODATA (``_query_both``).

    Use ``await resolve(host)``; ``cached(host)`` and ``pinned(host)`` read without
    I/O (console, ``hosts`` table, per-IP politeness). ``await aclose()`` at the end.
    Not thread-safe: one event loop.
    """

    def __init__(
        self,
        settings: DnsSettings,
        clock: Callable[[], float] | None = None,
        resolver_factory: Callable[[], Resolver] | None = None,
    ) -> None:
        self._clock = clock or LoopClock()
        self._factory = resolver_factory or (
            lambda: AiodnsResolver(settings.dns_nameservers, settings.dns_timeout_ms / 1000)
        )
        self._resolver: Resolver | None = None
        self._prefer_v6 = settings.dns_prefer == "ipv6"
        self._min_ttl = float(settings.dns_min_ttl_s)
        self._max_ttl = float(settings.dns_max_ttl_s)
        self._negative_ttl = float(settings.dns_negative_ttl_s)
        self._size = settings.dns_cache_size
        self._max_in_flight = settings.dns_max_in_flight
        self._retries = settings.dns_retries
        self._slots = asyncio.Semaphore(settings.dns_max_in_flight)
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._pending: dict[str, asyncio.Future[tuple[str, ...]]] = {}
        self._pinned: OrderedDict[str, str] = OrderedDict()
        self._closed = False
        self._lookups = self._hits = self._negative_hits = self._misses = 0
        self._coalesced = self._queries = self._not_found = self._failures = 0
        self._in_flight = self._in_flight_peak = self._evictions = 0

    # -- reads without I/O -----------------------------------------------------------

    def cached(self, host: str) -> list[str] | None:
        """The fresh cached addresses of ``host`` (preferred family first), or ``None``.

        IP literals and localhost names answer as ``resolve`` would. No query, no
        counters, no LRU update; a negative entry reads as ``None``.
        """
        name = bare_host(host)
        fixed = self._fixed(name)
        if fixed is not None:
            return fixed
        entry = self._entries.get(name)
        if entry is None or entry.not_found is not None or entry.expires_at <= self._clock():
            return None
        return list(entry.addresses)

    def pinned(self, host: str) -> str | None:
        """The address the last connection to ``host`` went to (``note_connected``),
        else the first fresh cached address, else ``None``."""
        name = bare_host(host)
        address = self._pinned.get(name)
        if address is not None:
            return address
        addresses = self.cached(name)
        return addresses[0] if addresses else None

    def note_connected(self, host: str, address: str) -> None:
        """Record that a connection to ``host`` was made to ``address`` (the transport
        calls this); kept for the last ``dns_cache_size`` hosts."""
        name = bare_host(host)
        self._pinned[name] = address
        self._pinned.move_to_end(name)
        if len(self._pinned) > self._size:
            self._pinned.popitem(last=False)

    def stats(self) -> DnsStats:
        """A ``DnsStats`` copy of the counters now."""
        return DnsStats(
            lookups=self._lookups,
            hits=self._hits,
            negative_hits=self._negative_hits,
            misses=self._misses,
            coalesced=self._coalesced,
            queries=self._queries,
            not_found=self._not_found,
            failures=self._failures,
            in_flight=self._in_flight,
            in_flight_peak=self._in_flight_peak,
            entries=len(self._entries),
            evictions=self._evictions,
        )

    # -- resolving -------------------------------------------------------------------

    async def resolve(self, host: str) -> list[str]:
        """The addresses of ``host``, preferred family (``dns_prefer``) first.

        Args:
            host: a name, an IP literal or a host key (``name:port``, ``[v6]:port``).
                IP literals come back as themselves and ``localhost`` / ``*.localhost``
                as ``127.0.0.1`` and ``::1`` (RFC 6761 §6.3), without a query.

        Returns:
            A non-empty list of address strings (a new list: the caller may change it).

        Raises:
            DnsNotFound: both A and AAAA said NXDOMAIN or NODATA (either one's
                addresses are an answer); cached for the negative TTL (RFC 2308 §5).
            DnsTemporaryFailure: no family gave addresses and, on every try, one
                timed out or got SERVFAIL/REFUSED/a broken reply (``1 + dns_retries``
                tries, ``RETRY_BASE_S x 2^n`` apart); or the cache was closed.
        """
        name = bare_host(host)
        fixed = self._fixed(name)
        if fixed is not None:
            return fixed
        self._lookups += 1
        entry = self._entries.get(name)
        if entry is not None and entry.expires_at > self._clock():
            self._entries.move_to_end(name)
            if entry.not_found is not None:
                self._negative_hits += 1
                raise DnsNotFound(entry.not_found)
            self._hits += 1
            return list(entry.addresses)
        self._misses += 1
        if self._closed:
            raise DnsTemporaryFailure(f"{name}: the resolver is closed")
        future = self._pending.get(name)
        if future is None:
            future = asyncio.ensure_future(self._lookup(name))
            self._pending[name] = future
            future.add_done_callback(functools.partial(self._settled, name))
        else:
            self._coalesced += 1
        try:
            # shield: a caller that is cancelled leaves the shared lookup running.
            return list(await asyncio.shield(future))
        except DnsError as exc:
            raise type(exc)(str(exc)) from None  # a fresh instance per caller
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if future.cancelled() and (task is None or not task.cancelling()):
                # the lookup was cancelled by ``aclose``, not this caller
                raise DnsTemporaryFailure(f"{name}: the resolver was closed") from None
            raise

    def _fixed(self, name: str) -> list[str] | None:
        """Addresses known without a query: an IP literal, or a localhost name."""
        literal = ip_literal(name)
        if literal is not None:
            return [literal]
        if name == "localhost" or name.endswith(".localhost"):
            pair = [LOCALHOST_V4, LOCALHOST_V6]
            return pair[::-1] if self._prefer_v6 else pair
        return None

    def _settled(self, name: str, future: asyncio.Future[tuple[str, ...]]) -> None:
        """Forget a finished shared lookup; retrieve its error so none goes unheard."""
        if self._pending.get(name) is future:
            del self._pending[name]
        if not future.cancelled():
            future.exception()

    async def _lookup(self, name: str) -> tuple[str, ...]:
        """Query ``name`` with retries; store and return the answer (or raise)."""
        last: DnsTemporaryFailure | None = None
        for attempt in range(1 + self._retries):
            if attempt:
                await asyncio.sleep(RETRY_BASE_S * 2 ** (attempt - 1))
            try:
                return await self._query_both(name)
            except DnsTemporaryFailure as exc:
                last = exc
        self._failures += 1
        assert last is not None
        tries = 1 + self._retries
        log.info("DNS lookup failed (%d tries): %s", tries, last)
        raise DnsTemporaryFailure(f"{last} ({tries} tries)")

    async def _query_both(self, name: str) -> tuple[str, ...]:
        """Ask A and AAAA at once; a positive answer of either family wins.

        Per family the outcome is ``ok``, ``nodata``, ``nxdomain`` or a temporary
        failure; over the pair (A x AAAA):

        * any ``ok``: the addresses of the families that gave some (preferred family
          first), cached for their least TTL (clamped), whatever the other family said
          (NODATA, NXDOMAIN or a temporary failure);
        * else any temporary failure: ``DnsTemporaryFailure``, not cached (that family
          is unknown, so the name is not known to be dead);
        * else (each family ``nodata`` or ``nxdomain``): ``DnsNotFound``, cached for the
          least negative TTL given (RFC 2308 §5), else ``dns_negative_ttl_s``.

        NXDOMAIN says the name has no records of any type (RFC 2308 §2.1), so NXDOMAIN
        to AAAA beside an address for A is a server contradicting itself: RFC 4074 §4.2
        names that misbehaviour, and dnsmasq shows it (``--address=/name/IPv4`` under
        ``--local``). The address is the evidence that counts, as for Happy Eyeballs
        (RFC 8305 §3: connect with whichever family answered with addresses).

        Raises:
            DnsNotFound: both families said NXDOMAIN or NODATA.
            DnsTemporaryFailure: no family gave addresses and one failed temporarily.
        """
        v4, v6 = await asyncio.gather(
            self._query(name, "A"), self._query(name, "AAAA"), return_exceptions=True
        )
        pairs: list[tuple[RecordType, Answer | BaseException]] = [("A", v4), ("AAAA", v6)]
        if self._prefer_v6:
            pairs.reverse()
        answers: list[tuple[RecordType, Answer]] = []
        failure: DnsTemporaryFailure | None = None
        for rtype, item in pairs:
            if isinstance(item, Answer):
                answers.append((rtype, item))
            elif isinstance(item, DnsTemporaryFailure):
                failure = failure or item
            else:
                raise item  # a bug or a cancellation: not a DNS fact
        found = [answer for _, answer in answers if answer.status == "ok"]
        if found:
            addresses = tuple(dict.fromkeys(addr for a in found for addr in a.addresses))
            ttls = [a.ttl_s for a in found if a.ttl_s is not None]
            self._store(name, _Entry(addresses, None, self._expiry(min(ttls, default=0.0))))
            return addresses
        if failure is not None:
            raise failure
        message = _not_found_message(name, answers)
        ttls = [a.ttl_s for _, a in answers if a.ttl_s is not None]
        self._store_negative(name, message, min(ttls) if ttls else None)
        raise DnsNotFound(message)

    async def _query(self, name: str, rtype: RecordType) -> Answer:
        """One question through the in-flight cap."""
        async with self._slots:
            if self._resolver is None:
                self._resolver = self._factory()
            self._queries += 1
            self._in_flight += 1
            self._in_flight_peak = max(self._in_flight_peak, self._in_flight)
            try:
                return await self._resolver.query(name, rtype)
            finally:
                self._in_flight -= 1

    def _expiry(self, ttl_s: float) -> float:
        """Epoch s at which an answer with ``ttl_s`` expires, TTL clamped."""
        return self._clock() + min(self._max_ttl, max(self._min_ttl, ttl_s))

    def _store_negative(self, name: str, message: str, soa_ttl_s: float | None) -> None:
        """Cache NXDOMAIN/NODATA: the SOA's negative TTL clamped, else the default."""
        self._not_found += 1
        expires = (
            self._clock() + self._negative_ttl if soa_ttl_s is None else self._expiry(soa_ttl_s)
        )
        self._store(name, _Entry((), message, expires))

    def _store(self, name: str, entry: _Entry) -> None:
        """Insert or replace ``name`` as most recently used; evict beyond the size."""
        self._entries[name] = entry
        self._entries.move_to_end(name)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)
            self._evictions += 1

    async def aclose(self) -> None:
        """Cancel the lookups in flight (their waiters get ``DnsTemporaryFailure``) and
        close the resolver; later misses raise ``DnsTemporaryFailure``. Idempotent."""
        self._closed = True
        pending = list(self._pending.values())
        for future in pending:
            future.cancel()
        for future in pending:
            with contextlib.suppress(asyncio.CancelledError, DnsError):
                await future
        if self._resolver is not None:
            await self._resolver.close()
            self._resolver = None


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


# ------------------------------------------------------------- per-IP politeness


@dataclass(frozen=True, slots=True)
class IpLimitSettings:
    """The settings ``IpLimiter`` uses.

    Attributes:
        ip_delay_ms: the per-IP delay in ms (``>= 0``; 0: no per-IP limit): the
            config's ``ip_delay_ms``, or its ``delay_ms`` when that is ``None``.
        bucket_capacity: tokens of each address's bucket (``>= 1``), refilled at one
            per delay (the config's ``bucket_capacity``).
    """

    ip_delay_ms: int
    bucket_capacity: int

    @classmethod
    def from_config(cls, config: CrawlConfig) -> IpLimitSettings:
        """The per-IP settings of ``config``: ``ip_delay_ms``, else ``delay_ms``."""
        delay = config.delay_ms if config.ip_delay_ms is None else config.ip_delay_ms
        return cls(ip_delay_ms=delay, bucket_capacity=config.bucket_capacity)


class IpLimiter:
    """The per-IP limit shared by every host that resolves to one address (issue #4),
    in addition to each host's own politeness (pure; ``now`` passed in, epoch s).

    Args:
        settings: ``ip_delay_ms`` and ``bucket_capacity``
            (``IpLimitSettings.from_config(config)``).

    A request to an address starts at least ``ip_delay_ms`` after the later of the
    last start (``on_dispatch``) and the last end (``on_end``) of a request to it, and
    takes a token from the address's bucket, refilled at one token per delay: the
    spacing rule of ``core.politeness`` ("Earliest start") with no adaptive part,
    Crawl-delay or backoff (those stay per host). Unknown addresses are ready at once;
    nothing here raises.
    """

    __slots__ = ("_addresses", "_capacity", "_delay_s", "_rate_per_s")

    def __init__(self, settings: IpLimitSettings) -> None:
        self._delay_s = settings.ip_delay_ms / 1000.0
        self._rate_per_s = 1.0 / self._delay_s if self._delay_s > 0.0 else math.inf
        self._capacity = settings.bucket_capacity
        self._addresses: dict[str, _Address] = {}

    def _address(self, ip: str, now: float) -> _Address:
        """``ip``'s state, made on first use (its bucket full at ``now``)."""
        state = self._addresses.get(ip)
        if state is None:
            state = self._addresses[ip] = _Address(self._capacity, self._rate_per_s, now)
        return state

    def earliest(self, ip: str, now: float) -> float:
        """The earliest start (epoch s, ``>= now``) of the next request to ``ip``:
        ``max(now, last_at + ip_delay, bucket ready time)``."""
        state = self._addresses.get(ip)
        if state is None:
            return now
        at = state.last_at + self._delay_s
        ready = state.ready_at(now)
        return at if at > ready else ready

    #: What the console shows: ``earliest`` (asking it changes nothing here).
    shown = earliest

    def on_dispatch(self, ip: str, now: float) -> None:
        """A request to ``ip`` starts at ``now`` (epoch s): record it, take a token."""
        state = self._address(ip, now)
        state.take(now)
        if now > state.last_at:
            state.last_at = now

    def on_end(self, ip: str, now: float) -> None:
        """A request to ``ip`` ended at ``now`` (epoch s): the delay runs from here
        unless a later request has started since."""
        state = self._address(ip, now)
        if now > state.last_at:
            state.last_at = now


class _Address(TokenBucket):
    """One address's bucket and ``last_at``: the later of its last request's start and
    the last end of one (epoch s)."""

    __slots__ = ("last_at",)

    def __init__(self, capacity: int, rate_per_s: float, now: float) -> None:
        super().__init__(capacity, rate_per_s, now)
        self.last_at = now


__all__ = [
    "AddressPolicy",
    "AddressPolicySettings",
    "AiodnsResolver",
    "Answer",
    "DnsCache",
    "DnsSettings",
    "DnsStats",
    "IpLimitSettings",
    "IpLimiter",
    "Resolver",
    "bare_host",
    "ip_literal",
    "special_purpose",
]
