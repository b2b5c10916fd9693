"""What seeding costs, counted, not timed (issue #23 item 4: many hosts start fast).

Seeding many URLs over many hosts must cost little against crawling them once
(``benchmarks/scaling_bench.py --seeding`` measures the CPU). Here the work is
counted, the same on a fast or a slow machine (``test_costs``'s counters): Python
calls into ``crawldeck.core`` and SQLite statements per seed URL that
``Engine.add_seeds`` admits into a real ``Store`` (its writer thread included); and
the calls per fetch of a crawl of n hosts against one of 20n hosts, every host's root
a seed and the same number of pages fetched: the work of a dispatch must not grow
with the hosts queued.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
import virtualtime
from fakesite import FakeFetcher, FakeSite, config
from test_costs import Costs, _counting

from crawldeck.core.engine import Engine
from crawldeck.core.store import Store

HOSTS = 1_000
PER_HOST = 5


def seed_urls(hosts: int, per_host: int) -> list[str]:
    """``per_host`` URLs on each of ``hosts`` hosts: the root, then ``/p/0.html`` ..."""
    paths = ["/", *(f"/p/{i}.html" for i in range(per_host - 1))]
    return [f"http://h{h}.seed.test:8790{path}" for h in range(hosts) for path in paths]


def seeding_costs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Costs, int]:
    """Seed ``HOSTS x PER_HOST`` URLs into a new crawl file; what it cost (``pages``:
    the seeds) and the frontier rows written."""
    site = FakeSite()
    urls = seed_urls(HOSTS, PER_HOST)
    costs = Costs(pages=len(urls))
    db = tmp_path / "seeds.db"

    async def main() -> list[tuple[str, str]]:
        loop = asyncio.get_running_loop()
        cfg = config()
        with _counting(costs, monkeypatch):
            store = Store(db, clock=loop.time)
            try:
                engine = Engine(cfg, store, clock=loop.time, fetcher=FakeFetcher(site, cfg),
                                rng=random.Random(0), dns=site.dns(cfg, loop.time))  # fmt: skip
                refused = engine.add_seeds(urls)
                store.flush()
            finally:
                store.close()
        return refused

    assert virtualtime.run(main()) == []
    with Store(db) as store:
        rows = sum(1 for _ in store.load_frontier())
    return costs, rows


def test_seeding_costs_per_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    costs, rows = seeding_costs(tmp_path, monkeypatch)
    assert rows == HOSTS * PER_HOST
    calls = costs.per_page(costs.calls)
    statements = costs.per_page(costs.statements)
    print(f"calls={calls:.2f} statements={statements:.3f} per seed")
    # 1.01-1.02 at 4d5703f and now: one executemany of every seed's frontier row (one
    # statement a row), the store's schema and the run's opening a few more
    assert statements <= 1.05, statements
    # 40.8 at 4d5703f: each seed's host key computed five times (link, scope, trust,
    # guard, origin) and its origin again for every URL of a host not fetched yet;
    # 36.4 now (the link's host key reused, the origin on a host's first URL only)
    assert calls <= 37.5, calls
