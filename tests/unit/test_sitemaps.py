"""The sitemap parser (``core.policy.sitemaps``): every shape the protocol allows, and every
hostile input refused or cut with its reason, within the caps (no server: pure)."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.policy.sitemaps import (
    MAX_BYTES,
    MAX_URLS,
    Location,
    SitemapEntry,
    declared_sitemaps,
    parse_lastmod,
    parse_sitemap,
)

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(rows: str, ns: str = f' xmlns="{NS}"') -> bytes:
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset{ns}>{rows}</urlset>\n'.encode()


def url(loc: str, extra: str = "") -> str:
    return f"<url><loc>{loc}</loc>{extra}</url>"


FULL = url(
    "http://a.test/x",
    "<lastmod>2024-05-01</lastmod><changefreq>Daily</changefreq><priority>0.8</priority>",
)


def test_a_urlset_keeps_loc_lastmod_changefreq_priority() -> None:
    parsed = parse_sitemap(urlset(FULL + url(" http://a.test/y ")))
    assert parsed.kind == "urlset" and parsed.error is None
    assert parsed.entries == (
        SitemapEntry("http://a.test/x", 1714521600.0, "daily", 0.8),
        SitemapEntry("http://a.test/y"),
    )


@pytest.mark.parametrize(
    "ns",
    ["", f' xmlns="{NS}"', ' xmlns="http://www.google.com/schemas/sitemap/0.84"'],
    ids=["none", "sitemaps.org", "old-google"],
)
def test_the_root_namespace_may_be_any_or_none(ns: str) -> None:
    assert parse_sitemap(urlset(FULL, ns)).entries[0].loc == "http://a.test/x"


def test_elements_of_another_namespace_are_not_sitemap_elements() -> None:
    """``<image:loc>`` inside a ``<url>`` is no ``<loc>``; a ``<url>`` of another
    namespace than the root's is no entry."""
    body = urlset(
        '<url><image:image xmlns:image="http://img"><image:loc>http://img.test/1</image:loc>'
        "</image:image><loc>http://a.test/1</loc></url>"
        '<o:url xmlns:o="http://other"><o:loc>http://a.test/2</o:loc></o:url>'
    )
    parsed = parse_sitemap(body)
    assert [e.loc for e in parsed.entries] == ["http://a.test/1"]


def test_a_sitemap_index_lists_its_sitemaps() -> None:
    body = (
        f'<sitemapindex xmlns="{NS}"><sitemap><loc>http://a.test/s1.xml</loc>'
        "<lastmod>2024-05-01T10:00:00+02:00</lastmod></sitemap>"
        "<sitemap><loc>http://a.test/s2.xml.gz</loc></sitemap></sitemapindex>"
    ).encode()
    parsed = parse_sitemap(body)
    assert parsed.kind == "sitemapindex"
    assert parsed.entries == (
        SitemapEntry("http://a.test/s1.xml", 1714550400.0),
        SitemapEntry("http://a.test/s2.xml.gz"),
    )


def test_gzip_is_known_by_its_bytes_one_member_or_several() -> None:
    body = urlset(FULL)
    assert parse_sitemap(gzip.compress(body)).entries == parse_sitemap(body).entries
    half = len(body) // 2
    members = gzip.compress(body[:half]) + gzip.compress(body[half:])
    assert parse_sitemap(members).entries == parse_sitemap(body).entries


def test_a_text_sitemap_is_one_url_per_line_bad_lines_skipped() -> None:
    body = b"\xef\xbb\xbfhttp://a.test/1\r\n\nnot a url\nhttps://a.test/2\n\xff\xfe bad\nftp://x\n"
    parsed = parse_sitemap(body)
    assert parsed.kind == "text" and parsed.error is None
    assert [e.loc for e in parsed.entries] == ["http://a.test/1", "https://a.test/2"]
    assert parsed.skipped == 3


def test_bad_values_are_dropped_and_their_url_kept() -> None:
    extra = "<lastmod>yesterday</lastmod><changefreq>often</changefreq><priority>1.5</priority>"
    parsed = parse_sitemap(urlset(url("http://a.test/x", extra)))
    assert parsed.entries == (SitemapEntry("http://a.test/x"),)


def test_entries_without_a_usable_loc_are_skipped_and_counted() -> None:
    parsed = parse_sitemap(urlset("<url></url>" + url("x" * 2048) + url("http://a.test/1")))
    assert [e.loc for e in parsed.entries] == ["http://a.test/1"] and parsed.skipped == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024", 1704067200.0),
        ("2024-05", 1714521600.0),
        ("2024-05-01", 1714521600.0),
        ("2024-05-01T10:00Z", 1714557600.0),
        ("2024-05-01T10:00:00.5-01:30", 1714563000.5),
        ("2024-05-01T10:00:00", 1714557600.0),  # no zone: UTC
        ("2024-13-01", None),
        ("2024-02-30", None),
        ("2024-05-01T25:00Z", None),
        ("2024-05-01T10:00+24:00", None),
        ("0001-01-01T00:00+14:00", None),  # before year 1 in UTC
        ("May 1, 2024", None),
        ("", None),
    ],
)
def test_lastmod_is_w3c_datetime(text: str, expected: float | None) -> None:
    assert parse_lastmod(text) == expected


@given(st.text(max_size=40))
def test_lastmod_never_raises(text: str) -> None:
    parse_lastmod(text)


def test_billion_laughs_is_refused_as_entities() -> None:
    lol = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    body = f'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY l0 "lol">{lol}]>'.encode()
    parsed = parse_sitemap(body + urlset(url("&l9;"), "").split(b"\n", 1)[1])
    assert parsed.entries == () and parsed.kind is None
    assert parsed.error == "xml_entities: entity declaration 'l0' refused"


def test_an_external_entity_is_refused() -> None:
    body = b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    parsed = parse_sitemap(body + b"<urlset><url><loc>&x;</loc></url></urlset>")
    assert parsed.entries == () and parsed.error == "xml_external: external entity 'x' refused"


def test_an_external_dtd_is_refused() -> None:
    body = b'<!DOCTYPE urlset SYSTEM "http://evil.test/x.dtd"><urlset/>'
    parsed = parse_sitemap(body)
    assert parsed.error == "xml_external: external reference 'http://evil.test/x.dtd' refused"


def test_any_other_dtd_is_refused() -> None:
    parsed = parse_sitemap(b"<!DOCTYPE urlset [<!ELEMENT urlset ANY>]>" + urlset(FULL, ""))
    assert parsed.entries == ()
    assert parsed.error == "xml_dtd: document type declaration 'urlset' refused"


def test_malformed_xml_keeps_what_came_before_the_error() -> None:
    parsed = parse_sitemap(f"<urlset>{url('http://a.test/1')}<url><loc>http://a.test/2".encode())
    assert [e.loc for e in parsed.entries] == ["http://a.test/1"]
    assert parsed.error is not None and parsed.error.startswith("malformed: ")


def test_bytes_that_are_not_utf8_in_xml_are_malformed() -> None:
    parsed = parse_sitemap(urlset(url("http://a.test/1") + "<url><loc>X</loc></url>").replace(
        b">X<", b">\xff\xfe<"
    ))  # fmt: skip
    assert [e.loc for e in parsed.entries] == ["http://a.test/1"]
    assert parsed.error is not None and parsed.error.startswith("malformed: not well-formed")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<rss version='2.0'><channel/></rss>", "not_a_sitemap: the root element is <rss>"),
        (b"<html><body>hi</body></html>", "not_a_sitemap: the root element is <html>"),
        (b"", "malformed: no element found: line 1, column 0"),
        (b"\x1f\x8bnot gzip at all", "bad_gzip: Error -3 while decompressing data: "),
    ],
)
def test_what_is_no_sitemap_says_so(body: bytes, reason: str) -> None:
    parsed = parse_sitemap(body)
    assert parsed.entries == () and parsed.error is not None
    assert parsed.error.startswith(reason)


def test_a_gzip_cut_short_keeps_its_entries_and_says_so() -> None:
    parsed = parse_sitemap(gzip.compress(urlset(FULL))[:-8])
    assert len(parsed.entries) == 1 and parsed.error == "bad_gzip: the gzip stream ends early"


def test_more_than_the_cap_of_urls_is_cut_with_a_reason() -> None:
    body = urlset("".join(url(f"http://a.test/{i}") for i in range(12)))
    parsed = parse_sitemap(body, max_urls=10)
    assert len(parsed.entries) == 10 and parsed.entries[-1].loc == "http://a.test/9"
    assert parsed.error == "too_many_urls: more than 10 entries, the rest ignored"


def test_the_protocols_cap_of_50000_urls() -> None:
    body = urlset("".join(url(f"http://a.test/{i}") for i in range(MAX_URLS + 10)))
    parsed = parse_sitemap(body)
    assert len(parsed.entries) == MAX_URLS
    assert parsed.error == f"too_many_urls: more than {MAX_URLS} entries, the rest ignored"
    text = parse_sitemap("".join(f"http://a.test/{i}\n" for i in range(MAX_URLS + 1)).encode())
    assert len(text.entries) == MAX_URLS and text.error is not None


def _bomb(uncompressed: int) -> bytes:
    """A gzip file of ``uncompressed`` bytes (a urlset start, then spaces) made of
    1 MiB members, so it is made in milliseconds: about 1 KiB per MiB."""
    member = gzip.compress(b" " * (1 << 20), 9)
    return gzip.compress(b"<urlset>" + b" " * 1000) + member * (uncompressed >> 20)


def test_a_gzip_bomb_costs_the_cap_not_its_size() -> None:
    bomb = _bomb(1 << 30)  # 1 GiB uncompressed, about 1 MiB sent
    assert len(bomb) < 2 << 20
    tracemalloc.start()
    try:
        parsed = parse_sitemap(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert parsed.error == f"too_large: over {MAX_BYTES} bytes uncompressed, the rest ignored"
    assert parsed.bytes == MAX_BYTES + 1
    assert peak < 4 << 20  # streamed: a few reads in memory, never the 50 MiB


def test_a_plain_file_over_the_cap_is_cut_too() -> None:
    body = urlset(url("http://a.test/1") + " " * 5000)
    parsed = parse_sitemap(body, max_bytes=2000)
    assert parsed.error == "too_large: over 2000 bytes uncompressed, the rest ignored"
    assert [e.loc for e in parsed.entries] == ["http://a.test/1"]


def test_a_zlib_stream_is_no_gzip() -> None:
    parsed = parse_sitemap(zlib.compress(urlset(FULL)))
    assert parsed.entries == () and parsed.error == "not_a_sitemap: no URL line in the text"


@given(st.binary(max_size=300))
def test_any_bytes_give_a_file_never_an_exception(body: bytes) -> None:
    parsed = parse_sitemap(body, max_bytes=200)
    assert parsed.bytes <= 201
    assert parsed.error is not None or parsed.kind is not None


def test_declared_sitemaps_are_the_sitemap_lines_of_robots_txt() -> None:
    body = (
        b"User-agent: *\nSitemap: http://a.test/s.xml\nDisallow: /x\n"
        b"sitemap:http://a.test/s.xml # again\nSITEMAP :  https://cdn.test/s2.xml\n"
        b"Sitemap: /relative.xml\nSitemaps: http://a.test/no.xml\n"
    )
    assert declared_sitemaps(body) == ("http://a.test/s.xml", "https://cdn.test/s2.xml")
    many = b"".join(b"Sitemap: http://a.test/%d.xml\n" % i for i in range(20))
    assert len(declared_sitemaps(many, limit=5)) == 5


@pytest.mark.parametrize(
    ("listed", "allowed"),
    [
        ("http://a.test/catalog/x.html", True),
        ("http://a.test/catalog/deep/y", True),
        ("http://a.test/catalog", False),  # the directory's own URL is above it
        ("http://a.test/other/x.html", False),
        ("https://a.test/catalog/x.html", False),  # another scheme
        ("http://a.test:8080/catalog/x.html", False),  # another port
        ("http://b.test/catalog/x.html", False),
        ("http://a.test:80/catalog/x.html", True),  # the default port spelt out
    ],
)
def test_a_sitemap_lists_only_urls_under_its_directory(listed: str, allowed: bool) -> None:
    assert Location.of("http://a.test/catalog/sitemap.xml").allows(listed) is allowed


def test_robots_txt_grants_its_whole_origin_across_hosts() -> None:
    """The protocol's cross-submission: a sitemap on another host, named by a.test's
    robots.txt, may list any a.test URL, and its own directory's."""
    where = Location.of("http://cdn.test/maps/a.xml", granted="http://a.test")
    assert where.allows("http://a.test/anything")
    assert where.allows("http://cdn.test/maps/p")
    assert not where.allows("http://cdn.test/other")
    assert not where.allows("http://c.test/x")
    assert where.same_site("http://cdn.test/elsewhere.xml")
    assert not where.same_site("http://a.test/s.xml")
