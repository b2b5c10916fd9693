"""A tiny HTTP forward proxy on loopback for tests (asyncio in its own thread; no pytest
needed): it relays what it is asked and records each request.

Usage::

    with ForwardProxy() as proxy:
        proxy.url          # 'http://127.0.0.1:PORT'
        proxy.requests     # [Proxied(method, target, headers), ...]

A request in absolute form (``GET http://host:port/path HTTP/1.1``) is sent on to
``host:port`` in origin form with ``Connection: close``, and the answer relayed with
``Connection: close`` (one request per client connection: no pool in the proxy). A
``CONNECT host:port`` is answered ``200`` and then piped both ways (the TLS inside is
not seen). Each request is recorded before it is relayed. ``hosts`` maps a target host
name to the address the proxy connects to (the proxy resolves names, as a real one
does); other names are connected to as they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Proxied:
    """One request the proxy received: method, target as sent (absolute URL, or
    ``host:port`` for CONNECT), headers with lowercased names."""

    method: str
    target: str
    headers: dict[str, str]


class ForwardProxy:
    """A forward proxy on 127.0.0.1 (see the module); ``close`` (or the ``with``'s end)
    stops it and joins its thread."""

    def __init__(self, hosts: dict[str, str] | None = None) -> None:
        self.hosts = dict(hosts or {})
        self._requests: list[Proxied] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()  # open streams, closed at the end
        self.port = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[Proxied]:
        """The requests received so far, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _open(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to ``host:port`` (``hosts`` applied), closed by ``_done``."""
        up_reader, up_writer = await asyncio.open_connection(self.hosts.get(host, host), port)
        self._writers.add(up_writer)
        return up_reader, up_writer

    async def _done(self, writer: asyncio.StreamWriter) -> None:
        """Close ``writer`` and wait until its socket is closed."""
        self._writers.discard(writer)
        writer.close()
        with contextlib.suppress(OSError, asyncio.CancelledError):
            await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            await self._done(writer)
            return
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        fields = [line.split(":", 1) for line in lines[1:] if ":" in line]
        headers = {name.strip().lower(): value.strip() for name, value in fields}
        with self._lock:
            self._requests.append(Proxied(method, target, headers))
        try:
            if method == "CONNECT":
                await self._tunnel(target, reader, writer)
            else:
                await self._relay(method, target, fields, writer)
        except OSError:
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
        finally:
            with contextlib.suppress(OSError):
                await writer.drain()
            await self._done(writer)

    async def _relay(
        self, method: str, target: str, fields: list[list[str]], writer: asyncio.StreamWriter
    ) -> None:
        parts = urlsplit(target)
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        up_reader, up_writer = await self._open(parts.hostname or "", parts.port or 80)
        hop = {"connection", "proxy-connection", "proxy-authorization", "keep-alive"}
        sent = [f"{method} {path} HTTP/1.1"]
        sent += [f"{name}:{value}" for name, value in fields if name.strip().lower() not in hop]
        sent.append("Connection: close")
        up_writer.write(("\r\n".join(sent) + "\r\n\r\n").encode("latin-1"))
        await up_writer.drain()
        answer = await up_reader.readuntil(b"\r\n\r\n")
        status, *rest = answer.decode("latin-1").split("\r\n")
        kept = [line for line in rest if line and not line.lower().startswith("connection:")]
        writer.write("\r\n".join([status, *kept, "Connection: close", "", ""]).encode("latin-1"))
        try:
            while data := await up_reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            await self._done(up_writer)

    async def _tunnel(
        self, target: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        host, _, port = target.rpartition(":")
        up_reader, up_writer = await self._open(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            with contextlib.suppress(OSError):
                sink.write_eof()

        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            await self._done(up_writer)

    def close(self) -> None:
        """Stop serving, close the loop's tasks, join the thread."""

        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for writer in list(self._writers):
                await self._done(writer)
            if self._server is not None:
                await self._server.wait_closed()

        if self._loop.is_running():
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> ForwardProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
