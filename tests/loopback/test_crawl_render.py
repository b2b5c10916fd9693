"""End to end: the engine renders the local web's JavaScript shells in Debian's Chromium.

Links that exist only in the rendered DOM are crawled; the browser's own requests go
through robots.txt and politeness (checked on the server's access log)."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import CrawlResult, Engine
from crawldeck.core.storage.store import Store
from crawldeck.localweb import LocalWeb


@dataclass
class Rendered:
    web: LocalWeb
    db: Path
    result: CrawlResult
    engine: Engine

    def rows(self, sql: str) -> list[tuple[object, ...]]:
        conn = sqlite3.connect(self.db)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()


def run_crawl(web: LocalWeb, db: Path, **extra: object) -> tuple[CrawlResult, Engine]:
    config = build_config(
        {
            "delay_ms": 20,
            "render_timeout_ms": 4000,
            "render_idle_ms": 300,
            "render_pool_size": 1,
            "allow_networks": ["127.77.0.0/24"],
            "flush_interval_ms": 50,
            **extra,
        }
    )
    store = Store(db, flush_interval_ms=50)
    engine = Engine(config, store)
    assert engine.add_seeds([web.hosts["spa"] + "/"]) == []
    result = asyncio.run(asyncio.wait_for(engine.run(), timeout=240))
    store.close()
    return result, engine


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rendered]:
    with LocalWeb(delay_scale=0.2) as web:
        db = tmp_path_factory.mktemp("render") / "c.db"
        result, engine = run_crawl(web, db)
        yield Rendered(web, db, result, engine)


def test_links_found_only_by_rendering_are_crawled(rendered: Rendered) -> None:
    assert rendered.result.outcome == "finished"
    exp = rendered.web.expected
    pages = {url for (url,) in rendered.rows("SELECT url FROM pages WHERE status = 200")}
    assert exp.rendered_only and exp.rendered_only <= pages
    assert exp.good["spa"] <= pages
    flagged = {url for (url,) in rendered.rows("SELECT url FROM pages WHERE rendered = 1")}
    linked = {url for kind, url in exp.shells.items() if kind != "spin"}  # spin: unlinked
    assert linked <= flagged
    assert not flagged & exp.rendered_only  # plain pages are not rendered


def test_the_browser_obeys_robots_and_fetches_no_media(rendered: Rendered) -> None:
    exp = rendered.web.expected
    spa = rendered.web.hosts["spa"]
    requested = {spa + a.path for a in rendered.web.access_log("spa")}
    assert exp.render_disallowed and not exp.render_disallowed & requested
    assert not exp.render_resources & requested
    assert not exp.render_unreachable & requested
    blocked = {str(url): str(why) for url, why in rendered.rows("SELECT url, reason FROM blocked")}
    assert {blocked.get(url) for url in exp.render_disallowed} == {"robots"}


def test_browser_requests_keep_the_hosts_politeness(rendered: Rendered) -> None:
    times = sorted(a.at for a in rendered.web.access_log("spa"))
    gaps = [b - a for a, b in itertools.pairwise(times)]
    crawl_delay = rendered.web.expected.crawl_delay_s
    assert min(gaps) >= crawl_delay - 0.02, (min(gaps), crawl_delay)


def test_render_stats_in_the_snapshot(rendered: Rendered) -> None:
    stats = rendered.engine.snapshot().render
    assert stats is not None
    assert stats.rendered >= len(rendered.web.expected.shells) - 1  # all but the unlinked one
    assert stats.busy == 0


def test_without_chromium_the_crawl_goes_on_and_says_so(tmp_path: Path) -> None:
    with LocalWeb(delay_scale=0.2) as web:
        result, engine = run_crawl(web, tmp_path / "c.db", render_browser_path="/nonexistent")
        assert result.outcome == "finished"
        log = engine.snapshot().log
        assert sum("rendering is off" in line for line in log) == 1
        assert engine.snapshot().render is None
        conn = sqlite3.connect(tmp_path / "c.db")
        try:
            pages = {u for (u,) in conn.execute("SELECT url FROM pages")}
        finally:
            conn.close()
        assert not pages & web.expected.rendered_only
        assert web.expected.good["spa"] <= pages
