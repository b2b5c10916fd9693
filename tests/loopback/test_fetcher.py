"""core.net.fetcher against a real threaded HTTP server on loopback (tests/httpserver.py)."""

from __future__ import annotations

import contextlib
import gzip
import io
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator

import fetcherkit
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from fetcherkit import UA, make_config
from hostilekit import brotli_bomb, deflate_bomb, gzip_bomb
from httpserver import HTTPTestServer, Request, Response
from rawserver import RawServer

from crawldeck.core.errors import (
    ConnectFailed,
    FetchTimeout,
    ProtocolViolation,
)
from crawldeck.core.net.body_reader import Inflater, Unbrotli
from crawldeck.core.net.fetcher import AiohttpFetcher

#: The fixtures shared with the other tier's file, as fixtures of this module.
fetcher = fetcherkit.fetcher


@pytest.fixture
def srv() -> Iterator[HTTPTestServer]:
    with HTTPTestServer() as server:
        yield server


def gzip_zeros(size: int) -> bytes:
    """``size`` zero bytes, gzip-compressed without holding them all in memory."""
    comp = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = b"\0" * (1 << 20)
    parts = []
    left = size
    while left:
        n = min(left, len(block))
        parts.append(comp.compress(block[:n]))
        left -= n
    parts.append(comp.flush())
    return b"".join(parts)


def free_port() -> socket.socket:
    """A bound, non-listening socket: connecting to its port is refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


async def test_200_with_body_and_headers(srv: HTTPTestServer, fetcher: AiohttpFetcher) -> None:
    srv.set(
        "/page",
        Response(200, {"Content-Type": "Text/HTML; charset=UTF-8", "X-Thing": "1"}, b"<p>hi</p>"),
    )
    started = time.monotonic()
    result = await fetcher.fetch(srv.url("/page"))
    took_ms = (time.monotonic() - started) * 1000
    assert result.url == srv.url("/page")
    assert result.status == 200
    assert result.body == b"<p>hi</p>"
    assert result.content_type == "text/html"
    assert result.truncated is False
    assert result.headers["x-thing"] == "1"
    assert result.headers["X-THING"] == "1"
    assert result.headers["content-length"] == "9"
    assert 0 < result.elapsed_ms <= took_ms  # in ms, timed within the call
    # to the µs: exported as 1.234, not 1.2340000000000001 (issue #25)
    assert len(repr(result.elapsed_ms).split(".")[1]) <= 3


async def test_user_agent_and_request_shape(srv: HTTPTestServer, fetcher: AiohttpFetcher) -> None:
    srv.set("/ua", Response(204))
    result = await fetcher.fetch(srv.url("/ua?x=1"))
    assert result.status == 204
    assert result.body == b""
    assert result.content_type == ""
    [request] = srv.requests
    assert request.method == "GET"
    assert request.path == "/ua?x=1"
    assert request.headers["user-agent"] == UA
    assert "cookie" not in request.headers


async def test_redirect_is_returned_not_followed(
    srv: HTTPTestServer, fetcher: AiohttpFetcher
) -> None:
    srv.set("/old", Response(301, {"Location": "/new"}, b"moved"))
    srv.set("/new", Response(200, {}, b"new"))
    result = await fetcher.fetch(srv.url("/old"))
    assert result.status == 301
    assert result.headers["location"] == "/new"
    assert result.body == b"moved"
    assert srv.count("/old") == 1
    assert srv.count("/new") == 0


def raw_redirect(location: bytes, status: bytes = b"302 Found") -> Callable[..., None]:
    def route(req: Request, out: io.BufferedIOBase) -> None:
        out.write(
            b"HTTP/1.1 " + status + b"\r\nLocation: " + location + b"\r\n"
            b"Content-Length: 5\r\nConnection: close\r\n\r\nmoved"
        )

    return route


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        (b"mailto:a@b.c", "mailto:a@b.c"),
        (b"javascript:alert(1)", "javascript:alert(1)"),
        (b"data:text/html,<p>hi", "data:text/html,<p>hi"),
        ("http://☃.com/".encode(), "http://☃.com/"),  # raw UTF-8
        (b"http://\xe9t\xe9.fr/", "http://\xe9t\xe9.fr/"),  # not UTF-8: Latin-1
        (b"../x y/%zz\\q<>", "../x y/%zz\\q<>"),
        (b"http://[::1", "http://[::1"),
        (b"//[zz]/x", "//[zz]/x"),
        (b"http://h:99999/", "http://h:99999/"),
    ],
)
async def test_redirect_location_is_returned_untouched(
    srv: HTTPTestServer, fetcher: AiohttpFetcher, location: bytes, expected: str
) -> None:
    # httpx (the fetcher's first client) built a next request from Location even
    # without following it and raised; the engine retried and stalled the host.
    srv.set_raw("/go", raw_redirect(location))
    result = await fetcher.fetch(srv.url("/go"))
    assert (result.status, result.body) == (302, b"moved")
    assert result.headers["location"] == expected
    assert result.headers.getall("location") == [expected]
    assert srv.count("/go") == 1 and srv.count() == 1


@pytest.mark.parametrize("status", [b"301 Moved", b"303 See Other", b"307 Temp", b"308 Perm"])
async def test_every_redirect_status_keeps_a_junk_location(
    srv: HTTPTestServer, fetcher: AiohttpFetcher, status: bytes
) -> None:
    srv.set_raw("/go", raw_redirect(b"mailto:x@y.z", status))
    result = await fetcher.fetch(srv.url("/go"))
    assert (result.status, result.headers["location"]) == (int(status[:3]), "mailto:x@y.z")


async def test_headers_order_and_repeats_survive_the_location_hook(
    srv: HTTPTestServer, fetcher: AiohttpFetcher
) -> None:
    pairs = [("X-A", "1"), ("Location", "mailto:a@b"), ("X-B", "2"), ("Location", "/two")]
    srv.set("/two", Response(302, pairs, b""))
    result = await fetcher.fetch(srv.url("/two"))
    items = [(k.lower(), v) for k, v in result.headers.items()]
    assert [(k, v) for k, v in items if k not in ("server", "date", "content-length")] == [
        ("x-a", "1"),
        ("location", "mailto:a@b"),
        ("x-b", "2"),
        ("location", "/two"),
    ]
    assert result.headers.getall("location") == ["mailto:a@b", "/two"]


async def test_error_statuses_are_results(srv: HTTPTestServer, fetcher: AiohttpFetcher) -> None:
    srv.set("/busy", Response(503, {"Retry-After": "7"}, b"later"))
    result = await fetcher.fetch(srv.url("/busy"))
    assert (result.status, result.headers["retry-after"], result.body) == (503, "7", b"later")
    missing = await fetcher.fetch(srv.url("/nothing-here"))
    assert missing.status == 404


async def test_cookies_are_not_kept(srv: HTTPTestServer, fetcher: AiohttpFetcher) -> None:
    srv.set("/set", Response(200, {"Set-Cookie": "sid=abc; Path=/"}, b""))
    srv.set("/next", Response(200, {}, b""))
    await fetcher.fetch(srv.url("/set"))
    await fetcher.fetch(srv.url("/next"))
    assert [r.headers.get("cookie") for r in srv.requests] == [None, None]


async def test_gzip_bomb_is_cut_at_max_bytes(srv: HTTPTestServer, fetcher: AiohttpFetcher) -> None:
    bomb = gzip_zeros(50_000_000)
    assert len(bomb) < 100_000
    srv.set("/bomb", Response(200, {"Content-Encoding": "gzip"}, bomb))
    result = await fetcher.fetch(srv.url("/bomb"), max_bytes=1_000_000)
    assert result.truncated is True
    assert result.body == b"\0" * 1_000_000


#: The cap of the bounded-memory tests below, and the body each one's server sends.
HELD_CAP = 4 << 20
HELD_BODY = 64 << 20


def _held_case(coding: str) -> Response:
    """A page of ``HELD_BODY`` decoded bytes with ``coding`` (``""``: a plain page of
    twice the cap, sent as is): bombs of ``a`` bytes (hostilekit's), each over 1 000:1."""
    if coding == "":
        return Response(200, {"Content-Type": "text/html"}, b"a" * (2 * HELD_CAP))
    make = {"gzip": gzip_bomb, "deflate": deflate_bomb, "br": brotli_bomb}[coding]
    body = make(HELD_BODY)
    assert len(body) * 1000 < HELD_BODY
    return Response(200, {"Content-Type": "text/html", "Content-Encoding": coding}, body)


@pytest.mark.parametrize("coding", ["", "gzip", "deflate", "br"])
async def test_a_body_over_the_cap_is_held_once(
    srv: HTTPTestServer, fetcher: AiohttpFetcher, coding: str
) -> None:
    """A body cut at ``max_bytes`` costs the cap once: decoded in small steps into one
    buffer handed over without a copy (not a decoder's output of the whole cap, then a
    slice of it, then the join of the pieces: two to three times the cap)."""
    srv.set("/held", _held_case(coding))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = await fetcher.fetch(srv.url("/held"), max_bytes=HELD_CAP)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (len(result.body), result.truncated) == (HELD_CAP, True)
    assert result.body.startswith(b"<html>" if coding else b"aaa") and result.body.endswith(b"aaa")
    assert peak < HELD_CAP * 3 // 2, f"peak {peak / 2**20:.1f} MiB for a cap of 4 MiB"


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
async def test_a_bomb_decodes_a_step_at_a_time(
    srv: HTTPTestServer, fetcher: AiohttpFetcher, coding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every output of the decoder is at most one step (64 KiB, and for brotli one
    output block more), however much one network read of a bomb expands to."""
    steps: list[int] = []
    decoder = Unbrotli if coding == "br" else Inflater
    for name in ("feed", "more"):
        real = getattr(decoder, name)

        def counted(self: object, *args: object, _real: Callable[..., bytes] = real) -> bytes:
            out = _real(self, *args)
            steps.append(len(out))
            return out

        monkeypatch.setattr(decoder, name, counted)
    srv.set("/held", _held_case(coding))
    result = await fetcher.fetch(srv.url("/held"), max_bytes=HELD_CAP)
    assert (len(result.body), result.truncated) == (HELD_CAP, True)
    assert sum(steps) > HELD_CAP
    assert max(steps) <= (64 + 32) << 10, f"a step of {max(steps)} bytes"


async def test_accept_encoding_names_only_codings_we_bound(
    srv: HTTPTestServer, fetcher: AiohttpFetcher
) -> None:
    srv.set("/ae", Response(204))
    await fetcher.fetch(srv.url("/ae"))
    [request] = srv.requests
    assert request.headers["accept-encoding"] == "gzip, deflate, br"


async def test_nested_gzip_bomb_is_refused_in_bounded_memory(
    srv: HTTPTestServer, fetcher: AiohttpFetcher
) -> None:
    # gzip of gzip of 256 MiB of zeros (a smaller copy of the 4 GiB bomb that took
    # RSS to 8.4 GB): httpx decoded each layer of a network read in one piece.
    bomb = gzip.compress(gzip_zeros(256 << 20))
    assert len(bomb) < 100_000
    srv.set("/nested", Response(200, {"Content-Encoding": "gzip, gzip"}, bomb))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        with pytest.raises(ProtocolViolation) as info:
            await fetcher.fetch(srv.url("/nested"), max_bytes=1_000_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"peak {peak / 2**20:.0f} MiB"
    assert str(info.value) == f"stacked content codings gzip, gzip refused: {srv.url('/nested')}"
    assert info.value.reason == "protocol"


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        (
            [("Content-Encoding", "gzip"), ("Content-Encoding", "deflate")],
            "stacked content codings gzip, deflate refused",
        ),
        ([("Content-Encoding", "deflate, GZIP")], "stacked content codings deflate, gzip refused"),
        ([("Content-Encoding", "zstd")], "unknown content coding 'zstd' refused"),
        ([("Content-Encoding", "br, gzip")], "stacked content codings br, gzip refused"),
        ([("Content-Encoding", "compress")], "unknown content coding 'compress' refused"),
        ([("Content-Encoding", "utf-8")], "unknown content coding 'utf-8' refused"),
    ],
)
async def test_stacked_or_unknown_codings_are_refused(
    srv: HTTPTestServer, fetcher: AiohttpFetcher, headers: list[tuple[str, str]], problem: str
) -> None:
    srv.set("/enc", Response(200, headers, b"whatever"))
    with pytest.raises(ProtocolViolation) as info:
        await fetcher.fetch(srv.url("/enc"))
    assert str(info.value) == f"{problem}: {srv.url('/enc')}"


@pytest.mark.parametrize(
    "coding", ["gzip", "x-gzip", "GZip", "gzip, identity", "identity", " deflate ", ""]
)
async def test_one_known_coding_is_decoded(
    srv: HTTPTestServer, fetcher: AiohttpFetcher, coding: str
) -> None:
    plain = b"<p>hello</p>" * 100
    if "deflate" in coding:
        body = zlib.compress(plain)
    elif "gzip" in coding.lower():
        body = gzip.compress(plain)
    else:
        body = plain
    srv.set("/one", Response(200, {"Content-Encoding": coding}, body))
    result = await fetcher.fetch(srv.url("/one"))
    assert (result.status, result.body) == (200, plain)
    assert result.headers["content-encoding"] == coding.strip()  # as sent (x-gzip too)


async def test_default_cap_is_max_body_bytes(srv: HTTPTestServer) -> None:
    srv.set("/big", Response(200, {"Content-Encoding": "gzip"}, gzip_zeros(3_000_000)))
    async with AiohttpFetcher(make_config(max_body_bytes=2048)) as f:
        result = await f.fetch(srv.url("/big"))
    assert (len(result.body), result.truncated) == (2048, True)


async def test_body_of_exactly_max_bytes_is_not_truncated(
    srv: HTTPTestServer, fetcher: AiohttpFetcher
) -> None:
    srv.set("/exact", Response(200, {}, b"a" * 5000))
    result = await fetcher.fetch(srv.url("/exact"), max_bytes=5000)
    assert (len(result.body), result.truncated) == (5000, False)
    result = await fetcher.fetch(srv.url("/exact"), max_bytes=4999)
    assert (result.body, result.truncated) == (b"a" * 4999, True)


async def test_stall_before_headers_is_a_read_timeout(srv: HTTPTestServer) -> None:
    srv.set_raw("/stall", lambda req, out: srv.wait(5.0))
    async with AiohttpFetcher(make_config(read_timeout_ms=150, total_timeout_ms=5000)) as f:
        started = time.monotonic()
        with pytest.raises(FetchTimeout) as info:
            await f.fetch(srv.url("/stall"))
        took = time.monotonic() - started
    assert took > 0.1  # the read budget, not the total's 5 s (the message says which)
    assert str(info.value) == f"read timeout (150 ms): {srv.url('/stall')}"
    assert info.value.reason == "timeout"


def dripper(srv: HTTPTestServer, every_s: float) -> Callable[[Request, io.BufferedIOBase], None]:
    def drip(req: Request, out: io.BufferedIOBase) -> None:
        out.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10000\r\nContent-Type: text/plain\r\n\r\n")
        for _ in range(10000):
            if srv.wait(every_s):
                return
            try:
                out.write(b"x")
            except OSError:
                return

    return drip


async def test_slow_drip_past_total_deadline(srv: HTTPTestServer) -> None:
    srv.set_raw("/drip", dripper(srv, 0.02))
    config = make_config(read_timeout_ms=500, total_timeout_ms=300)
    async with AiohttpFetcher(config) as f:
        started = time.monotonic()
        with pytest.raises(FetchTimeout) as info:
            await f.fetch(srv.url("/drip"))
        took = time.monotonic() - started
    assert took > 0.25  # the total budget, not the read's (the message says which)
    assert str(info.value) == f"total time budget of 300 ms exceeded: {srv.url('/drip')}"


async def test_connection_refused(fetcher: AiohttpFetcher) -> None:
    sock = free_port()
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
        with pytest.raises(ConnectFailed) as info:
            await fetcher.fetch(url)
    finally:
        sock.close()
    message = str(info.value)
    assert message.startswith("connection failed: ")
    assert message.endswith(url)
    assert "\n" not in message
    assert info.value.reason == "connect"
    assert info.value.retryable is True


async def test_garbage_response_is_a_protocol_violation(
    srv: HTTPTestServer, fetcher: AiohttpFetcher
) -> None:
    srv.set_raw(
        "/ssh", lambda req, out: out.write(b"SSH-2.0-OpenSSH_9.6\r\nbanner garbage\r\n\r\n")
    )
    with pytest.raises(ProtocolViolation) as info:
        await fetcher.fetch(srv.url("/ssh"))
    assert str(info.value).startswith("invalid HTTP response: Bad status line: ")
    assert "\n" not in str(info.value)
    assert info.value.reason == "protocol"
    assert info.value.retryable is False


async def test_undecodable_gzip_is_a_protocol_violation(
    srv: HTTPTestServer, fetcher: AiohttpFetcher
) -> None:
    srv.set("/badgz", Response(200, {"Content-Encoding": "gzip"}, b"this is not gzip at all"))
    with pytest.raises(ProtocolViolation) as info:
        await fetcher.fetch(srv.url("/badgz"))
    assert info.value.retryable is False


async def test_connection_closed_mid_body(srv: HTTPTestServer, fetcher: AiohttpFetcher) -> None:
    srv.set_raw(
        "/short",
        lambda req, out: out.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b"),
    )
    with pytest.raises(ProtocolViolation) as info:
        await fetcher.fetch(srv.url("/short"))
    assert str(info.value) == (
        "short body: Not enough data to satisfy content length header "
        f"(received 10 of 100 bytes): {srv.url('/short')}"
    )
    assert info.value.retryable is False


class MapResolver(AbstractResolver):
    """Every name resolves to 127.0.0.1 (the resolver seam the crawl's DNS pins at)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.names.append(host)
        return [
            {"hostname": host, "host": "127.0.0.1", "port": port, "family": socket.AF_INET,
             "proto": 0, "flags": socket.AI_NUMERICHOST}
        ]  # fmt: skip

    async def close(self) -> None:
        pass


async def test_resolver_seam_keeps_the_name(srv: HTTPTestServer) -> None:
    srv.set("/a", Response(200, {"content-type": "application/XHTML+xml"}, b"x"))
    resolver = MapResolver()
    async with AiohttpFetcher(make_config(), resolver=resolver) as f:
        url = srv.url("/a").replace("127.0.0.1", "example.test")
        result = await f.fetch(url)
        await f.fetch(url)
        assert f.statistics().connects == 1  # keep-alive: one connection for both
    assert (result.status, result.body, result.content_type) == (200, b"x", "application/xhtml+xml")
    assert resolver.names == ["example.test"]
    [first, _] = srv.requests
    assert first.headers["host"] == f"example.test:{srv.port}"
    assert first.headers["user-agent"] == UA


async def test_closed_fetcher_refuses(srv: HTTPTestServer) -> None:
    f = AiohttpFetcher(make_config())
    await f.aclose()
    with pytest.raises(ConnectFailed, match="the fetcher is closed"):
        await f.fetch(srv.url("/"))


# --------------------------------------------------------------------------- per-request headers


async def test_extra_headers_are_sent_for_that_request_only(
    srv: HTTPTestServer, fetcher: AiohttpFetcher
) -> None:
    # The engine keeps cookies for one redirect chain; the session itself keeps none.
    srv.set("/a", Response(302, {"Location": "/b", "Set-Cookie": "consent=yes"}))
    srv.set("/b", Response(200, {"Content-Type": "text/html"}, b"<p>b</p>"))
    await fetcher.fetch(srv.url("/a"))
    result = await fetcher.fetch(
        srv.url("/b"), headers={"Cookie": "consent=yes", "Accept-Language": "en"}
    )
    assert result.body == b"<p>b</p>"
    await fetcher.fetch(srv.url("/b"))
    first, second, third = srv.requests
    assert "cookie" not in first.headers
    assert second.headers["cookie"] == "consent=yes"
    assert second.headers["accept-language"] == "en"
    assert second.headers["user-agent"] == UA  # the session's headers stay
    assert "cookie" not in third.headers and "accept-language" not in third.headers
    assert fetcher.statistics().connects == 1  # on one kept-alive connection


# --------------------------------------------------------------------------- bodies not wanted


class Streamer:
    """A raw server answering one request with ``head`` and then zeros until the
    client goes away or ``limit`` bytes are sent; ``sent`` counts body bytes that the
    kernel accepted. The send buffer is 64 KiB, so ``sent`` is close to what the
    client read (plus its receive buffer)."""

    def __init__(self, head: bytes, limit: int) -> None:
        self.head = head
        self.limit = limit
        self.sent = 0
        self.done = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/big.zip"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        conn.settimeout(10)
        block = b"\0" * 65536
        try:
            conn.recv(65536)
            conn.sendall(self.head)
            while self.sent < self.limit:
                self.sent += conn.send(block)
        except OSError:
            pass
        finally:
            conn.close()
            self.done.set()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.thread.join(10)


async def test_a_body_not_wanted_is_not_downloaded() -> None:
    # A 700 MB zip: the engine neither parses nor keeps it (2f3a1ea read 10 MiB first).
    size = 734_003_200
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/zip\r\nContent-Length: %d\r\n\r\n" % size
    server = Streamer(head, size)
    asked: list[str] = []

    def want(media: str) -> bool:
        asked.append(media)
        return media == "text/html"

    try:
        async with AiohttpFetcher(make_config()) as f:
            result = await f.fetch(server.url, want_body=want)
        assert server.done.wait(5)  # the server saw the connection go
    finally:
        server.close()
    assert asked == ["application/zip"]
    assert (result.status, result.content_type, result.body) == (200, "application/zip", b"")
    assert (result.skipped, result.truncated, result.sniffed) == (True, False, False)
    assert result.headers["content-length"] == str(size)
    assert server.sent < 1_000_000, f"{server.sent} bytes sent"


async def test_a_wanted_body_is_read_as_before(
    srv: HTTPTestServer, fetcher: AiohttpFetcher
) -> None:
    srv.set("/p", Response(200, {"Content-Type": "text/html"}, b"<p>x</p>" * 1000))
    result = await fetcher.fetch(srv.url("/p"), want_body=lambda media: media == "text/html")
    assert (result.body, result.skipped) == (b"<p>x</p>" * 1000, False)


async def test_a_small_body_not_wanted_keeps_its_connection() -> None:
    # The whole body came with the head (one segment): the connection stays in the pool.
    def handler(conn: socket.socket, n: int) -> str:
        if n == 1:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n"
                         b"Content-Length: 8\r\n\r\n\x89PNG\r\n\x1a\n")  # fmt: skip
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n<p>x</p>")
        return "keep"

    server = RawServer(handler)
    try:
        async with AiohttpFetcher(make_config()) as f:
            skipped = await f.fetch(server.url("/img"), want_body=lambda media: False)
            page = await f.fetch(server.url("/p"))
            connects = f.statistics().connects
    finally:
        server.close()
    assert (skipped.skipped, skipped.body, page.body) == (True, b"", b"<p>x</p>")
    assert connects == 1


# --------------------------------------------------------------------------- sniffing


def no_type(body: bytes, **headers: str) -> Response:
    """A 200 without Content-Type (http.server adds only Server and Date)."""
    return Response(200, dict(headers), body)


async def test_a_page_without_content_type_is_sniffed_as_html(
    srv: HTTPTestServer, fetcher: AiohttpFetcher
) -> None:
    page = b"\n  <!DOCTYPE html>\n<html><body>" + b"<a href='/x'>x</a>" * 500 + b"</body></html>"
    srv.set("/page", no_type(page))
    asked: list[str] = []

    def want_body(media_type: str) -> bool:
        asked.append(media_type)
        return True

    result = await fetcher.fetch(srv.url("/page"), want_body=want_body)
    assert "content-type" not in result.headers
    assert (result.content_type, result.sniffed, result.skipped) == ("text/html", True, False)
    assert result.body == page  # fetched whole, not only the resource header
    assert asked == ["text/html"]


async def test_binary_without_content_type_is_skipped_when_not_wanted() -> None:
    size = 50_000_000
    server = Streamer(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size, size)
    asked: list[str] = []

    def want(media: str) -> bool:
        asked.append(media)
        return media != "application/octet-stream"

    try:
        async with AiohttpFetcher(make_config()) as f:
            result = await f.fetch(server.url, want_body=want)
        assert server.done.wait(5)
    finally:
        server.close()
    assert asked == ["application/octet-stream"]  # sniffed from the zeros (§7.1)
    assert (result.content_type, result.sniffed, result.skipped) == (
        "application/octet-stream",
        True,
        True,
    )
    assert result.body == b""
    assert server.sent < 1_000_000, f"{server.sent} bytes sent"


@pytest.mark.parametrize(
    ("headers", "body", "expected", "sniffed"),
    [
        ({"Content-Type": "unknown/unknown"}, b"<p>hi", "text/html", True),
        ({"Content-Type": "application/unknown"}, b"<P>hi", "text/html", True),
        ({"Content-Type": "*/*"}, b"<title>t</title>", "text/html", True),
        ({"Content-Type": "html"}, b"<html>", "text/html", True),  # does not parse
        ({}, b"<?xml version='1.0'?><feed/>", "text/xml", True),
        ({}, b"%PDF-1.7\n", "application/pdf", True),
        ({}, b"just some words", "text/plain", True),
        ({}, b"GIF89a\x01\x00\x01\x00", "image/gif", True),
        ({"X-Content-Type-Options": "nosniff"}, b"<html>", "text/plain", True),
        ({"Content-Type": "text/plain"}, b"\x00\x01\x02", "application/octet-stream", True),
        ({"Content-Type": "text/plain"}, b"<html>", "text/plain", False),  # §7.2
        ({"Content-Type": "text/plain; charset=utf-8"}, b"\x00\x01", "text/plain", False),
        ({"Content-Type": "application/zip"}, b"<html>", "application/zip", False),
        ({"Content-Type": "TEXT/HTML; charset=x"}, b"\x00\x01", "text/html", False),
        ({}, b"", "", False),  # an empty body: nothing to sniff
    ],
)
async def test_the_computed_type_follows_the_standard(
    srv: HTTPTestServer,
    fetcher: AiohttpFetcher,
    headers: dict[str, str],
    body: bytes,
    expected: str,
    sniffed: bool,
) -> None:
    srv.set("/r", Response(200, headers, body))
    result = await fetcher.fetch(srv.url("/r"))
    assert (result.content_type, result.sniffed, result.body) == (expected, sniffed, body)


async def test_the_last_content_type_is_the_supplied_one(
    srv: HTTPTestServer, fetcher: AiohttpFetcher
) -> None:
    pairs = [("Content-Type", "application/json"), ("Content-Type", "text/html")]
    srv.set("/two", Response(200, pairs, b"{}"))
    result = await fetcher.fetch(srv.url("/two"))
    assert (result.content_type, result.sniffed) == ("text/html", False)  # §5.1


async def test_a_compressed_page_is_sniffed_after_decoding(
    srv: HTTPTestServer, fetcher: AiohttpFetcher
) -> None:
    page = b"<HTML><body>" + b"<p>hello</p>" * 2000
    srv.set("/gz", no_type(gzip.compress(page), **{"Content-Encoding": "gzip"}))
    result = await fetcher.fetch(srv.url("/gz"))
    assert (result.content_type, result.sniffed, result.body) == ("text/html", True, page)


async def test_sniffing_keeps_the_byte_cap(srv: HTTPTestServer, fetcher: AiohttpFetcher) -> None:
    page = b"<html>" + b"x" * 5000
    srv.set("/cap", no_type(page))
    result = await fetcher.fetch(srv.url("/cap"), max_bytes=100)
    assert (result.content_type, result.body, result.truncated) == ("text/html", page[:100], True)
    result = await fetcher.fetch(srv.url("/cap"), max_bytes=3000)
    assert (result.body, result.truncated) == (page[:3000], True)


async def test_a_body_drip_while_sniffing_is_bounded_by_the_total_budget(
    srv: HTTPTestServer,
) -> None:
    # An untyped body whose first bytes trickle: sniffing waits for 1445 bytes or the
    # end, within the read and total budgets as every read does.
    srv.set_raw(
        "/untyped",
        lambda req, out: (
            out.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n<p>"),
            srv.wait(5),
        ),
    )
    async with AiohttpFetcher(make_config(read_timeout_ms=2000, total_timeout_ms=300)) as f:
        with pytest.raises(FetchTimeout) as info:
            await f.fetch(srv.url("/untyped"), want_body=lambda media: False)
    # the total budget cut it (the read budget of 2 s would say "read timeout")
    assert str(info.value) == f"total time budget of 300 ms exceeded: {srv.url('/untyped')}"
