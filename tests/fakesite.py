"""A whole scripted web site served in process, for engine tests on virtual time.

``FakeSite`` holds the script: per URL (``add``) or per origin (``host``), a ``Reply``
(status, headers, body, how long the head and the body take), a ``Fail`` (an error
as the real fetcher raises it), a sequence of them (one per request, the last one
repeated), or a function of the ``Request`` (``"429 whenever two requests come
closer than 2 s"``). Unscripted URLs answer 404, so an unscripted ``/robots.txt``
means "no robots.txt". Host names resolve through ``name(host, ip)`` (``dns()`` gives
the ``DnsCache`` that asks the site); IP-literal hosts need no name.

``FakeFetcher(site, config)`` implements ``crawldeck.core.protocols.Fetcher`` as the
aiohttp fetcher behaves, on the loop's clock (``tests/virtualtime.py``):

* a reply whose head takes longer than ``read_timeout_ms`` raises ``FetchTimeout``
  at the read timeout; a head plus body longer than ``total_timeout_ms`` raises it at
  the total budget (``Reply.after_s`` is silence, ``Reply.body_s`` bytes flowing);
* ``Content-Encoding``: one gzip/deflate coding is decoded; stacked or unknown
  codings, and bodies that do not decode, raise ``ProtocolViolation``; a body shorter
  than its ``Content-Length`` raises ``ProtocolViolation("short body ...")`` where
  the real fetcher meets its end (not when the body is skipped or cut at the cap, nor
  when a stream's reader stopped first);
* the media type is the real fetcher's (``core.policy.sniff``: the last ``Content-Type``,
  sniffed when absent or unknown, but not for a streamed body); ``want_body(media
  type)`` false skips the body (``skipped``, ``b""``, no body time); ``max_bytes``
  (default ``max_body_bytes``) cuts the decoded body (``truncated``; the body time is
  cut in proportion);
* headers are a ``multidict.CIMultiDictProxy`` in the scripted order, and
  ``raw_headers`` the same pairs as UTF-8 bytes; ``reason`` is the status's standard
  phrase (``""`` for a code without one); ``wire_body`` is the scripted body as sent
  when it is content-coded (``None`` otherwise), and for a streamed body its first
  ``STREAM_KEEP_BYTES`` as sent, as the real fetcher keeps them for the WARC record;
* the messages of the errors are the real fetcher's with the pinned aiohttp
  (``tests/loopback/test_fetcher_conformance.py`` checks them, and every field above, against
  the aiohttp fetcher and a real server serving the same script). Not modelled:
  ``request_headers`` (``()``: the session's own fields are aiohttp's; the extra
  ``headers`` of a request are in ``site.requests``), and a content-coded body cut at
  the cap keeps its whole coded body in ``wire_body`` where the real fetcher keeps what
  it had read (the same for a body that arrives in one read).

Every request is logged in ``site.requests`` (``Request``: URL, request headers,
virtual ``start`` and ``end``, outcome) as it starts, so a test can check the spacing
of every pair. ``crawl(site, seeds, db, **config)`` runs an ``Engine`` over the site on
a ``VirtualTimeLoop`` and returns a ``Crawl`` (the engine, its result, SQL over the
file).
"""

from __future__ import annotations

import asyncio
import dataclasses
import http
import math
import random
import sqlite3
import zlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import formatdate
from html import escape
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import virtualtime
from multidict import CIMultiDict, CIMultiDictProxy

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.crawl.engine import CrawlResult, Engine
from crawldeck.core.errors import (
    ConnectFailed,
    ConnectionLost,
    ConnectRefused,
    DnsTemporaryFailure,
    FetchError,
    FetchTimeout,
    ProtocolViolation,
    RequestInvalid,
    TlsFailed,
)
from crawldeck.core.net.dns import Answer, DnsCache, DnsSettings, RecordType
from crawldeck.core.net.fetcher import NO_BODY, STREAM_KEEP_BYTES
from crawldeck.core.policy import sniff
from crawldeck.core.records import BodySink, FetchResult
from crawldeck.core.storage.store import Store

# ------------------------------------------------------------------- the script


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted HTTP response.

    Attributes:
        status: the HTTP status.
        headers: ``(name, value)`` pairs in order (a name may repeat).
        body: the body as sent (encoded when ``Content-Encoding`` says so).
        after_s: virtual seconds from the request's start to the response head,
            with nothing sent meanwhile (over ``read_timeout_ms``: a read timeout).
            ``math.inf``: the server never answers.
        body_s: virtual seconds the body takes to arrive after the head, bytes
            flowing (a drip: only ``total_timeout_ms`` cuts it).
    """

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    after_s: float = 0.0
    body_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Fail:
    """A fetch that ends in an error, as the aiohttp fetcher raises it.

    Attributes:
        kind: the ``FetchError`` subclass raised (its ``reason`` and ``retryable``
            are the real ones).
        message: the message; ``{url}`` is replaced by the URL requested (``text``).
        after_s: virtual seconds from the request's start to the error.
    """

    kind: type[FetchError]
    message: str
    after_s: float = 0.0

    def text(self, url: str) -> str:
        """The message for ``url``: ``{url}``, ``{url!r}`` and ``{hostport}`` (the
        URL's host and port, the default port when it has none, as aiohttp names the
        address it could not connect to) replaced."""
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        hostport = f"{parts.hostname}:{port}"
        return (
            self.message.replace("{url!r}", repr(url))
            .replace("{url}", url)
            .replace("{hostport}", hostport)
        )


Answered = Reply | Fail
Handler = Callable[["Request"], Answered]


@dataclass(slots=True)
class Request:
    """One request the site received (``FakeSite.requests``, in start order).

    Attributes:
        url: the URL as sent. origin: ``scheme://host[:port]``. target: path and
            query as sent (``/a?b=1``).
        headers: the request's extra headers (``Cookie`` within a redirect chain).
        start, end: virtual epoch seconds of the request's start and of its end (the
            body read, the error, or the cancel); ``end`` is ``None`` while in flight.
        outcome: ``"200"`` (the status, as text), a ``FetchError`` reason
            (``"timeout"``, ``"connection_lost"``, ``"protocol"``...), ``"cancelled"``,
            or ``""`` while in flight.
        max_bytes: the body cap asked for (``None``: the config's).
        skipped, truncated: as the ``FetchResult``'s.
    """

    url: str
    origin: str
    target: str
    headers: dict[str, str]
    start: float
    end: float | None = None
    outcome: str = ""
    max_bytes: int | None = None
    skipped: bool = False
    truncated: bool = False

    @property
    def status(self) -> int | None:
        """The HTTP status, or ``None`` for an error, a cancel or while in flight."""
        return int(self.outcome) if self.outcome.isdigit() else None


class _Script:
    """What one URL or origin answers: a handler, or replies taken in turn."""

    def __init__(self, answers: Sequence[Answered | Handler]) -> None:
        if not answers:
            raise ValueError("a script needs at least one reply, failure or handler")
        self._answers = list(answers)
        self._next = 0

    def answer(self, request: Request) -> Answered:
        item = self._answers[min(self._next, len(self._answers) - 1)]
        self._next += 1
        return item if isinstance(item, Reply | Fail) else item(request)


@dataclass
class FakeSite:
    """A scripted web of any number of hosts (see the module docstring).

    Attributes:
        requests: every request received, in start order.
        dns_queries: every ``(name, rtype)`` the site's resolver was asked.
    """

    requests: list[Request] = field(default_factory=list)
    dns_queries: list[tuple[str, str]] = field(default_factory=list)
    _urls: dict[str, _Script] = field(default_factory=dict)
    _hosts: dict[str, _Script] = field(default_factory=dict)
    _names: dict[str, str | None] = field(default_factory=dict)

    def add(self, url: str, *answers: Answered | Handler) -> None:
        """Script ``url`` (exact, as the engine sends it): one answer for every
        request, several taken in turn (the last repeated), or a handler."""
        self._urls[url] = _Script(answers)

    def host(self, origin: str, *answers: Answered | Handler) -> None:
        """Script every URL of ``origin`` (``http://host[:port]``) that ``add`` did not."""
        self._hosts[origin.rstrip("/")] = _Script(answers)

    def name(self, host: str, ip: str | None) -> None:
        """Make ``host`` resolve to ``ip`` (A or AAAA by its family); ``None``: the
        resolver fails temporarily (SERVFAIL) for it. Unknown names are NXDOMAIN."""
        self._names[host] = ip

    def answer(self, request: Request) -> Answered:
        """What the site answers to ``request`` (404 when unscripted)."""
        script = self._urls.get(request.url) or self._hosts.get(request.origin)
        if script is None:
            return Reply(404, (("Content-Type", "text/html"),), b"not found")
        return script.answer(request)

    def of(self, origin: str) -> list[Request]:
        """The requests to ``origin``, in start order."""
        origin = origin.rstrip("/")
        return [r for r in self.requests if r.origin == origin]

    def targets(self, origin: str | None = None) -> list[str]:
        """Path and query of every request (to ``origin``), robots.txt excluded."""
        return [
            r.target
            for r in self.requests
            if r.target != "/robots.txt" and (origin is None or r.origin == origin.rstrip("/"))
        ]

    def count(self, url: str) -> int:
        """How many requests went to ``url``."""
        return sum(1 for r in self.requests if r.url == url)

    def dns(self, config: CrawlConfig, clock: Callable[[], float]) -> DnsCache:
        """A ``DnsCache`` on ``clock`` whose queries the site answers (``name``)."""
        return DnsCache(
            DnsSettings.from_config(config), clock, resolver_factory=lambda: _Resolver(self)
        )


class _Resolver:
    """``core.net.dns.Resolver`` answered from ``FakeSite.name``: TTL 300 s."""

    def __init__(self, site: FakeSite) -> None:
        self._site = site

    async def query(self, name: str, rtype: RecordType) -> Answer:
        self._site.dns_queries.append((name, rtype))
        if name not in self._site._names:
            return Answer("nxdomain")
        ip = self._site._names[name]
        if ip is None:
            raise DnsTemporaryFailure(f"{name}: server failure (SERVFAIL)")
        if (":" in ip) == (rtype == "AAAA"):
            return Answer("ok", (ip,), 300.0)
        return Answer("nodata")

    async def close(self) -> None:
        """Nothing to release."""


# ------------------------------------------------------------ reply helpers


def links_page(*hrefs: str, text: str = "", after_s: float = 0.0) -> Reply:
    """A 200 ``text/html`` page with one ``<a href>`` per href (escaped) and ``text``."""
    anchors = "".join(f'<a href="{escape(h)}">{escape(h)}</a>\n' for h in hrefs)
    return html(f"<!DOCTYPE html><html><body>{text}\n{anchors}</body></html>", after_s=after_s)


def html(body: str, *, after_s: float = 0.0, **headers: str) -> Reply:
    """A 200 ``text/html`` reply of ``body`` (header names with ``_`` for ``-``)."""
    pairs = (("Content-Type", "text/html; charset=utf-8"), *_pairs(headers))
    return Reply(200, pairs, body.encode(), after_s=after_s)


def text(body: str, **headers: str) -> Reply:
    """A 200 ``text/plain`` reply of ``body`` (a robots.txt file)."""
    return Reply(200, (("Content-Type", "text/plain"), *_pairs(headers)), body.encode())


def status(code: int, **headers: str) -> Reply:
    """A reply of status ``code`` with an empty body (``Retry_After="30"``, ``Date=...``:
    ``_`` in a name stands for ``-``)."""
    return Reply(code, tuple(_pairs(headers)), b"")


def redirect(location: str, code: int = 301, *, set_cookie: str | None = None) -> Reply:
    """A ``code`` redirect to ``location`` (raw), optionally setting one cookie."""
    pairs = [("Location", location)]
    if set_cookie is not None:
        pairs.append(("Set-Cookie", set_cookie))
    return Reply(code, tuple(pairs))


#: A server that accepts the request and never answers (a tarpit).
HANG = Reply(200, (("Content-Type", "text/html"),), b"", after_s=math.inf)


def drip(seconds: float) -> Reply:
    """A 200 page whose body takes ``seconds`` to arrive, a byte now and then."""
    return Reply(200, (("Content-Type", "text/html"),), b"<p>" + b"x" * 100, body_s=seconds)


def lost(after_s: float = 0.0) -> Fail:
    """The connection closes before the response head (retryable)."""
    return Fail(
        ConnectionLost, "connection closed before the response head was complete: {url}", after_s
    )


def refused() -> Fail:
    """The connection is refused (``ConnectRefused``: retried only on a host that
    answered this run, unless ``retry_refused``)."""
    return Fail(
        ConnectRefused,
        "connection failed: cannot connect to {hostport}: [Errno 111] Connection refused: {url}",
    )


def bad_status_line() -> Fail:
    """The status line ``HTTP/1.1 2OO OK`` (deterministic)."""
    return Fail(
        ProtocolViolation,
        "invalid HTTP response: Bad status line: Invalid status code: b'HTTP/1.1 2OO OK': {url}",
    )


def oversized_header() -> Fail:
    """A header line over 8 190 bytes, its value ``y`` repeated (deterministic): aiohttp
    quotes the first 100 bytes of the value."""
    quoted = "b'" + "y" * 100 + "...'"
    return Fail(
        ProtocolViolation,
        f"invalid HTTP response: Got more than 8190 bytes when reading: {quoted}: {{url}}",
    )


def tls_refused() -> Fail:
    """A certificate that does not verify (deterministic)."""
    return Fail(TlsFailed, "TLS certificate refused: self-signed certificate: {url}")


def bad_request() -> Fail:
    """A URL the HTTP client cannot send (deterministic)."""
    return Fail(RequestInvalid, "cannot request {url!r}: bad port")


def short_body() -> Reply:
    """A 200 whose body is shorter than its ``Content-Length`` (deterministic)."""
    return Reply(200, (("Content-Type", "text/html"), ("Content-Length", "1000")), b"abc")


def stacked_codings() -> Reply:
    """``Content-Encoding: gzip, gzip`` (deterministic)."""
    return Reply(200, (("Content-Type", "text/html"), ("Content-Encoding", "gzip, gzip")), b"abcd")


def http_date(epoch_s: float) -> str:
    """``epoch_s`` as an IMF-fixdate (``Tue, 14 Nov 2023 22:13:20 GMT``), whole seconds."""
    return formatdate(epoch_s, usegmt=True)


def _pairs(headers: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(name.replace("_", "-"), value) for name, value in headers.items()]


# ------------------------------------------------------------------ the fetcher


class FakeFetcher:
    """``core.protocols.Fetcher`` over a ``FakeSite`` on the running loop's clock.

    Args:
        site: the script, and the request log it keeps.
        config: ``read_timeout_ms``, ``total_timeout_ms``, ``max_body_bytes``.
    """

    def __init__(self, site: FakeSite, config: CrawlConfig) -> None:
        self._site = site
        self._read_s = config.read_timeout_ms / 1000
        self._total_s = config.total_timeout_ms / 1000
        self._read_ms = config.read_timeout_ms
        self._total_ms = config.total_timeout_ms
        self._max_bytes = config.max_body_bytes
        self.closed = False

    async def aclose(self) -> None:
        """No fetch may start afterwards (it raises ``ConnectFailed``)."""
        self.closed = True

    async def fetch(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        headers: Mapping[str, str] | None = None,
        want_body: Callable[[str], bool] | None = None,
        on_body: BodySink | None = None,
    ) -> FetchResult:
        """Answer ``url`` from the site, taking the scripted virtual time (see the
        module docstring); raises the ``FetchError`` the script or the budgets say.
        ``on_body`` gets the body in 64 KiB chunks, as the real fetcher streams it."""
        if self.closed:
            raise ConnectFailed(f"the fetcher is closed: {url}")
        loop = asyncio.get_running_loop()
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        request = Request(url, f"{parts.scheme}://{parts.netloc}", target or "/",
                          dict(headers or {}), loop.time(), max_bytes=max_bytes)  # fmt: skip
        self._site.requests.append(request)
        answer = self._site.answer(request)
        try:
            result = await self._answer(request, answer, want_body, streamed=on_body is not None)
        except FetchError as exc:
            request.outcome = exc.reason
            raise
        except asyncio.CancelledError:
            request.outcome = "cancelled"
            raise
        finally:
            request.end = loop.time()
        if on_body is not None and not 200 <= result.status < 300:
            result = dataclasses.replace(
                result, body=b"", skipped=True, truncated=False, wire_body=None
            )
        elif on_body is not None and not result.skipped:
            assert isinstance(answer, Reply)  # a Fail raised
            stopped = False
            for start in range(0, len(result.body), 64 * 1024):
                if not await on_body(result.body[start : start + 64 * 1024]):
                    stopped = True
                    break
            short = _short_body(answer, url)
            if short is not None and not stopped and not result.truncated:
                request.outcome = short.reason  # found at the end of the stream
                raise short
            kept = answer.body[:STREAM_KEEP_BYTES]  # as sent, as the real fetcher keeps it
            cut = result.truncated or stopped or len(kept) < len(answer.body)
            result = dataclasses.replace(result, body=b"", wire_body=kept, truncated=cut)
        request.outcome = str(result.status)
        request.skipped, request.truncated = result.skipped, result.truncated
        return result

    async def _answer(
        self,
        request: Request,
        answer: Answered,
        want_body: Callable[[str], bool] | None,
        *,
        streamed: bool,
    ) -> FetchResult:
        url = request.url
        if isinstance(answer, Fail):
            await self._wait(answer.after_s, url)
            raise answer.kind(answer.text(url))
        if answer.after_s > self._read_s and self._read_s < self._total_s:
            await asyncio.sleep(self._read_s)
            raise FetchTimeout(f"read timeout ({self._read_ms} ms): {url}")
        await self._wait(answer.after_s, url)
        received = CIMultiDictProxy(CIMultiDict(answer.headers))
        supplied = sniff.supplied_mime_type(
            received.getall("content-type", ()), received.getall("x-content-type-options", ())
        )
        content_type = supplied.essence or ""
        decoded = _decoded(answer, url)
        sniffed = False
        if supplied.needs_header and decoded and not streamed:  # a stream is not sniffed
            computed = sniff.computed_mime_type(supplied, decoded[: sniff.RESOURCE_HEADER_BYTES])
            sniffed = computed != supplied.essence
            content_type = computed
        skipped = want_body is not None and not want_body(content_type)
        if skipped and not streamed and (not answer.body or answer.status in NO_BODY):
            skipped = False  # an empty body is whole, as the real fetcher keeps it
        limit = self._max_bytes if request.max_bytes is None else request.max_bytes
        truncated = not skipped and len(decoded) > limit
        if not skipped:
            share = limit / len(decoded) if truncated else 1.0
            await self._wait(answer.after_s + answer.body_s * share, url, already=answer.after_s)
            short = _short_body(answer, url)
            # a body cut at the cap is not read to its end; a stream's is checked there
            if short is not None and not truncated and not streamed:
                raise short
        return FetchResult(
            url=url,
            status=answer.status,
            headers=received,
            body=b"" if skipped else decoded[:limit],
            content_type=content_type,
            elapsed_ms=(asyncio.get_running_loop().time() - request.start) * 1000,
            truncated=truncated,
            skipped=skipped,
            sniffed=sniffed,
            reason=_phrase(answer.status),
            raw_headers=tuple((n.encode(), v.encode()) for n, v in answer.headers),
            wire_body=answer.body if _codings(answer) and not skipped else None,
        )

    async def _wait(self, until_s: float, url: str, *, already: float = 0.0) -> None:
        """Sleep to ``until_s`` after the request's start (``already`` s of it have
        passed), or raise the total budget's ``FetchTimeout`` at the budget."""
        if until_s > self._total_s:
            await asyncio.sleep(max(0.0, self._total_s - already))
            raise FetchTimeout(f"total time budget of {self._total_ms} ms exceeded: {url}")
        await asyncio.sleep(until_s - already)


def _short_body(reply: Reply, url: str) -> ProtocolViolation | None:
    """The error for a body shorter than its ``Content-Length`` (met at its end),
    ``None`` when it is not short."""
    length = CIMultiDict(reply.headers).get("content-length")
    if length is None or not length.isdigit() or int(length) <= len(reply.body):
        return None
    return ProtocolViolation(
        "short body: Not enough data to satisfy content length header (received "
        f"{len(reply.body)} of {int(length)} bytes): {url}"
    )


def _phrase(status: int) -> str:
    """The standard reason phrase of ``status`` (``"Not Found"``), ``""`` for a code
    without one (the scripted server sends the same, ``tests/test_fetcher_conformance``)."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _codings(reply: Reply) -> list[str]:
    """The content codings of ``reply``, lowercased, ``identity`` left out."""
    return [
        c
        for value in CIMultiDict(reply.headers).getall("content-encoding", ())
        for item in value.split(",")
        if (c := item.strip().lower()) and c != "identity"
    ]


def _decoded(reply: Reply, url: str) -> bytes:
    """The body of ``reply`` with its one content coding undone, as the real fetcher.

    Raises:
        ProtocolViolation: stacked or unknown codings, or bytes that do not decode.
    """
    codings = _codings(reply)
    if not codings:
        return reply.body
    if len(codings) > 1:
        raise ProtocolViolation(f"stacked content codings {', '.join(codings)} refused: {url}")
    coding = codings[0]
    try:
        if coding in ("gzip", "x-gzip"):
            return zlib.decompress(reply.body, 16 + zlib.MAX_WBITS)
        if coding == "deflate":
            try:
                return zlib.decompress(reply.body)
            except zlib.error:
                return zlib.decompress(reply.body, -zlib.MAX_WBITS)
    except zlib.error as exc:
        raise ProtocolViolation(f"invalid HTTP response: {exc}: {url}") from None
    raise ProtocolViolation(f"unknown content coding {coding!r} refused: {url}")


# ---------------------------------------------------------------- one crawl


def gaps(requests: Sequence[Request]) -> list[float]:
    """End-to-start gaps (s) of consecutive ``requests`` (in start order): what
    ``delay_ms`` bounds (it runs from the end of a fetch)."""
    out = []
    for a, b in pairwise(requests):
        assert a.end is not None, a
        out.append(b.start - a.end)
    return out


def overlaps(requests: Sequence[Request]) -> list[tuple[Request, Request]]:
    """Pairs of ``requests`` in flight at once (each pair checked, not only
    neighbours)."""
    found = []
    for i, a in enumerate(requests):
        for b in requests[i + 1 :]:
            if a.end is None or b.end is None or (b.start < a.end and a.start < b.end):
                found.append((a, b))
    return found


@dataclass
class Crawl:
    """One finished crawl over a ``FakeSite``.

    Attributes:
        engine: the engine (for ``snapshot()`` and ``host_detail``).
        result: what ``run()`` returned. refused: what ``add_seeds`` refused.
        db: the SQLite file. site: the site (its request log).
        started, ended: virtual epoch s when ``run()`` was called and returned.
    """

    engine: Engine
    result: CrawlResult
    refused: list[tuple[str, str]]
    db: Path
    site: FakeSite
    started: float
    ended: float

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """The rows of ``sql`` over the crawl file."""
        conn = sqlite3.connect(self.db)
        try:
            return conn.execute(sql, args).fetchall()
        finally:
            conn.close()

    def value(self, sql: str, *args: Any) -> Any:
        """The one value of ``sql`` (one row, one column)."""
        ((only,),) = self.rows(sql, *args)
        return only


During = Callable[[Engine], Awaitable[None]]


def config(**values: Any) -> CrawlConfig:
    """The engine tests' config: ``delay_ms`` 0, no rendering, private addresses
    allowed (the hosts are loopback literals), adaptive delay off, no sitemaps and no
    WARC files (these tests count each request and time; the sitemap reader and the
    WARC writer have their own tests, ``test_sitemaps_crawl``, ``test_warc``),
    ``values`` over it."""
    return build_config({"delay_ms": 0, "render": "never", "allow_private": True,
                         "adaptive_delay_factor": 0.0, "sitemaps": False, "warc": False,
                         **values})  # fmt: skip


async def acrawl(
    site: FakeSite,
    seeds: Iterable[str],
    db: Path,
    *,
    rng_seed: int = 0,
    during: During | None = None,
    **values: Any,
) -> Crawl:
    """``crawl`` inside a running (virtual-time) loop."""
    loop = asyncio.get_running_loop()
    cfg = config(**values)
    store = Store(db, flush_interval_ms=10, clock=loop.time)
    try:
        engine = Engine(
            cfg,
            store,
            clock=loop.time,
            fetcher=FakeFetcher(site, cfg),
            rng=random.Random(rng_seed),
            dns=site.dns(cfg, loop.time),
        )
        refused = engine.add_seeds(seeds)
        started = loop.time()
        task = asyncio.create_task(engine.run())
        if during is not None:
            await during(engine)
        result = await task
        ended = loop.time()
    finally:
        store.close()
    return Crawl(engine, result, refused, db, site, started, ended)


def crawl(
    site: FakeSite,
    seeds: Iterable[str],
    db: Path,
    *,
    start: float = virtualtime.EPOCH,
    rng_seed: int = 0,
    during: During | None = None,
    **values: Any,
) -> Crawl:
    """Crawl ``seeds`` over ``site`` into ``db`` on a new virtual-time loop whose clock
    starts at ``start``; the engine's clock is the loop's, its rng
    ``random.Random(rng_seed)``. ``during(engine)`` runs beside ``run()`` (pause,
    stop, subscribe). ``values`` are config keys over ``config()``'s."""
    return virtualtime.run(
        acrawl(site, seeds, db, rng_seed=rng_seed, during=during, **values), start=start
    )


__all__ = [
    "HANG",
    "Crawl",
    "Fail",
    "FakeFetcher",
    "FakeSite",
    "Reply",
    "Request",
    "acrawl",
    "bad_request",
    "bad_status_line",
    "config",
    "crawl",
    "drip",
    "gaps",
    "html",
    "http_date",
    "links_page",
    "lost",
    "overlaps",
    "oversized_header",
    "redirect",
    "refused",
    "short_body",
    "stacked_codings",
    "status",
    "text",
    "tls_refused",
]
