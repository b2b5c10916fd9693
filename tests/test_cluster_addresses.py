"""``core.cluster.addresses.SharedIpLimit``: two workers' limits on one address, over a
real redis-server. A booking waits while the other worker's booked request has not
ended, and then starts a delay after that end; the console's look books nothing; a
booking held past its start is booked again; a hold whose end never comes runs out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redisfix import LoopbackRedis

from crawldeck.core.cluster.addresses import PENDING_S, STALE_S, WAIT_POLL_S, SharedIpLimit
from crawldeck.core.cluster.keys import Keyspace
from crawldeck.core.cluster.link import RedisLink, open_client
from crawldeck.core.dns import IpLimiter, IpLimitSettings

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


def limit(link: RedisLink, clock: Clock, worker: str, woken: list[str]) -> SharedIpLimit:
    local = IpLimiter(IpLimitSettings(ip_delay_ms=int(DELAY_S * 1000), bucket_capacity=5))
    return SharedIpLimit(
        local, link, Keyspace("t"), DELAY_S, clock=clock, wake=lambda: woken.append(worker),
        worker=worker, hold_s=HOLD_S,
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
    assert a.earliest(IP, later) == now + DELAY_S and a.booked == 2


async def test_a_hold_whose_end_never_comes_runs_out(link: RedisLink) -> None:
    clock, woken = Clock(), list[str]()
    a, b = limit(link, clock, "a", woken), limit(link, clock, "b", woken)
    now = clock.now
    a.earliest(IP, now)
    await settle()
    a.on_dispatch(IP, now)  # a's worker dies: no end ever comes
    clock.now = now + HOLD_S + 0.01
    b.earliest(IP, clock.now)
    await settle()
    assert b.earliest(IP, clock.now) == clock.now and b.booked == 1
