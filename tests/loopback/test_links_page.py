"""core.policy.links, what a page says about itself (issue #13 items 4-5): the tests that
start a real server on loopback or a process; the others are in
``tests/unit/test_links_page.py``."""

from __future__ import annotations

from html import escape

from pagekit import ARTICLE, HTML, TOKEN, URL, extract

from crawldeck.core.config import build_config
from crawldeck.core.net.parse import THREAD_PARSE_MAX_BYTES, ParsePool
from crawldeck.core.policy.simhash import simhash64

# --- through the parse pool's worker processes ---------------------------------------


async def test_a_worker_process_sends_title_canonical_and_simhash_back() -> None:
    body = (
        '<head><title>Big page</title><link rel="canonical" href="/big"></head><body>'
        '<iframe src="/frame"></iframe>' + f"<p>{escape(ARTICLE)}</p>" * 20 + "</body>"
    ).encode()
    assert len(body) > THREAD_PARSE_MAX_BYTES  # parsed in a worker, not a thread
    pool = ParsePool(build_config({"parse_workers": 1, "parse_timeout_ms": 10_000}))
    try:
        got = await pool.extract(body, URL, HTML, TOKEN)
        assert pool.statistics().threaded == 0
    finally:
        await pool.aclose()
    assert got == extract(body)
    assert (got.title, got.canonical, got.links) == ("Big page", "/big", ["/frame"])
    assert got.simhash == simhash64(" ".join([ARTICLE] * 40))
