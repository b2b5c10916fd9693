"""The collector's drain rate: how fast results in Redis reach the crawl's SQLite file
(issue #23 item 3: >= 5 000 pages/s however many workers write).

    .venv/bin/python benchmarks/collector_drain.py                # 20 000 pages, 1 2 8 writers
    .venv/bin/python benchmarks/collector_drain.py --pages 5000 --writers 2

A fresh ``redis-server`` (``PrivateRedis``, unix socket, append-only file ``everysec``
as a private crawl's) is filled, before the clock starts, with what ``--writers``
workers' flushes append: one stream entry per (host, flush), as ``COMMIT`` appends it,
each holding ``--per-entry`` pages of that host, a page being the ops a worker writes
for it (``op_enqueue`` of its ``--links`` new rows, ``op_record_page`` with those
links, and an ``op_upsert_host`` per entry), over ``--hosts`` hosts; the writers'
entries interleave in the streams as their flushes would. Then ``Collector.run``
drains them into a fresh crawl file (``core.storage.store.Store``, as the coordinator opens
it) and the benchmark prints, per writer count: the pages drained per second of wall
time (from the first read to the file committed), the collector's CPU per page (this
process's, the store's writer thread included; ``time.process_time``), the writer
thread's share of it (the rest is the loop's: reading and decoding), the rate
that CPU allows on one free core (``1 core p/s``: on a loaded machine the wall rate
says how busy the machine was, this one what the collector costs), redis-server's CPU
per page over the drain (``INFO cpu``: the ``XREAD`` and ``XTRIM`` calls) and the
SQLite file's size per page. The figures are the collector's alone: no worker runs,
no network but the unix socket.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from pathlib import Path

import redis
import redis.asyncio as aioredis

from crawldeck.core.cluster import wire
from crawldeck.core.cluster.collector import Collector
from crawldeck.core.cluster.keys import Keyspace, shard_of
from crawldeck.core.cluster.server import PrivateRedis
from crawldeck.core.records import FrontierRow, HostRecord, PageRecord
from crawldeck.core.storage.store import Store

T0 = 1_700_000_000.0
KEYS = Keyspace("drain")


def page_ops(host: str, i: int, links: int) -> list[list[object]]:
    """A fetched page's ops (``op_enqueue`` of its new rows, then ``op_record_page``)."""
    url = f"http://{host}/p/{i}"
    targets = [f"http://{host}/p/{i * links + j + 1}" for j in range(links)]
    rows = [FrontierRow(key=t, url=t, host=host, depth=2, priority=1, via=url) for t in targets]
    page = PageRecord(
        url=url, final_url=url, host=host, depth=1, status=200, content_type="text/html",
        bytes=15_000, elapsed_ms=5.0, fetched_at=T0 + i, rendered=False, error=None,
        noindex=False,
    )  # fmt: skip
    record = wire.op_record_page(
        page, key=url, links=[(url, t) for t in targets], new_rows=(), state="done",
        next_url=None, next_host=None, redirects=(),
    )  # fmt: skip
    return [wire.op_enqueue(rows), record]


async def fill(url: str, pages: int, hosts: int, writers: int, per_entry: int, links: int) -> int:
    """Append the entries (see the module); the number appended."""
    client = aioredis.Redis.from_url(url)
    names = [f"h{h}.test" for h in range(hosts)]
    entries = 0
    try:
        pipe = client.pipeline(transaction=False)
        done = 0
        flush = 0
        while done < pages:
            for writer in range(writers):
                host = names[(flush * writers + writer) % hosts]
                ops: list[list[object]] = []
                for _ in range(min(per_entry, pages - done)):
                    ops += page_ops(host, done, links)
                    done += 1
                if not ops:
                    break
                rec = HostRecord(host, "127.0.0.1", "ok", T0 + 3600, None, 100.0, 0, None,
                                 done, "active")  # fmt: skip
                ops.append(wire.op_upsert_host(rec))
                fields = {"w": f"w{writer}", "h": host, "e": 1, "m": wire.encode_ops(ops)}
                pipe.xadd(KEYS.stream(shard_of(host)), fields)  # type: ignore[arg-type]
                entries += 1
            flush += 1
            if len(pipe) >= 500:
                await pipe.execute()
        await pipe.execute()
    finally:
        await client.aclose()
    return entries


def redis_cpu_s(url: str) -> float:
    """redis-server's CPU so far (s, ``used_cpu_user + used_cpu_sys``)."""
    with redis.Redis.from_url(url) as client:
        info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


async def drain(url: str, db: Path) -> tuple[float, float, float]:
    """Run the collector until the streams are empty; (wall s, CPU s, the loop
    thread's CPU s: the rest is the store's writer thread)."""
    client = aioredis.Redis.from_url(url)
    store = Store(db)
    stop = asyncio.Event()
    stop.set()  # drain what is there, then return
    wall, cpu, loop = time.perf_counter(), time.process_time(), time.thread_time()
    try:
        await Collector(client, KEYS, store).run(stop)
        await asyncio.to_thread(store.flush)
    finally:
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        loop = time.thread_time() - loop
        store.close()
        await client.aclose()
    return wall, cpu, loop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20_000, help="default 20 000")
    parser.add_argument("--hosts", type=int, default=500, help="default 500")
    parser.add_argument("--writers", default="1,2,8", help="writer counts (default 1,2,8)")
    parser.add_argument("--per-entry", type=int, default=1,
                        help="pages of one host per flush entry (default 1)")  # fmt: skip
    parser.add_argument("--links", type=int, default=10, help="new links per page (default 10)")
    args = parser.parse_args()
    print(f"{args.pages} pages over {args.hosts} hosts, {args.per_entry} a stream entry, "
          f"{args.links} new links a page")  # fmt: skip
    print(f"{'writers':>7} {'entries':>8} {'pages/s':>9} {'CPU ms/page':>12} "
          f"{'writer share':>12} {'1 core p/s':>10} {'Redis ms/page':>13} "
          f"{'file B/page':>12}")  # fmt: skip
    for writers in (int(w) for w in args.writers.split(",")):
        with tempfile.TemporaryDirectory(prefix="drain-") as tmp:
            server = PrivateRedis(Path(tmp) / "redis")
            server.start()
            try:
                entries = asyncio.run(
                    fill(server.url, args.pages, args.hosts, writers, args.per_entry, args.links)
                )
                db = Path(tmp) / "crawl.db"
                before = redis_cpu_s(server.url)
                wall, cpu, loop = asyncio.run(drain(server.url, db))
                served = redis_cpu_s(server.url) - before
            finally:
                server.stop()
            with sqlite3.connect(db) as conn:
                (pages,) = conn.execute("SELECT count(*) FROM pages").fetchone()
            assert pages == args.pages, (pages, args.pages)
            size = sum(p.stat().st_size for p in Path(tmp).glob("crawl.db*"))
            print(f"{writers:>7} {entries:>8} {pages / wall:>9.0f} {cpu / pages * 1000:>12.3f} "
                  f"{1 - loop / cpu:>12.2f} {pages / cpu:>10.0f} {served / pages * 1000:>13.3f} "
                  f"{size / pages:>12.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
