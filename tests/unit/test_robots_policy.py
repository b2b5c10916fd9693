"""core.policy.robots.interpret, directly: one fetch outcome in, the next step out.

No server, no event loop, a fixed ``now``. Each row states the exact state RFC 9309
asks for (§2.3.1.1-§2.3.1.5, §2.4, §2.5); tests/loopback/test_robots.py checks the same
decisions end to end against real loopback servers.
"""

from __future__ import annotations

from dataclasses import replace
from email.utils import formatdate
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.policy.robots import (
    CacheUpdate,
    NetworkFailure,
    RedirectHop,
    RobotsEntry,
    RobotsResponse,
    RobotsSettings,
    RobotsState,
    interpret,
)

NOW = 1_700_000_000.0
ORIGIN = "http://example.test"
URL = f"{ORIGIN}/robots.txt"
DAY = 86_400
RETRY_S = 3600
FILE = b"User-agent: *\nDisallow: /private\nCrawl-delay: 2\n"
REDIRECTS = (301, 302, 303, 307, 308)

Mode = Literal["allow", "disallow"]


def settings(on_failure: Mode = "allow", max_redirects: int = 5) -> RobotsSettings:
    return RobotsSettings(
        robots_token="crawldeck",
        robots_max_bytes=500 * 1024,
        robots_max_redirects=max_redirects,
        robots_ttl_max_s=DAY,
        robots_retry_s=RETRY_S,
        robots_on_failure=on_failure,
    )


def response(
    status: int,
    body: bytes = b"",
    *,
    truncated: bool = False,
    headers: dict[str, str] | None = None,
    **named: str,
) -> RobotsResponse:
    """A response to ``URL``; ``named`` headers are spelt in Python (``retry_after``)."""
    lowered = {name.replace("_", "-").lower(): value for name, value in named.items()}
    return RobotsResponse(URL, status, {**(headers or {}), **lowered}, body, truncated)


def update(
    outcome: RobotsResponse | NetworkFailure,
    *,
    hops: int = 0,
    now: float = NOW,
    last_good: RobotsState | None = None,
    on_failure: Mode = "allow",
    max_redirects: int = 5,
) -> CacheUpdate:
    step = interpret(
        outcome,
        origin=ORIGIN,
        hops=hops,
        now=now,
        last_good=last_good,
        settings=settings(on_failure, max_redirects),
    )
    assert isinstance(step, CacheUpdate)
    return step


def entry(**fields: object) -> RobotsEntry:
    """An allow-all entry fetched at ``NOW`` with a one-day lifetime, then ``fields``."""
    base = RobotsEntry(
        origin=ORIGIN,
        status="missing",
        http_status=404,
        detail="404",
        fetched_at=NOW,
        expires_at=NOW + DAY,
        crawl_delay_s=None,
        rules=(),
        allow_all=True,
        disallow_all=False,
        from_last_good=False,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


GOOD_AT = NOW - 5 * DAY
GOOD = update(response(200, FILE), now=GOOD_AT).state
GOOD_RULES = (("disallow", "/private"),)


@pytest.fixture(params=[None, GOOD], ids=["no-last-good", "last-good"])
def last_good(request: pytest.FixtureRequest) -> RobotsState | None:
    state: RobotsState | None = request.param
    return state


@pytest.fixture(params=["allow", "disallow"])
def on_failure(request: pytest.FixtureRequest) -> Mode:
    mode: Mode = request.param
    return mode


# -- 2xx (§2.3.1.1): the file's rules, whatever the last good copy and the mode ----------


def test_200_is_the_file(last_good: RobotsState | None, on_failure: Mode) -> None:
    got = update(response(200, FILE), last_good=last_good, on_failure=on_failure)
    assert got.audit is None
    assert got.state.view == entry(
        status="ok",
        http_status=200,
        detail="200",
        crawl_delay_s=2.0,
        rules=GOOD_RULES,
        allow_all=False,
    )
    assert not got.state.allows(f"{ORIGIN}/private/x", "crawldeck")
    assert got.state.allows(f"{ORIGIN}/public", "crawldeck")


def test_204_without_a_body_allows_all(last_good: RobotsState | None, on_failure: Mode) -> None:
    got = update(response(204), last_good=last_good, on_failure=on_failure)
    assert got == CacheUpdate(
        RobotsState(entry(status="ok", http_status=204, detail="204"), None), None
    )


# -- redirects (§2.3.1.2) -------------------------------------------------------------------


@pytest.mark.parametrize("status", REDIRECTS)
@pytest.mark.parametrize(
    ("location", "target"),
    [
        ("/moved/robots.txt", f"{ORIGIN}/moved/robots.txt"),
        ("https://other.test/robots.txt#frag", "https://other.test/robots.txt"),
    ],
)
def test_a_redirect_with_a_location_is_the_next_hop(
    status: int, location: str, target: str, last_good: RobotsState | None
) -> None:
    step = interpret(
        response(status, location=location),
        origin=ORIGIN,
        hops=0,
        now=NOW,
        last_good=last_good,
        settings=settings(),
    )
    assert step == RedirectHop(target)


@pytest.mark.parametrize("status", REDIRECTS)
@pytest.mark.parametrize("location", [None, "", "   ", "ftp://example.test/robots.txt"])
def test_a_redirect_without_a_usable_location_is_unavailable(
    status: int, location: str | None, last_good: RobotsState | None, on_failure: Mode
) -> None:
    headers = {} if location is None else {"location": location}
    got = update(response(status, headers=headers), last_good=last_good, on_failure=on_failure)
    assert got == CacheUpdate(
        RobotsState(entry(http_status=status, detail=f"{status} without a usable Location"), None),
        None,
    )


@pytest.mark.parametrize("max_redirects", [0, 1, 5])
def test_the_redirect_hop_limit(max_redirects: int) -> None:
    hop = response(302, location="/next")
    for hops in range(max_redirects):
        step = interpret(
            hop,
            origin=ORIGIN,
            hops=hops,
            now=NOW,
            last_good=None,
            settings=settings(max_redirects=max_redirects),
        )
        assert step == RedirectHop(f"{ORIGIN}/next")
    got = update(hop, hops=max_redirects, max_redirects=max_redirects)
    detail = f"more than {max_redirects} redirects"
    assert got == CacheUpdate(
        RobotsState(entry(status="redirect_limit", http_status=302, detail=detail), None),
        f"robots.txt of {ORIGIN}: {detail}: allowing all, retry in {DAY} s",
    )


# -- other statuses are unavailable (§2.3.1.3): allow all, cached like a file -------------


@pytest.mark.parametrize("status", [100, 300, 304, 400, 401, 403, 404, 410, 451, 600, 999])
def test_an_unavailable_status_allows_all(
    status: int, last_good: RobotsState | None, on_failure: Mode
) -> None:
    got = update(response(status, b"Disallow: /"), last_good=last_good, on_failure=on_failure)
    assert got == CacheUpdate(
        RobotsState(entry(http_status=status, detail=str(status)), None), None
    )


@pytest.mark.parametrize("status", [200, 301, 404])
def test_retry_after_is_kept_whatever_the_status(status: int) -> None:
    # the engine backs the host off from (http_status, retry_after)
    view = update(response(status, FILE, retry_after="45")).state.view
    assert (view.http_status, view.retry_after) == (status, "45")


# -- unreachable (§2.3.1.4): last good copy, else the configured failure policy -----------

UNREACHABLE: list[tuple[RobotsResponse | NetworkFailure, int | None, str, str | None]] = [
    (response(429, retry_after="30"), 429, "429", "30"),
    (response(429), 429, "429", None),
    (response(500, b"Disallow: /"), 500, "500", None),
    (response(503, retry_after="120"), 503, "503", "120"),
    (response(599), 599, "599", None),
    (NetworkFailure("timeout"), None, "timeout", None),
    (NetworkFailure("connect"), None, "connect", None),
]


@pytest.mark.parametrize(("outcome", "http_status", "why", "retry_after"), UNREACHABLE)
def test_unreachable_without_a_last_good_copy(
    outcome: RobotsResponse | NetworkFailure,
    http_status: int | None,
    why: str,
    retry_after: str | None,
    on_failure: Mode,
) -> None:
    got = update(outcome, on_failure=on_failure)
    base = entry(
        status="unreachable",
        http_status=http_status,
        detail=why,
        expires_at=NOW + RETRY_S,
        retry_after=retry_after,
    )
    prefix = f"robots.txt of {ORIGIN} unreachable ({why})"
    if on_failure == "allow":
        assert got == CacheUpdate(
            RobotsState(base, None), f"{prefix}: allowing all, retry in {RETRY_S} s"
        )
    else:
        strict = replace(base, allow_all=False, disallow_all=True, rules=(("disallow", "/"),))
        assert got == CacheUpdate(
            RobotsState(strict, None),
            f"{prefix}: disallowing all (strict mode), retry in {RETRY_S} s",
        )
        assert not got.state.allows(f"{ORIGIN}/anything", "crawldeck")
        assert got.state.allows(f"{ORIGIN}/robots.txt", "crawldeck")


@pytest.mark.parametrize(("outcome", "http_status", "why", "retry_after"), UNREACHABLE)
def test_unreachable_with_a_last_good_copy_uses_it_in_both_modes(
    outcome: RobotsResponse | NetworkFailure,
    http_status: int | None,
    why: str,
    retry_after: str | None,
    on_failure: Mode,
) -> None:
    got = update(outcome, last_good=GOOD, on_failure=on_failure)
    assert got.state.view == entry(
        status="unreachable",
        http_status=http_status,
        detail=why,
        expires_at=NOW + RETRY_S,
        crawl_delay_s=2.0,
        rules=GOOD_RULES,
        allow_all=False,
        from_last_good=True,
        retry_after=retry_after,
    )
    assert got.state.parser is GOOD.parser
    assert got.audit == (
        f"robots.txt of {ORIGIN} unreachable ({why}): using the copy fetched at "
        f"2023-11-09T22:13:20Z, retry in {RETRY_S} s"
    )
    assert not got.state.allows(f"{ORIGIN}/private", "crawldeck")


def test_a_last_good_copy_that_allowed_all_still_allows_all_in_strict_mode() -> None:
    missing = update(response(404), now=GOOD_AT).state
    got = update(NetworkFailure("timeout"), last_good=missing, on_failure="disallow")
    assert (got.state.view.allow_all, got.state.view.disallow_all) == (True, False)
    assert got.state.view.from_last_good
    assert got.state.allows(f"{ORIGIN}/anything", "crawldeck")


# -- cache lifetime (§2.4) ---------------------------------------------------------------

HTTP_NOW = formatdate(NOW, usegmt=True)


@pytest.mark.parametrize(
    ("headers", "ttl"),
    [
        ({}, DAY),
        ({"cache-control": "max-age=3600"}, 3600),
        ({"cache-control": "public, max-age=7200"}, 7200),
        ({"cache-control": "max-age=0"}, 60),
        ({"cache-control": "no-cache"}, 60),
        ({"cache-control": "no-store, max-age=9000"}, 60),
        ({"cache-control": "max-age=abc"}, 60),
        ({"cache-control": "max-age=99999999999"}, DAY),
        ({"expires": formatdate(NOW + 1800, usegmt=True)}, 1800),
        (
            {"expires": formatdate(NOW + 1800, usegmt=True), "date": HTTP_NOW},
            1800,
        ),
        (
            # Expires is read against the server's Date, not our clock
            {
                "expires": formatdate(NOW - 10_000 + 900, usegmt=True),
                "date": formatdate(NOW - 10_000, usegmt=True),
            },
            900,
        ),
        ({"expires": "not a date"}, 60),
        ({"expires": formatdate(NOW - 10, usegmt=True)}, 60),
        (
            {"cache-control": "max-age=300", "expires": formatdate(NOW + 9000, usegmt=True)},
            300,
        ),
    ],
)
@pytest.mark.parametrize("status", [200, 404])
def test_the_lifetime_comes_from_cache_control_then_expires(
    headers: dict[str, str], ttl: int, status: int
) -> None:
    view = update(response(status, FILE, headers=headers)).state.view
    assert (view.fetched_at, view.expires_at) == (NOW, NOW + ttl)


def test_the_lifetime_is_capped_by_robots_ttl_max_s() -> None:
    short = replace(settings(), robots_ttl_max_s=30)
    step = interpret(
        response(200, FILE, cache_control="max-age=3600"),
        origin=ORIGIN,
        hops=0,
        now=NOW,
        last_good=None,
        settings=short,
    )
    assert isinstance(step, CacheUpdate)
    assert step.state.view.expires_at == NOW + 30


def test_an_unreachable_entry_lives_robots_retry_s_whatever_its_headers() -> None:
    got = update(response(503, cache_control="max-age=60000", retry_after="5"))
    assert got.state.view.expires_at == NOW + RETRY_S


# -- parse limits (§2.5) and parse errors (§2.3.1.5) -------------------------------------


def test_a_truncated_body_loses_its_cut_off_last_line() -> None:
    body = b"User-agent: *\nDisallow: /a\nDisallow: /private"
    whole = update(response(200, body)).state.view.rules
    cut = update(response(200, body, truncated=True)).state.view.rules
    assert whole == (("disallow", "/a"), ("disallow", "/private"))
    assert cut == (("disallow", "/a"),)


def test_a_cut_off_last_line_is_dropped_even_when_it_reads_disallow_all() -> None:
    # "Disallow: /" at the cap may be the start of "Disallow: /private"
    got = update(response(200, b"User-agent: *\nDisallow: /", truncated=True))
    assert got.state.view == entry(status="ok", http_status=200, detail="200")
    whole = update(response(200, b"User-agent: *\nDisallow: /"))
    assert whole.state.view.disallow_all is False and whole.state.view.rules == (("disallow", "/"),)


def test_bom_and_bytes_that_are_not_utf8_are_tolerated() -> None:
    body = b"\xef\xbb\xbfUser-agent: *\nDisallow: /caf\xe9\nDisallow: /x\n"
    rules = update(response(200, body)).state.view.rules
    assert rules == (("disallow", "/caf\ufffd"), ("disallow", "/x"))


def test_an_html_page_has_no_rules() -> None:
    got = update(response(200, b"<html><body><h1>Welcome</h1></body></html>"))
    assert got.state.view == entry(status="ok", http_status=200, detail="200")


def test_our_token_group_wins_over_star() -> None:
    body = b"User-agent: *\nDisallow: /\n\nUser-agent: CrawlDeck/2.0\nDisallow: /only\n"
    state = update(response(200, body)).state
    assert state.view.rules == (("disallow", "/only"),)
    assert state.allows(f"{ORIGIN}/other", "crawldeck")
    assert not state.allows(f"{ORIGIN}/only/x", "crawldeck")


# -- properties ------------------------------------------------------------------------------


@given(
    status=st.integers(min_value=0, max_value=1000),
    hops=st.integers(min_value=0, max_value=8),
    body=st.binary(max_size=200),
    location=st.none() | st.text(max_size=30),
    with_good=st.booleans(),
)
def test_only_a_usable_redirect_under_the_limit_is_a_hop(
    status: int, hops: int, body: bytes, location: str | None, with_good: bool
) -> None:
    headers = {} if location is None else {"location": location}
    step = interpret(
        RobotsResponse(URL, status, headers, body, False),
        origin=ORIGIN,
        hops=hops,
        now=NOW,
        last_good=GOOD if with_good else None,
        settings=settings(),
    )
    if isinstance(step, RedirectHop):
        assert status in REDIRECTS and hops < 5
        assert step.url.startswith(("http://", "https://"))
    else:
        view = step.state.view
        assert view.origin == ORIGIN and view.fetched_at == NOW
        assert NOW + 60 <= view.expires_at <= NOW + DAY
        assert view.http_status == status
        assert view.from_last_good == (view.status == "unreachable" and with_good)


# -- byte-level damage (issue #22 item 7): a damaged line is lost, never a group ------

#: Agents of the generated files: distinct, none a prefix of another.
AGENTS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "*")
#: Bytes a damaged file holds: C0 controls, DEL, and bytes that are not UTF-8 (a lone
#: continuation, a cut multi-byte sequence, a partial byte-order mark).
BAD_BYTES = (
    b"\x00", b"\x01", b"\x08", b"\x0b", b"\x0c", b"\x1c", b"\x1f", b"\x7f",
    b"\xff", b"\xfe", b"\x80", b"\xbf", b"\xc3", b"\xe2\x82", b"\xef\xbb", b"\xef",
    b"\xf0\x9f\x98",
)  # fmt: skip
EOLS = (b"\n", b"\r\n", b"\r")

paths = st.from_regex(r"/[a-z0-9/_.*-]{0,8}\$?", fullmatch=True)
rules = st.one_of(
    st.tuples(st.sampled_from(("Allow", "Disallow", "allow", "DISALLOW")), paths).map(
        lambda kv: f"{kv[0]}: {kv[1]}"
    ),
    st.integers(0, 60).map(lambda d: f"Crawl-delay: {d}"),
    st.just("Disallow:"),
)
rule_lines = st.one_of(
    rules,
    st.just(""),
    st.just("# a comment"),
    st.just("Sitemap: http://example.test/sitemap.xml"),
)


@st.composite
def robots_files(draw: st.DrawFn) -> tuple[list[bytes], list[int], list[list[str]]]:
    """A robots.txt as its lines (bytes, no EOL), each line's group, and each group's
    agents (every agent in one group only; each group has a rule, which ends it)."""
    names = draw(st.lists(st.sampled_from(AGENTS), min_size=1, max_size=6, unique=True))
    cuts = sorted(draw(st.sets(st.integers(1, len(names) - 1), max_size=4))) if names[1:] else []
    groups = [names[a:b] for a, b in zip([0, *cuts], [*cuts, len(names)], strict=True)]
    lines: list[bytes] = []
    owner: list[int] = []
    for g, agents in enumerate(groups):
        body = [f"User-agent: {agent}" for agent in agents]
        body += draw(st.lists(rule_lines, max_size=4))
        body.insert(draw(st.integers(len(agents), len(body))), draw(rules))
        lines += [line.encode() for line in body]
        owner += [g] * len(body)
    return lines, owner, groups


@st.composite
def damaged(draw: st.DrawFn, line: bytes) -> bytes:
    """``line`` with one byte-level fault: bad bytes inserted, or a byte replaced."""
    bad = draw(st.sampled_from(BAD_BYTES))
    at = draw(st.integers(0, len(line)))
    if line and draw(st.booleans()):
        at = min(at, len(line) - 1)
        return line[:at] + bad + line[at + 1 :]
    return line[:at] + bad + line[at:]


def rules_of(body: bytes, agent: str) -> tuple[object, ...]:
    token = "crawldeck" if agent == "*" else agent
    step = interpret(
        response(200, body),
        origin=ORIGIN,
        hops=0,
        now=NOW,
        last_good=None,
        settings=replace(settings(), robots_token=token),
    )
    assert isinstance(step, CacheUpdate)
    view = step.state.view
    return view.rules, view.crawl_delay_s


@given(data=st.data(), file=robots_files())
def test_damage_to_one_line_leaves_every_other_group_as_parsed(
    data: st.DataObject, file: tuple[list[bytes], list[int], list[list[str]]]
) -> None:
    # RFC 9309 §2.2: lines that cannot be parsed are ignored, one by one. Damaging one
    # line (stray control bytes, bytes that are not UTF-8, a partial BOM, its line end
    # turned to CR, LF or CR LF) may lose that line, never another group's rules.
    lines, owner, groups = file
    eols = data.draw(st.lists(st.sampled_from(EOLS), min_size=len(lines), max_size=len(lines)))
    clean = b"".join(line + eol for line, eol in zip(lines, eols, strict=True))
    hit = data.draw(st.integers(0, len(lines) - 1))
    broken = list(lines)
    broken[hit] = data.draw(damaged(lines[hit]))
    new_eols = list(eols)
    new_eols[hit] = data.draw(st.sampled_from(EOLS))
    body = b"".join(line + eol for line, eol in zip(broken, new_eols, strict=True))
    for g, agents in enumerate(groups):
        if g == owner[hit]:
            continue
        for agent in agents:
            assert rules_of(body, agent) == rules_of(clean, agent), (agent, body)


@pytest.mark.parametrize(
    "body",
    [
        b"\xef\xbbUser-agent: crawldeck\nDisallow: /a\n",  # a cut byte-order mark
        b"\xefUser-agent: crawldeck\nDisallow: /a\n",
        # mixed line ends, and a stray FS that str.splitlines cut "/a" at: "Disallow: /"
        b"User-agent: crawldeck\r\nDisallow: /\x1ca\rUser-agent: *\nDisallow: /\n",
        b"User-agent: crawl\x00deck\nDis\x1callow: /a\n",  # NUL, a stray FS
        b"User-agent: other\nDisallow: /b\nUser-a\xffgent: crawldeck\nDisallow: /a\n",
        # a garbage line between the User-agent lines of one group does not split it
        b"User-agent: crawldeck\n\xff\xfe\x00\nUser-agent: other\nDisallow: /a\n",
    ],
)
def test_byte_damage_costs_no_rule_of_ours(body: bytes) -> None:
    assert rules_of(body, "crawldeck") == ((("disallow", "/a"),), None)


def test_a_lost_user_agent_line_gives_its_rules_to_no_group() -> None:
    # "User-agent" with a byte replaced is lost; the rules under it are not the
    # previous group's (before: other got "Disallow: /" too)
    body = b"User-agent: other\nDisallow: /b\nUser-ag\xffnt: crawldeck\nDisallow: /\n"
    assert rules_of(body, "other") == ((("disallow", "/b"),), None)
    assert rules_of(body, "crawldeck") == ((), None)
