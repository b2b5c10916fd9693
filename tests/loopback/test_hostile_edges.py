"""Edge cases found by a hostile review of the aiohttp fetcher, the href memo and the
frontier window (issue #6), each against a real server on loopback: a slow host must
not starve the others through the window, a spilled seed keeps its scope, the memo
gives what ``clean`` gives, a 204 with a body does not poison its connection, idle
connections are capped, odd IPv4 spellings cannot skip the address policy, and
truncated or oddly chunked compressed bodies are read right.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from httpserver import HTTPTestServer, Response

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.errors import ProtocolViolation
from crawldeck.core.net import fetcher as fetcher_module
from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.policy import urls
from crawldeck.core.records import FetchResult
from crawldeck.core.storage.store import Store

# --------------------------------------------------------------------------- helpers


def html(body: str) -> Response:
    return Response(200, {"Content-Type": "text/html"}, body.encode())


class RawServer:
    """A keep-alive raw-socket server on 127.0.0.1: ``handler(conn, head, n)`` answers
    the n-th request (1-based, over all connections); return ``"close"`` to hang up."""

    def __init__(self, handler: Callable[[socket.socket, bytes, int], object]) -> None:
        self.handler = handler
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.n = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                with self.lock:
                    self.n += 1
                    n = self.n
                if self.handler(conn, head, n) == "close":
                    return
        except OSError:
            pass
        finally:
            conn.close()

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw_server() -> Iterator[Callable[[Callable[..., object]], RawServer]]:
    servers: list[RawServer] = []

    def make(handler: Callable[..., object]) -> RawServer:
        servers.append(RawServer(handler))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def config(**overrides: object) -> CrawlConfig:
    values: dict[str, object] = {
        "connect_timeout_ms": 1000,
        "read_timeout_ms": 1000,
        "total_timeout_ms": 3000,
    }
    values.update(overrides)
    return build_config(values)


def run_fetches(cfg: CrawlConfig, urls_: list[str]) -> list[FetchResult | Exception]:
    async def go() -> list[FetchResult | Exception]:
        out: list[FetchResult | Exception] = []
        async with AiohttpFetcher(cfg) as fetcher:
            for url in urls_:
                try:
                    out.append(await fetcher.fetch(url))
                except Exception as exc:
                    out.append(exc)
        return out

    return asyncio.run(go())


# --------------------------------------------------------------------------- frontier window


def test_a_window_full_of_one_slow_host_does_not_starve_the_others(tmp_path: Path) -> None:
    # Host A (Crawl-delay: 1) has more URLs than the window; host B, admitted after,
    # must not wait behind them: a host keeps at most its share of the window in
    # memory, and hosts with nothing in memory are brought in when nothing is ready.
    with HTTPTestServer("127.0.0.1") as a, HTTPTestServer("127.0.0.2") as b:
        a.set("/robots.txt", Response(200, {"Content-Type": "text/plain"},
                                      b"User-agent: *\nCrawl-delay: 1\n"))  # fmt: skip
        b.set("/robots.txt", Response(404))
        links = "".join(f'<a href="/p{i}">x</a>' for i in range(20))
        a.set("/", html(links + f'<a href="{b.url("/")}">b</a>'))
        b.set("/", html(links))
        for server in (a, b):
            for i in range(20):
                server.set(f"/p{i}", html("leaf"))
        store = Store(tmp_path / "s.db", flush_interval_ms=50)
        engine = Engine(
            build_config(
                {
                    "delay_ms": 0,
                    "adaptive_delay_factor": 0,
                    "frontier_window": 10,
                    "allow_private": True,
                    "scope": "any",
                }
            ),
            store,
        )
        engine.add_seeds([a.url("/")])

        async def go() -> None:
            task = asyncio.create_task(engine.run())
            await asyncio.sleep(4)
            engine.request_stop()
            await task

        asyncio.run(go())
        store.close()
        fetched_b = b.count() - b.count("/robots.txt")
    # with frontier_window = 1000 B is fetched completely (21 pages) in these 4 s
    assert fetched_b >= 10


def test_a_spilled_seed_keeps_its_scope_after_a_resume(tmp_path: Path) -> None:
    # A seed added from the console ("a") while URLs are spilled is spilled too; read
    # back after a resume it must still widen the scope (scope = host), or every link
    # of that seed would be blocked.
    db = tmp_path / "s.db"
    with HTTPTestServer("127.0.0.1") as a, HTTPTestServer("127.0.0.2") as b:
        for server in (a, b):
            server.set("/robots.txt", Response(404))
            server.set("/", html("".join(f'<a href="/p{i}">x</a>' for i in range(20))))
            for i in range(20):
                server.set(f"/p{i}", html("leaf"))
        # sitemaps off: b's requests are counted below
        cfg = build_config({"delay_ms": 0, "adaptive_delay_factor": 0, "frontier_window": 10,
                            "allow_private": True, "sitemaps": False})  # fmt: skip
        store = Store(db, flush_interval_ms=50)
        engine = Engine(cfg.replace(max_pages=1), store)
        engine.add_seeds([a.url("/")])
        asyncio.run(asyncio.wait_for(engine.run(), 30))
        assert engine.add_seeds([b.url("/")]) == []  # as the console's "a" does
        store.close()
        store = Store(db, flush_interval_ms=50)
        engine = Engine(cfg, store)
        engine.add_seeds([a.url("/")])  # the seeds file, as `crawldeck crawl` resumes
        asyncio.run(asyncio.wait_for(engine.run(), 30))
        store.close()
        fetched_b = b.count() - b.count("/robots.txt")
    conn = sqlite3.connect(db)
    try:
        blocked = dict(conn.execute("SELECT reason, count(*) FROM blocked GROUP BY reason"))
    finally:
        conn.close()
    assert blocked.get("scope", 0) == 0
    assert fetched_b == 21


# --------------------------------------------------------------------------- href memo


def test_href_memo_gives_the_url_clean_gives(tmp_path: Path) -> None:
    # The memo key of a root-relative href is origin_prefix(base) + href; it must be
    # the prefix clean() joins to (the whitespace- and backslash-fixed base), or with a
    # backslash in a <base href> authority an absolute href equal to that key on a
    # later page would get the root-relative href's URL instead of its own.
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        odd_base = server.origin + "\\x/"
        server.set("/", html(f'<base href="{odd_base}"><a href="/a">a</a>'
                             f'<a href="{server.url("/p2")}">p2</a>'))  # fmt: skip
        server.set("/a", html("a"))
        server.set("/p2", html(f'<a href="{server.origin}\\x/a">xa</a>'))
        server.set("/x/a", html("x/a"))
        store = Store(tmp_path / "m.db", flush_interval_ms=50)
        engine = Engine(build_config({"delay_ms": 0, "concurrency": 1}), store)
        engine.add_seeds([server.url("/")])
        asyncio.run(asyncio.wait_for(engine.run(), 30))
        store.close()
        assert urls.clean(f"{server.origin}\\x/a", server.url("/p2")) == server.url("/x/a")
        assert server.count("/x/a") == 1


# --------------------------------------------------------------------------- fetcher


def test_a_204_with_a_body_does_not_break_the_next_fetch_on_its_connection(
    raw_server: Callable[..., RawServer],
) -> None:
    # A 204/304 is bodiless; if its connection were kept, stray bytes sent after it
    # would be read as the next response ("Bad status line ... b'hello...'") and an
    # innocent URL would fail and back its host off. Such a connection is dropped.
    def handler(conn: socket.socket, head: bytes, n: int) -> None:
        if n == 1:
            conn.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n")
            time.sleep(0.1)
            conn.sendall(b"hello")
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    server = raw_server(handler)
    first, second = run_fetches(config(), [server.url("/a"), server.url("/b")])
    assert not isinstance(first, Exception) and first.status == 204
    assert not isinstance(second, Exception), second
    assert (second.status, second.body) == (200, b"ok")


class _MapResolver(AbstractResolver):
    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            {"hostname": host, "host": "127.0.0.1", "port": port, "family": socket.AF_INET,
             "proto": 0, "flags": socket.AI_NUMERICHOST}
        ]  # fmt: skip

    async def close(self) -> None:
        pass


def test_idle_keep_alive_connections_are_bounded(
    raw_server: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    # aiohttp's `limit` counts only connections in use; without a cap every host
    # fetched within the keep-alive time (5-60 s) would keep a socket open, and 50 000
    # hosts would exhaust the descriptor limit. Idle ones are kept for the hosts used
    # last, as many as idle_connections() (here made 64).
    server = raw_server(
        lambda conn, head, n: conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    )
    monkeypatch.setattr(fetcher_module, "idle_connections", lambda: 64)
    cfg = config(concurrency=16)

    async def go() -> int:
        async with AiohttpFetcher(cfg, resolver=_MapResolver()) as fetcher:
            for start in range(0, 300, 16):
                await asyncio.gather(*(
                    fetcher.fetch(f"http://h{i}.test:{server.port}/")
                    for i in range(start, min(300, start + 16))
                ))  # fmt: skip
            return fetcher.statistics().idle

    assert 0 < asyncio.run(go()) <= 64


def test_an_ipv4_literal_with_a_trailing_dot_can_be_fetched(
    raw_server: Callable[..., RawServer],
) -> None:
    # aiohttp refuses "127.0.0.1." as not a canonical IPv4 address; clean() writes it
    # as browsers do (127.0.0.1), so the URL can be fetched.
    server = raw_server(
        lambda conn, head, n: conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    )
    url = urls.clean(f"http://127.0.0.1.:{server.port}/")
    [result] = run_fetches(config(), [url])
    assert not isinstance(result, Exception), result
    assert result.status == 200


def test_raw_deflate_whose_first_read_is_one_byte_is_decoded(
    raw_server: Callable[..., RawServer],
) -> None:
    # zlib-wrapped or raw deflate is decided on zlib's two-byte header: a first read of
    # one byte must not decide it.
    plain = b"<p>hello</p>" * 500
    comp = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = comp.compress(plain) + comp.flush()

    def handler(conn: socket.socket, head: bytes, n: int) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))  # fmt: skip
        conn.sendall(body[:1])
        time.sleep(0.2)
        conn.sendall(body[1:])

    server = raw_server(handler)
    [result] = run_fetches(config(), [server.url("/")])
    assert not isinstance(result, Exception), result
    assert result.body == plain


def test_a_gzip_body_cut_before_its_end_is_not_a_complete_page(
    raw_server: Callable[..., RawServer],
) -> None:
    # A close-delimited gzip body that ends mid-stream is not a complete page (zlib's
    # end of stream is checked), or half a page would be recorded and followed.
    plain = b"<p>hello world</p>" * 2000
    packed = gzip.compress(plain)

    def handler(conn: socket.socket, head: bytes, n: int) -> str:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n"
                     + packed[: len(packed) // 2])  # fmt: skip
        return "close"

    server = raw_server(handler)
    [result] = run_fetches(config(), [server.url("/")])
    assert isinstance(result, ProtocolViolation) or (
        isinstance(result, FetchResult) and result.truncated
    )


def test_a_stacked_coding_error_is_one_line(raw_server: Callable[..., RawServer]) -> None:
    # Header bytes that are not UTF-8 are read as Latin-1, so 0x85 becomes U+0085 (NEL):
    # the stacked-codings message must still be one line (core.errors).
    reply = (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip, x\x85y\x0bz\r\n"
             b"Content-Length: 2\r\n\r\nhi")  # fmt: skip
    server = raw_server(lambda conn, head, n: conn.sendall(reply))
    [result] = run_fetches(config(), [server.url("/")])
    assert isinstance(result, ProtocolViolation)
    assert len(str(result).splitlines()) == 1, repr(str(result))


# --------------------------------------------------------------------------- address policy


def test_numeric_ipv4_hosts_cannot_skip_the_address_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # aiohttp takes every digits-and-dots host for a literal and never asks the
    # PinningResolver; it refuses 2130706433 / 127.1 / 0177.0.0.1 itself only since
    # 3.14 (aio-libs/aiohttp#12849). With that guard switched off (an older aiohttp),
    # a robots.txt redirect (followed by RobotsCache straight through the fetcher)
    # must still not reach a loopback service: clean() writes such hosts as dotted
    # quads and the fetcher checks every literal against the address policy.
    import aiohttp.connector

    monkeypatch.setattr(aiohttp.connector, "is_canonical_ipv4_address", lambda host: True,
                        raising=False)  # fmt: skip
    with HTTPTestServer("127.0.0.2") as public, HTTPTestServer("127.0.0.1") as internal:
        internal.set("/admin", Response(200, {}, b"done"))
        numeric = f"http://2130706433:{internal.port}/admin"  # 127.0.0.1 as one number
        public.set("/robots.txt", Response(301, {"Location": numeric}))
        public.set("/", html("hi"))
        store = Store(tmp_path / "p.db", flush_interval_ms=50)
        engine = Engine(build_config({"delay_ms": 0}), store)
        engine.add_seeds([public.url("/")])  # trusted: only 127.0.0.2 may be private
        asyncio.run(asyncio.wait_for(engine.run(), 30))
        store.close()
        reached = [r.path for r in internal.requests]
    assert reached == []
