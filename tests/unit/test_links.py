"""core.policy.links: hrefs, <base>, rel=nofollow, meta robots, X-Robots-Tag, encodings."""

from __future__ import annotations

import codecs
import random
import re
from html import escape

import pytest
from hypothesis import given
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from crawldeck.core.policy.links import (
    _WHATWG_CODECS,
    ANCHOR_MAX_CHARS,
    REFRESH_MAX_DELAY_S,
    Extracted,
    extract_links,
    is_html,
    parse_refresh,
    robots_tags,
)
from crawldeck.core.policy.simhash import simhash64

URL = "http://example.test/dir/page.html"
TOKEN = "crawldeck"
HTML = {"Content-Type": "text/html"}


def extract(
    body: str | bytes, headers: dict[str, str] | CIMultiDictProxy[str] | None = None
) -> Extracted:
    raw = body.encode() if isinstance(body, str) else body
    return extract_links(raw, URL, HTML if headers is None else headers, TOKEN)


def test_links_in_document_order_with_area() -> None:
    got = extract(
        """<html><body>
        <a href="/one">1</a>
        <map><area href="two.html" shape="rect"></map>
        <a href="  https://other.test/three \n">3</a>
        <a name="no-href">x</a>
        <svg><a href="/svg-link"><text>s</text></a></svg>
        <link href="/style.css" rel="stylesheet"><img src="/i.png">
        </body></html>"""
    )
    assert got == Extracted(
        links=["/one", "two.html", "https://other.test/three", "/svg-link"],
        base=URL,
        nofollow=False,
        noindex=False,
        simhash=simhash64("1 3 x s"),  # the text of the body's elements
        anchors={"/one": "1", "https://other.test/three": "3", "/svg-link": "s"},
    )


def test_base_href_first_one_resolved() -> None:
    got = extract(
        '<head><base target="_blank"><base href="../other/"><base href="/ignored/"></head>'
        '<a href="x">x</a>'
    )
    assert got.base == "http://example.test/other/"
    assert got.links == ["x"]
    assert extract('<base href="https://cdn.test/root/">').base == "https://cdn.test/root/"
    assert extract('<base href="javascript:alert(1)">').base == URL
    assert extract('<base href="">').base == URL


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("\\\\cdn.test\\root/", "http://cdn.test/root/"),
        ("http:////cdn.test/root/", "http://cdn.test/root/"),
        ("https:cdn.test/root/", "https://cdn.test/root/"),
        ("/a/%2e%2e/b/", "http://example.test/b/"),
        ("\t/c/ ", "http://example.test/c/"),
    ],
)
def test_base_href_is_resolved_as_browsers_resolve_it(href: str, expected: str) -> None:
    # HTML Standard "document base URL": <base href> parsed by the WHATWG URL
    # parser against the page URL (backslashes, extra slashes, %2e segments).
    assert extract(f'<base href="{escape(href)}"><a href="x">x</a>').base == expected


def test_rel_nofollow_is_skipped() -> None:
    got = extract(
        """<a href="/a" rel="nofollow">a</a>
        <a href="/b" rel="External NoFollow">b</a>
        <a href="/c" rel="nofollowers">c</a>
        <a href="/d" rel="noopener\tnofollow">d</a>
        <area href="/e" rel="NOFOLLOW">
        <area href="/f" rel="">
        <a href="/g" rel="ugc sponsored">g</a>"""
    )
    assert got.links == ["/c", "/f", "/g"]
    assert got.nofollow is False


def test_empty_and_fragment_hrefs_are_skipped() -> None:
    got = extract(
        '<a href="">e</a><a href="   ">s</a><a href="#top">t</a><a href=" #x ">x</a>'
        '<a href="/page#frag">p</a><a href="?q=1">q</a><a href="#">h</a>'
    )
    assert got.links == ["/page#frag", "?q=1"]


def test_duplicates_keep_first_position() -> None:
    got = extract(
        '<a href="/b">1</a><a href="/a">2</a><a href=" /b ">3</a><area href="/a"><a href="/c">'
    )
    assert got.links == ["/b", "/a", "/c"]


def test_non_http_hrefs_are_returned_raw() -> None:
    got = extract('<a href="mailto:x@y.test">m</a><a href="javascript:void(0)">j</a>')
    assert got.links == ["mailto:x@y.test", "javascript:void(0)"]


@pytest.mark.parametrize(
    ("meta", "nofollow", "noindex", "links"),
    [
        ('<meta name="robots" content="nofollow">', True, False, []),
        ('<meta name="ROBOTS" content="NoIndex">', False, True, ["/a"]),
        ('<meta name="robots" content="none">', True, True, []),
        ('<meta name="robots" content="noindex,nofollow">', True, True, []),
        ('<meta name="robots" content="noindex nofollow">', True, True, []),
        ('<meta name="CrawlDeck" content="nofollow">', True, False, []),
        ('<meta name="otherbot" content="noindex, nofollow">', False, False, ["/a"]),
        ('<meta name="robots" content="index, follow">', False, False, ["/a"]),
        ('<meta name="description" content="none">', False, False, ["/a"]),
    ],
)
def test_meta_robots(meta: str, nofollow: bool, noindex: bool, links: list[str]) -> None:
    got = extract(f"<html><head>{meta}</head><body><a href='/a'>a</a></body></html>")
    assert (got.nofollow, got.noindex, got.links) == (nofollow, noindex, links)


@pytest.mark.parametrize(
    ("value", "tags"),
    [
        ("noindex", {"noindex"}),
        ("NoIndex, NoFollow", {"noindex", "nofollow"}),
        ("otherbot: nofollow", set()),
        ("crawldeck: nofollow", {"nofollow"}),
        ("CrawlDeck: noindex, nofollow", {"noindex", "nofollow"}),
        ("noarchive, otherbot: noindex, crawldeck: none", {"noarchive", "none"}),
        (
            "max-snippet: 20, unavailable_after: 2030-01-01",
            {"max-snippet:20", "unavailable_after:2030-01-01"},
        ),
        ("crawldeck: max-snippet: -1", {"max-snippet:-1"}),
        (" , ,", set()),
    ],
)
def test_x_robots_tag_parsing(value: str, tags: set[str]) -> None:
    assert robots_tags({"X-Robots-Tag": value}, TOKEN) == frozenset(tags)


def test_x_robots_tag_several_headers_are_scoped_apart() -> None:
    headers = CIMultiDictProxy(
        CIMultiDict(
            [
                ("X-Robots-Tag", "otherbot: noindex"),
                ("x-robots-tag", "nofollow"),
                ("Content-Type", "text/html"),
            ]
        )
    )
    assert robots_tags(headers, TOKEN) == frozenset({"nofollow"})
    got = extract("<a href=/a>a</a>", headers)
    assert (got.links, got.nofollow, got.noindex) == ([], True, False)


@pytest.mark.parametrize(
    ("value", "nofollow", "noindex", "links"),
    [
        ("noindex", False, True, ["/a"]),
        ("none", True, True, []),
        ("otherbot: none", False, False, ["/a"]),
        ("crawldeck: nofollow", True, False, []),
    ],
)
def test_x_robots_tag_in_extract(
    value: str, nofollow: bool, noindex: bool, links: list[str]
) -> None:
    got = extract("<a href=/a>a</a>", {"content-type": "text/html", "x-robots-tag": value})
    assert (got.nofollow, got.noindex, got.links) == (nofollow, noindex, links)


def test_broken_html() -> None:
    got = extract(
        b"<p><a href=/x>one<a href=/y>two</a></p></b></a></div>"
        b"<table><a href=/t><tr><td><a href='/in-cell'>"
        b"<a href=\"/a\"<a href='/b'>x"
        b"<!-- <a href=/commented> --><script>document.write('<a href=/script>')</script>"
        b"<a href=/last"
    )
    assert got.links == ["/x", "/y", "/t", "/in-cell", "/a"]


def test_unterminated_attribute_swallows_the_rest_like_a_browser() -> None:
    assert extract(b'<a href="/ok">o</a><a href="/unterminated>x</a><a href=/after>').links == [
        "/ok"
    ]


def test_charset_from_meta() -> None:
    body = '<meta charset="windows-1251"><a href="/привет">x</a>'.encode("windows-1251")
    assert extract(body).links == ["/привет"]


def test_charset_from_header_wins_over_meta() -> None:
    body = '<meta charset="windows-1251"><a href="/café">x</a>'.encode("latin-1")
    got = extract(body, {"Content-Type": "text/html; charset=ISO-8859-1"})
    assert got.links == ["/café"]
    utf8 = '<meta charset="windows-1251"><a href="/café">x</a>'.encode()
    assert extract(utf8, {"Content-Type": 'text/html; charset="utf-8"'}).links == ["/café"]


def test_bom_wins() -> None:
    body = '\ufeff<a href="/ünï">x</a>'.encode("utf-16-le")
    assert extract(body, {"Content-Type": "text/html; charset=latin-1"}).links == ["/ünï"]


def test_invalid_bytes_do_not_raise() -> None:
    got = extract(b'<a href="/ok">o</a><a href="/\xff\xfe\xc3bad">b</a><a href="/\x00nul">n</a>')
    # undeclared and not UTF-8: windows-1252 (issue #25 trial 12); a NUL is U+FFFD
    assert got.links == ["/ok", "/\xff\xfe\xc3bad", "/\ufffdnul"]
    declared = {"Content-Type": "text/html; charset=utf-8"}
    got = extract(b'<a href="/\xff\xfe\xc3bad">b</a>', declared)
    assert got.links == ["/\ufffd\ufffd\ufffdbad"]
    assert extract(b"<a href=/x>", {"Content-Type": "text/html; charset=no-such-codec"}).links == [
        "/x"
    ]


def test_garbage_and_empty_bodies() -> None:
    rng = random.Random(7)
    for _ in range(20):
        blob = bytes(rng.randrange(256) for _ in range(2000))
        got = extract(blob)
        assert isinstance(got.links, list)
    assert extract(b"") == Extracted(links=[], base=URL, nofollow=False, noindex=False)


def test_is_html() -> None:
    assert is_html("text/html") is True
    assert is_html("Text/HTML; charset=utf-8") is True
    assert is_html("application/xhtml+xml") is True
    assert is_html("text/plain") is False
    assert is_html("application/pdf") is False
    assert is_html("") is False


def test_a_big_page_keeps_every_link_in_order() -> None:
    page = "".join(
        f'<div class="c{i}"><p>text {i}</p><a href="/page/{i}" class="x">link</a></div>'
        for i in range(5000)
    ).encode()
    assert extract(page).links == [f"/page/{i}" for i in range(5000)]


def test_anchor_text_is_collapsed_capped_and_falls_back_to_an_image_alt() -> None:
    """Each link's anchor text (Scrapy's ``Link.text``): ASCII whitespace collapsed, cut
    at ``ANCHOR_MAX_CHARS``, an image link's ``alt``, an ``<area>``'s ``alt``, the first
    text of a link written twice; no entry for a link without text or a frame."""
    long = "word " * 100
    got = extract(
        f"""<html><body>
        <a href="/a">  Read\n\t the <b>docs</b>  </a>
        <a href="/img"><img src="x.png"> <img src="l.png" alt=" Our  logo "></a>
        <a href="/empty"><img src="x.png"></a>
        <a href="/twice"> </a><a href="/twice">second</a><a href="/twice">third</a>
        <a href="/long">{long}</a>
        <map><area href="/area" alt="a region"></map>
        <iframe src="/frame"></iframe>
        </body></html>"""
    )
    assert got.links == ["/a", "/img", "/empty", "/twice", "/long", "/area", "/frame"]
    assert got.anchors == {
        "/a": "Read the docs",
        "/img": "Our logo",
        "/twice": "second",
        "/long": ("word " * 40)[:ANCHOR_MAX_CHARS],
        "/area": "a region",
    }
    assert len(got.anchors["/long"]) == ANCHOR_MAX_CHARS == 200


@given(
    st.lists(
        st.text(alphabet=" \t\n\r\f\x0b\x1c\x1f\xa0\u3000ab-é", min_size=1, max_size=30),
        min_size=1,
        max_size=5,
    )
)
def test_anchor_words_split_on_ascii_whitespace_only(texts: list[str]) -> None:
    """The anchor texts' split (``str.split`` when no text holds a space it would split
    on wrongly, else a regex) gives the rule's words: split on the HTML Standard's ASCII
    whitespace only, so ``\\x0b``, ``\\x1c``, ``\\xa0`` and ``\\u3000`` stay inside words,
    whatever the other links of the page hold."""
    body = "".join(f'<a href="/{i}">{escape(text)}</a>' for i, text in enumerate(texts))
    got = extract(f"<html><body>{body}</body></html>")
    # lexbor turns a CR or CR LF of the source into LF (HTML Standard, preprocessing).
    expected = {}
    for i, text in enumerate(texts):
        source = text.replace("\r\n", "\n").replace("\r", "\n")
        words = [w for w in re.split("[ \t\n\r\f]+", source) if w]
        if words and not source.isspace():
            expected[f"/{i}"] = " ".join(words)[:ANCHOR_MAX_CHARS]
    assert got.anchors == expected


def test_anchor_texts_follow_the_links_kept() -> None:
    """``nofollow`` keeps no link and no text; a ``max_links`` cut keeps the texts of
    the links kept only."""
    page = b'<a href="/1">one</a><a href="/2">two</a><a href="/3">three</a>'
    assert extract_links(page, URL, {}, TOKEN, max_links=2).anchors == {"/1": "one", "/2": "two"}
    robots = b'<meta name="robots" content="nofollow">' + page
    assert extract_links(robots, URL, {}, TOKEN).anchors == {}
    kept = extract_links(robots, URL, {}, TOKEN, obey_nofollow=False)
    assert kept.anchors == {"/1": "one", "/2": "two", "/3": "three"}


# --- meta refresh (issue #10 item 5) -------------------------------------------------

#: ``content`` values of ``<meta http-equiv="refresh">`` / ``Refresh`` headers as found
#: on real sites, and what the HTML Standard's "shared declarative refresh steps" make
#: of them: ``(delay_s, url)``, or ``None`` when no refresh is declared at all.
REFRESH_FORMS: list[tuple[str, tuple[int, str | None] | None]] = [
    ("0; URL=http://example.com/", (0, "http://example.com/")),
    ("0;URL=/next", (0, "/next")),
    ("0; url=/next", (0, "/next")),
    ("0;url=/next", (0, "/next")),
    ("0;Url=/Mixed/Case", (0, "/Mixed/Case")),
    ("5; URL='/next'", (5, "/next")),
    ('0; URL="/next"', (0, "/next")),
    ("0; URL='/unterminated", (0, "/unterminated")),
    ('3;url="/unterminated too', (3, "/unterminated too")),
    ("0;/next", (0, "/next")),
    ("0; /next", (0, "/next")),
    ("0, /next", (0, "/next")),
    ("0 /next", (0, "/next")),
    ("0 ; url = /next", (0, "/next")),
    ("  3 ;URL=  /next  ", (3, "/next")),
    ("0;\turl=/tab", (0, "/tab")),
    ("0; url = ' /padded ' ", (0, "/padded")),
    ("0;URL='http://x.test/it''s'", (0, "http://x.test/it")),
    ("0;URL=http://x.test/a?b=1&c=2", (0, "http://x.test/a?b=1&c=2")),
    ("0;URL=/a b", (0, "/a b")),
    ("0.5; url=/next", (0, "/next")),
    (".5;url=/next", (0, "/next")),
    ("1.5.3; url=/next", (1, "/next")),
    ("1;/next.html", (1, "/next.html")),
    ("0; url", (0, "url")),
    ("0; urlx=/y", (0, "urlx=/y")),
    ("0; u", (0, "u")),
    ("0;URL=javascript:alert(1)", (0, "javascript:alert(1)")),
    ("600; url=/later", (600, "/later")),
    ("0; URL=", (0, None)),
    ("0; URL=''", (0, None)),
    ("30", (30, None)),
    ("0", (0, None)),
    ("5;", (5, None)),
    ("", None),
    ("   ", None),
    ("soon", None),
    ("-1; url=/x", None),
    ("0x;url=/x", None),
    ("url=/x", None),
]


@pytest.mark.parametrize(("content", "parsed"), REFRESH_FORMS)
def test_parse_refresh_forms(content: str, parsed: tuple[int, str | None] | None) -> None:
    assert parse_refresh(content) == parsed


@pytest.mark.parametrize(("content", "parsed"), REFRESH_FORMS)
def test_refresh_in_a_page_and_a_header(
    content: str, parsed: tuple[int, str | None] | None
) -> None:
    expected = None
    if parsed is not None and parsed[1] is not None and parsed[0] <= REFRESH_MAX_DELAY_S:
        expected = parsed[1]
    page = f'<html><head><meta http-equiv="Refresh" content="{escape(content)}"></head></html>'
    assert extract(page).refresh == expected
    header = {"Content-Type": "text/html", "Refresh": content}
    assert extract("<p>no meta here</p>", header).refresh == expected


def test_refresh_rules_in_a_document() -> None:
    def refresh(head: str, body: str = "", headers: dict[str, str] | None = None) -> str | None:
        return extract(f"<html><head>{head}</head><body>{body}</body></html>", headers).refresh

    meta = '<meta http-equiv="{}" content="{}">'
    assert refresh(meta.format("REFRESH", "0;url=/a")) == "/a"
    assert refresh(meta.format("refresh ", "0;url=/a")) is None  # an enumerated keyword
    assert refresh(meta.format("content-type", "0;url=/a")) is None
    assert refresh("", meta.format("refresh", "0;url=/in-body")) == "/in-body"
    # the first one that parses wins; one that does not parse does not count
    assert refresh(meta.format("refresh", "soon") + meta.format("refresh", "1;/b")) == "/b"
    assert refresh(meta.format("refresh", "1;/a") + meta.format("refresh", "0;/b")) == "/a"
    # a reload or a long delay declared first is the page's refresh: no target
    assert refresh(meta.format("refresh", "30") + meta.format("refresh", "0;/b")) is None
    assert refresh(meta.format("refresh", "101;/a")) is None
    assert refresh(meta.format("refresh", "100;/a")) == "/a"
    # <noscript> (a browser with scripting, Scrapy >= 2.11.2) and <template> are skipped
    noscript = "<noscript>" + meta.format("refresh", "0;url=/enable-js") + "</noscript>"
    assert refresh(noscript) is None
    assert refresh("", noscript) is None
    assert refresh(noscript + meta.format("refresh", "2;url=/real")) == "/real"
    assert refresh("<template>" + meta.format("refresh", "0;/tpl") + "</template>") is None
    # the header counts when the markup declares none; the markup wins over it
    hdr = {"Content-Type": "text/html", "Refresh": "0; url=/from-header"}
    assert refresh("", "", hdr) == "/from-header"
    assert refresh(meta.format("refresh", "0;/from-meta"), "", hdr) == "/from-meta"
    assert refresh(noscript, "", hdr) == "/from-header"
    # a refresh to the page itself is a reload; the fragment does not make it another page
    assert refresh(meta.format("refresh", "0;url=page.html")) is None
    assert refresh(meta.format("refresh", f"0;url={URL}#top")) is None
    # the page itself as a browser reads the target: backslashes, dot segments
    assert refresh(meta.format("refresh", "0;url=\\dir\\page.html")) is None
    assert refresh(meta.format("refresh", "0;url=HTTP://Example.TEST:80/dir/./page.html")) is None
    assert refresh(meta.format("refresh", "0;url=page.html?v=2")) == "page.html?v=2"
    # the target is raw, resolved by the engine against base; nofollow does not clear it
    got = extract(
        '<base href="/other/"><meta name="robots" content="nofollow">'
        '<meta http-equiv="refresh" content="0; URL=next.html"><a href="/x">x</a>'
    )
    assert (got.refresh, got.base, got.links) == ("next.html", "http://example.test/other/", [])
    assert extract("<a href=/x>x</a>").refresh is None


def test_refresh_header_several_values_first_counts() -> None:
    headers = CIMultiDictProxy(
        CIMultiDict(
            [("Content-Type", "text/html"), ("Refresh", "0;url=/one"), ("Refresh", "0;/two")]
        )
    )
    assert extract("<p>x</p>", headers).refresh == "/one"


# --- encodings: invalid bytes and declared encodings (issue #10 item 13) --------------

#: Invalid UTF-8: a byte that never occurs, lone continuation bytes, truncated
#: sequences, an overlong form, a surrogate, a code point past U+10FFFF.
BAD_UTF8 = [
    b"\xff",
    b"\xfe",
    b"\x80",
    b"\xbf\xbf",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
]
UTF8_HEADERS: list[dict[str, str]] = [
    {"Content-Type": "text/html; charset=utf-8"},
    {"Content-Type": "text/html"},
]


@pytest.mark.parametrize("headers", UTF8_HEADERS, ids=["header-utf8", "no-charset"])
@pytest.mark.parametrize("meta", [b"", b'<meta charset="utf-8">'], ids=["", "meta-utf8"])
@pytest.mark.parametrize("bad", BAD_UTF8, ids=repr)
def test_invalid_utf8_keeps_every_link(headers: dict[str, str], meta: bytes, bad: bytes) -> None:
    body = (
        meta
        + b'<p>text B <a href="/1">1</a> B</p>'
        + b'<a title="B" href="/2">2</a><a href="/3" title="xB">3</a>'
        + b"<a href=/4 data-x=B>4</a><img alt=B><a href='/5B'>5</a>B"
        + b'<a href="/6">6</a><!-- B --><a href="/7">B</a>'
        + b"<script>var s = 'B';</script><a href=/8>8</a>"
    ).replace(b"B", bad) + bad
    got = extract(body, headers)
    marks = "\ufffd" * len(bad.decode("utf-8", errors="replace"))
    if not meta and "charset" not in headers["Content-Type"]:
        # undeclared and not UTF-8: windows-1252, as a browser reads it (issue #25 trial 12)
        marks = bad.decode("cp1252", errors="replace")
    assert got.links == ["/1", "/2", "/3", "/4", f"/5{marks}", "/6", "/7", "/8"]


@given(
    st.lists(
        st.tuples(st.sampled_from(BAD_UTF8), st.sampled_from(["text", "attr", "name", "end"])),
        max_size=12,
    ),
    st.sampled_from([*UTF8_HEADERS, {"Content-Type": "text/html; charset=windows-1252"}]),
)
def test_invalid_bytes_anywhere_outside_an_href_keep_every_link(
    bad: list[tuple[bytes, str]], headers: dict[str, str]
) -> None:
    parts: list[bytes] = []
    for i, (junk, where) in enumerate(bad):
        if where == "text":
            parts.append(b"<p>" + junk + b"</p>")
        elif where == "attr":
            parts.append(b'<span title="' + junk + b'">s</span>')
        elif where == "name":
            parts.append(b"<b data-" + junk + b"=x>b</b>")
        else:
            parts.append(b"<i>" + junk)
        parts.append(b'<a href="/link/%d">l</a>' % i)
    got = extract(b"".join(parts), headers)
    assert got.links == [f"/link/{i}" for i in range(len(bad))]


@pytest.mark.parametrize(
    "label", ["utf-32", "base64", "hex", "rot13", "punycode", "idna", "cp037", "zlib", "utf-7"]
)
def test_a_label_that_is_no_web_encoding_is_ignored(label: str) -> None:
    body = b'<a href="/a">a</a><a href="/caf\xc3\xa9">b</a>'
    header = {"Content-Type": f"text/html; charset={label}"}
    assert extract(body, header).links == ["/a", "/café"]
    meta = f'<meta charset="{label}">'.encode()
    assert extract(meta + body).links == ["/a", "/café"]


@pytest.mark.parametrize("name", sorted(_WHATWG_CODECS))
def test_each_web_encoding_is_written_as_its_codecs_canonical_name(name: str) -> None:
    """``_WHATWG_CODECS`` is written out, not looked up at import (issue #22 item 1): each
    name must be what ``codecs.lookup`` calls it, or that encoding would be ignored."""
    assert codecs.lookup(name).name == name


@pytest.mark.parametrize(
    ("label", "text", "python_codec"),
    [
        ("shift_jis", "/①", "cp932"),  # NEC row 13: in windows-31J, not in Python's shift_jis
        ("euc-kr", "/똠", "cp949"),  # UHC: in windows-949, not in Python's euc_kr
        ("gb2312", "/镕", "gbk"),  # GBK: not in Python's gb2312
        ("big5", "/㐵", "big5hkscs"),  # HKSCS: not in Python's big5
        ("latin1", "/€", "cp1252"),  # windows-1252 in a browser
        ("us-ascii", "/€", "cp1252"),
    ],
)
def test_labels_mean_what_the_encoding_standard_says(
    label: str, text: str, python_codec: str
) -> None:
    body = f'<a href="{text}">x</a><a href="/after">y</a>'.encode(python_codec)
    header = {"Content-Type": f"text/html; charset={label}"}
    assert extract(body, header).links == [text, "/after"]
    meta = f'<meta charset="{label}">'.encode()
    assert extract(meta + body).links == [text, "/after"]


def test_meta_utf16_is_read_as_utf8() -> None:
    body = '<meta charset="utf-16"><a href="/ü">x</a>'.encode()
    assert extract(body).links == ["/ü"]
    assert extract(body, {"Content-Type": "text/html; charset=UTF-16LE"}).links == []
    utf16 = '<a href="/ü">x</a>'.encode("utf-16-le")
    assert extract(utf16, {"Content-Type": "text/html; charset=utf-16"}).links == ["/ü"]


@pytest.mark.parametrize(
    ("charset", "href", "sent"),
    [
        # a windows-1252 page: the query in its encoding, the path and fragment UTF-8
        ("iso-8859-1", "/q?name=café&x=ü", "/q?name=caf%E9&x=%FC"),
        ("iso-8859-1", "/café.html?x=ü#à", "/café.html?x=%FC#à"),
        ("windows-1252", "http://h.test/?€", "http://h.test/?%80"),
        # a character the encoding lacks: its &#N; percent-encoded (URL Standard §4.4)
        ("iso-8859-1", "/q?x=日", "/q?x=%26%2326085%3B"),
        ("shift_jis", "/q?x=日本", "/q?x=%93%FA%96%7B"),
        # UTF-8 and UTF-16 pages, and schemes other than http(s): as written
        ("utf-8", "/q?name=café", "/q?name=café"),
        ("iso-8859-1", "mailto:a@b.test?subject=café", "mailto:a@b.test?subject=café"),
    ],
)
def test_a_query_is_sent_in_the_pages_encoding(charset: str, href: str, sent: str) -> None:
    """Issue #25 trial 18: ``?name=café`` on a Latin-1 page went as ``caf%C3%A9``; a
    browser, Scrapy (``safe_url_string(url, response.encoding)``) and wget send the
    page's bytes, ``caf%E9``."""
    body = f'<a href="{escape(href)}">x</a>'.encode(
        codecs.lookup(charset).name, "xmlcharrefreplace"
    )
    headers = CIMultiDict({"Content-Type": f"text/html; charset={charset}"})
    extracted = extract_links(body, "http://h.test/", CIMultiDictProxy(headers), "crawldeck")
    assert extracted.links == [sent]
    assert extracted.anchors == {sent: "x"}
