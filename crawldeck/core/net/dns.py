"""Name resolution for every fetch: one asynchronous resolver and its cache.

* ``DnsCache`` resolves names with c-ares (aiodns ``query_dns``, A and AAAA), never
  with a blocking ``getaddrinfo``; a name listed in ``/etc/hosts`` is answered from
  it first and sent to no server, as getaddrinfo's "files dns" order does
  (``core.net.hosts_file``). A positive answer wins: the addresses of whichever
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
* ``Resolver``: what the cache asks a DNS client for; ``AiodnsResolver`` is the real one.

It takes its settings as a small frozen object built from the crawl's config
(``DnsSettings.from_config``). Which of the addresses found may be connected to is
``core.policy.address_policy``'s (``AddressPolicy``); the per-IP limit of hosts that share an
address is ``core.policy.ip_limits``'s (``IpLimiter``).

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
import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import aiodns
import pycares

from crawldeck.core.clock import LoopClock
from crawldeck.core.config import CrawlConfig, DnsPreference
from crawldeck.core.errors import DnsError, DnsNotFound, DnsTemporaryFailure
from crawldeck.core.net.hosts_file import HostsFile
from crawldeck.core.policy.address_policy import bare_host, ip_literal

log = logging.getLogger("crawldeck.dns")

RecordType = Literal["A", "AAAA"]
AnswerStatus = Literal["ok", "nodata", "nxdomain"]

#: The first retry after a temporary failure waits this long (s); each next one twice.
RETRY_BASE_S = 0.2
#: Slack (s) on top of ``dns_timeout_ms`` before a query c-ares never answered is
#: abandoned (a guard: c-ares answers every query with a result or ETIMEOUT).
GUARD_SLACK_S = 1.0
#: Names answered without a query (RFC 6761 §6.3: localhost names are loopback).
LOCALHOST_V4 = "127.0.0.1"
LOCALHOST_V6 = "::1"


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
        hosts: the static host table asked first; default ``HostsFile()``, the
            machine's ``/etc/hosts``.

    Must be created inside the running event loop (aiodns binds to it). No search
    domains apply (``query_dns`` asks for the name as given). A name the host table
    lists is answered from it, with no query, whichever ``nameservers`` are set
    (c-ares reads ``/etc/hosts`` only for its ``getaddrinfo``, whose files-only
    channel sometimes read no file at all in a crawl process: issue #25).
    """

    def __init__(
        self, nameservers: Sequence[str], timeout_s: float, hosts: HostsFile | None = None
    ) -> None:
        self._timeout_s = timeout_s
        self._hosts = hosts if hosts is not None else HostsFile()
        self._resolver = aiodns.DNSResolver(
            nameservers=list(nameservers) or None, timeout=timeout_s, tries=1
        )

    async def query(self, name: str, rtype: RecordType) -> Answer:
        """See ``Resolver.query``; c-ares status codes are translated here. A name in
        the host table is answered from it with no TTL (``ttl_s`` ``None``: the cache's
        floor applies), ``nodata`` for a family it lists no address of (getaddrinfo
        asks no server then either)."""
        listed = await self._hosts.lookup(name)
        if listed is not None:
            addresses = listed[0 if rtype == "A" else 1]
            return Answer("ok", addresses) if addresses else Answer("nodata")
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


__all__ = [
    "AiodnsResolver",
    "Answer",
    "DnsCache",
    "DnsSettings",
    "DnsStats",
    "Resolver",
]
