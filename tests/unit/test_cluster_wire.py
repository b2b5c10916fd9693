"""The result sink over the wire (``core.cluster.wire``): every op comes back as the
call it stands for, with equal records (Hypothesis: unicode URLs, ``None`` fields,
empty tuples), through the UTF-8 bytes a Redis stream holds; anything else is a
one-line ``WireError``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.cluster import wire
from crawldeck.core.records import (
    FRONTIER_STATES,
    BlockedRecord,
    FrontierRow,
    FrontierState,
    HostRecord,
    PageRecord,
    SitemapRecord,
    SitemapUrlRecord,
)

Call = tuple[str, tuple[Any, ...], dict[str, Any]]


def _frozen(value: Any) -> Any:
    """Sequences as tuples (a caller passes lists, the replay tuples: the same call)."""
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


class Recording:
    """A ``ResultSink`` that records each call with its arguments."""

    def __init__(self) -> None:
        self.calls: list[Call] = []

    def _add(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append((name, _frozen(args), {k: _frozen(v) for k, v in sorted(kwargs.items())}))

    def enqueue_urls(self, rows: Sequence[FrontierRow]) -> None:
        self._add("enqueue_urls", rows)

    def record_page(
        self,
        page: PageRecord,
        *,
        key: str,
        links: Sequence[tuple[str, str]],
        new_rows: Sequence[FrontierRow],
        state: Literal["done", "failed", "queued"],
        next_url: str | None = None,
        next_host: str | None = None,
        redirects: Sequence[str] = (),
        anchors: Mapping[str, str] | None = None,
    ) -> None:
        self._add(
            "record_page", page, key=key, links=links, new_rows=new_rows, state=state,
            next_url=next_url, next_host=next_host, redirects=redirects, anchors=anchors,
        )  # fmt: skip

    def fail_urls(self, urls: Sequence[tuple[str, str]], error: str) -> None:
        self._add("fail_urls", urls, error)

    def record_blocked(self, rec: BlockedRecord) -> None:
        self._add("record_blocked", rec)

    def mark(
        self,
        key: str,
        state: FrontierState,
        *,
        attempts: int | None = None,
        available_at: float | None = None,
    ) -> None:
        self._add("mark", key, state, attempts=attempts, available_at=available_at)

    def upsert_host(self, rec: HostRecord) -> None:
        self._add("upsert_host", rec)

    def record_sitemap(self, rec: SitemapRecord, entries: Sequence[SitemapUrlRecord]) -> None:
        self._add("record_sitemap", rec, entries)

    def pages_added(self) -> dict[str, int]:
        return {}

    def blocked_added(self) -> dict[str, int]:
        return {}


# ------------------------------------------------------------------ strategies

text = st.text(max_size=30)  # any code point but surrogates: UTF-8 can carry them
urls = st.builds(lambda h, p: f"http://{h}/{p}", st.text(min_size=1, max_size=12), text)
maybe_text = st.none() | text
ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
small = st.integers(min_value=0, max_value=10**6)
seconds = st.floats(allow_nan=False, allow_infinity=False)
maybe_seconds = st.none() | seconds
states = st.sampled_from(sorted(FRONTIER_STATES))

pages = st.builds(
    PageRecord, url=urls, final_url=st.none() | urls, host=text, depth=small,
    status=st.none() | st.integers(100, 599), content_type=maybe_text, bytes=small,
    elapsed_ms=seconds, fetched_at=seconds, rendered=st.booleans(), error=maybe_text,
    noindex=st.booleans(),
)  # fmt: skip
rows = st.builds(
    FrontierRow, key=urls, url=urls, host=text, depth=small, priority=small, state=states,
    available_at=seconds, attempts=small, redirects=st.tuples() | st.lists(urls).map(tuple),
    via=st.none() | urls,
)  # fmt: skip
blocked = st.builds(BlockedRecord, url=urls, host=text, reason=text, detail=text, at=seconds)
hosts = st.builds(
    HostRecord, host=text, ip=maybe_text, robots_status=maybe_text,
    robots_expires_at=maybe_seconds, crawl_delay_ms=maybe_seconds, delay_ms=seconds,
    backoff_attempts=small, backoff_until=maybe_seconds, pages_fetched=ints, state=text,
    backoff_started=maybe_seconds, learnt_delay_ms=maybe_seconds,
)  # fmt: skip
sitemaps = st.builds(
    SitemapRecord, url=urls, host=text, fetched_at=seconds, status=st.none() | small,
    kind=maybe_text, urls=small, error=maybe_text,
)  # fmt: skip
sitemap_urls = st.builds(
    SitemapUrlRecord, url=urls, sitemap=urls, lastmod=maybe_seconds, changefreq=maybe_text,
    priority=st.none() | st.floats(0.0, 1.0),
)  # fmt: skip


@st.composite
def page_calls(draw: st.DrawFn) -> tuple[list[Any], Call]:
    page = draw(pages)
    key = draw(urls)
    links = draw(st.lists(st.tuples(urls, urls), max_size=3))
    new_rows = draw(st.lists(rows, max_size=3))
    state = draw(st.sampled_from(["done", "failed", "queued"]))
    hop = draw(urls) if state == "queued" else draw(st.none() | urls)
    next_host = draw(text.filter(bool)) if state == "queued" else draw(maybe_text)
    redirects = draw(st.lists(urls, max_size=3))
    anchors = draw(st.none() | st.dictionaries(urls, text, min_size=1, max_size=3))
    sink = Recording()
    kwargs: dict[str, Any] = dict(
        key=key, links=links, new_rows=new_rows, state=state, next_url=hop,
        next_host=next_host, redirects=redirects, anchors=anchors,
    )  # fmt: skip
    sink.record_page(page, **kwargs)
    return wire.op_record_page(page, **kwargs), sink.calls[0]


def _direct(name: str, *args: Any, **kwargs: Any) -> Call:
    sink = Recording()
    getattr(sink, name)(*args, **kwargs)
    return sink.calls[0]


def _mark(key: str, state: str, attempts: int | None, at: float | None) -> tuple[list[Any], Call]:
    op = wire.op_mark(key, state, attempts, at)  # type: ignore[arg-type]
    return op, _direct("mark", key, state, attempts=attempts, available_at=at)


ops = st.one_of(
    st.lists(rows, max_size=4).map(lambda rs: (wire.op_enqueue(rs), _direct("enqueue_urls", rs))),
    page_calls(),
    st.tuples(st.lists(st.tuples(urls, urls), max_size=3), text).map(
        lambda a: (wire.op_fail_urls(a[0], a[1]), _direct("fail_urls", a[0], a[1]))
    ),
    blocked.map(lambda r: (wire.op_record_blocked(r), _direct("record_blocked", r))),
    st.builds(_mark, urls, states, st.none() | small, maybe_seconds),
    hosts.map(lambda r: (wire.op_upsert_host(r), _direct("upsert_host", r))),
    st.tuples(sitemaps, st.lists(sitemap_urls, max_size=3)).map(
        lambda a: (wire.op_record_sitemap(a[0], a[1]), _direct("record_sitemap", a[0], a[1]))
    ),
)


@given(st.lists(ops, min_size=1, max_size=5))
def test_every_op_comes_back_as_its_call(cases: list[tuple[list[Any], Call]]) -> None:
    payload = wire.encode_ops([op for op, _ in cases]).encode("utf-8")  # as Redis holds it
    sink = Recording()
    for op in wire.decode_ops(payload):
        wire.replay(op, sink)
    assert sink.calls == [call for _, call in cases]


def test_records_come_back_equal_with_none_and_empty_fields() -> None:
    """One fixed case beside the properties: the records compare equal, field types kept
    (``redirects`` a tuple again, ``None`` kept, ints and floats apart)."""
    row = FrontierRow("k", "http://é.test/ü", "é.test", 0, 1, redirects=(), via=None)
    page = PageRecord(
        "http://é.test/ü", None, "é.test", 0, None, None, 0, 0, 0.5, False, None, True
    )
    sink = Recording()
    ops = [
        wire.op_enqueue([row]),
        wire.op_record_page(page, key="k", links=(), new_rows=(row,), state="failed",
                            next_url=None, next_host=None, redirects=()),
    ]  # fmt: skip
    for op in wire.decode_ops(wire.encode_ops(ops)):
        wire.replay(op, sink)
    (_, (rows,), _), (_, (got,), kwargs) = sink.calls
    assert rows == (row,) and rows[0].redirects == () and rows[0].via is None
    assert got == page and type(got.elapsed_ms) is int and type(got.fetched_at) is float
    assert kwargs["new_rows"] == (row,) and kwargs["next_url"] is None


PAGE = ["http://a.test/", None, "a.test", 0, 200, "text/html", 1, 1.0, 1.0, False, None, False]
PAGE += [None] * 12  # the issue #13 fields (WARC location, digests, title, ...)
ROW = ["k", "http://a.test/", "a.test", 0, 1, "queued", 0.0, 0, [], None, 0.0, 1]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("{not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        ('{"op": 1}', "expected an array of ops"),
        ('[["drop_tables", []]]', "not an op"),
        ('[["mark"]]', "not an op"),
        ('[["mark", "k"]]', "mark: expected an array of arguments"),
        ('[["mark", ["k", "done"]]]', "mark:"),
        ('[["mark", ["k", "bogus", null, null]]]', "mark: bad state 'bogus'"),
        ('[["mark", ["k", "done", [1], null]]]', "attempts must be an integer"),
        ('[["mark", ["k", "done", null, NaN]]]', "available_at a number"),
        ('[["enqueue_urls", []]]', "enqueue_urls:"),
        ('[["enqueue_urls", [[["k"]]]]]', "FrontierRow: expected an array of 12 fields"),
        (json.dumps([["enqueue_urls", [[[*ROW[:5], "gone", *ROW[6:]]]]]]), "bad state 'gone'"),
        ('[["record_blocked", [["u", "h", "r", "d"]]]]', "BlockedRecord: expected an array"),
        ('[["record_blocked", [["u", "h", "r", "d", "now"]]]]', "BlockedRecord.at: expected float"),
        ('[["upsert_host", [[1, 2]]]]', "HostRecord: expected an array of 12 fields"),
        ('[["fail_urls", [[["k"]], "e"]]]', "fail_urls:"),
        ('[["record_page", [1, 2]]]', "record_page:"),
    ],
)  # fmt: skip
def test_a_bad_payload_is_a_one_line_wire_error(payload: str | bytes, message: str) -> None:
    with pytest.raises(wire.WireError) as caught:
        for op in wire.decode_ops(payload):
            wire.replay(op, Recording())
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({0: ["a", "list"]}, "PageRecord.url: expected str"),
        ({4: "200"}, "PageRecord.status: expected int | None"),
        ({9: 1}, "PageRecord.rendered: expected bool"),
        ({6: True}, "PageRecord.bytes: expected int"),
        ({7: None}, "PageRecord.elapsed_ms: expected float"),
    ],
)
def test_a_page_field_of_another_type_is_refused(change: dict[int, Any], message: str) -> None:
    """A value SQLite cannot bind would fail the collector's store for good: refused here."""
    fields = [change.get(i, v) for i, v in enumerate(PAGE)]
    op = ["record_page", [fields, "k", [], [], "done", None, None, []]]
    with pytest.raises(wire.WireError, match=message.replace("|", r"\|")):
        wire.replay(op, Recording())


@pytest.mark.parametrize(
    ("next_url", "next_host", "message"),
    [
        (None, None, "needs next_url and next_host"),
        ("http://a.test/b", None, "needs next_url and next_host"),
        (["x"], "a.test", "must be strings or null"),
    ],
)
def test_a_queued_page_needs_its_next_hop(next_url: Any, next_host: Any, message: str) -> None:
    op = ["record_page", [PAGE, "k", [], [], "queued", next_url, next_host, []]]
    with pytest.raises(wire.WireError, match=message):
        wire.replay(op, Recording())
