"""``crawldeck export DB --mirror DIR [--convert-links]`` (issue #25 item 5): the: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_mirror.py``."""

from __future__ import annotations

from urllib.parse import unquote_to_bytes, urlsplit

import pytest

from crawldeck.core.errors import UrlError
from crawldeck.core.storage.mirror import NAME_MAX_CHARS, mirror_path, mirror_url


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
