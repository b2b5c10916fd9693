"""Chromium's own traffic (issue #25, trial 15): the browser that renders pages must
ask nothing outside the pages it is given. Debian's Chromium, launched with
``core.render.browser_pool.CHROMIUM_ARGS`` but for the switches that point its Google
services away, looked up ``accounts.google.com`` (its account check, ``ListAccounts``)
and ``update.googleapis.com`` (the component updater) during a crawl of loopback pages.

Checked in Chromium's own NetLog (``--log-net-log``), which records every host its
network service resolves or requests.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from crawldeck.cli.attach import is_loopback
from crawldeck.core.render.browser_pool import CHROMIUM_ARGS

CHROMIUM = "/usr/bin/chromium"
#: Seconds to wait for Chromium's account check to show in its log (a hang bound: it
#: comes within seconds of the start).
CHECK_WAIT_S = 60.0


@pytest.fixture
def page_url() -> Iterator[str]:
    """A page on a loopback HTTP server of the test's own."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<!doctype html><title>t</title><p><a href='/a'>a</a>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def _hosts(log: dict[str, Any]) -> set[str]:
    """Every host named by a ``host`` or ``url`` parameter of the log's events."""
    found: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("host", "url") and isinstance(item, str):
                    name = urlsplit(item if "//" in item else f"//{item}").hostname
                    if name:
                        found.add(name)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk([event.get("params") for event in log["events"]])
    return found


async def test_the_render_browser_asks_no_host_but_the_pages(page_url: str, tmp_path: Path) -> None:
    from playwright.async_api import async_playwright

    netlog = tmp_path / "netlog.json"
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, f"--log-net-log={netlog}"]
        )
        try:
            context = await browser.new_context()
            page = await context.new_page()
            await page.goto(page_url)
            # the account check comes at the browser's start: once it is in the log,
            # the background services have had their turn (it came before the fix too)
            deadline = time.monotonic() + CHECK_WAIT_S
            while b"ListAccounts" not in netlog.read_bytes():
                assert time.monotonic() < deadline, "no account check in Chromium's log"
                await asyncio.sleep(0.1)
            await context.close()
        finally:
            await browser.close()
    hosts = _hosts(json.loads(netlog.read_text()))
    assert "127.0.0.1" in hosts  # the page was asked for, and logged
    outside = {h for h in hosts if not is_loopback(h)}
    assert outside == set(), outside
