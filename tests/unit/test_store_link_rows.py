"""Links and frontier rows go ``ROWS_PER_INSERT`` rows to an INSERT (issue #23): the
tables end up as one ``INSERT OR IGNORE ... VALUES (?, ?, ?)`` per row left them, row
for row and in the same order (rowids compared), duplicates and rows already in the
table included."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.records import FrontierRow, PageRecord
from crawldeck.core.storage.store import Store
from crawldeck.core.storage.store.ops import (
    _SQL_LINK,
    _SQL_LINK_ANCHOR,
    ROWS_PER_INSERT,
    _insert_rows,
)
from crawldeck.core.storage.store.schema import _SQL_LINKS_TABLE

T0 = 1714564800.25
#: The statements each link had before (crawldeck 6827a5a's ``_SQL_LINK*``).
ONE_LINK = "INSERT OR IGNORE INTO links (from_url, to_url) VALUES (?, ?)"
ONE_LINK_ANCHOR = "INSERT OR IGNORE INTO links (from_url, to_url, anchor) VALUES (?, ?, ?)"
SIZES = (0, 1, ROWS_PER_INSERT - 1, ROWS_PER_INSERT, ROWS_PER_INSERT + 1, 2 * ROWS_PER_INSERT + 1)

Link = tuple[str, str] | tuple[str, str, str | None]


def test_sizes_cover_the_chunk_edges() -> None:
    assert SIZES == (0, 1, 31, 32, 33, 65)


def links_table() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(_SQL_LINKS_TABLE)
    return conn


def content(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT rowid, from_url, to_url, anchor FROM links ORDER BY rowid"
    ).fetchall()


def one_at_a_time(before: Sequence[Link], rows: Sequence[Link]) -> list[tuple[Any, ...]]:
    """The table after ``before`` and then ``rows``, one statement per row."""
    with closing(links_table()) as conn:
        for batch in (before, rows):
            for row in batch:
                conn.execute(ONE_LINK if len(row) == 2 else ONE_LINK_ANCHOR, row)
        return content(conn)


def batched(before: Sequence[Link], rows: Sequence[Link]) -> list[tuple[Any, ...]]:
    """The table after ``before`` (one statement per row) and then ``rows`` through
    ``_insert_rows``."""
    with closing(links_table()) as conn:
        for row in before:
            conn.execute(ONE_LINK if len(row) == 2 else ONE_LINK_ANCHOR, row)
        if rows:
            _insert_rows(conn, _SQL_LINK if len(rows[0]) == 2 else _SQL_LINK_ANCHOR, rows)
        return content(conn)


def page_links(count: int, page: str = "http://a.test/") -> list[tuple[str, str, str | None]]:
    """``count`` links of ``page``, every third one listed twice (the first anchor
    wins), every other one without anchor."""
    out: list[tuple[str, str, str | None]] = []
    for i in range(count):
        target = f"http://a.test/p/{i - i % 3 if i % 3 == 2 else i}"
        out.append((page, target, None if i % 2 else f"link {i}"))
    return out


@pytest.mark.parametrize("count", SIZES)
@pytest.mark.parametrize("anchors", [True, False])
def test_edge_sizes(count: int, anchors: bool) -> None:
    rows: list[Link] = page_links(count)
    if not anchors:
        rows = [(a, b) for a, b, _ in page_links(count)]
    # an earlier page's links and one of this page's own already in the table
    before: list[Link] = [
        *page_links(40, "http://b.test/"),
        ("http://a.test/", "http://a.test/p/1", "old"),
    ]
    got = batched(before, rows)
    assert got == one_at_a_time(before, rows)
    if count > 1:  # the duplicate and the row already there were ignored
        assert len(got) < len(before) + count


urls = st.sampled_from([f"http://h{i % 3}.test/{i}" for i in range(12)])
anchor = st.one_of(st.none(), st.text(max_size=3))


@given(
    before=st.lists(st.tuples(urls, urls, anchor), max_size=40),
    rows=st.one_of(
        st.lists(st.tuples(urls, urls, anchor), max_size=3 * ROWS_PER_INSERT + 2),
        st.lists(st.tuples(urls, urls), max_size=3 * ROWS_PER_INSERT + 2),
    ),
)
def test_any_rows_end_as_one_at_a_time(before: list[Link], rows: list[Link]) -> None:
    assert batched(before, rows) == one_at_a_time(before, rows)


# ----------------------------------------------------------- through the Store


def page(url: str) -> PageRecord:
    return PageRecord(
        url=url,
        final_url=url,
        host="a.test",
        depth=1,
        status=200,
        content_type="text/html",
        bytes=100,
        elapsed_ms=1.0,
        fetched_at=T0,
        rendered=False,
        error=None,
        noindex=False,
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "crawl.db", clock=lambda: T0)
    yield s
    s.close()


def record(store: Store, url: str, links: Sequence[tuple[str, str, str | None]]) -> None:
    """Record page ``url`` with ``links`` (the first anchor of a target is its text)."""
    anchors = {to: text for _, to, text in reversed(links) if text is not None}
    store.record_page(
        page(url),
        key=url,
        links=[(a, b) for a, b, _ in links],
        new_rows=[],
        state="done",
        anchors=anchors,
    )


def test_pages_of_every_size_through_the_store(store: Store, tmp_path: Path) -> None:
    """Pages of 0-65 links, duplicates within a page and across pages, a page fetched
    again (its links replaced), in one file: its ``links`` table is the one-row-at-a-
    time statements' table."""
    pages = [(f"http://a.test/{n}", page_links(n, f"http://a.test/{n}")) for n in SIZES]
    pages.append(("http://a.test/65", page_links(33, "http://a.test/65")))  # fetched again
    with closing(links_table()) as ref:
        for url, links in pages:
            anchors = {to: text for _, to, text in reversed(links) if text is not None}
            ref.execute("DELETE FROM links WHERE from_url = ?", (url,))
            for a, b, _ in links:  # the store's rows: an anchor each once the page has one
                if anchors:
                    ref.execute(ONE_LINK_ANCHOR, (a, b, anchors.get(b)))
                else:
                    ref.execute(ONE_LINK, (a, b))
            record(store, url, links)
        expected = [row[1:] for row in content(ref)]
    store.flush()
    with closing(sqlite3.connect(tmp_path / "crawl.db")) as conn:
        got = conn.execute("SELECT from_url, to_url, anchor FROM links ORDER BY rowid").fetchall()
    assert got == expected
    assert len(got) > 65  # the pages' links are there, not an empty table twice


def test_frontier_rows_keep_their_order_and_the_first_of_a_key(store: Store) -> None:
    """65 new rows, a key given twice (the first row stays) and a key already in the
    table: the rows come back in ``seq`` order, as one INSERT per row left them."""
    store.enqueue_urls(
        [FrontierRow(key="k3", url="http://a.test/old", host="a.test", depth=0, priority=0)]
    )
    rows = [
        FrontierRow(key=f"k{i % 60}", url=f"http://a.test/{i}", host="a.test", depth=1, priority=1)
        for i in range(2 * ROWS_PER_INSERT + 1)
    ]
    store.enqueue_urls(rows)
    store.flush()
    loaded = [(r.key, r.url) for r in store.load_frontier()]
    assert loaded == [("k3", "http://a.test/old")] + [
        (f"k{i}", f"http://a.test/{i}") for i in range(60) if i != 3
    ]
