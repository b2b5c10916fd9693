"""The fake fetcher against the real one on one scripted site (issue #24 item 8): the tests
that start a real server on loopback or a process; the others are in
``tests/unit/test_fetcher_conformance.py``."""

from __future__ import annotations

import asyncio
import http
import io
import socket
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import virtualtime
from conformancekit import (
    COMPARED,
    CRAWL,
    CRAWL_NORMALISED,
    MAX_BODY,
    STAND_IN,
    duplicate_groups,
    fake_crawl,
    scripted_site,
    tables,
)
from fakesite import (
    HANG,
    Fail,
    FakeFetcher,
    FakeSite,
    Reply,
    config,
)
from httpserver import HTTPTestServer, Request

from crawldeck.core.config import CrawlConfig
from crawldeck.core.crawl.content import ContentReader
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.errors import FetchError
from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.records import BodySink, FetchResult
from crawldeck.core.storage.store import Store

#: The byte cap of the ``whole`` mode (``fetch(max_bytes=...)``, as robots.txt).
WHOLE_CAP = 1100


PAGES = {page.name: page for page in scripted_site(STAND_IN)}


# ------------------------------------------------------------ the real side


def wire(answer: Reply) -> bytes:
    """``answer`` as a server sends it: the status line with the standard phrase, the
    scripted header lines only, then the body (in chunks of 500 bytes when the
    script says ``Transfer-Encoding: chunked``).

    Raises:
        ValueError: a reply with a delay (``after_s``, ``body_s``): the real server
            does not reproduce timing.
    """
    if answer.after_s or answer.body_s:
        raise ValueError(f"the real server cannot wait as scripted: {answer}")
    try:
        phrase = http.HTTPStatus(answer.status).phrase
    except ValueError:
        phrase = ""
    lines = [f"HTTP/1.1 {answer.status} {phrase}", *(f"{n}: {v}" for n, v in answer.headers)]
    body = answer.body
    if any(n.lower() == "transfer-encoding" for n, _ in answer.headers):
        steps = [body[i : i + 500] for i in range(0, len(body), 500)]
        body = b"".join(b"%x\r\n%s\r\n" % (len(step), step) for step in steps) + b"0\r\n\r\n"
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@dataclass
class Web:
    """The site on real servers: ``origins`` (``a``, ``b``, ``c``: a server each;
    ``dead``: a bound port nobody listens on), ``servers`` by origin name."""

    origins: dict[str, str]
    servers: dict[str, HTTPTestServer]

    def requests(self) -> list[tuple[str, str]]:
        """Every request the servers received since ``clear``: URL and ``Cookie``
        (``""``: none), sorted."""
        return sorted(
            (self.origins[name] + r.path, r.headers.get("cookie", ""))
            for name, server in self.servers.items()
            for r in server.requests
        )

    def clear(self) -> None:
        """Empty the servers' request logs."""
        for server in self.servers.values():
            server.clear()


def _route(
    server: HTTPTestServer, data: bytes | None
) -> Callable[[Request, io.BufferedIOBase], None]:
    """A raw route writing ``data`` (``None``: never answering, until the server
    closes)."""

    def route(request: Request, out: io.BufferedIOBase) -> None:
        if data is None:
            server.wait(3600)  # wakes at close
            return
        out.write(data)

    return route


@pytest.fixture(scope="module")
def web() -> Iterator[Web]:
    """The site on three loopback servers and a refused port, for the module."""
    with (
        HTTPTestServer() as a,
        HTTPTestServer() as b,
        HTTPTestServer() as c,
        socket.socket() as dead,
    ):
        dead.bind(("127.0.0.1", 0))  # bound, not listening: connecting is refused
        servers = {"a": a, "b": b, "c": c}
        origins = {name: server.origin for name, server in servers.items()}
        origins["dead"] = f"http://127.0.0.1:{dead.getsockname()[1]}"
        for page in scripted_site(origins):
            if page.origin == "dead":
                continue
            answer = page.answer
            if isinstance(answer, Fail):
                assert page.raw is not None, page.name
                data: bytes | None = page.raw
            else:
                data = None if answer == HANG else wire(answer)
            server = servers[page.origin]
            server.set_raw(urlsplit(page.target).path, _route(server, data))
        yield Web(origins, servers)


@dataclass(frozen=True)
class Mode:
    """One way the engine calls ``fetch``: ``want_body``, ``max_bytes``, and whether
    the body is streamed (``on_body``) and the reader stops after its first chunk."""

    want_body: Callable[[str], bool] | None = None
    max_bytes: int | None = None
    stream: bool = False
    stop: bool = False


MODES = {
    "page": Mode(want_body=ContentReader.wants_body),  # the engine's page fetch
    "whole": Mode(max_bytes=WHOLE_CAP),  # robots.txt, side requests
    "stream": Mode(stream=True),  # a sitemap
    "stream-stop": Mode(stream=True, stop=True),  # a sitemap reader that stops
}


def record(outcome: FetchResult | FetchError, streamed: list[bytes] | None) -> dict[str, Any]:
    """What the engine consumes of one fetch: the ``COMPARED`` fields and the bytes
    handed to ``on_body`` (``streamed``), or an error's class, ``reason``,
    ``retryable`` and message."""
    if isinstance(outcome, FetchError):
        return {"error": type(outcome).__name__, "reason": outcome.reason,
                "retryable": outcome.retryable, "message": str(outcome)}  # fmt: skip
    fields = {name: getattr(outcome, name) for name in COMPARED}
    fields["headers"] = [(name.lower(), value) for name, value in outcome.headers.items()]
    fields["streamed"] = None if streamed is None else b"".join(streamed)
    return fields


async def fetch_record(
    fetcher: FakeFetcher | AiohttpFetcher, url: str, mode: Mode
) -> dict[str, Any]:
    """``record`` of ``fetcher.fetch(url)`` called as ``mode`` says."""
    streamed: list[bytes] = []

    async def sink(data: bytes) -> bool:
        streamed.append(data)
        return not mode.stop

    on_body: BodySink | None = sink if mode.stream else None
    try:
        result = await fetcher.fetch(
            url, max_bytes=mode.max_bytes, want_body=mode.want_body, on_body=on_body
        )
    except FetchError as exc:
        return record(exc, None)
    return record(result, streamed if mode.stream else None)


def differences(fake: Mapping[str, Any], real: Mapping[str, Any]) -> list[str]:
    """One line per key whose values differ (``<absent>`` for a missing key)."""
    return [
        f"{key}: fake {fake.get(key, '<absent>')!r:.300} != real {real.get(key, '<absent>')!r:.300}"
        for key in sorted(set(fake) | set(real))
        if fake.get(key, "<absent>") != real.get(key, "<absent>")
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", PAGES)
def test_the_fetchers_agree_on_every_page(web: Web, name: str, mode: str) -> None:
    """The fake (on virtual time) and the aiohttp fetcher (on the real server) give the
    same record for the page, fetched as ``mode`` says."""
    page = {page.name: page for page in scripted_site(web.origins)}[name]
    url = web.origins[page.origin] + page.target
    cfg: CrawlConfig = config(max_body_bytes=MAX_BODY, **page.settings)

    async def through_fake() -> dict[str, Any]:
        site = FakeSite()
        site.add(url, page.answer)
        return await fetch_record(FakeFetcher(site, cfg), url, MODES[mode])

    async def through_real() -> dict[str, Any]:
        async with AiohttpFetcher(cfg) as fetcher:
            return await fetch_record(fetcher, url, MODES[mode])

    fake = virtualtime.run(through_fake())
    real = asyncio.run(through_real())
    assert differences(fake, real) == []


def test_the_crawls_agree(web: Web, tmp_path: Path) -> None:
    """The engine over the fake and over the real servers records the same rows, and
    each site receives the same requests (those to the refused port are not seen)."""
    site = fake_crawl(web.origins, tmp_path / "fake.db")
    web.clear()
    store = Store(tmp_path / "real.db", flush_interval_ms=10)
    try:
        engine = Engine(config(**CRAWL), store)
        assert engine.add_seeds([web.origins["a"] + "/"]) == []
        asyncio.run(engine.run())
    finally:
        store.close()
    fake, real = (
        tables(tmp_path / "fake.db", web.origins),
        tables(tmp_path / "real.db", web.origins),
    )
    for table in CRAWL_NORMALISED:
        only_fake = [row for row in fake[table] if row not in real[table]]
        only_real = [row for row in real[table] if row not in fake[table]]
        assert (table, only_fake, only_real) == (table, [], [])
    assert duplicate_groups(tmp_path / "real.db", web.origins) == duplicate_groups(
        tmp_path / "fake.db", web.origins
    )
    scripted = {web.origins[page.origin] + page.target for page in scripted_site(web.origins)}
    assert {r.url for r in site.requests} <= scripted  # unscripted ones are answered apart
    dead = web.origins["dead"]
    asked = sorted((r.url, r.headers.get("Cookie", "")) for r in site.requests if r.origin != dead)
    assert asked == web.requests()
