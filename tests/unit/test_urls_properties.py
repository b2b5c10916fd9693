"""Properties of ``clean`` and ``normalize`` over URLs built from hostile pieces.

Issue #10 item 6 ("the URL sent is the URL checked") and item 1 (session ids in the
path). For every link ``x`` (and base) that ``clean`` accepts:

1. ``clean(clean(x)) == clean(x)``;
2. ``normalize(clean(x)) == normalize(clean(clean(x)))``, and the key is a fixed point
   of ``normalize``;
3. the path of ``clean(x)`` has no dot segment in any spelling (``.``, ``..``, ``%2e``,
   ``.%2E``, ...), so what robots.txt is checked on is what a server resolves;
4. a host of ``clean(x)`` that ends in a number (WHATWG URL §3.5) is a canonical
   dotted-quad IPv4 address, already after the first ``clean``;
5. ``x`` resolves alike against a base and against ``clean(base)`` (a browser parses
   the base URL first), refusals included.

``clean`` may refuse a link with ``UrlError``; any other exception fails the test.
The oracles below (dot segments, "ends in a number", dotted quad) are written from
the standards, not taken from ``core.policy.urls``.
"""

from __future__ import annotations

import functools
import ipaddress
import random
import re
import time
from collections.abc import Sequence

from hypothesis import example, given
from hypothesis import strategies as st
from scaling import MAX_GROWTH

from crawldeck.core.config import DEFAULT_STRIP_PARAMS
from crawldeck.core.errors import UrlError
from crawldeck.core.policy.urls import clean, normalize

STRIP = DEFAULT_STRIP_PARAMS

# ------------------------------------------------------------------------- pieces

#: Code points UTS #46 maps to nothing (IDNA "ignored"), so browsers drop them
#: from a host: soft hyphen, zero-width space, word joiner, variation selector 16,
#: BOM, combining grapheme joiner, Mongolian free variation selector.
INVISIBLE = ["\u00ad", "\u200b", "\u2060", "\ufe0f", "\ufeff", "\u034f", "\u180b"]
#: Whitespace and controls: stripped around a link, tab/newline removed inside.
SPACES = [" ", "\t", "\n", "\r", "\x00", "\x01", "\x1f", "\x0b", "\x0c", "\x7f", "\u3000"]

#: Schemes and what follows them, weighted towards http(s):// so that most links
#: are URLs (a refusal is fine, but it checks nothing).
SCHEMES = ["http", "https", "HTTP", "hTtPs", "ftp", "javascript", "http+x", ""]
SCHEME_WEIGHTS = [10, 6, 2, 2, 1, 1, 1, 1]
SEPARATORS = ["://", "://\t", ":\\\\", ":/\\", ":/", ":", ":\n//"]
SEPARATOR_WEIGHTS = [30, 1, 2, 1, 1, 1, 1]
USERINFO = ["", "", "", "", "", "u@", "u:p@", "@", "ü:p@", "a%40b:c@", "u:p:q@", "u@v@"]
NAMED_HOSTS = [
    "example.com", "EXAMPLE.com.", "a-b_c.example", "bücher.de", "xn--bcher-kva.de",
    "\uff25\uff38.com", "a\u200bb.com", "x\u00ad.y.com", "☃.net", "faß.de", "localhost",
    "a..b", ".a", "a b", "ex%41mple.com", "foo.0x1g", "a.b.123", "0x", "1.0x",
    "[::1]", "[0:0::1]", "[2001:DB8::1]", "[::ffff:1.2.3.4]", "[v1.x]", "[1.2.3.4]",
    "[fe80::1%25eth0]", "[::1", "", "a" * 64 + ".com", "é" * 70,
]  # fmt: skip
PORTS = ["", "", "", "", "", "", ":80", ":443", ":8080", ":0080", ":", ":65535",
         ":65536", ":0", ":x", ": 80", ":8\t0", ":\u0661"]  # fmt: skip
SEGMENTS = [
    "a", "b", "", ".", "..", "...", "%2e", "%2E", ".%2e", "%2e.", "%2E%2e", ".%2E",
    "%2e%2e%2e", "%252e", ". ", ".. ", " ..", "..\t", ".\n.", "%2\te", "..%20", "..\x00",
    "..\u00ad", "..\ufeff", "a b", " ", "\x00", "\x7f", "é", "€", "%", "%zz", "%41",
    "%7e", "a;jsessionid=0A1B", ";sid=XYZ", "..;sid=1", "x;JSESSIONID=9;v=2", "a;b",
    "[", "]", "|", "^", "`", "{", "'", '"', "<", ">", "@", ":", "\\", "..\\", "\ud800",
]  # fmt: skip
PATH_SEPARATORS = ["/", "\\", "%2f", "/\t"]
QUERIES = ["", "", "?", "?a=1", "?b=2&a=1&utm_source=x", "?/../x", "? x", "?a= ",
           "?%zz", "?é=ü", "?a='", "?\\", "?sid=1&ref=2", "?a=1;jsessionid=2", "?#",
           "?\x00", "?a\tb", "?..", "?%2e%2e"]  # fmt: skip
FRAGMENTS = ["", "", "", "#", "#x", "#/..", "# y", "#\t", "#?q", "#%2e%2e", "#\\a"]
BASES = [
    "http://a.test/x/y?q#f", "https://u:p@B.test:8443/", "http://[::1]:81/a",
    "http://127.1/", " http://a.test/\tz", "http://h\\x/y", "http://a.test",
    "http://ex.com/a;jsessionid=1/b/", "http://h.test/public/", "http://0x7f.1\u00ad/p/q",
    "https://bücher.de/a/../b", "http://a/b/c/d;p?q", "nobase", "", "mailto:x@y",
    "http://h.test/%2e%2e/x", "http://h.test/a/.. ",
]  # fmt: skip
REFERENCE_STARTS = ["", "/", "./", "../", "//", "\\\\", "\\", "?", "#", "http:", "g",
                    ";x", ".", "..", " /", "\t../"]  # fmt: skip


def _number(rng: random.Random) -> str:
    """One label of a numeric host: decimal, ``0x`` hex or ``0``-prefixed octal."""
    value = rng.choice([0, 1, 7, 10, 127, 255, 256, 4095, 65535, 16777215, 2130706433])
    kind = rng.randrange(4)
    if kind == 0:
        return str(value)
    if kind == 1:
        return ("0x" if rng.random() < 0.7 else "0X") + format(value, rng.choice("xX"))
    if kind == 2:
        return "0" + format(value, "o")
    return rng.choice(["08", "0x", "00", "1e3", "\u0663"])


_FULLWIDTH_DIGITS = {ord(d): 0xFF10 + ord(d) - 0x30 for d in "0123456789"}


def numeric_host(rng: random.Random) -> str:
    """A host that ends in a number (or almost): 1-5 numeric labels, a name before
    them at times, an invisible code point, full-width digits, an ideographic full
    stop or a trailing dot here and there."""
    labels = [_number(rng) for _ in range(rng.choice([1, 2, 3, 4, 4, 4, 5]))]
    if rng.random() < 0.1:
        labels.insert(0, "a")
    host = ".".join(labels) + ("." if rng.random() < 0.15 else "")
    if rng.random() < 0.1:
        host = host.replace(".", "\u3002")
    if rng.random() < 0.1:
        host = host.translate(_FULLWIDTH_DIGITS)
    for _ in range(rng.choice([0, 1, 1, 2])):
        at = rng.randint(0, len(host))
        host = host[:at] + rng.choice(INVISIBLE) + host[at:]
    return host


def nasty_links(seed: int, count: int) -> list[tuple[str, str | None]]:
    """``count`` links as found in pages, each with the base it is resolved against
    (or ``None``), from the pieces above; the same for the same ``seed``.

    Each piece is drawn for all links at once (``Random.choices``), numeric hosts
    from a pool of 3000 (IDNA-encoding a new host costs about 45 us), so that
    200 000 links take about a second to make and a few to check.
    """
    rng = random.Random(seed)
    numeric = [numeric_host(rng) for _ in range(3000)]
    schemes = rng.choices(SCHEMES, SCHEME_WEIGHTS, k=count)
    separators = rng.choices(SEPARATORS, SEPARATOR_WEIGHTS, k=count)
    userinfo = rng.choices(USERINFO, k=count)
    named = rng.choices(NAMED_HOSTS, k=count)
    ports = rng.choices(PORTS, k=count)
    lengths = rng.choices([0, 1, 2, 3, 4, 6], k=count)
    segments = rng.choices(SEGMENTS, k=6 * count)
    slashes = rng.choices(PATH_SEPARATORS, [8, 1, 1, 1], k=6 * count)
    queries = rng.choices(QUERIES, k=count)
    fragments = rng.choices(FRAGMENTS, k=count)
    starts = rng.choices(REFERENCE_STARTS, k=count)
    bases = rng.choices(BASES, k=count)
    kinds = [rng.random() for _ in range(count)]
    numeric_hosts = rng.choices(numeric, k=count)
    links: list[tuple[str, str | None]] = []
    for i in range(count):
        at = 6 * i
        tail = (
            "".join(slashes[at + j] + segments[at + j] for j in range(lengths[i]))
            + queries[i]
            + fragments[i]
        )
        kind = kinds[i]
        if kind < 0.6:
            host = numeric_hosts[i] if kind < 0.25 else named[i]
            link = schemes[i] + separators[i] + userinfo[i] + host + ports[i] + tail
        else:
            link = starts[i] + tail.lstrip("/")
        if kind < 0.1 or kind > 0.75:
            link = rng.choice(SPACES) + link + rng.choice(SPACES)
        elif 0.3 < kind < 0.35 and link:
            cut = rng.randint(0, len(link))
            link = link[:cut] + rng.choice("\t\n\r") + link[cut:]
        base: str | None = None
        if kind > 0.4:
            base = bases[i] if kind < 0.95 else f"http://{numeric_hosts[i]}/p/q"
        links.append((link, base))
    return links


# ------------------------------------------------------------------------ oracles

#: Dot segments as the WHATWG URL standard reads them (single-dot and double-dot
#: URL path segments, ASCII case-insensitive) and RFC 3986 §3.3.
DOT_SEGMENTS = frozenset({".", "..", "%2e", ".%2e", "%2e.", "%2e%2e"})
_SPLIT = re.compile(r"(https?)://([^/?#]*)([^?#]*)(?:\?([^#]*))?")


def _host_of(authority: str) -> str:
    if authority.startswith("["):
        return authority.partition("]")[0] + "]"
    return authority.partition(":")[0]


def ends_in_number(host: str) -> bool:
    """WHATWG URL §3.5 "ends in a number": the last label (a final empty one dropped)
    is ASCII digits, or ``0x``/``0X`` and ASCII hex digits."""
    labels = host.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()
    last = labels[-1]
    if last and last.isascii() and last.isdigit():
        return True
    return last[:2] in ("0x", "0X") and all(c in "0123456789abcdefABCDEF" for c in last[2:])


def is_dotted_quad(host: str) -> bool:
    """Four decimal numbers 0-255 without leading zeros, no trailing dot."""
    try:
        return str(ipaddress.IPv4Address(host)) == host
    except ValueError:
        return False


@functools.lru_cache(maxsize=8192)
def _cleaned_base(base: str) -> str | None:
    try:
        return clean(base)
    except UrlError:
        return None


def check(link: str, base: str | None, *, against_cleaned_base: bool = True) -> str | None:
    """Assert the properties of the module docstring for ``link`` resolved against
    ``base`` (the fifth only if ``against_cleaned_base``); the cleaned URL, or
    ``None`` if ``clean`` refused it."""
    cleaned_base = None if base is None or not against_cleaned_base else _cleaned_base(base)
    try:
        first = clean(link, base)
    except UrlError:
        if cleaned_base is not None:
            try:
                also = clean(link, cleaned_base)
            except UrlError:
                return None
            raise AssertionError(f"refused against {base!r} only: {(link, also)!r}") from None
        return None
    if cleaned_base is not None:
        assert clean(link, cleaned_base) == first, (link, base, cleaned_base, first)
    second = clean(first)
    assert second == first, (link, base, first, second)
    assert first.isascii() and "#" not in first, (link, base, first)
    parts = _SPLIT.fullmatch(first)
    assert parts is not None, (link, base, first)
    path = parts.group(3)
    assert not any(s.lower() in DOT_SEGMENTS for s in path.split("/")), (link, base, first)
    host = _host_of(parts.group(2))
    if not host.startswith("[") and ends_in_number(host):
        assert is_dotted_quad(host), (link, base, first)
    # normalize(clean(clean(x))) == normalize(clean(x)): clean(clean(x)) is the very
    # string clean(x) (asserted above), and normalize is a function of its string.
    key = normalize(first, STRIP)
    assert normalize(key, STRIP) == key, (link, base, first, key)
    return first


# ---------------------------------------------------------------------- the tests


def _one_of(pieces: Sequence[str]) -> st.SearchStrategy[str]:
    return st.sampled_from(list(pieces))


_NUMERIC_HOSTS = st.builds(
    lambda labels, dot, invisible, at: _insert(".".join(labels) + dot, invisible, at),
    st.lists(
        _one_of(["0", "1", "127", "255", "256", "0x7f", "0X7F", "0177", "08", "0x",
                 "4294967295", "2130706433", "1e3", "\uff11"]),
        min_size=1, max_size=5,
    ),
    _one_of(["", ".", "\u3002"]),
    _one_of(["", *INVISIBLE]),
    st.integers(0, 30),
)  # fmt: skip


def _insert(text: str, piece: str, at: int) -> str:
    at = min(at, len(text))
    return text[:at] + piece + text[at:]


@st.composite
def links(draw: st.DrawFn) -> tuple[str, str | None]:
    """Hypothesis' version of :func:`nasty_links`: the same pieces, shrinkable."""
    segments = draw(st.lists(st.tuples(_one_of(PATH_SEPARATORS), _one_of(SEGMENTS)), max_size=6))
    tail = "".join(slash + segment for slash, segment in segments)
    tail += draw(_one_of(QUERIES)) + draw(_one_of(FRAGMENTS))
    if draw(st.booleans()):
        host = draw(st.one_of(_one_of(NAMED_HOSTS), _NUMERIC_HOSTS))
        link = "".join(
            [draw(_one_of(SCHEMES)), draw(_one_of(SEPARATORS)), draw(_one_of(USERINFO)),
             host, draw(_one_of(PORTS)), tail]
        )  # fmt: skip
    else:
        link = draw(_one_of(REFERENCE_STARTS)) + tail.lstrip("/")
    link = draw(_one_of(["", *SPACES])) + link + draw(_one_of(["", *SPACES]))
    return link, draw(st.one_of(st.none(), _one_of(BASES)))


@given(links())
@example(("/public/.. #x", "http://h.test/p"))
@example(("/public/%2e%2e/secret", "http://h.test/public/"))
@example(("http://0x7f.1\u00ad/", None))
@example(("http://\ufeff127.1/", None))
@example(("http://1.2.3.4\u200b/a/.%2E", None))
@example((" http://h/a/..\t#x ", None))
@example(("..\x00#", "http://h.test/a/b"))
@example(("//x/y", "nobase"))
@example(("http://h/a;jsessionid=1/..;sid=2/b", None))
def test_clean_properties_on_hostile_links(case: tuple[str, str | None]) -> None:
    check(*case)


def test_clean_properties_on_200k_generated_links() -> None:
    # Properties 1-4 (the fifth, which costs a third more, is the Hypothesis test's).
    cases = nasty_links(seed=20240610, count=200_000)
    start = time.perf_counter()
    cleaned = [check(link, base, against_cleaned_base=False) for link, base in cases[:20_000]]
    tenth = time.perf_counter() - start
    cleaned += [check(link, base, against_cleaned_base=False) for link, base in cases[20_000:]]
    elapsed = time.perf_counter() - start
    accepted = [url for url in cleaned if url is not None]
    # hostile pieces, but many links must still be URLs (a refusal checks little)
    assert len(accepted) > 70_000, len(accepted)
    # n against 10n (4-9 s in all on the 2-core test VM): only a runaway fails
    assert elapsed <= MAX_GROWTH * 10 * tenth, (tenth, elapsed)
    # ... and the pieces make the cases of the issue: dot segments behind a space or
    # %2e, hosts that are numbers behind invisible code points, in every notation
    assert sum("..%20" in url for url in accepted) > 100
    invisible = [
        url
        for (link, _), url in zip(cases, cleaned, strict=True)
        if url is not None and any(c in link.partition("//")[2][:40] for c in INVISIBLE)
    ]
    splits = [_SPLIT.fullmatch(url) for url in invisible]
    assert None not in splits
    assert sum(is_dotted_quad(_host_of(s.group(2))) for s in splits if s is not None) > 1000
    quads = {url.split("/")[2] for url in accepted if re.match(r"https?://[0-9.]+[:/]", url)}
    assert len(quads) > 100
