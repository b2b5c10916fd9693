"""``core.cluster.addresses.SharedIpLimit``: two workers' limits on one address, over a
real redis-server. A booking waits while the other worker's booked request has not
ended, and then starts a delay after that end; the console's look books nothing; a
booking held past its start is booked again; a hold whose end never comes runs out,
by Redis's clock, not a worker's. Issue #22 item 4: a booking is a fencing token, and
only the end of the worker's last booking frees the address (an earlier request's end
used to free a later booking not sent yet); a worker with two hosts there cannot keep
the address from a worker that waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redisfix import LoopbackRedis

from crawldeck.core.cluster.addresses import PENDING_S, STALE_S, WAIT_POLL_S, SharedIpLimit
from crawldeck.core.cluster.keys import Keyspace
from crawldeck.core.cluster.link import RedisLink, open_client
from crawldeck.core.policy.ip_limits import IpLimiter, IpLimitSettings

IP = "127.0.0.9"
DELAY_S = 0.5
HOLD_S = 3.0


class Clock:
    """Epoch seconds the test sets."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def link(redis_server: LoopbackRedis) -> AsyncIterator[RedisLink]:
    link = RedisLink(open_client(redis_server.url), outage_s=5)
    await link.load_scripts()
    yield link
    await link.aclose()


def limit(
    link: RedisLink, clock: Clock, worker: str, woken: list[str], hold_s: float = HOLD_S
) -> SharedIpLimit:
    local = IpLimiter(IpLimitSettings(ip_delay_ms=int(DELAY_S * 1000), bucket_capacity=5))
    return SharedIpLimit(
        local, link, Keyspace("t"), DELAY_S, clock=clock, wake=lambda: woken.append(worker),
        worker=worker, hold_s=hold_s,
    )  # fmt: skip


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0.01)


async def test_a_booking_waits_for_the_other_workers_end_then_a_delay(link: RedisLink) -> None:
    clock, woken = Clock(), list[str]()
    a, b = limit(link, clock, "a", woken), limit(link, clock, "b", woken)
    now = clock.now
    assert a.earliest(IP, now) == now + PENDING_S  # asked: wait a moment
    await settle()
    assert woken == ["a"] and a.earliest(IP, now) == now and a.booked == 1
    assert b.earliest(IP, now) == now + PENDING_S
    await settle()
    assert b.booked == 0 and b.waited == 1  # a's request is booked and not ended
    assert b.earliest(IP, now) == now + WAIT_POLL_S
    a.on_dispatch(IP, now)
    a.on_end(IP, now + 0.2)  # a slow answer
    await settle()
    clock.now = now + 0.21
    b.earliest(IP, clock.now)
    await settle()
    assert b.earliest(IP, clock.now) == now + 0.2 + DELAY_S  # a delay after a's end


async def test_the_console_look_books_nothing(link: RedisLink) -> None:
    clock, woken = Clock(), list[str]()
    a = limit(link, clock, "a", woken)
    assert a.shown(IP, clock.now) == clock.now
    await settle()
    assert a.booked == 0 and woken == []
    assert await link.client.get(Keyspace("t").ip_next(IP)) is None


async def test_a_booking_not_used_in_time_is_booked_again(link: RedisLink) -> None:
    clock, woken = Clock(), list[str]()
    a = limit(link, clock, "a", woken)
    now = clock.now
    a.earliest(IP, now)
    await settle()
    assert a.earliest(IP, now) == now
    # a's host was held back by its own politeness: it asks again well after its slot
    clock.now = later = now + STALE_S + 0.2
    assert a.earliest(IP, later) == later + PENDING_S  # asked again (its hold is no bar)
    await settle()
    assert a.earliest(IP, later) == now + DELAY_S and a.booked == 2 and a.given_back == 1


@pytest.mark.parametrize("by", ["heartbeat", "send"])
async def test_a_booking_nothing_asks_for_again_is_given_back(link: RedisLink, by: str) -> None:
    """a books the address for a host it then drops (handed over, or out of URLs):
    nothing asks for the address again. Past ``STALE_S`` after its start, a's next
    heartbeat or next send (a booking of another address) gives it back, so b books
    at once, not when a's hold runs out (60 s here): b asked every ``WAIT_POLL_S``
    meanwhile, 856 round trips in one suite run of test_cluster_costs."""
    clock, woken = Clock(), list[str]()
    a, b = limit(link, clock, "a", woken, 60.0), limit(link, clock, "b", woken, 60.0)
    now = clock.now
    a.earliest(IP, now)
    await settle()
    assert a.booked == 1  # and then a's host is gone: a never asks for the address again
    clock.now = now + STALE_S  # not yet past: kept
    a.give_back_stale()
    assert a.given_back == 0
    clock.now = now + STALE_S + 0.01
    if by == "heartbeat":
        a.give_back_stale()
    else:
        a.earliest("127.0.0.10", clock.now)
    await settle()
    assert a.given_back == 1
    b.earliest(IP, clock.now)
    await settle()
    assert b.booked == 1 and b.waited == 0  # the old code: refused until the hold ran out
    assert b.earliest(IP, clock.now) == now + DELAY_S  # a's slot still counts its delay


async def test_a_hold_whose_end_never_comes_runs_out_on_redis_clock(link: RedisLink) -> None:
    """The busy mark's life is Redis's ``PX``: b books once it is gone, at a's slot plus
    the delay (its clock, moved ahead of the hold, did not decide it: see below)."""
    clock, woken = Clock(), list[str]()
    hold_s = 1.0  # 0.3 s ran out before the read below once, six test workers on 2 cores
    a, b = limit(link, clock, "a", woken, hold_s), limit(link, clock, "b", woken, hold_s)
    now = clock.now
    a.earliest(IP, now)
    await settle()
    a.on_dispatch(IP, now)  # a's worker dies: no end ever comes
    busy = Keyspace("t").ip_next(IP) + ":busy"
    assert 0 < await link.client.pttl(busy) <= hold_s * 1000
    for _ in range(500):  # at most 5 s: the mark's life is 1 s
        if not await link.client.exists(busy):
            break
        await asyncio.sleep(0.01)
    clock.now = now + 0.01
    b.earliest(IP, clock.now)
    await settle()
    assert b.earliest(IP, clock.now) == now + DELAY_S and b.booked == 1


async def test_a_worker_whose_clock_runs_ahead_cannot_take_a_hold_over(link: RedisLink) -> None:
    """b's clock is past a's hold (another machine's, skewed): a's request has not
    ended, so b waits all the same."""
    clock, ahead, woken = Clock(), Clock(), list[str]()
    a, b = limit(link, clock, "a", woken), limit(link, ahead, "b", woken)
    now = clock.now
    a.earliest(IP, now)
    await settle()
    a.on_dispatch(IP, now)
    ahead.now = now + HOLD_S + 0.01
    b.earliest(IP, ahead.now)
    await settle()
    assert b.booked == 0 and b.waited == 1


async def test_an_earlier_end_does_not_free_a_later_booking(link: RedisLink) -> None:
    """a has two hosts on the address: its first request is in flight when its second
    is booked (a delay after the first's start), and the first ends before the second
    starts. b must wait for the second's end: had the first's end freed the address, b
    would book a delay after the second's *booked* start, and the second, sent a
    little late (within ``STALE_S``), would come less than a delay before b's."""
    clock, woken = Clock(), list[str]()
    a, b = limit(link, clock, "a", woken), limit(link, clock, "b", woken)
    now = clock.now
    a.earliest(IP, now)
    await settle()
    a.on_dispatch(IP, now)
    second = now + DELAY_S
    assert a.earliest(IP, now) == second  # the local limit: a delay after the start
    await settle()
    assert a.earliest(IP, now) == second and a.booked == 2
    clock.now = now + 0.04
    a.on_end(IP, clock.now)  # the first request ends: the second is not sent yet
    b.earliest(IP, clock.now)
    await settle()
    assert b.booked == 0 and b.waited == 1  # the second booking still holds the address
    late = second + 0.04  # held by its host's politeness: still within STALE_S
    clock.now = late
    assert a.earliest(IP, late) == late
    a.on_dispatch(IP, late)
    clock.now = late + 0.01
    a.on_end(IP, clock.now)
    await settle()
    b.earliest(IP, clock.now)
    await settle()
    start = b.earliest(IP, clock.now)
    assert b.booked == 1 and start == late + 0.01 + DELAY_S  # a delay after a's end
    assert start - late >= DELAY_S


async def test_one_worker_with_two_hosts_there_cannot_keep_the_address(
    link: RedisLink,
) -> None:
    """b waits for a's request; a asks again (its other host) before its request
    ends: b is first in line, so a waits too, and b books once a's request ended."""
    clock, woken = Clock(), list[str]()
    a, b = limit(link, clock, "a", woken), limit(link, clock, "b", woken)
    now = clock.now
    a.earliest(IP, now)
    await settle()
    a.on_dispatch(IP, now)
    b.earliest(IP, now)
    a.earliest(IP, now)  # after b's: b is refused first
    await settle()
    assert b.waited == 1
    assert a.booked == 1 and a.waited == 1  # b is first in line
    clock.now = now + 0.05
    a.on_end(IP, clock.now)
    await settle()
    b.earliest(IP, clock.now)
    await settle()
    assert b.booked == 1 and b.earliest(IP, clock.now) == now + 0.05 + DELAY_S
