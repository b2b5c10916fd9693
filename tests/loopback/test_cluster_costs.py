"""What a page costs a cluster crawl in Redis traffic (issue #23 items 3 and 5).

Two workers (in this process, each with its own Redis connection) and the collector
crawl a fixed loopback web, ``clusterkit.SynthWeb``: 8 hosts (named by their
addresses: no DNS) x 12
pages, every page linking to two of its host's and one of the next host's. The config
is the defaults but for what a test on loopback needs: the loopback network allowed,
no rendering (no Chromium here), a 200 ms politeness delay instead of 1 s (the test
takes about 3 s, not 15; the page rate stays low, about 40 pages/s for the pair, the
rate at which batching by count alone does nothing and batching by time must carry
the round trips). The lease is the default (10 s: a heartbeat every 2.5 s a worker):
with a 2 s lease the heartbeats, one every 0.5 s a worker, were a cost of the crawl's
wall time, not of its pages, which a loaded machine raised (issue #24 item 8: a test
calm on a loaded machine). The figures are counts, not times: the round trips
(pipelines) and commands the workers' links sent, per page in the crawl file.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from clusterkit import SynthWeb
from crewkit import crawl_with_crew
from redisfix import LoopbackRedis

from crawldeck.core.cluster.link import Command, RedisLink, open_client
from crawldeck.core.cluster.worker import Worker
from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.errors import ClusterError

#: Measured in real time at a server: alone, with no other test running (conftest).
pytestmark = pytest.mark.exclusive

HOSTS = 8
PAGES = 12
SETTINGS: dict[str, Any] = {
    "allow_networks": ["127.78.0.0/24"],
    "render": "never",
    "delay_ms": 200,
}

#: Round trips per page, the two workers' links together (issue #23 item 3's target:
#: at most 1 on average at any page rate). 4d5703f sent 2.4-3.5 a page here: a flush
#: per loop turn with writes, a pull (often two and a flush) per host refill, a
#: per-IP booking with the ends and the heartbeat each in a pipeline of its own. Then
#: one pipeline carried whatever the worker had to send within ``LINGER_S`` (writes,
#: ends, the heartbeat) or half the time to a booking's slot, and a read took the
#: buffered writes with it: 1.18-1.36 (4990f41). Now a read started as a host's URL
#: is handed out waits ``LINGER_S`` too (the host is busy for its delay: half of it
#: here), so a page's commit, its host's refill and the per-IP calls share one
#: pipeline: 0.65-0.84 in ten runs at load 4-6, 0.67-0.73 slowed under cProfile (the
#: rest is a crawl's fixed cost: claims, releases, the heartbeats while seeking
#: hosts). The issue's target is 1.0. With the default lease: 0.78-0.79 idle,
#: 0.84-0.99 beside ``stress-ng --cpu 4`` on two cores, and 1.04 once in a suite run on
#: four test workers (a slow loop coalesces less within ``LINGER_S``). The bound is the
#: target's 1.0 plus that load's margin, so that a calm suite still fails on 4990f41's
#: 1.18-1.36 and 4d5703f's 2.4-3.5; the target itself is measured idle by
#: ``benchmarks/cluster_bench.py`` (``benchmarks/RESULTS.md``). It runs alone now
#: (``exclusive``: no other test worker loads the machine meanwhile).
MAX_ROUND_TRIPS_PER_PAGE = 1.1
#: Commands per page (a script counted once): 8.4-9.3 before and after (the pipelines
#: got fewer, not the scripts: a COMMIT and a PUSH per shard and flush, an IP_BOOK
#: and an IP_END per request, a PULL per refill, the heartbeat's seven every 0.5 s a
#: worker with a 2 s lease, which a slower run paid more of a page: 10.9 slowed about
#: 3x; 8.2-9.0 with the default lease, idle or loaded).
MAX_COMMANDS_PER_PAGE = 12.0


#: Crawls at most, the first within both bounds ending the test: the counts are of
#: pipelines, which a loaded machine's slow loop fills less within ``LINGER_S`` (a loaded
#: run only ever raises them), so the least of a few crawls is the code's cost and one
#: loaded crawl is not a failure (issue #24 item 8: 1.14 a page once, a suite run at
#: load 7.5 with a build beside it). A regression raises every crawl's figure.
ATTEMPTS = 3


async def _crawl(
    url: str, seeds: list[str], db: Path, config: CrawlConfig, crawl_id: str
) -> list[Worker]:
    return await crawl_with_crew(url, seeds, db, config, crawl_id=crawl_id)


def test_two_workers_send_at_most_a_bounded_number_of_round_trips_a_page(
    redis_server: LoopbackRedis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Twice in suite runs on four test workers (with a new-user trial beside them, load
    # 11), the workers sent about 10 round trips a page, where alone, even at load 13,
    # they send 0.8-1.2 (issue #24 item 8): a failure says what was sent, and when
    sent = _tally_batches(monkeypatch)
    names = {f"127.78.0.{i + 1}": f"127.78.0.{i + 1}" for i in range(HOSTS)}
    tries: list[tuple[float, float, str]] = []
    with SynthWeb(names, pages=PAGES) as web:
        for attempt in range(ATTEMPTS):
            sent.clear()
            web.clear()
            db = tmp_path / f"c{attempt}.db"
            start = time.monotonic()
            crew = asyncio.run(
                _crawl(redis_server.url, web.seeds(), db, build_config(SETTINGS), f"costs{attempt}")
            )
            elapsed = time.monotonic() - start
            with sqlite3.connect(db) as conn:
                (pages,) = conn.execute("SELECT count(*) FROM pages").fetchone()
            assert pages == HOSTS * PAGES
            round_trips = sum(w.link.stats.batches for w in crew)
            commands = sum(w.link.stats.commands for w in crew)
            print(f"{round_trips / pages:.2f} round trips, {commands / pages:.2f} commands a page")
            detail = (
                f"{round_trips} round trips and {commands} commands for {pages} pages in "
                f"{elapsed:.1f} s; each worker's link: {[w.link.stats for w in crew]}; every "
                f"link's batches by their commands (the collector's too): {sent.most_common(12)}"
            )
            tries.append((round_trips / pages, commands / pages, detail))
            if round_trips / pages <= MAX_ROUND_TRIPS_PER_PAGE and (
                commands / pages <= MAX_COMMANDS_PER_PAGE
            ):
                break
    within = [
        rt <= MAX_ROUND_TRIPS_PER_PAGE and cmd <= MAX_COMMANDS_PER_PAGE for rt, cmd, _ in tries
    ]
    assert any(within), [detail for *_, detail in tries]


def _tally_batches(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count every ``RedisLink.batch`` of the test by the names of its commands (a
    script by its name), sorted and joined: what a failure reports."""
    sent: Counter[str] = Counter()
    batch = RedisLink.batch

    async def tallied(link: RedisLink, commands: Sequence[Command]) -> list[Any]:
        names = {str(c[1]) if c[0] == "script" else str(c[0]) for c in commands}
        sent[" ".join(sorted(names))] += 1
        return await batch(link, commands)

    monkeypatch.setattr(RedisLink, "batch", tallied)
    return sent


def test_sends_within_one_another_s_wait_share_one_pipeline(redis_server: LoopbackRedis) -> None:
    """Three callers send within 0.1 s of each other (the last with no wait): one round
    trip, each caller gets its own replies in order; a rider's commands go in it too.
    A command Redis refuses fails every caller of its pipeline."""

    async def run() -> None:
        link = RedisLink(open_client(redis_server.url), outage_s=5)
        rode: list[asyncio.Future[list[Any]]] = []
        link.riders.append(lambda: rode.append(link.join([("INCR", "r")])) if not rode else None)
        try:
            replies = await asyncio.gather(
                link.send([("SET", "a", "1"), ("GET", "a")], within_s=0.1),
                link.send([("INCR", "n"), ("INCR", "n")], within_s=0.1),
                link.send([("GET", "n")]),
            )
            assert replies == [[True, b"1"], [1, 2], [b"2"]]
            assert await rode[0] == [1]
            assert link.stats.batches == 1 and link.stats.commands == 6
            results = await asyncio.gather(
                link.send([("INCR", "a")]), link.send([("HGET", "a", "x")]),
                return_exceptions=True,
            )  # fmt: skip
            assert link.stats.batches == 2
            assert all(isinstance(r, ClusterError) for r in results), results
        finally:
            await link.aclose()

    asyncio.run(run())
