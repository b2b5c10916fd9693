"""Redirect traps of the shapes ``redirect_grows`` first missed, on real loopback servers
(issue #10, item 3): a single sign-on ping-pong between two hosts that nests the URL
under a new parameter name on each hop, a path segment that gets longer on each hop,
and more slashes on each hop. Each is cut as ``redirect_trap`` long before
``max_redirects``; a legitimate single sign-on detour that nests twice reaches its page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from crawlkit import html, rows, run_crawl
from httpserver import HTTPTestServer, Request, Response


def redirect(location: str, **headers: str) -> Response:
    return Response(302, {"Location": location, **headers})


def crawl(seed: str, db: Path) -> None:
    """Crawl from ``seed`` with sitemaps off: these tests count a chain's requests, and
    a crawl reading sitemaps also asks each host for ``/sitemap.xml``
    (tests/loopback/test_sitemaps_crawl.py)."""
    run_crawl(
        [seed], db, timeout=30, scope="any", allow_private=True, max_redirects=10, sitemaps=False
    )


def sent(*servers: HTTPTestServer) -> list[str]:
    """Every request but robots.txt, as origin + target, in arrival order."""
    log = [(r.at, s.origin + r.path) for s in servers for r in s.requests]
    return [url for _, url in sorted(log) if not url.endswith("/robots.txt")]


@pytest.fixture
def two_hosts() -> Iterator[tuple[HTTPTestServer, HTTPTestServer]]:
    with HTTPTestServer("127.0.0.1") as app, HTTPTestServer("127.0.0.2") as sso:
        app.set("/robots.txt", Response(404))
        sso.set("/robots.txt", Response(404))
        yield app, sso


def test_a_single_sign_on_ping_pong_is_cut_at_its_fourth_hop(
    two_hosts: tuple[HTTPTestServer, HTTPTestServer], tmp_path: Path
) -> None:
    """The app sends every request to the identity provider with ``?service=<the URL
    asked for>``, and the provider sends it back to ``/cb?back=<the URL asked for>``:
    each hop nests the whole URL once more, under the other name. The first two
    nestings look like a real sign-on detour; the third and the fourth grow a URL
    that already nests a URL with a query, and the chain is cut there."""
    app, sso = two_hosts

    def to_sso(request: Request) -> Response:
        return redirect(f"{sso.origin}/login?service={quote(app.origin + request.path, safe='')}")

    def to_app(request: Request) -> Response:
        return redirect(f"{app.origin}/cb?back={quote(sso.origin + request.path, safe='')}")

    app.set("/page", to_sso)
    app.set("/cb", to_sso)
    sso.set("/login", to_app)
    db = tmp_path / "c.db"
    crawl(app.url("/page"), db)
    urls = sent(app, sso)
    # the seed and three hops; the fourth is refused (the old code went on to the
    # hop cap: 11 requests, each URL twice as long as the one before)
    assert len(urls) == 4, urls
    assert [url.split("?")[0] for url in urls] == [
        app.url("/page"),
        sso.url("/login"),
        app.url("/cb"),
        sso.url("/login"),
    ]
    assert rows(db, "SELECT reason FROM blocked") == [("redirect_trap",)]
    assert {state for (state,) in rows(db, "SELECT state FROM frontier")} == {"failed"}


def test_a_single_sign_on_detour_that_nests_twice_reaches_its_page(
    two_hosts: tuple[HTTPTestServer, HTTPTestServer], tmp_path: Path
) -> None:
    """``/app?id=5`` -> ``/login?next=/app?id=5`` -> the provider with
    ``service=<that login URL>`` -> ``/login?next=...&ticket=ST-1`` (sets the session
    cookie) -> ``/app?id=5`` with the cookie: a 200 page, nothing blocked."""
    app, sso = two_hosts

    def page(request: Request) -> Response:
        if "session=1" in request.headers.get("cookie", ""):
            return html("the page")
        return redirect(f"/login?next={quote(request.path, safe='/')}")

    def login(request: Request) -> Response:
        if "ticket=" in request.path:
            return redirect("/app?id=5", **{"Set-Cookie": "session=1; Path=/"})
        return redirect(f"{sso.origin}/login?service={quote(app.origin + request.path, safe='')}")

    def provider(request: Request) -> Response:
        back = request.path.partition("service=")[2]
        return redirect(f"{unquote(back)}&ticket=ST-1")

    app.set("/app", page)
    app.set("/login", login)
    sso.set("/login", provider)
    db = tmp_path / "c.db"
    crawl(app.url("/app?id=5"), db)
    urls = sent(app, sso)
    assert [url.split("?")[0] for url in urls] == [
        app.url("/app"),
        app.url("/login"),
        sso.url("/login"),
        app.url("/login"),
        app.url("/app"),
    ]
    assert rows(db, "SELECT count(*) FROM blocked") == [(0,)]
    assert dict(rows(db, "SELECT url, status FROM pages"))[app.url("/app?id=5")] == 200


GROWTHS: list[tuple[str, Callable[[str], str], list[str]]] = [
    ("/a", lambda path: path + "a", ["/a" + "a" * n for n in range(12)]),
    ("/p", lambda path: path + ".html", ["/p" + ".html" * n for n in range(12)]),
    ("/x/", lambda path: path + "/", ["/x/" + "/" * n for n in range(12)]),
]


@pytest.mark.parametrize(("seed", "grow", "routes"), GROWTHS, ids=["a-aa", "html", "slashes"])
def test_a_path_that_gets_longer_on_every_hop_is_cut_at_its_second_hop(
    tmp_path: Path, seed: str, grow: Callable[[str], str], routes: list[str]
) -> None:
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        for route in routes:
            server.set(route, lambda request: redirect(grow(request.path)))
        db = tmp_path / "c.db"
        crawl(server.url(seed), db)
        paths = [r.path for r in server.requests if r.path != "/robots.txt"]
    # the seed and one grown URL; the second growing hop is refused (the old code
    # followed it to the hop cap, 11 requests)
    assert paths == [seed, grow(seed)]
    assert rows(db, "SELECT reason FROM blocked") == [("redirect_trap",)]
