"""X-Robots-Tag and meta robots in a crawl, against real loopback servers (issue #22
item 9): ``noindex`` is recorded on every response type (a PDF too), ``nofollow`` in
the header or in ``<meta name="robots">`` stops link extraction unless
``obey_nofollow = false``, and the per-agent form (``X-Robots-Tag: crawldeck: ...``,
Google's robots meta tag specification) applies only to our agent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clikit import run
from crawlkit import html, rows, run_crawl
from httpserver import HTTPTestServer, Response


def pdf(*tags: str) -> Response:
    """A small PDF answered with one ``X-Robots-Tag`` header per ``tags`` value."""
    headers = [("Content-Type", "application/pdf"), *(("X-Robots-Tag", t) for t in tags)]
    return Response(200, headers, b"%PDF-1.7\n%%EOF\n")


def requested(srv: HTTPTestServer) -> set[str]:
    return {r.path for r in srv.requests} - {"/robots.txt", "/sitemap.xml"}


@pytest.fixture
def srv() -> Iterator[HTTPTestServer]:
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        yield server


def test_noindex_is_recorded_on_a_pdf_and_any_response_type(
    srv: HTTPTestServer, tmp_path: Path
) -> None:
    files = {
        "/noindex.pdf": pdf("noindex"),
        "/none.pdf": pdf("crawldeck: none"),  # our agent: none = noindex, nofollow
        "/plain.pdf": pdf(),
        "/other.pdf": pdf("otherbot: noindex"),  # another agent's: not ours
        "/two.pdf": pdf("otherbot: nofollow", "noarchive, crawldeck: noindex"),  # 2 headers
        "/gone": Response(404, {"X-Robots-Tag": "noindex"}, b"gone"),
    }
    for path, response in files.items():
        srv.set(path, response)
    srv.set("/", html(" ".join(f'<a href="{path}">f</a>' for path in files)))
    db = tmp_path / "c.db"
    run_crawl([srv.url("/")], db)
    got = {
        url.removeprefix(srv.origin): bool(n)
        for url, n in rows(db, "SELECT url, noindex FROM pages")
    }
    assert got == {
        "/": False,
        "/noindex.pdf": True,
        "/none.pdf": True,
        "/plain.pdf": False,
        "/other.pdf": False,
        "/two.pdf": True,
        "/gone": True,
    }


def test_nofollow_in_the_header_or_meta_robots_queues_no_link(
    srv: HTTPTestServer, tmp_path: Path
) -> None:
    srv.set(
        "/", html('<a href="/a">a</a> <a href="/s">s</a> <a href="/m">m</a> <a href="/o">o</a>')
    )
    srv.set("/a", html('<a href="/a1">a1</a>', **{"X-Robots-Tag": "nofollow"}))
    srv.set("/s", html('<a href="/s1">s1</a>', **{"X-Robots-Tag": "CrawlDeck: noindex, nofollow"}))
    srv.set("/m", html('<meta name="robots" content="nofollow"><a href="/m1">m1</a>'))
    srv.set("/o", html('<a href="/o1">o1</a>', **{"X-Robots-Tag": "otherbot: nofollow"}))
    for path in ("/a1", "/s1", "/m1", "/o1"):
        srv.set(path, html("leaf"))
    db = tmp_path / "c.db"
    run_crawl([srv.url("/")], db)
    assert requested(srv) == {"/", "/a", "/s", "/m", "/o", "/o1"}  # otherbot's is not ours
    queued = {url for (url,) in rows(db, "SELECT url FROM frontier")}
    assert {srv.url(p) for p in ("/a1", "/s1", "/m1")}.isdisjoint(queued)


def test_obey_nofollow_off_queues_the_links_of_a_nofollow_page(
    srv: HTTPTestServer, tmp_path: Path
) -> None:
    canonical = '<link rel="canonical" href="/canon">'
    srv.set("/", html(f'{canonical}<a href="/a">a</a>', **{"X-Robots-Tag": "crawldeck: nofollow"}))
    srv.set("/a", html('<meta name="robots" content="none"><a href="/b">b</a>'))
    srv.set("/b", html('<a href="/x" rel="nofollow">x</a>'))  # a link's own rel still counts
    srv.set("/canon", html("canonical"))
    srv.set("/x", html("x"))
    db = tmp_path / "c.db"
    run_crawl([srv.url("/")], db, obey_nofollow=False)
    assert requested(srv) == {"/", "/a", "/b", "/canon"}
    noindex = dict(rows(db, "SELECT url, noindex FROM pages"))
    assert noindex[srv.url("/a")] == 1  # none: noindex too, recorded whatever the key


def test_the_command_line_takes_obey_nofollow_and_prints_a_cap_once(
    srv: HTTPTestServer, tmp_path: Path
) -> None:
    # -s KEY=VALUE sets any config key; the cap line reaches the --no-ui output once
    srv.set("/robots.txt", Response(200, {}, b"User-agent: *\nCrawl-delay: 100\n"))
    srv.set("/", html('<a href="/a">a</a> <a href="/b">b</a>', **{"X-Robots-Tag": "nofollow"}))
    srv.set("/a", html("a"))
    srv.set("/b", html("b"))
    (tmp_path / "seeds.txt").write_text(srv.url("/") + "\n")
    proc = run("crawl", "seeds.txt", "--no-ui", "--db", "c.db", "-s", "obey_nofollow=false",
               "-s", "max_delay_ms=1000", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert requested(srv) == {"/", "/a", "/b"}
    line = f"127.0.0.1:{srv.port}: robots.txt Crawl-delay of 100 s cut to 1 s (max_delay_ms = 1000)"
    assert [x for x in proc.stderr.splitlines() if "Crawl-delay" in x] == [
        f"crawldeck: warning: {line}"
    ]
