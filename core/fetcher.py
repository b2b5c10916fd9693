"""One HTTP GET with caps on time and bytes: the crawler's only door to the network.

``Fetcher.fetch(url)`` sends one request with httpx and never follows a redirect (the
engine sends each ``Location`` back through the URL gates as a new hop). A 3xx comes
back with its ``Location`` header as the server sent it, whatever it says
(``mailto:``, a raw UTF-8 host, junk): httpx would parse it to build a next request
even with ``follow_redirects=False`` and raise, so a response hook sets it aside before
httpx looks and ``fetch`` puts it back (the engine resolves it with
``core.urls.clean``, which blocks what cannot be crawled). It reads the *decoded* body
(gzip and deflate undone) and stops at ``max_bytes``, so a compression bomb costs at
most ``max_bytes`` of kept body. Every httpx error is translated here into the
``core.errors`` tree; nothing foreign escapes.

Content codings: requests say ``Accept-Encoding: gzip, deflate`` (the codings whose
cost we know); a response whose ``Content-Encoding`` lists more than one coding
(``gzip, gzip``: each layer multiplies the bomb, 4 MB on the wire became 8 GB of
memory) or one we do not decode (``br``, ``compress``, junk) is refused with
``ProtocolViolation`` before its body is read. ``identity`` is no coding.

Budgets (``CrawlConfig``):
    connect_timeout_ms  TCP (and TLS) connection setup.
    read_timeout_ms     the longest silence while waiting for headers or body bytes
                        (also used for writing the request).
    total_timeout_ms    the whole fetch, headers and body, whatever the server drips.
    max_body_bytes      decoded body bytes kept; more sets ``truncated``.

A note on memory: httpx decodes each network read (at most 64 KiB) in one piece, so a
single decoded chunk of a deflate bomb can be ~1000x that (about 64 MiB) before the cap
applies to it. The cap bounds what is kept, the chunk bounds what is transiently held.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from types import TracebackType

import httpx

from core.config import CrawlConfig
from core.errors import ConnectFailed, FetchError, FetchTimeout, ProtocolViolation

#: Sent with every request; the engine only parses HTML, the rest is recorded as is.
_ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"
#: The content codings we accept and decode (httpx would add br/zstd when their
#: packages are installed; we only take codings whose decoding we bound).
_ACCEPT_ENCODING = "gzip, deflate"
_DECODED_CODINGS = frozenset({"gzip", "x-gzip", "deflate"})
#: Where the response hook keeps the headers as received (with ``Location``).
_RECEIVED_HEADERS = "crawldeck.received_headers"


async def _set_location_aside(response: httpx.Response) -> None:
    """httpx response hook: hide ``Location`` from httpx's redirect handling.

    Hooks run before httpx builds ``response.next_request`` from the ``Location`` of a
    3xx (it does even with ``follow_redirects=False``), which raises for a
    ``mailto:``, a raw UTF-8 host or an unparseable value. The headers as received are
    kept in ``response.extensions`` and ``Fetcher._get`` puts them back. Never raises.
    """
    if "location" in response.headers:
        response.extensions[_RECEIVED_HEADERS] = response.headers
        headers = response.headers.copy()
        del headers["location"]
        response.headers = headers


def _content_coding(headers: httpx.Headers, url: str) -> str | None:
    """The one content coding of ``headers`` (lowercase), or ``None`` for none.

    ``identity`` and empty items do not count.

    Raises:
        ProtocolViolation: more than one coding (stacked, in one header or several),
            or a coding other than gzip/x-gzip/deflate.
    """
    codings = [
        coding
        for value in headers.get_list("content-encoding", split_commas=True)
        if (coding := value.strip().lower()) and coding != "identity"
    ]
    if not codings:
        return None
    if len(codings) > 1:
        listed = ", ".join(codings)[:200]
        raise ProtocolViolation(f"stacked content codings {listed} refused: {url}")
    if codings[0] not in _DECODED_CODINGS:
        raise ProtocolViolation(f"unknown content coding {codings[0][:100]!r} refused: {url}")
    return codings[0]


@dataclass(frozen=True, slots=True)
class FetchResult:
    """The response to one GET, with its body cut at the byte cap.

    Attributes:
        url: the URL requested, exactly as passed to ``Fetcher.fetch`` (no redirect is
            followed, so it is also the final URL).
        status: the HTTP status code (any code: 3xx, 4xx and 5xx are results, not errors).
        headers: the response headers, a case-insensitive ``Mapping[str, str]``
            (``httpx.Headers``; a header sent several times reads as its values joined
            with ``", "``, ``headers.get_list(name)`` gives them apart).
        body: the decoded body (Content-Encoding gzip/deflate undone), at most
            ``max_bytes`` bytes.
        content_type: the media type of ``Content-Type``, lowercased, without parameters
            (``"text/html"``); ``""`` when the header is absent.
        elapsed_ms: milliseconds from the start of the request to the end of the body
            read (or to the cut, when truncated).
        truncated: ``True`` when the decoded body was longer than ``max_bytes`` and was
            cut to its first ``max_bytes`` bytes.
    """

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes
    content_type: str
    elapsed_ms: float
    truncated: bool


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` value: lowercased, parameters dropped.

    ``"Text/HTML; charset=UTF-8"`` -> ``"text/html"``; ``None`` or ``""`` -> ``""``
    (RFC 9110 §8.3.1). Never raises.
    """
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def _one_line(exc: BaseException) -> str:
    """``str(exc)`` on one line, or the exception's class name when it says nothing."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


class Fetcher:
    """An httpx client set up for crawling; ``fetch`` is safe to call concurrently.

    Args:
        config: the crawl configuration (User-Agent, time budgets in ms, body cap).
        transport: an ``httpx.AsyncBaseTransport`` to use instead of the network (tests,
            or a DNS-pinning transport); with it, the connection limits below are the
            transport's business.

    The client: HTTP/1.1 only, no automatic redirects, no cookies kept (every fetch is
    stateless, so no session-id trap can grow from a cookie), proxies and ``.netrc``
    from the environment ignored (``trust_env=False``), keep-alive pool sized for many
    hosts (``max(64, 4 x concurrency)`` connections, idle ones kept a little longer than
    the politeness delay). Close it with ``await fetcher.aclose()`` or use
    ``async with Fetcher(config) as fetcher``.
    """

    def __init__(
        self, config: CrawlConfig, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._config = config
        read_s = config.read_timeout_ms / 1000
        timeout = httpx.Timeout(
            connect=config.connect_timeout_ms / 1000,
            read=read_s,
            write=read_s,
            # Waiting for a free connection is bounded by the total deadline anyway.
            pool=config.total_timeout_ms / 1000,
        )
        connections = max(64, 4 * config.concurrency)
        limits = httpx.Limits(
            max_connections=connections,
            max_keepalive_connections=connections,
            # Long enough to reuse a connection after one politeness delay.
            keepalive_expiry=min(60.0, max(5.0, 2 * config.delay_ms / 1000)),
        )
        self._client = httpx.AsyncClient(
            headers={
                "User-Agent": config.user_agent,
                "Accept": _ACCEPT,
                "Accept-Encoding": _ACCEPT_ENCODING,
            },
            timeout=timeout,
            limits=limits,
            transport=transport,
            follow_redirects=False,
            http1=True,
            http2=False,
            trust_env=False,
            cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
            event_hooks={"response": [_set_location_aside]},
        )

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client and its pooled connections; idempotent. Never raises."""
        await self._client.aclose()

    async def fetch(self, url: str, *, max_bytes: int | None = None) -> FetchResult:
        """GET ``url`` once, without following redirects, reading at most ``max_bytes``.

        Args:
            url: an absolute http(s) URL (cleaned by ``core.urls.clean``).
            max_bytes: cap on the decoded body in bytes; ``None`` means
                ``config.max_body_bytes``. A longer body is cut to its first
                ``max_bytes`` bytes and the result has ``truncated=True``; the rest is
                not read (the connection is dropped, not reused).

        Returns:
            A ``FetchResult`` for any HTTP status.

        Raises:
            FetchTimeout: connect timeout, read (or write) timeout, or the whole fetch
                took longer than ``total_timeout_ms``.
            ConnectFailed: DNS failure, connection refused or reset, TLS failure,
                connection lost mid-body, or a URL httpx cannot request.
            ProtocolViolation: the server's reply is not valid HTTP/1.1, its
                Content-Encoding is stacked (``gzip, gzip``) or not gzip/deflate, or
                its body cannot be decoded.

        A 3xx is a result like any other: its ``Location`` is returned untouched,
        however malformed; nothing is done with it here.
        """
        limit = self._config.max_body_bytes if max_bytes is None else max_bytes
        total_ms = self._config.total_timeout_ms
        started = time.perf_counter()
        try:
            async with asyncio.timeout(total_ms / 1000):
                return await self._get(url, limit, started)
        except TimeoutError:
            raise FetchTimeout(f"total time budget of {total_ms} ms exceeded: {url}") from None
        except httpx.TimeoutException as exc:
            kind = {
                httpx.ConnectTimeout: f"connect timeout ({self._config.connect_timeout_ms} ms)",
                httpx.ReadTimeout: f"read timeout ({self._config.read_timeout_ms} ms)",
                httpx.WriteTimeout: f"write timeout ({self._config.read_timeout_ms} ms)",
                httpx.PoolTimeout: "no free connection in time",
            }.get(type(exc), "timeout")
            raise FetchTimeout(f"{kind}: {url}") from None
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            raise ConnectFailed(f"cannot request {url!r}: {_one_line(exc)}") from None
        except httpx.NetworkError as exc:
            raise ConnectFailed(f"connection failed: {_one_line(exc)}: {url}") from None
        except (httpx.ProtocolError, httpx.DecodingError) as exc:
            raise ProtocolViolation(f"invalid HTTP response: {_one_line(exc)}: {url}") from None
        except httpx.TransportError as exc:  # proxy errors and anything httpx adds later
            raise ConnectFailed(f"transport error: {_one_line(exc)}: {url}") from None
        except httpx.HTTPError as exc:
            raise ProtocolViolation(f"HTTP error: {_one_line(exc)}: {url}") from None
        except httpx.StreamError as exc:  # pragma: no cover - a bug in this module
            raise FetchError(f"stream error: {_one_line(exc)}: {url}") from None

    async def _get(self, url: str, limit: int, started: float) -> FetchResult:
        """The request itself; httpx errors propagate to ``fetch``, which translates them."""
        async with self._client.stream("GET", url) as response:
            received = response.extensions.pop(_RECEIVED_HEADERS, None)
            headers = received if isinstance(received, httpx.Headers) else response.headers
            if _content_coding(headers, url) == "x-gzip":
                # RFC 9110 §8.4.1.3: x-gzip is gzip; httpx only knows the latter name
                decoding = headers.copy()
                decoding["content-encoding"] = "gzip"
                response.headers = decoding
            else:
                response.headers = headers  # Location back, as the server sent it
            chunks: list[bytes] = []
            size = 0
            truncated = False
            async for chunk in response.aiter_bytes():
                if size + len(chunk) > limit:
                    chunks.append(chunk[: limit - size])
                    size = limit
                    truncated = True
                    break
                chunks.append(chunk)
                size += len(chunk)
            elapsed_ms = (time.perf_counter() - started) * 1000
            return FetchResult(
                url=url,
                status=response.status_code,
                headers=headers,
                body=b"".join(chunks),
                content_type=media_type(headers.get("content-type")),
                elapsed_ms=elapsed_ms,
                truncated=truncated,
            )


__all__ = ["FetchResult", "Fetcher", "media_type"]
