"""A real threaded HTTP server on loopback for tests (no pytest needed).

Usage::

    with HTTPTestServer() as srv:
        srv.set("/robots.txt", Response(200, {"Content-Type": "text/plain"}, b"..."))
        srv.set("/dyn", lambda req: Response(body=req.path.encode()))
        srv.set_raw("/garbage", lambda req, out: out.write(b"NOT HTTP\\r\\n\\r\\n"))
        srv.url("/dyn")          # 'http://127.0.0.1:PORT/dyn'
        srv.requests             # [Request(method, path, headers, at), ...]
        srv.count("/dyn")        # requests logged for that path (query ignored)

Routes match the request path without its query; an unknown path gets a 404. A route
is a canned ``Response``, a function ``(Request) -> Response``, or (``set_raw``) a
function ``(Request, out)`` that writes raw bytes to the socket file ``out``; it may
also sleep through ``srv.wait(seconds)``, which returns early when the server closes so
that closing never waits for a stalled handler. Each request is logged before its route
runs, with ``time.monotonic()`` seconds in ``Request.at``.

The server speaks HTTP/1.1 with keep-alive (canned responses get a Content-Length);
on close it shuts down every open connection and joins every handler thread.
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

HeadersIn = Mapping[str, str] | Iterable[tuple[str, str]]


@dataclass(frozen=True)
class Request:
    """One logged request: method, path (with query), headers (lowercased names), time.

    ``at`` is ``time.monotonic()`` seconds when the request line and headers were read.
    """

    method: str
    path: str
    headers: dict[str, str]
    at: float


@dataclass
class Response:
    """A canned response: status, headers (mapping or list of pairs), body bytes.

    A ``Content-Length`` is added unless ``headers`` has one (or ``chunked`` framing).
    """

    status: int = 200
    headers: HeadersIn = field(default_factory=dict)
    body: bytes = b""

    def header_pairs(self) -> list[tuple[str, str]]:
        """The headers as ``(name, value)`` pairs, in order."""
        if isinstance(self.headers, Mapping):
            return list(self.headers.items())
        return list(self.headers)


Route = Response | Callable[[Request], Response]
RawRoute = Callable[[Request, io.BufferedIOBase], object]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY on every accepted connection, as localweb/server.py: the status line
    # and headers go out in one write and the body in another, and Nagle's algorithm held
    # the second until the client's delayed ACK (about 44 ms a request, 0.7 ms without).
    disable_nagle_algorithm = True
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the request log is the record

    def _serve(self) -> None:
        owner = self.server.owner
        request = Request(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            at=time.monotonic(),
        )
        owner._log(request)
        route_path = self.path.split("?", 1)[0]
        raw = owner._raw_routes.get(route_path)
        if raw is not None:
            self.close_connection = True
            raw(request, self.wfile)
            return
        route = owner._routes.get(route_path)
        if route is None:
            response = Response(404, {"Content-Type": "text/plain"}, b"not found")
        elif isinstance(route, Response):
            response = route
        else:
            response = route(request)
        self.send_response(response.status)
        pairs = response.header_pairs()
        names = {name.lower() for name, _ in pairs}
        for name, value in pairs:
            self.send_header(name, value)
        if "content-length" not in names and "transfer-encoding" not in names:
            self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    do_GET = _serve
    do_HEAD = _serve
    do_POST = _serve


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, owner: HTTPTestServer, host: str) -> None:
        self.owner = owner
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__((host, 0), _Handler)

    def track(self, conn: socket.socket, *, add: bool) -> None:
        with self._conns_lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)
        if add and self.owner._stopping.is_set():  # accepted while closing
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def drop_connections(self) -> None:
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-response is normal in these tests


class HTTPTestServer:
    """A threaded HTTP/1.1 server on ``host`` (default 127.0.0.1), port chosen by the OS.

    Use as a context manager (``with HTTPTestServer() as srv``) or call ``start()`` and
    ``close()``. Thread-safe: routes may be changed while requests are served.
    """

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._routes: dict[str, Route] = {}
        self._raw_routes: dict[str, RawRoute] = {}
        self._requests: list[Request] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = _Server(self, host)
        self._thread: threading.Thread | None = None
        self.host = host
        self.port: int = self._server.server_address[1]

    @property
    def origin(self) -> str:
        """``http://HOST:PORT`` of this server."""
        return f"http://{self.host}:{self.port}"

    def url(self, path: str = "/") -> str:
        """The absolute URL of ``path`` on this server."""
        return self.origin + path

    def start(self) -> HTTPTestServer:
        """Serve in a background thread; returns ``self``."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, wake sleeping handlers, drop connections, join all threads."""
        self._stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.drop_connections()
        self._server.server_close()

    def __enter__(self) -> HTTPTestServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def set(self, path: str, route: Route) -> None:
        """Answer ``path`` with a canned ``Response`` or ``route(request) -> Response``."""
        with self._lock:
            self._raw_routes.pop(path, None)
            self._routes[path] = route

    def set_raw(self, path: str, route: RawRoute) -> None:
        """Answer ``path`` by ``route(request, out)`` writing raw bytes; then close."""
        with self._lock:
            self._routes.pop(path, None)
            self._raw_routes[path] = route

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` in a handler; ``True`` if woken by ``close()``."""
        return self._stopping.wait(seconds)

    def _log(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)

    @property
    def requests(self) -> list[Request]:
        """A copy of the request log, in arrival order."""
        with self._lock:
            return list(self._requests)

    def count(self, path: str | None = None) -> int:
        """How many requests were logged (for ``path``, query ignored, if given)."""
        with self._lock:
            if path is None:
                return len(self._requests)
            return sum(1 for r in self._requests if r.path.split("?", 1)[0] == path)

    def clear(self) -> None:
        """Empty the request log."""
        with self._lock:
            self._requests.clear()


__all__ = ["HTTPTestServer", "RawRoute", "Request", "Response", "Route"]
