"""The writer's operations: the SQL that writes the crawl file, and one frozen dataclass
per operation a ``Store`` call queues (``Enqueue``, ``RecordPage``, ... ``EndRun``),
applied by the writer thread (``core.storage.store.writer``) with its ``apply`` method inside
the batch's transaction; ``Sync``, ``Requeue`` and ``Stop`` are the calls that wait
for the writer (issue #24 item 4: they were int tags dispatched by one ``if`` chain).
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from crawldeck.core.errors import StoreError
from crawldeck.core.policy.simhash import to_signed
from crawldeck.core.records import (
    FRONTIER_STATES,
    BlockedRecord,
    FrontierRow,
    HostRecord,
    PageRecord,
    SitemapRecord,
    SitemapUrlRecord,
    status_class,
    to_iso_utc,
)
from crawldeck.core.storage.store.schema import (
    _FRONTIER_COLUMNS,
    _V2_NAMES,
    TRANSIENT_FAILURE_SQL,
)

_encode_json: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

#: The ``hosts`` row a page's host gets when it has none yet (``hosts.host`` is the
#: parent of ``pages.host``): neutral values, replaced whole by the observer's
#: ``upsert_host`` (within a snapshot interval); a resume reads it as a host with no
#: saved state (no Crawl-delay, no backoff, no pages counted).
_SQL_HOST_PLACEHOLDER: Final = (
    "INSERT OR IGNORE INTO hosts (host, delay_ms, backoff_attempts, pages_fetched, state)"
    " VALUES (?, 0, 0, 0, 'active')"
)

#: A page replaces an earlier row of its URL (the latest response wins: a redirect
#: chain that comes back to a URL with a cookie, a failed URL tried again).
_SQL_PAGE: Final = (
    "INSERT INTO pages (url, final_url, host, depth, status, content_type,"
    " bytes, elapsed_ms, fetched_at, rendered, error, noindex, " + ", ".join(_V2_NAMES) + ","
    " run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?" + ", ?" * len(_V2_NAMES) + ", ?)"
    " ON CONFLICT (url) DO UPDATE SET final_url = excluded.final_url,"
    " host = excluded.host, depth = excluded.depth, status = excluded.status,"
    " content_type = excluded.content_type, bytes = excluded.bytes,"
    " elapsed_ms = excluded.elapsed_ms, fetched_at = excluded.fetched_at,"
    " rendered = excluded.rendered, error = excluded.error, noindex = excluded.noindex, "
    + ", ".join(f"{name} = excluded.{name}" for name in _V2_NAMES)
    + ", run_id = excluded.run_id"
)

_SQL_OLD_PAGE: Final = (
    "SELECT status, bytes, duplicate_of, near_duplicate_of FROM pages WHERE url = ?"
)

#: A URL's cash and in-links grow (``add_scores``): only while it waits (issue #15).
_SQL_ADD_SCORE: Final = (
    "UPDATE frontier SET score = score + ?, inlinks = inlinks + 1"
    " WHERE key = ? AND state IN ('queued', 'spilled')"
)

#: The cash and in-links a URL gathered in memory (``set_scores``), whatever its state.
_SQL_SET_SCORE: Final = "UPDATE frontier SET score = ?, inlinks = ? WHERE key = ?"

#: A link listed twice by one page is one row (the primary key). Heads of multi-row
#: INSERTs (``_insert_rows``): the rows' ``(?, ...)`` groups follow.
_SQL_LINK: Final = "INSERT OR IGNORE INTO links (from_url, to_url) VALUES "

_SQL_LINK_ANCHOR: Final = "INSERT OR IGNORE INTO links (from_url, to_url, anchor) VALUES "

#: A page recorded replaces the links its URL had: a refetch, a cluster result landing
#: twice, a page a rerun requeued (``requeue_failed`` keeps its row until this one).
_SQL_DROP_LINKS: Final = "DELETE FROM links WHERE from_url = ?"

_SQL_VERSION: Final = (
    "INSERT INTO page_versions (url, fetched_at, status, payload_digest, etag, last_modified,"
    " run_id) VALUES (?, ?, ?, ?, ?, ?, ?)"
)

#: A 304 confirms the version in ``pages``: its digest, and the validators the 304
#: sent (RFC 9110 §15.4.5 lets it send new ones) or else the stored ones.
_SQL_VERSION_304: Final = (
    "INSERT INTO page_versions (url, fetched_at, status, payload_digest, etag, last_modified,"
    " run_id) SELECT url, ?, 304, payload_digest, coalesce(?, etag),"
    " coalesce(?, last_modified), ? FROM pages WHERE url = ?"
)

#: A recrawl's pages back in the frontier, in its order (``requeue_for_recrawl``).
_SQL_RECRAWL: Final = (
    "UPDATE frontier SET state = 'spilled', seq = ?, attempts = 0, available_epoch_s = 0"
    " WHERE key = ?"
)

_SQL_SITEMAP: Final = "INSERT OR REPLACE INTO sitemaps VALUES (?, ?, ?, ?, ?, ?, ?)"

_SQL_SITEMAP_URL: Final = "INSERT OR REPLACE INTO sitemap_urls VALUES (?, ?, ?, ?, ?)"

#: The head of a multi-row INSERT of frontier rows (``_insert_rows``).
_SQL_FRONTIER: Final = f"INSERT OR IGNORE INTO frontier ({_FRONTIER_COLUMNS}) VALUES "

_SQL_STATE: Final = "UPDATE frontier SET state = ? WHERE key = ?"

_SQL_NEXT_HOP: Final = (
    "UPDATE frontier SET state = 'queued', url = ?, host = ?, redirects = ?, attempts = 0"
    " WHERE key = ?"
)

_SQL_PAGE_ERROR: Final = "UPDATE pages SET error = ? WHERE url = ?"

#: Failed rows whose failure was transient (see ``Store.requeue_failed``).
_SQL_TRANSIENT_FAILURES: Final = (
    "SELECT f.key, f.host FROM frontier f JOIN pages p ON p.url = f.url"
    f" WHERE f.state IN ('failed', 'done') AND {TRANSIENT_FAILURE_SQL}"
)

_SQL_MARK: Final = (
    "UPDATE frontier SET state = ?, attempts = coalesce(?, attempts),"
    " available_epoch_s = coalesce(?, available_epoch_s) WHERE key = ?"
)

#: ``Readmit``: a row blocked as ``excluded`` queued again, and its ``blocked`` row gone.
_SQL_READMIT_ROW: Final = "UPDATE frontier SET state = 'queued' WHERE key = ? AND state = 'blocked'"
_SQL_READMIT_URL: Final = "DELETE FROM blocked WHERE url = ? AND reason = 'excluded'"

_SQL_BLOCKED: Final = (
    "INSERT OR IGNORE INTO blocked (url, host, reason, detail, blocked_at, run_id)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)

#: Times to the µs and delays to the µs (3 decimals of a ms), not a float's 17
#: digits (issue #25: a trial read ``delay_ms 6.970405578613281``).
_SQL_HOST: Final = (
    "INSERT INTO hosts (host, ip, robots_status, robots_expires_epoch_s, crawl_delay_ms,"
    " delay_ms, backoff_attempts, backoff_until_epoch_s, pages_fetched, state,"
    " backoff_started_epoch_s, learnt_delay_ms) VALUES"
    " (?, ?, ?, round(?, 6), ?, round(?, 3), ?, round(?, 6), ?, ?, round(?, 6), round(?, 3))"
    " ON CONFLICT (host) DO UPDATE SET ip = excluded.ip,"
    " robots_status = excluded.robots_status,"
    " robots_expires_epoch_s = excluded.robots_expires_epoch_s,"
    " crawl_delay_ms = excluded.crawl_delay_ms, delay_ms = excluded.delay_ms,"
    " backoff_attempts = excluded.backoff_attempts,"
    " backoff_until_epoch_s = excluded.backoff_until_epoch_s,"
    " pages_fetched = excluded.pages_fetched, state = excluded.state,"
    " backoff_started_epoch_s = excluded.backoff_started_epoch_s,"
    " learnt_delay_ms = excluded.learnt_delay_ms"
)

#: A run still ``running`` when a new one begins was killed (SIGKILL, power loss).
_SQL_KILLED_RUNS: Final = "UPDATE runs SET status = 'killed' WHERE status = 'running'"

_SQL_BEGIN_RUN: Final = (
    "INSERT INTO runs (id, started_at, finished_at, status, config)"
    " VALUES (?, ?, NULL, 'running', ?)"
)

_SQL_END_RUN: Final = "UPDATE runs SET finished_at = ?, status = ?, stats = ? WHERE id = ?"

_SQL_END_LIVE_HOSTS: Final = "UPDATE hosts SET state = ? WHERE state IN ('active', 'backoff')"


def _check_states(rows: tuple[FrontierRow, ...]) -> None:
    for row in rows:
        if row.state not in FRONTIER_STATES:
            raise StoreError(f"frontier row {row.key!r}: unknown state {row.state!r}")


def _frontier_params(row: FrontierRow, seq: int) -> tuple[Any, ...]:
    return (
        row.key,
        row.url,
        row.host,
        row.depth,
        row.priority,
        row.state,
        row.available_at,
        row.attempts,
        _encode_json(list(row.redirects)) if row.redirects else "[]",
        row.via,
        seq,
        row.score,
        row.inlinks,
    )


#: Rows one INSERT statement carries at most (``_insert_rows``). A page's 50 links were
#: 50 statements, one per row in ``executemany``; 2 since (issue #23: SQLite statements
#: per page of ``tests/unit/test_costs.py``'s crawl from 49.4-49.6 to 9.8-10.1). 32 rows of
#: the frontier's 13 columns stay under the 999 variables of SQLite before 3.32.
ROWS_PER_INSERT: Final = 32


@functools.lru_cache(maxsize=128)
def _values_sql(head: str, columns: int, rows: int) -> str:
    """``head`` (``INSERT ... VALUES ``) followed by ``rows`` groups of ``columns``
    placeholders (remembered: sqlite3 then finds the prepared statement in its cache)."""
    group = "(" + ", ".join(["?"] * columns) + ")"
    return head + ", ".join([group] * rows)


def _insert_rows(conn: sqlite3.Connection, head: str, rows: Sequence[Sequence[Any]]) -> None:
    """Insert ``rows`` (each of the same length) in their order with the INSERT that
    ``head`` begins (``INSERT OR IGNORE INTO t (a, b) VALUES ``), ``ROWS_PER_INSERT`` rows
    a statement: every full chunk through one statement of that size (``executemany``),
    the rest through one statement of its size. SQLite inserts a multi-row VALUES list
    row by row in order, so ``OR IGNORE`` keeps the first of duplicates, as one
    statement per row did (sqlite.org/lang_insert.html).

    Raises:
        sqlite3.Error: as the INSERT would (the writer thread reports it).
    """
    count = len(rows)
    if not count:
        return
    columns = len(rows[0])
    full = count - count % ROWS_PER_INSERT
    if full:
        conn.executemany(
            _values_sql(head, columns, ROWS_PER_INSERT),
            [
                [value for row in rows[i : i + ROWS_PER_INSERT] for value in row]
                for i in range(0, full, ROWS_PER_INSERT)
            ],
        )
    if full < count:
        conn.execute(
            _values_sql(head, columns, count - full),
            [value for row in rows[full:] for value in row],
        )


def _insert_frontier(
    conn: sqlite3.Connection, rows: tuple[FrontierRow, ...], seq: int, keys: list[str]
) -> None:
    """INSERT OR IGNORE ``rows`` with ``seq``, ``seq + 1``, ...; their keys go to ``keys``."""
    _insert_rows(
        conn, _SQL_FRONTIER, [_frontier_params(row, seq + i) for i, row in enumerate(rows)]
    )
    keys.extend([row.key for row in rows])


def _requeue(conn: sqlite3.Connection) -> Counter[str]:
    """``Store.requeue_failed`` in the writer's transaction: the requeued URLs per host."""
    found = conn.execute(_SQL_TRANSIENT_FAILURES).fetchall()
    conn.executemany(
        "UPDATE frontier SET state = 'queued', attempts = attempts + 1 WHERE key = ?",
        [(key,) for key, _ in found],
    )
    return Counter(host for _, host in found)


# --------------------------------------------------------------------------- operations
# One frozen dataclass per writer operation (issue #24 item 4; they were int tags and
# positional tuples dispatched by one ``if`` chain): the store's calls make them, the
# writer thread applies each with ``apply(conn, keys, blocked, totals)`` inside the
# batch's transaction, where ``keys`` gathers the frontier keys committed (they leave
# ``Store``'s pending set), ``blocked`` the ``blocked`` rows added by reason and
# ``totals`` what the ``pages`` rows changed (``Store.pages_added``).


@dataclass(frozen=True, slots=True)
class Enqueue:
    """``Store.enqueue_urls``: new frontier rows, the first with ``seq``."""

    rows: tuple[FrontierRow, ...]
    seq: int

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Insert the rows (a known key keeps its row)."""
        _insert_frontier(conn, self.rows, self.seq, keys)


@dataclass(frozen=True, slots=True)
class RecordPage:
    """``Store.record_page``: a page, its links, the rows it adds (the first with
    ``seq``), its frontier row's new ``state`` (or its redirect chain's next ``hop``:
    URL, host, the chain as JSON) and the run that wrote it."""

    page: PageRecord
    key: str
    links: tuple[tuple[str, str], ...] | tuple[tuple[str, str, str | None], ...]
    rows: tuple[FrontierRow, ...]
    seq: int
    state: str
    hop: tuple[str | None, str | None, str] | None
    run_id: int | None

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Write the page (a 304 of a known page: its version only), its links, its
        rows and its frontier row's state, counting what ``pages`` gained."""
        page, key, links, rows, seq = self.page, self.key, self.links, self.rows, self.seq
        state, hop, run_id = self.state, self.hop, self.run_id
        old = conn.execute(_SQL_OLD_PAGE, (page.url,)).fetchone()
        if page.status == 304 and old is not None:  # not modified: the row stays
            at = to_iso_utc(page.fetched_at)
            conn.execute(_SQL_VERSION_304, (at, page.etag, page.last_modified, run_id, page.url))
            if rows:
                _insert_frontier(conn, rows, seq, keys)
            conn.execute(_SQL_STATE, (state, key))
            return
        if old is None:
            totals["pages"] += 1
        else:
            totals[status_class(old[0])] -= 1
            totals["bytes"] -= old[1] or 0
            totals["duplicates"] -= old[2] is not None
            totals["near_duplicates"] -= old[3] is not None and old[2] is None
        conn.execute(_SQL_DROP_LINKS, (page.url,))
        totals[status_class(page.status)] += 1
        totals["bytes"] += page.bytes
        totals["duplicates"] += page.duplicate_of is not None
        totals["near_duplicates"] += (
            page.near_duplicate_of is not None and page.duplicate_of is None
        )
        fetched_at = to_iso_utc(page.fetched_at)
        conn.execute(_SQL_HOST_PLACEHOLDER, (page.host,))
        conn.execute(
            _SQL_PAGE,
            (
                page.url,
                page.final_url,
                page.host,
                page.depth,
                page.status,
                page.content_type,
                page.bytes,
                page.elapsed_ms,
                fetched_at,
                int(page.rendered),
                page.error,
                int(page.noindex),
                page.warc_file,
                page.warc_offset,
                page.warc_length,
                page.payload_digest,
                page.title,
                page.etag,
                page.last_modified,
                page.content_length,
                page.canonical_url,
                page.duplicate_of,
                None if page.simhash is None else to_signed(page.simhash),
                page.near_duplicate_of,
                run_id,
            ),
        )
        conn.execute(
            _SQL_VERSION,
            (page.url, fetched_at, page.status, page.payload_digest, page.etag,
             page.last_modified, run_id),
        )  # fmt: skip
        if links:
            _insert_rows(conn, _SQL_LINK if len(links[0]) == 2 else _SQL_LINK_ANCHOR, links)
        if rows:
            _insert_frontier(conn, rows, seq, keys)
        if hop is None:
            conn.execute(_SQL_STATE, (state, key))
        else:
            conn.execute(_SQL_NEXT_HOP, (*hop, key))


@dataclass(frozen=True, slots=True)
class FailUrls:
    """``Store.fail_urls``: ``(key, url)`` pairs failed with ``error``."""

    pairs: tuple[tuple[str, str], ...]
    error: str

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Their frontier rows ``failed``, their pages (if any) with ``error``."""
        conn.executemany(_SQL_STATE, [("failed", k) for k, _ in self.pairs])
        conn.executemany(_SQL_PAGE_ERROR, [(self.error, u) for _, u in self.pairs])


@dataclass(frozen=True, slots=True)
class AddScores:
    """``Store.add_scores``: ``(cash, key)`` pairs."""

    pairs: list[tuple[float, str]]

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Add each cash and one in-link to its waiting row."""
        conn.executemany(_SQL_ADD_SCORE, self.pairs)


@dataclass(frozen=True, slots=True)
class SetScores:
    """``Store.set_scores``: ``(cash, inlinks, key)`` triples."""

    triples: list[tuple[float, int, str]]

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Set each row's cash and in-links."""
        conn.executemany(_SQL_SET_SCORE, self.triples)


@dataclass(frozen=True, slots=True)
class Mark:
    """``Store.mark``: a frontier row's new state (``None``: the stored value kept)."""

    state: str
    attempts: int | None
    available_at: float | None
    key: str

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Update the row (none: nothing)."""
        conn.execute(_SQL_MARK, (self.state, self.attempts, self.available_at, self.key))


@dataclass(frozen=True, slots=True)
class Readmit:
    """``Store.readmit_excluded``: ``(key, url)`` of frontier rows an earlier run's
    include/exclude blocked, queued again, their ``excluded`` rows deleted."""

    rows: tuple[tuple[str, str], ...]

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Each row ``queued``; ``blocked``'s count of ``excluded`` less the rows gone."""
        conn.executemany(_SQL_READMIT_ROW, ((key,) for key, _ in self.rows))
        gone = conn.executemany(_SQL_READMIT_URL, ((url,) for _, url in self.rows)).rowcount
        blocked["excluded"] -= gone


@dataclass(frozen=True, slots=True)
class Recrawl:
    """``Store.requeue_for_recrawl``: keys queued again in order, from seq ``first``."""

    keys: tuple[str, ...]
    first: int

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Each row ``queued`` with its new seq."""
        first = self.first
        conn.executemany(_SQL_RECRAWL, ((first + i, k) for i, k in enumerate(self.keys)))


@dataclass(frozen=True, slots=True)
class Blocked:
    """``Store.record_blocked``: a refused URL and the run that refused it."""

    rec: BlockedRecord
    run_id: int | None

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Insert its row unless its URL has one (then not counted)."""
        rec = self.rec
        cur = conn.execute(
            _SQL_BLOCKED,
            (rec.url, rec.host, rec.reason, rec.detail, to_iso_utc(rec.at), self.run_id),
        )
        if cur.rowcount == 1:  # a repeat of a blocked URL is ignored: not counted
            blocked[rec.reason] += 1


@dataclass(frozen=True, slots=True)
class UpsertHost:
    """``Store.upsert_host``: a host's row."""

    rec: HostRecord

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Insert or replace it whole."""
        h = self.rec
        conn.execute(
            _SQL_HOST,
            (
                h.host,
                h.ip,
                h.robots_status,
                h.robots_expires_at,
                h.crawl_delay_ms,
                h.delay_ms,
                h.backoff_attempts,
                h.backoff_until,
                h.pages_fetched,
                h.state,
                h.backoff_started,
                h.learnt_delay_ms,
            ),
        )


@dataclass(frozen=True, slots=True)
class Group:
    """``Store.atomic``: the operations of one block, applied in one transaction."""

    ops: tuple[Op, ...]

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Apply each, in order."""
        for sub in self.ops:
            sub.apply(conn, keys, blocked, totals)


@dataclass(frozen=True, slots=True)
class RecordSitemap:
    """``Store.record_sitemap``: a ``sitemaps`` row and its ``sitemap_urls`` rows."""

    rec: SitemapRecord
    entries: tuple[SitemapUrlRecord, ...]

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Insert or replace them."""
        sm, entries = self.rec, self.entries
        conn.execute(
            _SQL_SITEMAP,
            (sm.url, sm.host, to_iso_utc(sm.fetched_at), sm.status, sm.kind, sm.urls, sm.error),
        )
        conn.executemany(
            _SQL_SITEMAP_URL,
            [
                (e.url, e.sitemap, None if e.lastmod is None else to_iso_utc(e.lastmod),
                 e.changefreq, e.priority)
                for e in entries
            ],
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class SetMeta:
    """``Store.set_meta``: a ``meta`` row's new value (``None``: deleted)."""

    key: str
    value: str | None

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Set or delete the row."""
        if self.value is None:
            conn.execute("DELETE FROM meta WHERE key = ?", (self.key,))
        else:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (self.key, self.value),
            )


@dataclass(frozen=True, slots=True)
class BeginRun:
    """``Store.begin_run``: run ``run_id`` started at ``started_at`` (epoch s) with
    ``config`` (JSON)."""

    run_id: int
    started_at: float
    config: str

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """Earlier runs still ``running`` become ``killed``; the run's row."""
        conn.execute(_SQL_KILLED_RUNS)
        conn.execute(_SQL_BEGIN_RUN, (self.run_id, to_iso_utc(self.started_at), self.config))


@dataclass(frozen=True, slots=True)
class EndRun:
    """``Store.end_run``: run ``run_id`` ended ``at`` (epoch s) with ``status``, the
    live hosts' final state and its ``stats`` (JSON)."""

    at: float
    status: str
    run_id: int
    live_hosts: str | None
    stats: str | None

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        """The run's end; the hosts still active or backing off (``live_hosts``)."""
        conn.execute(_SQL_END_RUN, (to_iso_utc(self.at), self.status, self.stats, self.run_id))
        if self.live_hosts is not None:
            conn.execute(_SQL_END_LIVE_HOSTS, (self.live_hosts,))


#: A writer operation: applied in the batch's transaction.
Op = (
    Enqueue | RecordPage | FailUrls | AddScores | SetScores | Mark | Readmit | Recrawl
    | Blocked | UpsertHost | Group | RecordSitemap | SetMeta | BeginRun | EndRun
)  # fmt: skip


class Waiter:
    """A caller blocked until the writer commits up to its operation."""

    __slots__ = ("event", "result")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.result: Any = None


@dataclass(frozen=True, slots=True)
class Sync:
    """``Store.flush``: commit now and wake ``waiter``."""

    waiter: Waiter


@dataclass(frozen=True, slots=True)
class Requeue:
    """``Store.requeue_failed``: run now (``_requeue``), commit, and wake ``waiter``
    with the requeued URLs per host as its ``result``."""

    waiter: Waiter


@dataclass(frozen=True, slots=True)
class Stop:
    """``Store.close``: commit and stop the writer."""


#: What the writer's queue holds: operations, and the calls that wait for a commit.
Queued = Op | Sync | Requeue | Stop


__all__ = [
    "AddScores",
    "BeginRun",
    "Blocked",
    "EndRun",
    "Enqueue",
    "FailUrls",
    "Group",
    "Mark",
    "Op",
    "Queued",
    "Readmit",
    "RecordPage",
    "RecordSitemap",
    "Recrawl",
    "Requeue",
    "SetMeta",
    "SetScores",
    "Stop",
    "Sync",
    "UpsertHost",
    "Waiter",
]
