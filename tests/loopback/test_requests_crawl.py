"""Requests as users need them (issue #14 item 5), in a whole crawl on loopback: the
config's headers, credentials and proxy go with robots.txt as with the pages,
robots.txt stays obeyed through the proxy, credentials never follow a redirect to
another host nor reach the WARC files, and per-IP figures keep each host's own
address, not the proxy's."""

from __future__ import annotations

import base64
import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest
from crawlkit import html, rows, run_crawl
from forwardproxy import ForwardProxy
from httpserver import HTTPTestServer, Response

PASSWORD = "pa55-w0rd-for-a"


@pytest.fixture
def two_hosts() -> Iterator[tuple[HTTPTestServer, HTTPTestServer]]:
    """Host a (127.0.0.1): robots.txt disallows /private; / links to /page, /private and
    /go, which redirects to host b (127.0.0.2)."""
    with HTTPTestServer() as a, HTTPTestServer("127.0.0.2") as b:
        a.set(
            "/robots.txt",
            Response(200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /private\n"),
        )
        a.set("/", html('<a href="/page">p</a> <a href="/private">x</a> <a href="/go">go</a>'))
        a.set("/page", html("<p>page</p>"))
        a.set("/private", html("<p>secret</p>"))
        a.set("/go", Response(302, {"Location": b.url("/landing")}))
        b.set("/robots.txt", Response(404))
        b.set("/landing", html("<p>b</p>"))
        yield a, b


def expected_auth() -> str:
    return "Basic " + base64.b64encode(f"crawler:{PASSWORD}".encode()).decode()


def test_headers_auth_and_proxy_reach_robots_txt_and_pages(
    two_hosts: tuple[HTTPTestServer, HTTPTestServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = two_hosts
    monkeypatch.setenv("A_PASSWORD", PASSWORD)
    with ForwardProxy() as proxy:
        run_crawl(
            [a.url("/")],
            tmp_path / "c.db",
            header={"Accept-Language": "en", "From": "ops@example.org"},
            auth={a.origin: {"user": "crawler", "password_env": "A_PASSWORD"}},
            proxy=proxy.url,
            allow_networks=["127.0.0.0/8"],
            scope="any",
            max_retries=0,
            sitemaps=False,
        )
        relayed = proxy.requests
    a_paths = [r.path for r in a.requests]
    b_paths = [r.path for r in b.requests]
    assert a_paths[0] == "/robots.txt"
    assert sorted(a_paths) == ["/", "/go", "/page", "/robots.txt"]  # never /private
    assert sorted(b_paths) == ["/landing", "/robots.txt"]
    # every request went through the proxy, robots.txt included
    assert sorted(r.target for r in relayed) == sorted(
        [a.url(p) for p in a_paths] + [b.url(p) for p in b_paths]
    )
    for request in a.requests + b.requests:
        assert request.headers["accept-language"] == "en"
        assert request.headers["from"] == "ops@example.org"
    assert {r.headers.get("authorization") for r in a.requests} == {expected_auth()}
    assert [r.headers.get("authorization") for r in b.requests] == [
        None,
        None,
    ]  # not after the redirect
    pages = dict(rows(tmp_path / "c.db", "SELECT url, status FROM pages"))
    assert pages[b.url("/landing")] == 200
    assert a.url("/private") not in pages
    # each host's address is its own, not the proxy's (127.0.0.1 for both otherwise)
    ips = dict(rows(tmp_path / "c.db", "SELECT host, ip FROM hosts"))
    assert ips[f"127.0.0.2:{b.port}"] == "127.0.0.2"
    # the WARC request records keep the headers but not the credentials
    archived = b"".join(gzip.decompress(p.read_bytes()) for p in tmp_path.glob("c-*.warc.gz"))
    assert b"Accept-Language: en" in archived
    assert b"Authorization" not in archived
    assert base64.b64encode(f"crawler:{PASSWORD}".encode()) not in archived
    # nor does the crawl file: it names the variable, not the password
    [(saved,)] = rows(tmp_path / "c.db", "SELECT config FROM runs")
    assert "A_PASSWORD" in saved
    assert PASSWORD not in saved


def test_a_redirect_to_another_host_sends_no_credentials_without_a_proxy(
    two_hosts: tuple[HTTPTestServer, HTTPTestServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = two_hosts
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login crawler password {PASSWORD}\n")
    monkeypatch.setenv("NETRC", str(netrc))
    run_crawl(
        [a.url("/go")],
        tmp_path / "c.db",
        netrc=True,
        allow_networks=["127.0.0.0/8"],
        scope="any",
        sitemaps=False,
    )
    assert [(r.path, r.headers.get("authorization")) for r in a.requests] == [
        ("/robots.txt", expected_auth()),
        ("/go", expected_auth()),
    ]
    assert [(r.path, r.headers.get("authorization")) for r in b.requests] == [
        ("/robots.txt", None),
        ("/landing", None),
    ]
