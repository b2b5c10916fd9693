"""``crawldeck export DB --mirror DIR [--convert-links]`` (issue #25 item 5): the: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_mirror.py``."""

from __future__ import annotations

from urllib.parse import unquote_to_bytes, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.errors import UrlError
from crawldeck.core.storage.export import ArchivedRecord
from crawldeck.core.storage.mirror import (
    _KEPT,
    NAME_MAX_CHARS,
    _convert,
    _decode,
    _encode,
    _Page,
    mirror_path,
    mirror_url,
)


def test_names_are_safe_and_reversible() -> None:
    for url in (
        "http://h.test/%2E%2E/x",
        "http://h.test/.",
        "http://h.test/a%2Fb",
        "http://h.test/a%00b/%01",
        "http://h.test/" + "x%20" * 200,
        "http://h.test:8080/d/?q=a/b?c",
        "http://h.test/a//b/",
        "http://[::1]:8080/",
        "https://h.test/%",
    ):
        path = mirror_path(url)
        for name in path:
            assert name not in ("", ".", "..")
            assert "/" not in name and "\0" not in name
            assert len(name.encode()) <= NAME_MAX_CHARS + 2 <= 255
            assert all(32 < ord(c) < 127 for c in name)
        # the same host, segments and query, byte for byte once decoded (no scheme kept)
        assert _decoded("http:" + mirror_url(path)) == _decoded(url)
    assert mirror_path("http://h.test/%2E%2E/x") == ("h.test", "%2E%2E", "x")
    assert mirror_path("http://h.test:8080/d/?q=1") == ("h.test:8080", "d", "index.html?q=1")
    assert mirror_path("http://h.test/a%2Fb") == ("h.test", "a%2Fb")
    for bad in ("http://[zz]/", "http://h:99999/", "http:///x", "ftp://h/", "h/x"):
        with pytest.raises(UrlError):  # a crawl file edited by hand: a clear refusal
            mirror_path(bad)
    long = mirror_path("http://h.test/" + "y" * 500)
    assert long == ("h.test", "y" * 240, "%+" + "y" * 238, "%+" + "y" * 22)


def _decoded(url: str) -> tuple[str, tuple[bytes, ...], bytes | None]:
    """``url``'s host, path segments and query as bytes, its escapes decoded."""
    parts = urlsplit(url)
    query = unquote_to_bytes(parts.query) if "?" in url else None
    return parts.netloc, tuple(unquote_to_bytes(s) for s in parts.path.split("/")), query


@given(st.binary(max_size=200), st.sampled_from(["utf-8", "ascii", "cp1252"]))
def test_bytes_a_charset_cannot_decode_come_back_as_they_were(body: bytes, charset: str) -> None:
    """``--convert-links`` rewrites a page's link values in its decoded text: the bytes
    its charset cannot decode are kept (``"replace"`` wrote U+FFFD for each; issue #25 trial 6)."""
    text, kept = _decode(body, charset)
    replaced = body.decode(charset, "replace")
    assert kept == ("\ufffd" in replaced and not _KEPT.search(replaced))
    assert _encode(text, charset, kept) == body or not kept


def test_a_page_with_bad_bytes_keeps_them_through_the_conversion() -> None:
    body = (
        b"<html><head><title>Bad \xff\xfe bytes \xc3\x28</title></head>"
        b'<body>caf\xe9 <a href="/x">x</a></body></html>'
    )
    text, kept = _decode(body, "utf-8")
    assert kept
    assert _encode(text, "utf-8", kept) == body
    out, converted, absolute = _convert(_record(body), PAGE, {}, {}, ())
    assert (converted, absolute) == (0, 1)
    assert out == body.replace(b'"/x"', b'"http://a.test/x"')
    already = "\uf7e9 é".encode() + b"\xff"  # such a character in the page: no keeping
    assert _decode(already, "utf-8") == ("\uf7e9 é\ufffd", False)


PAGE = _Page("http://a.test/dir/p", ("a.test", "dir", "p"), "c-00001.warc.gz", 0, 0, None, None)


def _record(body: bytes, content_type: str = "text/html; charset=utf-8") -> ArchivedRecord:
    return ArchivedRecord([], "response", "", content_type, body, body)


def test_convert_links_changes_the_link_values_and_nothing_else() -> None:
    """As wget's ``-k`` (issue #25 trial 19: the page was serialized again, its doctype
    upper-cased, a ``<head>`` added, lines without a link changed)."""
    body = (
        b"<!doctype html>\n<TITLE>t</TITLE>\n"
        b"<p title=' href=/q'>x</p>\n"  # an attribute's text that reads like a link
        b"<A HREF=/q?a=1&amp;b=2 class=x>q</A>\n"
        b'<a href=\'/r\' href="/ignored">r</a> <img src="/q?a=1&amp;b=2#top" alt="">\n'
        b'<link rel=stylesheet href="style.css">\n'
        b'<a href="https://elsewhere.test/x">away</a>\n'
        b"<script>var s = '<a href=\"/q\">';</script>\n"
        b'<!-- <a href="/q"> -->\n'
    )
    files = {
        "http://a.test/q?a=1&b=2": ("a.test", "q?a=1&b=2"),
        "http://a.test/r": ("a.test", "dir", "r"),
    }
    out, converted, absolute = _convert(_record(body), PAGE, files, {}, ())
    assert (converted, absolute) == (3, 1)
    assert out == (
        b"<!doctype html>\n<TITLE>t</TITLE>\n"
        b"<p title=' href=/q'>x</p>\n"
        b'<A HREF="../q%3Fa=1&amp;b=2" class=x>q</A>\n'
        b'<a href=\'r\' href="/ignored">r</a> <img src="../q%3Fa=1&amp;b=2#top" alt="">\n'
        b'<link rel=stylesheet href="http://a.test/dir/style.css">\n'
        b'<a href="https://elsewhere.test/x">away</a>\n'
        b"<script>var s = '<a href=\"/q\">';</script>\n"
        b'<!-- <a href="/q"> -->\n'
    )


def test_a_base_tag_is_removed_and_its_href_resolves_the_links() -> None:
    body = b'<head><base href="/dir/"><base href="/other/"></head><a href="r">r</a>'
    files = {"http://a.test/dir/r": ("a.test", "dir", "r")}
    out, converted, _ = _convert(_record(body), PAGE, files, {}, ())
    assert converted == 1
    assert out == b'<head></head><a href="r">r</a>'
