"""The static docs server's conditional GET (``crawldeck.localweb.static``, RFC 9110 §13):
the tests that start a real server on loopback or a process; the others are in
``tests/unit/test_recrawl_static.py``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from crawldeck.localweb.static import StaticSite, entity_tag

MTIME = 1_700_000_000  # 2023-11-14T22:13:20Z


# ------------------------------------------------------------------ the real server


@pytest.fixture
def site(tmp_path: Path) -> Iterator[StaticSite]:
    (tmp_path / "a.html").write_bytes(b"<title>A</title>")
    os.utime(tmp_path / "a.html", (MTIME, MTIME))
    with StaticSite(tmp_path, "127.79.3.1") as served:
        yield served


def test_the_server_answers_conditional_gets_with_304_and_no_body(
    site: StaticSite, tmp_path: Path
) -> None:
    url = site.base_url + "/a.html"
    with httpx.Client(trust_env=False, timeout=10.0) as client:
        first = client.get(url)
        etag, last_modified = first.headers["etag"], first.headers["last-modified"]
        assert (first.status_code, first.content) == (200, b"<title>A</title>")
        assert etag == entity_tag(b"<title>A</title>")
        assert last_modified == "Tue, 14 Nov 2023 22:13:20 GMT"
        by_tag = client.get(url, headers={"If-None-Match": etag})
        by_date = client.get(url, headers={"If-Modified-Since": last_modified})
        for answer in (by_tag, by_date):
            assert (answer.status_code, answer.content) == (304, b"")
            assert answer.headers["etag"] == etag
            assert "content-length" not in answer.headers  # RFC 9110 §8.6
        assert client.get(url, headers={"If-None-Match": '"old"'}).status_code == 200
        (tmp_path / "a.html").write_bytes(b"<title>B</title>")  # same size, same mtime
        os.utime(tmp_path / "a.html", (MTIME, MTIME))
        changed = client.get(url, headers={"If-None-Match": etag})
        assert (changed.status_code, changed.content) == (200, b"<title>B</title>")
        # the date alone cannot see a rewrite within the same second; the tag can
        assert client.get(url, headers={"If-Modified-Since": last_modified}).status_code == 304
    statuses = [a.status for a in site.access_log()]
    assert statuses == [200, 304, 304, 200, 200, 304]
    assert site.body_bytes == 3 * len(b"<title>A</title>")
