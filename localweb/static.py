"""Serve a directory tree (e.g. Debian's Python or Django HTML docs) as one loopback host.

``StaticSite(Path("/usr/share/doc/python3/html"), "127.78.0.1").start()`` serves the
tree at ``http://127.78.0.1:PORT/`` with the content types a crawler expects,
``index.html`` for directories (a directory without its trailing slash gets a 301 to
it, as Apache and nginx do), 404 for anything else, and an :class:`AccessLog` like
the hosts of :class:`localweb.web.LocalWeb`. :func:`serve_static` serves one tree
under several addresses on a shared port, for crawls across many hosts.
"""

from __future__ import annotations

import mimetypes
import posixpath
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import unquote

from crawldeck.localweb.server import Access, AccessLog, HostServer, Request, Response, start_hosts

__all__ = ["CONTENT_TYPES", "StaticSite", "content_type_for", "serve_static"]

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

    # ------------------------------------------------------------------ serving

    def handle(self, request: Request) -> Response:
        """Answer one request from the tree (a :data:`localweb.server.Handler`)."""
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
        except (OSError, ValueError):
            return Response.error(404)
        return Response(200, body, content_type_for(target))


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
