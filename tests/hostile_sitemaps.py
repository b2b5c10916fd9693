"""Hostile sitemaps served by a loopback ``HTTPTestServer`` (no pytest needed), for the
sitemap tests and the memory benchmark: each kind is a path on the server, its answer
built once and cached (a bomb is about 100 KB on the wire).

Usage::

    with HTTPTestServer() as srv:
        paths = install(srv)          # {"gzip_bomb": "/gzip-bomb.xml", ...}
        robots = robots_txt(srv, paths.values())   # a robots.txt naming them all

Kinds (``KINDS``):

* ``gzip_bomb``: ``Content-Encoding: gzip``, one member inflating to ``BOMB_BYTES``
  (a ``<urlset>`` then spaces); ``deflate_bomb`` the same as ``deflate`` (zlib).
* ``gzip_in_gzip``: a ``.xml.gz`` file (no content coding) whose content is the gzip
  bomb's gzip bytes: a gzip file inside a gzip file.
* ``endless_line``: a ``.txt.gz`` file (no content coding): a text sitemap of one line
  of ``BOMB_BYTES`` with no end.
* ``endless``: ``<urlset>`` then spaces, close-delimited, 1 MiB a write, until the
  client hangs up (at most ``ENDLESS_BYTES``).
* ``drip``: one ``<url>`` at once, then one byte a second (at most ``DRIP_BYTES``).
* ``huge_loc``: a ``<loc>`` of ``HUGE_BYTES`` characters, then one good ``<url>``.
* ``huge_attribute``: a root element with an attribute of ``HUGE_BYTES`` characters.
* ``deep_nesting``: 100 000 nested elements in a ``<urlset>``.
* ``many_urls``: 50 001 ``<url>`` entries (50 distinct URLs, listed again and again).
"""

from __future__ import annotations

import functools
import gzip
import zlib
from collections.abc import Callable, Iterable
from typing import Any

from httpserver import HTTPTestServer, Request, Response

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
#: What a bomb inflates to, bytes (twice the protocol's 50 MiB).
BOMB_BYTES = 100 * 1024 * 1024
#: The most an endless body sends, bytes.
ENDLESS_BYTES = 1024 * 1024 * 1024
#: The most a drip sends after its first ``<url>``, one byte a second.
DRIP_BYTES = 600
#: The length of a huge ``<loc>`` or attribute, characters.
HUGE_BYTES = 10 * 1024 * 1024
#: Entries of ``many_urls`` (one more than the protocol's 50 000).
MANY = 50_001

KINDS = (
    "gzip_bomb",
    "deflate_bomb",
    "gzip_in_gzip",
    "endless_line",
    "endless",
    "drip",
    "huge_loc",
    "huge_attribute",
    "deep_nesting",
    "many_urls",
)

_MIB = 1024 * 1024
_HEAD = f'<?xml version="1.0"?><urlset xmlns="{NS}">'.encode()


def _compressed(wbits: int, head: bytes = _HEAD, fill: bytes = b" ") -> bytes:
    """``head`` and ``fill`` bytes up to ``BOMB_BYTES``, compressed as one stream."""
    z = zlib.compressobj(9, zlib.DEFLATED, wbits)
    parts = [z.compress(head)]
    spaces = fill * _MIB
    parts += [z.compress(spaces) for _ in range(BOMB_BYTES // _MIB)]
    parts.append(z.flush())
    return b"".join(parts)


@functools.cache
def gzip_bomb() -> bytes:
    """The gzip bytes of the bomb (one member)."""
    return _compressed(16 + zlib.MAX_WBITS)


@functools.cache
def deflate_bomb() -> bytes:
    """The zlib-wrapped deflate bytes of the bomb (``Content-Encoding: deflate``)."""
    return _compressed(zlib.MAX_WBITS)


@functools.cache
def gzip_in_gzip() -> bytes:
    """A gzip file whose content is the gzip bomb."""
    return gzip.compress(gzip_bomb(), 9)


@functools.cache
def endless_line() -> bytes:
    """A gzip file of one text line with no end (``http://a.test/`` and ``a`` bytes)."""
    return _compressed(16 + zlib.MAX_WBITS, b"http://a.test/", b"a")


def _urlset(body: str) -> bytes:
    return f'<urlset xmlns="{NS}">{body}</urlset>'.encode()


def _endless(srv: HTTPTestServer) -> Callable[[Request, Any], None]:
    def route(req: Request, out: Any) -> None:
        out.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n\r\n" + _HEAD)
        spaces = b" " * _MIB
        try:
            for _ in range(ENDLESS_BYTES // _MIB):
                if srv.wait(0):
                    return
                out.write(spaces)
        except OSError:
            return  # the client hung up

    return route


def _drip(srv: HTTPTestServer) -> Callable[[Request, Any], None]:
    first = f"<url><loc>{srv.url('/dripped')}</loc></url>".encode()

    def route(req: Request, out: Any) -> None:
        out.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n\r\n" + _HEAD + first)
        out.flush()
        try:
            for _ in range(DRIP_BYTES):
                if srv.wait(1.0):
                    return
                out.write(b" ")
                out.flush()
        except OSError:
            return

    return route


def install(srv: HTTPTestServer, prefix: str = "/") -> dict[str, str]:
    """Serve every kind on ``srv`` under ``prefix``; the path of each kind. The pages
    they list that exist (``/dripped``, ``/good``, ``/u0`` ... ``/u49``) are served
    too, as small HTML pages."""
    xml = {"Content-Type": "application/xml"}
    paths = {kind: f"{prefix}{kind.replace('_', '-')}.xml" for kind in KINDS}
    paths["gzip_in_gzip"] += ".gz"
    paths["endless_line"] = f"{prefix}endless-line.txt.gz"
    srv.set(paths["gzip_bomb"], Response(200, {**xml, "Content-Encoding": "gzip"}, gzip_bomb()))
    srv.set(
        paths["deflate_bomb"],
        Response(200, {**xml, "Content-Encoding": "deflate"}, deflate_bomb()),
    )
    srv.set(
        paths["gzip_in_gzip"], Response(200, {"Content-Type": "application/gzip"}, gzip_in_gzip())
    )
    srv.set(
        paths["endless_line"], Response(200, {"Content-Type": "application/gzip"}, endless_line())
    )
    srv.set_raw(paths["endless"], _endless(srv))
    srv.set_raw(paths["drip"], _drip(srv))
    good = f"<url><loc>{srv.url('/good')}</loc></url>"
    huge = f"<url><loc>{srv.url('/')}{'a' * HUGE_BYTES}</loc></url>{good}"
    srv.set(paths["huge_loc"], Response(200, xml, _urlset(huge)))
    attribute = f'<urlset xmlns="{NS}" x="{"a" * HUGE_BYTES}">{good}</urlset>'.encode()
    srv.set(paths["huge_attribute"], Response(200, xml, attribute))
    nested = good + "<a>" * 100_000 + "</a>" * 100_000
    srv.set(paths["deep_nesting"], Response(200, xml, _urlset(nested)))
    many = "".join(f"<url><loc>{srv.url(f'/u{i % 50}')}</loc></url>" for i in range(MANY))
    srv.set(paths["many_urls"], Response(200, xml, _urlset(many)))
    page = Response(200, {"Content-Type": "text/html"}, b"<html><body>listed</body></html>")
    for path in ["/dripped", "/good", *(f"/u{i}" for i in range(50))]:
        srv.set(path, page)
    return paths


def robots_txt(srv: HTTPTestServer, paths: Iterable[str]) -> Response:
    """A robots.txt allowing all and naming the sitemaps at ``paths`` of ``srv``."""
    lines = "".join(f"Sitemap: {srv.url(path)}\n" for path in paths)
    return Response(200, {"Content-Type": "text/plain"}, f"User-agent: *\n{lines}".encode())


__all__ = [
    "BOMB_BYTES",
    "DRIP_BYTES",
    "ENDLESS_BYTES",
    "HUGE_BYTES",
    "KINDS",
    "MANY",
    "deflate_bomb",
    "endless_line",
    "gzip_bomb",
    "gzip_in_gzip",
    "install",
    "robots_txt",
]
