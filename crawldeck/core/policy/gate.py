"""The host gate: when a request may go to a host, and what its answer teaches (pure).

Every request the crawl sends passes here, whoever sends it: a worker's page fetch, a
robots.txt request and each of its redirect hops, a rendered page's sub-request
(RFC 9309 §2.3.1: fetching robots.txt is a request to the host; issue #10 item 9). The
gate owns, per host and per address:

* the host's politeness (``core.policy.politeness.Politeness``: delay = max(Crawl-delay,
  ``delay_ms``, the learnt delay), token bucket, backoff on 429/503 with Retry-After);
* the per-IP limit (``ip_delay_ms``): hosts on one address share it;
* the host's in-flight slots (``per_host_concurrency``): page fetches and side
  requests (robots.txt, render sub-requests) together.

It does no I/O and reads no clock: every method takes ``now`` (seconds of the engine's
one clock, ``core.clock``; the times it keeps are restored from and saved as epoch
seconds, which that clock reads). Waiting is the caller's: :meth:`HostGate.ready_at` is
the one deadline a worker (through the frontier's ready heap) and a side request both
wait for, and a host whose slots are all taken has no deadline (``None``): it is ready
again when a slot is released, which the caller learns from :meth:`end_side` /
:meth:`end_page` (no polling; after httpcore's connection pool, whose state changes in
plain code and whose awaits come after).

A worker's page fetch asks once, :meth:`HostGate.acquire` (issue #24 item 5): ``GO``
(its start is counted), ``WaitUntil(at)`` (give the host back to the frontier for
``at``) or ``HELD`` (its slots are full: the gate holds the host and hands it back when
a side request frees one). A host's saved politeness comes back through one
:meth:`HostGate.restore`, on resume (``core.crawl.resume``) and when a cluster worker claims
the host (``core.cluster.worker``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

from crawldeck.core.policy.politeness import Cap, Outcome, Politeness
from crawldeck.core.policy.politeness_state import HostPolitenessView


@dataclass(frozen=True, slots=True)
class GateStatistics:
    """The gate at one moment (trio's ``statistics()``: immutable, named fields).

    Attributes:
        hosts: hosts the politeness state knows.
        page_fetches: page fetches running now (all hosts).
        side_requests: robots.txt requests and render sub-requests running now.
        held_hosts: hosts a worker gave back while side requests filled their slots;
            each goes back to the frontier when one of those ends.
        backing_off: hosts whose last answer started or continued a backoff.
        addresses: addresses with a known host (per-IP limit keys).
    """

    hosts: int
    page_fetches: int
    side_requests: int
    held_hosts: int
    backing_off: int
    addresses: int


@dataclass(frozen=True, slots=True)
class Go:
    """``acquire``'s answer: the request goes now; its start is counted."""


@dataclass(frozen=True, slots=True)
class WaitUntil:
    """``acquire``'s answer: the host's politeness or its address's per-IP limit allows
    its next request at ``at`` (seconds of the caller's clock, ``> now``).

    Attributes:
        at: when the host may be asked again.
    """

    at: float


@dataclass(frozen=True, slots=True)
class Held:
    """``acquire``'s answer: every slot of the host is taken; the gate holds the host
    (:meth:`HostGate.hold`) until a request ends and frees one."""


#: The one ``Go`` and ``Held`` (they carry nothing).
GO: Final = Go()
HELD: Final = Held()
#: What :meth:`HostGate.acquire` answers.
Answer = Go | WaitUntil | Held


class SavedHost(Protocol):
    """A host's politeness as a run saved it: a ``hosts`` row (``core.storage.store.HostRecord``),
    read back on resume or by the cluster worker that claims the host. Times are epoch
    seconds, delays ms (the stored units)."""

    @property
    def crawl_delay_ms(self) -> float | None:
        """robots.txt's Crawl-delay (ms), ``None`` for none."""
        ...

    @property
    def learnt_delay_ms(self) -> float | None:
        """The delay learnt from 429/503 answers (ms), ``None`` for none."""
        ...

    @property
    def backoff_attempts(self) -> int:
        """Consecutive backoff answers (429, 503, none)."""
        ...

    @property
    def backoff_until(self) -> float | None:
        """The end of the backoff (epoch s), ``None`` for none."""
        ...

    @property
    def backoff_started(self) -> float | None:
        """The start of the continuous backoff (epoch s), ``None`` for none."""
        ...


class AddressLimit(Protocol):
    """The per-IP limit keyed by address (``core.policy.ip_limits``): when an address may get its
    next request, and the start and end of each."""

    def earliest(self, ip: str, now: float) -> float:
        """When ``ip`` may get its next request (epoch s)."""
        ...

    def on_dispatch(self, ip: str, now: float) -> None:
        """A request to ``ip`` starts at ``now``."""
        ...

    def on_end(self, ip: str, now: float) -> None:
        """A request to ``ip`` ended at ``now``."""
        ...

    def shown(self, ip: str, now: float) -> float:
        """``earliest`` as the console shows it: asking changes nothing (a limit
        shared by workers books its slot in ``earliest`` only)."""
        ...


class HostGate:
    """Host politeness, the per-IP limit and in-flight slots, for every request.

    Args:
        politeness: the hosts' politeness state (delays, backoff, Crawl-delay).
        ips: the per-IP limit (``ip_delay_ms``) shared by hosts on one address.
        per_host_concurrency: requests at once per host, page fetches and side
            requests together.
        capped: called with the host and the ``Cap`` each time a value a server
            asked for (robots.txt's Crawl-delay, a Retry-After) is cut to a cap;
            the observer logs the first of each kind per host (issue #22 item 8).

    A host key is ``core.policy.urls.host_key``; an address is the IP the request goes to
    (from the DNS cache and the address policy).
    """

    __slots__ = (
        "_answered",
        "_backing_off",
        "_capped",
        "_fetching",
        "_held",
        "_ip",
        "_ips",
        "_per_host",
        "_politeness",
        "_side",
        "_side_wanted",
    )

    def __init__(
        self,
        politeness: Politeness,
        ips: AddressLimit,
        per_host_concurrency: int,
        *,
        capped: Callable[[str, Cap], None] | None = None,
    ) -> None:
        self._politeness = politeness
        self._capped = capped
        self._ips = ips
        self._per_host = per_host_concurrency
        self._ip: dict[str, str] = {}
        self._fetching: Counter[str] = Counter()
        self._side: Counter[str] = Counter()
        self._side_wanted: Counter[str] = Counter()
        self._held: set[str] = set()
        self._backing_off: set[str] = set()
        self._answered: set[str] = set()

    # ----------------------------------------------------------- addresses

    def note_address(self, host: str, ip: str) -> None:
        """``host``'s requests go to ``ip`` (the per-IP limit key) from now on."""
        self._ip[host] = ip

    def address(self, host: str) -> str | None:
        """The address ``host``'s last request went to, or ``None``."""
        return self._ip.get(host)

    # -------------------------------------------------------------- timing

    def ready_at(self, host: str, now: float) -> float | None:
        """When a request may go to ``host`` (epoch s): the later of its politeness and
        its address's per-IP limit; ``None`` while its slots are all taken (it is
        ready again when :meth:`end_page` or :meth:`end_side` frees one)."""
        if not self._free(host):
            return None
        return self.earliest(host, now)

    def earliest(self, host: str, now: float) -> float:
        """When ``host``'s politeness and its address's per-IP limit allow its next
        request (epoch s, ``>= now``), whether or not a slot is free (``ready_at`` is
        that while a slot is free). The address is asked from the host's own earliest
        on: a limit shared by workers books its slot for then (``core.cluster``)."""
        return self._earliest(host, now, self._ips.earliest)

    def next_fetch_at(self, host: str, now: float) -> float:
        """``earliest`` as the console shows the host's next fetch: nothing is booked."""
        return self._earliest(host, now, self._ips.shown)

    def _earliest(self, host: str, now: float, address: Callable[[str, float], float]) -> float:
        at = self._politeness.earliest(host, now)
        ip = self._ip.get(host)
        if ip is not None:
            at = max(at, address(ip, at))
        return at

    def acquire(self, host: str, now: float) -> Answer:
        """A worker's page fetch asks to go to ``host`` at ``now``: the one question.

        Returns:
            ``HELD`` when its slots are all taken (the host is held: :meth:`end_side`
            hands it back, or the page fetch whose :meth:`end_page` frees a slot gives
            it back itself), or a side request waits for the host (:meth:`want_side`:
            it goes first, else a busy host's pages took every turn and its sitemap
            came after the last of them, issue #25; :meth:`end_side` or
            :meth:`drop_side_want` hands the host back); ``WaitUntil(at)`` when its
            politeness or its address's per-IP limit allows it at ``at > now`` only;
            ``GO`` when it may go now: its start is counted as :meth:`start_page` does.
        """
        if not self._free(host) or host in self._side_wanted:
            self._held.add(host)
            return HELD
        at = self.earliest(host, now)
        if at > now:
            return WaitUntil(at)
        self.start_page(host, now)
        return GO

    def delay_s(self, host: str) -> float:
        """``host``'s politeness delay now (s, backoff aside; ``Politeness.delay_s``)."""
        return self._politeness.delay_s(host)

    def _free(self, host: str) -> bool:
        return self._fetching.get(host, 0) + self._side.get(host, 0) < self._per_host

    # ------------------------------------------------------------ requests

    def start_page(self, host: str, now: float) -> None:
        """A worker's page fetch to ``host`` starts at ``now``: it counts against the
        host's politeness, its address's and one of its slots."""
        self._dispatch(host, now)
        self._fetching[host] += 1

    def end_page(self, host: str, now: float) -> None:
        """A page fetch started with :meth:`start_page` ended (answer or not) at ``now``.

        A hold on ``host`` (:meth:`hold`) ends here if this frees a slot: the worker of
        this fetch gives the host back itself once its URL is done, so a later
        :meth:`end_side` must not hand it back a second time.
        """
        self._fetching[host] -= 1
        if not self._fetching[host]:
            del self._fetching[host]
        self._end_address(host, now)
        if host in self._held and self._free(host):
            self._held.discard(host)

    def want_side(self, host: str) -> None:
        """A side request waits for ``host`` (for ``ready_at``): until it starts
        (:meth:`start_side`) or gives up (:meth:`drop_side_want`), the host's page
        fetches are held (``acquire``), so it takes the host's next turn."""
        self._side_wanted[host] += 1

    def drop_side_want(self, host: str, now: float) -> bool:
        """A side request that waited for ``host`` (:meth:`want_side`) gave up at
        ``now`` (cancelled, the host parked) without starting.

        Returns:
            ``True`` when ``host`` was held for it and is free now: the caller gives it
            back to the frontier at ``ready_at(host, now)``.
        """
        self._unwant(host)
        if host not in self._side_wanted and host in self._held and self._free(host):
            self._held.discard(host)
            return True
        return False

    def _unwant(self, host: str) -> None:
        if self._side_wanted.get(host, 0) > 1:
            self._side_wanted[host] -= 1
        else:
            self._side_wanted.pop(host, None)

    def start_side(self, host: str, now: float) -> None:
        """A side request (robots.txt, a redirect hop of it, a render sub-request) to
        ``host`` starts at ``now``; it counts like a page fetch (and no longer waits:
        :meth:`want_side`)."""
        self._dispatch(host, now)
        self._unwant(host)
        self._side[host] += 1

    def end_side(self, host: str, now: float) -> bool:
        """A side request started with :meth:`start_side` ended at ``now``.

        Returns:
            ``True`` when ``host`` was held (:meth:`hold`) and now has a free slot: the
            caller gives it back to the frontier at ``ready_at(host, now)``.
        """
        if self._side[host] > 0:
            self._side[host] -= 1
        if not self._side[host]:
            del self._side[host]
        self._end_address(host, now)
        if host in self._held and self._free(host) and host not in self._side_wanted:
            self._held.discard(host)
            return True
        return False

    def hold(self, host: str) -> None:
        """A worker gave ``host`` back while its slots were all taken (``ready_at`` is
        ``None``): keep it out of the frontier's ready heap until a slot is free."""
        self._held.add(host)

    def _dispatch(self, host: str, now: float) -> None:
        self._politeness.on_dispatch(host, now)
        ip = self._ip.get(host)
        if ip is not None:
            self._ips.on_dispatch(ip, now)

    def _end_address(self, host: str, now: float) -> None:
        ip = self._ip.get(host)
        if ip is not None:
            self._ips.on_end(ip, now)

    # ------------------------------------------------------------- answers

    def learn(
        self,
        host: str,
        now: float,
        status: int | None,
        elapsed_s: float,
        retry_after: str | None,
        date: str | None = None,
        *,
        repeat: bool = False,
    ) -> Outcome:
        """Feed the end of a request to ``host`` at ``now`` to its politeness: the
        status (``None``: no response, a transient failure), its time in s, the
        ``Retry-After`` and ``Date`` headers (RFC 9110 §10.2.3, §6.6.1), whether it
        retried a URL that failed before (``repeat``); see ``Politeness.on_response``."""
        outcome = self._politeness.on_response(
            host, now, status, elapsed_s, retry_after, date=date, repeat=repeat
        )
        if status is not None:
            self._answered.add(host)
        if outcome.capped is not None and self._capped is not None:
            self._capped(host, outcome.capped)
        if outcome.retry:
            self._backing_off.add(host)
        else:
            self._backing_off.discard(host)
        return outcome

    def has_answered(self, host: str) -> bool:
        """Whether any request to ``host`` (a page, robots.txt, a sitemap) got an HTTP
        response this run (``learn`` with a status): a host that never did and refuses
        connections is not retried (``core.crawl.retries``, ``retry_refused``)."""
        return host in self._answered

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        """robots.txt's Crawl-delay for ``host`` in s (``None``: none), capped at
        ``max_delay_ms`` (``Politeness.set_crawl_delay``); a cut value is reported
        to ``capped``."""
        cap = self._politeness.set_crawl_delay(host, seconds)
        if cap is not None and self._capped is not None:
            self._capped(host, cap)

    def forget(self, host: str, now: float) -> None:
        """A request to ``host`` ended at ``now`` with nothing to learn (a deterministic
        failure, a cancelled sub-request): the delay counts from now, no backoff."""
        self._politeness.on_end(host, now)

    def restore(
        self, host: str, saved: SavedHost | None, *, last_request: float | None = None
    ) -> None:
        """Give ``host`` back the politeness a run saved (resume, ``core.crawl.resume``; a
        claim of the host by a cluster worker, ``core.cluster.worker``).

        Args:
            host: the host key.
            saved: its saved row (Crawl-delay, learnt delay, backoff; see
                ``Politeness.restore`` for the caps), ``None`` when none was saved.
            last_request: when its last request ended (epoch s; a cluster's previous
                owner's, or the claim's time when that owner may have just sent one),
                ``None`` when unknown: its delay counts from then.
        """
        if saved is not None:
            crawl_delay, learnt = saved.crawl_delay_ms, saved.learnt_delay_ms
            self._politeness.restore(
                host,
                crawl_delay_s=None if crawl_delay is None else crawl_delay / 1000,
                backoff_attempts=saved.backoff_attempts,
                backoff_until=saved.backoff_until,
                backoff_started=saved.backoff_started,
                learnt_delay_s=None if learnt is None else learnt / 1000,
            )
            if saved.backoff_attempts:
                self._backing_off.add(host)
        if last_request is not None:
            self._politeness.on_end(host, last_request)

    def should_demote(self, host: str, now: float) -> bool:
        """Whether ``host`` has backed off without a break for ``demote_after_s`` by
        ``now`` (``Politeness.should_demote``)."""
        return self._politeness.should_demote(host, now)

    def park_reason(self, host: str) -> str | None:
        """Why ``host`` should be parked, ``None`` when it should not
        (``Politeness.park_reason``)."""
        return self._politeness.park_reason(host)

    def backing_off(self) -> list[str]:
        """The hosts whose last answer started or continued a backoff, sorted."""
        return sorted(self._backing_off)

    def in_backoff(self, host: str, now: float) -> bool:
        """Whether ``host`` is waiting out a backoff at ``now``."""
        until = self._politeness.view(host, now).backoff_until
        return until is not None and until > now

    def count_in_backoff(self, now: float) -> int:
        """How many hosts are waiting out a backoff at ``now``."""
        return sum(1 for host in self._backing_off if self.in_backoff(host, now))

    def view(self, host: str, now: float) -> HostPolitenessView:
        """``host``'s politeness at ``now`` (``Politeness.view``)."""
        return self._politeness.view(host, now)

    def fetching(self, host: str) -> int:
        """Page fetches of ``host`` running now."""
        return self._fetching.get(host, 0)

    def statistics(self) -> GateStatistics:
        """The gate's figures now."""
        return GateStatistics(
            hosts=self._politeness.hosts(),
            page_fetches=self._fetching.total(),
            side_requests=self._side.total(),
            held_hosts=len(self._held),
            backing_off=len(self._backing_off),
            addresses=len(set(self._ip.values())),
        )


__all__ = [
    "GO",
    "HELD",
    "AddressLimit",
    "Answer",
    "GateStatistics",
    "Go",
    "Held",
    "HostGate",
    "SavedHost",
    "WaitUntil",
]
