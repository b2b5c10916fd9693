"""The host gate (``core.policy.gate.HostGate``) on its own: pure logic on a fake clock.

Host politeness, the per-IP limit and the in-flight slots of every request (page
fetches and side requests: robots.txt, render sub-requests), one deadline
(``ready_at``), and a host held while its slots are full and handed back once. A
Hypothesis property runs random sequences of starts, ends, holds and answers and checks
that no two requests to one host (or one address) start closer than its delay, that a
host never has more than ``per_host_concurrency`` requests in flight, and that a held
host is handed back exactly once, when a side request's end frees a slot.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from fakeclock import EPOCH, FakeClock
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.policy.gate import GO, HELD, GateStatistics, HostGate, WaitUntil
from crawldeck.core.policy.ip_limits import IpLimiter, IpLimitSettings
from crawldeck.core.policy.politeness import Outcome, Politeness, PolitenessSettings
from crawldeck.core.records import HostRecord

T = EPOCH


def politeness_settings(
    delay_ms: int = 1000, bucket_capacity: int = 1, adaptive_delay_factor: float = 0.0
) -> PolitenessSettings:
    """Politeness with ``delay_ms``; backoff 1 s doubling up to 60 s, plus jitter."""
    return PolitenessSettings(
        delay_ms=delay_ms,
        bucket_capacity=bucket_capacity,
        bucket_rate_per_s=None,
        adaptive_delay_factor=adaptive_delay_factor,
        max_delay_ms=30_000,
        backoff_base_ms=1000,
        backoff_max_ms=60_000,
        retry_after_max_s=600,
        demote_after_s=3600,
        park_after_backoffs=8,
    )


def make_gate(
    *,
    delay_ms: int = 1000,
    ip_delay_ms: int = 0,
    per_host: int = 1,
    bucket_capacity: int = 1,
    adaptive_delay_factor: float = 0.0,
    politeness: Politeness | None = None,
) -> HostGate:
    return HostGate(
        politeness
        or Politeness(
            politeness_settings(delay_ms, bucket_capacity, adaptive_delay_factor),
            random.Random(0),
        ),
        IpLimiter(IpLimitSettings(ip_delay_ms=ip_delay_ms, bucket_capacity=bucket_capacity)),
        per_host,
    )


def may_start(gate: HostGate, host: str, now: float) -> bool:
    """Whether a request may go to ``host`` at ``now`` (asking books nothing)."""
    at = gate.ready_at(host, now)
    return at is not None and at <= now


def test_an_unknown_host_is_ready_now_and_nothing_is_counted() -> None:
    gate = make_gate()
    assert gate.ready_at("a.test", T) == T
    assert may_start(gate, "a.test", T)
    assert gate.address("a.test") is None
    assert gate.fetching("a.test") == 0
    assert gate.statistics() == GateStatistics(0, 0, 0, 0, 0, 0)


def test_the_delay_runs_from_the_end_of_a_page_fetch() -> None:
    gate = make_gate(delay_ms=1000)
    gate.start_page("a.test", T)
    assert gate.fetching("a.test") == 1
    assert gate.ready_at("a.test", T + 0.1) is None  # its one slot is taken
    assert gate.earliest("a.test", T + 0.1) == T + 1.0  # its politeness, slots aside
    assert not may_start(gate, "a.test", T + 5)
    gate.end_page("a.test", T + 0.3)
    # ended, nothing learnt yet: the delay counts from the start
    assert gate.ready_at("a.test", T + 0.3) == T + 1.0
    assert gate.learn("a.test", T + 0.3, 200, 0.3, None) == Outcome(retry=False, backoff_s=0.0)
    assert gate.ready_at("a.test", T + 0.3) == T + 0.3 + 1.0
    assert not may_start(gate, "a.test", T + 1.29)
    assert may_start(gate, "a.test", T + 0.3 + 1.0)
    assert gate.statistics() == GateStatistics(1, 0, 0, 0, 0, 0)


def test_forget_counts_the_delay_from_the_end_without_a_backoff() -> None:
    gate = make_gate(delay_ms=1000)
    gate.start_page("a.test", T)
    gate.end_page("a.test", T + 2.0)
    gate.forget("a.test", T + 2.0)
    assert gate.ready_at("a.test", T + 2.0) == T + 3.0
    assert gate.backing_off() == []
    assert not gate.in_backoff("a.test", T + 2.0)


def test_hosts_on_one_address_share_the_per_ip_limit() -> None:
    gate = make_gate(delay_ms=1000, ip_delay_ms=500)
    gate.note_address("a.test", "192.0.2.1")
    gate.note_address("b.test", "192.0.2.1")
    gate.note_address("c.test", "192.0.2.2")
    assert gate.address("b.test") == "192.0.2.1"
    gate.start_page("a.test", T)
    assert gate.ready_at("b.test", T) == T + 0.5  # the address's delay, from a's start
    assert gate.ready_at("c.test", T) == T  # another address
    gate.end_page("a.test", T + 0.2)
    assert gate.ready_at("b.test", T + 0.2) == T + 0.2 + 0.5  # ... then from a's end
    assert gate.ready_at("a.test", T + 0.2) == T + 1.0  # its own delay is longer
    gate.start_page("b.test", T + 0.7)
    assert gate.ready_at("c.test", T + 0.7) == T + 0.7
    assert gate.statistics() == GateStatistics(2, 1, 0, 0, 0, 2)


def test_a_side_request_counts_like_a_page_fetch() -> None:
    """robots.txt is a request to the host (RFC 9309 §2.3.1): it takes the slot, and
    the page waits its delay from the end of it."""
    gate = make_gate(delay_ms=1000)
    gate.start_side("a.test", T)
    assert gate.statistics() == GateStatistics(1, 0, 1, 0, 0, 0)
    assert gate.ready_at("a.test", T) is None
    assert gate.end_side("a.test", T + 0.1) is False  # nobody held it
    gate.learn("a.test", T + 0.1, 404, 0.1, None)
    assert gate.ready_at("a.test", T + 0.1) == T + 0.1 + 1.0
    assert gate.statistics() == GateStatistics(1, 0, 0, 0, 0, 0)


def test_a_held_host_is_handed_back_once_when_its_side_request_ends() -> None:
    gate = make_gate(per_host=1)
    gate.start_side("a.test", T)
    assert gate.ready_at("a.test", T) is None
    gate.hold("a.test")
    assert gate.statistics().held_hosts == 1
    assert gate.end_side("a.test", T + 0.5) is True
    assert gate.statistics().held_hosts == 0
    gate.start_side("a.test", T + 2)
    assert gate.end_side("a.test", T + 2.5) is False  # handed back already


def test_with_two_slots_a_held_host_comes_back_at_the_first_free_slot() -> None:
    gate = make_gate(per_host=2)
    gate.start_side("a.test", T)
    gate.start_side("a.test", T)
    assert gate.ready_at("a.test", T) is None
    gate.hold("a.test")
    assert gate.end_side("a.test", T + 0.1) is True  # one slot is free: it goes back
    assert gate.end_side("a.test", T + 0.2) is False
    assert gate.statistics() == GateStatistics(1, 0, 0, 0, 0, 0)


def test_a_hold_ends_when_a_page_fetch_frees_the_slot() -> None:
    """Two page fetches fill two slots and a worker holds the host; the first fetch to
    end frees a slot and its worker gives the host back itself (the engine's
    ``_give_back`` after every URL). The hold must end there: left behind, a later side
    request's end would hand the host back a second time (to the frontier, while a
    worker may have it checked out) and ``held_hosts`` would count it for ever."""
    gate = make_gate(per_host=2, delay_ms=0)
    gate.start_page("a.test", T)
    gate.start_page("a.test", T)
    assert gate.ready_at("a.test", T) is None
    gate.hold("a.test")
    gate.end_page("a.test", T + 0.1)
    assert gate.statistics().held_hosts == 0
    gate.start_side("a.test", T + 0.2)
    assert gate.end_side("a.test", T + 0.3) is False
    gate.end_page("a.test", T + 0.4)
    assert gate.statistics() == GateStatistics(1, 0, 0, 0, 0, 0)


def test_a_hold_stays_while_a_page_end_leaves_the_slots_full() -> None:
    gate = make_gate(per_host=1, delay_ms=0)
    gate.start_side("a.test", T)
    gate.hold("a.test")
    gate.start_page("a.test", T)  # a page fetch that started before the side request
    gate.end_page("a.test", T + 0.1)  # the side request still fills the slot
    assert gate.statistics().held_hosts == 1
    assert gate.end_side("a.test", T + 0.2) is True


def test_a_503_with_retry_after_backs_the_host_off_and_a_success_ends_it() -> None:
    gate = make_gate(delay_ms=1000)
    gate.start_page("a.test", T)
    gate.end_page("a.test", T + 0.1)
    # backoff 1 s plus jitter up to 0.5 s, Retry-After 7 s is longer (RFC 9110 §10.2.3)
    assert gate.learn("a.test", T + 0.1, 503, 0.1, "7") == Outcome(retry=True, backoff_s=7.0)
    assert gate.backing_off() == ["a.test"]
    assert gate.ready_at("a.test", T + 0.1) == T + 0.1 + 7.0
    assert gate.in_backoff("a.test", T + 7.0)
    assert gate.count_in_backoff(T + 7.0) == 1
    assert gate.count_in_backoff(T + 0.1 + 7.0) == 0
    assert gate.view("a.test", T + 1).backoff_attempts == 1
    assert gate.statistics().backing_off == 1
    gate.start_page("a.test", T + 8)
    gate.end_page("a.test", T + 8.5)
    assert gate.learn("a.test", T + 8.5, 200, 0.5, None) == Outcome(retry=False, backoff_s=0.0)
    assert gate.backing_off() == []
    assert gate.statistics().backing_off == 0


def test_no_answer_is_a_backoff_too() -> None:
    gate = make_gate()
    outcome = gate.learn("a.test", T, None, 0.0, None)
    assert outcome.retry
    assert 1.0 <= outcome.backoff_s <= 1.5  # backoff_s(1, 1 s): 1 s plus jitter <= 0.5 s
    assert gate.ready_at("a.test", T) == T + outcome.backoff_s
    assert gate.backing_off() == ["a.test"]


def saved(
    *,
    crawl_delay_ms: float | None = None,
    learnt_delay_ms: float | None = None,
    backoff_attempts: int = 0,
    backoff_until: float | None = None,
    backoff_started: float | None = None,
) -> HostRecord:
    """A ``hosts`` row as a run saved it."""
    return HostRecord(
        host="a.test",
        ip=None,
        robots_status=None,
        robots_expires_at=None,
        crawl_delay_ms=crawl_delay_ms,
        delay_ms=1000,
        backoff_attempts=backoff_attempts,
        backoff_until=backoff_until,
        pages_fetched=3,
        state="active",
        backoff_started=backoff_started,
        learnt_delay_ms=learnt_delay_ms,
    )


def test_a_backoff_restored_from_an_earlier_run_is_counted() -> None:
    gate = make_gate()
    gate.restore("a.test", saved(backoff_attempts=2, backoff_until=T + 30, backoff_started=T - 10))
    assert gate.backing_off() == ["a.test"]
    assert gate.count_in_backoff(T) == 1
    assert gate.ready_at("a.test", T) == T + 30
    assert gate.count_in_backoff(T + 30) == 0
    assert not gate.should_demote("a.test", T + 30)  # 40 s of backoff < demote_after_s
    assert gate.should_demote("a.test", T - 10 + 3600)


def test_restore_brings_back_the_delays_in_seconds_and_the_last_request() -> None:
    """The saved ms become s (Crawl-delay, learnt delay; the larger rules), no backoff
    is counted without attempts, and the delay counts from ``last_request``."""
    gate = make_gate(delay_ms=1000)
    gate.restore("a.test", saved(crawl_delay_ms=2500, learnt_delay_ms=4000), last_request=T)
    assert gate.delay_s("a.test") == 4.0
    assert gate.backing_off() == []
    assert gate.ready_at("a.test", T) == T + 4.0
    assert gate.view("a.test", T).delay_source == "rate_limit"  # the learnt delay
    gate.restore("b.test", saved(crawl_delay_ms=2500))
    assert gate.delay_s("b.test") == 2.5
    assert gate.ready_at("b.test", T) == T  # no last request known: ready now


def test_restore_without_a_saved_row_only_sets_the_last_request() -> None:
    """A cluster claim of a host never saved, whose previous owner may have just sent
    a request: the delay counts from then, nothing else changes."""
    gate = make_gate(delay_ms=1000)
    gate.restore("a.test", None, last_request=T + 5)
    assert gate.ready_at("a.test", T + 5) == T + 6.0
    assert gate.delay_s("a.test") == 1.0
    assert gate.backing_off() == []


# ----------------------------------------------------------------- acquire


def test_acquire_says_go_and_counts_the_start() -> None:
    gate = make_gate(delay_ms=1000)
    assert gate.acquire("a.test", T) is GO
    assert gate.fetching("a.test") == 1
    assert gate.statistics().page_fetches == 1
    gate.end_page("a.test", T + 0.5)
    gate.forget("a.test", T + 0.5)
    assert gate.acquire("a.test", T + 1.5) is GO  # its delay later


def test_acquire_says_wait_until_the_delay_or_the_per_ip_limit() -> None:
    gate = make_gate(delay_ms=1000, ip_delay_ms=3000, per_host=2)
    gate.note_address("a.test", "192.0.2.1")
    gate.note_address("b.test", "192.0.2.1")
    assert gate.acquire("a.test", T) is GO
    assert gate.acquire("a.test", T + 0.2) == WaitUntil(T + 3.0)  # per-IP: 3 s > 1 s
    assert gate.acquire("b.test", T + 0.2) == WaitUntil(T + 3.0)  # b shares the address
    assert gate.fetching("a.test") == 1 and gate.fetching("b.test") == 0
    assert gate.statistics().held_hosts == 0
    assert gate.acquire("b.test", T + 3.0) is GO


def test_acquire_says_held_while_side_requests_fill_the_slots() -> None:
    """A held host is handed back by the end of the side request that frees a slot."""
    gate = make_gate(delay_ms=0)
    gate.start_side("a.test", T)  # its robots.txt request
    assert gate.acquire("a.test", T) is HELD
    assert gate.fetching("a.test") == 0
    assert gate.statistics().held_hosts == 1
    assert gate.end_side("a.test", T + 0.1) is True  # the caller gives it back
    assert gate.statistics().held_hosts == 0
    assert gate.acquire("a.test", T + 0.1) is GO


def test_a_waiting_side_request_takes_the_hosts_next_turn() -> None:
    """While a side request waits for a host (``want_side``), its pages are held: a
    busy host's sitemap came after its last page (issue #25 trial 6). The side request
    that starts then ends hands the host back; one that gives up hands it back too."""
    gate = make_gate(delay_ms=1000)
    assert gate.acquire("a.test", T) is GO
    gate.end_page("a.test", T + 0.1)
    gate.want_side("a.test")  # the sitemap: ready at T + 1.1
    assert gate.acquire("a.test", T + 1.1) is HELD  # a page, at its own deadline
    assert gate.statistics().held_hosts == 1
    assert may_start(gate, "a.test", T + 1.1)  # the side request goes
    gate.start_side("a.test", T + 1.1)
    assert gate.end_side("a.test", T + 1.5) is True  # the caller gives it back
    assert gate.acquire("a.test", T + 2.5) is GO  # a delay after the side request
    gate.end_page("a.test", T + 2.6)
    gate.want_side("a.test")
    gate.want_side("b.test")
    assert gate.acquire("a.test", T + 3.6) is HELD
    assert gate.drop_side_want("b.test", T + 3.6) is False  # b was not held
    assert gate.drop_side_want("a.test", T + 3.6) is True  # given up (parked, cancelled)
    assert gate.acquire("a.test", T + 3.6) is GO


def test_crawl_delay_lengthens_the_delay() -> None:
    gate = make_gate(delay_ms=1000)
    gate.set_crawl_delay("a.test", 4.0)
    gate.start_side("a.test", T)  # its robots.txt request
    gate.end_side("a.test", T + 0.5)
    gate.forget("a.test", T + 0.5)
    assert gate.ready_at("a.test", T + 0.5) == T + 0.5 + 4.0
    assert gate.view("a.test", T + 0.5).delay_source == "crawl_delay"


# ------------------------------------------------------------ the property


@dataclass
class Model:
    """What the gate must agree with: requests in flight, holds, last starts."""

    per_host: int
    pages: dict[str, int] = field(default_factory=dict)
    sides: dict[str, int] = field(default_factory=dict)
    flights: list[tuple[str, str]] = field(default_factory=list)  # (host, "page"/"side")
    held: set[str] = field(default_factory=set)
    last_start: dict[str, float] = field(default_factory=dict)
    last_ip_start: dict[str, float] = field(default_factory=dict)
    backing_off: set[str] = field(default_factory=set)
    handed_back: int = 0
    wanted: dict[str, int] = field(default_factory=dict)  # side requests waiting

    def in_flight(self, host: str) -> int:
        return self.pages.get(host, 0) + self.sides.get(host, 0)


HOSTS = ("a.test", "b.test", "c.test")
#: a.test and b.test share an address; c.test has its own.
ADDRESS = {"a.test": "192.0.2.1", "b.test": "192.0.2.1", "c.test": "192.0.2.2"}
STATUSES = (200, 200, 404, 429, 500, 503, None, "forget")

operation = st.one_of(
    st.tuples(st.just("advance"), st.floats(0.0, 3.0, allow_nan=False)),
    st.tuples(
        st.sampled_from(["page", "side", "wait_page", "wait_side", "hold", "want", "drop"]),
        st.sampled_from(HOSTS),
    ),
    st.tuples(st.just("end"), st.integers(0, 7), st.sampled_from(STATUSES)),
)


@given(
    delay_ms=st.sampled_from([0, 100, 500, 1000]),
    ip_delay_ms=st.sampled_from([0, 300, 1500]),
    per_host=st.integers(1, 3),
    capacity=st.integers(1, 3),
    factor=st.sampled_from([0.0, 2.0]),
    ops=st.lists(operation, max_size=80),
)
def test_random_requests_keep_every_host_and_address_polite(
    delay_ms: int,
    ip_delay_ms: int,
    per_host: int,
    capacity: int,
    factor: float,
    ops: list[tuple[object, ...]],
) -> None:
    """Any sequence of starts (a page's through ``acquire``, which says go, wait until
    its deadline or held; a side request's when ``ready_at`` has come; either now or at
    ``ready_at``), ends (with any answer, or ``forget``) and holds (only when
    ``ready_at`` is ``None``, as the engine does): two starts to one host are at least
    its delay apart (the delay in force at the second), two to one address at least
    ``ip_delay_ms``; a host never has more than ``per_host`` requests in flight; a free
    host whose time has come may start; a held host is handed back exactly once, by
    the end of a side request that frees a slot (none waiting, ``want_side``), or a
    waiting side request that gives up (``drop_side_want``), and a page end that frees one
    ends the hold; while a side request waits, a page is held; the figures agree."""
    clock = FakeClock()
    politeness = Politeness(politeness_settings(delay_ms, capacity, factor), random.Random(0))
    gate = make_gate(
        ip_delay_ms=ip_delay_ms,
        per_host=per_host,
        bucket_capacity=capacity,
        politeness=politeness,
    )
    ip_delay_s = ip_delay_ms / 1000.0
    model = Model(per_host)
    for host in HOSTS:
        gate.note_address(host, ADDRESS[host])

    def start(host: str, kind: str) -> None:
        now = clock.now
        assert model.in_flight(host) < per_host
        previous = model.last_start.get(host)
        if previous is not None:
            assert previous + gate.delay_s(host) <= now
        ip = ADDRESS[host]
        previous_ip = model.last_ip_start.get(ip)
        if previous_ip is not None:
            assert previous_ip + ip_delay_s <= now
        model.last_start[host] = now
        model.last_ip_start[ip] = now
        if kind == "page":  # counted by the gate's acquire; never past a waiting side request
            assert not model.wanted.get(host)
            model.pages[host] = model.pages.get(host, 0) + 1
        else:
            gate.start_side(host, now)
            model.sides[host] = model.sides.get(host, 0) + 1
            if model.wanted.get(host):
                model.wanted[host] -= 1  # the waiting side request started
        model.flights.append((host, kind))

    for op in ops:
        now = clock.now
        if op[0] == "advance":
            assert isinstance(op[1], float)
            clock.advance(op[1])
        elif op[0] == "want":
            host = str(op[1])
            gate.want_side(host)
            model.wanted[host] = model.wanted.get(host, 0) + 1
        elif op[0] == "drop":
            host = str(op[1])
            if not model.wanted.get(host):
                continue
            model.wanted[host] -= 1
            back = not model.wanted[host] and host in model.held
            back = back and model.in_flight(host) < per_host
            assert gate.drop_side_want(host, now) is back
            if back:
                model.held.discard(host)
                model.handed_back += 1
        elif op[0] in ("page", "side", "wait_page", "wait_side", "hold"):
            host = str(op[1])
            at = gate.ready_at(host, now)
            assert (at is None) == (model.in_flight(host) >= per_host)
            if at is not None:
                assert at == gate.earliest(host, now) >= now
            if op[0] == "hold":
                if at is None:
                    gate.hold(host)
                    model.held.add(host)
                continue
            kind = str(op[0]).removeprefix("wait_")
            if op[0].startswith("wait_") and at is not None:
                clock.now = at  # the caller waits for the one deadline
                assert may_start(gate, host, at)
            if kind == "page":  # a worker's page fetch asks once
                answer = gate.acquire(host, clock.now)
                if answer is GO:
                    start(host, kind)
                elif answer is HELD:
                    assert model.in_flight(host) >= per_host or model.wanted.get(host)
                    model.held.add(host)
                else:
                    assert isinstance(answer, WaitUntil)
                    assert answer.at > clock.now
                    assert answer.at == gate.ready_at(host, clock.now)
            elif may_start(gate, host, clock.now):
                start(host, kind)
        else:
            assert isinstance(op[1], int)
            if not model.flights:
                continue
            host, kind = model.flights.pop(op[1] % len(model.flights))
            if kind == "page":
                gate.end_page(host, now)
                model.pages[host] -= 1
                if model.in_flight(host) < per_host:
                    model.held.discard(host)  # its worker gives it back itself
            else:
                was_held = host in model.held
                model.sides[host] -= 1
                frees = model.in_flight(host) < per_host and not model.wanted.get(host)
                assert gate.end_side(host, now) is (was_held and frees)
                if was_held and frees:
                    model.held.discard(host)
                    model.handed_back += 1
            status = op[2]
            if status == "forget":
                gate.forget(host, now)
            else:
                assert status is None or isinstance(status, int)
                outcome = gate.learn(host, now, status, 0.25, None)
                assert outcome.retry is (status in (None, 429, 503))
                if outcome.retry:
                    model.backing_off.add(host)
                else:
                    model.backing_off.discard(host)
        assert gate.statistics() == GateStatistics(
            hosts=politeness.hosts(),
            page_fetches=sum(model.pages.values()),
            side_requests=sum(model.sides.values()),
            held_hosts=len(model.held),
            backing_off=len(model.backing_off),
            addresses=2,
        )
        assert gate.backing_off() == sorted(model.backing_off)
        for host in HOSTS:
            assert gate.fetching(host) == model.pages.get(host, 0)
