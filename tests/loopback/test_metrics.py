"""Prometheus metrics (issue #14 item 8): ``--metrics-port`` serves this run's figures
while it lasts, each crawl from a registry of its own; a port in use is one line."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from clikit import CRAWLDECK, main_in
from crawlkit import html, rows
from dnsserver import free_port
from httpserver import HTTPTestServer
from prometheus_client.parser import text_string_to_metric_families

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.crawl.metrics import MetricsServer
from crawldeck.core.storage.store import Store
from loopback.test_run_stats import small_web

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int) -> Samples:
    """``/metrics`` of ``127.0.0.1:port``, parsed: (sample name, sorted labels) -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def crawl_serving(seed: str, db: Path, port: int) -> tuple[Samples, MetricsServer]:
    """Crawl ``seed`` into ``db`` with metrics on ``port``; the scrape at the run's end
    (its last snapshot published, the server still up) and the server, left open."""
    config = build_config(
        {"delay_ms": 0, "render": "never", "allow_private": True, "warc": False,
         "flush_interval_ms": 20}
    )  # fmt: skip
    server = MetricsServer(port, "127.0.0.1")
    server.start()
    with Store(db, flush_interval_ms=20) as store:
        engine = Engine(config, store)
        assert engine.add_seeds([seed]) == []
        server.watch(engine)
        asyncio.run(asyncio.wait_for(engine.run(), timeout=60))
    return scrape(port), server


def test_the_metrics_at_the_end_of_a_crawl_are_the_files(tmp_path: Path) -> None:
    with HTTPTestServer() as srv, HTTPTestServer() as other:
        small_web(srv)
        other.set("/", html('<a href="/nothing-here">gone</a>'))
        port_a, port_b = free_port(), free_port()
        first, server_a = crawl_serving(srv.url("/"), tmp_path / "a.db", port_a)
        try:  # a second crawl in this process, its registry its own
            second, server_b = crawl_serving(other.url("/"), tmp_path / "b.db", port_b)
            try:
                again = scrape(port_a)
            finally:
                server_b.close()
        finally:
            server_a.close()
    pages = rows(tmp_path / "a.db", "SELECT count(*) FROM pages")[0][0]
    assert pages == 20
    assert first[("crawldeck_pages_total", ())] == pages
    assert first[("crawldeck_responses_total", (("status", "200"),))] == 19
    assert first[("crawldeck_responses_total", (("status", "404"),))] == 1
    assert first[("crawldeck_blocked_total", (("reason", "robots"),))] == 1
    assert first[("crawldeck_robots_txt_fetched_total", ())] == 1
    body = rows(tmp_path / "a.db", "SELECT sum(bytes) FROM pages")[0][0]
    assert first[("crawldeck_response_body_bytes_total", ())] == body
    assert first[("crawldeck_fetch_duration_seconds_count", ())] == pages
    assert first[("crawldeck_fetch_duration_seconds_bucket", (("le", "+Inf"),))] == pages
    assert first[("crawldeck_frontier_urls", (("where", "memory"),))] == 0
    assert first[("crawldeck_frontier_urls", (("where", "spilled"),))] == 0
    assert first[("crawldeck_fetches_in_flight", ())] == 0
    assert first[("crawldeck_hosts_in_backoff", ())] == 0
    assert second[("crawldeck_pages_total", ())] == 2  # an index and a 404
    assert second[("crawldeck_responses_total", (("status", "404"),))] == 1
    assert ("crawldeck_blocked_total", (("reason", "robots"),)) not in second
    assert again == first  # the first crawl's server: its own figures still


def test_a_headless_crawl_serves_metrics_while_it_runs_and_stops_them(tmp_path: Path) -> None:
    port = free_port()
    with HTTPTestServer() as srv:
        small_web(srv, slow_s=2.5)  # over REFRESH_S: the metrics are refreshed meanwhile
        proc = subprocess.Popen(
            [CRAWLDECK, "crawl", srv.url("/"), "--no-ui", "--metrics-port", str(port),
             "-s", "delay_ms=0", "-s", "allow_private=true", "-s", "warc=false",
             "-s", "snapshot_interval_ms=50"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while srv.count("/slow") == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
            seen: Samples = {}
            while time.monotonic() < deadline:  # /slow is in flight: 20 pages recorded
                seen = scrape(port)
                if seen[("crawldeck_pages_total", ())] == 20:
                    break
                time.sleep(0.05)
            _, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 0, err
    assert seen[("crawldeck_pages_total", ())] == 20
    assert seen[("crawldeck_responses_total", (("status", "404"),))] == 1
    assert seen[("crawldeck_fetches_in_flight", ())] == 1  # /slow
    assert rows(tmp_path / "crawl.db", "SELECT count(*) FROM pages")[0][0] == 21
    with pytest.raises(urllib.error.URLError):  # the run ended: so did its server
        scrape(port)


def test_a_port_in_use_is_one_line_before_the_crawl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with HTTPTestServer() as srv, socket.socket() as taken:
        small_web(srv)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = main_in(
            tmp_path, monkeypatch, capsys, "crawl", srv.url("/"), "--no-ui",
            "--metrics-port", str(port), "-s", "allow_private=true",
        )  # fmt: skip
        assert srv.count() == 0
    assert (code, out) == (2, "")
    assert err == (
        f"crawldeck crawl: error: --metrics-port {port}: cannot listen on 127.0.0.1:{port} "
        "(Address already in use)\n"
    )
    assert list(tmp_path.iterdir()) == []  # refused before the crawl file is made
