"""Serve a directory tree (e.g. Debian's Python or Django HTML docs) as one loopback host.

``StaticSite(Path("/usr/share/doc/python3/html"), "127.78.0.1").start()`` serves the
tree at ``http://127.78.0.1:PORT/`` with the content types a crawler expects,
``index.html`` for directories (a directory without its trailing slash gets a 301 to
it, as Apache and nginx do), 404 for anything else, and an :class:`AccessLog` like
the hosts of :class:`localweb.web.LocalWeb`. :func:`serve_static` serves one tree
under several addresses on a shared port, for crawls across many hosts.

Conditional requests (RFC 9110 §13): every file is served with a strong ``ETag`` (a
hash of its bytes, so a rewrite of the same size within one timestamp tick still
changes it) and a ``Last-Modified`` (its mtime). A GET or HEAD whose ``If-None-Match``
lists that tag (weak comparison, §13.1.2; ``*`` matches any file) is answered
``304 Not Modified`` with no body; ``If-Modified-Since`` (§13.1.3) is evaluated only
without ``If-None-Match`` (§13.2.2 step 4: If-None-Match wins), and only when it is one
valid HTTP-date. The 304 carries the ``ETag`` (§15.4.5). The access log has the 304s
(``status``), and :attr:`StaticSite.body_bytes` counts the body bytes handed to the
server for GET requests, so a test can tell a recrawl that downloaded nothing.
"""

from __future__ import annotations

import email.utils
import hashlib
import mimetypes
import posixpath
import re
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import unquote

from crawldeck.localweb.server import Access, AccessLog, HostServer, Request, Response, start_hosts

__all__ = [
    "CONTENT_TYPES",
    "StaticSite",
    "content_type_for",
    "entity_tag",
    "not_modified",
    "serve_static",
]

#: One entity tag of an ``If-None-Match`` list: ``W/"x"`` or ``"x"`` (RFC 9110 §8.8.3).
_ENTITY_TAG = re.compile(r'\s*(W/)?("[\x21\x23-\x7e\x80-\xff]*")\s*(?:,|$)')

CONTENT_TYPES: dict[str, str] = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".txt": "text/plain; charset=utf-8",
    ".xml": "application/xml",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".ico": "image/vnd.microsoft.icon",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".pdf": "application/pdf",
    ".csv": "text/csv; charset=utf-8",
    ".zip": "application/zip",
    ".gz": "application/gzip",
    ".bz2": "application/x-bzip2",
    ".inv": "application/octet-stream",
}
"""File suffix (lower case) -> ``Content-Type``; checked before :mod:`mimetypes`."""


def content_type_for(path: Path | str) -> str:
    """The ``Content-Type`` for a file name: :data:`CONTENT_TYPES`, then
    :func:`mimetypes.guess_type`, then ``application/octet-stream``."""
    suffix = Path(path).suffix.lower()
    if suffix in CONTENT_TYPES:
        return CONTENT_TYPES[suffix]
    guessed, _ = mimetypes.guess_type(str(path), strict=False)
    return guessed or "application/octet-stream"


def entity_tag(body: bytes) -> str:
    """The strong entity tag of a file's bytes: ``"<32 hex digits>"`` (BLAKE2b, 16
    bytes), quotes included, as sent in ``ETag`` (RFC 9110 §8.8.3)."""
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def _opaque_tags(field: str) -> list[str] | None:
    """The opaque tags (quotes kept, ``W/`` dropped: weak comparison) of an
    ``If-None-Match`` value, ``["*"]`` for ``*``; ``None`` when it does not parse
    (the field is then ignored)."""
    text = field.strip()
    if text == "*":
        return ["*"]
    tags: list[str] = []
    pos = 0
    while pos < len(text):
        match = _ENTITY_TAG.match(text, pos)
        if match is None or match.end() == pos:
            return None
        tags.append(match.group(2))
        pos = match.end()
    return tags or None


def not_modified(method: str, headers: Mapping[str, str], etag: str, last_modified_s: int) -> bool:
    """Whether a request for a file with ``etag`` and ``last_modified_s`` (whole epoch
    seconds) is answered 304 Not Modified (RFC 9110 §13.2.2 steps 3-4).

    Args:
        method: the request method; only ``GET`` and ``HEAD`` get a 304.
        headers: request headers, lower-case names.
        etag: the file's strong entity tag, quotes included.
        last_modified_s: the file's ``Last-Modified`` as epoch seconds.

    ``If-None-Match`` (§13.1.2): true when one of its tags equals ``etag`` by weak
    comparison, or it is ``*``; when present (and parsable) ``If-Modified-Since`` is
    not looked at. ``If-Modified-Since`` (§13.1.3): true when the file was not modified
    after its date; ignored unless it is one valid HTTP-date. Never raises.
    """
    if method not in ("GET", "HEAD"):
        return False
    inm = headers.get("if-none-match")
    if inm is not None:
        tags = _opaque_tags(inm)
        if tags is not None:
            return "*" in tags or etag in tags
    ims = headers.get("if-modified-since")
    if ims is None or "," in ims.partition(",")[2]:  # more than one member
        return False
    try:
        since = email.utils.parsedate_to_datetime(ims)
    except (TypeError, ValueError):
        return False
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    return last_modified_s <= since.timestamp()


class StaticSite:
    """One host serving the files under ``root`` (see the module docstring).

    Nothing is bound until :meth:`start`; :meth:`stop` (idempotent, also on ``with``
    exit) closes every socket and joins every thread.
    """

    def __init__(
        self,
        root: Path,
        address: str = "127.0.0.1",
        port: int = 0,
        robots_txt: str | None = None,
    ) -> None:
        """Configure the site.

        Args:
            root: the directory served as ``/``.
            address: the IPv4 loopback address to bind, e.g. ``"127.78.0.1"``.
            port: the TCP port; ``0`` lets the OS choose.
            robots_txt: the body of ``/robots.txt``; ``None`` serves ``root/robots.txt``
                if the file exists, else 404.
        """
        self.root = Path(root)
        if not self.root.is_dir():
            raise NotADirectoryError(f"StaticSite: {self.root} is not a directory")
        self.address = address
        self.robots_txt = robots_txt
        self._port = port
        self._server: HostServer | None = None
        self._lock = threading.Lock()
        self._body_bytes = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Bind and serve in a background thread; returns ``self`` (``OSError`` if
        ``address:port`` is taken)."""
        if self._server is None:
            self._attach(HostServer(self.address, self._port, self.handle, name=self.address))
        assert self._server is not None
        self._server.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the socket and threads (idempotent)."""
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> Self:
        """Start and return ``self``."""
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop."""
        self.stop()

    def _attach(self, server: HostServer) -> None:
        self._server = server

    # ------------------------------------------------------------------ views

    def _bound(self) -> HostServer:
        if self._server is None:
            raise RuntimeError("StaticSite is not started")
        return self._server

    @property
    def port(self) -> int:
        """The bound TCP port (after :meth:`start`)."""
        return self._bound().port

    @property
    def host_key(self) -> str:
        """``address:port``, e.g. ``"127.78.0.1:40123"``."""
        return self._bound().host_key

    @property
    def base_url(self) -> str:
        """``http://address:port`` without a trailing slash."""
        return self._bound().base_url

    @property
    def log(self) -> AccessLog:
        """The access log of this host."""
        return self._bound().log

    def access_log(self) -> list[Access]:
        """Every request answered so far, in the order the answers started (a copy)."""
        return self._bound().log.entries()

    @property
    def body_bytes(self) -> int:
        """Body bytes of every answer to a GET so far (a 304 adds 0), in bytes."""
        with self._lock:
            return self._body_bytes

    # ------------------------------------------------------------------ serving

    def handle(self, request: Request) -> Response:
        """Answer one request from the tree (a :data:`localweb.server.Handler`)."""
        response = self._answer(request)
        if request.method == "GET":
            with self._lock:
                self._body_bytes += len(response.body)
        return response

    def _answer(self, request: Request) -> Response:
        try:
            raw_path = unquote(request.path, errors="strict")
        except UnicodeDecodeError:
            return Response.error(400)
        if "\x00" in raw_path or not raw_path.startswith("/"):
            return Response.error(400)
        if raw_path == "/robots.txt" and self.robots_txt is not None:
            return Response.text(self.robots_txt)
        # Lexical normalisation: a leading "/" absorbs every "..", so the result stays
        # under root; symbolic links inside the tree are followed (Debian's docs use them).
        relative = posixpath.normpath(raw_path).lstrip("/")
        target = self.root / relative if relative not in ("", ".") else self.root
        try:
            if target.is_dir():
                if not raw_path.endswith("/"):
                    query = request.target.partition("?")[2]
                    location = request.path + "/" + (f"?{query}" if query else "")
                    return Response.redirect(location, 301)
                target = target / "index.html"
            elif raw_path.endswith("/"):
                return Response.error(404)
            if not target.is_file():
                return Response.error(404)
            body = target.read_bytes()
            modified_s = int(target.stat().st_mtime)
        except (OSError, ValueError):
            return Response.error(404)
        etag = entity_tag(body)
        if not_modified(request.method, request.headers, etag, modified_s):
            return Response(304, b"", "", [("ETag", etag)])
        last_modified = email.utils.format_datetime(
            datetime.fromtimestamp(modified_s, UTC), usegmt=True
        )
        headers = [("ETag", etag), ("Last-Modified", last_modified)]
        return Response(200, body, content_type_for(target), headers)


def serve_static(
    root: Path,
    addresses: Sequence[str],
    *,
    robots_txt: str | None = None,
    port: int = 0,
) -> list[StaticSite]:
    """Serve the same tree under several addresses sharing one port, all started.

    Args:
        root: the directory served as ``/`` on every host.
        addresses: distinct IPv4 loopback addresses, e.g. ``["127.78.0.1", "127.78.0.2"]``.
        robots_txt: the body of ``/robots.txt`` on every host (see :class:`StaticSite`).
        port: a fixed port, or ``0`` to choose a free one common to all addresses.

    Returns:
        One started :class:`StaticSite` per address, in order; stop each when done.
    """
    sites = [StaticSite(root, address, port, robots_txt) for address in addresses]
    servers = start_hosts(
        list(addresses), [site.handle for site in sites], names=list(addresses), port=port
    )
    for site, server in zip(sites, servers, strict=True):
        site._attach(server)
    return sites
