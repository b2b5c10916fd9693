"""core.net.robots against real robots.txt servers on loopback, with a fake clock."""

from __future__ import annotations

import asyncio
import itertools
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import robotskit
from fakeclock import FakeClock
from httpserver import HTTPTestServer, Request, Response
from robotskit import DAY, ONLY_US, T0, make_config

from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.net.robots import RobotsCache
from crawldeck.core.policy.robots import RobotsSettings
from crawldeck.core.policy.urls import clean, normalize

#: The fixtures shared with the other tier's file, as fixtures of this module.
audit = robotskit.audit
cache = robotskit.cache
clock = robotskit.clock
fetcher = robotskit.fetcher


def text(body: str, **headers: str) -> Response:
    return Response(200, {"Content-Type": "text/plain", **headers}, body.encode())


@pytest.fixture
def srv() -> Iterator[HTTPTestServer]:
    with HTTPTestServer() as server:
        yield server


async def allowed(cache: RobotsCache, url: str) -> bool:
    return (await cache.check(url)).allowed


RULES = """\
User-agent: *
Disallow: /private
Allow: /private/public
Disallow: /*.pdf$
Disallow: /tmp/*/secret
"""


async def test_allow_disallow_wildcards(srv: HTTPTestServer, cache: RobotsCache) -> None:
    srv.set("/robots.txt", text(RULES))
    first = await cache.check(srv.url("/"))
    assert (first.allowed, first.status, first.fetched, first.crawl_delay_s) == (
        True,
        "ok",
        True,
        None,
    )
    results = {
        path: await allowed(cache, srv.url(path))
        for path in [
            "/private",
            "/private/x",
            "/private/public/y",
            "/doc.pdf",
            "/a/b/doc.pdf",
            "/doc.pdf?x=1",
            "/doc.pdfx",
            "/tmp/a/b/secret",
            "/tmp/secret",
            "/public",
        ]
    }
    assert results == {
        "/private": False,
        "/private/x": False,
        "/private/public/y": True,
        "/doc.pdf": False,
        "/a/b/doc.pdf": False,
        "/doc.pdf?x=1": True,
        "/doc.pdfx": True,
        "/tmp/a/b/secret": False,
        "/tmp/secret": True,
        "/public": True,
    }
    again = await cache.check(srv.url("/private"))
    assert (again.allowed, again.fetched) == (False, False)
    assert srv.count("/robots.txt") == 1
    assert cache.origins() == 1
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert entry.rules == (
        ("disallow", "/private"),
        ("allow", "/private/public"),
        ("disallow", "/*.pdf$"),
        ("disallow", "/tmp/*/secret"),
    )
    assert (entry.status, entry.http_status, entry.fetched_at, entry.expires_at) == (
        "ok",
        200,
        T0,
        T0 + DAY,
    )


GROUPS = """\
User-agent: *
Disallow: /

User-agent: CrawlDeck
Disallow: /no-crawldeck
Crawl-delay: 2.5

User-agent: otherbot
Disallow: /no-other
"""


@pytest.mark.parametrize(
    ("token", "expected", "delay", "rules"),
    [
        (
            "crawldeck",
            {"/": True, "/no-crawldeck": False, "/no-other": True},
            2.5,
            (("disallow", "/no-crawldeck"),),
        ),
        (
            "otherbot",
            {"/": True, "/no-crawldeck": True, "/no-other": False},
            None,
            (("disallow", "/no-other"),),
        ),
        (
            "nobody",
            {"/": False, "/no-crawldeck": False, "/no-other": False},
            None,
            (("disallow", "/"),),
        ),
    ],
)
async def test_group_selection_by_token(
    srv: HTTPTestServer,
    fetcher: AiohttpFetcher,
    clock: FakeClock,
    token: str,
    expected: dict[str, bool],
    delay: float | None,
    rules: tuple[tuple[str, str], ...],
) -> None:
    srv.set("/robots.txt", text(GROUPS))
    cache = RobotsCache(
        fetcher, RobotsSettings.from_config(make_config(robots_token=token)), clock, lambda m: None
    )
    try:
        got = {path: await allowed(cache, srv.url(path)) for path in expected}
        decision = await cache.check(srv.url("/x"))
    finally:
        await cache.aclose()
    assert got == expected
    assert decision.crawl_delay_s == delay
    entry = cache.entry(srv.url("/anything"))
    assert entry is not None
    assert (entry.rules, entry.crawl_delay_s) == (rules, delay)


async def test_robots_txt_itself_is_always_allowed(srv: HTTPTestServer, cache: RobotsCache) -> None:
    srv.set("/robots.txt", text("User-agent: *\nDisallow: /\n"))
    assert await allowed(cache, srv.url("/page")) is False
    assert await allowed(cache, srv.url("/robots.txt")) is True


@pytest.mark.parametrize("status", [404, 401, 403, 410])
async def test_4xx_allows_all(
    srv: HTTPTestServer, cache: RobotsCache, audit: list[str], status: int
) -> None:
    srv.set("/robots.txt", Response(status, {}, b"User-agent: *\nDisallow: /\n"))
    decision = await cache.check(srv.url("/anything"))
    assert (decision.allowed, decision.status, decision.fetched) == (True, "missing", True)
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert (entry.http_status, entry.allow_all, entry.rules, entry.detail) == (
        status,
        True,
        (),
        str(status),
    )
    assert entry.expires_at == T0 + DAY
    assert audit == []


@pytest.mark.parametrize("status", [503, 500, 429])
async def test_5xx_allows_all_and_audits_once(
    srv: HTTPTestServer, cache: RobotsCache, audit: list[str], clock: FakeClock, status: int
) -> None:
    srv.set("/robots.txt", Response(status, {}, b"down"))
    first = await cache.check(srv.url("/a"))
    second = await cache.check(srv.url("/b"))
    assert (first.allowed, first.status, first.fetched) == (True, "unreachable", True)
    assert (second.allowed, second.status, second.fetched) == (True, "unreachable", False)
    assert audit == [
        f"robots.txt of {srv.origin} unreachable ({status}): allowing all, retry in 3600 s"
    ]
    assert srv.count("/robots.txt") == 1
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert (entry.expires_at, entry.http_status, entry.from_last_good) == (T0 + 3600, status, False)
    # retried after robots_retry_s
    srv.set("/robots.txt", text("User-agent: *\nDisallow: /b\n"))
    clock.now = T0 + 3600
    third = await cache.check(srv.url("/b"))
    assert (third.allowed, third.status, third.fetched) == (False, "ok", True)
    assert srv.count("/robots.txt") == 2


@pytest.mark.parametrize(
    ("status", "retry_after"),
    [(429, "120"), (503, "Fri, 31 Dec 1999 23:59:59 GMT"), (503, "9" * 400), (500, None)],
)
async def test_429_503_keep_status_and_raw_retry_after(
    srv: HTTPTestServer, cache: RobotsCache, status: int, retry_after: str | None
) -> None:
    # The engine backs the host off from these (politeness.on_response).
    headers = {} if retry_after is None else {"Retry-After": retry_after}
    srv.set("/robots.txt", Response(status, headers, b"busy"))
    decision = await cache.check(srv.url("/a"))
    assert (decision.status, decision.fetched) == ("unreachable", True)
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert (entry.status, entry.http_status, entry.retry_after) == (
        "unreachable",
        status,
        retry_after,
    )


async def test_retry_after_kept_with_the_last_good_copy(
    srv: HTTPTestServer, cache: RobotsCache, clock: FakeClock
) -> None:
    srv.set("/robots.txt", text("User-agent: *\nDisallow: /x\n"))
    await cache.check(srv.url("/"))
    first = cache.entry(srv.origin)
    assert first is not None and first.retry_after is None
    srv.set("/robots.txt", Response(429, {"Retry-After": "30"}, b""))
    clock.now = T0 + DAY
    assert await allowed(cache, srv.url("/x")) is False
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert (entry.from_last_good, entry.http_status, entry.retry_after) == (True, 429, "30")


async def test_strict_mode_disallows_on_5xx(
    srv: HTTPTestServer, fetcher: AiohttpFetcher, clock: FakeClock, audit: list[str]
) -> None:
    srv.set("/robots.txt", Response(503, {}, b""))
    cache = RobotsCache(
        fetcher,
        RobotsSettings.from_config(make_config(robots_on_failure="disallow")),
        clock,
        audit.append,
    )
    try:
        decision = await cache.check(srv.url("/page"))
        itself = await cache.check(srv.url("/robots.txt"))
    finally:
        await cache.aclose()
    assert (decision.allowed, decision.status) == (False, "unreachable")
    assert itself.allowed is True
    assert audit == [
        f"robots.txt of {srv.origin} unreachable (503): disallowing all (strict mode), "
        "retry in 3600 s"
    ]
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert (entry.disallow_all, entry.rules) == (True, (("disallow", "/"),))


async def test_network_error_is_unreachable(cache: RobotsCache, audit: list[str]) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    try:
        origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
        decision = await cache.check(origin + "/page")
    finally:
        sock.close()
    assert (decision.allowed, decision.status, decision.fetched) == (True, "unreachable", True)
    assert audit == [f"robots.txt of {origin} unreachable (connect): allowing all, retry in 3600 s"]
    entry = cache.entry(origin)
    assert entry is not None
    assert (entry.http_status, entry.detail, entry.retry_after) == (None, "connect", None)


async def test_last_good_copy_survives_a_later_5xx(
    srv: HTTPTestServer, cache: RobotsCache, clock: FakeClock, audit: list[str]
) -> None:
    srv.set("/robots.txt", text("User-agent: *\nDisallow: /x\nCrawl-delay: 3\n"))
    assert await allowed(cache, srv.url("/x")) is False
    srv.set("/robots.txt", Response(503, {}, b""))
    clock.now = T0 + DAY  # expired
    decision = await cache.check(srv.url("/x"))
    assert (decision.allowed, decision.status, decision.fetched, decision.crawl_delay_s) == (
        False,
        "unreachable",
        True,
        3.0,
    )
    assert await allowed(cache, srv.url("/y")) is True
    assert audit == [
        f"robots.txt of {srv.origin} unreachable (503): using the copy fetched at "
        "2023-11-14T22:13:20Z, retry in 3600 s"
    ]
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert (entry.from_last_good, entry.rules, entry.expires_at) == (
        True,
        (("disallow", "/x"),),
        T0 + DAY + 3600,
    )
    assert srv.count("/robots.txt") == 2


async def test_redirects_are_followed_across_hosts(srv: HTTPTestServer, cache: RobotsCache) -> None:
    with HTTPTestServer() as other:
        srv.set("/robots.txt", Response(301, {"Location": "/r1"}))
        srv.set("/r1", Response(302, {"Location": other.url("/moved/robots.txt")}))
        other.set("/moved/robots.txt", text("User-agent: *\nDisallow: /secret\n"))
        decision = await cache.check(srv.url("/secret/page"))
        assert (decision.allowed, decision.status, decision.fetched) == (False, "ok", True)
        assert (srv.count("/robots.txt"), srv.count("/r1")) == (1, 1)
        assert other.count("/moved/robots.txt") == 1
        assert other.count("/robots.txt") == 0
        assert await allowed(cache, srv.url("/open")) is True
        assert srv.count() + other.count() == 3


def chain(srv: HTTPTestServer, redirects: int) -> None:
    """/robots.txt -> /h1 -> ... with ``redirects`` 3xx answers, then a Disallow: /."""
    paths = ["/robots.txt"] + [f"/h{i}" for i in range(1, redirects + 1)]
    for here, there in itertools.pairwise(paths):
        srv.set(here, Response(307, {"Location": there}))
    srv.set(paths[-1], text("User-agent: *\nDisallow: /\n"))


async def test_five_redirects_are_followed(srv: HTTPTestServer, cache: RobotsCache) -> None:
    chain(srv, 5)
    decision = await cache.check(srv.url("/page"))
    assert (decision.allowed, decision.status) == (False, "ok")
    assert srv.count() == 6


async def test_six_redirects_allow_all(
    srv: HTTPTestServer, cache: RobotsCache, audit: list[str]
) -> None:
    chain(srv, 6)
    decision = await cache.check(srv.url("/page"))
    # RFC 9309 §2.3.1.2: MAY assume unavailable -> the 4xx rule (§2.3.1.3): allow all.
    assert (decision.allowed, decision.status, decision.fetched) == (True, "redirect_limit", True)
    assert srv.count() == 6  # /robots.txt and /h1../h5; /h6 is never asked for
    assert srv.count("/h6") == 0
    assert audit == [
        f"robots.txt of {srv.origin}: more than 5 redirects: allowing all, retry in 86400 s"
    ]
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert (entry.http_status, entry.allow_all) == (307, True)


async def test_redirect_without_location_is_missing(
    srv: HTTPTestServer, cache: RobotsCache
) -> None:
    srv.set("/robots.txt", Response(302, {}, b""))
    decision = await cache.check(srv.url("/page"))
    assert (decision.allowed, decision.status) == (True, "missing")
    with HTTPTestServer() as ftp:
        ftp.set("/robots.txt", Response(301, {"Location": "ftp://files.test/robots.txt"}))
        decision = await cache.check(ftp.url("/page"))
        assert (decision.allowed, decision.status) == (True, "missing")
        entry = cache.entry(ftp.origin)
        assert entry is not None
        assert (entry.http_status, entry.detail) == (301, "301 without a usable Location")


@pytest.mark.parametrize("location", ["mailto:a@b.c", "javascript:x()", "http://[::1"])
async def test_redirect_to_junk_location_is_missing_not_unreachable(
    srv: HTTPTestServer, cache: RobotsCache, location: str
) -> None:
    # The fetcher used to raise on such a Location (httpx parsed it), so the file was
    # "unreachable" (disallow all in strict mode); it is a redirect without a target.
    srv.set("/robots.txt", Response(302, {"Location": location}))
    decision = await cache.check(srv.url("/page"))
    assert (decision.allowed, decision.status) == (True, "missing")
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert (entry.http_status, entry.detail) == (302, "302 without a usable Location")


async def test_a_redirect_to_itself_stops_at_the_first_repeat(
    srv: HTTPTestServer, cache: RobotsCache, audit: list[str]
) -> None:
    srv.set("/robots.txt", Response(302, {"Location": "/robots.txt"}))
    decision = await cache.check(srv.url("/page"))
    assert (decision.allowed, decision.status) == (True, "redirect_limit")
    assert srv.count("/robots.txt") == 1  # was 6: the loop was followed to the limit
    assert audit == [
        f"robots.txt of {srv.origin}: redirect loop: redirect 1 goes back to "
        f"{srv.origin}/robots.txt: allowing all, retry in 86400 s"
    ]


async def test_a_redirect_loop_across_hosts_stops_at_its_first_repeat(
    srv: HTTPTestServer, cache: RobotsCache, audit: list[str]
) -> None:
    # A -> B -> A: RFC 9309 §2.3.1.2 lets a crawler assume a file unavailable past
    # five redirects; a loop never reaches one, so it is that case (allow all, as a
    # 4xx, §2.3.1.3) decided at the repeat, without asking A again.
    with HTTPTestServer() as other:
        srv.set("/robots.txt", Response(301, {"Location": other.url("/b")}))
        other.set("/b", Response(302, {"Location": srv.url("/robots.txt")}))
        decision = await cache.check(srv.url("/page"))
        assert (decision.allowed, decision.status, decision.fetched) == (
            True,
            "redirect_limit",
            True,
        )
        assert (srv.count("/robots.txt"), other.count("/b")) == (1, 1)
        assert srv.count() + other.count() == 2
        entry = cache.entry(srv.origin)
        assert entry is not None
        assert (entry.http_status, entry.allow_all, entry.detail) == (
            302,
            True,
            f"redirect loop: redirect 2 goes back to {srv.origin}/robots.txt",
        )
        assert audit == [
            f"robots.txt of {srv.origin}: redirect loop: redirect 2 goes back to "
            f"{srv.origin}/robots.txt: allowing all, retry in 86400 s"
        ]


CAP = 500 * 1024


def padded(before: str, filler_to: int, after: str) -> str:
    filler = "# " + "x" * 97 + "\n"  # 100 bytes a line
    lines = (filler_to - len(before)) // len(filler)
    body = before + filler * lines
    return body + "#" * (filler_to - len(body)) + after


async def test_oversized_robots_txt_is_parsed_up_to_the_cap(
    srv: HTTPTestServer, cache: RobotsCache
) -> None:
    body = padded("User-agent: *\nDisallow: /before\n", CAP + 10_000, "\nDisallow: /after\n")
    assert len(body) > CAP + 10_000
    srv.set("/robots.txt", text(body))
    assert await allowed(cache, srv.url("/before/x")) is False
    assert await allowed(cache, srv.url("/after/x")) is True
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert entry.rules == (("disallow", "/before"),)


async def test_the_size_cap_is_logged_once_per_origin_with_both_sizes(
    srv: HTTPTestServer, cache: RobotsCache, clock: FakeClock, audit: list[str]
) -> None:
    body = padded("User-agent: *\nDisallow: /before\n", CAP + 100_000, "\nDisallow: /after\n")
    size = len(body.encode())
    srv.set("/robots.txt", text(body, **{"Cache-Control": "max-age=60"}))
    assert await allowed(cache, srv.url("/before/x")) is False
    line = (
        f"robots.txt of {srv.origin}: {size} bytes served, {CAP} bytes read "
        "(robots_max_bytes); the lines after the cut are not read"
    )
    assert audit == [line]
    clock.advance(61)  # expired: fetched again, cut again, not logged again
    assert await allowed(cache, srv.url("/before/y")) is False
    assert srv.count("/robots.txt") == 2
    assert audit == [line]


async def test_a_line_cut_by_the_cap_is_dropped(srv: HTTPTestServer, cache: RobotsCache) -> None:
    # the cap falls right after "Disallow: /", inside "Disallow: /private-area"
    body = padded("User-agent: *\n", CAP - len("\nDisallow: /"), "\nDisallow: /private-area\n")
    assert body.encode()[:CAP].endswith(b"\nDisallow: /")
    srv.set("/robots.txt", text(body))
    assert await allowed(cache, srv.url("/")) is True
    assert await allowed(cache, srv.url("/private-area")) is True


async def test_non_utf8_and_html_garbage_are_parsed_best_effort(
    srv: HTTPTestServer, cache: RobotsCache
) -> None:
    srv.set(
        "/robots.txt",
        Response(
            200,
            {},
            b"\xef\xbb\xbfUser-agent: *\n# caf\xe9 \xff\xfe\nDisallow: /x\xe9\nDisallow: /y\n",
        ),
    )
    assert await allowed(cache, srv.url("/y")) is False
    assert await allowed(cache, srv.url("/z")) is True
    with HTTPTestServer() as html:
        html.set("/robots.txt", text("<html><body><p>Welcome! \x00\x01</p><div>a: b</div></html>"))
        decision = await cache.check(html.url("/anything"))
        assert (decision.allowed, decision.status) == (True, "ok")


async def test_max_age_is_honoured(
    srv: HTTPTestServer, cache: RobotsCache, clock: FakeClock
) -> None:
    srv.set(
        "/robots.txt", text("User-agent: *\nDisallow: /a\n", **{"Cache-Control": "max-age=600"})
    )
    await cache.check(srv.url("/"))
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert entry.expires_at == T0 + 600
    clock.now = T0 + 500  # 100 s left of 600: more than 10 %
    assert (await cache.check(srv.url("/"))).fetched is False
    await asyncio.sleep(0.05)
    assert srv.count("/robots.txt") == 1
    clock.now = T0 + 600
    assert (await cache.check(srv.url("/"))).fetched is True
    assert srv.count("/robots.txt") == 2


async def test_max_age_is_capped_at_24_hours(srv: HTTPTestServer, cache: RobotsCache) -> None:
    srv.set("/robots.txt", text("", **{"Cache-Control": "public, max-age=9999999"}))
    await cache.check(srv.url("/"))
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert entry.expires_at - entry.fetched_at == DAY


async def test_concurrent_first_checks_share_one_fetch(
    srv: HTTPTestServer, cache: RobotsCache
) -> None:
    def slow(req: Request) -> Response:
        srv.wait(0.1)
        return text("User-agent: *\nDisallow: /no\n")

    srv.set("/robots.txt", slow)
    decisions = await asyncio.gather(
        *(cache.check(srv.url(f"/no/{i}" if i % 2 else f"/yes/{i}")) for i in range(10))
    )
    assert srv.count("/robots.txt") == 1
    assert sum(d.fetched for d in decisions) == 1
    assert [d.allowed for d in decisions] == [i % 2 == 0 for i in range(10)]


async def test_background_refresh_near_expiry(
    srv: HTTPTestServer, cache: RobotsCache, clock: FakeClock
) -> None:
    srv.set(
        "/robots.txt", text("User-agent: *\nDisallow: /old\n", **{"Cache-Control": "max-age=1000"})
    )
    assert await allowed(cache, srv.url("/old")) is False

    def slow_new(req: Request) -> Response:
        srv.wait(0.3)
        return text("User-agent: *\nDisallow: /new\n", **{"Cache-Control": "max-age=1000"})

    srv.set("/robots.txt", slow_new)
    clock.now = T0 + 950  # 50 s left: less than 10 % of 1000 s
    decision = await cache.check(srv.url("/old"))
    assert (decision.allowed, decision.fetched) == (False, False)  # answered from the old copy
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert entry.refreshing is True
    # more checks while the refresh runs start no second request
    assert await allowed(cache, srv.url("/new")) is True
    for _ in range(200):  # bounded wait for the refresh: at most 2 s
        entry = cache.entry(srv.origin)
        if entry is not None and not entry.refreshing:
            break
        await asyncio.sleep(0.01)
    assert srv.count("/robots.txt") == 2
    assert entry is not None
    assert (entry.refreshing, entry.fetched_at, entry.expires_at) == (False, T0 + 950, T0 + 1950)
    assert await allowed(cache, srv.url("/old")) is True
    assert await allowed(cache, srv.url("/new")) is False
    assert srv.count("/robots.txt") == 2


async def test_aclose_cancels_background_refresh(
    srv: HTTPTestServer, fetcher: AiohttpFetcher, clock: FakeClock
) -> None:
    srv.set("/robots.txt", text("", **{"Cache-Control": "max-age=100"}))
    cache = RobotsCache(fetcher, RobotsSettings.from_config(make_config()), clock, lambda m: None)
    await cache.check(srv.url("/"))
    srv.set("/robots.txt", lambda req: (srv.wait(5.0), text(""))[1])
    clock.now = T0 + 95
    await cache.check(srv.url("/"))
    assert cache.refresh(srv.origin) is False  # already running
    entry = cache.entry(srv.origin)
    assert entry is not None and entry.refreshing
    await cache.aclose()
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert (entry.refreshing, entry.fetched_at) == (False, T0)


async def test_allow_only_this_bot_idiom(srv: HTTPTestServer, cache: RobotsCache) -> None:
    srv.set("/robots.txt", text(ONLY_US))
    decision = await cache.check(srv.url("/anything"))
    assert (decision.allowed, decision.status) == (True, "ok")
    entry = cache.entry(srv.origin)
    assert entry is not None
    assert (entry.rules, entry.allow_all) == ((), True)


async def test_only_other_bot_idiom_blocks_us(srv: HTTPTestServer, cache: RobotsCache) -> None:
    srv.set("/robots.txt", text(ONLY_US.replace("crawldeck", "otherbot")))
    assert await allowed(cache, srv.url("/anything")) is False


@pytest.mark.parametrize(
    "link", ["/y/../private", "/y/%2E%2e/private", "/./private/x", "/private/./x/../y"]
)
async def test_dot_segments_cannot_bypass_robots(
    srv: HTTPTestServer, cache: RobotsCache, fetcher: AiohttpFetcher, link: str
) -> None:
    # clean() removes dot segments, so robots.txt is checked on the path that is sent
    # (httpx removed them before sending: GET /private went out although disallowed).
    srv.set("/robots.txt", text("User-agent: *\nDisallow: /private\n"))
    url = clean(srv.url(link))
    assert "/." not in url and "%2" not in url.lower()
    assert await allowed(cache, url) is False
    # what robots allows is sent exactly as cleaned
    public = clean(srv.url(link.replace("private", "public")))
    assert await allowed(cache, public) is True
    srv.set(urlsplit(public).path, Response(200, {}, b"ok"))
    await fetcher.fetch(public)
    assert srv.requests[-1].path == urlsplit(public).path
    assert normalize(public, ()) == public


async def test_a_group_named_by_a_prefix_of_our_token_does_not_apply(
    srv: HTTPTestServer, cache: RobotsCache
) -> None:
    # RFC 9309 §2.2.1: the product token must match; protego alone would take "crawl".
    srv.set(
        "/robots.txt",
        text("User-agent: crawl\nAllow: /\n\nUser-agent: *\nDisallow: /private\n"),
    )
    assert await allowed(cache, srv.url("/private")) is False
    assert await allowed(cache, srv.url("/public")) is True
