"""Per-host overrides (issue #14 item 3): the tests that start a real server on loopback or
a process; the others are in ``tests/unit/test_host_overrides.py``."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.storage.store import Store
from crawldeck.localweb import LocalWeb

# --------------------------------------------------- one crawl of the local web

OVERRIDE_DELAY_S = 0.2
PAGE_CAP = 5


@dataclass
class Crawl:
    web: LocalWeb
    db: sqlite3.Connection
    engine: Engine
    host: str


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawl]:
    """``norobots`` crawled alone (scope host) at ``delay_ms`` 10, but its own table
    says 200 ms and 5 pages, and posts starting a-f are excluded."""
    path = tmp_path_factory.mktemp("overrides") / "crawl.db"
    with LocalWeb(delay_scale=0.1) as web:
        host = web.host_keys["norobots"]
        config = build_config(
            {
                "delay_ms": 10,
                # off: 2 x a loaded machine's fetch time can pass the 200 ms override
                "adaptive_delay_factor": 0,
                "scope": "host",
                "flush_interval_ms": 50,
                "warc": False,
                "allow_networks": ["127.77.0.0/24"],
                "exclude": ["/posts/[a-f]"],
                "hosts": {host: {"delay_ms": 200, "max_pages": PAGE_CAP}},
            }
        )
        store = Store(path, flush_interval_ms=config.flush_interval_ms)
        engine = Engine(config, store)
        assert engine.add_seeds([web.url("norobots")]) == []
        asyncio.run(asyncio.wait_for(engine.run(), timeout=60))
        store.close()
        db = sqlite3.connect(path)
        try:
            yield Crawl(web, db, engine, host)
        finally:
            db.close()


def test_every_request_to_the_host_waits_its_own_delay(crawl: Crawl) -> None:
    log = crawl.web.access_log("norobots")
    paths = [a.path for a in log]
    assert paths[0] == "/robots.txt"
    # the pages the cap let through, and the sitemap looked for once robots.txt was read
    assert paths.count("/sitemap.xml") == 1 and "/" in paths
    assert len([p for p in paths if p not in ("/robots.txt", "/sitemap.xml")]) == PAGE_CAP
    gaps = [b.at - a.at for a, b in itertools.pairwise(log)]
    # the request arrives after the end of the one before plus the delay: 10 ms without
    # the table (20 ms of slack for the clock, as test_crawl_localweb.py allows)
    assert min(gaps) >= OVERRIDE_DELAY_S - 0.02, gaps


def test_the_excluded_and_the_capped_urls_are_in_blocked(crawl: Crawl) -> None:
    blocked = dict(
        crawl.db.execute("SELECT url, reason FROM blocked WHERE host = ?", (crawl.host,))
    )
    base = crawl.web.url("norobots")
    assert {url for url, reason in blocked.items() if reason == "excluded"} == {
        f"{base}posts/first-curlew-of-autumn/",
        f"{base}posts/a-kingfisher-at-last/",
        f"{base}posts/counting-lapwings/",
    }
    capped = [url for url, reason in blocked.items() if reason == "host_cap"]
    assert capped and all(url.startswith(f"{base}posts/") for url in capped)
    pages = crawl.db.execute("SELECT count(*) FROM pages WHERE host = ?", (crawl.host,))
    assert pages.fetchone()[0] == PAGE_CAP
    detail = crawl.db.execute(
        "SELECT detail FROM blocked WHERE reason = 'excluded' LIMIT 1"
    ).fetchone()[0]
    assert detail == "matches exclude '/posts/[a-f]'"


def test_the_host_detail_of_the_crawl_names_the_overrides(crawl: Crawl) -> None:
    detail = crawl.engine.host_detail(crawl.host)
    assert detail is not None
    assert detail.overrides == (("delay_ms", "200"), ("max_pages", str(PAGE_CAP)))
    assert detail.row.delay_source == "override"
    www = crawl.engine.host_detail(crawl.web.host_keys["www"])
    assert www is None or www.overrides == ()
