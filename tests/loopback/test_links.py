"""core.policy.links: the tests that start a real server on loopback or a process; the
others are in ``tests/unit/test_links.py``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from httpserver import HTTPTestServer, Response

from crawldeck.core.config import build_config
from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.policy.links import (
    Extracted,
    extract_links,
    is_html,
)
from crawldeck.core.policy.simhash import simhash64

TOKEN = "crawldeck"


@pytest.fixture
def srv() -> Iterator[HTTPTestServer]:
    with HTTPTestServer() as server:
        yield server


async def test_extract_from_a_real_response(srv: HTTPTestServer) -> None:
    srv.set(
        "/page",
        Response(
            200,
            [
                ("Content-Type", "text/html; charset=windows-1252"),
                ("X-Robots-Tag", "otherbot: nofollow"),
                ("X-Robots-Tag", "noindex"),
            ],
            '<base href="/b/"><a href="caf\xe9">x</a><a href="#top">t</a>'.encode("cp1252"),
        ),
    )
    async with AiohttpFetcher(
        build_config({"read_timeout_ms": 1000, "total_timeout_ms": 2000})
    ) as f:
        result = await f.fetch(srv.url("/page"))
    assert is_html(result.content_type)
    got = extract_links(result.body, result.url, result.headers, TOKEN)
    assert got == Extracted(
        links=["café"],
        base=srv.url("/b/"),
        nofollow=False,
        noindex=True,
        simhash=simhash64("x t"),
        anchors={"café": "x"},
    )
