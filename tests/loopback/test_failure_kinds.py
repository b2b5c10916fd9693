"""Every way a fetch fails, against a real server on loopback: which ``core.errors``
class it is, whether it is ``retryable`` (transient: keep the retry budget) or not
(deterministic: record it after one try), and that its message is one line.

Issue #10 item 10. The servers are raw sockets (``RawServer``), so each misbehaviour
is exactly the bytes (or the TCP reset) written here; what aiohttp raises for each is
noted in ``core.net.fetch_errors.translate``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from dnsserver import StubDnsServer
from failurekit import assert_kind, config, fetch_error
from rawserver import Handler, RawServer, reset

from crawldeck.core.errors import (
    ConnectFailed,
    ConnectionLost,
    ConnectRefused,
    DnsNotFound,
    DnsTemporaryFailure,
    FetchError,
    FetchTimeout,
    ProtocolViolation,
    RequestInvalid,
    TlsFailed,
)
from crawldeck.core.net.dns import DnsCache, DnsSettings
from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.net.transport import PinningResolver
from crawldeck.core.policy.address_policy import AddressPolicy, AddressPolicySettings
from crawldeck.core.records import FetchResult


@pytest.fixture
def serve() -> Iterator[Callable[..., RawServer]]:
    servers: list[RawServer] = []

    def make(handler: Handler, wrap: ssl.SSLContext | None = None) -> RawServer:
        servers.append(RawServer(handler, wrap))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def sends(*parts: bytes, then: str = "fin", pause_s: float = 0.05) -> Handler:
    """A handler writing ``parts`` (pausing between them) and then closing with a
    FIN (``"fin"``) or a reset (``"rst"``)."""

    def handler(conn: socket.socket, n: int) -> None:
        for i, part in enumerate(parts):
            if i:
                time.sleep(pause_s)
            conn.sendall(part)
        if then == "rst":
            time.sleep(pause_s)  # let the client read what was sent
            reset(conn)

    return handler


HEAD_200 = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"

# --------------------------------------------------------------------------- transient


def test_a_refused_connection_is_retryable() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # bound, not listening: connecting is refused
    port = sock.getsockname()[1]
    try:
        exc = fetch_error(f"http://127.0.0.1:{port}/")
    finally:
        sock.close()
    assert_kind(  # a ConnectFailed, told apart (core.crawl.retries tries it once on a new host)
        exc, ConnectRefused, True, f"connection failed: cannot connect to 127.0.0.1:{port}: "
    )
    assert "[Errno 111]" in str(exc)


def test_a_close_before_any_reply_is_retryable_and_sent_once(
    serve: Callable[..., RawServer],
) -> None:
    # aiohttp resends a GET whose connection closes before the reply, even on a new
    # connection: a host that drops requests got each one twice (2f3a1ea: 2 requests,
    # ConnectFailed).
    server = serve(sends())
    exc = fetch_error(server.url())
    assert_kind(exc, ConnectionLost, True, "connection closed before the response head")
    assert server.requests == 1


def test_a_reset_before_any_reply_is_retryable_and_sent_once(
    serve: Callable[..., RawServer],
) -> None:
    server = serve(lambda conn, n: reset(conn))
    exc = fetch_error(server.url())
    assert_kind(exc, ConnectionLost, True, "connection lost: [Errno 104]")
    assert server.requests == 1


def test_a_close_in_the_middle_of_the_head_is_retryable(
    serve: Callable[..., RawServer],
) -> None:
    server = serve(sends(b"HTTP/1.1 200 OK\r\nContent-Le"))
    exc = fetch_error(server.url())
    assert_kind(exc, ConnectionLost, True, "connection closed before the response head")


def test_a_reset_in_the_middle_of_a_sized_body_is_retryable(
    serve: Callable[..., RawServer],
) -> None:
    server = serve(sends(HEAD_200 + b"Content-Length: 100\r\n\r\nonly ten b", then="rst"))
    exc = fetch_error(server.url())
    assert_kind(exc, ConnectionLost, True, "connection lost before the end of the body: ")


def test_a_reset_in_the_middle_of_a_chunked_body_is_retryable(
    serve: Callable[..., RawServer],
) -> None:
    server = serve(sends(HEAD_200 + b"Transfer-Encoding: chunked\r\n\r\n10\r\nabc", then="rst"))
    exc = fetch_error(server.url())
    assert_kind(exc, ConnectionLost, True, "connection lost before the end of the body: ")


def test_a_reset_close_delimited_body_is_not_a_whole_page(
    serve: Callable[..., RawServer],
) -> None:
    # No Content-Length, no chunks: the body ends when the connection does, and
    # aiohttp's parser takes a reset for the end (2f3a1ea: 200 with half a page).
    server = serve(sends(HEAD_200 + b"Connection: close\r\n\r\n<p>half a pa", then="rst"))
    exc = fetch_error(server.url())
    assert_kind(exc, ConnectionLost, True, "connection lost before the end of the body: ")


def test_a_clean_close_ends_a_close_delimited_body(serve: Callable[..., RawServer]) -> None:
    server = serve(sends(HEAD_200 + b"Connection: close\r\n\r\n<p>whole</p>"))

    async def go() -> FetchResult:
        async with AiohttpFetcher(config()) as fetcher:
            return await fetcher.fetch(server.url())

    result = asyncio.run(go())
    assert (result.status, result.body, result.truncated) == (200, b"<p>whole</p>", False)


def test_a_kept_alive_connection_closed_meanwhile_is_resent_once(
    serve: Callable[..., RawServer],
) -> None:
    # The keep-alive race (RFC 9112 §9.3.1.1): the server closes an idle connection
    # as the next request goes out on it. That one request is resent on a new
    # connection, as before.
    def handler(conn: socket.socket, n: int) -> str | None:
        if n == 1:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none")
            return "keep"
        if n == 2:
            return None  # close without answering
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo")
        return None

    server = serve(handler)

    async def go() -> list[bytes]:
        async with AiohttpFetcher(config()) as fetcher:
            first = await fetcher.fetch(server.url("/1"))
            second = await fetcher.fetch(server.url("/2"))
            assert fetcher.statistics().connects == 2
            return [first.body, second.body]

    assert asyncio.run(go()) == [b"one", b"two"]
    assert server.requests == 3


def test_a_read_timeout_is_retryable(serve: Callable[..., RawServer]) -> None:
    stop = threading.Event()
    server = serve(lambda conn, n: stop.wait(5))
    try:
        exc = fetch_error(server.url(), config(read_timeout_ms=150))
    finally:
        stop.set()
    assert_kind(exc, FetchTimeout, True, "read timeout (150 ms): ")


def test_a_drip_past_the_total_budget_is_retryable(serve: Callable[..., RawServer]) -> None:
    stop = threading.Event()

    def drip(conn: socket.socket, n: int) -> None:
        conn.sendall(HEAD_200 + b"Content-Length: 1000\r\n\r\n")
        while not stop.wait(0.02):
            conn.sendall(b"x")

    server = serve(drip)
    try:
        exc = fetch_error(server.url(), config(total_timeout_ms=300))
    finally:
        stop.set()
    assert_kind(exc, FetchTimeout, True, "total time budget of 300 ms exceeded: ")


def test_a_tls_handshake_dropped_by_the_server_is_retryable() -> None:
    # A plain server that closes at once, in the middle of the TLS handshake.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)

    def drop() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            conn.close()

    thread = threading.Thread(target=drop, daemon=True)
    thread.start()
    try:
        exc = fetch_error(f"https://127.0.0.1:{listener.getsockname()[1]}/")
    finally:
        listener.close()
        thread.join(5)
    assert_kind(exc, ConnectFailed, True, "connection failed: cannot connect to 127.0.0.1:")
    # the client's hello meets a FIN or a reset, depending on timing
    reasons = ("ConnectionResetError", "[Errno 104] Connection reset by peer", "EOF occurred")
    assert str(exc).split(": ")[2].startswith(reasons), str(exc)


# --------------------------------------------------------------------------- deterministic


@pytest.mark.parametrize(
    ("reply", "start"),
    [
        (b"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n", "invalid HTTP response: Bad status line"),
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "invalid HTTP response: Bad status line"),
        (b"<html>HTTP/0.9 style</html>", "invalid HTTP response: Bad status line"),
        (
            b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 20_000 + b"\r\nContent-Length: 0\r\n\r\n",
            "invalid HTTP response: Got more than 8190 bytes",
        ),
        (
            b"HTTP/1.1 200 " + b"O" * 20_000 + b"\r\nContent-Length: 0\r\n\r\n",
            "invalid HTTP response: Got more than 8190 bytes",
        ),
        (
            b"HTTP/1.1 200 OK\r\n"
            + b"".join(b"X-%d: 1\r\n" % i for i in range(200))
            + b"Content-Length: 0\r\n\r\n",
            "invalid HTTP response: Too many headers",
        ),
        (
            b"HTTP/1.1 200 OK\r\nBad Header\r\nContent-Length: 0\r\n\r\n",
            "invalid HTTP response: Invalid header token",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
            "invalid HTTP response: Duplicate Content-Length",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
            "invalid HTTP response: Invalid character in chunk size",
        ),
    ],
    ids=[
        "bad-status-code",
        "not-http",
        "http-0.9",
        "header-line-too-long",
        "status-line-too-long",
        "too-many-headers",
        "header-without-colon",
        "two-content-lengths",
        "bad-chunk-size",
    ],
)
def test_a_malformed_head_or_framing_is_not_retryable(
    serve: Callable[..., RawServer], reply: bytes, start: str
) -> None:
    server = serve(sends(reply))
    exc = fetch_error(server.url())
    assert_kind(exc, ProtocolViolation, False, start)
    assert server.requests == 1


def test_a_bad_chunk_size_after_the_head_is_not_retryable(
    serve: Callable[..., RawServer],
) -> None:
    server = serve(sends(HEAD_200 + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", b"zz\r\n"))
    exc = fetch_error(server.url())
    assert_kind(exc, ProtocolViolation, False, "invalid HTTP response: ")


def test_a_short_sized_body_is_not_retryable(serve: Callable[..., RawServer]) -> None:
    # A clean close before Content-Length bytes: the server sends the same bytes
    # every time (2f3a1ea: ProtocolViolation too, but no way to tell it from a reset).
    server = serve(sends(HEAD_200 + b"Content-Length: 100\r\n\r\nonly ten b"))
    exc = fetch_error(server.url())
    assert_kind(exc, ProtocolViolation, False, "short body: Not enough data")
    assert "received 10 of 100 bytes" in str(exc)


def test_a_chunked_body_cut_short_is_not_retryable(serve: Callable[..., RawServer]) -> None:
    server = serve(sends(HEAD_200 + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"))
    exc = fetch_error(server.url())
    assert_kind(exc, ProtocolViolation, False, "short body: Not enough data")


def test_a_compressed_body_that_does_not_end_is_not_retryable(
    serve: Callable[..., RawServer],
) -> None:
    packed = gzip.compress(b"".join(b"<p>%d</p>" % i for i in range(5000)))
    assert len(packed) > 2000
    server = serve(
        sends(HEAD_200 + b"Content-Encoding: gzip\r\nConnection: close\r\n\r\n" + packed[:1000])
    )
    exc = fetch_error(server.url())
    assert_kind(exc, ProtocolViolation, False, "invalid HTTP response: compressed body cut short")


def test_a_compressed_body_that_does_not_decode_is_not_retryable(
    serve: Callable[..., RawServer],
) -> None:
    body = b"this is not gzip at all"
    server = serve(sends(HEAD_200 + b"Content-Encoding: gzip\r\nContent-Length: 23\r\n\r\n" + body))
    exc = fetch_error(server.url())
    assert_kind(exc, ProtocolViolation, False, "invalid HTTP response: Error -3")


@pytest.mark.parametrize(
    ("coding", "start"),
    [
        (b"gzip, gzip", "stacked content codings gzip, gzip refused"),
        (b"zstd", "unknown content coding 'zstd' refused"),
    ],
)
def test_stacked_or_unknown_codings_are_not_retryable(
    serve: Callable[..., RawServer], coding: bytes, start: str
) -> None:
    server = serve(
        sends(HEAD_200 + b"Content-Encoding: " + coding + b"\r\nContent-Length: 2\r\n\r\nhi")
    )
    exc = fetch_error(server.url())
    assert_kind(exc, ProtocolViolation, False, start)


def test_a_header_that_cannot_be_sent_is_not_retryable(serve: Callable[..., RawServer]) -> None:
    server = serve(sends(b"HTTP/1.1 204 No Content\r\n\r\n"))

    async def go() -> FetchError:
        async with AiohttpFetcher(config()) as fetcher:
            with pytest.raises(FetchError) as info:
                await fetcher.fetch(server.url(), headers={"Cookie": "a=1\r\nX-Evil: 1"})
            return info.value

    assert_kind(asyncio.run(go()), RequestInvalid, False, "cannot request ")
    assert server.requests == 0


def test_an_untrusted_certificate_is_not_retryable(
    serve: Callable[..., RawServer], certificate: tuple[Path, Path]
) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    server = serve(sends(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), wrap=context)
    exc = fetch_error(server.url(scheme="https"))  # the system CA store: self-signed
    assert_kind(exc, TlsFailed, False, "TLS certificate refused: ")
    assert "CERTIFICATE_VERIFY_FAILED" in str(exc)


def test_the_same_certificate_trusted_is_fetched(
    serve: Callable[..., RawServer], certificate: tuple[Path, Path]
) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    server = serve(sends(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), wrap=context)

    async def go() -> bytes:
        client = ssl.create_default_context(cafile=str(certificate[0]))
        async with AiohttpFetcher(config(), ssl_context=client) as fetcher:
            return (await fetcher.fetch(server.url(scheme="https"))).body

    assert asyncio.run(go()) == b"ok"


def test_https_to_a_plain_http_port_is_not_retryable() -> None:
    # A plain HTTP server answers the TLS ClientHello with an HTTP error, as nginx does.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)

    def answer() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            conn.close()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        exc = fetch_error(f"https://127.0.0.1:{listener.getsockname()[1]}/")
    finally:
        listener.close()
        thread.join(5)
    assert_kind(exc, TlsFailed, False, "TLS handshake failed: ")
    assert "WRONG_VERSION_NUMBER" in str(exc)
    assert "(the server answered in plain HTTP: is it an http:// URL?)" in str(exc)


def test_dns_failures_say_whether_to_retry() -> None:
    async def go(nameserver: str, name: str) -> FetchError:
        cfg = config(dns_nameservers=[nameserver], dns_timeout_ms=2000, dns_retries=1)
        dns = DnsCache(DnsSettings.from_config(cfg))
        try:
            resolver = PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(cfg)))
            async with AiohttpFetcher(cfg, resolver=resolver) as fetcher:
                with pytest.raises(FetchError) as info:
                    await fetcher.fetch(f"http://{name}/")
                return info.value
        finally:
            await dns.aclose()

    with StubDnsServer(3) as nxdomain:
        missing = asyncio.run(go(nxdomain.nameserver, "missing.crawl.test"))
    with StubDnsServer(2) as servfail:
        temporary = asyncio.run(go(servfail.nameserver, "flaky.crawl.test"))
    assert type(missing) is DnsNotFound and missing.retryable is False
    assert type(temporary) is DnsTemporaryFailure and temporary.retryable is True
    for exc in (missing, temporary):
        assert len(str(exc).splitlines()) == 1
