"""The frontier at scale (issue #6, part 2): 1 000 000 URLs over 100 000 hosts.

    .venv/bin/python benchmarks/frontier_bench.py [--urls N] [--hosts H] [--resume]
                                                  [--ordering O]
    .venv/bin/python benchmarks/frontier_bench.py --engine [--window W] [--ordering O]

Prints the add rate, the dispatch rate through the ready heap (pop + politeness +
release, as the engine does per fetch), the memory per queued URL (RSS growth over
the frontier's entries, URL strings included; the dedupe key shares the URL string),
and with ``--resume`` the time to reload that frontier from SQLite (rows written by
``Store.enqueue_urls``, read back by ``load_frontier`` into a new ``Frontier`` and a
rebuilt seen set). Targets of issue #6: >= 100 000 dispatches/s, <= 300 bytes per
queued URL beyond a bounded window, resume <= 10 s.

``--ordering`` (issue #15; default ``bfs``) builds the frontier of that ordering
(``core.policy.prioritizer``); under ``opic`` and ``opic-inlinks`` URL i gets the cash
1/(1 + (i // 50) mod 1000) (a spread of 10 cash bands; one float per 50 URLs, as the
new links of one page share its share) and its band as priority, and the dispatch
loop credits one queued URL per dispatch (a fetched page's share for a known outlink:
a new float for that URL).

``--engine`` measures the whole admission path instead: a real ``Engine`` on a SQLite
file, ``frontier_window`` W (default 100 000), takes the N URLs as seeds in chunks of
10 000 (clean, normalize, trap guards, seen set, and past the window a ``spilled`` row
in SQLite only). Memory per URL beyond the window is the RSS growth over the second
half of the URLs divided by their number (every host already exists after the first
half, so per-host state is not counted in it). Then the file is closed and reopened
by a new ``Engine``: the resume time is its construction (seen set rebuilt from every
key, the in-memory window reloaded, the spilled URLs counted per host).
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from pathlib import Path

from crawldeck.core.config import build_config
from crawldeck.core.policy.frontier import Frontier
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.politeness import Politeness, PolitenessSettings
from crawldeck.core.policy.prioritizer import ORDERINGS, Ordering, Prioritizer
from crawldeck.core.policy.seen import SeenSet
from crawldeck.core.records import FrontierRow
from crawldeck.core.storage.store import Store


def rss_bytes() -> int:
    """Resident memory of this process in bytes (from /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def entries(urls: int, hosts: int, prioritizer: Prioritizer | None = None) -> list[FrontierEntry]:
    """``urls`` entries spread round-robin over ``hosts`` hosts; key = url (shared);
    under ``opic`` (``prioritizer``) URL i has cash 1/(1 + (i // 50) mod 1000), one
    float object per 50 URLs, and its band."""
    out = []
    shares = [1.0 / (1 + n) for n in range(1000)]
    for i in range(urls):
        host = f"h{i % hosts}.example.com"
        url = f"http://{host}/page/{i // hosts}"
        if prioritizer is not None and prioritizer.by_cash:
            cash = shares[(i // 50) % 1000]
            out.append(FrontierEntry(url, url, host, 1, prioritizer.priority(cash), score=cash))
        else:
            out.append(FrontierEntry(url, url, host, 1, 1))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--resume", action="store_true", help="also time a resume from SQLite")
    parser.add_argument("--engine", action="store_true", help="the engine's admission path")
    parser.add_argument("--window", type=int, default=100_000, help="frontier_window (--engine)")
    parser.add_argument("--ordering", choices=ORDERINGS, default="bfs")
    args = parser.parse_args()
    ordering: Ordering = args.ordering
    if args.engine:
        return engine_bench(args.urls, args.hosts, args.window, ordering)

    prioritizer = Prioritizer(ordering)
    gc.collect()
    base = rss_bytes()
    batch = entries(args.urls, args.hosts, prioritizer)
    frontier = Frontier(prioritizer.priorities, ordering=ordering)
    started = time.perf_counter()
    for queued in batch:
        frontier.add(queued)
    add_s = time.perf_counter() - started
    del batch
    gc.collect()
    per_url = (rss_bytes() - base) / args.urls
    print(f"{args.urls:,} URLs over {args.hosts:,} hosts, ordering {ordering}")
    print(f"add:      {args.urls / add_s:,.0f} URLs/s ({add_s:.2f} s)")
    print(f"memory:   {per_url:.0f} bytes per queued URL (entries, URL strings and frontier)")

    politeness = Politeness(
        PolitenessSettings.from_config(build_config({"delay_ms": 0, "adaptive_delay_factor": 0}))
    )
    now = 1_000_000.0
    dispatched = 0
    credit = frontier.credit if prioritizer.by_cash else None
    started = time.perf_counter()
    while True:
        entry = frontier.pop(now)
        if entry is None:
            break
        politeness.on_dispatch(entry.host, now)
        frontier.release(entry.host, politeness.earliest(entry.host, now))
        if credit is not None:  # a share for a URL one page further on the same host
            base, _, page = entry.url.rpartition("/")
            credit(f"{base}/{int(page) + 1}", 0.001)
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


def engine_bench(urls: int, hosts: int, window: int, ordering: Ordering) -> int:
    """``--engine``: admission rate, bytes per URL beyond the window, resume time."""
    from crawldeck.core.crawl.engine import Engine

    config = build_config(
        {"frontier_window": window, "render": "never", "max_per_host": 1_000_000,
         "ordering": ordering}
    )  # fmt: skip
    half = urls // 2
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "frontier.db"
        store = Store(db)
        engine = Engine(config, store)
        rss: list[int] = []
        started = time.perf_counter()
        for part in (range(half), range(half, urls)):
            chunk: list[str] = []
            for i in part:
                chunk.append(f"http://h{i % hosts}.example.com/page/{i // hosts}")
                if len(chunk) == 10_000:
                    engine.add_seeds(chunk)
                    chunk = []
            engine.add_seeds(chunk)
            store.flush()
            gc.collect()
            rss.append(rss_bytes())
        add_s = time.perf_counter() - started
        queued = engine.snapshot().counters.queued
        print(
            f"{urls:,} URLs over {hosts:,} hosts through Engine.add_seeds, window {window:,}, "
            f"ordering {ordering}"
        )
        print(f"admit:    {urls / add_s:,.0f} URLs/s ({add_s:.1f} s, SQLite writes included)")
        print(f"queued:   {queued:,} ({engine.statistics().frontier.spilled:,} spilled to SQLite)")
        beyond = (rss[1] - rss[0]) / (urls - half)
        print(f"memory:   {beyond:.0f} bytes per queued URL beyond the window")
        print(f"          (RSS {rss[0] / 2**20:.0f} MiB after {half:,}, {rss[1] / 2**20:.0f} MiB "
              f"after {urls:,})")  # fmt: skip
        store.close()
        started = time.perf_counter()
        store = Store(db)
        again = Engine(config, store)
        resume_s = time.perf_counter() - started
        back = again.snapshot().counters.queued
        left = again.statistics().frontier.spilled
        print(f"resume:   {resume_s:.1f} s ({back:,} URLs queued again, {left:,} of "
              f"them in SQLite)")  # fmt: skip
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
