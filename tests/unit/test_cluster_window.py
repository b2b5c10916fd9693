"""SharedWindow, the cluster worker's frontier window, on its own (no Redis)."""

from __future__ import annotations

import asyncio

from crawldeck.core.cluster.leases import Leases
from crawldeck.core.cluster.window import SharedWindow
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.records import FrontierRow

T0 = 1_700_000_000.0


class NoSpill:
    """A store with nothing spilled (every URL here is added in memory)."""

    async def read_spilled(
        self, host: str, after: int, limit: int, *, within_s: float = 0.0
    ) -> tuple[list[FrontierRow], int]:
        return [], after


class Source:
    finished = False

    def poke(self) -> None:
        return None

    async def wait_for_work(self) -> None:
        return None

    def read_wait_s(self, host: str) -> float:
        return 0.0


def entry(host: str, path: str) -> FrontierEntry:
    url = f"http://{host}{path}"
    return FrontierEntry(url, url, host, 1, 1, 0, (), None)


def test_a_host_lost_then_claimed_again_is_not_left_checked_out() -> None:
    """A worker that pops a URL of a host whose lease ran out drops the host; when it
    claims that host again later, its URLs are popped (a check-out left by the drop
    kept them waiting for ever: the CI hang of issue #12's fault tests)."""

    async def run() -> None:
        clock = [0.0]
        leases = Leases(1000, clock=lambda: clock[0])
        window = SharedWindow(100, NoSpill(), lambda rows: None, leases=leases, source=Source())
        leases.take("a.test", 1, 0.0)
        window.add(entry("a.test", "/1"))
        clock[0] = 5.0  # past the lease: the next pop drops the host
        assert window.pop(T0) is None
        assert len(window) == 0
        leases.take("a.test", 2, 5.0)  # claimed again
        window.add(entry("a.test", "/2"))
        assert window.next_ready_at() is not None
        popped = window.pop(T0)
        assert popped is not None and popped.url == "http://a.test/2"

    asyncio.run(run())


def test_urls_of_a_host_not_owned_are_never_popped() -> None:
    async def run() -> None:
        leases = Leases(10_000, clock=lambda: 0.0)
        window = SharedWindow(100, NoSpill(), lambda rows: None, leases=leases, source=Source())
        leases.take("a.test", 1, 0.0)
        leases.take("b.test", 1, 0.0)
        for e in (entry("a.test", "/1"), entry("b.test", "/1"), entry("a.test", "/2")):
            window.add(e)
        leases.lose("a.test")
        got = []
        while (popped := window.pop(T0)) is not None:
            got.append(popped.url)
            window.release(popped.host, T0)
        assert got == ["http://b.test/1"]

    asyncio.run(run())


class HandingOut:
    """A store whose reads hand URLs out, as ``PULL`` does (``ClusterStore.read_spilled``):
    each URL is returned once.
    ``queue`` holds what has reached Redis."""

    def __init__(self, queue: list[FrontierRow]) -> None:
        self.queue = queue
        self.reads: list[int] = []

    async def read_spilled(
        self, host: str, after: int, limit: int, *, within_s: float = 0.0
    ) -> tuple[list[FrontierRow], int]:
        self.reads.append(limit)
        out, self.queue = self.queue[:limit], self.queue[limit:]
        return out, after


def row(path: str) -> FrontierRow:
    url = f"http://a.test{path}"
    return FrontierRow(url, url, "a.test", 1, 1, "spilled", 0.0, 0, (), None)


def test_a_short_read_keeps_the_urls_it_was_handed_and_reads_once() -> None:
    """One URL is in Redis, three are counted: the read gets the first and keeps it;
    it is not followed by a second read (``ClusterStore.read_spilled`` goes in the
    flush's pipeline after the buffered pushes, so what was on its way when the read
    was asked is in what it read: issue #23 item 3, one round trip)."""

    async def run() -> None:
        leases = Leases(10_000, clock=lambda: 0.0)
        store = HandingOut([row("/1")])
        window = SharedWindow(100, store, lambda rows: None, leases=leases, source=Source())
        leases.take("a.test", 1, 0.0)
        for _ in range(3):
            assert not window.place("a.test")  # every URL goes to Redis, counted here
        assert await window.drain()
        assert store.reads == [3]
        got = []
        while (popped := window.pop(T0)) is not None:
            got.append(popped.url)
            window.release(popped.host, T0)
        assert got == ["http://a.test/1"]

    asyncio.run(run())
