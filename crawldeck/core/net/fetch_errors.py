"""The ``core.errors`` error for each error aiohttp, the socket or a decoder raises
while fetching a URL, and the one-line detail each message carries.

Separate from ``core.net.fetcher`` because it is a table of its own, one branch per foreign
error, each met by a test against a real loopback server (``tests/loopback/test_fetcher.py``,
``tests/loopback/test_failure_kinds.py``); the fetcher and its body reader
(``core.net.body_reader``) both use it, and nothing foreign escapes either.
"""

from __future__ import annotations

import errno
import os
import ssl
import zlib

import aiohttp
import brotli

from crawldeck.core.config import CrawlConfig
from crawldeck.core.errors import (
    ConnectFailed,
    ConnectionLost,
    ConnectRefused,
    FetchTimeout,
    ProtocolViolation,
    ProxyRefused,
    RequestInvalid,
    TlsFailed,
)

#: The longest detail from a foreign error kept in a message, characters.
DETAIL_CHARS = 300


def one_line(exc: BaseException | str) -> str:
    """``str(exc)`` on one line, at most ``DETAIL_CHARS`` characters, or the
    exception's class name when it says nothing. Lines holding only a caret (the
    pointer under the bad byte in aiohttp's parser messages) are dropped."""
    lines = str(exc).splitlines()
    text = " ".join(" ".join(line.split()) for line in lines if line.strip(" ^"))
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1]  # the caller goes on with ": url"
    if len(text) > DETAIL_CHARS:
        text = text[: DETAIL_CHARS - 3] + "..."
    return text or type(exc).__name__


def translate(exc: Exception, url: str, config: CrawlConfig) -> Exception:
    """The ``core.errors`` error for ``exc``, an error aiohttp (or the socket, or
    zlib) raised while fetching ``url``; anything else is returned as it is. ``config``
    gives the time budgets the timeout messages name (``connect_timeout_ms``,
    ``read_timeout_ms``, ``total_timeout_ms``).

    What aiohttp raises, each met by a test against a real loopback server
    (``tests/loopback/test_fetcher.py``, ``tests/loopback/test_failure_kinds.py``): a refused or
    unreachable port ``ClientConnectorError`` (``ClientProxyConnectionError`` for the
    proxy's: ``ProxyRefused``, the message naming the proxy); an untrusted certificate
    ``ClientConnectorCertificateError``; no TLS on the port
    ``ClientConnectorSSLError``; a close before the head
    ``ServerDisconnectedError``, a reset ``ClientOSError``; a bad status line,
    header or chunk size, a line too long, too many headers ``ClientResponseError``
    (its message from the parser's ``BadHttpMessage``/``LineTooLong``); a short
    body ``ClientPayloadError`` (handled in ``core.net.body_reader.BodyReader``, which knows
    the connection).
    """
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return FetchTimeout(f"connect timeout ({config.connect_timeout_ms} ms): {url}")
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return FetchTimeout(f"read timeout ({config.read_timeout_ms} ms): {url}")
    if isinstance(exc, TimeoutError):
        total_ms = config.total_timeout_ms
        return FetchTimeout(f"total time budget of {total_ms} ms exceeded: {url}")
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        problem = one_line(exc.certificate_error)
        return TlsFailed(f"TLS certificate refused: {problem}: {url}")
    if isinstance(exc, aiohttp.ClientConnectorSSLError) and not isinstance(
        exc.os_error,
        ssl.SSLEOFError,  # dropped mid-handshake: a ConnectFailed
    ):
        problem = one_line(exc.os_error)
        if "WRONG_VERSION_NUMBER" in problem:  # the answer was no TLS at all
            problem += " (the server answered in plain HTTP: is it an http:// URL?)"
        return TlsFailed(f"TLS handshake failed: {problem}: {url}")
    if isinstance(exc, aiohttp.ClientConnectorError):
        # a ClientProxyConnectionError is the proxy's connection: its host and port
        proxy = isinstance(exc, aiohttp.ClientProxyConnectionError)
        where = f"the proxy {exc.host}:{exc.port}" if proxy else f"{exc.host}:{exc.port}"
        code = exc.os_error.errno
        refused = code == errno.ECONNREFUSED
        # asyncio's "[Errno 111] Connect call failed ('127.0.0.1', 9)" names the
        # address once more: the OS's words for the errno say what happened
        problem = (
            f"[Errno {code}] {os.strerror(code)}"
            if isinstance(code, int) and not isinstance(exc.os_error, ssl.SSLError)
            else one_line(exc.os_error)
        )
        refusal = ProxyRefused if proxy else ConnectRefused
        return (refusal if refused else ConnectFailed)(
            f"connection failed: cannot connect to {where}: {problem}: {url}"
        )
    if isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError | ValueError):
        return RequestInvalid(f"cannot request {url!r}: {one_line(exc)}")
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return ConnectionLost(f"connection closed before the response head was complete: {url}")
    if isinstance(exc, aiohttp.ClientOSError | ConnectionError):
        return ConnectionLost(f"connection lost: {one_line(exc)}: {url}")
    if isinstance(exc, aiohttp.ClientResponseError):  # aiohttp's parser refused it
        problem = one_line(exc.message) if exc.message else one_line(exc)
        return ProtocolViolation(f"invalid HTTP response: {problem}: {url}")
    if isinstance(exc, aiohttp.ClientPayloadError | zlib.error | brotli.error):
        return ProtocolViolation(f"invalid HTTP response: {one_line(exc)}: {url}")
    if isinstance(exc, aiohttp.ClientError | OSError):
        return ConnectFailed(f"connection failed: {one_line(exc)}: {url}")
    return exc


__all__ = ["DETAIL_CHARS", "one_line", "translate"]
