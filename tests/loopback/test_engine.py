"""The engine on small real servers: edge cases of one crawl, checked on the server."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from httpserver import HTTPTestServer, Response

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.storage.store import Store


def html(body: str) -> Response:
    return Response(200, {"Content-Type": "text/html"}, body.encode())


def crawl(server: HTTPTestServer, db: Path, **config: object) -> Engine:
    store = Store(db, flush_interval_ms=50)
    engine = Engine(build_config({"delay_ms": 0, **config}), store)
    assert engine.add_seeds([server.url("/")]) == []
    asyncio.run(asyncio.wait_for(engine.run(), timeout=30))
    store.close()
    return engine


def test_links_that_differ_only_by_fragment_fetch_the_page_once(tmp_path: Path) -> None:
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="b.html#one">1</a><a href="b.html#two">2</a>'
                             '<a href="b.html">3</a><a href="#top">top</a>'))  # fmt: skip
        server.set("/b.html", html('<a href="/#x">home</a><a href="b.html#one">self</a>'))
        engine = crawl(server, tmp_path / "c.db")
        assert server.count("/b.html") == 1
        assert server.count("/") == 1
    assert engine.snapshot().counters.pages == 2
    conn = sqlite3.connect(tmp_path / "c.db")
    try:
        edges = conn.execute("SELECT from_url, to_url FROM links ORDER BY from_url").fetchall()
    finally:
        conn.close()
    root, b = server.url("/"), server.url("/b.html")
    assert sorted(edges) == sorted([(root, b), (b, root), (b, b)])


def test_robots_txt_answering_429_backs_the_host_off(tmp_path: Path) -> None:
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(429, {"Retry-After": "1"}))
        server.set("/", html('<a href="/a">a</a>'))
        server.set("/a", html("leaf"))
        crawl(server, tmp_path / "c.db")
        log = [(r.path, r.at) for r in server.requests]
    assert [path for path, _ in log] == ["/robots.txt", "/", "/a"]
    # the first page waited for the Retry-After of robots.txt, not the 0 ms delay
    assert log[1][1] - log[0][1] >= 0.98
