"""Redirect chains on real loopback servers (issue #10, items 2, 3 and 5).

A hop that only changes the spelling is followed; a self-redirect that sets a cookie
is followed with the cookie, and no cookie outlives its chain; a real loop ends with
its URLs failed, not done; a chain whose URL grows is cut after two growing hops; a
meta refresh is a hop like a 3xx (hop cap, loops, robots.txt, politeness).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from crawlkit import html, rows, run_crawl
from httpserver import HTTPTestServer, Request, Response

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.storage.store import Store


def redirect(location: str, status: int = 301, **headers: str) -> Response:
    return Response(status, {"Location": location, **headers})


def crawl(server: HTTPTestServer, db: Path, seed: str = "/", **config: Any) -> Engine:
    """Crawl from ``seed`` with sitemaps off: these tests count a chain's requests, and a
    crawl reading sitemaps also asks for ``/sitemap.xml``
    (tests/loopback/test_sitemaps_crawl.py)."""
    return run_crawl([server.url(seed)], db, timeout=30, sitemaps=False, **config)


def paths(server: HTTPTestServer) -> list[str]:
    return [r.path for r in server.requests if r.path != "/robots.txt"]


@pytest.fixture
def server() -> Iterator[HTTPTestServer]:
    with HTTPTestServer() as srv:
        srv.set("/robots.txt", Response(404))
        yield srv


def test_a_redirect_to_another_spelling_of_the_same_url_is_followed(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    """``%D0%BF`` -> ``%d0%bf`` and ``?b=2&a=1`` -> ``?a=1&b=2`` have one dedupe key:
    the second spelling is requested (once) and its page recorded."""
    server.set("/", html('<a href="/news/%D0%BF">n</a> <a href="/q?b=2&amp;a=1">q</a>'))
    server.set("/news/%D0%BF", redirect("/news/%d0%bf"))
    server.set("/news/%d0%bf", html("the news"))
    server.set("/q", lambda r: redirect("/q?a=1&b=2") if r.path == "/q?b=2&a=1" else html("query"))
    db = tmp_path / "c.db"
    crawl(server, db)
    assert sorted(paths(server)) == sorted(
        ["/", "/news/%D0%BF", "/news/%d0%bf", "/q?b=2&a=1", "/q?a=1&b=2"]
    )
    got = dict(rows(db, "SELECT url, status FROM pages"))
    assert got[server.url("/news/%d0%bf")] == 200
    assert got[server.url("/q?a=1&b=2")] == 200
    assert rows(db, "SELECT count(*) FROM blocked")[0][0] == 0
    assert {s for (s,) in rows(db, "SELECT state FROM frontier")} == {"done"}


def test_a_self_redirect_that_sets_a_cookie_is_followed_with_it_and_only_within_its_chain(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    def home(request: Request) -> Response:
        if "consent=yes" in request.headers.get("cookie", ""):
            return html('<a href="/a">a</a>')
        return redirect("/", 302, **{"Set-Cookie": "consent=yes; Path=/"})

    server.set("/", home)
    server.set("/a", html("leaf"))
    db = tmp_path / "c.db"
    crawl(server, db)
    log = [(r.path, r.headers.get("cookie")) for r in server.requests if r.path != "/robots.txt"]
    assert log == [("/", None), ("/", "consent=yes"), ("/a", None)]
    assert dict(rows(db, "SELECT url, status FROM pages")) == {
        server.url("/"): 200,
        server.url("/a"): 200,
    }


def test_a_cookie_gate_on_another_url_sends_the_chain_back_with_the_cookie(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    """``/article`` -> ``/consent`` (sets the cookie) -> ``/article`` again: the
    article is fetched with the cookie although its URL is already in the chain."""

    def article(request: Request) -> Response:
        if "ok=1" in request.headers.get("cookie", ""):
            return html("the article")
        return redirect("/consent?next=/article", 302)

    server.set("/article", article)
    server.set("/consent", redirect("/article", 302, **{"Set-Cookie": "ok=1"}))
    db = tmp_path / "c.db"
    crawl(server, db, seed="/article")
    assert paths(server) == ["/article", "/consent?next=/article", "/article"]
    pages = dict(rows(db, "SELECT url, status FROM pages"))
    assert pages[server.url("/article")] == 200


def test_a_real_loop_fails_its_urls_with_the_reason(server: HTTPTestServer, tmp_path: Path) -> None:
    server.set("/a", redirect("/b"))
    server.set("/b", redirect("/a"))
    db = tmp_path / "c.db"
    crawl(server, db, seed="/a")
    assert paths(server) == ["/a", "/b"]
    states = dict(rows(db, "SELECT url, state FROM frontier"))
    assert states == {server.url("/a"): "failed", server.url("/b"): "failed"}
    for url, error in rows(db, "SELECT url, error FROM pages"):
        assert error is not None and error.startswith("redirect_loop: "), (url, error)
    assert rows(db, "SELECT reason FROM blocked") == [("redirect_loop",)]


@pytest.mark.parametrize(
    ("seed", "grow"),
    [
        ("/grow?x=1", lambda p: p + "&x=1"),  # a query that gets longer
        ("/grow/a", lambda p: p + "/a"),  # a path that repeats
        ("/grow?r=ab", lambda p: p.replace("r=", "r=ab", 1)),  # a value that repeats
    ],
)
def test_a_chain_whose_url_grows_is_cut_after_two_growing_hops(
    server: HTTPTestServer, tmp_path: Path, seed: str, grow: Callable[[str], str]
) -> None:
    server.set("/grow", lambda r: redirect(grow(r.path), 302))
    for prefix in ("/grow/a", "/grow/a/a", "/grow/a/a/a", "/grow/a/a/a/a"):
        server.set(prefix, lambda r: redirect(grow(r.path), 302))
    db = tmp_path / "c.db"
    crawl(server, db, seed=seed)
    assert len(paths(server)) == 2  # the seed and one grown URL, not max_redirects
    assert rows(db, "SELECT reason FROM blocked") == [("redirect_trap",)]
    assert {s for (s,) in rows(db, "SELECT state FROM frontier")} == {"failed"}


@pytest.mark.parametrize(
    "content",
    [
        "0; URL=/target",
        "0;url='/target'",
        '0; URL="/target"',
        "0 ; url = /target",
        "0; /target",
        "0;/target",
        "1,URL=/target",
        "  0 ;  URL=/target  ",
    ],
)
def test_a_meta_refresh_is_followed_as_a_redirect(
    server: HTTPTestServer, tmp_path: Path, content: str
) -> None:
    quote = "'" if '"' in content else '"'
    server.set("/", html(f'<meta http-equiv="Refresh" content={quote}{content}{quote}><p>x</p>'))
    server.set("/target", html("here"))
    db = tmp_path / "c.db"
    crawl(server, db, delay_ms=150)
    assert paths(server) == ["/", "/target"]
    assert dict(rows(db, "SELECT url, final_url FROM pages"))[server.url("/")] == server.url(
        "/target"
    )
    at = {r.path: r.at for r in server.requests}
    assert at["/target"] - at["/"] >= 0.15  # the hop waited for politeness


def test_a_meta_refresh_loop_and_a_disallowed_refresh_target(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    server.set("/robots.txt", Response(200, {"Content-Type": "text/plain"},
                                       b"User-agent: *\nDisallow: /private\n"))  # fmt: skip
    server.set("/", html('<a href="/r1">r</a><a href="/p">p</a>'))
    server.set("/r1", html('<meta http-equiv="refresh" content="0;url=/r2">'))
    server.set("/r2", html('<meta http-equiv="refresh" content="0;url=/r1">'))
    server.set("/p", html('<meta http-equiv="refresh" content="0;url=/private/x">'))
    server.set("/private/x", html("secret"))
    db = tmp_path / "c.db"
    crawl(server, db)
    assert sorted(paths(server)) == ["/", "/p", "/r1", "/r2"]
    states = dict(rows(db, "SELECT url, state FROM frontier"))
    assert states[server.url("/r1")] == states[server.url("/r2")] == "failed"
    blocked = dict(rows(db, "SELECT url, reason FROM blocked"))
    assert blocked == {server.url("/r1"): "redirect_loop", server.url("/private/x"): "robots"}


def test_a_meta_refresh_chain_stops_at_the_hop_cap(server: HTTPTestServer, tmp_path: Path) -> None:
    def hop(request: Request) -> Response:
        n = int(request.path.partition("=")[2]) + 1
        return html(f'<meta http-equiv="refresh" content="0;url=/hop?n={n}">')

    server.set("/hop", hop)
    db = tmp_path / "c.db"
    crawl(server, db, seed="/hop?n=0", max_redirects=4)
    assert len(paths(server)) == 5  # the seed and four hops
    assert rows(db, "SELECT reason FROM blocked") == [("too_many_redirects",)]


def test_a_cookie_gate_cut_by_a_stop_starts_over_on_resume(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    """A stop while the gated page is fetched with the chain's cookie: the resume has
    no cookie, so the chain starts over (a loop memory of the cut chain would call the
    gate's redirect a loop and lose the page for good)."""
    reached = threading.Event()
    slow = [True]

    def page(request: Request) -> Response:
        if "ok=1" not in request.headers.get("cookie", ""):
            return redirect("/gate?to=/p", 302)
        reached.set()
        if slow[0]:
            server.wait(5)
        return html("the page")

    server.set("/p", page)
    server.set("/gate", redirect("/p", 302, **{"Set-Cookie": "ok=1"}))
    db = tmp_path / "c.db"
    store = Store(db, flush_interval_ms=50)
    engine = Engine(build_config({"delay_ms": 0, "render": "never"}), store)
    engine.add_seeds([server.url("/p")])

    async def stop_when_reached() -> None:
        task = asyncio.create_task(engine.run())
        await asyncio.to_thread(reached.wait, 10)
        engine.request_stop()
        await task

    asyncio.run(stop_when_reached())
    store.close()
    slow[0] = False
    run_crawl([server.url("/p")], db)
    assert rows(db, "SELECT status FROM pages WHERE url = ?", server.url("/p")) == [(200,)]
    assert {s for (s,) in rows(db, "SELECT state FROM frontier")} == {"done"}


def test_a_host_whose_fetch_a_stop_cut_is_left_queued(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    server.set_raw("/robots.txt", lambda request, out: server.wait(10))  # a tarpit
    db = tmp_path / "c.db"
    store = Store(db, flush_interval_ms=50)
    engine = Engine(build_config({"delay_ms": 0, "render": "never"}), store)
    engine.add_seeds([server.url("/")])

    async def stop_soon() -> None:
        task = asyncio.create_task(engine.run())
        await asyncio.sleep(1.0)
        engine.request_stop()
        await task

    asyncio.run(stop_soon())
    store.close()
    assert rows(db, "SELECT state FROM hosts") == [("queued",)]
    assert rows(db, "SELECT state FROM frontier") == [("queued",)]
