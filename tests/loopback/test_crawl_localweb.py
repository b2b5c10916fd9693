"""End to end: the engine crawls the local multi-host web into SQLite.

One crawl (module fixture) over real HTTP servers on loopback; the assertions read
the SQLite file and the servers' own access logs.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import CrawlResult, Engine
from crawldeck.core.storage.store import Store
from crawldeck.localweb import LocalWeb
from crawldeck.localweb.sites import MovedSite

CRAWL_DELAY_S = 0.2  # www's Crawl-delay at delay_scale 0.2 (1.0 s x 0.2)


@dataclass
class Crawl:
    web: LocalWeb
    db: sqlite3.Connection
    result: CrawlResult
    engine: Engine

    def pages(self) -> dict[str, tuple[int | None, str | None]]:
        rows = self.db.execute("SELECT url, status, error FROM pages")
        return {url: (status, error) for url, status, error in rows}

    def blocked(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT url, reason FROM blocked"))


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawl]:
    path = tmp_path_factory.mktemp("crawl") / "crawl.db"
    with LocalWeb(delay_scale=0.2, busy_429_count=3, retry_after_s=1) as web:
        config = build_config(
            {
                "delay_ms": 20,
                # off: at 2 x a fetch's time the adaptive part passes www's 0.2 s
                # Crawl-delay on a loaded machine (a CI run's delay_source: adaptive)
                "adaptive_delay_factor": 0,
                "backoff_base_ms": 100,
                "concurrency": 8,
                "flush_interval_ms": 50,
                "allow_networks": ["127.77.0.0/24"],
                # spa's /app/never never settles: its render is cut at this budget
                "render_timeout_ms": 3000,
            }
        )
        store = Store(path, flush_interval_ms=config.flush_interval_ms)
        engine = Engine(config, store)
        assert engine.add_seeds(web.seeds()) == []
        result = asyncio.run(asyncio.wait_for(engine.run(), timeout=120))
        store.close()
        db = sqlite3.connect(path)
        try:
            yield Crawl(web, db, result, engine)
        finally:
            db.close()


def test_finishes_with_every_good_page_and_file(crawl: Crawl) -> None:
    assert crawl.result.outcome == "finished"
    pages = crawl.pages()
    fetched = {crawl.web.expected.canonical(url) for url, (status, _) in pages.items()
               if status == 200}  # fmt: skip
    missing = (crawl.web.expected.all_good | crawl.web.expected.all_files) - fetched
    assert missing == set()
    assert crawl.result.counters.queued == 0
    assert crawl.web.errors() == []


def test_robots_disallowed_urls_are_blocked_never_fetched(crawl: Crawl) -> None:
    pages = crawl.pages()
    blocked = crawl.blocked()
    disallowed = crawl.web.expected.all_disallowed
    assert disallowed and not disallowed & pages.keys()
    requested = {
        crawl.web.url(name, a.path) for name in crawl.web.hosts for a in crawl.web.access_log(name)
    }
    assert not disallowed & requested
    linked = {to for (to,) in crawl.db.execute("SELECT DISTINCT to_url FROM links")}
    found = disallowed & linked
    assert found, "the crawl found none of the disallowed links"
    assert {url: blocked.get(url) for url in found} == dict.fromkeys(found, "robots")
    # robots.txt groups: the crawldeck group allows /search, the * group does not
    other = crawl.web.expected.disallowed_other_agents["www"]
    assert other and other <= pages.keys()


def test_nofollow_noindex_and_base_href(crawl: Crawl) -> None:
    requested = {
        crawl.web.url(name, a.path) for name in crawl.web.hosts for a in crawl.web.access_log(name)
    }
    assert not crawl.web.expected.nofollow & requested
    assert not crawl.web.expected.wrong_base & requested
    noindex = dict(crawl.db.execute("SELECT url, noindex FROM pages WHERE noindex = 1"))
    assert set(noindex) == set(crawl.web.expected.noindex)


def test_every_trap_is_cut_with_its_reason(crawl: Crawl) -> None:
    traps_host = crawl.web.host_keys["traps"]
    reasons = Counter(
        reason
        for (reason,) in crawl.db.execute(
            "SELECT reason FROM blocked WHERE host = ?", (traps_host,)
        )
    )
    wanted = {r for r in crawl.web.expected.trap_reasons.values() if r is not None}
    assert wanted == {
        "calendar",
        "repeating_path",
        "redirect_loop",
        "too_many_redirects",
        "pagination",
        "url_length",
    }
    assert wanted <= reasons.keys()
    assert crawl.web.expected.long_url in crawl.blocked()
    # the session-id trap collapses: each shop page fetched once whatever its sid
    shop = [
        crawl.web.expected.canonical(url)
        for (url,) in crawl.db.execute("SELECT url FROM pages WHERE url LIKE '%/shop/%'")
    ]
    assert len(shop) == len(set(shop)) == 8
    # nothing of the traps host was cut by the depth limit: each trap hit its own guard
    assert reasons["depth"] == 0
    assert crawl.result.counters.pages < 250


def test_redirect_loop_and_chain(crawl: Crawl) -> None:
    blocked = crawl.blocked()
    loop_a = crawl.web.expected.traps["redirect_loop"]
    assert blocked[loop_a] == "redirect_loop"
    detail = crawl.db.execute("SELECT detail FROM blocked WHERE url = ?", (loop_a,)).fetchone()
    assert detail is not None and detail[0].startswith("loop after 2 hops: back to hop 1")
    chain = crawl.db.execute(
        "SELECT url FROM pages WHERE url LIKE '%/chain/%' ORDER BY fetched_at"
    ).fetchall()
    assert len(chain) == 21  # the entry and 20 hops; the 21st hop is refused
    assert crawl.db.execute(
        "SELECT count(*) FROM blocked WHERE reason = 'too_many_redirects'"
    ).fetchone() == (1,)
    # a chain that ended without a page leaves its hops failed, with the reason
    states = crawl.db.execute(
        "SELECT DISTINCT f.state, substr(p.error, 1, instr(p.error, ':') - 1) FROM frontier f"
        " JOIN pages p ON p.url = f.url WHERE f.url LIKE '%/chain/%' OR f.url LIKE '%/loop/%'"
    ).fetchall()
    assert sorted(states) == [("failed", "redirect_loop"), ("failed", "too_many_redirects")]


def test_429_host_backs_off_then_is_fetched(crawl: Crawl) -> None:
    log = [a for a in crawl.web.access_log("busy") if a.path != "/robots.txt"]
    statuses = [a.status for a in log]
    assert statuses[:3] == [429, 429, 429]  # its pages' and its /sitemap.xml's (a 404)
    assert {a.status for a in log[3:] if a.path != "/sitemap.xml"} == {200}
    assert [a.path for a in log].count("/sitemap.xml") == 1
    gaps = [b.at - a.at for a, b in itertools.pairwise(log[:4])]
    # Retry-After: 1 s honoured each time (backoff base 100 ms is shorter)
    assert all(gap >= 0.98 for gap in gaps), gaps
    good = crawl.web.expected.good["busy"]
    pages = crawl.pages()
    assert all(pages[url][0] == 200 for url in good)


def test_crawl_delay_held_from_server_access_times(crawl: Crawl) -> None:
    times = sorted(a.at for a in crawl.web.access_log("www"))
    assert len(times) > 30
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= CRAWL_DELAY_S - 0.02, min(gaps)
    # the other hosts use the 20 ms default delay: much closer spacing there
    norobots = sorted(a.at for a in crawl.web.access_log("norobots"))
    assert min(b - a for a, b in itertools.pairwise(norobots)) < CRAWL_DELAY_S


def test_robots_statuses_recorded_per_host(crawl: Crawl) -> None:
    hosts = dict(crawl.db.execute("SELECT host, robots_status FROM hosts"))
    keys = crawl.web.host_keys
    assert hosts[keys["www"]] == "ok"
    assert hosts[keys["norobots"]] == "missing"
    assert hosts[keys["flaky"]] == "unreachable"
    assert hosts[keys["moved"]] == "ok"


def test_each_url_fetched_once(crawl: Crawl) -> None:
    for name in crawl.web.hosts:
        paths = Counter(a.path for a in crawl.web.access_log(name) if a.status != 429)
        assert [p for p, n in paths.items() if n > 1] == [], name
    rows = crawl.db.execute("SELECT count(*), count(DISTINCT url) FROM pages").fetchone()
    assert rows[0] == rows[1] == crawl.result.counters.pages


def test_store_counts_match_engine(crawl: Crawl, tmp_path: Path) -> None:
    (pages,) = crawl.db.execute("SELECT count(*) FROM pages").fetchone()
    assert pages == crawl.result.counters.pages
    by_reason = dict(crawl.db.execute("SELECT reason, count(*) FROM blocked GROUP BY reason"))
    assert by_reason == crawl.result.counters.blocked
    (run_status,) = crawl.db.execute("SELECT status FROM runs").fetchone()
    assert run_status == "finished"


def test_host_detail_and_query(crawl: Crawl) -> None:
    www = crawl.web.host_keys["www"]
    detail = crawl.engine.host_detail(www)
    assert detail is not None
    assert ("disallow", "/drafts/") in detail.robots_rules
    assert detail.crawl_delay_s == pytest.approx(CRAWL_DELAY_S)
    assert (detail.row.robots_status, detail.robots_http) == ("ok", 200)
    assert detail.queue_head == ()
    assert len(detail.responses) == 10
    assert all(r.url.startswith(crawl.web.hosts["www"]) for r in detail.responses)
    assert detail.row.fetched == len(
        [u for u in crawl.pages() if u.startswith(crawl.web.hosts["www"] + "/")]
    )
    assert detail.row.delay_source == "crawl_delay"
    assert crawl.engine.host_detail("nowhere.example") is None
    rows = crawl.engine.query_hosts(crawl.web.host_keys["traps"])
    assert [r.host for r in rows] == [crawl.web.host_keys["traps"]]
    assert len(crawl.engine.query_hosts("127.77.0.")) == len(crawl.web.hosts)
    snap = crawl.engine.snapshot()
    assert snap.state == "finished" and snap.hosts == () and snap.backoff == ()


def test_duplicates_and_near_duplicates_are_those_of_the_local_web(crawl: Crawl) -> None:
    """Exact duplicates by payload digest, near ones by SimHash within 3 bits (an exact
    one is near too); a rendered page by its rendered text: the ``spa`` host's shells
    are alike until their scripts run, their rendered pages are not."""

    def pairs(column: str) -> set[frozenset[str]]:
        sql = f"SELECT url, {column} FROM pages WHERE {column} IS NOT NULL"
        return {frozenset(row) for row in crawl.db.execute(sql)}

    def expected(*groups: tuple[tuple[str, str], ...]) -> set[frozenset[str]]:
        url = crawl.web.url
        return {frozenset((url("moved", a), url("moved", b))) for g in groups for a, b in g}

    assert pairs("duplicate_of") == expected(MovedSite.DUPLICATES)
    assert pairs("near_duplicate_of") == expected(MovedSite.DUPLICATES, MovedSite.NEAR_DUPLICATES)
