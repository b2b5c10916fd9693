"""``core.cluster.addresses.SharedIpLimit``: two workers' limits on one address, over a
real redis-server: their bookings are a delay apart, the console's look books nothing,
and a booking held past its start is booked again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redisfix import LoopbackRedis

from crawldeck.core.cluster.addresses import PENDING_S, STALE_S, SharedIpLimit
from crawldeck.core.cluster.keys import Keyspace
from crawldeck.core.cluster.link import RedisLink, open_client
from crawldeck.core.dns import IpLimiter, IpLimitSettings

IP = "127.0.0.9"
DELAY_S = 0.5


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


def limit(link: RedisLink, clock: Clock, woken: list[int]) -> SharedIpLimit:
    local = IpLimiter(IpLimitSettings(ip_delay_ms=int(DELAY_S * 1000), bucket_capacity=5))
    return SharedIpLimit(
        local, link, Keyspace("t"), DELAY_S, clock=clock, wake=lambda: woken.append(1)
    )


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0.01)


async def test_two_workers_bookings_on_one_address_are_a_delay_apart(link: RedisLink) -> None:
    clock, woken = Clock(), list[int]()
    a, b = limit(link, clock, woken), limit(link, clock, woken)
    now = clock.now
    assert a.earliest(IP, now) == now + PENDING_S  # asked: wait a moment
    assert b.earliest(IP, now) == now + PENDING_S
    await settle()
    assert woken  # the replies woke the engine
    starts = sorted([a.earliest(IP, now), b.earliest(IP, now)])
    assert starts == [now, now + DELAY_S]
    assert a.booked == b.booked == 1


async def test_the_console_look_books_nothing(link: RedisLink) -> None:
    clock, woken = Clock(), list[int]()
    a = limit(link, clock, woken)
    assert a.shown(IP, clock.now) == clock.now
    await settle()
    assert a.booked == 0 and woken == []
    assert await link.client.get(Keyspace("t").ip_next(IP)) is None


async def test_a_booking_not_used_in_time_is_booked_again(link: RedisLink) -> None:
    clock, woken = Clock(), list[int]()
    a, b = limit(link, clock, woken), limit(link, clock, woken)
    now = clock.now
    a.earliest(IP, now)
    await settle()
    assert a.earliest(IP, now) == now
    b.earliest(IP, now)  # b books the next slot: now + delay
    await settle()
    # a's host was held back by its own politeness: it asks again well after its slot
    later = now + STALE_S + 0.2
    assert a.earliest(IP, later) == later  # asked again: not before its answer
    assert a.booked == 1
    await settle()
    assert a.earliest(IP, later) == now + 2 * DELAY_S  # after b's, not at its stale slot
    assert a.booked == 2


async def test_an_end_moves_the_next_slot_a_delay_past_it(link: RedisLink) -> None:
    clock, woken = Clock(), list[int]()
    a, b = limit(link, clock, woken), limit(link, clock, woken)
    now = clock.now
    a.earliest(IP, now)
    await settle()
    a.on_dispatch(IP, now)
    a.on_end(IP, now + 2.0)  # a slow answer
    await settle()
    b.earliest(IP, now)
    await settle()
    assert b.earliest(IP, now) == now + 2.0 + DELAY_S
