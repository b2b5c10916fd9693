"""Tests of the local multi-host web (``localweb``): real servers, real HTTP."""

from __future__ import annotations

import datetime
import errno
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections import deque
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import TypedDict
from urllib.parse import urldefrag, urljoin, urlsplit

import httpx
import pytest
from protego import Protego

from crawldeck.localweb import server as server_mod
from crawldeck.localweb.server import Handler, HostServer, Request, Response, start_hosts
from crawldeck.localweb.sites import SITEMAP_FILES
from crawldeck.localweb.static import StaticSite, content_type_for, serve_static
from crawldeck.localweb.web import HOST_NAMES, Expected, LocalWeb

UA = "crawldeck-test/1.0"


# ---------------------------------------------------------------------------- helpers


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Every test stops what it starts: no server or handler thread outlives it."""
    before = set(threading.enumerate())
    yield
    leaked = set(threading.enumerate()) - before
    assert not leaked, f"threads left running: {leaked}"


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(
        trust_env=False, follow_redirects=False, timeout=10.0, headers={"User-Agent": UA}
    ) as c:
        yield c


@pytest.fixture
def web() -> Iterator[LocalWeb]:
    with LocalWeb(delay_scale=0.1, slow_s=0.2, today=datetime.date(2024, 1, 15)) as w:
        yield w
        assert w.errors() == []


class _Links(HTMLParser):
    """Links, <base href> and meta robots of a page, as a crawler sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str]] = []  # (href, rel)
        self.base: str | None = None
        self.meta_robots = ""
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag in ("a", "area") and "href" in a:
            self.links.append((a["href"], a.get("rel", "").lower()))
        elif tag in ("frame", "iframe") and "src" in a:  # followed like links (issue #13)
            self.links.append((a["src"], ""))
        elif tag == "base" and self.base is None and "href" in a:
            self.base = a["href"]
        elif tag == "meta" and a.get("name", "").lower() == "robots":
            self.meta_robots = a.get("content", "").lower()
        elif tag == "title":
            self._in_title = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data


def parse(html: str) -> _Links:
    p = _Links()
    p.feed(html)
    p.close()
    return p


def links_of(url: str, response: httpx.Response, *, polite: bool = True) -> list[str]:
    """Absolute link targets of a page; ``polite`` honours base, nofollow and meta robots."""
    p = parse(response.text)
    tags = p.meta_robots + "," + response.headers.get("x-robots-tag", "").lower()
    if polite and ("nofollow" in tags or "none" in tags):
        return []
    base = urljoin(url, p.base) if (polite and p.base) else url
    out = []
    for href, rel in p.links:
        if polite and "nofollow" in rel.split():
            continue
        out.append(urldefrag(urljoin(base, href))[0])
    return out


def hrefs(response: httpx.Response) -> list[str]:
    return [href for href, _ in parse(response.text).links]


def read_response(sock: socket.socket, buf: bytes) -> tuple[bytes, bytes, bytes]:
    """Read one HTTP/1.1 response framed by Content-Length: (head, body, rest)."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        assert chunk, "connection closed before the headers"
        buf += chunk
    head, _, buf = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(buf) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed before the body"
        buf += chunk
    return head, buf[:length], buf[length:]


# ---------------------------------------------------------------------------- hosts


def test_hosts_distinct_addresses_one_port(web: LocalWeb) -> None:
    assert list(web.hosts) == list(HOST_NAMES)
    port = web.port
    for i, name in enumerate(HOST_NAMES, start=1):
        assert web.hosts[name] == f"http://127.77.0.{i}:{port}"
        assert web.host_keys[name] == f"127.77.0.{i}:{port}"
        assert web.name_of(f"127.77.0.{i}:{port}") == name
    assert web.seeds() == [f"http://127.77.0.{i}:{port}/" for i in range(1, 10)]
    assert web.url("traps", "/list?page=3") == f"http://127.77.0.2:{port}/list?page=3"
    with pytest.raises(KeyError):
        web.name_of("127.0.0.1:1")


def test_not_started_and_no_restart() -> None:
    w = LocalWeb()
    with pytest.raises(RuntimeError, match="not started"):
        _ = w.hosts
    with w:
        pass
    with pytest.raises(RuntimeError):
        w.start()
    with pytest.raises(ValueError):
        LocalWeb(delay_scale=-1)


def test_robots_statuses(web: LocalWeb, client: httpx.Client) -> None:
    statuses = {n: client.get(web.url(n, "/robots.txt")).status_code for n in HOST_NAMES}
    assert statuses == {
        "www": 200,
        "traps": 200,
        "norobots": 404,
        "flaky": 503,
        "moved": 301,
        "busy": 200,
        "slow": 200,
        "spa": 200,
        "sitemap": 200,
    }
    assert dict(web.expected.robots_status) == statuses
    # 503 always, not just once
    assert [client.get(web.url("flaky", "/robots.txt")).status_code for _ in range(3)] == [503] * 3
    moved = client.get(web.url("moved", "/robots.txt"))
    assert moved.headers["location"] == web.url("moved", "/real-robots.txt")
    assert web.expected.redirects[web.url("moved", "/robots.txt")] == moved.headers["location"]
    real = client.get(moved.headers["location"])
    assert real.status_code == 200
    assert real.headers["content-type"] == "text/plain; charset=utf-8"
    assert real.text == "User-agent: *\nDisallow: /hidden/\n"
    assert client.get(web.url("traps", "/robots.txt")).text == "User-agent: *\nDisallow:\n"


def test_www_robots_text_and_crawl_delay_scaling(client: httpx.Client) -> None:
    with LocalWeb(delay_scale=0.25, crawl_delay_s=2.0) as w:
        text = client.get(w.url("www", "/robots.txt")).text
        assert w.expected.crawl_delay_s == 0.5
    assert text == (
        "# Harbor & Pine robots policy\n"
        "User-agent: *\nDisallow: /private/\nAllow: /private/open$\nDisallow: /*.pdf$\n"
        "Disallow: /search\nCrawl-delay: 0.5\n\n"
        "User-agent: crawldeck\nDisallow: /private/\nAllow: /private/open$\n"
        "Disallow: /*.pdf$\nDisallow: /drafts/\nCrawl-delay: 0.5\n"
    )


def test_expected_agrees_with_robots_txt(web: LocalWeb, client: httpx.Client) -> None:
    exp = web.expected
    www = Protego.parse(client.get(web.url("www", "/robots.txt")).text)
    moved = Protego.parse(client.get(web.url("moved", "/real-robots.txt")).text)
    assert www.crawl_delay("crawldeck") == exp.crawl_delay_s == 0.1
    assert www.crawl_delay("otherbot") == 0.1
    for url in exp.good["www"] | exp.files["www"]:
        assert www.can_fetch(url, "crawldeck"), url
    for url in exp.disallowed["www"]:
        assert not www.can_fetch(url, "crawldeck"), url
    for url in exp.disallowed_other_agents["www"]:
        assert www.can_fetch(url, "crawldeck") and not www.can_fetch(url, "otherbot"), url
    # the groups differ both ways: /drafts/ only for crawldeck, /search only for *
    assert www.can_fetch(web.url("www", "/drafts/"), "otherbot")
    assert exp.disallowed_other_agents["www"] == {web.url("www", "/search?q=tents")}
    # '$' anchors the end of path+query: the PDF with a query is allowed
    assert web.url("www", "/files/report.pdf") in exp.disallowed["www"]
    assert web.url("www", "/files/report.pdf?download=1") in exp.files["www"]
    assert exp.disallowed["moved"] == {
        web.url("moved", "/hidden/vault.html"),
        web.url("moved", "/hidden/staff-only.html"),
    }
    for url in exp.disallowed["moved"]:
        assert not moved.can_fetch(url, "crawldeck")
    for url in exp.good["moved"]:
        assert moved.can_fetch(url, "crawldeck")
    for name in ("traps", "norobots", "flaky", "busy", "slow"):
        assert exp.disallowed[name] == frozenset()


# ---------------------------------------------------------------------------- busy / slow


def test_busy_429_then_200(client: httpx.Client) -> None:
    with LocalWeb(busy_429_count=3, retry_after_s=7) as w:
        assert client.get(w.url("busy", "/robots.txt")).status_code == 200  # not counted
        answers = [client.get(w.url("busy", "/")) for _ in range(5)]
        log = w.access_log("busy")
        assert w.expected.busy_429_count == 3 and w.expected.retry_after_s == 7
    assert [r.status_code for r in answers] == [429, 429, 429, 200, 200]
    assert [r.headers.get("retry-after") for r in answers] == ["7", "7", "7", None, None]
    assert [(a.path, a.status) for a in log] == [("/robots.txt", 200)] + [("/", 429)] * 3 + [
        ("/", 200)
    ] * 2
    assert "Box Office" in answers[3].text


def test_slow_host_delay_measured(client: httpx.Client) -> None:
    with LocalWeb(slow_s=0.6, delay_scale=0.5) as w:
        assert w.expected.slow_delay_s == pytest.approx(0.3)
        client.get(w.url("www", "/"))  # open a connection to warm up
        t0 = time.time()
        slow = client.get(w.url("slow", "/"))
        slow_elapsed = time.time() - t0
        t1 = time.perf_counter()
        fast = client.get(w.url("www", "/about/"))
        fast_elapsed = time.perf_counter() - t1
        t2 = time.perf_counter()
        robots = client.get(w.url("slow", "/robots.txt"))
        robots_elapsed = time.perf_counter() - t2
        log = w.access_log("slow")
    assert slow.status_code == fast.status_code == robots.status_code == 200
    assert slow_elapsed >= 0.29
    assert robots_elapsed >= 0.29  # every response, robots.txt included
    assert fast_elapsed < slow_elapsed  # www's answer is not delayed
    # the log records the arrival time, not the (delayed) answer time
    assert t0 - 0.05 <= log[0].at
    assert log[0].at + 0.29 <= t0 + slow_elapsed + 0.05


# ---------------------------------------------------------------------------- traps


def test_calendar_trap_links(web: LocalWeb, client: httpx.Client) -> None:
    entry = web.expected.traps["calendar"]
    assert entry == web.url("traps", "/calendar/2024/01/")
    r = client.get(entry)
    assert r.status_code == 200
    assert parse(r.text).title == "Events in January 2024 | Trap Gallery"
    # an events calendar: forward only from its first month
    assert hrefs(r) == ["/", "/calendar/2024/02/", "/calendar/2025/01/", web.url("www", "/")]
    far = client.get(web.url("traps", "/calendar/2031/12/"))
    assert "/calendar/2032/01/" in hrefs(far)  # forever
    last = client.get(web.url("traps", "/calendar/9999/12/"))
    assert hrefs(last) == ["/", "/calendar/9999/11/", "/calendar/9998/12/", web.url("www", "/")]
    before = client.get(web.url("traps", "/calendar/2023/12/"))
    assert "/calendar/2023/11/" not in hrefs(before)
    assert client.get(web.url("traps", "/calendar/2024/13/")).status_code == 404
    assert client.get(web.url("traps", "/calendar/2024/1/")).status_code == 404


def test_calendar_starts_at_current_month(client: httpx.Client) -> None:
    today = datetime.date.today()
    with LocalWeb() as w:
        assert w.expected.traps["calendar"] == w.url(
            "traps", f"/calendar/{today.year:04d}/{today.month:02d}/"
        )
        home = client.get(w.url("traps", "/"))
    assert f"/calendar/{today.year:04d}/{today.month:02d}/" in hrefs(home)


def test_session_id_trap(web: LocalWeb, client: httpx.Client) -> None:
    shop = web.url("traps", "/shop/?sid=0123456789abcdef")
    first, second = client.get(shop), client.get(shop)
    assert first.status_code == 200
    links1, links2 = hrefs(first), hrefs(second)
    assert links1 != links2  # fresh ids every time
    session_links = [h for h in links1 if "sid=" in h.lower()]
    assert len(session_links) == 5
    self_link, products, cart = session_links[0], session_links[1:4], session_links[4]
    assert self_link.startswith("/shop/?sid=") and self_link != "/shop/?sid=0123456789abcdef"
    assert [p.partition("?")[0] for p in products] == [f"/shop/product/{n}" for n in (1, 2, 3)]
    assert all(len(p.partition("?sid=")[2]) == 16 for p in products)
    assert cart.startswith("/shop/cart?PHPSESSID=")
    canon = {Expected.canonical(web.url("traps", h)) for h in session_links}
    assert canon <= web.expected.good["traps"]
    assert Expected.canonical(web.url("traps", "/x?a=1&SID=2&b=3")) == web.url(
        "traps", "/x?a=1&b=3"
    )
    assert Expected.canonical(web.url("traps", "/x?a=1")) == web.url("traps", "/x?a=1")
    cart_page = client.get(web.url("traps", cart))
    assert [h.partition("?")[0] for h in hrefs(cart_page)][1:5] == [
        "/shop/cart",
        "/shop/product/4",
        "/shop/product/5",
        "/shop/product/6",
    ]
    assert client.get(web.url("traps", "/shop/product/7?sid=1")).status_code == 404
    assert web.expected.traps["session"] == web.url("traps", "/shop/")
    assert web.expected.trap_reasons["session"] is None


def test_repeating_path_trap(web: LocalWeb, client: httpx.Client) -> None:
    url = web.expected.traps["repeat"]
    assert url == web.url("traps", "/repeat/")
    for level in range(5):
        r = client.get(url)
        assert r.status_code == 200
        assert parse(r.text).title == f"Folder, level {level} | Trap Gallery"
        assert "./a/" in hrefs(r)
        url = urljoin(url, "./a/")
    assert url == web.url("traps", "/repeat/a/a/a/a/a/")
    assert client.get(web.url("traps", "/repeat/b/")).status_code == 404


def test_redirect_loop_and_chain(web: LocalWeb, client: httpx.Client) -> None:
    a = client.get(web.expected.traps["redirect_loop"])
    assert (a.status_code, a.headers["location"]) == (302, "/loop/b")
    b = client.get(web.url("traps", "/loop/b"))
    assert (b.status_code, b.headers["location"]) == (302, "/loop/a")
    url, hops = web.expected.traps["redirect_chain"], 0
    while True:
        r = client.get(url)
        if r.status_code != 302:
            break
        assert web.expected.redirects[url] == r.headers["location"]
        url = urljoin(url, r.headers["location"])
        hops += 1
    assert hops == web.expected.chain_hops == 25
    assert (url, r.status_code) == (web.url("traps", "/chain/final"), 200)
    assert client.get(web.url("traps", "/chain/26")).status_code == 404


def test_pagination_trap(web: LocalWeb, client: httpx.Client) -> None:
    first = client.get(web.expected.traps["pagination"])
    assert [h for h in hrefs(first) if h.startswith("/list")] == ["/list?page=10"]
    k = client.get(web.url("traps", "/list?page=1000"))
    assert [h for h in hrefs(k) if h.startswith("/list")] == ["/list?page=10000"]
    assert "Item 9991" in k.text
    assert client.get(web.url("traps", "/list?page=0")).status_code == 404
    assert client.get(web.url("traps", "/list?page=x")).status_code == 404


def test_long_url(web: LocalWeb, client: httpx.Client) -> None:
    page = client.get(web.expected.traps["long_url"])
    targets = [urljoin(web.expected.traps["long_url"], h) for h in hrefs(page)]
    assert web.expected.long_url in targets
    assert len(web.expected.long_url) > 2048
    r = client.get(web.expected.long_url)
    assert r.status_code == 200
    assert web.access_log("traps")[-1].path == web.expected.long_url.removeprefix(
        web.hosts["traps"]
    )


# ---------------------------------------------------------------------------- www specifics


def test_www_files(web: LocalWeb, client: httpx.Client) -> None:
    csv = client.get(web.url("www", "/files/data.csv"))
    assert csv.headers["content-type"] == "text/csv; charset=utf-8"
    assert csv.text.splitlines()[0] == "sku,name,stock"
    png = client.get(web.url("www", "/files/logo.png"))
    assert png.headers["content-type"] == "image/png"
    body = png.content
    assert body[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", body[8:16])
    assert (length, kind) == (13, b"IHDR")
    assert struct.unpack(">II", body[16:24]) == (1, 1)
    assert struct.unpack(">I", body[29:33])[0] == zlib.crc32(body[12:29])
    assert body.endswith(b"IEND\xaeB`\x82")
    pdf = client.get(web.url("www", "/files/report.pdf?download=1"))
    assert pdf.headers["content-type"] == "application/pdf" and pdf.content.startswith(b"%PDF-")
    txt = client.get(web.url("www", "/files/notes.txt"))
    assert txt.headers["content-type"] == "text/plain; charset=utf-8"
    css = client.get(web.url("www", "/style.css"))
    assert css.headers["content-type"] == "text/css; charset=utf-8"


def test_www_link_features(web: LocalWeb, client: httpx.Client) -> None:
    exp = web.expected
    home = client.get(web.url("www", "/"))
    assert ("/account/login", "nofollow") in parse(home.text).links
    for name in HOST_NAMES[1:]:
        assert web.url(name, "/") in hrefs(home)
    contact = client.get(web.url("www", "/contact/"))
    assert ("/account/register", "noopener nofollow") in parse(contact.text).links
    archive = client.get(web.url("www", "/archive/"))
    assert parse(archive.text).meta_robots == "nofollow"
    assert links_of(web.url("www", "/archive/"), archive) == []
    press = client.get(web.url("www", "/press/"))
    assert press.headers["x-robots-tag"] == "noindex"
    assert exp.noindex == {web.url("www", "/press/")}
    assert web.url("www", "/press/kit.html") in links_of(web.url("www", "/press/"), press)
    reading = client.get(web.url("www", "/reading/list.html"))
    assert parse(reading.text).base == "/library/shelf/"
    polite = set(links_of(web.url("www", "/reading/list.html"), reading))
    naive = set(links_of(web.url("www", "/reading/list.html"), reading, polite=False))
    assert exp.wrong_base == naive - polite
    assert {web.url("www", f"/library/shelf/{p}.html") for p in ("intro", "chapter-1")} <= polite
    for url in exp.wrong_base:
        assert client.get(url).status_code == 404
    assert exp.nofollow == {
        web.url("www", p)
        for p in (
            "/archive/old-catalogue.html",
            "/archive/retired-tents.html",
            "/account/login",
            "/account/register",
        )
    }
    for url in exp.nofollow | exp.all_disallowed:
        assert client.get(url).status_code == 200  # they exist: only the rules keep them out
    head = client.head(web.url("www", "/about/"))
    get = client.get(web.url("www", "/about/"))
    assert head.content == b""
    assert head.headers["content-length"] == get.headers["content-length"] == str(len(get.content))


# ---------------------------------------------------------------------------- ground truth


class Crawled(TypedDict):
    """What ``_crawl`` saw; URLs are ``Expected.canonical`` but for ``found`` and
    ``blocked``, which are as linked."""

    html: set[str]  # pages fetched with a 200 text/html
    files: set[str]  # other 200 responses
    statuses: dict[str, int]  # the status of every URL fetched
    found: set[str]  # every link queued
    blocked: set[str]  # URLs robots.txt disallowed (polite crawl only)


def _crawl(web: LocalWeb, client: httpx.Client, *, polite: bool, max_depth: int = 5) -> Crawled:
    """Breadth-first crawl from the seeds. ``polite``: robots (crawldeck, 5xx = allow),
    base href, nofollow; on the traps host only the home and the shop (finite once the
    session ids are stripped) are expanded."""
    exp = web.expected
    robots: dict[str, Protego | None] = {}
    if polite:
        for base in web.hosts.values():
            r = client.get(base + "/robots.txt", follow_redirects=True)
            robots[base] = Protego.parse(r.text) if r.status_code == 200 else None
    html: set[str] = set()
    files: set[str] = set()
    statuses: dict[str, int] = {}
    found: set[str] = set()
    blocked: set[str] = set()
    seen: set[str] = set()
    queue = deque((seed, 0) for seed in web.seeds())
    bases = set(web.hosts.values())
    while queue:
        url, depth = queue.popleft()
        key = Expected.canonical(url)
        if key in seen:
            continue
        seen.add(key)
        base = f"http://{urlsplit(url).netloc}"
        assert base in bases, url
        parser = robots.get(base)
        if polite and parser is not None and not parser.can_fetch(url, exp.robots_token):
            blocked.add(url)
            continue
        r = client.get(url)
        statuses[key] = r.status_code
        if r.status_code != 200:
            continue
        if not r.headers["content-type"].startswith("text/html"):
            files.add(key)
            continue
        html.add(key)
        page = parse(r.text)
        assert r.text.startswith("<!DOCTYPE html>") and page.title, url
        assert web.url("www", "/") in hrefs(r), url  # every page links back to www
        path = urlsplit(url).path
        trap_page = path != "/" and not path.startswith("/shop/")  # the shop is finite
        if depth >= max_depth or (base == web.hosts["traps"] and trap_page):
            continue
        for link in links_of(url, r, polite=polite):
            found.add(link)
            queue.append((link, depth + 1))
    return {"html": html, "files": files, "statuses": statuses, "found": found, "blocked": blocked}


def _sitemap_only(w: LocalWeb) -> frozenset[str]:
    """The sitemap host's pages that no link reaches (its sitemaps list them)."""
    return frozenset(w.url("sitemap", p) for paths in SITEMAP_FILES.values() for p in paths)


def test_ground_truth_matches_a_polite_crawl(client: httpx.Client) -> None:
    with LocalWeb(busy_429_count=0, slow_s=0.01) as w:
        result = _crawl(w, client, polite=True)
        exp = w.expected
        requested = {w.url(name, a.path) for name in HOST_NAMES for a in w.access_log(name)}
        assert w.errors() == []
        only_in_sitemaps = _sitemap_only(w)
    # this link-following crawler reads no sitemap: the sitemap host's records are
    # reachable only through them (tests/loopback/test_sitemaps_crawl.py crawls them)
    assert result["html"] == exp.all_good - only_in_sitemaps
    assert result["files"] == exp.all_files
    assert len(exp.good["www"]) == 38
    assert {n: len(exp.good[n]) for n in HOST_NAMES[2:]} == {
        "norobots": 12,
        "flaky": 12,
        "moved": 23,  # 12 and the 11 of /collection/ (issue #13)
        "busy": 12,
        "slow": 5,
        "spa": 6,
        "sitemap": 13,  # its root and the 12 records its sitemaps list
    }
    assert set(result["statuses"].values()) <= {200, 302}
    assert result["blocked"] <= exp.all_disallowed
    assert requested.isdisjoint(exp.must_not_fetch)
    assert (
        set(exp.traps.values()) - {exp.traps["redirect_loop"], exp.traps["redirect_chain"]}
        <= (exp.good["traps"])
    )


def test_naive_crawl_finds_every_forbidden_url(client: httpx.Client) -> None:
    with LocalWeb(busy_429_count=0, slow_s=0.01) as w:
        result = _crawl(w, client, polite=False, max_depth=6)
        exp = w.expected
        ledger = {w.url("sitemap", "/private/ledger.html")}  # listed in a sitemap only
    assert exp.must_not_fetch - ledger <= result["found"]
    assert exp.all_disallowed - ledger <= result["html"] | result["files"]
    not_found = {url for url, status in result["statuses"].items() if status == 404}
    assert not_found == exp.wrong_base


# ---------------------------------------------------------------------------- server


def test_access_log_entries(web: LocalWeb, client: httpx.Client) -> None:
    t0 = time.time()
    client.get(web.url("norobots", "/robots.txt"))
    client.get(web.url("norobots", "/posts/?x=1"))
    client.head(web.url("norobots", "/"))
    t1 = time.time()
    log = web.access_log("norobots")
    assert [(a.method, a.path, a.status, a.user_agent) for a in log] == [
        ("GET", "/robots.txt", 404, UA),
        ("GET", "/posts/?x=1", 200, UA),
        ("HEAD", "/", 200, UA),
    ]
    assert t0 <= log[0].at <= log[1].at <= log[2].at <= t1
    assert web.access_log("www") == []
    web.clear_logs()
    assert web.access_log("norobots") == []


def test_keep_alive_content_length_framing(web: LocalWeb) -> None:
    address, port = web.host_keys["www"].split(":")
    with socket.create_connection((address, int(port)), timeout=5) as sock:
        rest = b""
        bodies = []
        for path in ("/", "/files/logo.png", "/nope", "/about/"):
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {address}\r\n\r\n".encode())
            head, body, rest = read_response(sock, rest)
            bodies.append((head.split(b"\r\n")[0], len(body)))
            assert b"connection: close" not in head.lower()
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        read_response(sock, rest)
        assert sock.recv(1) == b""  # the server closed as asked
    assert [status for status, _ in bodies] == [
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 404 Not Found",
        b"HTTP/1.1 200 OK",
    ]
    assert [p for p in (a.path for a in web.access_log("www"))] == [
        "/",
        "/files/logo.png",
        "/nope",
        "/about/",
        "/",
    ]


def test_stop_releases_threads_and_sockets(client: httpx.Client) -> None:
    before = set(threading.enumerate())
    w = LocalWeb(slow_s=60.0).start()  # a delay 6 times the client's timeout
    client.get(w.url("www", "/"))  # leaves an idle keep-alive connection open
    results: list[int | str] = []

    def slow_request() -> None:
        with httpx.Client(trust_env=False, timeout=10.0) as c:
            try:
                results.append(c.get(w.url("slow", "/")).status_code)
            except httpx.HTTPError as exc:
                results.append(type(exc).__name__)

    t = threading.Thread(target=slow_request)
    t.start()
    slow = w._servers["slow"]
    deadline = time.monotonic() + 10.0
    while slow.delayed == 0:  # the request was read and waits out its 60 s delay
        assert time.monotonic() < deadline, "the slow request never reached its delay"
        time.sleep(0.01)
    w.stop()
    t.join(20)
    assert results == [200]  # the delayed answer is cut short (within the 10 s), not lost
    assert (
        set(threading.enumerate()) - before == set()
    )  # no thread left behind (one of an earlier test may end meanwhile)
    address, port = w.host_keys["www"].split(":")
    with pytest.raises(ConnectionRefusedError), socket.create_connection((address, int(port)), 1):
        pass
    w.stop()  # idempotent


def test_handler_exception_is_500() -> None:
    def boom(request: Request) -> Response:
        raise RuntimeError("boom")

    with (
        HostServer("127.77.9.1", 0, boom, name="boom") as server,
        httpx.Client(trust_env=False) as c,
    ):
        r = c.get(server.base_url + "/x?y=1")
        assert r.status_code == 500
        assert server.errors == ["GET /x?y=1: RuntimeError('boom')"]
        assert [(a.path, a.status) for a in server.log.entries()] == [("/x?y=1", 500)]


def test_start_hosts_retries_on_collision(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, int]] = []

    class Flaky(HostServer):
        def __init__(self, address: str, port: int, handler: Handler, *, name: str = "") -> None:
            calls.append((address, port))
            if address == "127.77.9.3" and len(calls) < 3:
                raise OSError(errno.EADDRINUSE, "taken")
            super().__init__(address, port, handler, name=name)

    monkeypatch.setattr(server_mod, "HostServer", Flaky)
    servers = start_hosts(["127.77.9.2", "127.77.9.3"], [ok, ok])
    try:
        assert calls[0] == ("127.77.9.2", 0) and calls[1][0] == "127.77.9.3"
        assert calls[2] == ("127.77.9.2", 0) and len(calls) == 4
        assert servers[0].port == servers[1].port == calls[3][1]
        with httpx.Client(trust_env=False) as c:
            assert c.get(servers[1].base_url + "/").text == "ok"
    finally:
        for s in servers:
            s.stop()


def test_start_hosts_fixed_port_taken() -> None:
    with socket.socket() as taken:
        taken.bind(("127.77.9.5", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError):
            start_hosts(["127.77.9.4", "127.77.9.5"], [ok, ok], port=port)
    with pytest.raises(ValueError):
        start_hosts(["127.77.9.4"], [])


def ok(request: Request) -> Response:
    return Response.text("ok")


# ---------------------------------------------------------------------------- static


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "sub").mkdir(parents=True)
    (root / "index.html").write_text("<!DOCTYPE html><title>Root</title><a href='sub/'>s</a>")
    (root / "sub" / "index.html").write_text("<title>Sub</title>")
    (root / "sub" / "page.html").write_text("<title>Page</title>")
    (root / "style.css").write_text("body{}")
    (root / "app.js").write_text("var x;")
    (root / "data.json").write_text("{}")
    (root / "a b.txt").write_text("spaced")
    (root / "empty").mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("linked")
    (root / "link.txt").symlink_to(outside)
    return root


def test_static_site(tree: Path, client: httpx.Client) -> None:
    before = set(threading.enumerate())
    with StaticSite(tree, "127.77.8.1", robots_txt="User-agent: *\nDisallow: /sub/\n") as site:
        base = site.base_url
        assert base == f"http://127.77.8.1:{site.port}" and site.host_key == base[7:]
        root = client.get(base + "/")
        assert (root.status_code, root.headers["content-type"]) == (200, "text/html; charset=utf-8")
        assert root.text.startswith("<!DOCTYPE html><title>Root</title>")
        redirect = client.get(base + "/sub?q=1")
        assert (redirect.status_code, redirect.headers["location"]) == (301, "/sub/?q=1")
        assert client.get(base + "/sub/").text == "<title>Sub</title>"
        assert client.get(base + "/sub/page.html").text == "<title>Page</title>"
        assert client.get(base + "/sub/page.html/").status_code == 404
        assert client.get(base + "/empty/").status_code == 404
        assert client.get(base + "/missing.html").status_code == 404
        assert client.get(base + "/%2e%2e/outside.txt").status_code == 404
        assert client.get(base + "/sub/../../outside.txt").status_code == 404
        assert client.get(base + "/%ff").status_code == 400
        assert client.get(base + "/a%20b.txt").text == "spaced"
        assert client.get(base + "/link.txt").text == "linked"  # symlinks followed
        types = {
            p: client.get(base + p).headers["content-type"]
            for p in ("/style.css", "/app.js", "/data.json", "/a%20b.txt")
        }
        assert types == {
            "/style.css": "text/css; charset=utf-8",
            "/app.js": "text/javascript; charset=utf-8",
            "/data.json": "application/json",
            "/a%20b.txt": "text/plain; charset=utf-8",
        }
        robots = client.get(base + "/robots.txt")
        assert robots.text == "User-agent: *\nDisallow: /sub/\n"
        head = client.head(base + "/sub/page.html")
        assert head.content == b"" and head.headers["content-length"] == "19"
        log = site.access_log()
        assert [(a.method, a.path, a.status) for a in log[:3]] == [
            ("GET", "/", 200),
            ("GET", "/sub?q=1", 301),
            ("GET", "/sub/", 200),
        ]
        assert log[-1].method == "HEAD" and all(a.user_agent == UA for a in log)
    assert (
        set(threading.enumerate()) - before == set()
    )  # no thread left behind (one of an earlier test may end meanwhile)
    assert content_type_for("x.PNG") == "image/png"
    assert content_type_for("x.unknownext") == "application/octet-stream"


def test_static_robots_from_disk_or_404(tree: Path, client: httpx.Client) -> None:
    with StaticSite(tree, "127.77.8.2") as site:
        assert client.get(site.base_url + "/robots.txt").status_code == 404
    (tree / "robots.txt").write_text("User-agent: *\nDisallow:\n")
    with StaticSite(tree, "127.77.8.2") as site:
        assert client.get(site.base_url + "/robots.txt").text == "User-agent: *\nDisallow:\n"
    with pytest.raises(NotADirectoryError):
        StaticSite(tree / "index.html", "127.77.8.2")
    with pytest.raises(RuntimeError, match="not started"):
        _ = StaticSite(tree, "127.77.8.2").base_url


def test_serve_static_many_hosts(tree: Path, client: httpx.Client) -> None:
    sites = serve_static(tree, ["127.77.8.3", "127.77.8.4", "127.77.8.5"], robots_txt="")
    try:
        assert len({s.port for s in sites}) == 1
        for i, site in enumerate(sites, start=3):
            assert site.base_url == f"http://127.77.8.{i}:{sites[0].port}"
            assert client.get(site.base_url + "/sub/page.html").text == "<title>Page</title>"
            assert client.get(site.base_url + "/robots.txt").text == ""
            assert [a.path for a in site.access_log()] == ["/sub/page.html", "/robots.txt"]
    finally:
        for site in sites:
            site.stop()


# ---------------------------------------------------------------------------- __main__


def test_main_prints_hosts_and_exits_cleanly_on_ctrl_c() -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "crawldeck.localweb", "--prefix", "127.77.7", "--delay-scale", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(len(HOST_NAMES) + 1)]
        assert [line.split()[0] for line in lines[:-1]] == list(HOST_NAMES)
        assert lines[0].split()[1].startswith("http://127.77.7.1:")
        assert lines[-1] == "Ctrl-C to stop.\n"
        with httpx.Client(trust_env=False) as c:
            assert c.get(lines[1].split()[1] + "robots.txt").status_code == 200
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert (proc.returncode, out, err) == (0, "localweb: stopped.\n", "")
