"""The frontier at scale (issue #6, part 2): 1 000 000 URLs over 100 000 hosts.

    .venv/bin/python benchmarks/frontier_bench.py [--urls N] [--hosts H] [--resume]

Prints the add rate, the dispatch rate through the ready heap (pop + politeness +
release, as the engine does per fetch), the memory per queued URL (RSS growth over
the frontier's entries, URL strings included; the dedupe key shares the URL string),
and with ``--resume`` the time to reload that frontier from SQLite (rows written by
``Store.enqueue_urls``, read back by ``load_frontier`` into a new ``Frontier`` and a
rebuilt seen set). Targets of issue #6: >= 100 000 dispatches/s, <= 300 bytes per
queued URL beyond a bounded window, resume <= 10 s.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from pathlib import Path

from core.config import build_config
from core.frontier import Frontier, FrontierEntry
from core.politeness import Politeness
from core.seen import SeenSet
from core.store import FrontierRow, Store


def rss_bytes() -> int:
    """Resident memory of this process in bytes (from /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def entries(urls: int, hosts: int) -> list[FrontierEntry]:
    """``urls`` entries spread round-robin over ``hosts`` hosts; key = url (shared)."""
    out = []
    for i in range(urls):
        host = f"h{i % hosts}.example.com"
        url = f"http://{host}/page/{i // hosts}"
        out.append(FrontierEntry(url, url, host, 1, 1))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--resume", action="store_true", help="also time a resume from SQLite")
    args = parser.parse_args()

    gc.collect()
    base = rss_bytes()
    batch = entries(args.urls, args.hosts)
    frontier = Frontier()
    started = time.perf_counter()
    for entry in batch:
        frontier.add(entry)
    add_s = time.perf_counter() - started
    del batch
    gc.collect()
    per_url = (rss_bytes() - base) / args.urls
    print(f"{args.urls:,} URLs over {args.hosts:,} hosts")
    print(f"add:      {args.urls / add_s:,.0f} URLs/s ({add_s:.2f} s)")
    print(f"memory:   {per_url:.0f} bytes per queued URL (entries, URL strings and frontier)")

    politeness = Politeness(build_config({"delay_ms": 0, "adaptive_delay_factor": 0}))
    now = 1_000_000.0
    dispatched = 0
    started = time.perf_counter()
    while True:
        entry = frontier.pop(now)
        if entry is None:
            break
        politeness.on_dispatch(entry.host, now)
        frontier.release(entry.host, politeness.earliest(entry.host, now))
        dispatched += 1
    dispatch_s = time.perf_counter() - started
    print(
        f"dispatch: {dispatched / dispatch_s:,.0f} dispatches/s ({dispatched:,} in "
        f"{dispatch_s:.2f} s; pop + politeness + release)"
    )

    if args.resume:
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "frontier.db"
            with Store(db) as store:
                rows = (
                    FrontierRow(key=e.key, url=e.url, host=e.host, depth=1, priority=1)
                    for e in entries(args.urls, args.hosts)
                )
                chunk: list[FrontierRow] = []
                for row in rows:
                    chunk.append(row)
                    if len(chunk) == 10_000:
                        store.enqueue_urls(chunk)
                        chunk = []
                store.enqueue_urls(chunk)
            started = time.perf_counter()
            with Store(db) as store:
                seen = SeenSet(store)
                seen.rebuild(store.iter_keys())
                again = Frontier()
                for row in store.load_frontier():
                    again.add(FrontierEntry(row.url, row.key, row.host, row.depth, row.priority))
            resume_s = time.perf_counter() - started
            print(f"resume:   {resume_s:.1f} s ({len(again):,} URLs back from SQLite)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
