"""A positive answer wins (issue #10, item 12), end to end against dnsmasq.

dnsmasq serves ``v4only.crawl.test`` with ``--address=/v4only.crawl.test/127.81.0.1``:
A answers the address and AAAA answers NXDOMAIN (RFC 4074 §4.2's misbehaviour; the
crawl's own resolver path is probed first, so the test cannot pass vacuously).
``refused.other.test`` answers A and REFUSES AAAA (outside dnsmasq's local domain, no
upstream). Both are seeds of a crawl (``Engine`` + ``Store``) of a real HTTP server on
127.81.0.1; each home page links to ``gone.crawl.test``, which answers NXDOMAIN to both
and must still be marked dead. Before the fix the NXDOMAIN to AAAA marked
``v4only.crawl.test`` dead and none of its pages was fetched.

Two resolver paths:

1. ``dns_nameservers = ["127.0.0.1:PORT"]``, dnsmasq on a free high port;
2. the system path (``dns_nameservers = []``: c-ares reads ``/etc/resolv.conf``) in a
   network namespace made for the test: ``ip netns exec`` bind-mounts
   ``/etc/netns/NAME/resolv.conf`` (``nameserver 127.0.0.1``) over ``/etc/resolv.conf``,
   and this file runs there as a script (``--child DIR``) with dnsmasq on
   127.0.0.1:53, the HTTP server and the crawl, printing the result as JSON.

Run as a script: ``python -P tests/loopback/test_crawl_dns_one_family.py --child DIR`` crawls
through ``/etc/resolv.conf`` with dnsmasq on port 53 and prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import NotRequired, TypedDict

import pytest
from dnsserver import DNSMASQ, DnsmasqServer

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.errors import DnsTemporaryFailure
from crawldeck.core.net.dns import AiodnsResolver, RecordType
from crawldeck.core.storage.store import Store
from crawldeck.localweb.server import HostServer, Request, Response

SITE_IP = "127.81.0.1"
V4_ONLY = "v4only.crawl.test"  # A: SITE_IP, AAAA: NXDOMAIN
REFUSED = "refused.other.test"  # A: SITE_IP, AAAA: REFUSED
GONE = "gone.crawl.test"  # NXDOMAIN to both: dead
PAGES = ("/", "/p0", "/p1")
#: Bounds (s): the crawl itself, and the whole child process in the namespace.
CRAWL_TIMEOUT_S = 20.0
CHILD_TIMEOUT_S = 40.0
IP = shutil.which("ip")


class CrawlReport(TypedDict):
    """What ``crawl`` saw (JSON, as the child in a network namespace prints it)."""

    probe: dict[str, dict[str, str]]  # name -> record type -> "status addresses"
    outcome: str
    pages: list[list[str | int]]  # [url, status]
    hosts: dict[str, list[str | None]]  # host -> [state, ip]
    blocked: dict[str, str]  # host -> reason
    hits: list[list[str]]  # [host, path]
    queries: dict[str, int]  # name -> questions dnsmasq logged
    resolv_conf: NotRequired[str]  # the child's /etc/resolv.conf


class Site:
    """The HTTP server on ``SITE_IP`` for every name; records (Host, path) of requests."""

    def __init__(self) -> None:
        self.hits: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self.server = HostServer(SITE_IP, 0, self.handle, name="one-family-site")

    def handle(self, request: Request) -> Response:
        with self._lock:
            self.hits.append((request.headers.get("host", "").split(":")[0], request.path))
        if request.path == "/robots.txt":
            return Response.text("User-agent: *\nAllow: /\n")
        links = "".join(f'<a href="{path}">{path}</a>' for path in PAGES)
        links += f'<a href="http://{GONE}:{self.server.port}/">gone</a>'
        return Response.html(f"<!doctype html><title>{request.path}</title>{links}")


async def probe(nameservers: list[str]) -> dict[str, dict[str, str]]:
    """What the crawl's resolver path answers for each name: ``"ok 127.81.0.1"``,
    ``"nodata"``, ``"nxdomain"`` or ``"temporary"`` per record type."""
    resolver = AiodnsResolver(nameservers, 2.0)
    rtypes: tuple[RecordType, ...] = ("A", "AAAA")
    seen: dict[str, dict[str, str]] = {}
    try:
        for name in (V4_ONLY, REFUSED, GONE):
            seen[name] = {}
            for rtype in rtypes:
                try:
                    answer = await resolver.query(name, rtype)
                except DnsTemporaryFailure:
                    seen[name][rtype] = "temporary"
                    continue
                seen[name][rtype] = " ".join((answer.status, *answer.addresses))
    finally:
        await resolver.close()
    return seen


def crawl(directory: Path, *, dns_port: int, system_resolver: bool) -> CrawlReport:
    """Start dnsmasq and the site, crawl both seeds; return what happened.

    Args:
        directory: for dnsmasq's files and the crawl's SQLite file.
        dns_port: dnsmasq's port on 127.0.0.1 (0: a free high port).
        system_resolver: resolve through ``/etc/resolv.conf`` (``dns_nameservers``
            empty) instead of naming dnsmasq in ``dns_nameservers``.

    Returns:
        a ``CrawlReport`` (without ``resolv_conf``).
    """
    site = Site()
    site.server.start()
    try:
        with DnsmasqServer(
            directory, addresses={V4_ONLY: SITE_IP, REFUSED: SITE_IP}, port=dns_port
        ) as dns:
            nameservers = [] if system_resolver else [dns.nameserver]
            seen = asyncio.run(probe(nameservers))
            config = build_config(
                {
                    "dns_nameservers": nameservers,
                    "dns_timeout_ms": 1000,
                    "dns_retries": 0,
                    "delay_ms": 10,
                    "scope": "any",
                    "render": "never",
                    "flush_interval_ms": 50,
                    "sitemaps": False,  # check() counts each name's requests
                }
            )
            store = Store(directory / "c.db", flush_interval_ms=50)
            engine = Engine(config, store)
            port = site.server.port
            assert (
                engine.add_seeds([f"http://{V4_ONLY}:{port}/", f"http://{REFUSED}:{port}/"]) == []
            )
            result = asyncio.run(asyncio.wait_for(engine.run(), timeout=CRAWL_TIMEOUT_S))
            store.close()
            queries = {name: dns.queries(name) for name in (V4_ONLY, REFUSED, GONE)}
    finally:
        site.server.stop()
    conn = sqlite3.connect(directory / "c.db")
    try:
        pages = [list(row) for row in conn.execute("SELECT url, status FROM pages ORDER BY url")]
        hosts = {h: [s, ip] for h, s, ip in conn.execute("SELECT host, state, ip FROM hosts")}
        blocked = dict(conn.execute("SELECT host, reason FROM blocked"))
    finally:
        conn.close()
    return {
        "probe": seen,
        "outcome": result.outcome,
        "pages": pages,
        "hosts": hosts,
        "blocked": blocked,
        "hits": sorted([list(hit) for hit in site.hits]),
        "queries": queries,
    }


def check(result: CrawlReport) -> None:
    """Both seeds were crawled whole; only the name that both families deny is dead."""
    assert result["probe"] == {
        V4_ONLY: {"A": f"ok {SITE_IP}", "AAAA": "nxdomain"},
        REFUSED: {"A": f"ok {SITE_IP}", "AAAA": "temporary"},
        GONE: {"A": "nxdomain", "AAAA": "nxdomain"},
    }
    assert result["outcome"] == "finished"
    port = next(iter(result["hosts"])).split(":")[1]
    expected = sorted(
        [f"http://{name}:{port}{path}", 200] for name in (V4_ONLY, REFUSED) for path in PAGES
    )
    assert result["hosts"][f"{V4_ONLY}:{port}"] == ["done", SITE_IP]
    assert result["hosts"][f"{REFUSED}:{port}"] == ["done", SITE_IP]
    assert result["hosts"][f"{GONE}:{port}"] == ["dead", None]
    assert result["pages"] == expected
    assert result["blocked"] == {f"{GONE}:{port}": "dns"}
    for name in (V4_ONLY, REFUSED):
        assert sorted(path for host, path in result["hits"] if host == name) == sorted(
            ["/robots.txt", *PAGES]
        )
    # the answers came from this dnsmasq (the probe and the crawl each asked A and AAAA)
    assert all(result["queries"][name] >= 4 for name in (V4_ONLY, REFUSED, GONE))


def need_dnsmasq() -> None:
    if DNSMASQ is None:
        pytest.fail("dnsmasq is missing: apt-get install dnsmasq-base (.ci/run does)")


def test_one_family_answering_is_enough_through_dns_nameservers(tmp_path: Path) -> None:
    need_dnsmasq()
    check(crawl(tmp_path, dns_port=0, system_resolver=False))


def run_ip(*args: str) -> None:
    """``ip ARGS``; raises ``CalledProcessError`` with its stderr on failure."""
    assert IP is not None
    subprocess.run([IP, *args], check=True, capture_output=True, timeout=10)


def test_one_family_answering_is_enough_through_etc_resolv_conf(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to make a network namespace (ip netns add)")
    if IP is None:
        pytest.skip("needs iproute2's ip to make a network namespace")
    need_dnsmasq()
    name = f"crawldeck-{uuid.uuid4().hex[:12]}"
    netns_etc = Path("/etc/netns") / name
    try:
        run_ip("netns", "add", name)
        run_ip("-n", name, "link", "set", "lo", "up")
        netns_etc.mkdir(parents=True)
        (netns_etc / "resolv.conf").write_text("nameserver 127.0.0.1\n", encoding="utf-8")
        # the child imports exactly what this test imports (-P: no script dir first)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        child = subprocess.run(
            [IP, "netns", "exec", name, sys.executable, "-P", __file__, "--child", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
            env=env,
        )
        assert child.returncode == 0, child.stderr[-3000:]
        result: CrawlReport = json.loads(child.stdout.strip().splitlines()[-1])
        assert result.pop("resolv_conf") == "nameserver 127.0.0.1\n"  # the namespace's
        check(result)
    finally:
        kill_namespace_processes(name)
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            run_ip("netns", "delete", name)
        shutil.rmtree(netns_etc, ignore_errors=True)


def kill_namespace_processes(name: str) -> None:
    """SIGKILL what is left in the test's own namespace (dnsmasq after a timeout)."""
    assert IP is not None
    with contextlib.suppress(subprocess.SubprocessError, OSError):
        listed = subprocess.run(
            [IP, "netns", "pids", name], capture_output=True, text=True, timeout=10
        )
        for pid in listed.stdout.split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)


def main() -> None:
    """The child inside the namespace: crawl through /etc/resolv.conf, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=Path, required=True, help="directory for the files")
    args = parser.parse_args()
    result = crawl(args.child, dns_port=53, system_resolver=True)
    result["resolv_conf"] = Path("/etc/resolv.conf").read_text(encoding="utf-8")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
