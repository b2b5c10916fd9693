"""The frontier's in-memory window (``frontier_window``): URLs beyond it wait only in
SQLite (state ``spilled``) and come back oldest first; a real crawl on a loopback
server fetches every page once, and a stopped crawl resumes its spilled URLs."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from httpserver import HTTPTestServer, Response

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.storage.store import Store

LEAVES = 60


def html(body: str) -> Response:
    return Response(200, {"Content-Type": "text/html"}, body.encode())


def site(server: HTTPTestServer) -> list[str]:
    """``/`` links to 60 pages, each of which links to one leaf: 121 pages."""
    server.set("/robots.txt", Response(404))
    server.set("/", html("".join(f'<a href="/p/{i}">{i}</a>' for i in range(LEAVES))))
    paths = ["/"]
    for i in range(LEAVES):
        server.set(f"/p/{i}", html(f'<a href="/q/{i}">leaf</a><a href="/">home</a>'))
        server.set(f"/q/{i}", html("leaf"))
        paths += [f"/p/{i}", f"/q/{i}"]
    return paths


def run(server: HTTPTestServer, db: Path, peak: list[int], **config: object) -> Engine:
    store = Store(db, flush_interval_ms=50)
    engine = Engine(
        build_config({"delay_ms": 0, "adaptive_delay_factor": 0, "frontier_window": 10, **config}),
        store,
    )
    engine.add_seeds([server.url("/")])

    async def go() -> None:
        task = asyncio.create_task(engine.run())
        while not task.done():
            peak.append(len(engine._frontier))  # the in-memory frontier, sampled
            await asyncio.sleep(0.001)
        await task

    asyncio.run(asyncio.wait_for(go(), timeout=60))
    store.close()
    return engine


def states(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT state, count(*) FROM frontier GROUP BY state"))
    finally:
        conn.close()


def test_a_crawl_past_its_window_fetches_every_page_once(tmp_path: Path) -> None:
    peak: list[int] = []
    with HTTPTestServer() as server:
        paths = site(server)
        engine = run(server, tmp_path / "w.db", peak)
        counts = {path: server.count(path) for path in paths}
    assert counts == dict.fromkeys(paths, 1)
    assert engine.snapshot().counters.pages == len(paths)
    assert engine.statistics().frontier.read_back >= LEAVES  # most URLs went through SQLite
    assert max(peak) <= 10  # never more than the window in memory
    assert engine.statistics().frontier.spilled == 0
    assert states(tmp_path / "w.db") == {"done": len(paths)}


def test_spilled_urls_survive_a_stop_and_are_resumed(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with HTTPTestServer() as server:
        paths = site(server)
        first = run(server, db, [], max_pages=5)
        assert first.snapshot().counters.pages == 5
        left = states(db)
        assert left.get("spilled", 0) > 0 and left["done"] == 5
        second = run(server, db, [])
        counts = {path: server.count(path) for path in paths}
    assert counts == dict.fromkeys(paths, 1)  # nothing lost, nothing fetched twice
    assert second.snapshot().counters.pages == len(paths)
    assert states(db) == {"done": len(paths)}


def test_a_crawl_does_not_finish_with_urls_left_spilled(tmp_path: Path) -> None:
    """Many hosts, a small window: a host whose last URL in memory is taken while the
    window is full must come back for its spilled URLs before the crawl may end."""
    from contextlib import ExitStack

    from crawlkit import html, rows, run_crawl
    from httpserver import HTTPTestServer, Response

    with ExitStack() as stack:
        servers = [stack.enter_context(HTTPTestServer(f"127.0.4.{i + 1}")) for i in range(12)]
        for server in servers:
            server.set("/robots.txt", Response(404))
            for n in range(40):  # a tree: page n links 5n+1 .. 5n+5
                kids = [k for k in range(5 * n + 1, 5 * n + 6) if k < 40]
                server.set(f"/p{n}", html("".join(f'<a href="/p{k}">{k}</a>' for k in kids)))
        db = tmp_path / "c.db"
        engine = run_crawl([s.url("/p0") for s in servers], db, delay_ms=5, scope="any",
                           frontier_window=40, allow_private=True, max_depth=20)  # fmt: skip
        assert all(s.count(f"/p{n}") == 1 for s in servers for n in range(40))
    assert rows(db, "SELECT count(*) FROM frontier WHERE state = 'spilled'") == [(0,)]
    assert engine.statistics().frontier.spilled == 0
