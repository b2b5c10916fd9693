"""OPIC cash in the cluster store (issue #15 item 2, issue #12): a real ``redis-server``.

Two workers' ``ClusterStore``s each record a page linking to one URL that is queued in
Redis already: the URL's entry holds the three shares (the first push's, the other
worker's row, which Redis's seen set turns into a credit, and a worker's
``add_scores``) and its queue score is its new cash band's.

Then a crawl of two hosts under ``opic``, once by the single process and once by two
workers: T's seed page (fetched at 2 s, a delay after its robots.txt) links to T's six
pages, a sixth of its cash each; S's pages ``/a`` and ``/b`` (3 s and 4 s, S's delay
is 1 s) both link to one of them, ``HOT``, whose cash then passes a half. T's delay
is 2 s, so T's pages wait while S's are fetched. The workers run on the wall clock:
the delays are twice what they were, so that a loaded machine's late credit (a series
run saw ``HOT`` fifth with 0.5 s and 1 s) still lands before T's owner has taken its
next pages. The single process keeps them in
memory and fetches ``HOT`` right after T's seed. The workers' window is so small that
T's pages wait in Redis, not in its owner's memory, so only the credits in Redis can
move ``HOT`` up: it comes after at most the few its owner held already. With the
default window the owner holds them all, and the credits made by the other worker's
pages reach its memory with its next renewal. Without the credits ``HOT`` would come
last (it is the page whose seen member sorts last, the order ties take in Redis).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fakesite import FakeFetcher, FakeSite, config, crawl, links_page
from redisfix import LoopbackRedis

from crawldeck.core.cluster.keys import PRIORITY_SPAN, Keyspace, decode_entry, seen_member
from crawldeck.core.cluster.leases import Leases
from crawldeck.core.cluster.link import RedisLink, open_client
from crawldeck.core.cluster.store import ClusterStore
from crawldeck.core.cluster.worker import Worker, publish_crawl
from crawldeck.core.config import CrawlConfig
from crawldeck.core.policy.prioritizer import DEFAULT_FRONT_QUEUES
from crawldeck.core.records import FrontierRow, PageRecord

K = Keyspace("cash")
NOW = 1_700_000_000.0
U = "http://t.test/u"


def page(url: str) -> PageRecord:
    """A fetched page of ``url``'s host (its fields as a 200 without content)."""
    return PageRecord(
        url=url, final_url=url, host=url.split("/")[2], depth=0, status=200,
        content_type="text/html", bytes=10, elapsed_ms=1.0, fetched_at=NOW, rendered=False,
        error=None, noindex=False,
    )  # fmt: skip


def new_row(url: str, via: str, cash: float, priority: int) -> FrontierRow:
    """The frontier row a worker's recorder makes for a URL it sees first."""
    return FrontierRow(
        key=url, url=url, host=url.split("/")[2], depth=1, priority=priority, state="spilled",
        available_at=0.0, attempts=0, redirects=(), via=via, score=cash,
    )  # fmt: skip


@pytest.fixture
async def links(redis_server: LoopbackRedis) -> AsyncIterator[list[RedisLink]]:
    """Two workers' connections to one Redis, scripts loaded."""
    made = [RedisLink(open_client(redis_server.url), outage_s=5) for _ in range(2)]
    for link in made:
        await link.load_scripts()
    yield made
    for link in made:
        await link.aclose()


async def test_pages_on_two_workers_linking_to_a_queued_url_both_credit_it(
    links: list[RedisLink],
) -> None:
    clock = [NOW]
    stores = [
        ClusterStore(K, link, f"w{i}", Leases(10_000, clock=lambda: clock[0]),
                     clock=lambda: clock[0], hot_queue=1000, cash_queues=DEFAULT_FRONT_QUEUES)
        for i, link in enumerate(links)
    ]  # fmt: skip
    a, b = stores
    for store in stores:
        store.start()
    try:
        # w0's page (cash 1, four links) finds u first: u waits with a quarter, band 2
        a.record_page(page("http://s.test/1"), key="http://s.test/1", links=[],
                      new_rows=[new_row(U, "http://s.test/1", 0.25, 2)], state="done")  # fmt: skip
        await a.drain()
        base = K.host("t.test")
        member = str(seen_member(U))
        assert await links[0].client.zscore(f"{base}:q", member) == 2 * PRIORITY_SPAN + NOW * 1000
        # 2 s later w1's page (half of cash 0.25) finds u too: a new row to w1, a
        # credit to Redis; and w0's next page credits u (w0 knows it), 1/8 more
        clock[0] = NOW + 2
        b.record_page(page("http://s.test/2"), key="http://s.test/2", links=[],
                      new_rows=[new_row(U, "http://s.test/2", 0.125, 3)], state="done")  # fmt: skip
        a.add_scores([(U, 0.125)])
        await asyncio.gather(a.drain(), b.drain())
        text = await links[0].client.hget(f"{base}:e", member)
        assert text is not None
        entry = decode_entry(text, "t.test")
        assert (entry.score, entry.priority, entry.via) == (0.5, 1, "http://s.test/1")
        assert await links[0].client.zscore(f"{base}:q", member) == (
            1 * PRIORITY_SPAN + (NOW + 2) * 1000
        )
        assert await links[0].client.zcard(f"{base}:q") == 1  # queued once
        assert [s.statistics().queued for s in stores] == [1, 0]
        assert [s.statistics().credited for s in stores] == [1, 1]
    finally:
        for store in stores:
            await store.aclose()


# --------------------------------------------------------------- the crawl of two hosts

S, T = "http://127.0.0.1", "http://127.0.0.2"
#: T's pages; the one S links to is the one whose seen member sorts last.
T_PAGES = [f"{T}/p{n}" for n in range(6)]
HOT = max(T_PAGES, key=lambda u: str(seen_member(u)))
OTHERS = [u for u in T_PAGES if u != HOT]
SETTINGS = {
    "ordering": "opic",
    "delay_ms": 1000,
    "hosts": {"127.0.0.2": {"delay_ms": 2000}},
    "cluster_lease_ms": 5000,
}
#: A workers' window where a host keeps at most 2 URLs in a worker's memory, the rest
#: waiting in Redis (the single process keeps all of them in memory).
SMALL_WINDOW = 16


def site() -> FakeSite:
    """S: ``/`` links to ``/x``, which links to ``/a`` and ``/b``, which both link to
    ``HOT`` (half of their cash each); T: ``/`` links to ``HOT`` and five others (a
    sixth of its cash each)."""
    s = FakeSite()
    s.add(S + "/", links_page(S + "/x"))
    s.add(S + "/x", links_page(S + "/a", S + "/b"))
    s.add(S + "/a", links_page(HOT))
    s.add(S + "/b", links_page(HOT))
    s.add(T + "/", links_page(*(u.removeprefix(T) for u in [*OTHERS, HOT])))
    for url in [*OTHERS, HOT]:
        s.add(url, links_page())
    return s


async def _cluster(url: str, s: FakeSite, cfg: CrawlConfig, workers: int) -> list[Worker]:
    keys = Keyspace("opic")
    link = RedisLink(open_client(url), outage_s=10)
    await link.load_scripts()
    await publish_crawl(link, keys, cfg, [S + "/", T + "/"])
    crew = [
        Worker(RedisLink(open_client(url), outage_s=10), keys, cfg, worker_id=f"w{i}",
               fetcher=FakeFetcher(s, cfg), dns=s.dns(cfg, time.time))
        for i in range(workers)
    ]  # fmt: skip
    try:
        results = await asyncio.wait_for(asyncio.gather(*(w.run() for w in crew)), 60)
        assert [r.outcome for r in results] == ["finished"] * workers
    finally:
        for w in crew:
            await w.store.aclose()
            await w.link.aclose()
        await link.aclose()
    return crew


def t_order(s: FakeSite) -> list[str]:
    """T's pages in the order they were fetched."""
    return [T + path for path in s.targets(T)]


@pytest.mark.parametrize(
    ("window", "ordering"),
    [(SMALL_WINDOW, "opic"), (None, "opic"), (SMALL_WINDOW, "opic-inlinks")],
)
def test_a_cluster_crawl_fetches_the_credited_page_early_as_the_single_process_does(
    tmp_path: Path, redis_server: LoopbackRedis, window: int | None, ordering: str
) -> None:
    """Under ``opic-inlinks`` too (the default ordering): HOT's cash and its three
    in-links (T's seed, S's a and b) raise it in Redis."""
    settings = {**SETTINGS, "ordering": ordering}
    alone = site()
    crawl(alone, [S + "/", T + "/"], tmp_path / "c.db", **settings)
    order = t_order(alone)
    assert order[:2] == [T + "/", HOT]  # S's two halves came before T's second fetch
    assert sorted(order) == sorted([T + "/", *T_PAGES])

    shared = site()
    cfg = config(**settings) if window is None else config(**settings, frontier_window=window)
    crew = asyncio.run(_cluster(redis_server.url, shared, cfg, workers=2))
    order = t_order(shared)
    assert sorted(order) == sorted([T + "/", *T_PAGES])  # each page once
    # In a window of 16, T's owner holds up to 2 of T's pages when HOT's cash rises,
    # and the others wait in Redis, where the credits move HOT. In the default window
    # it holds them all, and learns of a credit by another worker's page with its
    # next renewal (a quarter of the lease: 1.25 s). Without credits: last.
    assert order.index(HOT) <= 3, order
    stats = [w.store.statistics() for w in crew]
    assert sum(st.credited + st.credited_out for st in stats) >= 1
