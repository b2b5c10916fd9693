"""The helpers that ``tests/loopback/test_attach.py``, ``tests/console/test_attach.py`` and
``tests/unit/test_attach.py`` share: one subject's tests, split by tier (issue #24 item
8)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest
from clikit import CRAWLDECK

from crawldeck.core.crawl.attach import (
    socket_path,
)
from crawldeck.core.crawl.snapshot import BlockedRow, Counters, CrawlSnapshot, HostDetail, HostRow
from crawldeck.tui.attach import SocketSource

#: The generous cap of every wait on a condition (a loaded 2-core machine).
CAP_S = 90.0


def wait_for(check: Callable[[], bool], what: str, cap_s: float = CAP_S) -> None:
    """Wait (polling every 50 ms) until ``check()``; fail naming ``what`` after ``cap_s``."""
    deadline = time.monotonic() + cap_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {cap_s:g} s for {what}")
        time.sleep(0.05)


async def until(check: Callable[[], bool], what: str, cap_s: float = CAP_S) -> None:
    """``wait_for`` on the event loop (it goes on running meanwhile)."""
    deadline = time.monotonic() + cap_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {cap_s:g} s for {what}")
        await asyncio.sleep(0.05)


@contextlib.contextmanager
def headless_demo(
    where: Path, *, delay_ms: int = 2000
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """``crawldeck demo --no-ui`` into ``where/demo.db`` with a long politeness delay
    (it keeps running while a test attaches; ``--max-time`` bounds it) and no
    rendering (no Chromium of its own), until its socket is there; SIGTERM (a clean
    stop) at the end if it still runs."""
    db = where / "demo.db"
    out = (where / "crawl.out").open("wb")
    err = (where / "crawl.err").open("wb")
    proc = subprocess.Popen(
        [CRAWLDECK, "demo", "--no-ui", "--db", str(db), "-s", f"delay_ms={delay_ms}",
         "-s", "render=never", "--max-time", "240"],
        cwd=where, stdout=out, stderr=err,
    )  # fmt: skip
    try:
        wait_for(lambda: socket_path(db).exists() or proc.poll() is not None, "the crawl's socket")
        assert proc.poll() is None, (where / "crawl.err").read_text()
        yield proc, db
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=CAP_S)
        out.close()
        err.close()


# --------------------------------------------------------------- the server


class Crawl:
    """A crawl's side of the socket in memory (``core.crawl.attach.AttachTarget``): snapshots
    of ``blocked_rows`` long refused URLs (a big frame), published on ``publish``."""

    def __init__(self, blocked_rows: int = 0) -> None:
        self.subscribers: list[Callable[[CrawlSnapshot], None]] = []
        self.state: str = "running"
        self.pages = 0
        self.stops = 0
        self.lines: list[str] = []
        url = "http://127.0.0.1/" + "x" * 2000
        self._blocked = tuple(
            BlockedRow(1.0, "calendar", "127.0.0.1", url) for _ in range(blocked_rows)
        )
        self._row = HostRow("127.0.0.1", 3, 1, 5, 0, 1000.0, "default", 1.0, 0.0, "ok")

    def subscribe(self, callback: Callable[[CrawlSnapshot], None]) -> None:
        self.subscribers.append(callback)

    def snapshot(self) -> CrawlSnapshot:
        return CrawlSnapshot(
            at=1.7e9 + self.pages, started_at=1.7e9, state=self.state,  # type: ignore[arg-type]
            counters=Counters(pages=self.pages), pages_per_s=1.0, bytes_per_s=1.0,
            window_s=10.0, max_pages=None, hosts=(self._row,), backoff=(),
            blocked=self._blocked, log=("a line",),
        )  # fmt: skip

    def publish(self) -> None:
        self.pages += 1
        snap = self.snapshot()
        for callback in self.subscribers:
            callback(snap)

    def pause(self, by: str = "") -> None:
        if self.state == "running":  # as ``Engine.pause`` logs it
            self.lines.append(f"paused {by}")
            self.state = "paused"

    def resume(self, by: str = "") -> None:
        if self.state == "paused":
            self.lines.append(f"resumed {by}")
            self.state = "running"

    @property
    def paused(self) -> bool:
        return self.state == "paused"

    def request_stop(self, by: str | None = None) -> None:
        self.stops += 1
        self.state = "stopping"

    def log(self, line: str) -> None:
        self.lines.append(line)

    async def add_seeds_live(self, seed_urls: Iterable[str]) -> list[tuple[str, str]]:
        return [(url, "not http") for url in seed_urls if not url.startswith("http")]

    def query_hosts(self, text: str = "", limit: int = 50) -> tuple[HostRow, ...]:
        return (self._row,) if text in self._row.host else ()

    def host_detail(self, host: str, queue_head: int = 20) -> HostDetail | None:
        if host != self._row.host:
            return None
        return HostDetail(
            self._row,
            ("http://127.0.0.1/a",)[:queue_head],
            (),
            None,
            (),
            robots_why="200",
            robots_http=200,
            robots_expires_in_s=60.0,
        )


async def watch(source: SocketSource) -> tuple[asyncio.Task[object], list[CrawlSnapshot]]:
    """Read ``source`` in a task; the snapshots it gets, in order."""
    seen: list[CrawlSnapshot] = []
    source.subscribe(seen.append)
    return asyncio.create_task(source.run()), seen
