"""The fake fetcher against the real one on one scripted site (issue #24 item 8).

The engine's logic is tested fast against ``tests/fakesite.py``'s ``FakeFetcher`` on
virtual time, and end to end against loopback servers with ``AiohttpFetcher``; these
tests check that the two fetchers agree, so that what the fast tier proves of the
engine holds with the real one. ``scripted_site`` is one small web of three hosts and
a port nothing listens on:

* host ``a``: a robots.txt disallowing ``/private``; a home page with ``ETag`` and
  ``Last-Modified`` linking to everything; an ``X-Robots-Tag: noindex`` page; a
  redirect chain with relative ``Location`` values (``/docs/old`` 301 ``moved/one``,
  302 ``../../final?x=1`` setting a cookie); a 404 with an HTML body; a PDF (not HTML: its
  body is skipped by the engine); pages over the ``max_body_bytes`` cap, plain and
  gzip; a small gzip page; a page without ``Content-Type`` (sniffed as HTML); a
  chunked page and a close-delimited one; a short body, one shorter than its
  ``Content-Length`` but over the cap, stacked codings, a bad status line, a header
  line over 8 190 bytes, a connection closed before the head; and,
  not linked (the crawl never asks for them), a 503 with an HTTP-date
  ``Retry-After`` and a server that never answers (a read timeout);
* host ``b``: robots.txt 404, a page linking back to ``a`` and a 307 to ``a``;
* host ``c``: robots.txt 404 and a 429 with ``Retry-After: 2``;
* ``dead``: connection refused (robots.txt and the page).

The fake serves each ``Reply`` or ``Fail`` as scripted; the real side is one
``HTTPTestServer`` a host whose routes write the same reply byte for byte (``wire``:
the status line with the standard phrase, the scripted header lines and nothing else,
the body, chunked when the script says so), and, for a ``Fail``, the bytes that make
the real fetcher fail that way (``Page.raw``).

Fetcher level (``test_the_fetchers_agree_on_every_page``): each URL fetched once
through each fetcher in each of the ways the engine fetches (``MODES``: a page with
``want_body``, robots.txt and side requests whole with a byte cap, a sitemap streamed
to ``on_body``, and a stream whose reader stops), compared field for field (``record``):
every field of ``FetchResult`` is in ``COMPARED`` or in ``NORMALISED`` with the reason,
and ``test_every_field_is_compared_or_normalised`` fails when ``FetchResult`` gains one
that is in neither. An error is compared by class, ``reason``, ``retryable`` and its
whole message.

Crawl level (``test_the_crawls_agree``): the engine crawls the site from ``a``'s home
page once over the fake (virtual time) and once over the real servers, with the same
config; every row of ``pages``, ``links``, ``blocked``, ``frontier``, ``hosts`` and
``page_versions`` must be the same (ports written as host names), but for the columns
in ``CRAWL_NORMALISED``; so must the requests each site received (URL and ``Cookie``).
The fast tier checks that the fake crawl records what the script means
(``test_the_fake_crawl_records_what_the_script_means``), so that the comparison
cannot pass on a site that no longer exercises its cases.

Gaps between the fake and the real fetcher, found here and closed in
``tests/fakesite.py``: the fake's ``reason`` was ``""`` and its ``raw_headers`` empty;
its ``wire_body`` was ``None`` for a content-coded body (the WARC record would have
held the decoded body under ``Content-Encoding: gzip``) and, for a stream, the decoded
bytes cut at the cap instead of the bytes as sent; it sniffed streamed bodies; it
raised "short body" for a body cut at the cap (never read to its end) and for a stream
whose reader had stopped first; four of its error messages were an older aiohttp's
wording. Left as they are, and normalised here:

* ``elapsed_ms`` is virtual time in the fake, wall-clock time in the real one;
* ``request_headers`` is ``()`` in the fake: the session's own fields (Host,
  User-Agent, Accept, Accept-Encoding) are aiohttp's; the extra ``headers`` of a
  request are in ``FakeSite.requests``, compared at the crawl level (the chain's
  ``Cookie``);
* header names in ``headers`` are compared case-insensitively: aiohttp gives the names
  it knows in its own spelling (``ETag`` arrives as ``Etag``); ``raw_headers`` keeps
  them as sent and is compared exactly;
* ``wire_body`` of a content-coded body cut at the cap is, in the real fetcher, what it
  had read before the cut; the fake keeps the whole coded body (the same here, where
  each body arrives in one read);
* an unscripted URL: the fake answers 404 ``text/html`` ``not found``, the test server
  404 ``text/plain``; the crawl test checks that only scripted URLs were asked for;
* not in the script (the fake cannot express them, or they are timing): header bytes
  that are not UTF-8 (the fake's headers are text), brotli (the fake decodes gzip and
  deflate only), a body that drips past ``total_timeout_ms``, TLS, DNS and proxies;
  ``tests/test_fetcher.py`` and ``tests/test_failure_kinds.py`` keep those against
  real servers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import http
import io
import socket
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import virtualtime
from fakesite import (
    HANG,
    Fail,
    FakeFetcher,
    FakeSite,
    Reply,
    acrawl,
    bad_status_line,
    config,
    http_date,
    lost,
    oversized_header,
    refused,
    short_body,
    stacked_codings,
)
from httpserver import HTTPTestServer, Request

from crawldeck.core.config import CrawlConfig
from crawldeck.core.crawl.content import ContentReader
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.errors import FetchError
from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.records import BodySink, FetchResult
from crawldeck.core.storage.store import Store

#: The body cap of every fetch and crawl here (the config's least is 1024).
MAX_BODY = 2048
#: The byte cap of the ``whole`` mode (``fetch(max_bytes=...)``, as robots.txt).
WHOLE_CAP = 1100
#: The crawl's config keys over ``fakesite.config()``'s: no retries, so a 429 or a
#: lost connection is recorded after one try on both sides.
CRAWL: dict[str, Any] = {"max_body_bytes": MAX_BODY, "max_retries": 0}
#: Stand-in origins for the fake-only test (no socket: the fake never connects).
STAND_IN = {
    k: f"http://127.0.0.1:{port}" for k, port in (("a", 1), ("b", 2), ("c", 3), ("dead", 4))
}


# ----------------------------------------------------------------- the site


@dataclass(frozen=True)
class Page:
    """One scripted URL.

    Attributes:
        name: the test id. origin: ``a``, ``b``, ``c`` or ``dead``. target: path and
            query.
        answer: what the fake answers.
        raw: for a ``Fail``, the bytes the real server sends so that the real fetcher
            fails the same way (then it closes the connection).
        settings: config keys of this URL's fetcher-level test (a short read timeout).
    """

    name: str
    origin: str
    target: str
    answer: Reply | Fail
    raw: bytes | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)


def html_page(
    title: str,
    *hrefs: str,
    filler: int = 0,
    headers: tuple[tuple[str, str], ...] = (),
    content_type: str | None = "text/html; charset=utf-8",
    gzipped: bool = False,
    framing: str = "length",
) -> Reply:
    """A 200 HTML page titled ``title`` linking to ``hrefs``, ``filler`` bytes of text
    after the links; ``gzipped``: gzip-coded; ``framing``: ``length`` (a
    ``Content-Length``), ``chunked`` or ``close`` (delimited by the close)."""
    anchors = "".join(f'<a href="{href}">{href}</a>\n' for href in hrefs)
    body = (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body>\n{anchors}"
        f"<p>{'x' * filler}</p></body></html>"
    ).encode()
    pairs = [("Content-Type", content_type)] if content_type is not None else []
    pairs += headers
    if gzipped:
        body = gzip.compress(body, mtime=0)
        pairs.append(("Content-Encoding", "gzip"))
    if framing == "length":
        pairs.append(("Content-Length", str(len(body))))
    elif framing == "chunked":
        pairs.append(("Transfer-Encoding", "chunked"))
    return Reply(200, tuple(pairs), body)


def reply(status: int, *headers: tuple[str, str], body: bytes = b"") -> Reply:
    """A ``status`` reply with ``headers`` and ``body``, its ``Content-Length`` last."""
    return Reply(status, (*headers, ("Content-Length", str(len(body)))), body)


def scripted_site(origins: Mapping[str, str]) -> list[Page]:
    """The site (see the module docstring), its URLs on ``origins`` (``a``, ``b``,
    ``c``, ``dead`` to ``http://host:port``)."""
    a, b, c, dead = (origins[k] for k in ("a", "b", "c", "dead"))
    plain = ("Content-Type", "text/plain")
    modified = http_date(virtualtime.EPOCH - 86_400)
    return [
        Page("a-robots", "a", "/robots.txt",
             reply(200, plain, body=b"User-agent: *\nDisallow: /private\n")),
        Page("a-home", "a", "/", html_page(
            "home", "/about", "/docs/old", "/missing", "/doc.pdf", "/big", "/packed", "/packed-big",
            "/sniffed", "/private/secret", "/chunked", "/close-delimited", "/short", "/short-cut",
            "/stacked", "/garbled", "/huge-header", "/dropped", b + "/", c + "/busy",
            dead + "/", headers=(("ETag", '"v1"'), ("Last-Modified", modified)))),
        Page("a-about", "a", "/about",
             html_page("about", "/", headers=(("X-Robots-Tag", "noindex"),))),
        Page("a-old", "a", "/docs/old", reply(301, ("Location", "moved/one"))),
        Page("a-moved", "a", "/docs/moved/one",
             reply(302, ("Location", "../../final?x=1"), ("Set-Cookie", "seen=1; Path=/"))),
        Page("a-final", "a", "/final?x=1", html_page("final", "/about")),
        Page("a-missing", "a", "/missing",
             reply(404, ("Content-Type", "text/html"), body=b"<p>not here</p>")),
        Page("a-pdf", "a", "/doc.pdf",
             reply(200, ("Content-Type", "application/pdf"), body=b"%PDF-1.4\n" + bytes(3000))),
        Page("a-big", "a", "/big", html_page("big", "/about", filler=5000)),
        Page("a-packed", "a", "/packed", html_page("packed", "/about", gzipped=True)),
        Page("a-packed-big", "a", "/packed-big",
             html_page("packed big", "/about", filler=9000, gzipped=True)),
        Page("a-sniffed", "a", "/sniffed", html_page("sniffed", "/about", content_type=None)),
        Page("a-private", "a", "/private/secret", html_page("secret", "/")),
        Page("a-chunked", "a", "/chunked", html_page("chunked", "/about", framing="chunked")),
        Page("a-close", "a", "/close-delimited",
             html_page("close", "/about", framing="close")),
        Page("a-short", "a", "/short", short_body()),
        Page("a-short-cut", "a", "/short-cut", Reply(200, (
            ("Content-Type", "text/html"), ("Content-Length", "5000")), b"<p>" + b"y" * 3000)),
        Page("a-stacked", "a", "/stacked", stacked_codings()),
        Page("a-garbled", "a", "/garbled", bad_status_line(),
             raw=b"HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n"),
        Page("a-huge-header", "a", "/huge-header", oversized_header(),
             raw=b"HTTP/1.1 200 OK\r\nX-Big: " + b"y" * 9000 + b"\r\nContent-Length: 0\r\n\r\n"),
        Page("a-dropped", "a", "/dropped", lost(), raw=b""),
        Page("a-unavailable", "a", "/unavailable",
             reply(503, ("Retry-After", http_date(virtualtime.EPOCH + 120)),
                   ("Content-Type", "text/html"), body=b"<p>later</p>")),
        Page("a-hang", "a", "/hang", HANG, settings={"read_timeout_ms": 300}),
        Page("b-robots", "b", "/robots.txt", reply(404, plain, body=b"none")),
        Page("b-home", "b", "/", html_page("b", a + "/", "/hop")),
        Page("b-hop", "b", "/hop", reply(307, ("Location", a + "/about"))),
        Page("c-robots", "c", "/robots.txt", reply(404, plain, body=b"none")),
        Page("c-busy", "c", "/busy", reply(429, ("Retry-After", "2"))),
        Page("dead-robots", "dead", "/robots.txt", refused()),
        Page("dead-home", "dead", "/", refused()),
    ]  # fmt: skip


PAGES = {page.name: page for page in scripted_site(STAND_IN)}


def fake_site(origins: Mapping[str, str]) -> FakeSite:
    """A ``FakeSite`` scripted with every URL of the site on ``origins``."""
    site = FakeSite()
    for page in scripted_site(origins):
        site.add(origins[page.origin] + page.target, page.answer)
    return site


# ------------------------------------------------------------ the real side


def wire(answer: Reply) -> bytes:
    """``answer`` as a server sends it: the status line with the standard phrase, the
    scripted header lines only, then the body (in chunks of 500 bytes when the
    script says ``Transfer-Encoding: chunked``).

    Raises:
        ValueError: a reply with a delay (``after_s``, ``body_s``): the real server
            does not reproduce timing.
    """
    if answer.after_s or answer.body_s:
        raise ValueError(f"the real server cannot wait as scripted: {answer}")
    try:
        phrase = http.HTTPStatus(answer.status).phrase
    except ValueError:
        phrase = ""
    lines = [f"HTTP/1.1 {answer.status} {phrase}", *(f"{n}: {v}" for n, v in answer.headers)]
    body = answer.body
    if any(n.lower() == "transfer-encoding" for n, _ in answer.headers):
        steps = [body[i : i + 500] for i in range(0, len(body), 500)]
        body = b"".join(b"%x\r\n%s\r\n" % (len(step), step) for step in steps) + b"0\r\n\r\n"
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@dataclass
class Web:
    """The site on real servers: ``origins`` (``a``, ``b``, ``c``: a server each;
    ``dead``: a bound port nobody listens on), ``servers`` by origin name."""

    origins: dict[str, str]
    servers: dict[str, HTTPTestServer]

    def requests(self) -> list[tuple[str, str]]:
        """Every request the servers received since ``clear``: URL and ``Cookie``
        (``""``: none), sorted."""
        return sorted(
            (self.origins[name] + r.path, r.headers.get("cookie", ""))
            for name, server in self.servers.items()
            for r in server.requests
        )

    def clear(self) -> None:
        """Empty the servers' request logs."""
        for server in self.servers.values():
            server.clear()


def _route(
    server: HTTPTestServer, data: bytes | None
) -> Callable[[Request, io.BufferedIOBase], None]:
    """A raw route writing ``data`` (``None``: never answering, until the server
    closes)."""

    def route(request: Request, out: io.BufferedIOBase) -> None:
        if data is None:
            server.wait(3600)  # wakes at close
            return
        out.write(data)

    return route


@pytest.fixture(scope="module")
def web() -> Iterator[Web]:
    """The site on three loopback servers and a refused port, for the module."""
    with (
        HTTPTestServer() as a,
        HTTPTestServer() as b,
        HTTPTestServer() as c,
        socket.socket() as dead,
    ):
        dead.bind(("127.0.0.1", 0))  # bound, not listening: connecting is refused
        servers = {"a": a, "b": b, "c": c}
        origins = {name: server.origin for name, server in servers.items()}
        origins["dead"] = f"http://127.0.0.1:{dead.getsockname()[1]}"
        for page in scripted_site(origins):
            if page.origin == "dead":
                continue
            answer = page.answer
            if isinstance(answer, Fail):
                assert page.raw is not None, page.name
                data: bytes | None = page.raw
            else:
                data = None if answer == HANG else wire(answer)
            server = servers[page.origin]
            server.set_raw(urlsplit(page.target).path, _route(server, data))
        yield Web(origins, servers)


# ---------------------------------------------------------- fetcher level

#: ``FetchResult`` fields compared as they are (``headers`` with lowercased names).
COMPARED = (
    "url", "status", "headers", "body", "content_type", "truncated", "skipped", "sniffed",
    "http_version", "reason", "raw_headers", "wire_body",
)  # fmt: skip
#: ``FetchResult`` fields not compared, and why.
NORMALISED = {
    "elapsed_ms": "virtual time in the fake, wall-clock time in the real fetcher",
    "request_headers": "the fake has none (the session's fields are aiohttp's); the "
    "extra headers are compared in the crawl's request logs",
    "warc": "set by core.storage.archive, not by a fetcher (None from both)",
}


@dataclass(frozen=True)
class Mode:
    """One way the engine calls ``fetch``: ``want_body``, ``max_bytes``, and whether
    the body is streamed (``on_body``) and the reader stops after its first chunk."""

    want_body: Callable[[str], bool] | None = None
    max_bytes: int | None = None
    stream: bool = False
    stop: bool = False


MODES = {
    "page": Mode(want_body=ContentReader.wants_body),  # the engine's page fetch
    "whole": Mode(max_bytes=WHOLE_CAP),  # robots.txt, side requests
    "stream": Mode(stream=True),  # a sitemap
    "stream-stop": Mode(stream=True, stop=True),  # a sitemap reader that stops
}


def record(outcome: FetchResult | FetchError, streamed: list[bytes] | None) -> dict[str, Any]:
    """What the engine consumes of one fetch: the ``COMPARED`` fields and the bytes
    handed to ``on_body`` (``streamed``), or an error's class, ``reason``,
    ``retryable`` and message."""
    if isinstance(outcome, FetchError):
        return {"error": type(outcome).__name__, "reason": outcome.reason,
                "retryable": outcome.retryable, "message": str(outcome)}  # fmt: skip
    fields = {name: getattr(outcome, name) for name in COMPARED}
    fields["headers"] = [(name.lower(), value) for name, value in outcome.headers.items()]
    fields["streamed"] = None if streamed is None else b"".join(streamed)
    return fields


async def fetch_record(
    fetcher: FakeFetcher | AiohttpFetcher, url: str, mode: Mode
) -> dict[str, Any]:
    """``record`` of ``fetcher.fetch(url)`` called as ``mode`` says."""
    streamed: list[bytes] = []

    async def sink(data: bytes) -> bool:
        streamed.append(data)
        return not mode.stop

    on_body: BodySink | None = sink if mode.stream else None
    try:
        result = await fetcher.fetch(
            url, max_bytes=mode.max_bytes, want_body=mode.want_body, on_body=on_body
        )
    except FetchError as exc:
        return record(exc, None)
    return record(result, streamed if mode.stream else None)


def differences(fake: Mapping[str, Any], real: Mapping[str, Any]) -> list[str]:
    """One line per key whose values differ (``<absent>`` for a missing key)."""
    return [
        f"{key}: fake {fake.get(key, '<absent>')!r:.300} != real {real.get(key, '<absent>')!r:.300}"
        for key in sorted(set(fake) | set(real))
        if fake.get(key, "<absent>") != real.get(key, "<absent>")
    ]


def test_every_field_is_compared_or_normalised() -> None:
    """A field added to ``FetchResult`` fails here until it is compared or its
    normalisation is said."""
    names = {f.name for f in dataclasses.fields(FetchResult)}
    assert set(COMPARED) | set(NORMALISED) == names
    assert not set(COMPARED) & set(NORMALISED)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", PAGES)
def test_the_fetchers_agree_on_every_page(web: Web, name: str, mode: str) -> None:
    """The fake (on virtual time) and the aiohttp fetcher (on the real server) give the
    same record for the page, fetched as ``mode`` says."""
    page = {page.name: page for page in scripted_site(web.origins)}[name]
    url = web.origins[page.origin] + page.target
    cfg: CrawlConfig = config(max_body_bytes=MAX_BODY, **page.settings)

    async def through_fake() -> dict[str, Any]:
        site = FakeSite()
        site.add(url, page.answer)
        return await fetch_record(FakeFetcher(site, cfg), url, MODES[mode])

    async def through_real() -> dict[str, Any]:
        async with AiohttpFetcher(cfg) as fetcher:
            return await fetch_record(fetcher, url, MODES[mode])

    fake = virtualtime.run(through_fake())
    real = asyncio.run(through_real())
    assert differences(fake, real) == []


# ------------------------------------------------------------ crawl level

#: Columns not compared, by table, and why: clock readings (virtual in the fake,
#: wall-clock in the real crawl), the order in which URLs were met (the real servers'
#: timing decides it across hosts), and the run's id.
CRAWL_NORMALISED = {
    "pages": {"elapsed_ms": "clock", "fetched_at": "clock", "run_id": "the run"},
    "page_versions": {"fetched_at": "clock", "run_id": "the run"},
    "blocked": {"blocked_at": "clock", "run_id": "the run"},
    "links": {},
    "frontier": {"available_epoch_s": "clock", "seq": "the order URLs were met"},
    "hosts": {"robots_expires_epoch_s": "clock", "backoff_until_epoch_s": "clock",
              "backoff_started_epoch_s": "clock"},
}  # fmt: skip


def tables(db: Path, origins: Mapping[str, str]) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of each table of ``CRAWL_NORMALISED`` in ``db``, sorted, its normalised
    columns left out and every origin (``http://127.0.0.1:PORT``) and host
    (``127.0.0.1:PORT``) written as its name (``<a>``)."""
    names = {o: f"<{k}>" for k, o in origins.items()}
    names |= {urlsplit(o).netloc: f"<{k}>" for k, o in origins.items()}

    def named(value: Any) -> Any:
        if isinstance(value, str):
            for spelled, name in names.items():
                value = value.replace(spelled, name)
        return value

    conn = sqlite3.connect(db)
    try:
        out = {}
        for table, skipped in CRAWL_NORMALISED.items():
            cursor = conn.execute(f"SELECT * FROM {table}")
            keep = [i for i, d in enumerate(cursor.description) if d[0] not in skipped]
            rows = [tuple(named(row[i]) for i in keep) for row in cursor]
            out[table] = sorted(rows, key=repr)
        return out
    finally:
        conn.close()


def fake_crawl(origins: Mapping[str, str], db: Path) -> FakeSite:
    """Crawl the site from ``a``'s home page over the fake into ``db``; the site, for
    its request log."""
    site = fake_site(origins)
    virtualtime.run(acrawl(site, [origins["a"] + "/"], db, **CRAWL))
    return site


def test_the_crawls_agree(web: Web, tmp_path: Path) -> None:
    """The engine over the fake and over the real servers records the same rows, and
    each site receives the same requests (those to the refused port are not seen)."""
    site = fake_crawl(web.origins, tmp_path / "fake.db")
    web.clear()
    store = Store(tmp_path / "real.db", flush_interval_ms=10)
    try:
        engine = Engine(config(**CRAWL), store)
        assert engine.add_seeds([web.origins["a"] + "/"]) == []
        asyncio.run(engine.run())
    finally:
        store.close()
    fake, real = (
        tables(tmp_path / "fake.db", web.origins),
        tables(tmp_path / "real.db", web.origins),
    )
    for table in CRAWL_NORMALISED:
        only_fake = [row for row in fake[table] if row not in real[table]]
        only_real = [row for row in real[table] if row not in fake[table]]
        assert (table, only_fake, only_real) == (table, [], [])
    scripted = {web.origins[page.origin] + page.target for page in scripted_site(web.origins)}
    assert {r.url for r in site.requests} <= scripted  # unscripted ones are answered apart
    dead = web.origins["dead"]
    asked = sorted((r.url, r.headers.get("Cookie", "")) for r in site.requests if r.origin != dead)
    assert asked == web.requests()


def test_the_fake_crawl_records_what_the_script_means(tmp_path: Path) -> None:
    """The crawl over the fake alone (fast tier): every case of the site shows as
    meant, so the comparison above cannot pass on a site that lost one."""
    site = fake_crawl(STAND_IN, tmp_path / "c.db")
    rows = tables(tmp_path / "c.db", STAND_IN)
    conn = sqlite3.connect(tmp_path / "c.db")
    try:
        pages = {
            url: (status, final, (error or "").split(":")[0], noindex)
            for url, final, status, error, noindex in conn.execute(
                "SELECT url, final_url, status, error, noindex FROM pages"
            )
        }
    finally:
        conn.close()
    a, b, c, dead = (STAND_IN[k] for k in ("a", "b", "c", "dead"))
    itself = {url: (status, url, error, 0) for url, status, error in [
        (a + "/", 200, ""), (a + "/final?x=1", 200, ""), (a + "/missing", 404, ""),
        (a + "/doc.pdf", 200, ""), (a + "/big", 200, "body_too_large"),
        (a + "/packed", 200, ""), (a + "/packed-big", 200, "body_too_large"),
        (a + "/sniffed", 200, ""), (a + "/chunked", 200, ""),
        (a + "/close-delimited", 200, ""), (a + "/short", None, "protocol"),
        (a + "/short-cut", 200, "body_too_large"),
        (a + "/stacked", None, "protocol"), (a + "/garbled", None, "protocol"),
        (a + "/huge-header", None, "protocol"), (a + "/dropped", None, "connection_lost"),
        (b + "/", 200, ""), (c + "/busy", 429, "gave up after 1 tries"),
        (dead + "/", None, "connect"),
    ]}  # fmt: skip
    assert pages == itself | {
        a + "/about": (200, a + "/about", "", 1),  # X-Robots-Tag: noindex
        a + "/docs/old": (301, a + "/docs/moved/one", "", 0),  # Location: moved/one
        a + "/docs/moved/one": (302, a + "/final?x=1", "", 0),  # Location: ../../final?x=1
        b + "/hop": (307, a + "/about", "", 0),
    }
    assert [(row[0], row[2]) for row in rows["blocked"]] == [("<a>/private/secret", "robots")]
    assert site.count(a + "/private/secret") == 0
    assert site.count(a + "/unavailable") == site.count(a + "/hang") == 0
    # the cookie set by the chain's second hop goes with its last hop only
    cookies = {r.url: r.headers["Cookie"] for r in site.requests if "Cookie" in r.headers}
    assert cookies == {a + "/final?x=1": "seen=1"}
    links = {(source, target) for source, target, _anchor in rows["links"]}
    assert ("<a>/sniffed", "<a>/about") in links  # the sniffed page was parsed
    assert ("<a>/packed-big", "<a>/about") in links  # a cut page's links are kept
    assert not any(source == "<a>/doc.pdf" for source, _ in links)  # not HTML, not read
