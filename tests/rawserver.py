"""A raw-socket HTTP server on loopback for tests (no pytest needed): the bytes it
writes, and how it closes (a FIN, or a TCP reset), are exactly what the test says.

Usage::

    server = RawServer(lambda conn, n: conn.sendall(b"HTTP/1.1 200 OK\\r\\n..."))
    server.url("/x")       # 'http://127.0.0.1:PORT/x'
    server.requests        # request heads received so far
    server.close()

``handler(conn, n)`` answers the ``n``-th request head (1-based, over all connections);
the connection is then closed with a FIN unless the handler returns ``"keep"`` (read
the next request on it) or closed it itself (``reset(conn)``).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading
from collections.abc import Callable

Handler = Callable[[socket.socket, int], object]


def reset(conn: socket.socket) -> None:
    """Close ``conn`` with a TCP reset (RST) instead of a clean close (FIN)."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


class RawServer:
    """A raw-socket HTTP server on 127.0.0.1: for each request head received,
    ``handler(conn, n)`` answers (``n``: 1-based count over all connections) and the
    connection is closed (FIN) unless the handler returns ``"keep"`` or closed it.
    ``requests`` counts request heads; ``wrap`` (an ``ssl.SSLContext``) makes it TLS.
    Handler threads are bounded by the test (a few connections each) and joined on
    ``close``."""

    def __init__(self, handler: Handler, wrap: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.wrap = wrap
        self.requests = 0
        self._lock = threading.Lock()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def url(self, path: str = "/", scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            if self.wrap is not None:
                conn = self.wrap.wrap_socket(conn, server_side=True)
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                _, _, buf = buf.partition(b"\r\n\r\n")
                with self._lock:
                    self.requests += 1
                    n = self.requests
                if self.handler(conn, n) != "keep":
                    return
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() above
        self._sock.close()
        self._accepting.join(5)
        for thread in self._threads:
            thread.join(5)


__all__ = ["Handler", "RawServer", "reset"]
