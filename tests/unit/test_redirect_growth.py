"""Redirect chains that grow their URL on every hop (issue #10 item 3).

``core.policy.redirect_traps.redirect_grows(source, target)`` says whether one hop grows the
URL by repeating or nesting what the source held; the engine cuts a chain at its second
growing hop with ``redirect_trap``, instead of following it to ``max_redirects``.
Legitimate chains (language and slash redirects, ``http`` -> ``https``, a login or
consent detour) grow at most once. ``core.policy.redirect_traps`` is imported as a module, so
on the old code (no ``redirect_grows``) each test fails on its own.
"""

from __future__ import annotations

import itertools
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.policy import redirect_traps, traps, urls

A = "http://a.example"


def hops(start: str, *locations: str) -> list[str]:
    """The chain of URLs from ``start`` following ``Location`` values, each resolved
    against the URL before it as the engine does (``urls.clean(location, base)``)."""
    chain = [urls.clean(start)]
    for location in locations:
        chain.append(urls.clean(location, chain[-1]))
    return chain


def flags(chain: list[str]) -> list[bool]:
    return [redirect_traps.redirect_grows(a, b) for a, b in itertools.pairwise(chain)]


def cut_at(chain: list[str]) -> int | None:
    """The hop (1-based) at which the engine cuts ``chain``: its second growing hop."""
    grown = 0
    for index, grows in enumerate(flags(chain), start=1):
        grown += grows
        if grown == 2:
            return index
    return None


GROWING: list[tuple[str, list[str], list[bool]]] = [
    # a query that gets longer: the same piece again, a value that repeats
    (f"{A}/a?x=1", ["/a?x=1&x=1", "/a?x=1&x=1&x=1"], [True, True]),
    (f"{A}/a?r=abc", ["/a?r=abcabc", "/a?r=abcabcabcabc"], [True, True]),
    (f"{A}/a?x=1&y=2", ["/a?x=1&y=2&x=1&y=2", "/a?x=1&y=2&x=1&y=2&x=1&y=2"], [True, True]),
    # a path that repeats (a relative Location resolved again and again)
    (f"{A}/a/b", ["/a/b/b", "/a/b/b/b"], [True, True]),
    (f"{A}/a/b/", ["b/", "b/"], [True, True]),
    (f"{A}/a/b", ["/a/b/a/b", "/a/b/a/b/a/b"], [True, True]),
    # a URL nested in its own query, escaped as servers do
    (
        f"{A}/login?next=/x",
        ["/login?next=/login%3Fnext%3D/x", "/login?next=/login%3Fnext%3D/login%253Fnext%253D/x"],
        [True, True],
    ),
    (
        f"{A}/login?next=%2Fx",
        ["/login?next=%2Flogin%3Fnext%3D%252Fx", "/login?next=%2Flogin%3Fnext%3D%252Flogin%253F"
         "next%253D%25252Fx"],
        [True, True],
    ),
    (
        f"{A}/go?to=http://a.example/x",
        ["/go?to=http%3A%2F%2Fa.example%2Fgo%3Fto%3Dhttp%3A%2F%2Fa.example%2Fx"],
        [True],
    ),
    # the first nesting (no "next" yet) does not count: the loop is cut one hop later
    (
        f"{A}/x",
        ["/login?next=/x", "/login?next=/login%3Fnext%3D/x",
         "/login?next=/login%3Fnext%3D/login%253Fnext%253D/x"],
        [False, True, True],
    ),
]  # fmt: skip

LEGITIMATE: list[tuple[str, list[str], list[bool]]] = [
    (f"{A}/", ["/en/", "/en/home"], [False, False]),
    (f"{A}/x", ["https://a.example/x"], [False]),
    (f"{A}/a", ["/a/"], [False]),
    ("http://example.com/", ["http://www.example.com/"], [False]),
    (f"{A}/", ["/login?next=/", "/"], [False, False]),
    (f"{A}/page", ["/page?consent=1"], [False]),
    (
        f"{A}/page",
        ["https://consent.example/?continue=http%3A%2F%2Fa.example%2Fpage", f"{A}/page?gdpr=1"],
        [False, False],
    ),
    (f"{A}/news/%D0%BF", ["/news/%d0%bf"], [False]),
    (f"{A}/s?b=2&a=1", ["/s?a=1&b=2"], [False]),
    (f"{A}/p?id=5", ["/p?id=5&ref=home"], [False]),
    (f"{A}/docs", ["/docs/", "/docs/index.html"], [False, False]),
    (f"{A}/old/page", ["/new/page", "/new/page/"], [False, False]),
    # single sign-on: the app's login nests the page, the identity provider the login
    (
        f"{A}/app",
        ["/login?next=/app", "https://idp.example/login?service=http%3A%2F%2Fa.example%2F"
         "login%3Fnext%3D%2Fapp", f"{A}/login?next=/app&ticket=ST-1", "/app"],
        [False, False, False, False],
    ),
    # a value made longer once is one growing hop, never two
    (f"{A}/", ["/?lang=en", "/?lang=en-US"], [False, True]),
]  # fmt: skip


@pytest.mark.parametrize(("start", "locations", "expected"), GROWING)
def test_growing_chains_are_flagged_at_each_hop(
    start: str, locations: list[str], expected: list[bool]
) -> None:
    chain = hops(start, *locations)
    assert flags(chain) == expected, chain
    assert cut_at(chain) == (expected.index(True) + 2 if expected.count(True) >= 2 else None)


@pytest.mark.parametrize(("start", "locations", "expected"), LEGITIMATE)
def test_legitimate_chains_grow_at_most_once(
    start: str, locations: list[str], expected: list[bool]
) -> None:
    chain = hops(start, *locations)
    assert flags(chain) == expected, chain
    assert cut_at(chain) is None


def test_an_endless_nesting_loop_is_cut_after_two_hops() -> None:
    # the server wraps the URL it was asked for in its own "next" parameter, forever
    chain = [urls.clean(f"{A}/private")]
    for _ in range(10):  # max_redirects
        sent = chain[-1].removeprefix(A)
        chain.append(urls.clean(f"/login?next={quote(sent, safe='/')}", chain[-1]))
    assert cut_at(chain) == 3  # /private -> /login?next=... -> (cut) not at hop 10


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("", ""),
        ("http://a", "http://a?x=1&x=1"),
        ("not a url", "not a url at all, longer"),
        (f"{A}/?=", f"{A}/?=&="),
        (f"{A}/?a", f"{A}/?a&a"),
        (f"{A}/%", f"{A}/%/%"),
        (f"{A}/?q=%", f"{A}/?q=%25%25%"),
    ],
)
def test_odd_input_never_raises(source: str, target: str) -> None:
    assert isinstance(redirect_traps.redirect_grows(source, target), bool)


def test_redirect_trap_is_a_block_reason() -> None:
    assert traps.BlockReason("redirect_trap") is traps.BlockReason.REDIRECT_TRAP
    assert "\n        redirect_trap: " in (traps.BlockReason.__doc__ or "")


# ---------------------------------------------------------------------- properties

WORDS = ["a", "b", "en", "docs", "shop", "item", "%D0%BF", "x-1", "2019", "index.html"]
VALUES = st.text("abcdefghij0123456789-._~", min_size=1, max_size=6)


@st.composite
def start_urls(draw: st.DrawFn) -> tuple[str, list[str], list[tuple[str, str]]]:
    """A cleaned URL as (scheme://host, path segments, query pieces): at least one
    segment and one parameter, parameter names distinct and never ``next``."""
    origin = draw(st.sampled_from(["http://a.example", "https://a.example", "http://b.test:8080"]))
    segments = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
    names = draw(st.lists(st.sampled_from(["q", "id", "lang", "v", "sort"]), min_size=1,
                          max_size=3, unique=True))  # fmt: skip
    return origin, segments, [(name, draw(VALUES)) for name in names]


def render(origin: str, segments: list[str], query: list[tuple[str, str]], slash: bool) -> str:
    path = "/" + "/".join(segments) + ("/" if slash and segments else "")
    text = origin + path + ("?" + "&".join(f"{n}={v}" for n, v in query) if query else "")
    assert urls.clean(text) == text  # the function takes cleaned URLs
    return text


LEGIT_STEPS = [
    "upgrade", "www", "slash", "unslash", "fresh_segment", "prepend_segment",
    "drop_segment", "fresh_param", "drop_query", "reorder", "escape_case", "login",
]  # fmt: skip


@given(
    start=start_urls(),
    steps=st.lists(st.sampled_from(LEGIT_STEPS), min_size=1, max_size=8),
    once=st.one_of(st.none(), st.integers(0, 8)),
    data=st.data(),
)
def test_legitimate_chains_are_never_flagged_twice(
    start: tuple[str, list[str], list[tuple[str, str]]],
    steps: list[str],
    once: int | None,
    data: st.DataObject,
) -> None:
    """Chains of legitimate hops, plus at most one hop that makes the URL longer once
    (a value extended, a segment repeated once), grow exactly that many times."""
    origin, segments, query = start
    slash = False
    chain = [render(origin, segments, query, slash)]
    grew_once = False
    for index, step in enumerate(steps):
        if index == once:
            if query and query[0][1]:
                name, value = query[0]
                query = [(name, value + "-US"), *query[1:]]
            else:
                segments = [*segments, segments[-1]] if segments else segments
            grew_once = bool(query) or bool(segments)
            chain.append(render(origin, segments, query, slash))
        fresh = index + 1  # names never seen in this chain
        if step == "upgrade" and origin.startswith("http:"):
            origin = "https:" + origin.removeprefix("http:")
        elif step == "www" and "//www." not in origin:
            origin = origin.replace("//", "//www.", 1)
        elif step == "slash":
            slash = True
        elif step == "unslash":
            slash = False
        elif step == "fresh_segment":
            segments = [*segments, f"s{fresh}"]
        elif step == "prepend_segment":
            segments = [f"s{fresh}", *segments]
        elif step == "drop_segment":
            segments = segments[:-1]
        elif step == "fresh_param":
            query = [*query, (f"c{fresh}", data.draw(VALUES))]
        elif step == "drop_query":
            query = []
        elif step == "reorder":
            query = data.draw(st.permutations(query))
        elif step == "escape_case":
            segments = [s.swapcase() if s.startswith("%") else s for s in segments]
        elif step == "login":  # X -> /login?next=X -> X
            sent = render(origin, segments, query, slash).removeprefix(origin)
            chain.append(f"{origin}/login?next={quote(sent, safe='/')}")
        chain.append(render(origin, segments, query, slash))
    grown = flags(chain)
    assert sum(grown) == (1 if grew_once else 0), (chain, grown)


REPEAT_STEPS = ["append_copy", "insert_copy", "duplicate_piece", "double_value", "nest"]


@given(
    start=start_urls(),
    steps=st.lists(st.sampled_from(REPEAT_STEPS), min_size=1, max_size=6),
    safe=st.sampled_from(["", "/", "/:"]),
    data=st.data(),
)
def test_every_repetition_hop_is_flagged(
    start: tuple[str, list[str], list[tuple[str, str]]],
    steps: list[str],
    safe: str,
    data: st.DataObject,
) -> None:
    """Each hop repeats a segment or a query piece, doubles a value or nests the whole
    source URL in a parameter it already has: every hop is flagged."""
    origin, segments, query = start
    chain = [render(origin, segments, query, False)]
    for step in steps:
        if step == "append_copy":
            segments = [*segments, data.draw(st.sampled_from(segments))]
        elif step == "insert_copy":
            at = data.draw(st.integers(0, len(segments)))
            segments = [*segments[:at], data.draw(st.sampled_from(segments)), *segments[at:]]
        elif step == "duplicate_piece":
            query = [*query, data.draw(st.sampled_from(query))]
        elif step == "double_value":
            name, value = query[0]
            query = [(name, value + value), *query[1:]]
        else:  # nest the URL sent in the first parameter, as a login loop does
            sent = chain[-1].removeprefix(origin)
            query = [(query[0][0], quote(sent, safe=safe))]
        chain.append(render(origin, segments, query, False))
    assert all(flags(chain)), (chain, flags(chain))
