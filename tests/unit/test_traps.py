"""Tests of core.policy.traps: block reasons, the crawl scope and the trap guards."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable
from typing import Any

import pytest
from scaling import assert_linear

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.errors import UrlError
from crawldeck.core.policy import urls
from crawldeck.core.policy.traps import BlockReason, ScopePolicy, TrapGuard, TrapSettings, Verdict

TODAY = datetime.date(2026, 5, 15)
R = BlockReason


def config(**values: Any) -> CrawlConfig:
    return build_config(values)


def guard(scope: str = "any", seeds: tuple[str, ...] = (), **values: Any) -> TrapGuard:
    policy = ScopePolicy(scope)  # type: ignore[arg-type]
    for seed in seeds:
        policy.add_seed(seed)
    return TrapGuard(TrapSettings.from_config(config(**values)), policy, TODAY)


# ---------------------------------------------------------------------- BlockReason


def test_block_reasons_are_exactly_the_contract() -> None:
    assert [r.value for r in BlockReason] == [
        "robots",
        "robots_unavailable",
        "depth",
        "host_cap",
        "path_depth",
        "repeating_path",
        "calendar",
        "pagination",
        "url_length",
        "scheme",
        "bad_url",
        "scope",
        "excluded",
        "redirect_loop",
        "too_many_redirects",
        "redirect_trap",
        "private_address",
        "dns",
    ]
    for reason in BlockReason:
        assert reason.name == reason.value.upper()
        assert str(reason) == reason.value
        assert f"{reason}" == reason.value
    assert BlockReason("host_cap") is BlockReason.HOST_CAP


def test_every_block_reason_is_documented() -> None:
    doc = BlockReason.__doc__ or ""
    for reason in BlockReason:
        assert f"\n        {reason.value}: " in doc, reason


def test_url_error_reasons_map_to_block_reasons() -> None:
    from crawldeck.core.errors import UnsupportedScheme

    assert BlockReason(UrlError("x").reason) is BlockReason.BAD_URL
    assert BlockReason(UnsupportedScheme("x").reason) is BlockReason.SCHEME


def test_verdict_is_frozen() -> None:
    verdict = Verdict(BlockReason.DEPTH, "depth 11 > max_depth 10")
    assert verdict == Verdict(BlockReason.DEPTH, "depth 11 > max_depth 10")
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.detail = "x"  # type: ignore[misc]


# ---------------------------------------------------------------------- ScopePolicy

SCOPE_CASES: list[tuple[str, tuple[str, ...], str, bool]] = [
    # host: same host key (port counts, scheme does not)
    ("host", ("http://example.com/",), "http://example.com/a", True),
    ("host", ("http://example.com/",), "https://example.com/a", True),
    ("host", ("http://example.com/",), "http://example.com:80/a", True),
    ("host", ("http://example.com/",), "http://EXAMPLE.com./a", True),
    ("host", ("http://example.com/",), "http://www.example.com/", False),
    ("host", ("http://example.com/",), "http://example.com:8080/", False),
    ("host", ("http://127.0.0.1:8001/",), "http://127.0.0.1:8001/x", True),
    ("host", ("http://127.0.0.1:8001/",), "http://127.0.0.1:8002/x", False),
    ("host", ("http://a.com/", "http://b.org/"), "http://b.org/x", True),
    ("host", (), "http://example.com/", False),
    # domain: same registered domain (Public Suffix List), ports ignored
    ("domain", ("https://www.example.com/",), "http://shop.example.com/", True),
    ("domain", ("https://www.example.com/",), "http://example.com:8080/", True),
    ("domain", ("https://www.example.com/",), "http://example.org/", False),
    ("domain", ("https://www.example.com/",), "http://notexample.com/", False),
    ("domain", ("http://www.bbc.co.uk/",), "http://news.bbc.co.uk/", True),
    ("domain", ("http://www.bbc.co.uk/",), "http://other.co.uk/", False),
    ("domain", ("https://alice.github.io/",), "https://bob.github.io/", False),
    ("domain", ("https://alice.github.io/",), "https://x.alice.github.io/", True),
    ("domain", ("http://a.localweb.test/",), "http://b.localweb.test/", True),
    ("domain", ("http://127.0.0.1:8001/",), "http://127.0.0.1:9/", True),
    ("domain", ("http://127.0.0.1:8001/",), "http://127.0.0.2/", False),
    ("domain", ("http://[::1]:8001/",), "http://[::1]/x", True),
    ("domain", ("http://localhost:8001/",), "http://localhost/x", True),
    ("domain", (), "http://example.com/", False),
    # any: everything
    ("any", (), "http://example.com/", True),
    ("any", ("http://a.com/",), "http://elsewhere.net/", True),
]


@pytest.mark.parametrize(("scope", "seeds", "url", "allowed"), SCOPE_CASES)
def test_scope_policy(scope: str, seeds: tuple[str, ...], url: str, allowed: bool) -> None:
    policy = ScopePolicy(scope)  # type: ignore[arg-type]
    for seed in seeds:
        policy.add_seed(seed)
    assert policy.allows(url) is allowed


@pytest.mark.parametrize("scope", ["host", "domain"])
def test_scope_policy_rejects_urls_without_host(scope: str) -> None:
    policy = ScopePolicy(scope)  # type: ignore[arg-type]
    with pytest.raises(UrlError):
        policy.add_seed("http:///nohost")
    with pytest.raises(UrlError):
        policy.allows("mailto:someone")


def test_scope_explain() -> None:
    policy = ScopePolicy("domain")
    policy.add_seed("https://www.example.com/")
    assert policy.explain("http://cdn.other.net/x") == (
        "registered domain 'other.net' is outside scope 'domain' (seeds: example.com)"
    )
    hosts = ScopePolicy("host")
    for name in ("d.com", "a.com", "c.com", "b.com"):
        hosts.add_seed(f"http://{name}/")
    assert hosts.explain("http://x.com:81/") == (
        "host 'x.com:81' is outside scope 'host' (seeds: a.com, b.com, c.com, ... (4 in all))"
    )


# ----------------------------------------------------------------------- TrapGuard

# (url, depth, host_count) -> expected reason (None: admitted), default limits,
# scope "domain" seeded with example.com, today 2026-05-15.
ADMIT_CASES: list[tuple[str, int, int, BlockReason | None]] = [
    ("http://example.com/", 0, 0, None),
    ("http://www.example.com/a/b/c.html?x=1", 10, 499_999, None),
    # url_length
    ("http://example.com/" + "a" * 2029, 0, 0, None),  # exactly 2048 characters
    ("http://example.com/" + "a" * 2030, 0, 0, R.URL_LENGTH),
    # scope
    ("http://other.org/", 0, 0, R.SCOPE),
    ("http://example.com.evil.net/", 0, 0, R.SCOPE),
    # depth
    ("http://example.com/x", 11, 0, R.DEPTH),
    # host_cap
    ("http://example.com/x", 1, 500_000, R.HOST_CAP),
    # path_depth: more than 20 non-empty segments
    ("http://example.com" + "".join(f"/s{i}" for i in range(20)), 0, 0, None),
    ("http://example.com" + "".join(f"/s{i}" for i in range(21)), 0, 0, R.PATH_DEPTH),
    ("http://example.com" + "/s" * 1 + "//" * 40 + "/t", 0, 0, None),  # empty segments
    # repeating_path: one segment more than twice
    ("http://example.com/a/b/a/c", 0, 0, None),
    ("http://example.com/a/b/a/c/a/", 0, 0, R.REPEATING_PATH),
    ("http://example.com/repeat/a/a/a/", 0, 0, R.REPEATING_PATH),
    ("http://example.com/x/y/x/y/x/y", 0, 0, R.REPEATING_PATH),
    ("http://example.com/A/a/A/a", 0, 0, None),  # paths are case-sensitive
    # calendar: a year more than 2 years after 2026 (past years are archives)
    ("http://example.com/calendar/2026/05/", 0, 0, None),
    ("http://example.com/calendar/2028/12/", 0, 0, None),
    ("http://example.com/calendar/2024/01/", 0, 0, None),
    ("http://example.com/calendar/2029/01/", 0, 0, R.CALENDAR),
    ("http://example.com/calendar/2023/12/", 0, 0, None),
    ("http://example.com/blog/1999/05/post.html", 0, 0, None),
    ("http://example.com/2031/05/", 0, 0, R.CALENDAR),
    ("http://example.com/calendar/2031-05", 0, 0, R.CALENDAR),
    ("http://example.com/events/2031-05-01.html", 0, 0, R.CALENDAR),
    ("http://example.com/events/2099_12_31/", 0, 0, R.CALENDAR),
    ("http://example.com/events/2031-05;jsessionid=0A1B/", 0, 0, R.CALENDAR),
    ("http://example.com/cal?month=2031-05", 0, 0, R.CALENDAR),
    ("http://example.com/cal?date=2031-05-01&view=day", 0, 0, R.CALENDAR),
    ("http://example.com/cal?year=2031", 0, 0, R.CALENDAR),
    ("http://example.com/cal?Year=3000&m=1", 0, 0, R.CALENDAR),
    ("http://example.com/cal?yr=12", 0, 0, None),
    ("http://example.com/cal?yr=3012", 0, 0, R.CALENDAR),
    ("http://example.com/cal?year=2027", 0, 0, None),
    ("http://example.com/cal?year=next", 0, 0, None),
    ("http://example.com/cal?d=2027-01-01", 0, 0, None),
    ("http://example.com/cal?d=2031-01-01T10:00", 0, 0, R.CALENDAR),
    ("http://example.com/cal?d=2031%2F01", 0, 0, None),  # escaped: not read
    ("http://example.com/products/12345/", 0, 0, None),  # not a year
    ("http://example.com/item/2500", 0, 0, None),  # outside 1900-2199: not a year
    # a year alone in its segment is a date only with a month after it: else an id
    # (issue #25 trial 8: /many/2029 ... /many/2199 refused as calendar)
    ("http://example.com/many/2099", 0, 0, None),
    ("http://example.com/many/2099/", 0, 0, None),
    ("http://example.com/many/2099/7", 0, 0, R.CALENDAR),
    ("http://example.com/cal/2099/dec/", 0, 0, R.CALENDAR),
    ("http://example.com/cal/2099/13/", 0, 0, None),
    ("http://example.com/cal/2099/05.html", 0, 0, R.CALENDAR),
    # with a file extension alone too (issue #25 trial 17: /items/2031.html refused)
    ("http://example.com/items/2031.html", 0, 0, None),
    ("http://example.com/big/2199.htm;jsessionid=1/", 0, 0, None),
    ("http://example.com/cal/2031.html/05/", 0, 0, R.CALENDAR),
    ("http://example.com/events/2031.05.html", 0, 0, R.CALENDAR),
    ("http://example.com/model-2031/", 0, 0, None),  # part of a word
    ("http://example.com/a?id=20310501", 0, 0, None),  # a number, not a date
    ("http://example.com/a?id=2031x", 0, 0, None),
    # pagination: more than 1000
    ("http://example.com/list?page=1000", 0, 0, None),
    ("http://example.com/list?page=1001", 0, 0, R.PAGINATION),
    ("http://example.com/list?PAGE=5000&sort=a", 0, 0, R.PAGINATION),
    ("http://example.com/list?p=1001", 0, 0, R.PAGINATION),
    ("http://example.com/list?pg=99999", 0, 0, R.PAGINATION),
    ("http://example.com/list?offset=1001", 0, 0, R.PAGINATION),
    ("http://example.com/list?start=2000", 0, 0, R.PAGINATION),
    ("http://example.com/list?page=" + "9" * 1000, 0, 0, R.PAGINATION),
    ("http://example.com/list?page=2000", 0, 0, R.PAGINATION),  # not a year in a query
    ("http://example.com/list?id=1999", 0, 0, None),
    ("http://example.com/list?page=last", 0, 0, None),
    ("http://example.com/list?page=-5", 0, 0, None),
    ("http://example.com/list?pages=5000", 0, 0, None),
    ("http://example.com/list?page", 0, 0, None),
    ("http://example.com/blog/page/1000/", 0, 0, None),
    ("http://example.com/blog/page/1001/", 0, 0, R.PAGINATION),
    ("http://example.com/blog/Page/2000", 0, 0, R.PAGINATION),
    ("http://example.com/blog/page/", 0, 0, None),
    ("http://example.com/blog/5000/", 0, 0, None),
    ("http://example.com/page/1999/", 0, 0, R.PAGINATION),  # a page number, not a year
    # bad URLs never raise
    ("http:///nohost", 0, 0, R.BAD_URL),
    ("http://example.com:99999/", 0, 0, R.BAD_URL),
]


@pytest.mark.parametrize(("url", "depth", "host_count", "expected"), ADMIT_CASES)
def test_admit(url: str, depth: int, host_count: int, expected: BlockReason | None) -> None:
    trap_guard = guard("domain", ("http://example.com/",))
    verdict = trap_guard.admit(url, depth, host_count)
    assert (verdict.reason if verdict else None) is expected, verdict


DETAIL_CASES: list[tuple[str, int, int, Verdict]] = [
    (
        "http://example.com/" + "a" * 2100,
        0,
        0,
        Verdict(R.URL_LENGTH, "URL has 2119 characters > max_url_length 2048"),
    ),
    (
        "http://other.org/x",
        0,
        0,
        Verdict(
            R.SCOPE,
            "registered domain 'other.org' is outside scope 'domain' (seeds: example.com)",
        ),
    ),
    ("http://example.com/x", 11, 0, Verdict(R.DEPTH, "depth 11 > max_depth 10")),
    (
        "http://example.com/x",
        0,
        500_000,
        Verdict(R.HOST_CAP, "host 'example.com' already has 500000 URLs (max_per_host 500000)"),
    ),
    (
        "http://example.com" + "/s" * 21,
        0,
        0,
        Verdict(R.PATH_DEPTH, "path has 21 segments > max_path_depth 20"),
    ),
    (
        "http://example.com/x/a/y/a/a",
        0,
        0,
        Verdict(R.REPEATING_PATH, "segment 'a' repeats 3 times (max 2)"),
    ),
    (
        "http://example.com/calendar/2031-05",
        0,
        0,
        Verdict(
            R.CALENDAR,
            "year 2031 in path segment '2031-05' is more than 2 years after 2026",
        ),
    ),
    (
        "http://example.com/c?year=3066",
        0,
        0,
        Verdict(R.CALENDAR, "year 3066 in query year=3066 is more than 2 years after 2026"),
    ),
    (
        "http://example.com/c?d=2031-01-01",
        0,
        0,
        Verdict(R.CALENDAR, "year 2031 in query d='2031-01-01' is more than 2 years after 2026"),
    ),
    (
        "http://example.com/c?year=" + "7" * 30,
        0,
        0,
        Verdict(
            R.CALENDAR,
            "year (huge) in query year=77777777777777777777... is more than 2 years after 2026",
        ),
    ),
    (
        "http://example.com/list?page=1001",
        0,
        0,
        Verdict(R.PAGINATION, "page=1001 > max_page_param 1000"),
    ),
    (
        "http://example.com/blog/page/2000/",
        0,
        0,
        Verdict(R.PAGINATION, "/page/2000 > max_page_param 1000"),
    ),
    (
        "http://example.com:0/",
        0,
        0,
        Verdict(R.BAD_URL, "bad port '0' in 'http://example.com:0/' (expected 1-65535)"),
    ),
]


@pytest.mark.parametrize(("url", "depth", "host_count", "expected"), DETAIL_CASES)
def test_admit_details(url: str, depth: int, host_count: int, expected: Verdict) -> None:
    trap_guard = guard("domain", ("http://example.com/",))
    assert trap_guard.admit(url, depth, host_count) == expected


def test_checks_run_in_the_documented_order() -> None:
    # one URL that breaks every rule: each check, once loosened, reveals the next
    url = "http://other.org" + "/a" * 25 + "/2031/05/?page=5000"
    limits: dict[str, Any] = {"max_url_length": 16, "max_per_host": 10}
    order = [
        (R.URL_LENGTH, {"max_url_length": 4096}),
        (R.SCOPE, None),
        (R.DEPTH, {"max_depth": 100}),
        (R.HOST_CAP, {"max_per_host": 11}),
        (R.PATH_DEPTH, {"max_path_depth": 100}),
        (R.REPEATING_PATH, {"max_segment_repeats": 100}),
        (R.CALENDAR, {"calendar_window_years": 10}),
        (R.PAGINATION, {"max_page_param": 5000}),
        (R.CALENDAR, {"calendar_max_dates": 2}),  # step 9: the date template's budget
    ]
    seeds = ("http://example.com/",)
    scope = "domain"
    sibling = url.replace("/2031/", "/2030/")  # the same date template, admitted before
    limits["calendar_max_dates"] = 1
    for reason, loosen in order:
        trap_guard = guard(scope, seeds, **limits)
        trap_guard.observe(urls.normalize(sibling, ()))
        verdict = trap_guard.admit(url, 50, 10)
        assert verdict is not None and verdict.reason is reason, (reason, verdict)
        if loosen is None:
            scope = "any"
        else:
            limits.update(loosen)
    trap_guard = guard(scope, seeds, **limits)
    trap_guard.observe(urls.normalize(sibling, ()))
    assert trap_guard.admit(url, 50, 10) is None


def test_seeds_skip_only_the_scope_check() -> None:
    trap_guard = guard("host", ())  # no seeds yet: nothing is in scope
    assert trap_guard.admit("http://example.com/", 0, 0, is_seed=True) is None
    blocked = trap_guard.admit("http://example.com/", 0, 0)
    assert blocked is not None and blocked.reason is R.SCOPE
    assert trap_guard.admit("http://example.com/2031/05/", 0, 0, is_seed=True) == Verdict(
        R.CALENDAR, "year 2031 in path segment '2031' is more than 2 years after 2026"
    )
    long_seed = "http://example.com/" + "a" * 3000
    verdict = trap_guard.admit(long_seed, 0, 0, is_seed=True)
    assert verdict is not None and verdict.reason is R.URL_LENGTH
    assert trap_guard.admit("http:///x", 0, 0, is_seed=True) == Verdict(
        R.BAD_URL, "'http:///x' has no host"
    )


def test_seed_then_links_in_scope() -> None:
    policy = ScopePolicy("host")
    trap_guard = TrapGuard(TrapSettings.from_config(CrawlConfig()), policy, TODAY)
    seed = "http://127.0.0.1:8001/"
    assert trap_guard.admit(seed, 0, 0, is_seed=True) is None
    policy.add_seed(seed)
    assert trap_guard.admit("http://127.0.0.1:8001/about", 1, 1) is None
    off = trap_guard.admit("http://127.0.0.1:8002/", 1, 0)
    assert off == Verdict(
        R.SCOPE, "host '127.0.0.1:8002' is outside scope 'host' (seeds: 127.0.0.1:8001)"
    )


def test_host_cap_boundary() -> None:
    trap_guard = guard(max_per_host=3)
    assert trap_guard.admit("http://a.com/", 0, 2) is None
    verdict = trap_guard.admit("http://a.com/", 0, 3)
    assert verdict is not None and verdict.reason is R.HOST_CAP


def test_limits_follow_the_config() -> None:
    loose = guard(
        max_depth=0,
        max_path_depth=3,
        max_segment_repeats=1,
        calendar_window_years=0,
        max_page_param=5,
    )
    assert loose.admit("http://a.com/", 0, 0) is None
    assert loose.admit("http://a.com/", 1, 0) == Verdict(R.DEPTH, "depth 1 > max_depth 0")
    assert loose.admit("http://a.com/a/b/c/d", 0, 0) == Verdict(
        R.PATH_DEPTH, "path has 4 segments > max_path_depth 3"
    )
    assert loose.admit("http://a.com/a/b/a", 0, 0) == Verdict(
        R.REPEATING_PATH, "segment 'a' repeats 2 times (max 1)"
    )
    assert loose.admit("http://a.com/2026/12", 0, 0) is None
    assert loose.admit("http://a.com/2027/1", 0, 0) == Verdict(
        R.CALENDAR, "year 2027 in path segment '2027' is more than 0 years after 2026"
    )
    assert loose.admit("http://a.com/?p=6", 0, 0) == Verdict(R.PAGINATION, "p=6 > max_page_param 5")


def test_today_is_injected() -> None:
    policy = ScopePolicy("any")
    old = TrapGuard(TrapSettings.from_config(CrawlConfig()), policy, datetime.date(2000, 1, 1))
    assert old.admit("http://a.com/1999/12/", 0, 0) is None
    verdict = old.admit("http://a.com/2026/05/", 0, 0)
    assert verdict is not None and verdict.reason is R.CALENDAR


def test_long_and_hostile_urls_are_cheap() -> None:
    trap_guard = guard(max_url_length=10_000_000)
    hostile: list[tuple[Callable[[int], str], int]] = [
        (lambda n: "http://a.com/" + "a/" * n, 500_000),
        (lambda n: "http://a.com/?" + "page=1&" * n, 100_000),
        (lambda n: "http://a.com/?year=" + "9" * n, 100_000),
        (lambda n: "http://a.com/" + "x" * n, 1_000_000),
    ]
    for make, n in hostile:  # n against 10n: linear, not quadratic
        assert_linear(make, lambda url: trap_guard.admit(url, 0, 0), n)
