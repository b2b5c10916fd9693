"""core.net.fetcher:
the tests that need no server, process or console (pure logic, the store, virtual time);
the others are in ``tests/loopback/test_fetcher.py``."""

from __future__ import annotations

import ssl
import zlib

import aiohttp
import fetcherkit
import pytest
from aiohttp.client_reqrep import ConnectionKey
from fetcherkit import make_config
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from crawldeck.core.errors import (
    ConnectFailed,
    ConnectionLost,
    ConnectRefused,
    FetchError,
    FetchTimeout,
    ProtocolViolation,
    RequestInvalid,
    TlsFailed,
)
from crawldeck.core.net.fetcher import AiohttpFetcher, media_type

#: The fixtures shared with the other tier's file, as fixtures of this module.
fetcher = fetcherkit.fetcher


def _request_info() -> aiohttp.RequestInfo:
    url = URL("http://example.test/")
    return aiohttp.RequestInfo(url, "GET", CIMultiDictProxy(CIMultiDict()), url)


def _key() -> ConnectionKey:
    return ConnectionKey("h", 80, is_ssl=False, ssl=True, proxy=None, proxy_auth=None,
                         proxy_headers_hash=None)  # fmt: skip


@pytest.mark.parametrize(
    ("exc", "expected", "prefix"),
    [
        (aiohttp.ConnectionTimeoutError("t"), FetchTimeout, "connect timeout (1000 ms)"),
        (aiohttp.SocketTimeoutError("t"), FetchTimeout, "read timeout (1000 ms)"),
        (TimeoutError(), FetchTimeout, "total time budget of 3000 ms exceeded"),
        (
            aiohttp.ClientConnectorError(_key(), OSError(111, "no\nroute")),
            ConnectRefused,  # ECONNREFUSED
            # the OS's words for the errno, not asyncio's "Connect call failed (addr)"
            "connection failed: cannot connect to h:80: [Errno 111] Connection refused: http",
        ),
        (
            aiohttp.ClientConnectorSSLError(_key(), ssl.SSLEOFError(8, "EOF")),
            ConnectFailed,
            "connection failed: cannot connect to h:80: EOF: http",
        ),
        (
            aiohttp.ClientConnectorSSLError(_key(), ssl.SSLError(1, "WRONG_VERSION")),
            TlsFailed,
            "TLS handshake failed: WRONG_VERSION",
        ),
        (
            aiohttp.ClientConnectorCertificateError(_key(), ssl.CertificateError("expired")),
            TlsFailed,
            "TLS certificate refused: ",
        ),
        (
            aiohttp.ServerDisconnectedError(),
            ConnectionLost,
            "connection closed before the response head was complete",
        ),
        (aiohttp.ClientOSError(32, "pipe"), ConnectionLost, "connection lost: [Errno 32] pipe"),
        (ConnectionResetError(104, "reset"), ConnectionLost, "connection lost: [Errno 104]"),
        (aiohttp.InvalidURL("x"), RequestInvalid, "cannot request"),
        (aiohttp.NonHttpUrlClientError("ftp://x"), RequestInvalid, "cannot request"),
        (
            aiohttp.ClientResponseError(_request_info(), (), status=400, message="Bad\nline\n ^"),
            ProtocolViolation,
            "invalid HTTP response: Bad line: http",
        ),
        (aiohttp.ClientPayloadError("bad chunk"), ProtocolViolation, "invalid HTTP response: bad"),
        (zlib.error("incorrect header"), ProtocolViolation, "invalid HTTP response: incorrect"),
        (OSError(5, "odd"), ConnectFailed, "connection failed: [Errno 5] odd"),
    ],
)
async def test_every_client_error_is_translated(
    exc: Exception, expected: type[FetchError], prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The translation table itself; each row's real cause is met by a test against a
    # hostile server (here and in tests/loopback/test_failure_kinds.py).
    async def fail(*args: object) -> None:
        raise exc

    async with AiohttpFetcher(make_config()) as f:
        monkeypatch.setattr(f, "_get", fail)
        with pytest.raises(FetchError) as info:
            await f.fetch("http://example.test/")
    assert type(info.value) is expected
    assert info.value.retryable is expected.retryable
    assert str(info.value).startswith(prefix)
    assert str(info.value).endswith("http://example.test/") or prefix == "cannot request"
    assert "\n" not in str(info.value)
    assert info.value.__cause__ is None


@pytest.mark.parametrize("url", ["ftp://example.test/file", "http://[::1/"])
async def test_urls_that_cannot_be_requested(fetcher: AiohttpFetcher, url: str) -> None:
    with pytest.raises(RequestInvalid) as info:
        await fetcher.fetch(url)
    assert str(info.value).startswith(f"cannot request {url!r}: ")
    assert info.value.retryable is False


async def test_aclose_is_idempotent() -> None:
    f = AiohttpFetcher(make_config())
    await f.aclose()
    await f.aclose()


def test_media_type() -> None:
    assert media_type("Text/HTML; charset=utf-8") == "text/html"
    assert media_type(" application/json ") == "application/json"
    assert media_type("") == ""
    assert media_type(None) == ""
