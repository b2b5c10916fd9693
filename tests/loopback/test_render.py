"""Rendering: shell detection (``core.policy.shell``, pure) and the Chromium render pool
(``core.render.browser_pool``) over the local web.

The pool tests drive Debian's Chromium (``apt-get install chromium``; .ci/run installs
it) against the ``spa`` host of ``localweb``, with a gate built on a real
``core.net.robots.RobotsCache``. Nothing is skipped: without Chromium they fail and say
how to install it. What the browser asked for is checked in the servers' own logs.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.errors import RenderUnavailable, UrlError
from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.net.robots import RobotsCache, RobotsSettings
from crawldeck.core.policy.links import extract_links
from crawldeck.core.policy.shell import looks_like_shell, should_render
from crawldeck.core.policy.urls import clean, host_key
from crawldeck.core.render import browser_pool, procmem
from crawldeck.core.render.browser_pool import (
    RenderPool,
    unavailable_reason,
)
from crawldeck.core.render_types import RenderResult, SubRequestEnd
from crawldeck.localweb import LocalWeb

CHROMIUM = "/usr/bin/chromium"
BUDGET_MS = 1500


def test_detection_on_the_local_web() -> None:
    """Every spa shell is detected with its own signature; no other local page is."""
    wanted = {
        "inline": "empty #root",
        "hash": "empty #app",
        "fetch": "__NEXT_DATA__",
        "private": "empty <app-root>",
        "never": "data-reactroot",
        "spin": "script-only body",
    }
    with LocalWeb(delay_scale=0) as web, httpx.Client(trust_env=False) as client:
        exp = web.expected
        for kind, url in exp.shells.items():
            r = client.get(url)
            links = extract_links(r.content, url, r.headers, "crawldeck").links
            assert links == [web.url("www", "/")], kind  # the footer link, nothing else
            sig = looks_like_shell(r.content, r.headers["content-type"], len(links))
            assert sig == wanted[kind], kind
        for url in sorted((exp.all_good | exp.rendered_only) - set(exp.shells.values())):
            r = client.get(exp.canonical(url))
            links = extract_links(r.content, url, r.headers, "crawldeck").links
            assert looks_like_shell(r.content, r.headers["content-type"], len(links)) is None, url


# ---------------------------------------------------------------------------- the pool


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's Chromium; the render tests fail (never skip) without it."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(
            f"Chromium is missing at {CHROMIUM}: install it with `apt-get install chromium` "
            "(.ci/run does); the render tests need it"
        )
    return CHROMIUM


@pytest.fixture(scope="module")
def web() -> Iterator[LocalWeb]:
    with LocalWeb(delay_scale=0, today=datetime.date(2024, 1, 15)) as w:
        yield w
        assert w.errors() == []


@dataclass
class RobotsGate:
    """A gate as the engine builds it, minus politeness: robots.txt through a real
    ``RobotsCache``; records every call."""

    robots: RobotsCache
    calls: list[tuple[str, str]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    hold: set[str] = field(default_factory=set)  # paths whose gate never answers
    cancelled: list[str] = field(default_factory=list)

    async def __call__(self, url: str, resource_type: str) -> bool:
        self.calls.append((url, resource_type))
        if urlsplit(url).path in self.hold:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                self.cancelled.append(url)
                raise
        decision = await self.robots.check(url)
        if not decision.allowed:
            self.refused.append(url)
        return decision.allowed


def render_config(**overrides: Any) -> CrawlConfig:
    values: dict[str, Any] = {
        "render_browser_path": CHROMIUM,
        "render_pool_size": 1,
        "render_timeout_ms": 8000,
        "render_idle_ms": 300,
    }
    values.update(overrides)
    return build_config(values)


@pytest.fixture
async def gate() -> AsyncIterator[RobotsGate]:
    config = build_config({"connect_timeout_ms": 2000, "total_timeout_ms": 5000})
    async with AiohttpFetcher(config) as fetcher:
        robots = RobotsCache(
            fetcher, RobotsSettings.from_config(config), time.time, lambda line: None
        )
        yield RobotsGate(robots)
        await robots.aclose()


@pytest.fixture
async def pool(chromium: str, gate: RobotsGate) -> AsyncIterator[RenderPool]:
    p = RenderPool(render_config(), gate=gate)
    try:
        yield p
    finally:
        await p.aclose()


def fetch(web: LocalWeb, url: str) -> httpx.Response:
    with httpx.Client(trust_env=False) as client:
        return client.get(url)


async def render_fetched(pool: RenderPool, web: LocalWeb, url: str) -> RenderResult:
    r = await asyncio.to_thread(fetch, web, url)
    assert r.status_code == 200
    return await pool.render(url, r.content, content_type=r.headers["content-type"])


def resolved(result: RenderResult) -> set[str]:
    return {clean(href, result.base) for href in result.links}


def requested(web: LocalWeb) -> list[str]:
    return [a.path for a in web.access_log("spa")]


async def test_links_appear_only_after_rendering(
    web: LocalWeb, pool: RenderPool, gate: RobotsGate
) -> None:
    exp = web.expected
    web.clear_logs()
    found: set[str] = set()
    for kind in ("inline", "hash", "fetch", "private"):
        url = exp.shells[kind]
        raw = await asyncio.to_thread(fetch, web, url)
        raw_links = extract_links(raw.content, url, raw.headers, "crawldeck").links
        assert raw_links == [web.url("www", "/")]
        result = await pool.render(url, raw.content, content_type=raw.headers["content-type"])
        assert result.error is None and not result.timed_out, (kind, result)
        assert result.final_url == url and result.base == url
        links = resolved(result)
        assert web.url("www", "/") in links
        new = links - {web.url("www", "/")}
        assert new, f"{kind}: rendering found no link"
        assert new <= exp.rendered_only, kind
        found |= new
    # together the four settling shells give every rendered-only page but the live one
    assert found == exp.rendered_only - {web.url("spa", "/articles/live.html")}
    assert not found & exp.render_unreachable
    # the main documents came from the bodies already fetched: one request each
    paths = requested(web)
    for kind in ("inline", "hash", "fetch", "private"):
        assert paths.count(urlsplit(exp.shells[kind]).path) == 1, paths
    assert pool.stats().rendered == 4


async def test_hash_router_default_view(web: LocalWeb, pool: RenderPool) -> None:
    """The hash routes are in the DOM but are the same document for a crawler (it drops
    fragments); the default view's real path links are what rendering adds."""
    result = await render_fetched(pool, web, web.expected.shells["hash"])
    assert 'href="#/about"' in result.html and 'href="#/contact"' in result.html
    assert not any(href.startswith("#") for href in result.links)
    assert resolved(result) == {
        web.url("spa", "/docs/getting-started.html"),
        web.url("spa", "/docs/faq.html"),
        web.url("www", "/"),
    }
    assert result.requests == 1  # /static/hash-router.js, through the gate


async def test_disallowed_xhr_is_never_requested(
    web: LocalWeb, pool: RenderPool, gate: RobotsGate
) -> None:
    web.clear_logs()
    url = web.expected.shells["private"]
    result = await render_fetched(pool, web, url)
    (private,) = web.expected.render_disallowed
    assert result.blocked == [private]
    assert (private, "xhr") in gate.calls and gate.refused == [private]
    assert (web.url("spa", "/api/public.json"), "fetch") in gate.calls
    # on the server side: robots.txt read once, the public API fetched, the private never
    paths = requested(web)
    assert paths.count("/robots.txt") == 1
    assert "/api/public.json" in paths
    assert not any(p.startswith("/private-api/") for p in paths), paths
    # the page it would have linked stays unknown; the public one is found
    assert web.url("spa", "/team/roster.html") in resolved(result)
    assert not resolved(result) & web.expected.render_unreachable
    assert "Team data unavailable" in result.html
    assert pool.stats().blocked == 1


async def test_never_settling_page_is_cut_at_the_budget(
    web: LocalWeb, chromium: str, gate: RobotsGate
) -> None:
    """A page that never settles (``/api/hang`` answers after a minute; a poll every
    250 ms) is cut at the budget, its DOM as it was kept, its open request cancelled.

    Checked on what the render recorded, not on a loaded machine's wall clock (the DOM
    read and the context's close after the cut took 1.6 s on one, and the page polled
    once before the cut): that the cut comes exactly at the deadline is checked on a
    fake clock (``tests/unit/test_render_session.py``); here, the render ended no earlier
    than the budget, without error (a render past the pool's own limit, or one waiting
    for the hanging answer, fails), and with the hanging request cancelled."""
    reports: list[SubRequestEnd] = []
    pool = RenderPool(render_config(render_timeout_ms=BUDGET_MS), gate=gate, report=reports.append)
    try:
        await pool.start()  # the browser's start-up is not part of the page's budget
        web.clear_logs()
        result = await render_fetched(pool, web, web.expected.shells["never"])
    finally:
        await pool.aclose()
    assert result.timed_out and result.error is None
    assert result.elapsed_ms >= BUDGET_MS  # never cut before the budget
    # the DOM as it was at the budget: the link rendered at once is there
    assert web.url("spa", "/articles/live.html") in resolved(result)
    hang = web.url("spa", "/api/hang")
    assert (hang, "fetch") in gate.calls  # sent; its answer would come after 60 s
    assert pool.stats().timed_out == 1
    # every request the gate let through is reported once; the hanging one as cancelled
    assert len(reports) == result.requests == len({id(end) for end in reports})
    ends = {end.url: end.kind for end in reports}
    assert ends[hang] == "cancelled"
    # each poll the server saw went through the gate and was reported
    ticks = {web.url("spa", p) for p in requested(web) if p.startswith("/api/tick")}
    assert ticks <= {url for url, kind in ends.items() if kind in ("response", "cancelled")}
    assert {(url, "fetch") for url in ticks} <= set(gate.calls)


async def test_gate_wait_counts_against_the_budget_and_is_cancelled(
    web: LocalWeb, chromium: str, gate: RobotsGate
) -> None:
    """A sub-request whose politeness slot does not come in time is not sent."""
    gate.hold.add("/api/links.json")
    pool = RenderPool(render_config(render_timeout_ms=BUDGET_MS), gate=gate)
    try:
        await pool.start()
        web.clear_logs()
        result = await render_fetched(pool, web, web.expected.shells["fetch"])
    finally:
        await pool.aclose()
    links_json = web.url("spa", "/api/links.json")
    # cut at the budget while the gate held the request (a wait outside the budget
    # would have run into the pool's own limit: an error), the wait cancelled
    assert result.timed_out and result.error is None
    assert result.elapsed_ms >= BUDGET_MS
    assert gate.cancelled == [links_json]
    assert "/api/links.json" not in requested(web)
    assert resolved(result) == {web.url("www", "/")}


async def test_images_fonts_and_media_are_blocked(
    web: LocalWeb, pool: RenderPool, gate: RobotsGate
) -> None:
    web.clear_logs()
    result = await render_fetched(pool, web, web.expected.shells["inline"])
    assert set(result.skipped) == web.expected.render_resources
    assert '<img src="/img/hero.png"' in result.html  # in the DOM, never fetched
    resources = {urlsplit(u).path for u in web.expected.render_resources}
    assert not resources & set(requested(web))
    assert not {u for u, _ in gate.calls} & web.expected.render_resources
    assert result.requests == 0 and result.blocked == []


async def test_blocked_types_follow_the_config(
    web: LocalWeb, chromium: str, gate: RobotsGate
) -> None:
    pool = RenderPool(render_config(render_block_resources=["script", "font"]), gate=gate)
    try:
        web.clear_logs()
        hashed = await render_fetched(pool, web, web.expected.shells["hash"])
        inline = await render_fetched(pool, web, web.expected.shells["inline"])
    finally:
        await pool.aclose()
    # the router script is skipped, so the hash shell renders nothing
    assert hashed.skipped == [web.url("spa", "/static/hash-router.js")]
    assert resolved(hashed) == {web.url("www", "/")}
    # images and media now go through the gate and reach the server
    assert ("/img/hero.png") in requested(web)
    assert (web.url("spa", "/img/hero.png"), "image") in gate.calls
    assert inline.skipped == [web.url("spa", "/fonts/display.woff2")]


async def test_browser_recycled_after_max_pages(
    web: LocalWeb, chromium: str, gate: RobotsGate
) -> None:
    # The inline shell writes its links before its load event, so each render's count
    # is the same on any machine: the fetch shell's links come a fetch() and a script
    # task after load, and a loaded CI's renderer ran that task past render_idle_ms
    # (300) once, settling with the shell's footer link only.
    config = render_config(render_max_pages_per_browser=2)
    pool = RenderPool(config, gate=gate)
    try:
        for _ in range(5):
            result = await render_fetched(pool, web, web.expected.shells["inline"])
            assert result.error is None and len(result.links) == 4
        stats = pool.stats()
    finally:
        await pool.aclose()
    assert (stats.launches, stats.recycles, stats.rendered) == (3, 2, 5)
    assert stats.browsers == 1


async def test_pool_of_two_renders_in_parallel(
    web: LocalWeb, chromium: str, gate: RobotsGate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers render at once; the browsers' memory is measured from /proc, and every
    /proc scan of the pool (the browser's pid, the process trees) runs in a thread, never
    on the event loop's."""
    scans: list[tuple[str, int]] = []  # (what, thread)

    def recorded(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def scan(*args: Any) -> Any:
            scans.append((name, threading.get_ident()))
            return real(*args)

        return scan

    monkeypatch.setattr(procmem, "proc_parents", recorded("trees", procmem.proc_parents))
    monkeypatch.setattr(browser_pool, "find_marked", recorded("pid", procmem.find_marked))
    pool = RenderPool(render_config(render_pool_size=2, render_timeout_ms=BUDGET_MS), gate=gate)
    try:
        idle = pool.stats()
        assert (idle.size, idle.busy, idle.idle, idle.queued, idle.browsers) == (2, 0, 2, 0, 0)
        never = web.expected.shells["never"]
        body = (await asyncio.to_thread(fetch, web, never)).content
        tasks = [asyncio.create_task(pool.render(never, body)) for _ in range(3)]
        peak = idle
        for _ in range(200):  # bounded: at most 10 s
            await asyncio.sleep(0.05)
            stats = pool.stats()
            if stats.busy > peak.busy or stats.queued > peak.queued:
                peak = stats
            if peak.busy == 2 and peak.queued == 1:
                break
        results = await asyncio.gather(*tasks)
        done = pool.stats()
    finally:
        await pool.aclose()
    assert (peak.busy, peak.idle, peak.queued) == (2, 0, 1)
    assert all(r.timed_out and r.error is None for r in results), [
        (r.timed_out, r.error, round(r.elapsed_ms)) for r in results
    ]
    # two at a time (the peak above: two busy, one queued), each page its full budget
    assert all(r.elapsed_ms >= BUDGET_MS for r in results)
    assert (done.busy, done.queued, done.browsers, done.launches) == (0, 0, 2, 2)
    assert done.rss_bytes > done.pss_bytes > 50 * 2**20  # two Chromium process trees
    assert done.memory_age_s is not None and done.memory_age_s >= 0
    closed = pool.stats()
    assert (closed.rss_bytes, closed.pss_bytes, closed.memory_age_s) == (0, 0, 0.0)  # none left
    assert {what for what, _ in scans} == {"pid", "trees"}
    assert [what for what, _ in scans].count("pid") == 2  # one per browser started
    assert threading.get_ident() not in {thread for _, thread in scans}


async def test_busy_page_script_is_cut_and_the_worker_goes_on(
    web: LocalWeb, chromium: str, gate: RobotsGate
) -> None:
    pool = RenderPool(render_config(render_timeout_ms=BUDGET_MS), gate=gate)
    try:
        await pool.start()
        spin = await render_fetched(pool, web, web.expected.shells["spin"])
        after = await render_fetched(pool, web, web.expected.shells["inline"])  # links at load
        stats = pool.stats()
    finally:
        await pool.aclose()
    assert spin.timed_out and spin.error is not None and "DOM" in spin.error
    assert spin.links == [] and spin.html == ""
    assert after.error is None and len(after.links) == 4
    assert (stats.failed, stats.rendered) == (1, 1)


async def test_navigation_away_is_recorded_not_followed(web: LocalWeb, pool: RenderPool) -> None:
    """A script redirect and a popup: aborted, recorded, never requested."""
    url = web.url("spa", "/app/redirecting")
    body = (
        b"<!DOCTYPE html><html><head><title>Moving</title></head><body><div id=root></div>"
        b"<script>window.open('/articles/stoves.html');"
        b"setTimeout(function () { location.href = '/articles/tents.html'; }, 10);</script>"
        b"</body></html>"
    )
    web.clear_logs()
    result = await pool.render(url, body)
    tents, stoves = web.url("spa", "/articles/tents.html"), web.url("spa", "/articles/stoves.html")
    assert sorted(result.navigations) == [stoves, tents]
    assert requested(web) == []  # not even the page itself: its body was given


async def test_rendered_meta_robots_and_websocket(web: LocalWeb, pool: RenderPool) -> None:
    url = web.url("spa", "/app/socket")
    ws_url = f"ws://{web.host_keys['spa']}/live"
    body = (
        b"<!DOCTYPE html><html><head><title>Socket</title></head><body><div id=app></div>"
        b"<script>var m = document.createElement('meta'); m.name = 'robots';"
        b"m.content = 'noindex, nofollow'; document.head.appendChild(m);"
        b"document.getElementById('app').innerHTML = '<a href=\"/articles/tents.html\">T</a>';"
        b"new WebSocket('" + ws_url.encode() + b"');</script></body></html>"
    )
    web.clear_logs()
    result = await pool.render(url, body)
    assert result.nofollow and result.noindex and result.links == []
    assert 'href="/articles/tents.html"' in result.html
    assert result.skipped == [ws_url]
    assert requested(web) == []


async def test_responses_of_sub_requests_are_reported(
    web: LocalWeb, chromium: str, gate: RobotsGate
) -> None:
    """The engine's politeness learns from what the page fetched: a 200, a 404, a refused
    connection; not from a cross-origin answer the browser hid from the page."""
    reports: list[SubRequestEnd] = []
    pool = RenderPool(render_config(), gate=gate, report=reports.append)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.77.0.9", 0))
        refused = f"http://127.77.0.9:{probe.getsockname()[1]}/x"
    busy = web.url("busy", "/events/")
    body = (
        b"<!DOCTYPE html><html><head><title>Cross</title></head><body><div id=root></div>"
        b"<script>fetch('" + busy.encode() + b"').catch(function () {});"
        b"fetch('" + refused.encode() + b"').catch(function () {});"
        b"fetch('/api/missing.json'); fetch('/api/links.json');</script></body></html>"
    )
    try:
        web.clear_logs()
        result = await pool.render(web.url("spa", "/app/cross"), body)
    finally:
        await pool.aclose()
    assert result.requests == 4 and result.error is None
    by_url = {end.url: (end.kind, end.status, end.retry_after) for end in reports}
    assert len(by_url) == len(reports)  # each one reported once
    assert by_url == {
        web.url("spa", "/api/links.json"): ("response", 200, None),
        web.url("spa", "/api/missing.json"): ("response", 404, None),
        refused: ("no_response", None, None),
        # Chromium refuses it before the network (Local Network Access: a document
        # served from bytes is not on loopback), or, were it sent, CORS would hide
        # busy's answer (429) from the page: nothing is known, no false backoff
        busy: ("cancelled", None, None),
    }
    assert all(end.elapsed_s >= 0 for end in reports)  # exact figures: test_render_session
    assert [a.status for a in web.access_log("busy") if a.path == "/events/"] in ([], [429])
    # the browser sends crawldeck's User-Agent
    (api,) = [a for a in web.access_log("spa") if a.path == "/api/links.json"]
    assert api.user_agent == render_config().user_agent


async def test_without_a_body_the_page_is_requested_through_the_gate(
    web: LocalWeb, pool: RenderPool, gate: RobotsGate
) -> None:
    web.clear_logs()
    url = web.expected.shells["fetch"]
    result = await pool.render(url)
    assert (url, "document") in gate.calls
    assert requested(web).count("/app/fetch") == 1
    assert len(result.links) == 4


async def test_aclose_fails_pending_renders(web: LocalWeb, chromium: str, gate: RobotsGate) -> None:
    pool = RenderPool(render_config(render_timeout_ms=5000), gate=gate)
    never = web.expected.shells["never"]
    task = asyncio.create_task(pool.render(never))
    for _ in range(200):  # bounded: at most 10 s
        await asyncio.sleep(0.05)
        if pool.stats().busy:
            break
    await pool.aclose()
    with pytest.raises(RenderUnavailable, match="closed"):
        await task
    assert not pool.available
    with pytest.raises(RenderUnavailable):
        await pool.render(never)


async def test_missing_chromium_is_one_clear_line(gate: RobotsGate) -> None:
    config = render_config(render_browser_path="/nonexistent/chromium")
    pool = RenderPool(config, gate=gate)
    assert not pool.available
    assert pool.reason == unavailable_reason(config)
    assert "\n" not in pool.reason
    assert "/nonexistent/chromium" in pool.reason and "apt-get install chromium" in pool.reason
    with pytest.raises(RenderUnavailable) as info:
        await pool.render("http://127.77.0.8:1/", b"<div id=root></div>")
    assert str(info.value) == pool.reason
    with pytest.raises(RenderUnavailable):
        await pool.start()
    stats = pool.stats()
    assert (stats.available, stats.reason, stats.browsers) == (False, pool.reason, 0)
    await pool.aclose()


async def test_a_browser_that_does_not_start(gate: RobotsGate, tmp_path: Any) -> None:
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\necho 'chromium: cannot open display' >&2\nexit 1\n")
    fake.chmod(0o755)
    pool = RenderPool(render_config(render_browser_path=str(fake)), gate=gate)
    assert pool.available  # the file is there; only launching tells
    try:
        with pytest.raises(RenderUnavailable) as info:
            await pool.start()
    finally:
        await pool.aclose()
    message = str(info.value)
    assert "\n" not in message and str(fake) in message and "does not start" in message
    assert pool.reason == message and not pool.available


# ---------------------------------------------------------------------------- a crawl


async def mini_crawl(web: LocalWeb, pool: RenderPool | None) -> tuple[set[str], set[str]]:
    """Breadth-first over the spa host the way the engine is to do it: fetch, extract,
    ``should_render``, render, union the links. Returns (pages fetched, pages rendered)."""
    config = build_config({})
    spa = web.host_keys["spa"]
    seen = {web.url("spa", "/")}
    queue = deque(seen)
    fetched: set[str] = set()
    rendered: set[str] = set()
    async with httpx.AsyncClient(trust_env=False) as client:
        for _ in range(100):  # bounded; the spa host has about 20 pages
            if not queue:
                break
            url = queue.popleft()
            r = await client.get(url)
            fetched.add(url)
            raw = extract_links(r.content, url, r.headers, "crawldeck")
            links = {clean(h, raw.base) for h in raw.links}
            reason = should_render(
                config, spa, r.content, r.headers["content-type"], len(raw.links)
            )
            if pool is not None and reason is not None:
                result = await pool.render(url, r.content, content_type=r.headers["content-type"])
                rendered.add(url)
                links |= resolved(result)
            for link in links:
                try:
                    same_host = host_key(link) == spa
                except UrlError:
                    continue
                if same_host and link not in seen:
                    seen.add(link)
                    queue.append(link)
    return fetched, rendered


async def test_crawl_finds_rendered_only_pages_only_with_rendering(
    web: LocalWeb, chromium: str, gate: RobotsGate
) -> None:
    exp = web.expected
    without, _ = await mini_crawl(web, None)
    assert without == exp.good["spa"]
    # render_config's budget (8 s), not BUDGET_MS: the private shell's page fetches
    # /api/public.json after a refused XHR, through the gate, and on four test workers
    # 1.5 s cut it before the roster link came (a .ci/run of this session); the
    # never-settling shell costs the whole budget either way
    pool = RenderPool(render_config(render_pool_size=2), gate=gate)
    try:
        web.clear_logs()
        with_rendering, rendered = await mini_crawl(web, pool)
    finally:
        await pool.aclose()
    assert with_rendering == exp.good["spa"] | exp.rendered_only
    assert rendered == {exp.shells[k] for k in ("inline", "hash", "fetch", "private", "never")}
    never_requested = exp.render_disallowed | exp.render_unreachable | exp.render_resources
    assert not {web.url("spa", p) for p in requested(web)} & never_requested
    assert "/robots.txt" in requested(web)  # the gate read it before any sub-request
