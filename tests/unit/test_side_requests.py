"""Side requests (``core.crawl.side_requests.SideRequests``) and parking, on a fake clock.

A side request (a sitemap, robots.txt) waiting for a host's slot while a page fetch
holds it must not outlive the host: when that page's answer parks the host (here a
``Retry-After: 999999``, a backoff of ``retry_after_max_s``), the waiter gives up with
``HostParked`` at once. It used to wake, find the host's next start an hour away and
sleep until then, so the crawl could not end (issue #22 item 8). Nothing is fetched:
the parts are the engine's own (``core.crawl.assembly.assemble``), the page's answer is
handed to ``Retries`` as the engine hands it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fakeclock import FakeClock
from multidict import CIMultiDict, CIMultiDictProxy

from crawldeck.core.config import build_config
from crawldeck.core.crawl.assembly import assemble
from crawldeck.core.crawl.retries import Retries
from crawldeck.core.errors import HostParked
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.records import FetchResult
from crawldeck.core.storage.store import Store

HOST = "a.test"
URL = f"http://{HOST}/"


class NoFetch:
    """A fetcher that must not be called: nothing here goes on the wire."""

    async def fetch(self, url: str, **_: object) -> FetchResult:
        raise AssertionError(f"{url} was fetched")


def answer_429(retry_after: str) -> FetchResult:
    headers = CIMultiDictProxy(CIMultiDict({"Retry-After": retry_after}))
    return FetchResult(URL, 429, headers, b"", "", 1.0, False)


async def test_a_side_request_waiting_for_a_host_gives_up_when_the_host_is_parked(
    tmp_path: Path,
) -> None:
    config = build_config({"render": "never", "warc": False, "sitemaps": False})
    clock = FakeClock()
    store = Store(tmp_path / "c.db", flush_interval_ms=0, clock=clock)
    try:
        parts = assemble(config, store, clock=clock, wake=lambda: None, fetcher=NoFetch())
        side, gate = parts.side, parts.gate
        retries = Retries(
            config, store, gate, parts.frontier, parts.observer, parts.recorder,
            parked=side.slot_freed,
        )  # fmt: skip
        stats = parts.observer.stats(HOST, f"http://{HOST}")
        start = clock()
        gate.start_page(HOST, start)  # a worker's page fetch holds the host's one slot
        waiting = asyncio.create_task(side.acquire(HOST))
        for _ in range(3):
            await asyncio.sleep(0)
        assert not waiting.done()  # it waits for the slot
        clock.advance(0.1)
        # what the engine does, in this order and with no await between, when the
        # page's answer comes: free the slot, wake side requests, learn the answer
        gate.end_page(HOST, clock())
        side.slot_freed()
        retries.answered(
            FrontierEntry(URL, URL, HOST, 0, 0), stats, start, clock(), answer_429("999999")
        )
        assert stats.parked
        for _ in range(3):
            await asyncio.sleep(0)
        assert waiting.done()  # was still waiting: the host's next start was 3600 s away
        with pytest.raises(HostParked, match=r"a\.test is parked"):
            waiting.result()
        with pytest.raises(HostParked):  # and nothing waits for a parked host again
            await side.acquire(HOST)
    finally:
        store.close()
