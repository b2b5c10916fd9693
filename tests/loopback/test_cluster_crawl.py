"""End to end: workers over Redis crawl the local web as one crawler would.

The same local web (the same port, so the same URLs) is crawled twice: once by the
single-process engine into SQLite, once by cluster workers (in this process, each with
its own Redis connection) with the collector writing one SQLite file. The crawl files
must hold the same pages, links, refusals, hosts and frontier states, and the servers'
access logs must show each page fetched once and one robots.txt per host. Also on a
3-master Redis Cluster, and with a hot-host threshold so low that every host's queue
is split into path-prefix sub-queues.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from crewkit import crawl_with_crew
from redisfix import LocalRedisCluster, LoopbackRedis, free_port

from crawldeck.core.cluster.keys import Keyspace
from crawldeck.core.cluster.link import RedisLink
from crawldeck.core.cluster.store import ClusterStore
from crawldeck.core.cluster.worker import Worker, survey_commands, survey_totals
from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.storage.store import Store
from crawldeck.localweb import LocalWeb
from crawldeck.localweb.web import Expected

SETTINGS: dict[str, Any] = {
    "delay_ms": 20,
    "backoff_base_ms": 100,
    "concurrency": 8,
    "allow_networks": ["127.77.0.0/24"],
    "render": "never",
    "cluster_lease_ms": 2000,
    # The busy host answers 429 to its first three requests, whichever they are: a
    # /sitemap.xml request racing the pages for them would make the request counts of
    # two crawls differ. The workers' sitemap reading is in test_cluster_faults.py.
    "sitemaps": False,
}
TABLES = ("pages", "links", "blocked", "hosts", "frontier")


def web(port: int) -> LocalWeb:
    return LocalWeb(delay_scale=0.2, busy_429_count=3, retry_after_s=1, port=port)


def single(seeds: list[str], db: Path, config: CrawlConfig) -> None:
    store = Store(db, flush_interval_ms=50)
    try:
        engine = Engine(config, store)
        assert engine.add_seeds(seeds) == []
        asyncio.run(asyncio.wait_for(engine.run(), timeout=120))
    finally:
        store.close()


async def _cluster(
    url: str,
    seeds: list[str],
    db: Path,
    config: CrawlConfig,
    workers: int,
    cluster: bool,
    totals: dict[str, int],
) -> list[Worker]:
    async def survey(link: RedisLink, keys: Keyspace) -> None:
        totals.update(
            survey_totals(await link.batch(survey_commands(keys, cluster=cluster, now=0)))
        )

    return await crawl_with_crew(
        url, seeds, db, config, crawl_id="t", workers=workers, announce=False,
        cluster=cluster, before_close=survey,
    )  # fmt: skip


def clustered(url: str, seeds: list[str], db: Path, config: CrawlConfig, workers: int = 3,
              *, cluster: bool = False) -> list[Worker]:  # fmt: skip
    """Crawl with ``workers`` workers and the collector; checks Redis's counters against
    the crawl file: the pages committed are its pages (none fetched twice here); the
    refusals at least its rows by reason (two workers may refuse one URL: the file
    keeps one row)."""
    totals: dict[str, int] = {}
    crew = asyncio.run(_cluster(url, seeds, db, config, workers, cluster, totals))
    conn = sqlite3.connect(db)
    try:
        (pages,) = conn.execute("SELECT count(*) FROM pages").fetchone()
        blocked = dict(conn.execute("SELECT reason, count(*) FROM blocked GROUP BY reason"))
    finally:
        conn.close()
    assert totals["pages"] == pages
    assert {
        k.removeprefix("blocked:"): v for k, v in totals.items() if k.startswith("blocked:")
    } == blocked
    return crew


def tables(db: Path) -> dict[str, Any]:
    """The rows that must match, URLs without the traps site's random session ids.

    Not a URL's depth: it is that of the first link to it admitted, and links to one
    host come from the workers that own the others in whatever order they commit (the
    calendar trap's 2027/07 is 7 hops by "next month" and 6 by "next year" then back).
    Nor a blocked URL's reason, which follows from its depth: a calendar month one hop
    deeper is refused as ``depth`` before its date is counted as ``calendar``. For the
    same reason ``blocked`` leaves out the URLs refused as ``depth`` and fetched: a
    month first found past ``max_depth`` and then by a shorter path is refused once and
    fetched once, in whichever crawl meets the long path first."""
    c = Expected.canonical
    conn = sqlite3.connect(db)
    try:
        return {
            "pages": sorted(
                (c(u), s, e) for u, s, e in conn.execute("SELECT url, status, error FROM pages")
            ),
            "links": Counter(
                (c(a), c(b)) for a, b in conn.execute("SELECT from_url, to_url FROM links")
            ),
            "blocked": sorted(
                c(u)
                for (u,) in conn.execute(
                    "SELECT url FROM blocked WHERE reason != 'depth'"
                    " OR url NOT IN (SELECT url FROM pages)"
                )
            ),
            "hosts": sorted(conn.execute("SELECT host, pages_fetched FROM hosts")),
            "frontier": sorted(conn.execute("SELECT key, state FROM frontier")),
        }
    finally:
        conn.close()


def requests(w: LocalWeb) -> dict[str, Counter[str]]:
    c = Expected.canonical
    return {name: Counter(c(f"http://x{a.path}") for a in w.access_log(name)) for name in w.hosts}


@pytest.fixture(scope="module")
def baseline(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[int, dict[str, Any], dict[str, Counter[str]]]:
    port = free_port()
    db = tmp_path_factory.mktemp("single") / "single.db"
    with web(port) as w:
        single(w.seeds(), db, build_config(SETTINGS))
        return port, tables(db), requests(w)


def check_same(
    db: Path, w: LocalWeb, expected: dict[str, Any], expected_requests: dict[str, Counter[str]]
) -> None:
    got = tables(db)
    for table in TABLES:
        if got[table] != expected[table]:
            a, b = set(got[table]), set(expected[table])
            print(table, "extra", sorted(a - b)[:10], "missing", sorted(b - a)[:10])
        assert got[table] == expected[table], table
    for name, paths in requests(w).items():
        assert paths["http://x/robots.txt"] == 1, name
        assert paths == expected_requests[name], name  # each page once (429 retries alike)


def test_three_workers_write_the_single_process_crawl(
    baseline: tuple[int, dict[str, Any], dict[str, Counter[str]]],
    redis_server: LoopbackRedis,
    tmp_path: Path,
) -> None:
    port, expected, expected_requests = baseline
    with web(port) as w:
        crew = clustered(redis_server.url, w.seeds(), tmp_path / "c.db", build_config(SETTINGS))
        check_same(tmp_path / "c.db", w, expected, expected_requests)
    assert sum(x.store.pages_added().get("pages", 0) for x in crew) == len(expected["pages"])
    assert all(x.store.statistics().fenced == 0 for x in crew)


def test_a_redis_cluster_of_three_masters_holds_the_crawl(
    baseline: tuple[int, dict[str, Any], dict[str, Counter[str]]],
    redis_cluster: LocalRedisCluster,
    tmp_path: Path,
) -> None:
    port, expected, expected_requests = baseline
    with web(port) as w:
        clustered(redis_cluster.url, w.seeds(), tmp_path / "c.db", build_config(SETTINGS),
                  workers=2, cluster=True)  # fmt: skip
        check_same(tmp_path / "c.db", w, expected, expected_requests)
    with redis_cluster.client() as client:  # the hosts' keys were spread over the masters
        sizes = [client.dbsize(target_nodes=node) for node in client.get_primaries()]
    assert len(sizes) == 3 and all(size > 0 for size in sizes)


def test_hot_hosts_split_into_sub_queues_lose_nothing(
    baseline: tuple[int, dict[str, Any], dict[str, Counter[str]]],
    redis_server: LoopbackRedis,
    tmp_path: Path,
) -> None:
    port, expected, expected_requests = baseline
    config = build_config({**SETTINGS, "cluster_hot_queue": 10})
    with web(port) as w:
        clustered(redis_server.url, w.seeds(), tmp_path / "c.db", config, workers=2)
        check_same(tmp_path / "c.db", w, expected, expected_requests)


def test_hosts_given_back_while_their_last_pages_end_keep_their_page_counts(
    baseline: tuple[int, dict[str, Any], dict[str, Counter[str]]],
    redis_server: LoopbackRedis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #22 item 5, the interleaving a loaded machine makes: a worker gives back
    its idle hosts after writing their rows and waiting for its writes to reach Redis
    (``ClusterStore.drain``); a host's last URL that ended during that wait had its
    page in Redis but not the row with its page count, and the next owner went on
    from the older count (``hosts.pages_fetched`` one short). Here every drain takes
    0.2 s more, as on a loaded machine, so URLs end during it."""
    drain = ClusterStore.drain

    async def slow_drain(self: ClusterStore) -> None:
        await asyncio.sleep(0.2)
        await drain(self)

    monkeypatch.setattr(ClusterStore, "drain", slow_drain)
    port, expected, expected_requests = baseline
    config = build_config({**SETTINGS, "cluster_hot_queue": 10})
    with web(port) as w:
        clustered(redis_server.url, w.seeds(), tmp_path / "c.db", config, workers=2)
        check_same(tmp_path / "c.db", w, expected, expected_requests)
