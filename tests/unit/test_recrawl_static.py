"""The static docs server's conditional GET (``crawldeck.localweb.static``, RFC 9110 §13):
``ETag`` and ``Last-Modified`` on every file, 304 with no body for a matching
``If-None-Match`` or an ``If-Modified-Since`` not older than the file, If-None-Match
winning; the rules tested directly, then against the real server."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from crawldeck.localweb.static import entity_tag, not_modified

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


class _Versions:
    """The one read ``summarize`` makes of a store: ``page_versions``."""

    def __init__(self, rows: list[tuple[str, float, int | None, str | None, str]]) -> None:
        self.rows = rows

    def page_versions(self) -> list[tuple[str, float, int | None, str | None, str]]:
        return self.rows


def test_a_page_back_after_a_404_is_counted_changed_not_unchanged() -> None:
    """Issue #25 trial 17: a page deleted (404 at a recrawl) and restored read as
    "unchanged" at the next, its digest compared with its last 200's; each visit is
    judged against the visit before it, so a 200 after a 404 is a change."""
    from crawldeck.core.crawl.recrawl import summarize

    html = "text/html"
    store = _Versions([
        ("http://a.test/back", 1.0, 200, "d1", html),
        ("http://a.test/back", 2.0, 404, "d404", html),
        ("http://a.test/back", 3.0, 200, "d1", html),
        ("http://a.test/same", 1.0, 200, "d2", html),
        ("http://a.test/same", 3.0, 200, "d2", html),
        ("http://a.test/gone", 1.0, 200, "d3", html),
        ("http://a.test/gone", 3.0, 404, "d404", html),
    ])  # fmt: skip
    found = summarize(store, 2.5)  # type: ignore[arg-type]
    assert (found.changed, found.unchanged, found.other, found.new) == (1, 1, 1, 0)
