"""Names in ``/etc/hosts`` resolve from it, with no DNS query (issue #25 trial 18).

A wget or curl user names a test server in ``/etc/hosts``; crawldeck asked the DNS
server of ``/etc/resolv.conf`` instead (off the machine) and marked the host dead.
Here ``crawldeck crawl`` runs in a private mount namespace (``unshare -m``) whose
``/etc/hosts`` is a file of the test's, bind-mounted, so the machine's is never
touched; its one DNS server is a UDP socket of the test's that never answers and
counts what reaches it. Needs root and util-linux ``unshare``; skipped, saying which,
without them (CI runs as root).
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
from pathlib import Path

import pytest
from clikit import CRAWLDECK

from crawldeck.localweb.server import HostServer, Request, Response

pytestmark = [
    pytest.mark.skipif(
        os.geteuid() != 0, reason="needs root to bind-mount a file (CI runs as root)"
    ),
    pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)"),
]

SERVER_IP = "127.79.0.21"


def handle(request: Request) -> Response:
    if request.path == "/robots.txt":
        return Response.text("User-agent: *\nAllow: /\n")
    return Response.html('<!doctype html><title>t</title><a href="/a">a</a><a href="/b">b</a>')


def test_a_name_in_etc_hosts_is_crawled_without_a_dns_query(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text(f"127.0.0.1 localhost\n{SERVER_IP} www.hosts-file.test\n")
    with (
        HostServer(SERVER_IP, 0, handle, name="hosts-file") as server,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as dns,
    ):
        dns.bind(("127.0.0.1", 0))
        dns.setblocking(False)
        nameserver = f"127.0.0.1:{dns.getsockname()[1]}"
        seed = f"http://www.hosts-file.test:{server.port}/"
        crawl = [
            CRAWLDECK, "crawl", seed, "--no-ui", "--db", "c.db", "--delay-ms", "0",
            "-s", "render=never", "-s", f'dns_nameservers=["{nameserver}"]',
            "-s", "dns_timeout_ms=500", "-s", "dns_retries=0",
        ]  # fmt: skip
        done = subprocess.run(
            ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"',
             str(hosts), *crawl],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        queries = 0
        while True:
            try:
                dns.recv(4096)
            except BlockingIOError:
                break
            queries += 1
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "c.db") as conn:
        pages = conn.execute("SELECT url, status FROM pages ORDER BY url").fetchall()
    assert pages == [(seed, 200), (seed + "a", 200), (seed + "b", 200)]
    assert queries == 0  # the old code: its queries, then a dead host and exit 3
