"""The result sink over the wire: ``ResultSink`` calls as JSON, and their replay.

A worker of a cluster crawl (issue #12) does not write SQLite: each ``ResultSink`` call
its engine makes (a page, a refusal, a host's state, a frontier row's state) becomes one
*op*, a JSON array ``[name, args]``, appended to a Redis stream by the fenced commit
(``core.cluster.scripts``); the collector (``core.cluster.collector``) reads the streams
and replays the ops on the one ``core.storage.store.Store`` of the crawl. The ops are the
calls, so the crawl file is written by the same code, with the same schema, whatever
ran the crawl.

Encoding: the records (``PageRecord``, ``BlockedRecord``, ``HostRecord``,
``FrontierRow``, ``SitemapRecord``, ``SitemapUrlRecord``) as arrays of their fields in
declaration order (``dataclasses.fields``), tuples as arrays; times stay epoch seconds
(``float``). ``decode_op`` checks the name and the shapes and raises ``WireError`` on
anything else (a stream written by another version, or by hand).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from math import isfinite
from operator import attrgetter
from typing import Any, Final, Literal, TypeVar, cast

from crawldeck.core.errors import CrawldeckError
from crawldeck.core.protocols import ResultSink
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

#: The op names: the ``ResultSink`` methods that write.
OP_NAMES: Final = frozenset(
    {
        "enqueue_urls",
        "record_page",
        "fail_urls",
        "record_blocked",
        "mark",
        "upsert_host",
        "record_sitemap",
    }
)

_R = TypeVar(
    "_R", PageRecord, BlockedRecord, HostRecord, FrontierRow, SitemapRecord, SitemapUrlRecord
)
_RECORDS: Final = (
    PageRecord, BlockedRecord, HostRecord, FrontierRow, SitemapRecord, SitemapUrlRecord
)  # fmt: skip
_GETTERS: Final = {cls: attrgetter(*(f.name for f in fields(cls))) for cls in _RECORDS}


class WireError(CrawldeckError):
    """An op that is not one this version writes (its name, arity or field shapes)."""


#: The JSON value types of a record field type (an annotation of the records, without
#: ``| None``). Exact types: ``True`` is no int here.
_TYPES: Final[dict[str, frozenset[type]]] = {
    "str": frozenset({str}),
    "bool": frozenset({bool}),
    "int": frozenset({int}),
    "float": frozenset({int, float}),
    "tuple[str, ...]": frozenset({list}),
}


def _fits(kind: str, value: Any) -> bool:
    """Whether JSON value ``value`` is of the record field type ``kind`` (``str``,
    ``int | None``, ``tuple[str, ...]`` ...). A value SQLite cannot bind (an array, an
    object) would fail the collector's store for good; NaN would be stored as NULL,
    refused by a NOT NULL column."""
    base = kind.removesuffix(" | None")
    if value is None:
        return base != kind
    t = type(value)
    if t not in _TYPES[base]:
        return False
    if t is float:
        return isfinite(value)
    return t is not list or all(type(v) is str for v in value)


@dataclass(frozen=True, slots=True)
class _Schema:
    """A record class's fields: ``fields`` ``(name, type, JSON types)`` in order,
    ``types`` the JSON types alone (for one ``map`` over a record's values), and the
    indexes of the fields that may hold a float (``floats``: NaN and infinities are
    refused) or an array (``arrays``: of strings only, made a tuple)."""

    fields: tuple[tuple[str, str, frozenset[type]], ...]
    types: tuple[frozenset[type], ...]
    floats: tuple[int, ...]
    arrays: tuple[int, ...]


def _schema(cls: type[Any]) -> _Schema:
    """The ``_Schema`` of record class ``cls``."""
    schema = []
    for f in fields(cls):
        kind = str(f.type)
        base = kind.removesuffix(" | None")
        schema.append((f.name, kind, _TYPES[base] | ({type(None)} if base != kind else set())))
    return _Schema(
        fields=tuple(schema),
        types=tuple(types for _n, _k, types in schema),
        floats=tuple(i for i, (_n, _k, types) in enumerate(schema) if float in types),
        arrays=tuple(i for i, (_n, _k, types) in enumerate(schema) if list in types),
    )


_SCHEMAS: Final = {cls: _schema(cls) for cls in _RECORDS}


def _record(cls: type[_R], value: Any) -> _R:
    """``cls`` from the array of its fields (``redirects`` back to a tuple). The
    types of all fields are checked in one ``map`` (the collector decodes every
    frontier row a page found: issue #23 item 3), then the floats and arrays alone.

    Raises:
        WireError: not an array of the fields, or a field of another type.
    """
    schema = _SCHEMAS[cls]
    if type(value) is not list or len(value) != len(schema.types):
        raise WireError(f"{cls.__name__}: expected an array of {len(schema.types)} fields")
    if not all(map(frozenset.__contains__, schema.types, map(type, value))):
        raise _refusal(cls, schema, value)
    for i in schema.floats:
        item = value[i]
        if type(item) is float and not isfinite(item):
            raise _refusal(cls, schema, value)
    if not schema.arrays:
        return cls(*value)
    args: list[Any] = list(value)
    for i in schema.arrays:
        item = value[i]
        if type(item) is list:
            if not all(type(v) is str for v in item):
                raise _refusal(cls, schema, value)
            args[i] = tuple(item)
    return cls(*args)


def _refusal(cls: type[Any], schema: _Schema, value: list[Any]) -> WireError:
    """The ``WireError`` naming the first field of ``value`` that does not fit."""
    for (name, kind, _types), item in zip(schema.fields, value, strict=True):
        if not _fits(kind, item):
            return WireError(f"{cls.__name__}.{name}: expected {kind}, got {str(item)[:40]}")
    return WireError(f"{cls.__name__}: a field does not fit")


def _rows(value: Any) -> tuple[FrontierRow, ...]:
    if not isinstance(value, list):
        raise WireError("frontier rows: expected an array")
    rows = tuple(_record(FrontierRow, row) for row in value)
    for row in rows:
        if row.state not in FRONTIER_STATES:
            raise WireError(f"frontier row {row.key[:40]!r}: bad state {row.state!r}")
    return rows


def values(
    rec: PageRecord | BlockedRecord | HostRecord | FrontierRow | SitemapRecord | SitemapUrlRecord,
) -> list[Any]:
    """``rec``'s fields in declaration order, as JSON takes them (``dataclasses.astuple``
    without its deep copy, which cost a worker a tenth of its time)."""
    return list(_GETTERS[type(rec)](rec))


def op_enqueue(rows: Sequence[FrontierRow]) -> list[Any]:
    """The op of ``ResultSink.enqueue_urls(rows)``."""
    return ["enqueue_urls", [[values(row) for row in rows]]]


def op_record_page(
    page: PageRecord,
    *,
    key: str,
    links: Sequence[tuple[str, str]],
    new_rows: Sequence[FrontierRow],
    state: Literal["done", "failed", "queued"],
    next_url: str | None,
    next_host: str | None,
    redirects: Sequence[str],
    anchors: Mapping[str, str] | None = None,
) -> list[Any]:
    """The op of ``ResultSink.record_page`` (its arguments, see ``Store.record_page``);
    a link from the page's own URL is sent as its target alone (most are: a page's
    outlinks), others as ``[from, to]`` pairs; the links' anchor text, when any, as a
    ninth argument (an object: target URL -> text)."""
    own = page.url
    args: list[Any] = [
        values(page),
        key,
        [to if start == own else [start, to] for start, to in links],
        [values(row) for row in new_rows],
        state,
        next_url,
        next_host,
        list(redirects),
    ]
    if anchors:
        args.append(dict(anchors))
    return ["record_page", args]


def _edge(own: Any, edge: Any) -> tuple[str, str]:
    """A link of a page op: a target alone is a link from the page's own URL ``own``."""
    if isinstance(edge, str):
        return str(own), edge
    start, to = edge
    return str(start), str(to)


def op_fail_urls(urls: Sequence[tuple[str, str]], error: str) -> list[Any]:
    """The op of ``ResultSink.fail_urls(urls, error)``."""
    return ["fail_urls", [[list(pair) for pair in urls], error]]


def op_record_blocked(rec: BlockedRecord) -> list[Any]:
    """The op of ``ResultSink.record_blocked(rec)``."""
    return ["record_blocked", [values(rec)]]


def op_mark(
    key: str, state: FrontierState, attempts: int | None, available_at: float | None
) -> list[Any]:
    """The op of ``ResultSink.mark(key, state, attempts=..., available_at=...)``."""
    return ["mark", [key, state, attempts, available_at]]


def op_upsert_host(rec: HostRecord) -> list[Any]:
    """The op of ``ResultSink.upsert_host(rec)``."""
    return ["upsert_host", [values(rec)]]


def op_record_sitemap(rec: SitemapRecord, entries: Sequence[SitemapUrlRecord]) -> list[Any]:
    """The op of ``ResultSink.record_sitemap(rec, entries)``."""
    return ["record_sitemap", [values(rec), [values(entry) for entry in entries]]]


def encode_ops(ops: Sequence[list[Any]]) -> str:
    """Ops as one compact JSON text (one stream entry's payload)."""
    return json.dumps(ops, separators=(",", ":"), ensure_ascii=False)


def decode_ops(text: str | bytes) -> list[list[Any]]:
    """The ops of one stream entry's payload.

    Raises:
        WireError: not a JSON array of ``[name, args]`` arrays with known names.
    """
    try:
        ops = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise WireError(f"not JSON: {exc}") from None
    if not isinstance(ops, list):
        raise WireError("expected an array of ops")
    for op in ops:
        if not (isinstance(op, list) and len(op) == 2 and op[0] in OP_NAMES):
            raise WireError(f"not an op: {str(op)[:80]}")
        if not isinstance(op[1], list):
            raise WireError(f"{op[0]}: expected an array of arguments")
    return cast(list[list[Any]], ops)


def replay(op: Sequence[Any], sink: ResultSink) -> None:
    """Make the ``ResultSink`` call ``op`` stands for on ``sink``.

    Raises:
        WireError: the op's arguments do not have the shapes its call takes.
        StoreError: from ``sink`` (see ``core.storage.store.Store``).
    """
    name, args = op[0], op[1]
    try:
        if name == "enqueue_urls":
            sink.enqueue_urls(_rows(args[0]))
        elif name == "record_page":
            page, key, links, new_rows, state, next_url, next_host, hops, *more = args
            anchors = more.pop() if len(more) == 1 else None
            if more or not (
                anchors is None
                or (isinstance(anchors, dict) and all(isinstance(v, str) for v in anchors.values()))
            ):
                raise WireError("record_page: anchors must be an object of strings")
            if state not in ("done", "failed", "queued"):
                raise WireError(f"record_page: bad state {state!r}")
            if not (_fits("str | None", next_url) and _fits("str | None", next_host)):
                raise WireError("record_page: next_url and next_host must be strings or null")
            if state == "queued" and not (next_url and next_host):
                raise WireError("record_page: state 'queued' needs next_url and next_host")
            sink.record_page(
                _record(PageRecord, page),
                key=str(key),
                links=[_edge(page[0], edge) for edge in links],
                new_rows=_rows(new_rows),
                state=state,
                next_url=next_url,
                next_host=next_host,
                redirects=tuple(str(u) for u in hops),
                anchors=anchors,
            )
        elif name == "fail_urls":
            pairs, error = args
            sink.fail_urls([(str(k), str(u)) for k, u in pairs], str(error))
        elif name == "record_blocked":
            sink.record_blocked(_record(BlockedRecord, args[0]))
        elif name == "mark":
            key, state, attempts, available_at = args
            if state not in FRONTIER_STATES:
                raise WireError(f"mark: bad state {state!r}")
            if not (_fits("int | None", attempts) and _fits("float | None", available_at)):
                raise WireError("mark: attempts must be an integer, available_at a number")
            sink.mark(str(key), state, attempts=attempts, available_at=available_at)
        elif name == "upsert_host":
            sink.upsert_host(_record(HostRecord, args[0]))
        elif name == "record_sitemap":
            if not isinstance(args[1], list):
                raise WireError("record_sitemap: expected an array of URL rows")
            sink.record_sitemap(
                _record(SitemapRecord, args[0]),
                [_record(SitemapUrlRecord, row) for row in args[1]],
            )
        else:
            raise WireError(f"unknown op {name!r}")
    except (ValueError, TypeError, IndexError) as exc:
        raise WireError(f"{name}: {exc}") from None


__all__ = [
    "OP_NAMES",
    "WireError",
    "decode_ops",
    "encode_ops",
    "op_enqueue",
    "op_fail_urls",
    "op_mark",
    "op_record_blocked",
    "op_record_page",
    "op_record_sitemap",
    "op_upsert_host",
    "replay",
    "values",
]
