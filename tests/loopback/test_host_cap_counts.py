"""What a host's page cap counts, as README and ``crawldeck crawl --help`` say (issue #14's
loose ends, a new user's trial): ``[hosts."HOST"] max_pages`` (like ``max_per_host``)
counts the URLs admitted for the host, not its pages fetched: URLs that robots.txt
refuses at fetch time use up the cap and give no page. A real crawl of a loopback
server."""

from __future__ import annotations

from pathlib import Path

from crawlkit import html, rows, run_crawl
from httpserver import HTTPTestServer, Response

from crawldeck.core.policy import urls


def test_the_hosts_max_pages_counts_admitted_urls_not_pages(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    links = ("/private/1", "/private/2", "/a", "/b")
    with HTTPTestServer() as srv:
        srv.set("/robots.txt", Response(200, {"Content-Type": "text/plain"},
                                        b"User-agent: *\nDisallow: /private/\n"))  # fmt: skip
        srv.set("/", html("".join(f'<a href="{p}">{p}</a>' for p in links)))
        for path in links:
            srv.set(path, html("<p>leaf</p>"))
        host = urls.host_key(srv.url("/"))
        # the seed and the two private URLs are the 3 admitted: /a and /b are capped
        run_crawl([srv.url("/")], db, sitemaps=False, hosts={host: {"max_pages": 3}})
        fetched = sorted(r.path for r in srv.requests)
    assert fetched == ["/", "/robots.txt"]
    assert rows(db, "SELECT url FROM pages") == [(srv.url("/"),)]
    assert rows(db, "SELECT url, reason FROM blocked ORDER BY url") == [
        (srv.url("/a"), "host_cap"),
        (srv.url("/b"), "host_cap"),
        (srv.url("/private/1"), "robots"),
        (srv.url("/private/2"), "robots"),
    ]
