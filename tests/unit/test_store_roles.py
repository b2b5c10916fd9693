"""The storage seams by role (issue #24 item 4): each store offers exactly the roles it
plays, and the engine runs over a store that plays none of the optional ones.

``core.protocols.CrawlStore`` is what every engine's store is (results, spilled URLs,
back-pressure, ``drain``, ``roles``); the optional roles (``StoreRoles``: run log, key
store, cash sink, score keeper, local history, WARC home) are asked once, when the
crawl is assembled. The SQLite ``Store`` plays them all but the WARC home; a cluster
worker's ``ClusterStore`` the cash sink under a cash ordering and a WARC home, and has
no stub of the others (no ``contains -> False``, no ``begin_run -> 0``, no thread
waiting for the loop). ``MemoryStore`` below is a ``CrawlStore`` in memory with no
optional role: the engine crawls a scripted site (``tests/fakesite.py``, virtual
time) over it, every URL fetched once (without a key store, every URL goes to the
store, which dedupes it, and comes back through its reads).
"""

from __future__ import annotations

import asyncio
import random
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import virtualtime
from fakesite import FakeFetcher, FakeSite, config, links_page

from crawldeck.core.cluster.keys import Keyspace
from crawldeck.core.cluster.leases import Leases
from crawldeck.core.cluster.link import RedisLink, open_client
from crawldeck.core.cluster.store import ClusterStore
from crawldeck.core.crawl.engine import CrawlResult, Engine
from crawldeck.core.protocols import CrawlStore, StoreRoles
from crawldeck.core.records import (
    BlockedRecord,
    FrontierRow,
    FrontierState,
    HostRecord,
    PageRecord,
    SitemapRecord,
    SitemapUrlRecord,
    status_class,
)
from crawldeck.core.storage.archive import WarcHome
from crawldeck.core.storage.store import Store

A = "http://127.0.0.1"
CORE = Path(__file__).resolve().parents[2] / "crawldeck" / "core"
#: What a store that does not play a role must not offer in its stead (the stubs and
#: the thread -> loop hop of the cluster store before issue #24 item 4).
STUBS = ("contains", "begin_run", "end_run", "flush", "load_spilled")


class MemoryStore:
    """A ``CrawlStore`` in memory that plays no optional role: it dedupes the frontier
    rows it is sent by key (as SQLite's ``INSERT OR IGNORE``) and hands a host's
    spilled rows back in the order they came.

    Attributes:
        pages: the ``pages`` rows by URL. states: frontier states by dedupe key.
        sent: the state each row came with, by dedupe key. reads: ``read_spilled``
        calls. drains: ``drain`` calls.
    """

    def __init__(self) -> None:
        self.pages: dict[str, PageRecord] = {}
        self.states: dict[str, str] = {}
        self.sent: dict[str, str] = {}
        self.reads = 0
        self.drains = 0
        self._keys: set[str] = set()
        self._spilled: dict[str, list[FrontierRow]] = defaultdict(list)
        self._blocked: dict[str, BlockedRecord] = {}
        self._pages_added: Counter[str] = Counter()
        self._blocked_added: Counter[str] = Counter()

    def _rows(self, rows: Sequence[FrontierRow]) -> None:
        for row in rows:
            if row.key in self._keys:
                continue
            self._keys.add(row.key)
            self.states[row.key] = self.sent[row.key] = row.state
            if row.state == "spilled":
                self._spilled[row.host].append(row)

    def enqueue_urls(self, rows: Sequence[FrontierRow]) -> None:
        self._rows(rows)

    def record_page(
        self,
        page: PageRecord,
        *,
        key: str,
        links: Sequence[tuple[str, str]],
        new_rows: Sequence[FrontierRow],
        state: Literal["done", "failed", "queued"],
        next_url: str | None = None,
        next_host: str | None = None,
        redirects: Sequence[str] = (),
        anchors: Mapping[str, str] | None = None,
    ) -> None:
        if page.url not in self.pages:
            self._pages_added["pages"] += 1
        self.pages[page.url] = page
        self._pages_added[status_class(page.status)] += 1
        self._pages_added["bytes"] += page.bytes
        self._rows(new_rows)
        self.states[key] = state

    def fail_urls(self, urls: Sequence[tuple[str, str]], error: str) -> None:
        for key, _ in urls:
            self.states[key] = "failed"

    def record_blocked(self, rec: BlockedRecord) -> None:
        if rec.url not in self._blocked:
            self._blocked[rec.url] = rec
            self._blocked_added[rec.reason] += 1

    def mark(
        self,
        key: str,
        state: FrontierState,
        *,
        attempts: int | None = None,
        available_at: float | None = None,
    ) -> None:
        if key in self.states:
            self.states[key] = state

    def upsert_host(self, rec: HostRecord) -> None:
        return None  # hosts' state is not kept: nothing reads it back

    def record_sitemap(self, rec: SitemapRecord, entries: Sequence[SitemapUrlRecord]) -> None:
        return None  # sitemaps are off in the engine tests' config

    def pages_added(self) -> dict[str, int]:
        return dict(self._pages_added)

    def blocked_added(self) -> dict[str, int]:
        return dict(self._blocked_added)

    async def room(self) -> bool:
        return False

    async def drain(self) -> None:
        self.drains += 1

    async def read_spilled(
        self, host: str, after: int, limit: int, *, within_s: float = 0.0
    ) -> tuple[list[FrontierRow], int]:
        self.reads += 1
        rows = self._spilled[host][after : after + limit]
        return rows, after + len(rows)

    def roles(self) -> StoreRoles:
        return StoreRoles()


def test_the_sqlite_store_plays_every_role_but_the_warc_home(tmp_path: Path) -> None:
    with Store(tmp_path / "c.db") as store:
        roles = store.roles()
        assert roles == StoreRoles(
            run_log=store, keys=store, cash=store, scores=store, history=store, warc_home=None
        )
        assert store.roles() is roles  # asked once or many times: the same answer


def cluster_store(*, cash_queues: int) -> ClusterStore:
    """A worker's store, not started (its roles need no Redis)."""
    link = RedisLink(open_client("redis://127.0.0.1:1/0"))
    return ClusterStore(
        Keyspace("roles"), link, "w0", Leases(10_000, clock=lambda: 0.0), clock=lambda: 0.0,
        hot_queue=100, cash_queues=cash_queues,
    )  # fmt: skip


def test_a_cluster_store_plays_the_cash_sink_and_the_warc_home_and_no_stub() -> None:
    async def check() -> None:
        plain = cluster_store(cash_queues=0)
        assert plain.roles() == StoreRoles()
        cash = cluster_store(cash_queues=4)
        home = WarcHome(Path("/w"), "crawl-1", "crawl")
        cash.warc_home = home
        assert cash.roles() == StoreRoles(cash=cash, warc_home=home)
        for store in (plain, cash):
            assert [name for name in STUBS if hasattr(store, name)] == []
            await store.aclose()
            await store._link.aclose()

    asyncio.run(check())


def test_no_core_module_asks_whether_the_store_is_sqlite() -> None:
    asks = re.compile(r"isinstance\([^)]*,\s*(Store|ClusterStore|CashSink)\)")
    found = [
        f"{path.relative_to(CORE)}:{n}"
        for path in sorted(CORE.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if asks.search(line)
    ]
    assert found == []


def test_the_engine_runs_over_a_store_without_the_optional_roles() -> None:
    site = FakeSite()
    pages = ["/", "/a", "/b", "/c"]
    for path in pages:  # every page links to every other: each URL is found 3 times
        site.add(A + path, links_page(*[p for p in pages if p != path]))
    store = MemoryStore()

    async def main() -> tuple[CrawlResult, Engine]:
        loop = asyncio.get_running_loop()
        cfg = config(frontier_window=10)
        crawl: CrawlStore = store
        engine = Engine(
            cfg, crawl, clock=loop.time, fetcher=FakeFetcher(site, cfg),
            rng=random.Random(0), dns=site.dns(cfg, loop.time),
        )  # fmt: skip
        engine.add_seeds([A + "/"])
        return await engine.run(), engine

    result, engine = virtualtime.run(main())
    assert result.outcome == "finished"
    fetched = [r.url for r in site.of(A) if not r.url.endswith("/robots.txt")]
    assert sorted(fetched) == sorted(A + p for p in pages)  # each once
    assert sorted(store.pages) == sorted(A + p for p in pages)
    assert set(store.states.values()) == {"done"}
    # every URL went to the store, which dedupes, and came back through its reads
    assert store.sent == {A + p: "spilled" for p in pages}
    assert store.reads >= len(pages)
    assert store.drains >= 1
    assert engine.stats is not None and engine.stats["run_id"] is None  # no run log
