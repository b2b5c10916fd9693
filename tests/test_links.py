"""core.links: hrefs, <base>, rel=nofollow, meta robots, X-Robots-Tag, encodings."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest
from httpserver import HTTPTestServer, Response
from multidict import CIMultiDict, CIMultiDictProxy

from core.config import build_config
from core.fetcher import Fetcher
from core.links import Extracted, extract_links, is_html, robots_tags

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
    assert got.links == ["/ok", "/\ufffd\ufffd\ufffdbad", "/\ufffdnul"]
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


def test_speed_on_a_big_page() -> None:
    page = "".join(
        f'<div class="c{i}"><p>text {i}</p><a href="/page/{i}" class="x">link</a></div>'
        for i in range(5000)
    ).encode()
    extract(page)
    started = time.perf_counter()
    got = extract(page)
    took = time.perf_counter() - started
    assert len(got.links) == 5000
    assert took < 0.25  # ~15 ms on a laptop; generous for slow CI


@pytest.fixture
def srv() -> Iterator[HTTPTestServer]:
    with HTTPTestServer() as server:
        yield server


async def test_extract_from_a_real_response(srv: HTTPTestServer) -> None:
    srv.set(
        "/page",
        Response(
            200,
            [
                ("Content-Type", "text/html; charset=windows-1252"),
                ("X-Robots-Tag", "otherbot: nofollow"),
                ("X-Robots-Tag", "noindex"),
            ],
            '<base href="/b/"><a href="caf\xe9">x</a><a href="#top">t</a>'.encode("cp1252"),
        ),
    )
    async with Fetcher(build_config({"read_timeout_ms": 1000, "total_timeout_ms": 2000})) as f:
        result = await f.fetch(srv.url("/page"))
    assert is_html(result.content_type)
    got = extract_links(result.body, result.url, result.headers, TOKEN)
    assert got == Extracted(links=["café"], base=srv.url("/b/"), nofollow=False, noindex=True)
