"""``clean`` against the WHATWG URL standard's own test data (issue #22 item 6).

``tests/data/urltestdata.json`` is the web-platform-tests' ``urltestdata.json``
(licence and source in ``tests/data/urltestdata.LICENSE``): each case is an input, a
base (or ``null``) and either the URL a browser makes of them or ``failure``. The URL
crawldeck requests for a link is what a browser requests for it: the case's ``href``
without its fragment and userinfo (never sent). So for every case:

* an http(s) result: ``clean(input, base)`` is that URL, and ``origin`` of it is the
  case's origin;
* a failure: ``clean`` refuses the link with a ``UrlError``;
* a result in another scheme (``ws:``, ``wss:``, ``ftp:``, ``file:``, ``data:``,
  ``sc:``...): ``clean`` refuses it as ``UnsupportedScheme``: a crawler requests
  only http and https (a deliberate difference, counted apart).

The count of agreeing cases is printed and may not fall; the cases where crawldeck
differs on purpose are listed in ``DELIBERATE`` with the reason.

The rules of the standard that matter to a crawler are also properties over
generated links (Hypothesis), each with its oracle written from the standard.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from crawldeck.core.config import DEFAULT_STRIP_PARAMS
from crawldeck.core.errors import UnsupportedScheme, UrlError
from crawldeck.core.policy.urls import clean, normalize, origin

DATA = Path(__file__).parents[1] / "data" / "urltestdata.json"

#: Cases (input, base) where crawldeck refuses what a browser accepts, and why.
DELIBERATE: dict[tuple[str, str | None], str] = {
    ("http://f:0/c", "http://example.org/foo/bar"): "port 0 cannot be connected to",
    ("http://f:00000000000000/c", "http://example.org/foo/bar"): "port 0 (written long)",
    ("http://./", None): "host '.' is no DNS name (an empty label)",
    ("http://../", None): "host '..' is no DNS name (empty labels)",
    ("http://foo.09..", None): "host 'foo.09..' is no DNS name (an empty label)",
    ("http://!\"$&'()*+,-.;=_`{}~/", None): "a host of punctuation is no DNS name",
}

#: The cases with an http(s) result or a failure that ``clean`` agrees with: it may
#: only grow (e70d53d agreed with 417 of these 514).
AGREED_FLOOR = 508


def _cases() -> list[dict[str, Any]]:
    """The test cases of the data file (its strings are comments)."""
    return [case for case in json.loads(DATA.read_text("utf-8")) if isinstance(case, dict)]


def _wire_url(case: dict[str, Any]) -> str:
    """The URL a browser requests for ``case``: its href without fragment or userinfo."""
    authority = case["host"]  # hostname and port, without userinfo
    return f"{case['protocol']}//{authority}{case['pathname']}{_query(case)}"


def _query(case: dict[str, Any]) -> str:
    """The query of ``case`` as serialized: ``search`` is ``""`` for both no query and
    an empty one; the href tells them apart (a ``?`` before the fragment)."""
    if case["search"]:
        return str(case["search"])
    return "?" if case["href"].partition("#")[0].endswith("?") else ""


def _outcome(case: dict[str, Any]) -> str | type[UrlError]:
    """What ``clean`` gives for ``case``: a URL, or the class of its refusal."""
    try:
        return clean(case["input"], case["base"])
    except UrlError as exc:
        return type(exc)


def test_clean_agrees_with_the_url_standards_test_data() -> None:
    agreed = compared = refused_scheme = other_schemes = 0
    differ: dict[tuple[str, str | None], tuple[object, object]] = {}
    for case in _cases():
        key = (case["input"], case["base"])
        got = _outcome(case)
        if case.get("failure"):
            want: object = UrlError
            ok = got in (UrlError, UnsupportedScheme)
        elif case["protocol"] in ("http:", "https:"):
            want = _wire_url(case)
            ok = got == want
            if ok:  # the URL requested is a fixed point, as a browser's href is, and
                # its origin (robots.txt's unit, RFC 9309 §2.3) is the browser's
                assert clean(want) == want, key
                assert origin(want) == case.get("origin", origin(want)), key
        else:
            other_schemes += 1
            refused_scheme += got is UnsupportedScheme
            assert got is UnsupportedScheme, (key, got)
            continue
        compared += 1
        agreed += ok
        if not ok:
            differ[key] = (want, got)
    print(
        f"\nurltestdata.json: {agreed} of {compared} http(s) and failure cases agree; "
        f"{refused_scheme} of {other_schemes} in other schemes refused as not crawled; "
        f"{len(differ)} differ on purpose"
    )
    assert set(differ) == set(DELIBERATE), differ
    assert agreed >= AGREED_FLOOR
    assert agreed + len(differ) == compared


@pytest.mark.parametrize(
    ("link", "base", "expected"),
    [
        # extra slashes after a special scheme, and backslashes for slashes (§4.4)
        ("http:\\\\example.com\\a", "http://h.test/p/q", "http://example.com/a"),
        ("https:example.com/", "http://h.test/p/q", "https://example.com/"),
        ("http:////example.com/", None, "http://example.com/"),
        ("///test", "http://h.test/p/q", "http://test/"),
        ("/\\/\\//example.org/../path", "http://h.test/", "http://example.org/path"),
        # the query glued to the authority, an empty path, an empty query kept
        ("http://example.com?a", None, "http://example.com/?a"),
        ("http://example.com", None, "http://example.com/"),
        ("?", "http://example.org/foo/bar", "http://example.org/foo/bar?"),
        # the default port dropped, however it is written
        ("http://f:00000000000000000000080/c", None, "http://f/c"),
        ("https://foo:443/", None, "https://foo/"),
        # percent-encoded and dotted-quad-less IPv4, IPv6 in RFC 5952 form
        ("http://%30%78%63%30%2e%30%32%35%30.01", None, "http://192.168.0.1/"),
        ("http://[::127.0.0.1]", None, "http://[::7f00:1]/"),
        ("https://%e2%98%83", None, "https://xn--n3h/"),
        # characters a browser leaves as they are in a path and a query
        ("http://h.test/a|b[c]", None, "http://h.test/a|b[c]"),
        ("http://h.test/?x=\\", None, "http://h.test/?x=\\"),
    ],
)
def test_links_are_requested_as_a_browser_requests_them(
    link: str, base: str | None, expected: str
) -> None:
    assert clean(link, base) == expected


@pytest.mark.parametrize(
    ("sent", "encoded"),
    [
        ("http://h.test/a|b[c]", "http://h.test/a%7Cb%5Bc%5D"),
        ("http://h.test/?x=\\&y={1}&z=`", "http://h.test/?x=%5C&y=%7B1%7D&z=%60"),
    ],
)
def test_a_link_sent_as_browsers_send_it_keeps_its_dedupe_key(sent: str, encoded: str) -> None:
    # The URL requested keeps | [ ] \ { } ` as a browser sends them; the dedupe key
    # is in RFC 3986 form, the same for that spelling and the percent-encoded one.
    assert clean(sent) == sent
    assert normalize(sent, ()) == normalize(encoded, ()) == encoded


# ------------------------------------------------------------------------ properties

HOSTS = st.sampled_from(["h.test", "example.com", "127.0.0.1", "[::1]", "bücher.de"])
#: Path and query text: letters, the characters a browser encodes or keeps, escapes.
PIECE = st.text(alphabet="ab/.%2e?=&;:@!$'()*+,|[]^`{}<>\" é\x00\x7f", max_size=12)


def _url(scheme: str, host: str, path: str, query: str) -> str:
    """``scheme://host/path`` with ``?query`` when ``query`` is not ``None``."""
    return f"{scheme}://{host}/{path}" + ("" if query is None else f"?{query}")


def _cleaned(link: str, base: str | None = None) -> str | None:
    """``clean(link, base)``, or ``None`` when it refuses the link."""
    try:
        return clean(link, base)
    except UrlError:
        return None


@given(st.sampled_from(["http", "https"]), HOSTS, PIECE, st.none() | PIECE)
@example("http", "h.test", "a/b/../c", "x=\\")
def test_a_backslash_is_a_slash_before_the_query(
    scheme: str, host: str, path: str, query: str | None
) -> None:
    # WHATWG URL §4.4: in a special scheme "\" is read as "/" in the authority and
    # the path (a validation error, but the same URL); the query keeps it.
    forward = _url(scheme, host, path, query)
    at = forward.find("?")
    head, tail = (forward, "") if at < 0 else (forward[:at], forward[at:])
    assert _cleaned(head.replace("/", "\\") + tail) == _cleaned(forward)


@given(
    st.sampled_from(["http", "https"]),
    HOSTS,
    PIECE,
    st.none() | PIECE,
    st.lists(st.sampled_from(["\t", "\n", "\r"]), max_size=4),
    st.data(),
)
def test_tabs_and_newlines_anywhere_are_ignored(
    scheme: str, host: str, path: str, query: str | None, marks: list[str], data: st.DataObject
) -> None:
    # WHATWG URL §4.4: "remove all ASCII tab or newline from input".
    url = _url(scheme, host, path, query)
    spoilt = url
    for mark in marks:
        at = data.draw(st.integers(0, len(spoilt)))
        spoilt = spoilt[:at] + mark + spoilt[at:]
    assert _cleaned(spoilt) == _cleaned(url)


@given(
    HOSTS,
    PIECE,
    st.text(alphabet="\x00\x01\x08\x1f ", max_size=3),
    st.text(alphabet="\x00\x0b\x1f ", max_size=3),
)
def test_c0_controls_and_spaces_around_a_link_are_stripped(
    host: str, path: str, before: str, after: str
) -> None:
    # WHATWG URL §4.4: leading and trailing C0 control or space are removed.
    url = _url("http", host, path, None)
    assert _cleaned(before + url + after) == _cleaned(url)


@given(HOSTS, PIECE, st.lists(st.sampled_from(["/", "\\"]), max_size=5))
def test_any_number_of_slashes_follows_a_special_scheme(
    host: str, path: str, slashes: list[str]
) -> None:
    # WHATWG URL §4.4, "special authority ignore slashes state": http:h, http:/h,
    # http:\\h and http:////h all name the host h (no base to be relative to).
    assert _cleaned("http:" + "".join(slashes) + f"{host}/{path}") == _cleaned(
        f"http://{host}/{path}"
    )


@given(
    st.sampled_from(["http", "https"]),
    HOSTS,
    PIECE,
    st.none() | PIECE,
    st.sampled_from(["", "#", "#f", "#a b"]),
)
def test_the_url_requested_is_a_fixed_point_with_no_unencoded_byte(
    scheme: str, host: str, path: str, query: str | None, fragment: str
) -> None:
    # Join then parse is idempotent, and the URL requested is ASCII without a
    # fragment, its path without the path percent-encode set (WHATWG URL §1.3: C0,
    # space, " # < > ? ` { } ^) and its query without the special-query
    # percent-encode set (C0, space, " # < > '), DEL included.
    cleaned = _cleaned(_url(scheme, host, path, query) + fragment)
    if cleaned is None:
        return
    assert clean(cleaned) == cleaned
    assert clean("", cleaned) == cleaned  # the empty link is the page itself
    assert cleaned.isascii() and "#" not in cleaned
    path_part, _, query_part = cleaned.split("//", 1)[1].partition("/")[2].partition("?")
    assert not any(ch <= " " or ch in '"<>?`{}^\x7f' for ch in path_part)
    assert not any(ch <= " " or ch in "\"<>'\x7f" for ch in query_part)
    assert normalize(normalize(cleaned, DEFAULT_STRIP_PARAMS), DEFAULT_STRIP_PARAMS) == normalize(
        cleaned, DEFAULT_STRIP_PARAMS
    )


@given(st.sampled_from(["http", "https"]), HOSTS, PIECE, st.integers(1, 65535))
@example("http", "h.test", "a", 80)
@example("https", "[::1]", "", 443)
def test_the_default_port_is_dropped_and_others_kept(
    scheme: str, host: str, path: str, port: int
) -> None:
    # WHATWG URL §4.4 port state: a port equal to the scheme's default is null.
    default = 80 if scheme == "http" else 443
    cleaned = _cleaned(f"{scheme}://{host}:{port:07d}/{path}")
    plain = _cleaned(f"{scheme}://{host}/{path}")
    if port == default:
        assert cleaned == plain
    elif plain is not None:
        assert cleaned == plain.replace(_host_part(plain), f"{_host_part(plain)}:{port}", 1)


def _host_part(url: str) -> str:
    """The host of a cleaned URL, as written in it."""
    return url.split("//", 1)[1].partition("/")[0]


def _ipv4_spellings(value: int) -> st.SearchStrategy[str]:
    """Every way WHATWG URL §3.5's IPv4 parser reads ``value``: 1-4 parts, each
    decimal, ``0x`` hex or ``0``-prefixed octal, the last filling the rest."""

    def spell(parts: list[int], forms: list[str], dot: bool) -> str:
        texts = []
        for part, form in zip(parts, forms, strict=True):
            if form == "hex":
                texts.append(f"0x{part:x}")
            elif form == "octal":
                texts.append(f"0{part:o}")
            else:
                texts.append(str(part))
        return ".".join(texts) + ("." if dot else "")

    def split(count: int) -> list[int]:
        octets = value.to_bytes(4, "big")
        return [*octets[: count - 1], int.from_bytes(octets[count - 1 :], "big")]

    return st.integers(1, 4).flatmap(
        lambda count: st.builds(
            spell,
            st.just(split(count)),
            st.lists(st.sampled_from(["dec", "hex", "octal"]), min_size=count, max_size=count),
            st.booleans(),
        )
    )


@given(st.integers(0, 2**32 - 1).flatmap(lambda v: st.tuples(st.just(v), _ipv4_spellings(v))))
@example((0x7F000001, "0x7f.1"))
@example((0x7F000001, "0177.0.0.1."))
def test_ipv4_number_forms_are_the_dotted_quad(case: tuple[int, str]) -> None:
    value, spelt = case
    assert clean(f"http://{spelt}/p") == f"http://{ipaddress.IPv4Address(value)}/p"


@given(
    st.sampled_from(["http://h.test/a/b/c", "https://h.test/x/", "http://h.test/"]),
    st.lists(
        st.sampled_from([".", "..", "%2e", "%2E%2e", ".%2E", "a", "b"]), min_size=1, max_size=6
    ),
)
def test_dot_segments_are_resolved_in_every_spelling(base: str, segments: list[str]) -> None:
    # WHATWG URL "single-dot/double-dot URL path segment": ".", "%2e" (any case);
    # "..", ".%2e", "%2e.", "%2e%2e". The oracle resolves them on a plain list.
    stack = [piece for piece in base.split("//", 1)[1].split("/")[1:-1]]
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        lowered = segment.lower()
        if lowered in ("..", ".%2e", "%2e.", "%2e%2e"):
            if stack:
                stack.pop()
            if last:
                stack.append("")
        elif lowered in (".", "%2e"):
            if last:
                stack.append("")
        else:
            stack.append(segment)
    expected = base.split("//", 1)[0] + "//h.test/" + "/".join(stack)
    assert clean("/".join(segments), base) == expected
