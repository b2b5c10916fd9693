"""The engine resolves through the DNS cache: real names (dnsmasq), per-IP politeness,
the private-address guard and NXDOMAIN, measured on a real server's access times."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dnsserver import DNSMASQ, DnsmasqServer, StubDnsServer

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.storage.store import Store
from crawldeck.localweb import LocalWeb
from crawldeck.localweb.server import HostServer, Request, Response
from crawldeck.localweb.web import HOST_NAMES

SERVER_IP = "127.79.0.1"
EVIL_IP = "127.79.0.9"  # outside allow_networks and not a seed: refused
IP_DELAY_S = 0.2


class Site:
    """One HTTP server answered under several names; records (time, Host, path)."""

    def __init__(self, port: int = 0) -> None:
        self.hits: list[tuple[float, str, str]] = []
        self._lock = threading.Lock()
        self.server = HostServer(SERVER_IP, port, self.handle, name="dns-site")

    def handle(self, request: Request) -> Response:
        with self._lock:
            self.hits.append((time.time(), request.headers.get("host", ""), request.path))
        if request.path == "/robots.txt":
            return Response.text("User-agent: *\nAllow: /\n")
        port = self.server.port
        links = "".join(f'<a href="/p{i}">p{i}</a>' for i in range(6))
        links += (
            f'<a href="http://evil.crawl.test:{port}/">evil</a>'
            f'<a href="http://nx.crawl.test:{port}/">nx</a>'
        )
        return Response.html(f"<!doctype html><title>{request.path}</title>{links}")


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Site, Path, Engine]]:
    if DNSMASQ is None:
        pytest.fail("dnsmasq is missing: apt-get install dnsmasq-base (.ci/run does)")
    directory = tmp_path_factory.mktemp("dnscrawl")
    records = {
        "www.crawl.test": [SERVER_IP],
        "alias.crawl.test": [SERVER_IP],
        "evil.crawl.test": [EVIL_IP],
    }
    site = Site()
    site.server.start()
    try:
        with DnsmasqServer(directory, records, ttl_s=60) as dns:
            port = site.server.port
            config = build_config(
                {
                    "dns_nameservers": [dns.nameserver],
                    "delay_ms": 10,
                    "ip_delay_ms": int(IP_DELAY_S * 1000),
                    "allow_networks": ["127.79.0.0/29"],
                    "scope": "any",
                    "flush_interval_ms": 50,
                }
            )
            store = Store(directory / "c.db", flush_interval_ms=50)
            engine = Engine(config, store)
            seeds = [f"http://www.crawl.test:{port}/", f"http://alias.crawl.test:{port}/"]
            assert engine.add_seeds(seeds) == []
            asyncio.run(asyncio.wait_for(engine.run(), timeout=60))
            store.close()
            yield site, directory / "c.db", engine
    finally:
        site.server.stop()


def test_two_names_on_one_address_share_the_per_ip_delay(
    crawled: tuple[Site, Path, Engine],
) -> None:
    site, _, _ = crawled
    names = {host.split(":")[0] for _, host, _ in site.hits}
    assert names == {"www.crawl.test", "alias.crawl.test"}  # Host header keeps the name
    times = sorted(at for at, _, _ in site.hits)
    # robots.txt, /sitemap.xml (read through the same host gate), home, p0..p5 under each name
    assert len(times) == 2 * (1 + 1 + 1 + 6)
    assert [path for _, _, path in site.hits].count("/sitemap.xml") == 2
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= IP_DELAY_S - 0.02, min(gaps)


def test_private_address_and_nxdomain_are_blocked(crawled: tuple[Site, Path, Engine]) -> None:
    _, db, _ = crawled
    conn = sqlite3.connect(db)
    try:
        blocked = dict(conn.execute("SELECT host, reason FROM blocked"))
        port = next(iter(blocked)).split(":")[1]
        assert blocked == {f"evil.crawl.test:{port}": "private_address",
                           f"nx.crawl.test:{port}": "dns"}  # fmt: skip
        hosts = dict(conn.execute("SELECT host, ip FROM hosts WHERE ip IS NOT NULL"))
        assert hosts == {f"www.crawl.test:{port}": SERVER_IP,
                         f"alias.crawl.test:{port}": SERVER_IP,
                         f"evil.crawl.test:{port}": EVIL_IP}  # fmt: skip
        states = dict(conn.execute("SELECT host, state FROM hosts"))
        assert states[f"nx.crawl.test:{port}"] == "dead"
    finally:
        conn.close()


def test_every_fetch_resolved_through_the_cache(crawled: tuple[Site, Path, Engine]) -> None:
    site, _, engine = crawled
    counters = engine.snapshot().counters
    assert counters.pages == 14
    # one lookup per fetch, the engine's (a new connection takes the engine's choice)
    assert counters.dns_lookups >= len(site.hits)
    # each name asked of the server once per record type (A, AAAA); evil and nx too
    assert counters.dns_queries <= 8
    assert counters.dns_hit_ratio >= 0.75  # 4 names missed once in about 20 lookups


def test_servfail_is_retried_with_backoff_then_the_host_is_marked(tmp_path: Path) -> None:
    with StubDnsServer(2) as stub:  # SERVFAIL to every question
        config = build_config(
            {
                "dns_nameservers": [stub.nameserver],
                "dns_retries": 0,
                "max_retries": 2,
                "backoff_base_ms": 50,
                "flush_interval_ms": 50,
            }
        )
        store = Store(tmp_path / "c.db", flush_interval_ms=50)
        engine = Engine(config, store)
        assert engine.add_seeds(["http://down.crawl.test:8080/"]) == []
        started = time.monotonic()
        result = asyncio.run(asyncio.wait_for(engine.run(), timeout=60))
        took = time.monotonic() - started
        store.close()
    assert result.outcome == "finished"
    assert took >= 0.05 + 0.1  # two backoffs: 50 ms, then 100 ms (plus jitter)
    conn = sqlite3.connect(tmp_path / "c.db")
    try:
        pages = conn.execute("SELECT url, status, error FROM pages").fetchall()
        state = conn.execute("SELECT state FROM hosts").fetchall()
    finally:
        conn.close()
    assert len(pages) == 1 and pages[0][1] is None
    assert pages[0][2].startswith("dns_temporary")
    assert state == [("dns_failing",)]
    assert sum("host marked dns_failing" in line for line in engine.snapshot().log) == 1


def test_the_local_web_under_real_names_resolves_through_the_cache(tmp_path: Path) -> None:
    """Issue #4's "done when": every fetch of a crawl by name goes through the cache."""
    if DNSMASQ is None:
        pytest.fail("dnsmasq is missing: apt-get install dnsmasq-base (.ci/run does)")
    names = {name: f"{name}.localweb.test" for name in HOST_NAMES}
    records = {f"{name}.localweb.test": [f"127.77.0.{i}"] for i, name in enumerate(HOST_NAMES, 1)}
    with (
        DnsmasqServer(tmp_path, records, ttl_s=300, domain="localweb.test") as dns,
        LocalWeb(delay_scale=0.1, busy_429_count=1, names=names) as web,
    ):
        config = build_config(
            {
                "dns_nameservers": [dns.nameserver],
                "delay_ms": 10,
                "render": "never",
                "allow_networks": ["127.77.0.0/24"],
                "flush_interval_ms": 50,
            }
        )
        store = Store(tmp_path / "c.db", flush_interval_ms=50)
        engine = Engine(config, store)
        assert engine.add_seeds(web.seeds()) == []
        result = asyncio.run(asyncio.wait_for(engine.run(), timeout=120))
        store.close()
        queries = dns.queries()
    assert result.outcome == "finished"
    conn = sqlite3.connect(tmp_path / "c.db")
    try:
        fetched = {u for (u,) in conn.execute("SELECT url FROM pages WHERE status = 200")}
        ips = dict(conn.execute("SELECT host, ip FROM hosts"))
    finally:
        conn.close()
    good = web.expected.all_good - web.expected.rendered_only
    assert good - {web.expected.canonical(u) for u in fetched} == set()
    assert all(url.startswith("http://") and ".localweb.test:" in url for url in fetched)
    assert ips[web.host_keys["www"]] == "127.77.0.1"
    counters = engine.snapshot().counters
    # one A and one AAAA question per name at most, whatever the number of fetches
    assert counters.dns_queries <= 2 * len(HOST_NAMES) == 18
    assert queries <= 2 * len(HOST_NAMES)
    assert counters.dns_lookups > 10 * counters.dns_queries
    assert counters.dns_hit_ratio > 0.95
