"""The helpers that ``tests/unit/test_fetcher_conformance.py`` and
``tests/loopback/test_fetcher_conformance.py`` share: one subject's tests, split by tier
(issue #24 item 8)."""

from __future__ import annotations

import gzip
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import virtualtime
from fakesite import (
    HANG,
    Fail,
    FakeSite,
    Reply,
    acrawl,
    bad_status_line,
    http_date,
    lost,
    oversized_header,
    refused,
    short_body,
    stacked_codings,
)

#: The body cap of every fetch and crawl here (the config's least is 1024).
MAX_BODY = 2048


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


def fake_site(origins: Mapping[str, str]) -> FakeSite:
    """A ``FakeSite`` scripted with every URL of the site on ``origins``."""
    site = FakeSite()
    for page in scripted_site(origins):
        site.add(origins[page.origin] + page.target, page.answer)
    return site


# ---------------------------------------------------------- fetcher level

#: ``FetchResult`` fields compared as they are (``headers`` with lowercased names).
COMPARED = (
    "url", "status", "headers", "body", "content_type", "truncated", "skipped", "sniffed",
    "http_version", "reason", "raw_headers", "wire_body",
)  # fmt: skip


# ------------------------------------------------------------ crawl level

#: Columns not compared, by table, and why: clock readings (virtual in the fake,
#: wall-clock in the real crawl), the order in which URLs were met or fetched (the real
#: servers' timing decides it: which of a host's like pages came first and is the one
#: the others name as their duplicate, ``duplicate_groups`` compares those), and the
#: run's id.
CRAWL_NORMALISED = {
    "pages": {"elapsed_ms": "clock", "fetched_at": "clock", "run_id": "the run",
              "duplicate_of": "the order pages were fetched",
              "near_duplicate_of": "the order pages were fetched"},
    "page_versions": {"fetched_at": "clock", "run_id": "the run"},
    "blocked": {"blocked_at": "clock", "run_id": "the run"},
    "links": {},
    "frontier": {"available_epoch_s": "clock", "seq": "the order URLs were met"},
    "hosts": {"robots_expires_epoch_s": "clock", "backoff_until_epoch_s": "clock",
              "backoff_started_epoch_s": "clock"},
}  # fmt: skip


def namer(origins: Mapping[str, str]) -> Callable[[Any], Any]:
    """A value with every origin (``http://127.0.0.1:PORT``) and host
    (``127.0.0.1:PORT``) of ``origins`` written as its name (``<a>``); a value that is
    no text as it is."""
    names = {o: f"<{k}>" for k, o in origins.items()}
    names |= {urlsplit(o).netloc: f"<{k}>" for k, o in origins.items()}

    def named(value: Any) -> Any:
        if isinstance(value, str):
            for spelled, name in names.items():
                value = value.replace(spelled, name)
        return value

    return named


def tables(db: Path, origins: Mapping[str, str]) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of each table of ``CRAWL_NORMALISED`` in ``db``, sorted, its normalised
    columns left out and every origin and host written as its name (``namer``)."""
    named = namer(origins)
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


def duplicate_groups(db: Path, origins: Mapping[str, str]) -> dict[str, list[list[str]]]:
    """Per column (``duplicate_of``, ``near_duplicate_of``), the pages of ``db`` that
    column joins, as groups (connected through the column's links, whichever page of a
    group was fetched first), each sorted, named as in ``tables``."""
    named = namer(origins)
    conn = sqlite3.connect(db)
    try:
        out = {}
        for column in ("duplicate_of", "near_duplicate_of"):
            group: dict[str, set[str]] = {}
            query = f"SELECT url, {column} FROM pages WHERE {column} IS NOT NULL"
            for url, of in conn.execute(query):
                joined = group.get(named(url), {named(url)}) | group.get(named(of), {named(of)})
                for member in joined:
                    group[member] = joined
            unique = {tuple(sorted(g)) for g in group.values()}
            out[column] = sorted(list(g) for g in unique)
        return out
    finally:
        conn.close()


def fake_crawl(origins: Mapping[str, str], db: Path) -> FakeSite:
    """Crawl the site from ``a``'s home page over the fake into ``db``; the site, for
    its request log."""
    site = fake_site(origins)
    virtualtime.run(acrawl(site, [origins["a"] + "/"], db, **CRAWL))
    return site
