"""Hostile hosts for tests and benchmarks: one ``HTTPTestServer`` route set per kind of
hostile answer (issue #22 item 1), no pytest needed.

Each kind is a function ``install(srv)`` that puts its routes on a real loopback
``HTTPTestServer`` (``tests/httpserver.py``): ``/`` is the hostile page or the way into
it, ``/robots.txt`` allows everything unless the kind is about robots.txt (then it is
the hostile one), and the sitemap kinds name their hostile sitemap in robots.txt.
``KINDS`` maps a kind's name to its installer, in the order of the issue's list.

Sizes (decoded bytes): ``BIG`` 20 MB for a big page, 100 000 links, a 10 MB ``href``,
100 000 nested tags, bombs that expand to ``BOMB`` 1 GiB (about 1 MB on the wire per
layer), endless bodies cut by the server after ``ENDLESS`` 2 GiB, a drip of one byte
every ``DRIP_S`` for at most ``DRIP_MAX_S``. Every handler ends: an endless one stops
when the client hangs up, at its cap, or when the server closes (``srv.wait``).
Compressed bodies are built once per process (``functools.cache``).
"""

from __future__ import annotations

import functools
import gzip
import io
import zlib
from collections.abc import Callable

import brotli
from httpserver import HTTPTestServer, Request, Response

#: Decoded size of the big page (bytes).
BIG = 20_000_000
#: Links on the many-links page.
LINKS = 100_000
#: Length of the huge ``href`` (bytes).
HUGE_ATTR = 10_000_000
#: Nesting depth of the deep page.
DEPTH = 100_000
#: What a bomb expands to (bytes).
BOMB = 1 << 30
#: Where the server stops an endless body (bytes).
ENDLESS = 2 << 30
#: Seconds between two bytes of a drip, and the longest a drip lasts.
DRIP_S = 0.5
DRIP_MAX_S = 120.0
#: Length of one huge ``Location`` header value (bytes), and of the redirect chain.
HUGE_LOCATION = 1_000_000
CHAIN_LOCATION = 8_000

HTML = {"Content-Type": "text/html; charset=utf-8"}
ALLOW_ALL = Response(200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n")


#: What a page bomb starts with, and a sitemap bomb (sitemaps.org's ``urlset``).
PAGE_START = b"<html><body><p>"
SITEMAP_START = (
    b'<?xml version="1.0" encoding="UTF-8"?>'
    b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>'
)


def _zeros_stream(
    size: int, start: bytes, compressor: Callable[[bytes], bytes], tail: Callable[[], bytes]
) -> bytes:
    """``start`` then ``size`` bytes of ``a``, compressed by ``compressor`` 1 MiB at a time."""
    out = io.BytesIO()
    chunk = b"a" * (1 << 20)
    out.write(compressor(start))
    for _ in range(size >> 20):
        out.write(compressor(chunk))
    out.write(tail())
    return out.getvalue()


@functools.cache
def gzip_bomb(size: int = BOMB, start: bytes = PAGE_START) -> bytes:
    """A gzip member (RFC 1952) that expands to ``start`` and ``size`` bytes."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    return _zeros_stream(size, start, z.compress, z.flush)


@functools.cache
def deflate_bomb(size: int = BOMB, start: bytes = PAGE_START) -> bytes:
    """A zlib stream (RFC 1950, HTTP's ``deflate``) that expands to ``start`` and
    ``size`` bytes."""
    z = zlib.compressobj(9)
    return _zeros_stream(size, start, z.compress, z.flush)


@functools.cache
def brotli_bomb(size: int = BOMB, start: bytes = PAGE_START) -> bytes:
    """A brotli stream (RFC 7932) that expands to ``start`` and ``size`` bytes."""
    b = brotli.Compressor(quality=5)
    return _zeros_stream(size, start, b.process, b.finish)


@functools.cache
def gzip_in_gzip(size: int = BOMB) -> bytes:
    """A gzip member whose content is a gzip bomb of a sitemap: a .xml.gz gzipped again."""
    return gzip.compress(gzip_bomb(size, SITEMAP_START), 9)


def _robots(srv: HTTPTestServer, *lines: str) -> None:
    srv.set(
        "/robots.txt",
        Response(
            200,
            {"Content-Type": "text/plain"},
            ("User-agent: *\nAllow: /\n" + "".join(f"{line}\n" for line in lines)).encode(),
        ),
    )


def big_page(srv: HTTPTestServer) -> None:
    """``/``: a 20 MB HTML page of text with two links."""
    filler = b"<p>" + b"lorem ipsum dolor sit amet " * 40 + b"</p>\n"
    body = b'<html><body><a href="/a">a</a>' + filler * (BIG // len(filler)) + b'<a href="/b">b</a>'
    srv.set("/", Response(200, HTML, body))
    srv.set("/robots.txt", ALLOW_ALL)


def many_links(srv: HTTPTestServer) -> None:
    """``/``: one page of 100 000 distinct same-host links (``/l/N``), which robots.txt
    disallows (so a crawl that takes them all does not fetch them all)."""
    links = "".join(f'<a href="/l/{i}">{i}</a>\n' for i in range(LINKS))
    srv.set("/", Response(200, HTML, f"<html><body>{links}</body></html>".encode()))
    srv.set(
        "/robots.txt",
        Response(200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /l/\n"),
    )


def huge_attribute(srv: HTTPTestServer) -> None:
    """``/``: a page whose one link has a 10 MB ``href``."""
    body = b'<html><body><a href="/' + b"x" * HUGE_ATTR + b'">x</a></body></html>'
    srv.set("/", Response(200, HTML, body))
    srv.set("/robots.txt", ALLOW_ALL)


def deep_nesting(srv: HTTPTestServer) -> None:
    """``/``: 100 000 nested ``<div>`` (lexbor's quadratic case; ``core.net.parse``)."""
    body = b"<html><body>" + b"<div>" * DEPTH + b'<a href="/in">in</a>' + b"</div>" * DEPTH
    srv.set("/", Response(200, HTML, body))
    srv.set("/robots.txt", ALLOW_ALL)


def _bomb_page(coding: str, body: Callable[[], bytes]) -> Callable[[HTTPTestServer], None]:
    def install(srv: HTTPTestServer) -> None:
        srv.set("/", Response(200, {**HTML, "Content-Encoding": coding}, body()))
        srv.set("/robots.txt", ALLOW_ALL)

    install.__doc__ = f"``/``: an HTML page that is a {coding} bomb of 1 GiB."
    return install


gzip_bomb_page = _bomb_page("gzip", gzip_bomb)
deflate_bomb_page = _bomb_page("deflate", deflate_bomb)
brotli_bomb_page = _bomb_page("br", brotli_bomb)


def _endless(
    srv: HTTPTestServer, content_type: str, start: bytes = PAGE_START
) -> Callable[[Request, io.BufferedIOBase], None]:
    def write(request: Request, out: io.BufferedIOBase) -> None:
        out.write(
            f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nConnection: close\r\n\r\n".encode()
            + start
        )
        chunk = b"<p>" + b"a" * (64 * 1024 - 3)
        sent = 0
        try:
            while sent < ENDLESS and not srv.wait(0):
                out.write(chunk)
                sent += len(chunk)
        except OSError:
            return  # the client hung up: what it should do

    return write


def endless_body(srv: HTTPTestServer) -> None:
    """``/``: an HTML body with no length that never ends (cut by the server at 2 GiB)."""
    srv.set_raw("/", _endless(srv, "text/html"))
    srv.set("/robots.txt", ALLOW_ALL)


def drip(srv: HTTPTestServer) -> None:
    """``/``: an HTML body sent one byte every ``DRIP_S`` seconds (at most ``DRIP_MAX_S``)."""

    def write(request: Request, out: io.BufferedIOBase) -> None:
        out.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n")
        try:
            for _ in range(int(DRIP_MAX_S / DRIP_S)):
                out.write(b"a")
                out.flush()
                if srv.wait(DRIP_S):
                    return
        except OSError:
            return

    srv.set_raw("/", write)
    srv.set("/robots.txt", ALLOW_ALL)


def _ok_root(srv: HTTPTestServer) -> None:
    srv.set("/", Response(200, HTML, b'<html><body><a href="/a">a</a></body></html>'))


def robots_huge(srv: HTTPTestServer) -> None:
    """``/robots.txt``: 50 MB of ``Disallow`` lines (RFC 9309 asks for 500 KiB at least)."""
    line = b"Disallow: /private/" + b"x" * 80 + b"\n"
    srv.set(
        "/robots.txt",
        Response(
            200,
            {"Content-Type": "text/plain"},
            b"User-agent: *\n" + line * (50_000_000 // len(line)),
        ),
    )
    _ok_root(srv)


def robots_bomb(srv: HTTPTestServer) -> None:
    """``/robots.txt``: a gzip bomb of 1 GiB."""
    srv.set(
        "/robots.txt",
        Response(200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, gzip_bomb()),
    )
    _ok_root(srv)


def redirect_loop(srv: HTTPTestServer) -> None:
    """``/``: an endless redirect chain (``/r/N`` to ``/r/N+1``), each ``Location`` 8 KB
    long (about aiohttp's header line cap), and ``/huge``: one redirect with a 1 MB
    ``Location``, linked from ``/``."""

    def hop(request: Request) -> Response:
        n = (
            int(request.path.split("?", 1)[0].rsplit("/", 1)[1])
            if request.path.startswith("/r/")
            else 0
        )
        pad = "q" * CHAIN_LOCATION
        return Response(302, {"Location": f"/r/{n + 1}?{pad}"}, b"")

    srv.set("/", Response(200, HTML, b'<html><body><a href="/r/0">r</a><a href="/huge">h</a>'))
    for n in range(200):
        srv.set(f"/r/{n}", hop)
    srv.set("/huge", Response(302, {"Location": "/" + "z" * HUGE_LOCATION}, b""))
    srv.set("/robots.txt", ALLOW_ALL)


def _sitemap(
    path: str, headers: dict[str, str], body: Callable[[], bytes]
) -> Callable[[HTTPTestServer], None]:
    def install(srv: HTTPTestServer) -> None:
        _robots(srv, f"Sitemap: {srv.url(path)}")
        srv.set(path, Response(200, headers, body()))
        _ok_root(srv)

    return install


sitemap_gzip_bomb = _sitemap(
    "/sitemap.xml",
    {"Content-Type": "application/xml", "Content-Encoding": "gzip"},
    lambda: gzip_bomb(BOMB, SITEMAP_START),
)
sitemap_gzip_bomb.__doc__ = "``/sitemap.xml`` (named in robots.txt): a gzip bomb of 1 GiB."
sitemap_deflate_bomb = _sitemap(
    "/sitemap.xml",
    {"Content-Type": "application/xml", "Content-Encoding": "deflate"},
    lambda: deflate_bomb(BOMB, SITEMAP_START),
)
sitemap_deflate_bomb.__doc__ = "``/sitemap.xml`` (named in robots.txt): a deflate bomb of 1 GiB."
sitemap_gzip_in_gzip = _sitemap(
    "/sitemap.xml.gz",
    {"Content-Type": "application/gzip", "Content-Encoding": "gzip"},
    gzip_in_gzip,
)
sitemap_gzip_in_gzip.__doc__ = "``/sitemap.xml.gz`` sent gzipped: gzip inside gzip, 1 GiB inside."


def sitemap_endless(srv: HTTPTestServer) -> None:
    """``/sitemap.xml`` (named in robots.txt): a stream with no length that never ends."""
    _robots(srv, f"Sitemap: {srv.url('/sitemap.xml')}")
    srv.set_raw("/sitemap.xml", _endless(srv, "application/xml", SITEMAP_START))
    _ok_root(srv)


#: Every kind by name, in the issue's order: pages, robots.txt, redirects, sitemaps.
KINDS: dict[str, Callable[[HTTPTestServer], None]] = {
    "big-page": big_page,
    "many-links": many_links,
    "huge-attribute": huge_attribute,
    "deep-nesting": deep_nesting,
    "gzip-bomb": gzip_bomb_page,
    "deflate-bomb": deflate_bomb_page,
    "brotli-bomb": brotli_bomb_page,
    "endless-body": endless_body,
    "drip": drip,
    "robots-huge": robots_huge,
    "robots-bomb": robots_bomb,
    "redirect-loop": redirect_loop,
    "sitemap-gzip-bomb": sitemap_gzip_bomb,
    "sitemap-deflate-bomb": sitemap_deflate_bomb,
    "sitemap-gzip-in-gzip": sitemap_gzip_in_gzip,
    "sitemap-endless": sitemap_endless,
}

__all__ = ["KINDS"]
