"""A real HTTP/1.1 server for one loopback host, and the access log it keeps.

Each :class:`HostServer` is a stdlib :class:`http.server.ThreadingHTTPServer` bound to
one address and port, serving in a background thread. Requests are answered by a plain
function, a :data:`Handler`, that maps a :class:`Request` to a :class:`Response`; the
server writes the response with a correct ``Content-Length`` so HTTP/1.1 keep-alive
works, honours the response's ``delay_s`` (an interruptible sleep) and logs every
request, whatever its status, as an :class:`Access` in the host's :class:`AccessLog`.

:func:`start_hosts` binds several hosts on distinct loopback addresses that share one
free port, so their host keys read ``127.77.0.1:PORT``, ``127.77.0.2:PORT``, ...

:meth:`HostServer.stop` leaves nothing behind: it stops the accept loop, shuts down the
sockets of idle keep-alive connections (their handler threads then end), wakes delayed
responses and joins every handler thread, so a test run with ``-W error`` sees no
``ResourceWarning``.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "Access",
    "AccessLog",
    "Handler",
    "HostServer",
    "Request",
    "Response",
    "start_hosts",
    "stop_all",
]

SERVER_NAME = "localweb/0.1"
"""The ``Server`` header value of every response."""

STOP_TIMEOUT_S = 5.0
"""Longest :meth:`HostServer.stop` waits for handler threads to end, seconds."""

IDLE_TIMEOUT_S = 30.0
"""Seconds an idle keep-alive connection is kept open before the server closes it."""


@dataclass(frozen=True, slots=True)
class Access:
    """One request as the server saw it.

    Attributes:
        at: arrival time, wall-clock seconds since the epoch (``time.time()``), taken
            when the request line was read (before any response delay).
        method: the HTTP method, e.g. ``"GET"`` (``""`` if the request line was unreadable).
        path: the request target as sent, path with query, e.g. ``"/list?page=10"``.
        status: the status code answered, e.g. ``200``.
        user_agent: the ``User-Agent`` request header (``""`` when absent).
    """

    at: float
    method: str
    path: str
    status: int
    user_agent: str


class AccessLog:
    """A thread-safe, append-only list of :class:`Access` records for one host."""

    def __init__(self) -> None:
        """Create an empty log."""
        self._lock = threading.Lock()
        self._entries: list[Access] = []

    def append(self, access: Access) -> None:
        """Record ``access`` (called from handler threads)."""
        with self._lock:
            self._entries.append(access)

    def entries(self) -> list[Access]:
        """A copy of the records so far, in the order the responses were started."""
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        """Forget every record."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        """How many requests were recorded."""
        with self._lock:
            return len(self._entries)


@dataclass(frozen=True, slots=True)
class Request:
    """What a :data:`Handler` sees of a request.

    Attributes:
        method: the HTTP method, upper case (``"GET"``, ``"HEAD"``).
        target: the request target as sent: path with query, e.g. ``"/shop/?sid=ab12"``.
        path: the path part of ``target`` (still percent-encoded), e.g. ``"/shop/"``.
        query: the parsed query, name -> values in order (blank values kept).
        headers: request headers with lower-case names (the last one wins on repeats).
    """

    method: str
    target: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]


@dataclass(slots=True)
class Response:
    """What a :data:`Handler` answers.

    Attributes:
        status: the status code.
        body: the body bytes (not sent for ``HEAD``; ``Content-Length`` still is).
        content_type: the ``Content-Type`` header; ``""`` sends none.
        headers: extra headers as ``(name, value)`` pairs, in order.
        delay_s: seconds to wait before answering (cut short when the server stops).
    """

    status: int = 200
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)
    delay_s: float = 0.0

    @classmethod
    def html(cls, text: str, status: int = 200, headers: Iterable[tuple[str, str]] = ()) -> Self:
        """An HTML response of ``text`` encoded as UTF-8."""
        return cls(status, text.encode("utf-8"), "text/html; charset=utf-8", list(headers))

    @classmethod
    def text(cls, text: str, status: int = 200, content_type: str = "text/plain") -> Self:
        """A text response of ``text`` encoded as UTF-8 (``charset=utf-8`` is appended)."""
        return cls(status, text.encode("utf-8"), f"{content_type}; charset=utf-8")

    @classmethod
    def redirect(cls, location: str, status: int = 302) -> Self:
        """A redirect to ``location`` (sent as given: relative or absolute)."""
        body = (
            f'<!DOCTYPE html>\n<html><body><a href="{escape(location)}">Moved</a></body></html>\n'
        )
        return cls(status, body.encode("utf-8"), headers=[("Location", location)])

    @classmethod
    def error(cls, status: int, headers: Iterable[tuple[str, str]] = ()) -> Self:
        """A small HTML error page for ``status`` (e.g. 404, 429, 503)."""
        phrase = HTTPStatus(status).phrase
        body = (
            f"<!DOCTYPE html>\n<html><head><title>{status} {phrase}</title></head>"
            f"<body><h1>{status} {phrase}</h1></body></html>\n"
        )
        return cls(status, body.encode("utf-8"), headers=list(headers))


Handler = Callable[[Request], Response]
"""A function answering one request; it runs in a handler thread, so it must be
thread-safe. An exception it raises is answered with a 500 and kept in
:attr:`HostServer.errors`."""


class _Server(ThreadingHTTPServer):
    """The ThreadingHTTPServer of one host, tracking its live connections."""

    daemon_threads = True
    block_on_close = False  # the stdlib does not track daemon threads; we do

    def __init__(self, address: tuple[str, int], app: Handler, log: AccessLog) -> None:
        self.app = app
        self.log = log
        self.stopping = threading.Event()
        self.errors: list[str] = []
        self.delayed = 0  # requests waiting out their response's delay now
        self._conn_lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._handlers: set[threading.Thread] = set()
        super().__init__(address, _RequestHandler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(), a reverse DNS look-up that can
        # hang on a machine without a resolver; the name is not needed.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, addr = super().get_request()
        with self._conn_lock:
            self._conns.add(conn)
        return conn, addr

    def shutdown_request(self, request: Any) -> None:
        with self._conn_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name=f"localweb-conn-{self.server_name}:{self.server_port}",
            daemon=True,
        )
        with self._conn_lock:
            self._handlers.add(thread)
        thread.start()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._conn_lock:
                self._handlers.discard(threading.current_thread())

    def join_handlers(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` seconds in all for the handler threads to end."""
        deadline = time.monotonic() + timeout_s
        with self._conn_lock:
            threads = list(self._handlers)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def drop_connections(self) -> None:
        """Shut down every open connection so its handler thread stops reading."""
        with self._conn_lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that goes away mid-response is normal for a crawler's test web.
        pass


class _RequestHandler(BaseHTTPRequestHandler):
    """Dispatches every request to the server's :data:`Handler` and logs it."""

    protocol_version = "HTTP/1.1"
    server_version = SERVER_NAME
    sys_version = ""
    timeout = IDLE_TIMEOUT_S
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms stalls
    server: _Server

    _arrived: float = 0.0

    def parse_request(self) -> bool:
        self._arrived = time.time()
        return super().parse_request()

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        status = int(code) if isinstance(code, int) or str(code).isdigit() else 0
        headers = getattr(self, "headers", None)
        self.server.log.append(
            Access(
                at=self._arrived or time.time(),
                method=getattr(self, "command", None) or "",
                path=getattr(self, "path", "") or "",
                status=status,
                user_agent=headers.get("User-Agent", "") if headers is not None else "",
            )
        )
        self._arrived = 0.0

    def log_message(self, format: str, *args: Any) -> None:
        pass  # no stderr chatter; the access log is the record

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)  # keep the connection in step
        self._write(Response.error(405, [("Allow", "GET, HEAD")]))

    def _dispatch(self) -> None:
        split = urlsplit(self.path)
        request = Request(
            method=self.command,
            target=self.path,
            path=split.path or "/",
            query=parse_qs(split.query, keep_blank_values=True),
            headers={name.lower(): value for name, value in self.headers.items()},
        )
        try:
            response = self.server.app(request)
        except Exception as exc:
            self.server.errors.append(f"{self.command} {self.path}: {exc!r}")
            response = Response.error(500)
        if response.delay_s > 0:
            with self.server._conn_lock:
                self.server.delayed += 1
            try:
                if self.server.stopping.wait(response.delay_s):
                    self.close_connection = True
            finally:
                with self.server._conn_lock:
                    self.server.delayed -= 1
        self._write(response)

    def _write(self, response: Response) -> None:
        self.send_response(response.status)
        if response.content_type:
            self.send_header("Content-Type", response.content_type)
        for name, value in response.headers:
            self.send_header(name, value)
        if response.status != 304:  # RFC 9110 §8.6: a 304's length would be the 200's
            self.send_header("Content-Length", str(len(response.body)))
        if self.server.stopping.is_set():
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD" and response.status != 304:  # §15.4.5: a 304 has no body
            self.wfile.write(response.body)


class HostServer:
    """One host: a threaded HTTP/1.1 server on ``address:port`` answering with ``handler``.

    The socket is bound in the constructor (``port=0`` picks a free port; ``OSError``
    if the address is taken); :meth:`start` serves in a daemon thread; :meth:`stop`
    (idempotent, also on context exit) closes every socket and joins every thread.
    """

    def __init__(self, address: str, port: int, handler: Handler, *, name: str = "") -> None:
        """Bind ``address:port``.

        Args:
            address: an IPv4 loopback address such as ``"127.77.0.1"``.
            port: the TCP port; ``0`` lets the OS choose.
            handler: the :data:`Handler` answering every request.
            name: a label for the serving thread and ``repr``.
        """
        self.name = name or address
        self.log = AccessLog()
        self._server = _Server((address, port), handler, self.log)
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def address(self) -> str:
        """The bound IPv4 address, e.g. ``"127.77.0.3"``."""
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        """The bound TCP port."""
        return int(self._server.server_address[1])

    @property
    def host_key(self) -> str:
        """``address:port``, e.g. ``"127.77.0.3:40123"`` (crawldeck's host key)."""
        return f"{self.address}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://address:port`` without a trailing slash."""
        return f"http://{self.host_key}"

    @property
    def errors(self) -> list[str]:
        """Handler exceptions so far, as ``"METHOD target: repr"`` lines (a copy)."""
        return list(self._server.errors)

    @property
    def delayed(self) -> int:
        """Requests read and waiting out their response's delay now (``slow``)."""
        return self._server.delayed

    def start(self) -> Self:
        """Start serving in a background daemon thread; returns ``self``."""
        if self._stopped:
            raise RuntimeError(f"{self.name}: a stopped server cannot restart")
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"localweb-{self.name}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release everything: listening socket, connections, threads."""
        if self._stopped:
            return
        self._stopped = True
        self._server.stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()  # the listening socket: no new connections
        self._server.drop_connections()  # idle keep-alive readers see EOF and end
        self._server.join_handlers(STOP_TIMEOUT_S)

    def __enter__(self) -> Self:
        """Start (if not yet) and return ``self``."""
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop."""
        self.stop()

    def __repr__(self) -> str:
        """``HostServer(name, http://address:port)``."""
        return f"HostServer({self.name!r}, {self.base_url})"


def start_hosts(
    addresses: Sequence[str],
    handlers: Sequence[Handler],
    *,
    names: Sequence[str] | None = None,
    port: int = 0,
    attempts: int = 20,
) -> list[HostServer]:
    """Bind one :class:`HostServer` per address, all on the same port, and start them.

    With ``port=0`` the first address is bound to a free port, then that port is tried
    on the other addresses; if one of them is taken, everything is closed and the whole
    choice is tried again, up to ``attempts`` times.

    Args:
        addresses: distinct IPv4 loopback addresses, e.g. ``["127.77.0.1", "127.77.0.2"]``.
        handlers: one :data:`Handler` per address, same order.
        names: one label per address (defaults to the addresses).
        port: a fixed port for every host, or ``0`` to choose one.
        attempts: how many port choices to try before giving up (``port=0`` only).

    Returns:
        The started servers, in the order of ``addresses``.

    Raises:
        ValueError: the sequences differ in length or are empty.
        OSError: no common port could be bound.
    """
    if not addresses or len(addresses) != len(handlers):
        raise ValueError("start_hosts: need one handler per address, at least one")
    labels = list(names) if names is not None else list(addresses)
    if len(labels) != len(addresses):
        raise ValueError("start_hosts: need one name per address")
    last_error: OSError | None = None
    for _ in range(attempts if port == 0 else 1):
        servers: list[HostServer] = []
        try:
            first = HostServer(addresses[0], port, handlers[0], name=labels[0])
            servers.append(first)
            for address, handler, label in zip(
                addresses[1:], handlers[1:], labels[1:], strict=True
            ):
                servers.append(HostServer(address, first.port, handler, name=label))
        except OSError as exc:
            for server in servers:
                server.stop()
            if exc.errno not in (errno.EADDRINUSE, errno.EACCES) or port != 0:
                raise
            last_error = exc
            continue
        for server in servers:
            server.start()
        return servers
    raise OSError(
        errno.EADDRINUSE,
        f"no common free port for {', '.join(addresses)} after {attempts} attempts",
    ) from last_error


def stop_all(servers: Iterable[HostServer]) -> None:
    """Stop several servers at once (each :meth:`HostServer.stop` waits up to one poll
    interval, 50 ms, for its accept loop; in parallel the waits overlap)."""
    threads = [
        threading.Thread(target=server.stop, name=f"localweb-stop-{server.name}")
        for server in servers
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
