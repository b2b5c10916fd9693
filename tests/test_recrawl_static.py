"""The static docs server's conditional GET (``crawldeck.localweb.static``, RFC 9110 §13):
``ETag`` and ``Last-Modified`` on every file, 304 with no body for a matching
``If-None-Match`` or an ``If-Modified-Since`` not older than the file, If-None-Match
winning; the rules tested directly, then against the real server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest

from crawldeck.localweb.static import StaticSite, entity_tag, not_modified

TAG = entity_tag(b"hello")
MTIME = 1_700_000_000  # 2023-11-14T22:13:20Z


def http_date(epoch_s: float) -> str:
    return format_datetime(datetime.fromtimestamp(epoch_s, UTC), usegmt=True)


# ------------------------------------------------------------------ the rules, directly


def test_entity_tag_is_strong_quoted_and_follows_the_bytes() -> None:
    assert TAG.startswith('"') and TAG.endswith('"') and len(TAG) == 34
    assert not TAG.startswith("W/")
    assert entity_tag(b"hello") == TAG
    assert entity_tag(b"hellp") != TAG


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        (TAG, True),
        (f"W/{TAG}", True),  # weak comparison (§13.1.2)
        (f'"other", {TAG}', True),
        (f'"other" , W/{TAG}', True),
        ("*", True),
        ('"other"', False),
        (TAG[:-2] + '"', False),
        ("", False),
    ],
)
def test_if_none_match(field: str, expected: bool) -> None:
    assert not_modified("GET", {"if-none-match": field}, TAG, MTIME) is expected


def test_if_none_match_only_for_get_and_head() -> None:
    assert not_modified("HEAD", {"if-none-match": TAG}, TAG, MTIME)
    assert not not_modified("POST", {"if-none-match": TAG}, TAG, MTIME)


@pytest.mark.parametrize(
    ("since", "expected"),
    [
        (http_date(MTIME), True),  # not modified after the date
        (http_date(MTIME + 3600), True),
        (http_date(MTIME - 1), False),  # modified one second after it
        ("Tuesday, 14-Nov-23 22:13:20 GMT", True),  # RFC 850 spelling, still valid
        ("not a date", False),
        (f"{http_date(MTIME)}, {http_date(MTIME)}", False),  # two members: ignored
    ],
)
def test_if_modified_since(since: str, expected: bool) -> None:
    assert not_modified("GET", {"if-modified-since": since}, TAG, MTIME) is expected


def test_if_none_match_wins_over_if_modified_since() -> None:
    fresh = http_date(MTIME + 60)
    stale = http_date(MTIME - 60)
    assert not not_modified("GET", {"if-none-match": '"other"', "if-modified-since": fresh},
                            TAG, MTIME)  # fmt: skip
    assert not_modified("GET", {"if-none-match": TAG, "if-modified-since": stale}, TAG, MTIME)


def test_an_unparsable_if_none_match_is_ignored() -> None:
    fresh = http_date(MTIME + 60)
    assert not_modified("GET", {"if-none-match": "no quotes", "if-modified-since": fresh},
                        TAG, MTIME)  # fmt: skip
    assert not not_modified("GET", {"if-none-match": "no quotes"}, TAG, MTIME)


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
