"""URL cleaning and dedupe keys in a real crawl (issue #10 items 1 and 6).

The engine crawls small sites on a loopback ``HTTPTestServer``; what reached the
server (its request log) is the evidence.
"""

from __future__ import annotations

import asyncio
import posixpath
import re
import secrets
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

from httpserver import HTTPTestServer, Request, Response

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.storage.store import Store


def html(body: str) -> Response:
    return Response(200, {"Content-Type": "text/html"}, body.encode())


def crawl(server: HTTPTestServer, db: Path, seed: str, **config: object) -> None:
    """Crawl ``server`` from ``seed`` with sitemaps off: these tests count the paths
    requested, and a crawl reading sitemaps also asks for ``/sitemap.xml``."""
    store = Store(db, flush_interval_ms=50)
    engine = Engine(build_config({"delay_ms": 0, "sitemaps": False, **config}), store)
    assert engine.add_seeds([server.url(seed)]) == []
    asyncio.run(asyncio.wait_for(engine.run(), timeout=60))
    store.close()


#: A ``;name=value`` session parameter in a request path, as the site below mints them.
_SESSION = re.compile(r";(?:jsessionid|sid|phpsessid)=[0-9a-f]+", re.IGNORECASE)

#: The spellings a session id takes in the site's links: (path template, name).
_SPELLINGS = [
    ("/item/{n};jsessionid={sid}", "jsessionid"),
    ("/item/{n};JSESSIONID={sid}", "JSESSIONID"),
    ("/item;sid={sid}/{n}", "sid"),
    ("/item/{n};PHPSESSID={sid}?view=full", "PHPSESSID"),
]


def test_a_site_minting_a_session_id_into_every_link_is_crawled_once(tmp_path: Path) -> None:
    # Every page links to two other items and home, each with a fresh session id in
    # a path parameter (several spellings and segments): a crawler keyed on the URL
    # as written never runs out of new URLs (here it would stop at max_pages=60).
    # Keyed on normalize() (session parameters dropped), each page is fetched once.
    items = 8
    with HTTPTestServer() as server:

        def link(n: int | None, spelling: int) -> str:
            sid = secrets.token_hex(8)
            if n is None:
                path = f"/;jsessionid={sid}"
            else:
                path = _SPELLINGS[spelling % len(_SPELLINGS)][0].format(n=n, sid=sid)
            server.set(path.partition("?")[0], page(n))
            return path

        def page(n: int | None) -> Callable[[Request], Response]:
            def route(request: Request) -> Response:
                me = 0 if n is None else n
                targets = [(me + 1) % items, (me + 3) % items, None]
                hrefs = [link(t, me + i) for i, t in enumerate(targets)]
                return html("".join(f'<a href="{h}">x</a>' for h in hrefs))

            return route

        server.set("/robots.txt", Response(404))
        server.set("/", page(None))
        crawl(server, tmp_path / "c.db", "/", max_pages=60, max_depth=50)
        log = [r.path for r in server.requests if r.path != "/robots.txt"]
    pages = Counter(_SESSION.sub("", path) for path in log)
    assert max(pages.values()) == 1, pages  # no page fetched twice
    allowed = {"/"} | {f"/item/{n}{q}" for n in range(items) for q in ("", "?view=full")}
    assert set(pages) <= allowed, pages
    # every item is reached (the walk n+1, n+3 over 8 items covers all of them)
    assert {p.partition("?")[0] for p in pages} == {"/"} | {f"/item/{n}" for n in range(items)}
    assert len(log) == len(pages) <= 2 * items + 1


def _served(target: str) -> str:
    """The path a server resolves the request target to: escapes decoded, then dot
    segments removed (``/public/..`` is ``/``, ``/public/..%20`` stays in /public/)."""
    path = unquote(target.partition("?")[0])
    resolved = posixpath.normpath(path)
    return resolved + "/" if path.endswith("/") and resolved != "/" else resolved


def test_the_path_sent_is_the_path_robots_txt_was_checked_on(tmp_path: Path) -> None:
    # robots.txt allows only /public/. The page links dot segments in spellings that a
    # naive pipeline checks before they resolve (a space before the fragment, %2e,
    # a backslash, a tab) and numeric hosts behind invisible code points. No request
    # outside /public/ may reach the server, and every request names the server's
    # host as the canonical 127.0.0.1 (the URL robots.txt and politeness saw).
    with HTTPTestServer() as server:
        port = server.port
        hrefs = [
            "/public/.. #x",
            "/public/%2e%2e/secret",
            "/public/.%2E/secret",
            "\\public\\..\\secret",
            "/public/.\t./secret",
            "/public/%2E%2e",
            f"http://0x7f.1\u00ad:{port}/public/soft-hyphen",
            f"http://\ufeff127.1:{port}/public/bom",
            f"http://127.0.0.1.:{port}/public/../secret",
        ]
        robots = "User-agent: *\nAllow: /public/\nDisallow: /\n"
        server.set("/robots.txt", Response(200, {"Content-Type": "text/plain"}, robots.encode()))
        server.set("/public/", html("".join(f'<a href="{h}">x</a>' for h in hrefs)))
        for name in ("soft-hyphen", "bom"):
            server.set(f"/public/{name}", html("leaf"))
        server.set("/secret", html("must not be fetched"))
        server.set("/", html("must not be fetched"))
        crawl(server, tmp_path / "c.db", "/public/")
        requests = server.requests
    paths = [r.path for r in requests]
    outside = [p for p in paths if p != "/robots.txt" and not _served(p).startswith("/public/")]
    assert outside == [], paths
    # the link with a space was sent as a browser sends it: the space encoded, in /public/
    assert "/public/..%20" in paths
    # numeric hosts behind U+00AD / U+FEFF are this server, spelled 127.0.0.1
    assert paths.count("/public/soft-hyphen") == 1
    assert paths.count("/public/bom") == 1
    assert {r.headers["host"] for r in requests} == {f"127.0.0.1:{port}"}
    assert paths.count("/robots.txt") == 1
    conn = sqlite3.connect(tmp_path / "c.db")
    try:
        blocked = dict(conn.execute("SELECT url, reason FROM blocked").fetchall())
    finally:
        conn.close()
    # what was refused was refused by robots.txt, on the path it would have sent
    assert blocked.get(f"http://127.0.0.1:{port}/secret") == "robots"
    assert blocked.get(f"http://127.0.0.1:{port}/") == "robots"


def test_links_are_requested_as_a_browser_requests_them(tmp_path: Path) -> None:
    # Issue #22 item 6: the request target that reaches the server is the one a
    # browser sends for each link (WHATWG URL standard): backslashes and any number
    # of slashes after "http:", a query glued to the authority, an empty query kept,
    # | [ ] and \ sent as they are where a browser leaves them, <base href> resolved
    # the browser's way.
    with HTTPTestServer() as server:
        port = server.port
        links = {
            f"http:\\\\127.0.0.1:{port}\\a\\b": "/a/b",
            f"http:////127.0.0.1:{port}/slashes": "/slashes",
            f"http://127.0.0.1:{port}?glued": "/?glued",
            # the one difference on the wire: yarl (aiohttp's URL type) drops an empty
            # query, so the "?" that clean keeps is not sent (servers read both alike)
            "/q?": "/q",
            "/pipe|x[1]": "/pipe|x[1]",
            "/sp ace/\u00e9": "/sp%20ace/%C3%A9",
            "/q2?x=\\&y='": "/q2?x=\\&y=%27",
            "based/": "/based/",
        }
        server.set("/robots.txt", Response(404))
        server.set("/dir/", html("".join(f'<a href="{h}">x</a>' for h in links)))
        server.set(
            "/dir/based/", html(f'<base href="\\\\127.0.0.1:{port}\\root/"><a href="leaf">x</a>')
        )
        for target in links.values():
            server.set(target.partition("?")[0], html("leaf"))
        server.set("/root/leaf", html("leaf"))
        crawl(server, tmp_path / "c.db", "/dir/")
        paths = [r.path for r in server.requests]
    expected = {"/robots.txt", "/dir/", "/root/leaf"} | set(links.values()) - {"/based/"}
    assert set(paths) == expected | {"/dir/based/"}, paths
    assert len(paths) == len(set(paths))
