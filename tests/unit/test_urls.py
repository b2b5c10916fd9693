"""Tests of core.policy.urls: cleaning, the dedupe key, host identity, the Public Suffix List."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from scaling import assert_linear

from crawldeck.core.config import DEFAULT_STRIP_PARAMS
from crawldeck.core.errors import UnsupportedScheme, UrlError
from crawldeck.core.policy import urls
from crawldeck.core.policy.urls import clean, host_key, normalize, origin, registered_domain

STRIP = DEFAULT_STRIP_PARAMS

# --------------------------------------------------------------------------- clean

CLEAN_CASES: list[tuple[str, str | None, str]] = [
    # already clean: returned as is (the fast path)
    ("http://example.com/", None, "http://example.com/"),
    ("https://example.com/a/b.html?x=1&y=2", None, "https://example.com/a/b.html?x=1&y=2"),
    ("http://127.0.0.1:8080/p", None, "http://127.0.0.1:8080/p"),
    # whitespace and control characters around, tab/newline inside (WHATWG URL §4.4)
    ("  http://example.com/a \n", None, "http://example.com/a"),
    ("\x00\x1f http://example.com/\x7f", None, "http://example.com/%7F"),
    ("http://exa\tmple.com/a\nb\r", None, "http://example.com/ab"),
    # fragment dropped
    ("http://example.com/a#frag", None, "http://example.com/a"),
    ("http://example.com/a?q=1#", None, "http://example.com/a?q=1"),
    # scheme and host lowercased, the default port dropped (WHATWG URL §4.4, as
    # browsers send it); query order kept, dot segments removed (the server and
    # robots.txt must see the path without them)
    ("HTTP://Example.COM:80/A/../B?b=2&a=1", None, "http://example.com/B?b=2&a=1"),
    ("http://example.com/y/../private", None, "http://example.com/private"),
    ("http://example.com/a/./b/../../c/.", None, "http://example.com/c/"),
    ("http://example.com/a/b/..", None, "http://example.com/a/"),
    ("http://example.com/../../x", None, "http://example.com/x"),
    ("http://example.com/..", None, "http://example.com/"),
    # escaped dots too, as browsers read them (WHATWG URL "single/double-dot segment")
    ("http://example.com/y/%2e%2E/private", None, "http://example.com/private"),
    ("http://example.com/y/.%2e/z/%2E/p", None, "http://example.com/z/p"),
    # only whole segments, only in the path; other escapes untouched
    ("http://example.com/a/.../.x/x./%2e%2e%2e", None, "http://example.com/a/.../.x/x./%2e%2e%2e"),
    ("http://example.com/a/..?next=/../x", None, "http://example.com/?next=/../x"),
    ("http://example.com/%7e/y/../%2F", None, "http://example.com/%7e/%2F"),
    ("/a/../../%2e%2e/b", "http://example.com/x/y", "http://example.com/b"),
    ("HTTPS://WWW.Example.com", None, "https://www.example.com/"),
    # the WHATWG URL path and special-query percent-encode sets (§1.3), as UTF-8
    ("http://example.com/a b/ä?q=ü x", None, "http://example.com/a%20b/%C3%A4?q=%C3%BC%20x"),
    ("http://example.com/\x00x", None, "http://example.com/%00x"),
    ('http://example.com/"<>`{}', None, "http://example.com/%22%3C%3E%60%7B%7D"),
    ("http://example.com/?q='", None, "http://example.com/?q=%27"),
    ("http://example.com?x=1", None, "http://example.com/?x=1"),
    ("http://example.com/p?", None, "http://example.com/p?"),  # empty query kept
    ("http://example.com/a|b[c]^d", None, "http://example.com/a|b[c]%5Ed"),
    # existing escapes are not touched
    ("http://example.com/%7e%2F%zz", None, "http://example.com/%7e%2F%zz"),
    # backslashes in the authority and path are slashes (WHATWG URL §4.4), not in the query
    ("http:\\\\example.com\\a\\b?x=\\", None, "http://example.com/a/b?x=\\"),
    ("..\\x\\y", "http://example.com/a/b/c", "http://example.com/a/x/y"),
    # IDN hosts: UTS #46 non-transitional, as browsers (IDNA 2008), else IDNA 2003
    ("http://Bücher.de/", None, "http://xn--bcher-kva.de/"),
    ("http://faß.de/", None, "http://xn--fa-hia.de/"),
    ("http://☃.net/", None, "http://xn--n3h.net/"),
    (
        "http://пример.рф:8080/путь",
        None,
        "http://xn--e1afmkfd.xn--p1ai:8080/%D0%BF%D1%83%D1%82%D1%8C",
    ),
    ("http://\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25.com/", None, "http://example.com/"),
    # IPv6 literals, written in RFC 5952 form
    ("http://[::1]:8080/", None, "http://[::1]:8080/"),
    ("http://[0:0::1]/x", None, "http://[::1]/x"),
    ("http://[2001:DB8:0:0:0:0:0:1]/", None, "http://[2001:db8::1]/"),
    # userinfo dropped: a crawler never sends credentials found in a link
    ("http://user:p@ss@Example.com/", None, "http://example.com/"),
    ("http://user:pw@example.com:8080/a?b", None, "http://example.com:8080/a?b"),
    ("http://@example.com/", None, "http://example.com/"),
    ("http://u@[::1]:81/", None, "http://[::1]:81/"),
    ("http://ü:p@Bücher.de/", None, "http://xn--bcher-kva.de/"),
    # relative references (RFC 3986 §5.2 and the §5.4 examples)
    ("g", "http://a/b/c/d;p?q", "http://a/b/c/g"),
    ("./g", "http://a/b/c/d;p?q", "http://a/b/c/g"),
    ("g/", "http://a/b/c/d;p?q", "http://a/b/c/g/"),
    ("/g", "http://a/b/c/d;p?q", "http://a/g"),
    ("//g", "http://a/b/c/d;p?q", "http://g/"),
    ("?y", "http://a/b/c/d;p?q", "http://a/b/c/d;p?y"),
    ("g?y", "http://a/b/c/d;p?q", "http://a/b/c/g?y"),
    ("#s", "http://a/b/c/d;p?q", "http://a/b/c/d;p?q"),
    ("g#s", "http://a/b/c/d;p?q", "http://a/b/c/g"),
    (";x", "http://a/b/c/d;p?q", "http://a/b/c/;x"),
    ("", "http://a/b/c/d;p?q", "http://a/b/c/d;p?q"),
    (".", "http://a/b/c/d;p?q", "http://a/b/c/"),
    ("..", "http://a/b/c/d;p?q", "http://a/b/"),
    ("../..", "http://a/b/c/d;p?q", "http://a/"),
    ("../../../g", "http://a/b/c/d;p?q", "http://a/g"),
    ("/./g", "http://a/b/c/d;p?q", "http://a/g"),
    ("http:g", "http://a/b/c/d;p?q", "http://a/b/c/g"),
    ("https://other.org/x", "http://a/b", "https://other.org/x"),
    ("//cdn.example.net/lib.js", "https://example.com/", "https://cdn.example.net/lib.js"),
    ("  /next page  ", " https://example.com/a ", "https://example.com/next%20page"),
    # the URL sent is the URL checked (issue #10 item 6): whitespace is stripped around
    # the whole link before the fragment is cut, so a space left at the end of the path
    # is encoded (as browsers do) and never stripped after dot segments were removed
    ("/public/.. #x", "http://h.test/p", "http://h.test/public/..%20"),
    ("/public/..\x00#x", "http://h.test/p", "http://h.test/public/..%00"),
    ("/public/..\t#x", "http://h.test/p", "http://h.test/"),  # tab removed first
    ("http://h.test/?a #x", None, "http://h.test/?a%20"),
    ("http://h.test/a/.%2E/", None, "http://h.test/"),
    # the base is read as a URL first (its own dot segments removed), as browsers do
    ("g", "http://h.test/a/b/..", "http://h.test/a/g"),
    ("g", "http://h.test/a/%2e%2E/b", "http://h.test/g"),
    ("http:/g", "http://h.test/a/b", "http://h.test/g"),
    # a host that is a number behind code points IDNA maps to nothing, full-width
    # digits or an ideographic full stop is IPv4 after the first clean
    ("http://0x7f.1\u00ad/", None, "http://127.0.0.1/"),
    ("http://\ufeff127.1/", None, "http://127.0.0.1/"),
    ("http://1.2.3.4\u200b:8080/x", None, "http://1.2.3.4:8080/x"),
    ("http://127\u30021/", None, "http://127.0.0.1/"),
    ("http://\uff11\uff12\uff17.1/", None, "http://127.0.0.1/"),
    ("//0x7f.1\u2060/p", "https://h.test/", "https://127.0.0.1/p"),
    # the port is written as its number, the scheme's default dropped
    ("http://h.test:0080/", None, "http://h.test/"),
    # any number of slashes after a special scheme, a percent-encoded host decoded
    ("http:///path", None, "http://path/"),
    ("http://ex%41mple.com/", None, "http://example.com/"),
    ("http://h.test:" + "0" * 5000 + "8080/", None, "http://h.test:8080/"),
    ("http://h.test:/x", None, "http://h.test/x"),
]


@pytest.mark.parametrize(("url", "base", "expected"), CLEAN_CASES)
def test_clean(url: str, base: str | None, expected: str) -> None:
    assert clean(url, base) == expected
    assert clean(expected) == expected  # a cleaned URL is clean


CLEAN_ERRORS: list[tuple[str, str | None, type[UrlError], str]] = [
    ("javascript:alert(1)", None, UnsupportedScheme, "unsupported scheme 'javascript'"),
    ("javascript:void(0)", "http://a.com/", UnsupportedScheme, "unsupported scheme 'javascript'"),
    (" mailto:me@example.com", "http://a.com/", UnsupportedScheme, "unsupported scheme 'mailto'"),
    ("data:text/html,<p>hi", None, UnsupportedScheme, "unsupported scheme 'data'"),
    ("ftp://example.com/f", None, UnsupportedScheme, "unsupported scheme 'ftp'"),
    ("tel:+123", "http://a.com/", UnsupportedScheme, "unsupported scheme 'tel'"),
    ("/relative/only", None, UrlError, "has no scheme"),
    ("example.com/a", None, UrlError, "has no scheme"),
    ("", None, UrlError, "has no scheme"),
    ("   ", None, UrlError, "has no scheme"),
    ("http://", None, UrlError, "has no host"),
    ("http://:80/", None, UrlError, "has no host"),
    ("http://user@/", None, UrlError, "has no host"),
    ("http://example.com:abc/", None, UrlError, "bad port 'abc'"),
    ("http://example.com:99999/", None, UrlError, "bad port '99999'"),
    ("http://example.com:0/", None, UrlError, "bad port '0'"),
    ("http://example.com:-1/", None, UrlError, "bad port '-1'"),
    ("http://[::1]:70000/", None, UrlError, "bad port '70000'"),
    ("http://[::1/", None, UrlError, "cannot parse"),
    ("http://[zz]/", None, UrlError, "is not a valid IPv6 address"),
    ("http://[v1.x]/", None, UrlError, "IPvFuture"),
    ("http://[v7.fe80::1+en0]:80/", None, UrlError, "IPvFuture"),
    ("http://[1.2.3.4]/", None, UrlError, "is not a valid IPv6 address"),
    ("http://[::1", None, UrlError, "the IPv6 literal's '[' is not closed"),
    ("http://[::1]x/", None, UrlError, "an IPv6 literal needs '[...]' alone"),
    ("http://example.com:9000:80/x", None, UrlError, "bad port '9000:80'"),
    ("http://u:p@example.com:9000:80/x", None, UrlError, "bad port '9000:80'"),
    ("http://[::1]:9000:80/x", None, UrlError, "bad port '9000:80'"),
    ("http://exa mple.com/", None, UrlError, "not a valid host name"),
    ("http://exa\x00mple.com/", None, UrlError, "not a valid host name"),
    ("http://.example.com/", None, UrlError, "not a valid host name"),
    ("http://a..b/", None, UrlError, "not a valid host name"),
    ("http://" + "a" * 64 + ".com/", None, UrlError, "not a valid host name"),
    ("http://" + "a." * 130 + "com/", None, UrlError, "not a valid host name"),
    ("http://" + "é" * 64 + ".com/", None, UrlError, "not a valid host name"),
    ("http://" + "é" * 5000 + "/", None, UrlError, "not a valid host name"),
    ("http://example.com/\ud800", None, UrlError, "cannot parse"),
    ("http://[fe80::1%25eth0]/", None, UrlError, "zone id"),
    ("http://h.test:" + "9" * 5000 + "/", None, UrlError, "bad port"),
    ("//h.test/x", "no-scheme-base", UrlError, "has no scheme"),
    ("http://\ufeff/", None, UrlError, "not a valid host name"),
]


@pytest.mark.parametrize(("url", "base", "error", "message"), CLEAN_ERRORS)
def test_clean_rejects(url: str, base: str | None, error: type[UrlError], message: str) -> None:
    with pytest.raises(error) as info:
        clean(url, base)
    text = str(info.value)
    assert message in text
    assert "\n" not in text and len(text) < 300
    assert type(info.value) is error


def test_error_reasons_are_block_reasons() -> None:
    with pytest.raises(UrlError) as scheme:
        clean("mailto:x@example.com")
    with pytest.raises(UrlError) as bad:
        clean("http://example.com:x/")
    assert scheme.value.reason == "scheme"
    assert bad.value.reason == "bad_url"


def test_clean_error_shows_a_short_one_line_url() -> None:
    with pytest.raises(UnsupportedScheme) as info:
        clean("javascript:" + "x\n" * 10_000)
    text = str(info.value)
    assert text.startswith("unsupported scheme 'javascript' in 'javascript:x")
    assert "\n" not in text and len(text) < 200


# ----------------------------------------------------------------------- normalize

NORMALIZE_CASES: list[tuple[str, str]] = [
    ("http://example.com", "http://example.com/"),
    ("http://example.com/", "http://example.com/"),
    ("HTTP://EXAMPLE.COM/A", "http://example.com/A"),
    ("http://example.com.:80/", "http://example.com/"),
    # default ports removed, others kept (RFC 3986 §6.2.3)
    ("http://example.com:80/a", "http://example.com/a"),
    ("https://example.com:443/a", "https://example.com/a"),
    ("http://example.com:443/a", "http://example.com:443/a"),
    ("https://example.com:80/a", "https://example.com:80/a"),
    ("http://example.com:8080", "http://example.com:8080/"),
    # dot segments (RFC 3986 §5.2.4), also when escaped
    ("http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("http://example.com/a/b/..", "http://example.com/a/"),
    ("http://example.com/a/b/.", "http://example.com/a/b/"),
    ("http://example.com/../../x", "http://example.com/x"),
    ("http://example.com/a/%2E%2E/b", "http://example.com/b"),
    ("http://example.com/a/%2e/b", "http://example.com/a/b"),
    ("http://example.com/a/.../b", "http://example.com/a/.../b"),
    ("http://example.com/a//b/", "http://example.com/a//b/"),
    # percent-escapes: unreserved decoded, others uppercased (RFC 3986 §6.2.2.1-2)
    ("http://example.com/%7euser/%41%62%2D%5F%2e%30", "http://example.com/~user/Ab-_.0"),
    ("http://example.com/a%2fb%3a%c3%a4", "http://example.com/a%2Fb%3A%C3%A4"),
    ("http://example.com/100%", "http://example.com/100%25"),
    ("http://example.com/%zz", "http://example.com/%25zz"),
    ("http://example.com/%%341", "http://example.com/%2541"),
    ("http://example.com/?q=%7e%2f", "http://example.com/?q=~%2F"),
    # query: sorted, empty pieces dropped, blank values kept, '+' and %20 differ
    ("http://example.com/?b=2&a=1&c", "http://example.com/?a=1&b=2&c"),
    ("http://example.com/?a=2&a=1&a=", "http://example.com/?a=&a=1&a=2"),
    ("http://example.com/?&&x=1&&", "http://example.com/?x=1"),
    ("http://example.com/?q=a+b&q=a%20b", "http://example.com/?q=a%20b&q=a+b"),
    ("http://example.com/?", "http://example.com/"),
    ("http://example.com/?&", "http://example.com/"),
    ("http://example.com/p;x=1?y", "http://example.com/p;x=1?y"),
    # strip params, case-insensitive, escaped names too
    ("http://example.com/?utm_source=x&id=3", "http://example.com/?id=3"),
    ("http://example.com/?UTM_Source=x&Utm_Medium=y", "http://example.com/"),
    ("http://example.com/?PHPSESSID=abc&page=2", "http://example.com/?page=2"),
    ("http://example.com/?utm%5Fsource=x&k=", "http://example.com/?k="),
    ("http://example.com/?sid=&sidebar=1", "http://example.com/?sidebar=1"),
    ("http://example.com/?fbclid", "http://example.com/"),
    ("http://example.com/?ref=tw&id=3", "http://example.com/?id=3"),
    # session ids in path parameters (issue #10 item 1), any segment, any case
    ("http://example.com/a;jsessionid=0A1B2C/b", "http://example.com/a/b"),
    ("http://example.com/shop;sid=XYZ?x=1", "http://example.com/shop?x=1"),
    ("http://example.com/x;phpsessid=1", "http://example.com/x"),
    ("http://example.com/x;PHPSESSID=1", "http://example.com/x"),
    ("http://example.com/x;JSESSIONID=1;v=2", "http://example.com/x;v=2"),
    ("http://example.com/;jsessionid=x", "http://example.com/"),
    ("http://example.com/a;j%73essionid=1/", "http://example.com/a/"),
    ("http://example.com/a;b;sid=;c", "http://example.com/a;b;c"),
    ("http://example.com/a/..;sid=1/b", "http://example.com/b"),
    ("http://example.com:8080/a;sid=1", "http://example.com:8080/a"),
    # other ';' text stays
    ("http://example.com/a;v=2", "http://example.com/a;v=2"),
    ("http://example.com/a;b", "http://example.com/a;b"),
    ("http://example.com/a;sid", "http://example.com/a;sid"),
    ("http://example.com/a;sidebar=1", "http://example.com/a;sidebar=1"),
    ("http://example.com/a%3Bsid=1", "http://example.com/a%3Bsid=1"),
    # userinfo dropped (as by clean)
    ("http://u%7e:p@example.com:80/", "http://example.com/"),
    # IPv6
    ("http://[::1]:80/", "http://[::1]/"),
    ("https://[2001:db8::1]:8443/x", "https://[2001:db8::1]:8443/x"),
    # the fragment never counts
    ("http://example.com/a#b", "http://example.com/a"),
]


@pytest.mark.parametrize(("url", "expected"), NORMALIZE_CASES)
def test_normalize(url: str, expected: str) -> None:
    assert normalize(url, STRIP) == expected
    assert normalize(expected, STRIP) == expected


def test_default_strip_list_holds_the_product_design() -> None:
    # docs: utm_*, sid, session_id, PHPSESSID, ref, fbclid, gclid, _ga, mc_eid
    names = {name.lower() for name in DEFAULT_STRIP_PARAMS}
    design = {"sid", "session_id", "phpsessid", "ref", "fbclid", "gclid", "_ga", "mc_eid"}
    assert design <= names
    utm = {"source", "medium", "campaign", "term", "content", "id", "source_platform",
           "creative_format", "marketing_tactic"}  # fmt: skip
    assert {f"utm_{name}" for name in utm} <= names
    assert "jsessionid" in names and "aspsessionid" in names


def test_a_fresh_session_id_in_the_path_makes_no_new_key() -> None:
    keys = {
        normalize(clean(f"/cat;jsessionid={i:032X}/item;sid=s{i}?p=1", "http://h.test/"), STRIP)
        for i in range(100)
    }
    assert keys == {"http://h.test/cat/item?p=1"}
    # the URL sent keeps the server's session id
    assert clean("/a;jsessionid=0A1B/b", "http://h.test/") == "http://h.test/a;jsessionid=0A1B/b"


def test_normalize_strip_params_any_collection() -> None:
    url = "http://example.com/?Ref=1&b=2&SESSION=3"
    expected = "http://example.com/?b=2"
    assert normalize(url, ["ref", "session"]) == expected
    assert normalize(url, {"REF", "Session"}) == expected
    assert normalize(url, ("Ref", "session")) == expected
    assert normalize(url, frozenset({"ref", "session"})) == expected
    # sorted by code point: upper case first
    assert normalize(url, ()) == "http://example.com/?Ref=1&SESSION=3&b=2"


def test_normalize_sort_is_by_name_then_value() -> None:
    # "a-b" sorts after "a" as a name, although "-" < "=" as characters
    url = "http://example.com/?a-b=1&a=2&a=10"
    assert normalize(url, ()) == "http://example.com/?a=10&a=2&a-b=1"


def test_normalize_of_clean_collapses_spellings() -> None:
    spellings = [
        "HTTP://Example.COM:80/a/./b/../c/%7Euser?b=2&a=1&utm_source=feed#top",
        "http://example.com/a/c/~user?a=1&b=2",
        "  http://EXAMPLE.com/a/c/%7euser?utm_campaign=x&a=1&b=2  ",
        "/a/c/%7Euser?a=1&b=2&gclid=zz",
    ]
    keys = {normalize(clean(s, "http://example.com/x"), STRIP) for s in spellings}
    assert keys == {"http://example.com/a/c/~user?a=1&b=2"}


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mailto:a@b", "not an absolute http or https URL"),
        ("/relative", "not an absolute http or https URL"),
        ("http:///x", "has no host"),
        ("http://a.com:x/", "bad port 'x'"),
        ("http://[::1/", "cannot parse"),
    ],
)
def test_normalize_rejects(url: str, message: str) -> None:
    with pytest.raises(UrlError, match=message):
        normalize(url, STRIP)


def test_escape_regex_matches_the_rfc_for_every_byte() -> None:
    for byte in range(256):
        char = chr(byte)
        for digits in {f"{byte:02X}", f"{byte:02x}", f"{byte:02X}"[0] + f"{byte:02x}"[1]}:
            expected = char if char in urls._UNRESERVED else "%" + digits.upper()
            assert urls._fix_escapes("%" + digits) == expected, digits


# ------------------------------------------------------------------ hosts, origins

HOST_KEY_CASES: list[tuple[str, str]] = [
    ("http://example.com/a", "example.com"),
    ("https://example.com", "example.com"),
    ("http://Example.COM:80/", "example.com"),
    ("https://example.com:443/?q", "example.com"),
    ("http://example.com:443/", "example.com:443"),
    ("https://example.com:80/", "example.com:80"),
    ("http://127.0.5.1:8080/x", "127.0.5.1:8080"),
    ("http://example.com.:8080/", "example.com:8080"),
    ("http://user:pw@example.com:8080/", "example.com:8080"),
    ("http://[::1]:8080/", "[::1]:8080"),
    ("http://[::1]/", "[::1]"),
    ("http://bücher.de/", "xn--bcher-kva.de"),
    ("http://example.com#frag", "example.com"),
    ("http://example.com:0080/", "example.com"),
]


@pytest.mark.parametrize(("url", "expected"), HOST_KEY_CASES)
def test_host_key(url: str, expected: str) -> None:
    assert host_key(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://Example.com:443/a?b", "https://example.com"),
        ("http://example.com:8080/x", "http://example.com:8080"),
        ("HTTP://[::1]:80/", "http://[::1]"),
        ("http://example.com", "http://example.com"),
    ],
)
def test_origin(url: str, expected: str) -> None:
    assert origin(url) == expected


@pytest.mark.parametrize(
    ("func", "url", "message"),
    [
        (host_key, "http:///x", "has no host"),
        (host_key, "http://a.com:99999/", "bad port '99999'"),
        (host_key, "https://a.com:0/", "bad port '0'"),
        (host_key, "not a url", "has no host"),
        (origin, "mailto:a@b.com", "not an absolute http or https URL"),
        (origin, "http://a.com:x/", "bad port 'x'"),
    ],
)
def test_host_key_and_origin_reject(func: Callable[[str], str], url: str, message: str) -> None:
    with pytest.raises(UrlError, match=message):
        func(url)


REGISTERED_DOMAIN_CASES: list[tuple[str, str]] = [
    ("example.com", "example.com"),
    ("www.example.com", "example.com"),
    ("a.b.c.Example.COM.", "example.com"),
    ("www.bbc.co.uk", "bbc.co.uk"),
    ("co.uk", "co.uk"),  # a public suffix is its own registered domain
    ("a.b.c.kawasaki.jp", "b.c.kawasaki.jp"),  # wildcard rule *.kawasaki.jp
    ("city.kawasaki.jp", "city.kawasaki.jp"),  # exception rule !city.kawasaki.jp
    ("user.github.io", "user.github.io"),  # PSL private section counts
    ("x.user.github.io", "user.github.io"),
    ("a.b.localweb.test", "localweb.test"),  # not on the list: default rule "*"
    ("localhost", "localhost"),  # single label
    ("127.0.0.1", "127.0.0.1"),  # IP addresses are their own
    ("::1", "::1"),
    ("[::1]", "[::1]"),
    ("пример.рф", "xn--e1afmkfd.xn--p1ai"),
    ("www.xn--e1afmkfd.xn--p1ai", "xn--e1afmkfd.xn--p1ai"),
]


@pytest.mark.parametrize(("host", "expected"), REGISTERED_DOMAIN_CASES)
def test_registered_domain(host: str, expected: str) -> None:
    assert registered_domain(host) == expected


@pytest.mark.parametrize("host", ["", "  ", ".", "a b.com", "a..b.com"])
def test_registered_domain_rejects(host: str) -> None:
    with pytest.raises(UrlError):
        registered_domain(host)


# ------------------------------------------------------------- hostile and long


def test_long_urls_are_linear_and_fast() -> None:
    n = 1_000_000
    hostile: list[Callable[[int], str]] = [
        lambda n: "http://example.com/" + "a/" * (n // 2),
        lambda n: "http://example.com/?" + "a=1&" * (n // 4),
        lambda n: "http://example.com/" + "%41" * (n // 3),
        lambda n: "http://example.com/" + "%C3%A9" * (n // 6),
        lambda n: "http://example.com/" + "../" * (n // 3),
        lambda n: "http://example.com/" + "\\" * n,
        lambda n: " " * n + "http://example.com/",
        lambda n: "http://example.com/" + "é" * (n // 4),
        lambda n: "/" + "x" * n,
    ]

    def keys(url: str) -> None:
        cleaned = clean(url, "http://example.com/")
        normalize(cleaned, STRIP)
        host_key(cleaned)

    for make in hostile:
        assert_linear(make, keys, n)

    def refused(n: int) -> list[str]:
        return ["http://" + "a" * n + "/", "http://" + "a." * (n // 2) + "/", "http://" + "é" * n]

    def refuse(urls: list[str]) -> None:
        for url in urls:
            with pytest.raises(UrlError):
                clean(url)

    assert_linear(refused, refuse, n)


# -------------------------------------------------------------------- properties

_HOSTS = st.sampled_from(
    [
        "example.com",
        "Example.COM",
        "127.0.0.1",
        "[::1]",
        "[0:0::1]",
        "bücher.de",
        "sub.example.co.uk.",
        "a-b_c.example",
    ]
)
_TEXT = st.text(
    alphabet=st.sampled_from(list("aZ09-._~%/?#&=;:@!$'()*+, \\\t\"<>[]{}|^`éü€\x00\x7f")),
    max_size=30,
)
_PARAMS = st.lists(
    st.tuples(
        st.sampled_from(["a", "B", "utm_source", "UTM_Medium", "page", "sid", "x%41", ""]),
        st.sampled_from(["", "=", "=1", "=%7e", "=a+b", "=%zz", "=é"]),
    ),
    max_size=5,
)


@st.composite
def raw_urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "hTTps"]))
    host = draw(_HOSTS)
    port = draw(st.sampled_from(["", ":80", ":443", ":8080", ":1"]))
    path = draw(_TEXT)
    query = "&".join(name + value for name, value in draw(_PARAMS))
    space = draw(st.sampled_from(["", " ", "\n", "\t "]))
    return f"{space}{scheme}://{host}{port}/{path}?{query}{space}"


@given(raw_urls())
@example(" http://example.com/%%341?b=&a=1 ")
@example("http://example.com/a/%2E%2E/%2e%2E/b")
@example("http://example.com/.%2e/x?%%=1")
def test_clean_and_normalize_are_idempotent(url: str) -> None:
    try:
        cleaned = clean(url)
    except UrlError:
        assume(False)
        return
    assert clean(cleaned) == cleaned
    assert cleaned.isascii()
    assert "#" not in cleaned
    key = normalize(cleaned, STRIP)
    assert normalize(key, STRIP) == key
    assert clean(key) == key
    assert host_key(key) == host_key(cleaned)
    assert key.startswith(("http://", "https://"))


@given(st.from_regex(urls._ALREADY_NORMAL, fullmatch=True))
@example("http://a:80/x")
@example("https://a:443/x")
@example("https://a:80/x")
@example("http://a:65536/")
@example("http://a/b/../c")
@example("http://a/b/./")
@example("http://a/x;sid=1")
@example("http://a:81/x;JSESSIONID=1;v=2")
@example("http://a/..;jsessionid=1/b")
@example("http://a/x;b;c=d")
def test_normalize_fast_path_agrees_with_the_general_path(url: str) -> None:
    try:
        general: str | None = urls._normalize_slowly(url, STRIP)
    except UrlError:
        general = None
    if general is None:
        with pytest.raises(UrlError):
            normalize(url, STRIP)
    else:
        assert normalize(url, STRIP) == general


# RFC 3986 §5.4.1 and §5.4.2, base "http://a/b/c/d;p?q" (fragments dropped by clean;
# "http:g" is relative, as in browsers and in RFC 3986's non-strict parsers).
RFC3986_EXAMPLES = {
    "g": "http://a/b/c/g", "./g": "http://a/b/c/g", "g/": "http://a/b/c/g/",
    "/g": "http://a/g", "//g": "http://g/", "?y": "http://a/b/c/d;p?y",
    "g?y": "http://a/b/c/g?y", "#s": "http://a/b/c/d;p?q", "g#s": "http://a/b/c/g",
    "g?y#s": "http://a/b/c/g?y", ";x": "http://a/b/c/;x", "g;x": "http://a/b/c/g;x",
    "g;x?y#s": "http://a/b/c/g;x?y", "": "http://a/b/c/d;p?q", ".": "http://a/b/c/",
    "./": "http://a/b/c/", "..": "http://a/b/", "../": "http://a/b/",
    "../g": "http://a/b/g", "../..": "http://a/", "../../": "http://a/",
    "../../g": "http://a/g", "../../../g": "http://a/g", "../../../../g": "http://a/g",
    "/./g": "http://a/g", "/../g": "http://a/g", "g.": "http://a/b/c/g.",
    ".g": "http://a/b/c/.g", "g..": "http://a/b/c/g..", "..g": "http://a/b/c/..g",
    "./../g": "http://a/b/g", "./g/.": "http://a/b/c/g/", "g/./h": "http://a/b/c/g/h",
    "g/../h": "http://a/b/c/h", "g;x=1/./y": "http://a/b/c/g;x=1/y",
    "g;x=1/../y": "http://a/b/c/y", "g?y/./x": "http://a/b/c/g?y/./x",
    "g?y/../x": "http://a/b/c/g?y/../x", "g#s/./x": "http://a/b/c/g",
    "g#s/../x": "http://a/b/c/g", "http:g": "http://a/b/c/g",
}  # fmt: skip


@pytest.mark.parametrize(("ref", "expected"), RFC3986_EXAMPLES.items())
def test_reference_resolution_follows_rfc_3986(ref: str, expected: str) -> None:
    assert clean(ref, "http://a/b/c/d;p?q") == expected


@pytest.mark.parametrize(
    ("relative", "root_relative", "base"),
    [
        ("a;", "/a;", "http://h.test/"),
        ("a/%2e%2e/../b", "/a/%2e%2e/../b", "http://h.test/"),
        ("x/ ?", "/x/ ?", "http://h.test/"),
    ],
)
def test_relative_and_root_relative_spellings_of_one_link_agree(
    relative: str, root_relative: str, base: str
) -> None:
    assert clean(relative, base) == clean(root_relative, base)


@given(
    st.sampled_from(
        [
            "http://a.test/x/y?q#f",
            "https://u:p@B.test:8443/",
            "http://[::1]:81/a",
            "http://a/?/x",
            "http://h\\x/y",
            " http://a.test/\tz",
        ]
    ),
    st.text(alphabet="/ab.%2eE?#&=;\\ \t", max_size=16),
)
@example("http://a.test/x/y", "/a/../b")
@example("http://a.test/x/y", "/a/%2e%2e/b?c#d")
def test_root_relative_hrefs_depend_only_on_the_base_origin(base: str, tail: str) -> None:
    # The engine's href memo keys a root-relative href by origin_prefix(base) + href:
    # sound only if the base's path and query never matter for it.
    href = "/" + tail
    assume(not urls._fix_whitespace(href).startswith("//"))
    try:
        expected: str | None = clean(urls.origin_prefix(base) + href)
    except UrlError:
        expected = None
    if expected is None:
        with pytest.raises(UrlError):
            clean(href, base)
    else:
        assert clean(href, base) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.1/", "http://127.0.0.1/"),
        ("http://2130706433/x", "http://127.0.0.1/x"),
        ("http://0x7f.0.0.1/", "http://127.0.0.1/"),
        ("http://0177.0.0.1:8080/", "http://127.0.0.1:8080/"),
        ("http://127.0.0.1./", "http://127.0.0.1/"),
        ("http://10.1.0x10/", "http://10.1.0.16/"),
        ("http://1.2.3.4/", "http://1.2.3.4/"),
        ("http://foo.0x1g/", "http://foo.0x1g/"),
        ("http://1.0x/", "http://1.0.0.0/"),
        ("http://0x7f.1\u00ad/", "http://127.0.0.1/"),
        ("http://\ufeff0177.0.0.1/", "http://127.0.0.1/"),
        ("http://2130706433\u200b./", "http://127.0.0.1/"),
        ("http://\u00ad0x7F000001/", "http://127.0.0.1/"),
    ],
)
def test_ipv4_hosts_are_read_as_browsers_read_them(url: str, expected: str) -> None:
    assert clean(url) == expected


@pytest.mark.parametrize("host", ["a.b.123", "1.2.3.4.5", "256.1.1.1", "08.1.1.1", "1.2.3.0x1ff"])
def test_a_host_ending_in_a_bad_number_is_refused(host: str) -> None:
    with pytest.raises(UrlError, match="is not a valid IPv4 address"):
        clean(f"http://{host}/")


@given(
    st.lists(st.sampled_from([".", "..", "%2e", "%2E.", ".%2e", "%2e%2e", "a", "", "..."])),
    st.sampled_from(["", "?q=/../x", "#/.."]),
    st.sampled_from(["http://u:p@example.com", "http://example.com", "http://[::1]:81"]),
)
def test_cleaned_paths_have_no_dot_segments(segments: list[str], tail: str, authority: str) -> None:
    # httpx sends the cleaned path as it is, so robots.txt sees what is sent, and the
    # dedupe key names the same segments.
    cleaned = clean(authority + "/" + "/".join(segments) + tail)
    path = urlsplit(cleaned).path or "/"
    assert urls._DOT_SEGMENT.search(path) is None
    assert "@" not in urlsplit(cleaned).netloc
    key = normalize(cleaned, ())
    assert (urlsplit(key).path or "/").split("/") == path.split("/")
    assert clean(cleaned) == cleaned


@given(
    st.text(
        alphabet=st.sampled_from(list("aZ09-._~%2EeFf/?&=+")),
        max_size=40,
    ),
    st.sampled_from([(), STRIP, ("A", "b")]),
)
def test_normalize_is_idempotent_on_any_escapes(path: str, strip: tuple[str, ...]) -> None:
    url = clean("http://example.com/" + path)
    key = normalize(url, strip)
    assert normalize(key, strip) == key


def test_a_strip_name_ending_in_a_star_is_a_prefix() -> None:
    strip = ("utm_*", "sid")
    assert normalize("http://a.test/?utm_reader=x&UTM_Name=y&k=1&utmx=2", strip) == (
        "http://a.test/?k=1&utmx=2"
    )
    assert normalize("http://a.test/p;utm_x=1;v=2?sid=3", strip) == "http://a.test/p;v=2"
    assert normalize("http://a.test/?utm_new=1", DEFAULT_STRIP_PARAMS) == "http://a.test/"
