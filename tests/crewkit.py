"""One cluster crawl in this process: a collector writing into a SQLite ``Store`` and
``workers`` in-process ``Worker``s on one Redis, run to their end, then every
connection closed (the shared set-up of the cluster tests that look inside workers).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from crawldeck.core.cluster.collector import Collector
from crawldeck.core.cluster.keys import Keyspace
from crawldeck.core.cluster.link import RedisLink, open_client
from crawldeck.core.cluster.worker import Worker, publish_crawl
from crawldeck.core.config import CrawlConfig
from crawldeck.core.storage.store import Store


async def crawl_with_crew(
    url: str,
    seeds: list[str],
    db: Path,
    config: CrawlConfig,
    *,
    crawl_id: str,
    workers: int = 2,
    announce: bool = True,
    cluster: bool = False,
    warc_dir: Path | None = None,
    timeout_s: float = 120,
    before_close: Callable[[RedisLink, Keyspace], Awaitable[None]] | None = None,
) -> list[Worker]:
    """Publish crawl ``crawl_id`` of ``seeds`` on the Redis at ``url`` (``announce``:
    with ``workers`` as its worker count, as ``crawl --workers`` does), run a collector
    into ``db`` and ``workers`` workers until each finishes (asserted) or
    ``timeout_s`` (s) passes (``TimeoutError``), call ``before_close`` with the
    collector's link while Redis still holds the crawl, close everything; the workers.
    """
    keys = Keyspace(crawl_id)
    link = RedisLink(open_client(url, cluster=cluster), outage_s=10)
    await link.load_scripts()
    await publish_crawl(link, keys, config, seeds, workers=workers if announce else 0)
    store = Store(db, flush_interval_ms=50)
    stop = asyncio.Event()
    collector = asyncio.get_running_loop().create_task(
        Collector(link.client, keys, store).run(stop)
    )
    crew = [
        Worker(RedisLink(open_client(url, cluster=cluster), outage_s=10), keys, config,
               worker_id=f"w{i}", warc_dir=warc_dir)
        for i in range(workers)
    ]  # fmt: skip
    try:
        results = await asyncio.wait_for(asyncio.gather(*(w.run() for w in crew)), timeout_s)
        assert [r.outcome for r in results] == ["finished"] * workers
        if before_close is not None:
            await before_close(link, keys)
    finally:
        stop.set()
        await collector
        await asyncio.to_thread(store.flush)
        store.close()
        for w in crew:
            await w.store.aclose()
            await w.link.aclose()
        await link.aclose()
    return crew
