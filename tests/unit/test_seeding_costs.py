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
import sys
from pathlib import Path
from types import FrameType

import pytest
import virtualtime
from fakesite import FakeFetcher, FakeSite, config, html, text

from crawldeck.core.crawl.engine import Engine
from crawldeck.core.storage.store import Store
from unit.test_costs import CORE, Costs, _counting

HOSTS = 1_000
PER_HOST = 5


def seed_urls(hosts: int, per_host: int) -> list[str]:
    """``per_host`` URLs on each of ``hosts`` hosts: the root, then ``/p/0.html`` ..."""
    paths = ["/", *(f"/p/{i}.html" for i in range(per_host - 1))]
    return [f"http://h{h}.seed.test:8790{path}" for h in range(hosts) for path in paths]


def seeding_costs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    cleaned: bool = False,
    hosts: int = HOSTS,
) -> tuple[Costs, list[tuple[str, str, int]]]:
    """Seed ``hosts x PER_HOST`` URLs into a new crawl file (``cleaned``: as the CLI
    does, its URLs cleaned already); what it cost (``pages``: the seeds) and the
    frontier rows written (key, host, depth)."""
    site = FakeSite()
    urls = seed_urls(hosts, PER_HOST)
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
                refused = (
                    engine.add_seeds(urls, cleaned=True) if cleaned else engine.add_seeds(urls)
                )
                store.flush()
            finally:
                store.close()
        return refused

    assert virtualtime.run(main()) == []
    with Store(db) as store:
        rows = [(row.key, row.host, row.depth) for row in store.load_frontier()]
    return costs, rows


def test_seeding_costs_per_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    costs, rows = seeding_costs(tmp_path, monkeypatch)
    assert len(rows) == HOSTS * PER_HOST
    assert rows[:2] == [
        ("http://h0.seed.test:8790/", "h0.seed.test:8790", 0),
        ("http://h0.seed.test:8790/p/0.html", "h0.seed.test:8790", 0),
    ]
    calls = costs.per_page(costs.calls)
    statements = costs.per_page(costs.statements)
    print(f"calls={calls:.2f} statements={statements:.3f} per seed")
    # 1.01-1.02 at 4d5703f: one executemany of every seed's frontier row (one
    # statement a row), the store's schema and the run's opening a few more. 0.042
    # since frontier rows go ``store.ops.ROWS_PER_INSERT`` (32) to an INSERT (issue #23):
    # 1/32 a seed, and the schema's and the run's statements
    assert statements <= 0.05, statements
    # 40.8 at 4d5703f: each seed's host key computed five times (link, scope, trust,
    # guard, origin) and its origin again for every URL of a host not fetched yet;
    # 36.4 now (the link's host key reused, the origin on a host's first URL only)
    assert calls <= 37.5, calls


def test_a_seeds_file_is_not_cleaned_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("warm", "raw", "cleaned"):
        (tmp_path / name).mkdir()
    # a first run, not counted, warms the process's caches (imports, the Public Suffix
    # List's rules, registered_domain's): run alone, the raw run paid them (8 462 calls
    # more, not 5 000 to 5 000 + HOSTS), after another test it did not. A fifth of
    # HOSTS is enough to tell one call a seed from two (and the three runs cost a fifth)
    hosts = HOSTS // 5
    seeding_costs(tmp_path / "warm", monkeypatch, hosts=hosts)
    raw, raw_rows = seeding_costs(tmp_path / "raw", monkeypatch, hosts=hosts)
    cleaned, rows = seeding_costs(tmp_path / "cleaned", monkeypatch, cleaned=True, hosts=hosts)
    assert rows == raw_rows
    skipped = raw.calls - cleaned.calls
    print(f"{skipped} calls fewer for {raw.pages} seeds cleaned already")
    # urls.clean is one call into core a seed (its work is in ada and urllib) and the
    # only one skipped: 1 000 here; registered_domain's cache may add a call a host
    assert raw.pages <= skipped <= raw.pages + hosts, skipped


def dispatch_calls(db: Path, hosts: int, pages: int) -> int:
    """Python calls into ``crawldeck.core`` on the loop's thread while ``Engine.run``
    crawls ``pages`` pages (``max_pages``) into ``db`` of a web of ``hosts`` hosts, each serving a
    robots.txt and a root page without links, every root a seed (so each page costs
    a robots.txt fetch and a page fetch). The store's writer thread is not counted: its
    batching follows the machine's timing."""
    site = FakeSite()
    roots = []
    for h in range(hosts):
        origin = f"http://127.1.{h // 250}.{h % 250 + 1}:8790"
        site.add(origin + "/robots.txt", text("User-agent: *\nDisallow: /private/\n"))
        site.add(origin + "/", html("<p>a page without links</p>"))
        roots.append(origin + "/")
    calls = 0

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        nonlocal calls
        if event == "call" and frame.f_code.co_filename.startswith(CORE):
            calls += 1

    async def main() -> None:
        loop = asyncio.get_running_loop()
        cfg = config(max_pages=pages)
        with Store(db, clock=loop.time) as store:
            engine = Engine(cfg, store, clock=loop.time, fetcher=FakeFetcher(site, cfg),
                            rng=random.Random(0), dns=site.dns(cfg, loop.time))  # fmt: skip
            assert engine.add_seeds(roots) == []
            sys.setprofile(profile)
            try:
                await engine.run()
            finally:
                sys.setprofile(None)

    virtualtime.run(main())
    assert len(site.targets()) == pages, site.targets()
    return calls


def test_the_work_of_a_dispatch_does_not_grow_with_the_hosts(tmp_path: Path) -> None:
    # the calls of 15 more pages (and their robots.txt), with n and 20n hosts queued:
    # what grows with the hosts (a host row each at the run's end) cancels out
    small = dispatch_calls(tmp_path / "a.db", 50, 30) - dispatch_calls(tmp_path / "b.db", 50, 15)
    large = dispatch_calls(tmp_path / "c.db", 1_000, 30) - dispatch_calls(
        tmp_path / "d.db", 1_000, 15
    )
    print(f"calls for 15 pages: {small} with 50 hosts, {large} with 1 000")
    # 1.1 at 4d5703f and now; a dispatch that looked at every queued host (a scan of
    # the hosts, a heap rebuilt) would make it about 20
    assert large <= 1.5 * small, (small, large)
