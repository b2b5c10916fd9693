"""The SQLite crawl file: its schema and every read and write of it.

One file per crawl (default ``crawl.db``) in WAL mode with ``synchronous=NORMAL``: a
killed process (SIGKILL, crash) loses at most the batch that was not committed yet; a
power loss may also lose the last committed batches, never consistency.

Writes never block the event loop (style rule 8): the ``record_*``/``enqueue_urls``/
``mark``/``upsert_host``/``begin_run``/``end_run`` calls put an operation on a queue
and return; ONE writer thread applies the operations in order and commits them in
batches, at the latest ``flush_interval_ms`` after the first operation of a batch or
when a batch holds ``MAX_BATCH_OPS`` operations. Every operation is applied whole
inside one transaction, so after a kill the file holds a prefix of the operations: a
page, its outlinks, the frontier rows it adds and its own frontier state change are
there together or not at all.

Only one crawldeck may use a file at a time, whatever name it is opened by (a symlink,
a hard link, ``./x/../c.db``, a bind mount): ``Store`` takes an exclusive ``fcntl.flock``
(BSD lock) on the database file itself, so the lock belongs to the file's inode, not to
a spelling of its path. Two names of one file must never be open together: SQLite
derives the ``-wal`` and ``-shm`` names from the name it is given, so two names mean two
WALs and a corrupt file (sqlite.org/howtocorrupt.html, "Multiple links to the same
file"). The kernel drops the lock when the process dies, so a SIGKILL never leaves a
stale lock, and taking it writes nothing (no side file, so a full disk cannot break it).
flock and SQLite's POSIX ``fcntl`` record locks are independent on local file systems
(Linux flock(2)); on NFS the kernel emulates flock with POSIX locks, but WAL mode does
not work there anyway (sqlite.org/wal.html: "WAL does not work over a network
filesystem"). The holder's pid in the "in use" message is read from ``/proc/locks``;
where it cannot be, the message has no pid.

The descriptor is handled with care because closing ANY descriptor of a file drops
every POSIX lock the process holds on that file (POSIX close(2); sqlite.org/
howtocorrupt.html, "Posix advisory locks canceled by a separate thread doing close()"),
SQLite's locks included: SQLite guards its own descriptors against that, not ours. So
(1) a process-wide registry of the ``(st_dev, st_ino)`` of every file a ``Store`` holds
refuses a second ``Store`` of this process on the same file from a ``stat`` alone,
without opening the file; (2) a ``Store`` closes its descriptor only after its own
SQLite connections are closed; (3) when another descriptor of this process is still
open on the file at that moment (an export reading it, say), the flock is released at
once but the descriptor is parked, and closed by a later ``Store`` open or close once
no other descriptor of this process is open on that file (``/proc/self/fd``).

Schema (version ``SCHEMA_VERSION``; the export contract of docs/architecture.md)::

    pages     url (pk: the latest response), final_url, host (fk hosts.host, indexed),
              depth, status, content_type, bytes, elapsed_ms, fetched_at (TEXT, UTC),
              rendered (0/1),
              error, noindex (0/1); from version 2 (issue #13): warc_file, warc_offset,
              warc_length (the response or revisit record: the file's path from the
              crawl file's directory, a bare name beside it, ``warc_dir``; gzip member
              offset and length in bytes), payload_digest
              (``sha1:BASE32``, indexed), title, etag, last_modified, content_length
              (the header's value, INTEGER), canonical_url, duplicate_of (the URL whose
              payload this one repeats; fk pages.url), simhash (INTEGER, signed 64-bit:
              ``core.simhash.to_signed``), near_duplicate_of (fk pages.url); from
              version 3: run_id (fk runs.id: the run that wrote the row)
    blocked   url (pk), host (indexed), reason, detail, blocked_at (TEXT, UTC), run_id
              (fk runs.id)
    hosts     host (pk), ip, robots_status, robots_expires_epoch_s (REAL),
              crawl_delay_ms, delay_ms, backoff_attempts, backoff_until_epoch_s (REAL),
              pages_fetched, state, backoff_started_epoch_s (REAL), learnt_delay_ms;
              every host of ``pages`` has a row (a page's write adds a placeholder,
              ``_SQL_HOST_PLACEHOLDER``, that the observer's row replaces)
    frontier  key (pk), url, host, depth, priority, state, available_epoch_s (REAL),
              attempts, redirects (JSON list of the URLs requested in the redirect chain
              that led here), via, seq (INTEGER insertion order), score (REAL, OPIC
              cash: ``core.prioritizer``, issue #15; 0 under other orderings), inlinks
              (INTEGER, the fetched pages that linked to it, counted under the cash
              orderings; 1 otherwise); score and inlinks are added on open to a file
              that lacks them
    links     from_url (fk pages.url), to_url (fk pages.url, indexed), pk (from_url,
              to_url): a page's outlinks; a page recorded again replaces them (its
              latest response wins, as its ``pages`` row); anchor (issue #25: the
              link's anchor text, ``core.links.Extracted.anchors``, NULL without
              one, for a redirect's edge and in rows of a crawldeck before it, whose
              files get the column on open)
    sitemaps  url (unique), host, fetched_at (TEXT, UTC), status (HTTP, NULL without an
              answer), kind (urlset, sitemapindex, text), urls (listed and kept), error
              (``reason: detail``; ``core.sitemaps``); created on open if missing
    sitemap_urls url, sitemap (unique together; url indexed), lastmod_at (TEXT, UTC),
              changefreq, priority (REAL): what each sitemap says of each URL
    page_versions url, fetched_at (TEXT, UTC; indexed together), status,
              payload_digest, etag, last_modified, run_id (fk runs.id): one row per
              fetch of a page, every run's, kept when ``pages`` replaces its row; a 304
              is a row of its own with the digest of the version it confirms, and
              leaves ``pages`` as it was (``core.recrawl``)
    runs      id (pk), started_at (TEXT, UTC), finished_at (TEXT, UTC), status,
              config (JSON object), stats (JSON object: the run's figures,
              ``core.stats``; NULL while it runs, for a run killed, and for the runs
              of a crawldeck before it, which get the column on open)
    meta      key (pk), value: ``schema_version``, ``application`` = ``crawldeck``
              (and what ``set_meta`` keeps: ``cluster.*``, the cluster collector's)

Views (version 3, for Datasette and ``sqlite3`` users; ``PAGE_SUMMARY_SQL``,
``HOST_SUMMARY_SQL``, ``BROKEN_LINKS_SQL``): ``page_summary`` (a page with its inlinks
and outlinks), ``host_summary`` (a host's pages by status class, bytes, blocked URLs,
robots.txt and delay) and ``broken_links`` (issue #25 item 4: referring page, link,
status or error, where a redirect pointed, anchor text). A view is made ``IF NOT
EXISTS`` on every open (``_prepare_schema``), so a version-3 file made before a view
gets it the next time a ``Store`` opens it; no version change is needed, as no table
changes but for added columns (``_ADDED_COLUMNS``; ``broken_links`` is made anew when
``links.anchor`` is added). A reader of a file not opened by a ``Store`` since then
(read-only: ``core.export``) reads its links' anchor as NULL (``anchor_select``).

Every time column is in one of two forms, told by its name. ``*_at``: UTC ISO 8601 text
of fixed width with microseconds, ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (e.g.
``2024-05-01T12:00:00.250000Z``; it sorts as text, see ``to_iso_utc``): ``fetched_at``,
``blocked_at``, ``lastmod_at``, ``runs.started_at`` and ``finished_at``. ``*_epoch_s``:
REAL wall-clock seconds since the epoch, the times the engine reads back on resume
(``available_epoch_s``, ``backoff_until_epoch_s``, ``backoff_started_epoch_s``,
``robots_expires_epoch_s``). ``etag`` and ``last_modified`` are the response's header
values as sent. The records keep their Python names (``HostRecord.backoff_until``,
``FrontierRow.available_at``, ``BlockedRecord.at``: epoch seconds).

Foreign keys are declared, for the tools that read them (Datasette links a value to the
row it names), and not enforced: ``PRAGMA foreign_keys`` stays off (SQLite's default),
because a link's ``to_url`` is usually a page not fetched yet (or never: out of scope,
refused), and a page is written before the observer's ``hosts`` row of its host.

Version 3 (issue #14 item 11) is brought from 1 and 2 on open in ONE transaction
(``_upgrade``): a failure or a kill part way leaves the file as it was, of its old
version. ``pages``, ``blocked`` and ``links`` are rebuilt to get their primary and
foreign keys (sqlite.org/lang_altertable.html, "Making Other Kinds Of Table Schema
Changes"), rowids kept (the rowid order is the insertion order some readers use);
the other renamed columns are ``ALTER TABLE ... RENAME COLUMN``. An old row's
``run_id`` is the run whose ``started_at`` is the last at or before the row's time
(runs of one file never overlap: the file is locked), NULL for a row older than every
run. A link listed twice by one page is kept once (the primary key).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import heapq
import json
import logging
import math
import os
import queue
import sqlite3
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, TypedDict

from crawldeck.core.datasette_meta import metadata_path, write_metadata
from crawldeck.core.errors import StoreError, without_url
from crawldeck.core.simhash import to_signed, to_unsigned

log = logging.getLogger("crawldeck.store")

#: The schema this code writes; a file of an older version in ``UPGRADABLE_VERSIONS``
#: is upgraded in place when a ``Store`` opens it, any other version is refused.
SCHEMA_VERSION: Final = 3
#: Versions brought to ``SCHEMA_VERSION`` on open, in one transaction (``_upgrade``):
#: 1 -> 2 the ``pages`` columns of issue #13 (``ALTER TABLE ... ADD COLUMN``, NULL in
#: old rows); 2 -> 3 the keys, names and views of issue #14 item 11.
UPGRADABLE_VERSIONS: Final = frozenset({"1", "2"})
#: A batch is committed when it holds this many operations, even before the interval.
MAX_BATCH_OPS: Final = 1000
#: Operations queued for the writer at which the crawl waits (``Store.room``): bounds
#: the memory the queue holds (a page operation holds its row, outlinks and new
#: frontier rows) and how far the file lags behind the crawl (lost on a kill).
MAX_BACKLOG_OPS: Final = 10_000
#: Rows fetched per ``fetchmany`` by the streaming readers.
READ_BATCH_ROWS: Final = 1000

FrontierState = Literal["queued", "spilled", "in_flight", "done", "failed", "blocked"]
#: Frontier states. ``blocked``: refused at dispatch time (robots.txt), never fetched.
FRONTIER_STATES: Final = frozenset({"queued", "spilled", "in_flight", "done", "failed", "blocked"})

_ISO_FORMAT: Final = "%Y-%m-%dT%H:%M:%S.%fZ"
_encode_json: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


#: ``to_iso_utc``'s last whole second and its text up to the seconds (one tuple,
#: replaced whole: a thread reads a consistent pair).
_iso_second: tuple[float, str] = (-1.5, "")


def to_iso_utc(epoch_s: float) -> str:
    """``epoch_s`` (wall-clock seconds since the epoch) as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``.

    Always UTC, always 27 characters, rounded to the microsecond half to even as
    ``datetime.fromtimestamp`` does, so the text sorts in time order. Example:
    ``to_iso_utc(0.25) == "1970-01-01T00:00:00.250000Z"``. The text up to the seconds
    is formatted once per second (a crawl formats several dates a page; ``strftime``
    cost 3.6-30 us a call).
    """
    fraction, whole = math.modf(epoch_s)
    micros = round(fraction * 1e6)
    if micros >= 1_000_000:
        micros -= 1_000_000
        whole += 1.0
    elif micros < 0:
        micros += 1_000_000
        whole -= 1.0
    global _iso_second
    second, text = _iso_second
    if second != whole:
        text = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _iso_second = (whole, text)
    return f"{text}.{micros:06d}Z"


def from_iso_utc(text: str) -> float:
    """The epoch seconds of a ``to_iso_utc`` string (exact to the microsecond).

    Raises:
        StoreError: ``text`` is not in that format.
    """
    try:
        return datetime.strptime(text, _ISO_FORMAT).replace(tzinfo=UTC).timestamp()
    except ValueError:
        raise StoreError(
            f"not a UTC timestamp of the form YYYY-MM-DDTHH:MM:SS.ffffffZ: {text!r}"
        ) from None


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class PageRecord:
    """One fetched (or finally failed) URL: a row of ``pages``.

    Attributes:
        url: the URL requested. final_url: where it led (a redirect's target, else ``url``).
        host: its host key. depth: link hops from a seed (seed = 0).
        status: the HTTP status, ``None`` when no response came (see ``error``).
        content_type: the Content-Type header ("" or ``None`` when absent).
        bytes: body bytes read. elapsed_ms: fetch time in milliseconds.
        fetched_at: fetch start, wall-clock epoch seconds (stored as UTC ISO text).
        rendered: the page went through a browser. error: a ``reason: detail`` line or
        ``None``. noindex: meta robots / X-Robots-Tag said noindex.
        warc_file, warc_offset, warc_length: the WARC record of the response (file
        name, byte offset and length of its gzip member), ``None`` without one.
        payload_digest: ``sha1:BASE32`` of the payload as transferred.
        title: the HTML ``<title>``. etag, last_modified: those headers as sent.
        content_length: the ``Content-Length`` header as an int (``None``: absent or
        not a number). canonical_url: ``<link rel="canonical">`` resolved and cleaned.
        duplicate_of: the first URL with the same payload digest (a ``revisit``).
        simhash: the page text's 64-bit SimHash, unsigned (stored signed).
        near_duplicate_of: an earlier page of the host within Hamming distance 3.
    """

    url: str
    final_url: str | None
    host: str
    depth: int
    status: int | None
    content_type: str | None
    bytes: int
    elapsed_ms: float
    fetched_at: float
    rendered: bool
    error: str | None
    noindex: bool
    warc_file: str | None = None
    warc_offset: int | None = None
    warc_length: int | None = None
    payload_digest: str | None = None
    title: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    content_length: int | None = None
    canonical_url: str | None = None
    duplicate_of: str | None = None
    simhash: int | None = None
    near_duplicate_of: str | None = None


#: The ``pages`` columns of schema version 2 (issue #13), after ``noindex``, with
#: their SQL types: ``PageRecord``'s fields of the same names, in order.
PAGE_COLUMNS_V2: Final = (
    ("warc_file", "TEXT"),
    ("warc_offset", "INTEGER"),
    ("warc_length", "INTEGER"),
    ("payload_digest", "TEXT"),
    ("title", "TEXT"),
    ("etag", "TEXT"),
    ("last_modified", "TEXT"),
    ("content_length", "INTEGER"),
    ("canonical_url", "TEXT"),
    ("duplicate_of", "TEXT"),
    ("simhash", "INTEGER"),
    ("near_duplicate_of", "TEXT"),
)
_V2_NAMES: Final = tuple(name for name, _ in PAGE_COLUMNS_V2)


@dataclass(frozen=True, slots=True)
class BlockedRecord:
    """A refused URL: a row of ``blocked`` (``url`` is unique; later copies are dropped).

    Attributes:
        url, host: the URL and its host key. reason: a ``traps.BlockReason`` token.
        detail: one line for people. at: wall-clock epoch seconds (stored as UTC ISO text).
    """

    url: str
    host: str
    reason: str
    detail: str
    at: float


@dataclass(frozen=True, slots=True)
class SitemapRecord:
    """A sitemap file read: a row of ``sitemaps`` (``url`` is unique; read again, replaced).

    Attributes:
        url, host: the sitemap's URL and host key. fetched_at: wall-clock epoch seconds
        (stored as UTC ISO text). status: the HTTP status, ``None`` without an answer.
        kind: ``urlset``, ``sitemapindex``, ``text`` or ``None``. urls: entries kept.
        error: a ``reason: detail`` line (``core.sitemaps``, ``core.sitemap_reader``).
    """

    url: str
    host: str
    fetched_at: float
    status: int | None
    kind: str | None
    urls: int
    error: str | None


@dataclass(frozen=True, slots=True)
class SitemapUrlRecord:
    """A URL a sitemap lists: a row of ``sitemap_urls`` (unique with its sitemap).

    Attributes:
        url: the cleaned URL. sitemap: the sitemap's URL. lastmod: epoch seconds (stored
        as UTC ISO text) or ``None``. changefreq: a protocol word or ``None``.
        priority: in [0.0, 1.0] or ``None``.
    """

    url: str
    sitemap: str
    lastmod: float | None
    changefreq: str | None
    priority: float | None


@dataclass(frozen=True, slots=True)
class HostRecord:
    """The saved politeness state of one host: a row of ``hosts`` (``host`` is the key).

    Attributes:
        host: the host key. ip: its address if known. robots_status: ``ok``,
        ``missing``, ``unreachable``, ... robots_expires_at: epoch seconds.
        crawl_delay_ms: robots.txt Crawl-delay in ms or ``None``. delay_ms: the current
        delay in ms. backoff_attempts: consecutive 429/503/timeouts. backoff_until:
        epoch seconds or ``None``. pages_fetched: pages of the host so far.
        state: ``active``, ``backoff``, ``demoted``, ...
        backoff_started: epoch seconds when the current continuous backoff began
        (for demotion after ``demote_after_s``), or ``None``.
        learnt_delay_ms: the delay learnt from 429/503 answers (``Politeness``), in
        ms, or ``None`` (none, or a file written before the column existed).
    """

    host: str
    ip: str | None
    robots_status: str | None
    robots_expires_at: float | None
    crawl_delay_ms: float | None
    delay_ms: float
    backoff_attempts: int
    backoff_until: float | None
    pages_fetched: int
    state: str
    backoff_started: float | None = None
    learnt_delay_ms: float | None = None


@dataclass(frozen=True, slots=True)
class FrontierRow:
    """One admitted URL: a row of ``frontier``.

    Attributes:
        key: the dedupe key (unique). url: the URL to request. host: its host key.
        depth: link hops from a seed. priority: front queue (0 = highest).
        state: one of ``FRONTIER_STATES``. available_at: not before this epoch second.
        attempts: tries made so far. redirects: the URLs requested in the redirect chain
        that led here (stored as a JSON list). via: the page it was found on, if any.
        score: its OPIC cash (``core.prioritizer``; ``0.0`` under other orderings).
        inlinks: the fetched pages that linked to it so far (``FrontierEntry.inlinks``).
    """

    key: str
    url: str
    host: str
    depth: int
    priority: int
    state: str = "queued"
    available_at: float = 0.0
    attempts: int = 0
    redirects: tuple[str, ...] = ()
    via: str | None = None
    score: float = 0.0
    inlinks: int = 1


@dataclass(frozen=True, slots=True)
class SeedOutcome:
    """How one seed of the crawl ended (``Store.seed_outcomes``).

    Attributes:
        url: the seed as requested. state: its frontier state (``done``, ``failed``,
        ``blocked``, ``queued``, ...). status: its page's HTTP status, ``None`` without
        a page or a response. error: its page's error line, if any. blocked: the
        ``blocked`` reason and detail (``"robots: ..."``) when it was refused.
    """

    url: str
    state: str
    status: int | None
    error: str | None
    blocked: str | None


@dataclass(frozen=True, slots=True)
class LinkCheck:
    """One link and what its target got, as a link checker reports it (a row of the
    ``broken_links`` view, or of ``crawldeck links``).

    Attributes:
        from_url: the referring page (a ``pages.url``).
        to_url: the link, resolved against the referring page.
        status: the target's HTTP status, ``None`` without a response or not fetched.
        error: the target's ``pages.error`` (``reason: detail``), ``None`` for a plain
            HTTP status or a target not fetched.
        final_url: where the target led: the broken end (``broken_links``), or the
            target's ``pages.final_url``.
        blocked: why the target was refused untried (``blocked.reason``: ``robots``,
            ``scope``, ...), ``None`` otherwise; a refused target is not broken.
        tried: whether the target was tried: it has a ``pages`` row, or its name did
            not resolve (``BROKEN_BLOCK_REASONS``).
        broken: a row of ``broken_links``, whose ``final_url`` is the broken end (in
            ``crawldeck links`` without ``--broken``, ``final_url`` is the target's
            ``pages.final_url``, a redirect's next hop, and ``broken`` false).
        anchor: the link's anchor text (``links.anchor``), ``None`` without one.
    """

    from_url: str
    to_url: str
    status: int | None
    error: str | None
    final_url: str | None
    blocked: str | None = None
    tried: bool = True
    broken: bool = True
    anchor: str | None = None

    def why(self) -> str:
        """The target's state in a few words: ``HTTP 404``, ``HTTP 301: redirect_loop:
        ...``, the error alone without a response (``connect: ...``, ``dns: ...``),
        ``blocked: robots`` or ``not fetched``; ``(redirected to URL)`` after it when
        ``final_url`` is another URL (a broken link's end, ``broken_links``)."""
        if self.blocked is not None:
            return f"blocked: {self.blocked}"
        if not self.tried:
            return "not fetched"
        error = None if self.error is None else without_url(self.error, self.to_url)
        if self.status is None:
            why = error or "no response"
        elif error is None:
            why = f"HTTP {self.status}"
        else:
            why = f"HTTP {self.status}: {error}"
        if self.final_url is not None and self.final_url != self.to_url and self.broken:
            why += f" (redirected to {self.final_url})"
        return why


@dataclass(frozen=True, slots=True)
class BrokenGroup:
    """Broken links whose targets got the same (``Store.broken_groups``).

    Attributes:
        status: the HTTP status the targets got, ``None`` without a response.
        reason: the reason of their error (``connect``, ``dns``, ``redirect_loop``,
            the ``reason`` of ``reason: detail``), ``None`` for a plain HTTP status.
        count: how many broken links the group holds.
        first: the first of them, by link then referring page.
    """

    status: int | None
    reason: str | None
    count: int
    first: list[LinkCheck]

    def label(self) -> str:
        """``HTTP 404``, ``HTTP 301: redirect_loop``, ``connect``, ``dns``."""
        if self.status is None:
            return self.reason or "no response"
        if self.reason is None:
            return f"HTTP {self.status}"
        return f"HTTP {self.status}: {self.reason}"


class Counts(TypedDict):
    """What ``Store.counts`` returns (committed rows only).

    ``pages``: rows of ``pages``; ``blocked``: rows of ``blocked`` by reason;
    ``queued``, ``in_flight``, ``done``, ``failed``: frontier rows by state (``queued``
    counts the ``spilled`` rows too: they are queued, only not in memory);
    ``frontier_blocked``: frontier rows in state ``blocked``.
    """

    pages: int
    blocked: dict[str, int]
    queued: int
    in_flight: int
    done: int
    failed: int
    frontier_blocked: int


# --------------------------------------------------------------------------- schema

_FRONTIER_COLUMNS: Final = (
    "key, url, host, depth, priority, state, available_epoch_s, attempts, redirects, via, seq"
    ", score, inlinks"
)
#: The tables of version 3 that have their keys in their definition (a file of an older
#: version gets them by a rebuild, ``_upgrade``); the other tables are made by
#: ``_create_schema``. The column order is that of ``PageRecord``, then ``run_id``.
_SQL_PAGES_TABLE: Final = (
    "CREATE TABLE pages (url TEXT PRIMARY KEY NOT NULL, final_url TEXT,"
    " host TEXT NOT NULL REFERENCES hosts (host), depth INTEGER NOT NULL, status INTEGER,"
    " content_type TEXT, bytes INTEGER NOT NULL, elapsed_ms REAL NOT NULL,"
    " fetched_at TEXT NOT NULL, rendered INTEGER NOT NULL, error TEXT,"
    " noindex INTEGER NOT NULL, warc_file TEXT, warc_offset INTEGER, warc_length INTEGER,"
    " payload_digest TEXT, title TEXT, etag TEXT, last_modified TEXT, content_length INTEGER,"
    " canonical_url TEXT, duplicate_of TEXT REFERENCES pages (url), simhash INTEGER,"
    " near_duplicate_of TEXT REFERENCES pages (url), run_id INTEGER REFERENCES runs (id))"
)
_SQL_BLOCKED_TABLE: Final = (
    "CREATE TABLE blocked (url TEXT PRIMARY KEY NOT NULL, host TEXT NOT NULL,"
    " reason TEXT NOT NULL, detail TEXT, blocked_at TEXT NOT NULL,"
    " run_id INTEGER REFERENCES runs (id))"
)
_SQL_LINKS_TABLE: Final = (
    "CREATE TABLE links (from_url TEXT NOT NULL REFERENCES pages (url),"
    " to_url TEXT NOT NULL REFERENCES pages (url), anchor TEXT,"
    " PRIMARY KEY (from_url, to_url))"
)
#: Version 3's indexes beyond the keys: a host's pages and blocked URLs (the
#: ``host_summary`` view, Datasette's "referenced by" counts), a page's inlinks.
_SQL_V3_INDEXES: Final = (
    "CREATE INDEX IF NOT EXISTS pages_host ON pages (host)",
    "CREATE INDEX IF NOT EXISTS blocked_host ON blocked (host)",
    "CREATE INDEX IF NOT EXISTS links_to ON links (to_url)",
)
#: A page with its link counts (the outlinks by the ``links`` primary key, the inlinks
#: by ``links_to``: two index probes a row).
PAGE_SUMMARY_SQL: Final = (
    "CREATE VIEW IF NOT EXISTS page_summary AS SELECT p.url, p.host, p.status, p.title,"
    " p.content_type, p.bytes, p.elapsed_ms, p.depth, p.fetched_at, p.run_id,"
    " (SELECT count(*) FROM links l WHERE l.to_url = p.url) AS inlinks,"
    " (SELECT count(*) FROM links l WHERE l.from_url = p.url) AS outlinks,"
    " p.duplicate_of, p.error FROM pages p"
)
#: A host's pages by status class (``errors``: no response), their bytes, its blocked
#: URLs and its politeness state. A ``WHERE host = ?`` on the view is pushed into the
#: grouped subqueries (SQLite's push-down), so one host costs an index range each.
HOST_SUMMARY_SQL: Final = (
    "CREATE VIEW IF NOT EXISTS host_summary AS SELECT h.host, coalesce(p.pages, 0) AS pages,"
    " coalesce(p.status_2xx, 0) AS status_2xx, coalesce(p.status_3xx, 0) AS status_3xx,"
    " coalesce(p.status_4xx, 0) AS status_4xx, coalesce(p.status_5xx, 0) AS status_5xx,"
    " coalesce(p.errors, 0) AS errors, coalesce(p.bytes, 0) AS bytes,"
    " coalesce(b.blocked, 0) AS blocked, h.robots_status, h.crawl_delay_ms, h.delay_ms,"
    " h.learnt_delay_ms, h.state, h.ip FROM hosts h"
    " LEFT JOIN (SELECT host, count(*) AS pages,"
    " sum(status BETWEEN 200 AND 299) AS status_2xx,"
    " sum(status BETWEEN 300 AND 399) AS status_3xx,"
    " sum(status BETWEEN 400 AND 499) AS status_4xx,"
    " sum(status BETWEEN 500 AND 599) AS status_5xx,"
    " sum(status IS NULL) AS errors, sum(bytes) AS bytes FROM pages GROUP BY host) p"
    " ON p.host = h.host"
    " LEFT JOIN (SELECT host, count(*) AS blocked FROM blocked GROUP BY host) b"
    " ON b.host = h.host"
)
#: The start of a page's ``error`` when its body was read in part (``Recorder``:
#: a truncated result; ``Store.partial_pages``).
PARTIAL_ERROR: Final = "body_too_large"
#: The condition of a broken link's target page ``p``: an HTTP error (4xx, 5xx), no
#: response at all (refused, timeout: ``status`` NULL, ``error`` says which), or a
#: redirect whose chain ended without a page (a loop, too many hops: ``fail_urls``
#: gives the 3xx row the chain's error). As link checkers judge a link (W3C Link
#: Checker, linkchecker): a 2xx, a 3xx that led on, or a 2xx whose body was cut
#: (``error`` ``body_too_large``, a parse cut) is not broken.
BROKEN_TARGET_SQL: Final = (
    "(p.status >= 400 OR p.status IS NULL"
    " OR (p.status BETWEEN 300 AND 399 AND p.error IS NOT NULL))"
)
#: The ``blocked`` reasons that are a broken link's: the name does not resolve (the
#: crawl records it in ``blocked``, not ``pages``: no request was sent). Every other
#: reason is a refusal (robots.txt, scope, a trap rule, a cap): the URL was never
#: tried, so a link to it is not broken.
BROKEN_BLOCK_REASONS: Final = ("dns",)
_BROKEN_REASONS_SQL: Final = "(" + ", ".join(f"'{r}'" for r in BROKEN_BLOCK_REASONS) + ")"
#: Redirects followed back from a broken target (``BROKEN_LINKS_SELECT``): more hops
#: than any chain the crawl follows (``max_redirects``, at most 20 by default's 10).
BROKEN_REDIRECT_HOPS: Final = 30
#: The broken links of the crawl (issue #25 item 4), one row per link on a page whose
#: target is broken, as a link checker reports them (W3C Link Checker, linkchecker):
#: ``from_url`` (the referring page), ``to_url`` (the link as resolved), ``status``
#: (HTTP, NULL without a response), ``error`` (``reason: detail``, NULL for a plain
#: 4xx/5xx) and ``final_url`` (the URL that answered so: ``to_url`` itself, or the end
#: of the redirects it led through; NULL for a name that does not resolve).
#:
#: A broken target is a ``pages`` row of ``BROKEN_TARGET_SQL`` or a ``blocked`` row of
#: ``BROKEN_BLOCK_REASONS``. A redirect that led to one (a 3xx without an error whose
#: ``links`` edge, the one a redirect records, goes to it) is broken too, with the
#: end's status: ``bad`` walks those edges backwards, at most ``BROKEN_REDIRECT_HOPS``.
#: The edges from a redirect are hops, not links on a page, so they are not rows: a
#: chain that failed (every hop has the chain's error) is one row, the link to its
#: first hop. ``anchor`` is the link's anchor text (``links.anchor``). ``CROSS JOIN``
#: fixes the plan (SQLite keeps its join order): one scan of ``pages`` and of
#: ``blocked`` (fewer rows than ``links``), then a ``links_to`` probe and a page's
#: primary key per broken target: never a scan of ``links``.
BROKEN_LINKS_SELECT: Final = (
    "WITH RECURSIVE bad (url, status, error, final_url, hops) AS ("
    " SELECT p.url, p.status, p.error, p.url, 0 FROM pages p"
    f" WHERE {BROKEN_TARGET_SQL}"
    " UNION ALL SELECT b.url, NULL, b.reason || ': ' || b.detail, NULL, 0 FROM blocked b"
    f" WHERE b.reason IN {_BROKEN_REASONS_SQL}"
    " UNION ALL SELECT r.url, bad.status, bad.error, bad.final_url, bad.hops + 1"
    " FROM bad CROSS JOIN links h ON h.to_url = bad.url"
    " CROSS JOIN pages r ON r.url = h.from_url"
    " WHERE r.status BETWEEN 300 AND 399 AND r.error IS NULL"
    f" AND bad.hops < {BROKEN_REDIRECT_HOPS})"
    " SELECT l.from_url, l.to_url, bad.status, bad.error, bad.final_url, l.anchor AS anchor"
    " FROM bad CROSS JOIN links l ON l.to_url = bad.url"
    " CROSS JOIN pages f ON f.url = l.from_url"
    " WHERE f.status IS NULL OR f.status NOT BETWEEN 300 AND 399"
)
BROKEN_LINKS_SQL: Final = "CREATE VIEW IF NOT EXISTS broken_links AS " + BROKEN_LINKS_SELECT


#: ``Store.broken_groups``: each group of the ``broken_links`` view (status, the reason
#: of the error) with its size and its first ``?`` rows, the largest group first.
_SQL_BROKEN_GROUPS: Final = (
    "WITH b AS (SELECT *, CASE WHEN error IS NULL THEN NULL WHEN instr(error, ':') > 0"
    " THEN substr(error, 1, instr(error, ':') - 1) ELSE error END AS reason"
    " FROM broken_links),"
    " g AS (SELECT status, reason, count(*) AS n FROM b GROUP BY status, reason),"
    " r AS (SELECT *, row_number() OVER (PARTITION BY status, reason"
    " ORDER BY to_url, from_url) AS k FROM b)"
    " SELECT g.status, g.reason, g.n, r.from_url, r.to_url, r.status, r.error,"
    " r.final_url, r.anchor FROM g JOIN r ON r.status IS g.status AND r.reason IS g.reason"
    " AND r.k <= ? ORDER BY g.n DESC, g.status, g.reason, r.k"
)


def anchor_select(sql: str, columns: Collection[str]) -> str:
    """``sql``, a SELECT that reads ``l.anchor`` of ``links l`` (``BROKEN_LINKS_SELECT``),
    for a file whose ``links`` has ``columns``: as is, or reading NULL for the anchor
    when the file was made before ``links.anchor`` and not opened by a ``Store`` since
    (a read-only reader does not add the column)."""
    return sql if "anchor" in columns else sql.replace("l.anchor", "NULL")


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
#: Exact duplicates are found by payload digest (``core.archive``'s map, rebuilt from it).
_SQL_DIGEST_INDEX: Final = (
    "CREATE INDEX IF NOT EXISTS pages_payload_digest ON pages (payload_digest)"
    " WHERE payload_digest IS NOT NULL"
)
_SQL_OLD_PAGE: Final = (
    "SELECT status, bytes, duplicate_of, near_duplicate_of FROM pages WHERE url = ?"
)
#: Spilled rows by host, in (priority, seq) order (the frontier window reads a host's
#: rows back best priority first, ``load_spilled``): a partial index, so rows in any
#: other state (nearly all of them) cost it nothing; a row leaves it when its state
#: changes.
_SQL_SPILLED_INDEX: Final = (
    "CREATE INDEX IF NOT EXISTS frontier_spilled_host_priority_seq "
    "ON frontier (host, priority, seq) WHERE state = 'spilled'"
)
#: ``load_spilled``'s read-back position: ``priority * SPILL_SEQ_SPAN + seq``.
SPILL_SEQ_SPAN: Final = 1 << 40
#: A URL's cash and in-links grow (``add_scores``): only while it waits (issue #15).
_SQL_ADD_SCORE: Final = (
    "UPDATE frontier SET score = score + ?, inlinks = inlinks + 1"
    " WHERE key = ? AND state IN ('queued', 'spilled')"
)
#: The cash and in-links a URL gathered in memory (``set_scores``), whatever its state.
_SQL_SET_SCORE: Final = "UPDATE frontier SET score = ?, inlinks = ? WHERE key = ?"
#: A link listed twice by one page is one row (the primary key).
_SQL_LINK: Final = "INSERT OR IGNORE INTO links (from_url, to_url) VALUES (?, ?)"
_SQL_LINK_ANCHOR: Final = "INSERT OR IGNORE INTO links (from_url, to_url, anchor) VALUES (?, ?, ?)"
#: A page recorded replaces the links its URL had: a refetch, a cluster result landing
#: twice, a page a rerun requeued (``requeue_failed`` deleted its row, not its links).
_SQL_DROP_LINKS: Final = "DELETE FROM links WHERE from_url = ?"
#: Every fetch of a page (issue #13 item 7): its own row, kept across recrawls.
_SQL_VERSIONS_TABLE: Final = (
    "CREATE TABLE page_versions (url TEXT NOT NULL, fetched_at TEXT NOT NULL,"
    " status INTEGER, payload_digest TEXT, etag TEXT, last_modified TEXT,"
    " run_id INTEGER REFERENCES runs (id))"
)
_SQL_VERSIONS_INDEX: Final = "CREATE INDEX page_versions_url ON page_versions (url, fetched_at)"
#: A file made before the table: each page's row is its one known fetch.
_SQL_VERSIONS_FROM_PAGES: Final = (
    "INSERT INTO page_versions SELECT url, fetched_at, status, payload_digest, etag,"
    " last_modified, run_id FROM pages ORDER BY rowid"
)
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
#: The sitemap tables (issue #13 item 6), made on open when a file lacks them.
_SQL_SITEMAP_TABLES: Final = (
    "CREATE TABLE IF NOT EXISTS sitemaps (url TEXT NOT NULL UNIQUE, host TEXT NOT NULL,"
    " fetched_at TEXT NOT NULL, status INTEGER, kind TEXT, urls INTEGER NOT NULL, error TEXT)",
    "CREATE TABLE IF NOT EXISTS sitemap_urls (url TEXT NOT NULL, sitemap TEXT NOT NULL,"
    " lastmod_at TEXT, changefreq TEXT, priority REAL, UNIQUE (url, sitemap))",
    "CREATE INDEX IF NOT EXISTS sitemap_urls_url ON sitemap_urls (url)",
)
_SQL_SITEMAP: Final = "INSERT OR REPLACE INTO sitemaps VALUES (?, ?, ?, ?, ?, ?, ?)"
_SQL_SITEMAP_URL: Final = "INSERT OR REPLACE INTO sitemap_urls VALUES (?, ?, ?, ?, ?)"
_SQL_FRONTIER: Final = (
    f"INSERT OR IGNORE INTO frontier ({_FRONTIER_COLUMNS}) VALUES"
    " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SQL_STATE: Final = "UPDATE frontier SET state = ? WHERE key = ?"
_SQL_NEXT_HOP: Final = (
    "UPDATE frontier SET state = 'queued', url = ?, host = ?, redirects = ?, attempts = 0"
    " WHERE key = ?"
)
_SQL_PAGE_ERROR: Final = "UPDATE pages SET error = ? WHERE url = ?"
#: Failed rows whose failure was transient (see ``Store.requeue_failed``).
_SQL_TRANSIENT_FAILURES: Final = (
    "SELECT f.key, f.url, f.host FROM frontier f JOIN pages p ON p.url = f.url"
    " WHERE f.state IN ('failed', 'done') AND (p.status = 429 OR p.status >= 500"
    " OR p.error LIKE 'timeout:%' OR p.error LIKE 'connect:%'"
    " OR p.error LIKE 'connection_lost:%' OR p.error LIKE 'dns_temporary:%')"
)
_SQL_MARK: Final = (
    "UPDATE frontier SET state = ?, attempts = coalesce(?, attempts),"
    " available_epoch_s = coalesce(?, available_epoch_s) WHERE key = ?"
)
_SQL_BLOCKED: Final = (
    "INSERT OR IGNORE INTO blocked (url, host, reason, detail, blocked_at, run_id)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
_SQL_HOST: Final = (
    "INSERT INTO hosts (host, ip, robots_status, robots_expires_epoch_s, crawl_delay_ms,"
    " delay_ms, backoff_attempts, backoff_until_epoch_s, pages_fetched, state,"
    " backoff_started_epoch_s, learnt_delay_ms) VALUES"
    " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
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


#: The tables made with sqlite-utils before (``_create_schema``), word for word as it
#: wrote them in ``sqlite_master``, so that a new file is the same as an older one.
_SQL_HOSTS_TABLE: Final = (
    'CREATE TABLE "hosts" (\n'
    '   "host" TEXT PRIMARY KEY,\n'
    '   "ip" TEXT,\n'
    '   "robots_status" TEXT,\n'
    '   "robots_expires_epoch_s" REAL,\n'
    '   "crawl_delay_ms" REAL,\n'
    '   "delay_ms" REAL NOT NULL,\n'
    '   "backoff_attempts" INTEGER NOT NULL,\n'
    '   "backoff_until_epoch_s" REAL,\n'
    '   "pages_fetched" INTEGER NOT NULL,\n'
    '   "state" TEXT NOT NULL,\n'
    '   "backoff_started_epoch_s" REAL,\n'
    '   "learnt_delay_ms" REAL\n'
    ")"
)
_SQL_FRONTIER_TABLE: Final = (
    'CREATE TABLE "frontier" (\n'
    '   "key" TEXT PRIMARY KEY,\n'
    '   "url" TEXT NOT NULL,\n'
    '   "host" TEXT NOT NULL,\n'
    '   "depth" INTEGER NOT NULL,\n'
    '   "priority" INTEGER NOT NULL,\n'
    '   "state" TEXT NOT NULL,\n'
    '   "available_epoch_s" REAL NOT NULL,\n'
    '   "attempts" INTEGER NOT NULL,\n'
    '   "redirects" TEXT NOT NULL,\n'
    '   "via" TEXT,\n'
    '   "seq" INTEGER NOT NULL\n'
    ")"
)
_SQL_FRONTIER_INDEX: Final = 'CREATE INDEX "frontier_state_seq"\n    ON "frontier" ("state", "seq")'
_SQL_RUNS_TABLE: Final = (
    'CREATE TABLE "runs" (\n'
    '   "id" INTEGER PRIMARY KEY,\n'
    '   "started_at" TEXT NOT NULL,\n'
    '   "finished_at" TEXT,\n'
    '   "status" TEXT NOT NULL,\n'
    '   "config" TEXT NOT NULL,\n'
    '   "stats" TEXT\n'
    ")"
)
_SQL_META_TABLE: Final = (
    'CREATE TABLE "meta" (\n   "key" TEXT PRIMARY KEY,\n   "value" TEXT NOT NULL\n)'
)


def _create_schema(conn: sqlite3.Connection) -> None:
    """Create every table, index and view of ``SCHEMA_VERSION`` in the caller's
    transaction (``_prepare_schema``) from their SQL. ``hosts``, ``frontier``, ``runs``
    and ``meta`` were made with sqlite-utils, whose import (with click, dateutil and
    pluggy) cost the crawl process 2.6 MiB of RSS for these five statements (issue #22
    item 1); their SQL is what it wrote."""
    for sql in (
        _SQL_PAGES_TABLE,
        _SQL_BLOCKED_TABLE,
        _SQL_LINKS_TABLE,
        _SQL_VERSIONS_TABLE,
        _SQL_VERSIONS_INDEX,
        _SQL_HOSTS_TABLE,
        _SQL_FRONTIER_TABLE,
        _SQL_FRONTIER_INDEX,
        _SQL_RUNS_TABLE,
        _SQL_META_TABLE,
    ):
        conn.execute(sql)
    conn.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?)",
        [("schema_version", str(SCHEMA_VERSION)), ("application", "crawldeck")],
    )


_SQLITE_MAGIC: Final = b"SQLite format 3\x00"


def check_header(path: Path) -> None:
    """Refuse a non-empty file that does not start with the SQLite magic string.

    SQLite itself takes a file shorter than its header for an empty database and would
    write a schema over it; this check keeps such a file untouched.

    Raises:
        StoreError: the file exists, is not empty and is not SQLite, or cannot be read.
    """
    try:
        with path.open("rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
    if head and head != _SQLITE_MAGIC:
        raise StoreError(f"{path.name} is not a SQLite crawl file (file is not a database)")


#: Columns added after a table's first version: (table, column, SQL type). A file made
#: before gets them when it is opened (NULL in its old rows), before any upgrade.
_ADDED_COLUMNS: Final = (
    ("hosts", "learnt_delay_ms", "REAL"),
    ("runs", "stats", "TEXT"),
    *(("pages", name, kind) for name, kind in PAGE_COLUMNS_V2),
    ("links", "anchor", "TEXT"),
)
#: Version 3's new names (table, old, new): a time is ``*_at`` text or ``*_epoch_s``.
RENAMED_COLUMNS: Final = (
    ("hosts", "robots_expires_at", "robots_expires_epoch_s"),
    ("hosts", "backoff_until", "backoff_until_epoch_s"),
    ("hosts", "backoff_started", "backoff_started_epoch_s"),
    ("frontier", "available_at", "available_epoch_s"),
    ("sitemap_urls", "lastmod", "lastmod_at"),
    ("blocked", "at", "blocked_at"),
)
#: The run that wrote an old row, by its time (module docstring, "Version 3").
_RUN_AT: Final = "(SELECT max(r.id) FROM runs r WHERE r.started_at <= {})"
_PAGE_V2_COLUMNS: Final = (
    "url, final_url, host, depth, status, content_type, bytes, elapsed_ms, fetched_at,"
    " rendered, error, noindex, " + ", ".join(_V2_NAMES)
)
#: The tables rebuilt for their keys: (table, its version-3 SQL, the copy of the rows
#: of the old table, renamed ``_old_<table>``, rowids kept).
_REBUILT_TABLES: Final = (
    (
        "pages",
        _SQL_PAGES_TABLE,
        f"INSERT INTO pages (rowid, {_PAGE_V2_COLUMNS}, run_id) SELECT rowid,"
        f" {_PAGE_V2_COLUMNS}, {_RUN_AT.format('o.fetched_at')} FROM _old_pages o",
    ),
    (
        "blocked",
        _SQL_BLOCKED_TABLE,
        "INSERT INTO blocked (rowid, url, host, reason, detail, blocked_at, run_id)"
        f" SELECT rowid, url, host, reason, detail, at, {_RUN_AT.format('o.at')}"
        " FROM _old_blocked o",
    ),
    (
        "links",
        _SQL_LINKS_TABLE,
        "INSERT OR IGNORE INTO links (rowid, from_url, to_url, anchor)"
        " SELECT rowid, from_url, to_url, anchor FROM _old_links",
    ),
)


def _columns(cur: sqlite3.Cursor, table: str) -> set[str]:
    return {row[1] for row in cur.execute(f"PRAGMA table_info({table})")}


def _add_missing_columns(cur: sqlite3.Cursor) -> None:
    """``ALTER TABLE ... ADD COLUMN`` each of ``_ADDED_COLUMNS`` the file lacks; the
    ``broken_links`` view of a file that lacked ``links.anchor`` is dropped (made anew
    with it by ``_prepare_schema``)."""
    for table, column, kind in _ADDED_COLUMNS:
        if column not in _columns(cur, table):
            cur.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            if table == "links":
                cur.execute("DROP VIEW IF EXISTS broken_links")


def _rebuild(cur: sqlite3.Cursor, table: str, create: str, copy: str) -> None:
    """Rebuild ``table`` as ``create`` with its rows (``copy``), for keys SQLite cannot
    add in place: renamed aside, made anew, copied, dropped (its indexes with it).
    The table is renamed aside rather than made under a new name, so its definition
    in ``sqlite_master`` is ``create`` word for word, as in a new file; nothing refers
    to it yet (``pages`` is rebuilt before ``links``, whose keys name it)."""
    cur.execute(f"ALTER TABLE {table} RENAME TO _old_{table}")
    cur.execute(create)
    cur.execute(copy)
    cur.execute(f"DROP TABLE _old_{table}")


def _upgrade(cur: sqlite3.Cursor) -> None:
    """Bring a file of one of ``UPGRADABLE_VERSIONS`` to version 3 in the caller's
    transaction (module docstring, "Version 3"), the version-1 steps included (the
    ``page_versions`` a file may lack; ``_prepare_schema`` makes the sitemap tables)."""
    for table, old, new in RENAMED_COLUMNS:
        if table != "blocked" and old in _columns(cur, table):
            cur.execute(f"ALTER TABLE {table} RENAME COLUMN {old} TO {new}")
    for table, create, copy in _REBUILT_TABLES:
        _rebuild(cur, table, create, copy)
    tables = {row[0] for row in cur.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "page_versions" not in tables:  # a file made before it: each page's one fetch
        cur.execute(_SQL_VERSIONS_TABLE)
        cur.execute(_SQL_VERSIONS_INDEX)
        cur.execute(_SQL_VERSIONS_FROM_PAGES)
    else:
        cur.execute("ALTER TABLE page_versions ADD COLUMN run_id INTEGER REFERENCES runs (id)")
        cur.execute(
            f"UPDATE page_versions SET run_id = {_RUN_AT.format('page_versions.fetched_at')}"
        )
    cur.execute(
        "INSERT OR IGNORE INTO hosts (host, delay_ms, backoff_attempts, pages_fetched, state)"
        " SELECT DISTINCT host, 0, 0, 0, 'active' FROM pages"
    )


def _prepare_schema(conn: sqlite3.Connection, version: str | None) -> None:
    """Make the schema of ``SCHEMA_VERSION`` in ONE transaction: a new file's
    (``version`` ``None``), or an older version's upgrade (``_upgrade``); any file also
    gets the columns of ``_ADDED_COLUMNS``, the tables, indexes and views it lacks (all
    ``IF NOT EXISTS``). A failure rolls it all back."""
    with contextlib.closing(conn.cursor()) as cur:
        cur.execute("BEGIN IMMEDIATE")
        try:
            if version is None:
                _create_schema(conn)
            else:
                _add_missing_columns(cur)
                if version != str(SCHEMA_VERSION):
                    _upgrade(cur)
            for sql in (
                *_SQL_SITEMAP_TABLES,
                _SQL_SPILLED_INDEX,
                _SQL_DIGEST_INDEX,  # after the upgrade: a rebuild drops its table's
                *_SQL_V3_INDEXES,
                PAGE_SUMMARY_SQL,
                HOST_SUMMARY_SQL,
                BROKEN_LINKS_SQL,
            ):
                cur.execute(sql)
            if version != str(SCHEMA_VERSION):
                cur.execute(
                    "UPDATE meta SET value = ? WHERE key = 'schema_version'",
                    (str(SCHEMA_VERSION),),
                )
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")


def check_schema(conn: sqlite3.Connection, name: str) -> str | None:
    """The schema version of the crawldeck file behind ``conn``: ``SCHEMA_VERSION`` or
    one of ``UPGRADABLE_VERSIONS`` (which a ``Store`` upgrades on open).

    Returns:
        ``None`` for an empty SQLite file (no tables yet), else the version (``"3"``).

    Raises:
        StoreError: not SQLite, SQLite but not a crawl file, or another schema version.
            ``name`` is the file name used in the message.
        sqlite3.OperationalError: the file could not be read (an I/O error, a full disk
            that leaves no room for the ``-shm`` file, a lock): not a fact about the
            file's content, so the caller words it.
    """
    try:
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if not tables:
            return None
        if "meta" not in tables:
            raise StoreError(f"{name} is a SQLite file but not a crawldeck crawl file")
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{name} is not a SQLite crawl file ({_one_line(exc)})") from None
    version = None if row is None else row[0]
    if version != str(SCHEMA_VERSION) and version not in UPGRADABLE_VERSIONS:
        raise StoreError(
            f"{name} has schema version {version}; this crawldeck reads version {SCHEMA_VERSION}"
        )
    return str(version)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _add_ordering_columns(conn: sqlite3.Connection) -> None:
    """Give a file made before issue #15 the ``frontier.score`` (0 in its old rows) and
    ``frontier.inlinks`` (1) columns, and the spilled rows' index by (host, priority,
    seq) in place of (host, seq). Each statement commits on its own: run again on the
    next open, they do nothing."""
    present = {row[1] for row in conn.execute("PRAGMA table_info(frontier)")}
    if "score" not in present:
        conn.execute("ALTER TABLE frontier ADD COLUMN score REAL NOT NULL DEFAULT 0")
    if "inlinks" not in present:
        conn.execute("ALTER TABLE frontier ADD COLUMN inlinks INTEGER NOT NULL DEFAULT 1")
    conn.execute("DROP INDEX IF EXISTS frontier_spilled_host_seq")
    conn.execute(_SQL_SPILLED_INDEX)


def _check_states(rows: tuple[FrontierRow, ...]) -> None:
    for row in rows:
        if row.state not in FRONTIER_STATES:
            raise StoreError(f"frontier row {row.key!r}: unknown state {row.state!r}")


def _row_to_frontier(row: tuple[Any, ...], state: str | None = None) -> FrontierRow:
    key, url, host, depth, priority, row_state, available_at, attempts, redirects, via, _ = row[:11]
    return FrontierRow(
        key=key,
        url=url,
        host=host,
        depth=depth,
        priority=priority,
        state=row_state if state is None else state,
        available_at=available_at,
        attempts=attempts,
        redirects=tuple(json.loads(redirects)),
        via=via,
        score=row[11],
        inlinks=row[12],
    )


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


def _insert_frontier(
    conn: sqlite3.Connection, rows: tuple[FrontierRow, ...], seq: int, keys: list[str]
) -> None:
    """INSERT OR IGNORE ``rows`` with ``seq``, ``seq + 1``, ...; their keys go to ``keys``."""
    conn.executemany(_SQL_FRONTIER, [_frontier_params(row, seq + i) for i, row in enumerate(rows)])
    keys.extend([row.key for row in rows])


# --------------------------------------------------------------------------- the lock

_FileId = tuple[int, int]  # (st_dev, st_ino): one file, whatever its names
#: Files a ``Store`` of this process holds (see the module docstring, "with care").
_held: set[_FileId] = set()
#: Lock descriptors (no lock left on them) whose close waits until no other descriptor
#: of this process is open on their file, so the close cannot drop SQLite's locks.
_parked: dict[int, _FileId] = {}
_registry_lock: Final = threading.Lock()


def _file_id(st: os.stat_result) -> _FileId:
    return (st.st_dev, st.st_ino)


#: An I/O error on a file system with less free space than this is a full disk.
_NEARLY_FULL_BYTES: Final = 1 << 20


def _is_disk_full(exc: BaseException, path: Path) -> bool:
    """Whether ``exc``, raised while using the crawl file ``path``, means the disk is full.

    ``OSError`` ENOSPC or EDQUOT; SQLite's ``SQLITE_FULL`` (its unix VFS turns ENOSPC on
    a write into it); or any ``SQLITE_IOERR`` while the file system of ``path`` has under
    ``_NEARLY_FULL_BYTES`` free (for this user; root may use reserved blocks) or no free
    inode left (file systems that count inodes): SQLite reports ENOSPC while growing the
    ``-shm`` file as ``SQLITE_IOERR_SHMSIZE`` (sqlite.org/rescode.html; seen on a full
    tmpfs). A quota (EDQUOT) that SQLite meets stays an I/O error: it says no errno.
    """
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if not isinstance(exc, sqlite3.Error):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_FULL:
        return True
    if code is None or code & 0xFF != sqlite3.SQLITE_IOERR:
        return False
    try:
        fs = os.statvfs(path if path.exists() else path.parent)
    except OSError:
        return False
    blocks = fs.f_bfree if os.geteuid() == 0 else fs.f_bavail
    return blocks * fs.f_frsize < _NEARLY_FULL_BYTES or (fs.f_files > 0 and fs.f_favail == 0)


def _disk_full(name: str, exc: BaseException) -> str:
    """The one-line message of a full disk: ``c.db: disk full (No space left on device)``."""
    code = exc.errno if isinstance(exc, OSError) and exc.errno else errno.ENOSPC
    return f"{name}: disk full ({os.strerror(code)})"


def _in_use(name: str, pid: int | None) -> str:
    holder = f" (pid {pid})" if pid else ""
    return f"{name} is in use by another crawldeck{holder}"


def _flock_holder(st: os.stat_result) -> int | None:
    """The pid that holds a flock on the file of ``st``, or ``None`` when unknown.

    Read from ``/proc/locks`` (Linux proc(5)), lines such as
    ``1: FLOCK  ADVISORY  WRITE 1234 fe:00:2148180 0 EOF`` (the device as hex
    ``major:minor``, then the inode number; a pid outside this pid namespace is 0 or -1).
    """
    needle = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == needle:
                    pid = int(fields[4])
                    return pid if pid > 0 else None
    except (OSError, ValueError):
        return None
    return None


def _other_descriptor_open(ident: _FileId) -> bool:
    """Whether a descriptor of this process, not a parked one, is open on ``ident``.

    Without ``/proc/self/fd`` (not Linux) this cannot be known: ``False``, and the
    descriptor is closed at once.
    """
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return False
    for name in names:
        fd = int(name)
        if fd in _parked:
            continue
        try:
            st = os.fstat(fd)
        except OSError:  # closed since the listing (the listing's own descriptor too)
            continue
        if _file_id(st) == ident:
            return True
    return False


def _park(fd: int, ident: _FileId) -> None:
    """Close ``fd`` (holding no lock) when that is safe, else keep it for later.
    Call with ``_registry_lock`` held."""
    _parked[fd] = ident
    _close_parked()


def _close_parked() -> None:
    """Close the parked descriptors of files no other descriptor of this process has open.
    Call with ``_registry_lock`` held."""
    for fd, ident in list(_parked.items()):
        if not _other_descriptor_open(ident):
            del _parked[fd]
            os.close(fd)


def _lock_file(path: Path, name: str) -> tuple[int, _FileId]:
    """Open (create if missing) the crawl file ``path`` and flock it; see the module
    docstring for the rule. ``name`` is the file name used in messages.

    Returns:
        ``(descriptor, (st_dev, st_ino))``; hand both to ``_unlock_file``.

    Raises:
        StoreError: in use (by this process or another: ``... is in use by another
            crawldeck (pid N)``), not a regular file, the disk is full, or the file
            cannot be opened or locked (one line each).
    """
    with _registry_lock:
        _close_parked()
        try:
            st = os.stat(path)  # follows symlinks, like open()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StoreError(f"cannot open {path}: {exc.strerror}") from None
        else:
            if _file_id(st) in _held:  # refused without opening: no close, no lost lock
                raise StoreError(_in_use(name, os.getpid()))
        flags = os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK  # flock needs no write
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            if _is_disk_full(exc, path):
                raise StoreError(_disk_full(name, exc)) from None
            raise StoreError(f"cannot open {path}: {exc.strerror}") from None
        st = os.fstat(fd)
        ident = _file_id(st)
        if ident in _held:  # a held file was renamed to ``path`` since the stat
            _parked[fd] = ident
            raise StoreError(_in_use(name, os.getpid()))
        if not stat.S_ISREG(st.st_mode):
            _park(fd, ident)
            raise StoreError(f"{name} is not a regular file")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            _park(fd, ident)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise StoreError(_in_use(name, _flock_holder(st))) from None
            raise StoreError(f"cannot lock {path}: {exc.strerror}") from None
        _held.add(ident)
        return fd, ident


def _erase(path: Path) -> None:
    """Empty the locked crawl file ``path`` and remove its ``-wal``/``-shm`` files (an
    empty file is a new SQLite database). Raises ``OSError``."""
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    os.truncate(path, 0)


def _unlock_file(fd: int, ident: _FileId) -> None:
    """Drop the flock of ``_lock_file`` at once and close (or park) its descriptor."""
    with _registry_lock:
        fcntl.flock(fd, fcntl.LOCK_UN)
        _held.discard(ident)
        _park(fd, ident)


# --------------------------------------------------------------------------- writer ops

_ENQUEUE: Final = 0
_PAGE: Final = 1
_BLOCKED: Final = 2
_MARK: Final = 3
_HOST: Final = 4
_END_RUN: Final = 5
_SYNC: Final = 6  # flush: commit now and wake the caller
_STOP: Final = 7
_FAIL: Final = 8
_REQUEUE: Final = 9  # requeue_failed: run now, commit, and wake the caller
_BEGIN_RUN: Final = 10
_GROUP: Final = 11  # atomic(): the operations of one block, applied in one transaction
_META: Final = 12
_RECRAWL: Final = 13  # requeue_for_recrawl: keys in order from a first seq
_SITEMAP: Final = 20  # record_sitemap: a sitemaps row and its sitemap_urls rows
_SCORES: Final = 21  # add_scores: (cash, key) pairs
_SET_SCORES: Final = 22  # set_scores: (cash, inlinks, key) triples


def status_class(status: int | None) -> str:
    """``2xx`` ... ``5xx`` for an HTTP status, ``error`` for none (``page_totals``)."""
    return "error" if status is None else f"{status // 100}xx"


#: Keys of the page totals (``pages_added``, ``page_totals``) that are no status class.
_NOT_STATUS: Final = frozenset({"pages", "bytes", "duplicates", "near_duplicates"})


def status_mix(totals: Mapping[str, int]) -> dict[str, int]:
    """The status classes with pages in ``totals`` (``pages_added`` or ``page_totals``
    keys; the other counts dropped): ``{"2xx": 10, "error": 1}``."""
    return {k: v for k, v in totals.items() if k not in _NOT_STATUS and v > 0}


def _requeue(conn: sqlite3.Connection) -> Counter[str]:
    """``Store.requeue_failed`` in the writer's transaction: the requeued URLs per host."""
    found = conn.execute(_SQL_TRANSIENT_FAILURES).fetchall()
    conn.executemany(
        "UPDATE frontier SET state = 'queued', attempts = attempts + 1 WHERE key = ?",
        [(key,) for key, _, _ in found],
    )
    conn.executemany("DELETE FROM pages WHERE url = ?", [(url,) for _, url, _ in found])
    return Counter(host for _, _, host in found)


def _resolve(future: asyncio.Future[None]) -> None:
    """On ``future``'s loop: a ``room`` waiter may go on (unless it was cancelled)."""
    if not future.done():
        future.set_result(None)


class _Waiter:
    """A caller blocked until the writer commits up to its operation."""

    __slots__ = ("event", "result")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.result: Any = None


class Store:
    """One crawl's SQLite file, written by one background thread.

    Args:
        path: the SQLite file; created with the schema when missing or empty.
        flush_interval_ms: the writer commits at the latest this many milliseconds after
            the first operation of a batch (and at ``MAX_BATCH_OPS`` operations).
        clock: wall-clock seconds since the epoch, for ``runs`` timestamps.
        fresh: start the file anew (``crawldeck demo``): once the lock is held, the
            file is emptied and its ``-wal``/``-shm`` files removed, so a file in use
            by another crawldeck is never erased (it is refused as in use).
        max_backlog: operations queued for the writer (``backlog``) at which ``room``
            makes its caller wait, until the writer is down to half of it.

    Threading: call everything from one thread (the event loop's), but for the reads a
    crawl makes in a thread (``contains``; ``load_spilled`` and ``flush``, one at a
    time: ``core.window``). The write calls only queue; ``flush``, ``requeue_failed``
    and ``close`` block until the writer has committed (from a coroutine, call them
    through ``asyncio.to_thread``). Reads use their
    own connections and see committed data, except ``contains``, which also sees the
    keys still queued. The queue is bounded by back-pressure: the crawl awaits ``room``
    before each URL it takes, which waits (on the loop, without blocking it) while the
    backlog is at ``max_backlog`` or more, so the backlog stays under ``max_backlog``
    plus what the fetches already in flight record.
    Always ``close()`` (or use ``with``): the writer is a daemon thread, and what
    is still queued when the interpreter exits without ``close()`` is lost, as after a
    kill (the file stays consistent).

    Raises (constructor):
        StoreError: the file is in use by another crawldeck (under any of its names, in
            this process or another: see the module docstring), is not a regular file,
            is not SQLite, is SQLite but not a crawl file, has another schema version,
            the disk is full (``c.db: disk full (No space left on device)``), or it
            cannot be opened.
    Raises (any method):
        StoreError: an earlier write failed in the writer thread (disk full, I/O error,
            a value SQLite cannot store), a read failed, or the store is closed. After
            a failed write the store stays unusable (every call raises the same one
            line); the failed batch is rolled back whole and the operations queued
            after it are dropped.
    """

    def __init__(
        self,
        path: Path,
        *,
        flush_interval_ms: int = 2000,
        clock: Callable[[], float] = time.time,
        fresh: bool = False,
        max_backlog: int = MAX_BACKLOG_OPS,
    ) -> None:
        self.path = Path(path)
        self._high_water = max(1, max_backlog)
        self._room_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._room_lock = threading.Lock()
        self._name = self.path.name
        self._clock = clock
        self._flush_interval_s = max(0, flush_interval_ms) / 1000
        self._queue: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._group: list[tuple[Any, ...]] | None = None  # inside atomic()
        self._pending: set[str] = set()
        self._pending_lock = threading.Lock()
        self._kconn_lock = threading.Lock()  # contains() may run in several threads
        self._error: BaseException | None = None
        self._error_reported = False
        self._blocked_added: Counter[str] = Counter()
        self._pages_added: Counter[str] = Counter()
        self._closed = False
        self._run_id: int | None = None  # the run begun last: the run_id of the rows
        self._lock_fd, self._file_id = _lock_file(self.path, self._name)
        if fresh:
            try:
                _erase(self.path)
            except OSError as exc:
                _unlock_file(self._lock_fd, self._file_id)
                raise StoreError(f"cannot erase {self.path}: {exc.strerror}") from None
        self._wconn: sqlite3.Connection | None = None
        self._kconn: sqlite3.Connection | None = None
        self._rconn: sqlite3.Connection | None = None
        try:
            self._wconn = self._open_writer()
            self._next_seq = self._load_next_seq(self._wconn)
            self._next_run_id = (
                int(self._wconn.execute("SELECT max(id) FROM runs").fetchone()[0] or 0) + 1
            )
            self._kconn = self._connect()
            self._rconn = self._connect()
            for conn in (self._kconn, self._rconn):
                conn.execute("PRAGMA query_only = ON")
        except sqlite3.Error as exc:
            self._release()
            raise StoreError(self._open_failure(exc)) from None
        except BaseException:
            self._release()
            raise
        self._thread = threading.Thread(
            target=self._writer, name=f"crawldeck-store-{self._name}", daemon=True
        )
        self._thread.start()

    # ------------------------------------------------------------------ opening

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(self._open_failure(exc)) from None
        conn.execute("PRAGMA busy_timeout = 5000")
        return conn

    def _open_writer(self) -> sqlite3.Connection:
        check_header(self.path)
        conn = self._connect()
        try:
            version = check_schema(conn, self._name)
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"{self._name}: cannot switch to WAL mode (got {mode})")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA cache_size = -32768")  # KiB: 32 MiB of page cache
            _prepare_schema(conn, version)
            _add_ordering_columns(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(self._open_failure(exc)) from None
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _load_next_seq(conn: sqlite3.Connection) -> int:
        # MAX over each state is one index probe on (state, seq), not a table scan.
        top = 0
        for state in sorted(FRONTIER_STATES):
            row = conn.execute("SELECT max(seq) FROM frontier WHERE state = ?", (state,))
            value = row.fetchone()[0]
            if value is not None:
                top = max(top, int(value))
        return top + 1

    def _open_failure(self, exc: sqlite3.Error) -> str:
        if _is_disk_full(exc, self.path):
            return _disk_full(self._name, exc)
        return f"cannot open {self.path}: {_one_line(exc)}"

    def _release(self) -> None:
        for conn in (self._rconn, self._kconn, self._wconn):
            if conn is not None:
                conn.close()
        self._rconn = self._kconn = self._wconn = None
        if self._lock_fd >= 0:  # after the connections: see the module docstring
            _unlock_file(self._lock_fd, self._file_id)
            self._lock_fd = -1

    # ------------------------------------------------------------------ state

    def _check(self) -> None:
        if self._error is not None:
            self._error_reported = True
            raise StoreError(self._write_failure(self._error))
        if self._closed:
            raise StoreError(f"{self._name}: the store is closed")

    def _write_failure(self, exc: BaseException) -> str:
        if _is_disk_full(exc, self.path):
            return _disk_full(self._name, exc)
        return f"{self._name}: write failed: {_one_line(exc)}"

    @property
    def backlog(self) -> int:
        """Operations queued and not yet applied by the writer (approximate)."""
        return self._queue.qsize()

    async def room(self) -> bool:
        """Return when the writer's backlog is under ``max_backlog``; else wait (the
        loop runs on) until the writer is down to half of it. The writer wakes the
        waiters from its thread (``call_soon_threadsafe``) after a commit. Returns
        whether it waited.

        Raises:
            StoreError: see the class (a failed store has room: it takes no writes).
        """
        self._check()
        if self._queue.qsize() < self._high_water:
            return False
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._room_lock:
            if self._queue.qsize() < self._high_water:
                return False
            self._room_waiters.append((loop, future))
        await future
        self._check()
        return True

    def _wake_room(self) -> None:
        """Writer thread: wake the ``room`` waiters once the backlog is down to half
        of ``max_backlog`` (or the store failed)."""
        with self._room_lock:
            if not self._room_waiters:
                return
            if self._error is None and self._queue.qsize() > self._high_water // 2:
                return
            waiters, self._room_waiters = self._room_waiters, []
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # its loop is closed: nobody waits
                loop.call_soon_threadsafe(_resolve, future)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writes

    def _put(self, op: tuple[Any, ...]) -> None:
        if self._group is None:
            self._queue.put(op)
        else:
            self._group.append(op)

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """Commit the writes made inside the block in one transaction: they are queued
        as ONE operation when the block exits (also when it raises), so after a kill
        the file holds all of them or none. For a caller that keeps its own progress
        with its rows (``set_meta``): the cluster collector commits a batch of stream
        entries with the streams' cursors (``core.cluster.collector``).

        Blocks do not nest; ``flush``, ``requeue_failed`` and ``close`` inside one do
        not wait for its writes (they are not queued yet).

        Raises:
            StoreError: a block is already open; see also the class.
        """
        self._check()
        if self._group is not None:
            raise StoreError(f"{self._name}: atomic() blocks do not nest")
        group: list[tuple[Any, ...]] = []
        self._group = group
        try:
            yield
        finally:
            self._group = None
            if group:
                self._queue.put((_GROUP, tuple(group)))

    def set_meta(self, key: str, value: str | None) -> None:
        """Queue setting the ``meta`` row ``key`` to ``value`` (``None`` deletes it):
        state a writer keeps in the file with the rows it wrote (the cluster collector's
        stream cursors). ``schema_version`` and ``application`` belong to the schema.

        Raises:
            StoreError: ``key`` is ``schema_version`` or ``application``; see also the
                class.
        """
        self._check()
        if key in ("schema_version", "application"):
            raise StoreError(f"set_meta: {key!r} belongs to the schema")
        self._put((_META, key, value))

    def enqueue_urls(self, rows: Sequence[FrontierRow]) -> None:
        """Queue new frontier rows (INSERT OR IGNORE: a known key keeps its row).

        Each row gets the next ``seq``. ``contains`` sees the keys at once.

        Raises:
            StoreError: see the class.
        """
        self._check()
        if not rows:
            return
        batch = tuple(rows)
        _check_states(batch)
        with self._pending_lock:
            self._pending.update([row.key for row in batch])
        seq = self._next_seq
        self._next_seq = seq + len(batch)
        self._put((_ENQUEUE, batch, seq))

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
        """Queue one fetched page as ONE atomic operation.

        Args:
            page: the ``pages`` row (it replaces an earlier row of the same ``url``:
                the latest response wins).
            key: the dedupe key of the fetched URL; its frontier row gets ``state``.
            links: ``(from_url, to_url)`` edges for ``links``.
            new_rows: frontier rows the page adds (INSERT OR IGNORE).
            state: ``done`` or ``failed``; or ``queued`` when the page was a redirect
                hop that goes on as the same row (another spelling of the same URL, or
                a URL of the chain asked again with a cookie): the row then stays
                queued with ``url = next_url``, ``host = next_host`` and
                ``redirects`` (the chain so far), so a kill resumes from that hop.
            next_url, next_host: the next hop's URL and host key (required with
                ``queued``, else ignored).
            redirects: the URLs requested in the chain so far (with ``queued``).
            anchors: the anchor text of links of ``links`` by ``to_url``
                (``links.anchor``); a link without an entry has none.

        Raises:
            StoreError: ``state`` is not ``done``/``failed``/``queued``, or ``queued``
                without ``next_url``; see also the class.
        """
        self._check()
        if state not in ("done", "failed", "queued"):
            raise StoreError(
                f"record_page: state must be 'done', 'failed' or 'queued', got {state!r}"
            )
        if state == "queued" and not (next_url and next_host):
            raise StoreError("record_page: state 'queued' needs next_url and next_host")
        rows = tuple(new_rows)
        seq = self._next_seq
        if rows:
            _check_states(rows)
            with self._pending_lock:
                self._pending.update([row.key for row in rows])
            self._next_seq = seq + len(rows)
        hop = (next_url, next_host, _encode_json(list(redirects))) if state == "queued" else None
        edges: tuple[tuple[str, str], ...] | tuple[tuple[str, str, str | None], ...]
        edges = tuple(links)
        if anchors:
            text = anchors.get
            edges = tuple([(start, to, text(to)) for start, to in links])
        self._put((_PAGE, page, key, edges, rows, seq, state, hop, self._run_id))

    def fail_urls(self, urls: Sequence[tuple[str, str]], error: str) -> None:
        """Queue marking each ``(key, url)`` failed: its frontier row (by ``key``) gets
        state ``failed`` and its ``pages`` row (by ``url``), if any, ``error``.

        For the hops of a redirect chain that ended without a page (a loop, too many
        hops, a growing URL): they were recorded as 3xx pages and are failed with the
        chain's reason, not done.

        Raises:
            StoreError: see the class.
        """
        self._check()
        if urls:
            self._put((_FAIL, tuple(urls), error))

    def requeue_failed(self) -> dict[str, int]:
        """Put the URLs that failed transiently back in the queue; block until committed.

        A frontier row whose page got a 429 or 5xx status (a 5xx other than 503 is
        recorded ``done``: it is not retried within a run), or failed with no response
        for a transient reason (``pages.error`` starting ``timeout:``, ``connect:``,
        ``connection_lost:`` or ``dns_temporary:``), goes back to ``queued`` with its
        ``attempts`` counted on (the next try is a retry: ``attempts + 1``), and its
        ``pages`` row is deleted (the next try writes a new one). Deterministic
        failures (4xx, ``protocol:``, ``parse_timeout:``, redirect loops) stay failed.
        For rerunning a finished crawl (``Engine`` does this when it resumes).

        Returns:
            the requeued URLs per host key (empty when none).

        Raises:
            StoreError: see the class.
        """
        self._check()
        waiter = _Waiter()
        self._queue.put((_REQUEUE, waiter))
        self._wait(waiter)
        requeued: Counter[str] = waiter.result
        return dict(requeued)

    def pages_added(self) -> dict[str, int]:
        """What the ``pages`` rows committed since this store was opened changed: keys
        ``pages`` (rows added; a page that replaces its URL's row adds none), ``bytes``,
        the status classes (``2xx`` ... ``5xx``, ``error``; a replaced row's class
        counts -1), ``duplicates`` (rows with ``duplicate_of``) and ``near_duplicates``
        (rows with ``near_duplicate_of`` but not ``duplicate_of``: an exact duplicate is
        near too, and is counted once). With ``counts()`` and ``page_totals()`` at
        open, the exact totals of the table, as ``page_totals`` computes them.
        """
        with self._pending_lock:
            return dict(self._pages_added)

    def blocked_added(self) -> dict[str, int]:
        """Rows added to ``blocked`` since this store was opened, by reason, counted as
        they are committed (a repeat of a blocked URL adds none): with the counts from
        ``counts()`` at open, the exact per-reason totals of the table.
        """
        with self._pending_lock:
            return dict(self._blocked_added)

    def record_blocked(self, rec: BlockedRecord) -> None:
        """Queue a refused URL (INSERT OR IGNORE on ``url``: the first reason is kept).

        Raises:
            StoreError: see the class.
        """
        self._check()
        self._put((_BLOCKED, rec, self._run_id))

    def mark(
        self,
        key: str,
        state: FrontierState,
        *,
        attempts: int | None = None,
        available_at: float | None = None,
    ) -> None:
        """Queue a state change of the frontier row ``key`` (no-op if the key is unknown).

        Args:
            state: one of ``FRONTIER_STATES``.
            attempts, available_at: new values (epoch seconds for ``available_at``);
                ``None`` keeps the stored one.

        Raises:
            StoreError: ``state`` is not a frontier state; see also the class.
        """
        self._check()
        if state not in FRONTIER_STATES:
            raise StoreError(f"mark: unknown frontier state {state!r}")
        self._put((_MARK, state, attempts, available_at, key))

    def add_scores(self, scores: Sequence[tuple[str, float]]) -> None:
        """Queue adding cash to waiting frontier rows: ``(key, cash)`` pairs, each row's
        ``score`` grows by its cash and its ``inlinks`` by one if it is ``queued`` or
        ``spilled`` (OPIC, ``core.prioritizer``: a fetched page's share for each
        outlink the crawl already knows, one pair per linking page; an unknown key, or
        a URL fetched already, is left as it is).

        Raises:
            StoreError: see the class.
        """
        self._check()
        if scores:
            self._put((_SCORES, [(cash, key) for key, cash in scores]))

    def set_scores(self, scores: Sequence[tuple[str, float, int]]) -> None:
        """Queue setting the cash and in-links of frontier rows: ``(key, cash, inlinks)``
        triples, each row's ``score`` and ``inlinks`` become these, whatever its state
        (what a URL credited in memory held when it left memory, its credits not
        written one by one: ``FrontierWindow.save_credits``, issue #15; a URL fetched
        since keeps the cash it handed on, as ``add_scores`` leaves it).

        Raises:
            StoreError: see the class.
        """
        self._check()
        if scores:
            self._put((_SET_SCORES, [(cash, n, key) for key, cash, n in scores]))

    def record_sitemap(self, rec: SitemapRecord, entries: Sequence[SitemapUrlRecord]) -> None:
        """Queue a sitemap's ``sitemaps`` row and the ``sitemap_urls`` rows of the URLs it
        lists, in one operation (INSERT OR REPLACE: read again, the new answer wins).

        Raises:
            StoreError: see the class.
        """
        self._check()
        self._put((_SITEMAP, rec, tuple(entries)))

    def upsert_host(self, rec: HostRecord) -> None:
        """Queue the insert or full replacement of the ``hosts`` row of ``rec.host``.

        Raises:
            StoreError: see the class.
        """
        self._check()
        self._put((_HOST, rec))

    def begin_run(self, config: Mapping[str, Any]) -> int:
        """Queue a ``runs`` row (status ``running``, ``config`` as JSON); the id is
        allotted here (as ``seq`` is), so nothing waits for the writer.

        Earlier runs still marked ``running`` (the process was killed) become ``killed``.

        Values JSON cannot hold are stored as their ``str()``.

        Returns:
            the run id (1, 2, ... per file).

        Raises:
            StoreError: see the class.
        """
        self._check()
        text = json.dumps(dict(config), sort_keys=True, default=str)
        run_id = self._next_run_id
        self._next_run_id = run_id + 1
        self._run_id = run_id
        self._put((_BEGIN_RUN, run_id, self._clock(), text))
        return run_id

    def end_run(
        self,
        run_id: int,
        status: str,
        *,
        live_hosts: str | None = None,
        stats: Mapping[str, Any] | None = None,
    ) -> None:
        """Queue the end of run ``run_id``: ``finished_at`` = now, ``status`` (e.g. ``finished``).

        Args:
            stats: the run's figures (``core.stats.run_stats``), stored as JSON in
                ``runs.stats``; ``None`` leaves it NULL.
            live_hosts: the final ``hosts.state`` for every host still ``active`` or
                ``backoff`` (a cluster crawl's coordinator: ``done`` when finished,
                ``queued`` when stopped; its workers wrote the hosts' rows while they
                owned them, before the end was known); ``None``: hosts unchanged.

        Raises:
            StoreError: see the class.
        """
        self._check()
        text = None if stats is None else json.dumps(dict(stats))  # in the order given
        self._put((_END_RUN, self._clock(), status, run_id, live_hosts, text))

    def flush(self) -> None:
        """Block until every operation queued so far is committed.

        Raises:
            StoreError: a write failed; see the class.
        """
        self._check()
        waiter = _Waiter()
        self._queue.put((_SYNC, waiter))
        self._wait(waiter)

    def close(self) -> None:
        """Commit everything queued, stop the writer, close the file and drop the lock.

        Idempotent. Raises:
            StoreError: a write failed and that was not reported by an earlier call
                (the file is closed and unlocked all the same).
        """
        if self._closed:
            return
        self._closed = True
        self._queue.put((_STOP,))
        self._thread.join()
        self._release()
        if self._error is not None and not self._error_reported:
            self._error_reported = True
            raise StoreError(self._write_failure(self._error))

    def _wait(self, waiter: _Waiter) -> None:
        while not waiter.event.wait(0.25):
            if not self._thread.is_alive():  # pragma: no cover - the writer never dies silently
                raise StoreError(f"{self._name}: the writer thread stopped")
        if self._error is not None:
            self._check()

    # ------------------------------------------------------------------ writer thread

    def _writer(self) -> None:
        conn = self._wconn
        assert conn is not None
        get = self._queue.get
        interval = self._flush_interval_s
        apply = self._apply
        while True:
            op = get()
            if self._error is not None:  # failed: drop the work, still wake waiters
                self._wake_room()
                if op[0] == _SYNC:
                    op[1].event.set()
                if op[0] == _STOP:
                    return
                continue
            keys: list[str] = []
            blocked: Counter[str] = Counter()
            totals: Counter[str] = Counter()
            waiters: list[_Waiter] = []
            stop = False
            ended = False  # a run's end is in the batch: the metadata file after it
            try:
                conn.execute("BEGIN IMMEDIATE")
                deadline = time.monotonic() + interval
                count = 0
                while True:
                    kind = op[0]
                    if kind == _STOP:
                        stop = True
                        break
                    if kind == _REQUEUE:
                        waiters.append(op[1])
                        op[1].result = _requeue(conn)
                        break
                    if kind == _SYNC:
                        waiters.append(op[1])
                        break
                    apply(conn, op, keys, blocked, totals)
                    ended = ended or kind == _END_RUN
                    count += 1
                    if count >= MAX_BATCH_OPS:
                        break
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    try:
                        op = get(timeout=remaining)
                    except queue.Empty:
                        break
                conn.execute("COMMIT")
            except BaseException as exc:
                self._error = exc
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
            else:
                if ended:
                    self._write_metadata()
                if keys or blocked or totals:
                    with self._pending_lock:
                        self._pending.difference_update(keys)
                        self._blocked_added.update(blocked)
                        self._pages_added.update(totals)
            for waiter in waiters:
                waiter.event.set()
            self._wake_room()
            if stop:
                return

    def _write_metadata(self) -> None:
        """Writer thread, once a run's end is committed: the Datasette metadata file
        beside the crawl file (``core.datasette_meta``). A failure (a full disk) is a
        warning: the crawl file is whole without it."""
        try:
            write_metadata(self.path)
        except OSError as exc:
            log.warning(
                "%s: cannot write %s: %s",
                self._name,
                metadata_path(self.path).name,
                exc.strerror or _one_line(exc),
            )

    def _apply(
        self,
        conn: sqlite3.Connection,
        op: tuple[Any, ...],
        keys: list[str],
        blocked: Counter[str],
        totals: Counter[str],
    ) -> None:
        kind = op[0]
        if kind == _PAGE:
            _, page, key, links, rows, seq, state, hop, run_id = op
            old = conn.execute(_SQL_OLD_PAGE, (page.url,)).fetchone()
            if page.status == 304 and old is not None:  # not modified: the row stays
                at = to_iso_utc(page.fetched_at)
                conn.execute(
                    _SQL_VERSION_304, (at, page.etag, page.last_modified, run_id, page.url)
                )
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
                conn.executemany(_SQL_LINK if len(links[0]) == 2 else _SQL_LINK_ANCHOR, links)
            if rows:
                _insert_frontier(conn, rows, seq, keys)
            if hop is None:
                conn.execute(_SQL_STATE, (state, key))
            else:
                conn.execute(_SQL_NEXT_HOP, (*hop, key))
        elif kind == _FAIL:
            _, pairs, error = op
            conn.executemany(_SQL_STATE, [("failed", k) for k, _ in pairs])
            conn.executemany(_SQL_PAGE_ERROR, [(error, u) for _, u in pairs])
        elif kind == _SCORES:
            conn.executemany(_SQL_ADD_SCORE, op[1])
        elif kind == _SET_SCORES:
            conn.executemany(_SQL_SET_SCORE, op[1])
        elif kind == _ENQUEUE:
            _insert_frontier(conn, op[1], op[2], keys)
        elif kind == _MARK:
            conn.execute(_SQL_MARK, op[1:])
        elif kind == _RECRAWL:
            _, recrawl, first = op
            conn.executemany(_SQL_RECRAWL, ((first + i, k) for i, k in enumerate(recrawl)))
        elif kind == _BLOCKED:
            rec: BlockedRecord = op[1]
            cur = conn.execute(
                _SQL_BLOCKED,
                (rec.url, rec.host, rec.reason, rec.detail, to_iso_utc(rec.at), op[2]),
            )
            if cur.rowcount == 1:  # a repeat of a blocked URL is ignored: not counted
                blocked[rec.reason] += 1
        elif kind == _HOST:
            h: HostRecord = op[1]
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
        elif kind == _GROUP:
            for sub in op[1]:
                self._apply(conn, sub, keys, blocked, totals)
        elif kind == _SITEMAP:
            _, sm, entries = op
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
        elif kind == _META:
            _, name, value = op
            if value is None:
                conn.execute("DELETE FROM meta WHERE key = ?", (name,))
            else:
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES (?, ?)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (name, value),
                )
        elif kind == _BEGIN_RUN:
            _, run_id, started_at, text = op
            conn.execute(_SQL_KILLED_RUNS)
            conn.execute(_SQL_BEGIN_RUN, (run_id, to_iso_utc(started_at), text))
        elif kind == _END_RUN:
            _, at, status, run_id, live_hosts, stats = op
            conn.execute(_SQL_END_RUN, (to_iso_utc(at), status, stats, run_id))
            if live_hosts is not None:
                conn.execute(_SQL_END_LIVE_HOSTS, (live_hosts,))
        else:  # pragma: no cover - every op kind is handled above
            raise AssertionError(f"unknown store operation {kind}")

    # ------------------------------------------------------------------ reads

    def _reader(self) -> sqlite3.Connection:
        self._check()
        assert self._rconn is not None
        return self._rconn

    def contains(self, key: str) -> bool:
        """Whether the frontier holds ``key``: queued-but-uncommitted keys, then SQLite.

        One primary-key lookup (tens of microseconds) when the key is not pending. The
        one call that may run in any thread (``core.seen.SeenSet.seen_among`` calls it
        in the loop's executor): its connection is used under a lock.

        Raises:
            StoreError: see the class.
        """
        self._check()
        if key in self._pending:
            return True
        assert self._kconn is not None
        try:
            with self._kconn_lock:
                cur = self._kconn.execute("SELECT 1 FROM frontier WHERE key = ?", (key,))
                try:
                    return cur.fetchone() is not None
                finally:
                    cur.close()  # ends the read transaction now: the next call sees new commits
        except sqlite3.Error as exc:
            raise StoreError(self._read_failure(exc)) from None

    def _read_failure(self, exc: sqlite3.Error) -> str:
        if _is_disk_full(exc, self.path):
            return _disk_full(self._name, exc)
        return f"cannot read {self._name}: {_one_line(exc)}"

    def _stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        conn = self._reader()
        try:
            cur = conn.execute(sql, params)
            try:
                while rows := cur.fetchmany(READ_BATCH_ROWS):
                    yield from rows
            finally:
                cur.close()
        except sqlite3.Error as exc:
            raise StoreError(self._read_failure(exc)) from None

    def _scalar(self, sql: str) -> Any:
        try:
            cur = self._reader().execute(sql)
            try:
                return cur.fetchone()[0]
            finally:
                cur.close()
        except sqlite3.Error as exc:
            raise StoreError(self._read_failure(exc)) from None

    def load_frontier(self) -> Iterator[FrontierRow]:
        """Stream the ``queued`` and ``in_flight`` rows in ``seq`` (insertion) order.

        ``in_flight`` rows come back with ``state="queued"`` and ``attempts`` unchanged
        (they are the only URLs a resume may fetch twice). Committed rows only.

        Raises:
            StoreError: see the class.
        """
        self._reader()
        sql = f"SELECT {_FRONTIER_COLUMNS} FROM frontier WHERE state = ? ORDER BY seq"
        merged = heapq.merge(
            self._stream(sql, ("queued",)),
            self._stream(sql, ("in_flight",)),
            key=lambda row: row[10],
        )
        return (_row_to_frontier(row, "queued") for row in merged)

    def load_spilled(self, host: str, after: int, limit: int) -> tuple[list[FrontierRow], int]:
        """The first ``limit`` ``spilled`` rows of ``host`` after the read-back position
        ``after``, in (priority, seq) order (the partial index
        ``frontier_spilled_host_priority_seq``); a row's position is ``priority *
        SPILL_SEQ_SPAN + seq`` (the frontier window keeps it per host, and spills a
        host's rows at no better priority than its position's, ``FrontierWindow``).

        Spilled rows are admitted URLs the engine keeps only here (``frontier_window``);
        they come back with ``state="spilled"``. Committed rows only: ``flush()`` first
        to see the latest.

        Returns:
            ``(rows, last)``: ``last`` is the position of the last row returned
            (``after`` when none), the ``after`` of the next call.

        Raises:
            StoreError: see the class.
        """
        self._reader()
        sql = (
            f"SELECT {_FRONTIER_COLUMNS} FROM frontier "
            "WHERE state = 'spilled' AND host = ? AND (priority, seq) > (?, ?)"
            " ORDER BY priority, seq LIMIT ?"
        )
        priority, seq = divmod(after, SPILL_SEQ_SPAN)
        raw = list(self._stream(sql, (host, priority, seq, limit)))
        last = int(raw[-1][4]) * SPILL_SEQ_SPAN + int(raw[-1][10]) if raw else after
        return [_row_to_frontier(row, "spilled") for row in raw], last

    def spilled_counts(self) -> dict[str, int]:
        """``spilled`` rows per host key (for a resume: what waits outside memory).

        Raises:
            StoreError: see the class.
        """
        sql = "SELECT host, count(*) FROM frontier WHERE state = 'spilled' GROUP BY host"
        return {host: count for host, count in self._stream(sql)}

    def iter_keys(self) -> Iterator[str]:
        """Stream every frontier key (all states), for rebuilding the seen set.

        Raises:
            StoreError: see the class.
        """
        self._reader()
        return (row[0] for row in self._stream("SELECT key FROM frontier"))

    def host_counts(self) -> dict[str, int]:
        """Frontier rows (all states) per host key: the URLs admitted per host so far.

        Raises:
            StoreError: see the class.
        """
        rows = self._stream("SELECT host, count(*) FROM frontier GROUP BY host")
        return {host: count for host, count in rows}

    def load_hosts(self) -> dict[str, HostRecord]:
        """Every ``hosts`` row by host key.

        Raises:
            StoreError: see the class.
        """
        rows = self._stream(
            "SELECT host, ip, robots_status, robots_expires_epoch_s, crawl_delay_ms, delay_ms,"
            " backoff_attempts, backoff_until_epoch_s, pages_fetched, state,"
            " backoff_started_epoch_s, learnt_delay_ms FROM hosts"
        )
        return {row[0]: HostRecord(*row) for row in rows}

    def counts(self) -> Counts:
        """Committed row counts (call ``flush`` first for exact numbers); see ``Counts``.

        Raises:
            StoreError: see the class.
        """
        by_state = {
            state: int(n)
            for state, n in self._stream("SELECT state, count(*) FROM frontier GROUP BY state")
        }
        blocked = {
            reason: int(n)
            for reason, n in self._stream("SELECT reason, count(*) FROM blocked GROUP BY reason")
        }
        return Counts(
            pages=int(self._scalar("SELECT count(*) FROM pages")),
            blocked=blocked,
            queued=int(by_state.get("queued", 0)) + int(by_state.get("spilled", 0)),
            in_flight=int(by_state.get("in_flight", 0)),
            done=int(by_state.get("done", 0)),
            failed=int(by_state.get("failed", 0)),
            frontier_blocked=int(by_state.get("blocked", 0)),
        )

    def partial_pages(self) -> int:
        """Committed pages read in part: their body cut at ``max_body_bytes`` or when
        the read was stopped (``error`` ``body_too_large: ...``, as ``Recorder`` marks
        a truncated result), over all runs; for the end-of-crawl summary (issue #25).

        Raises:
            StoreError: see the class.
        """
        return int(self._scalar(f"SELECT count(*) FROM pages WHERE error LIKE '{PARTIAL_ERROR}:%'"))

    def page_totals(self) -> tuple[dict[str, int], int]:
        """Committed pages by status class (``2xx`` ... ``5xx``, ``error`` for no
        response), with ``duplicates`` and ``near_duplicates`` (as ``pages_added``
        counts them), and their body bytes in all, for the totals of a resumed crawl.

        Raises:
            StoreError: see the class.
        """
        mix: dict[str, int] = {}
        rows = self._stream(
            "SELECT CASE WHEN status IS NULL THEN 'error' ELSE (status / 100) || 'xx' END,"
            " count(*) FROM pages GROUP BY 1"
        )
        for label, n in rows:
            mix[str(label)] = int(n)
        ((total, dups, near),) = self._stream(
            "SELECT coalesce(sum(bytes), 0), count(duplicate_of),"
            " count(CASE WHEN duplicate_of IS NULL THEN near_duplicate_of END) FROM pages"
        )
        for key, n in (("duplicates", dups), ("near_duplicates", near)):
            if n:
                mix[key] = int(n)
        return mix, int(total)

    def recent_blocked(self, limit: int) -> list[BlockedRecord]:
        """The last ``limit`` rows of ``blocked``, oldest first (the console's Blocked
        tab on a resumed crawl).

        Raises:
            StoreError: see the class.
        """
        rows = list(
            self._stream(
                "SELECT url, host, reason, detail, blocked_at FROM blocked"
                " ORDER BY rowid DESC LIMIT ?",
                (limit,),
            )
        )
        return [BlockedRecord(u, h, r, d, from_iso_utc(a)) for u, h, r, d, a in reversed(rows)]

    def ok_pages(self) -> int:
        """Committed pages with a 2xx status (the crawl got something), all runs.

        Raises:
            StoreError: see the class.
        """
        return int(self._scalar("SELECT count(*) FROM pages WHERE status BETWEEN 200 AND 299"))

    def broken_links(self, limit: int) -> tuple[int, list[LinkCheck]]:
        """The committed broken links (the ``broken_links`` view): how many, and the
        first ``limit`` ordered by link then referring page. One scan of ``pages``
        and an index probe of ``links`` per broken page (``BROKEN_LINKS_SQL``).

        Raises:
            StoreError: see the class.
        """
        count = int(self._scalar("SELECT count(*) FROM broken_links"))
        rows = self._stream(
            "SELECT from_url, to_url, status, error, final_url, anchor FROM broken_links"
            " ORDER BY to_url, from_url LIMIT ?",
            (limit,),
        )
        return count, [
            LinkCheck(from_url, to_url, status, error, final_url, anchor=anchor)
            for from_url, to_url, status, error, final_url, anchor in rows
        ]

    def broken_groups(self, per_group: int) -> list[BrokenGroup]:
        """The committed broken links (the ``broken_links`` view) grouped by what their
        target got: its HTTP status and the reason of its error (``connect``, ``dns``,
        ``redirect_loop``: ``pages.error`` up to its ``:``), the largest group first
        (then by status and reason), each with its first ``per_group`` links ordered
        by link then referring page. Three passes over the view (its rows are few: one
        per broken link), for the end-of-crawl summary.

        Raises:
            StoreError: see the class.
        """
        groups: dict[tuple[int | None, str | None], BrokenGroup] = {}
        for status, reason, count, *link in self._stream(_SQL_BROKEN_GROUPS, (per_group,)):
            group = groups.get((status, reason))
            if group is None:
                group = groups[(status, reason)] = BrokenGroup(status, reason, count, [])
            from_url, to_url, link_status, error, final_url, anchor = link
            group.first.append(
                LinkCheck(from_url, to_url, link_status, error, final_url, anchor=anchor)
            )
        return list(groups.values())

    def seed_outcomes(self, limit: int = 20) -> list[SeedOutcome]:
        """How the crawl's seeds ended (frontier rows of depth 0 not reached by a
        redirect), the first ``limit`` in insertion order.

        Raises:
            StoreError: see the class.
        """
        rows = self._stream(
            "SELECT f.url, f.state, p.status, p.error, b.reason || ': ' || b.detail"
            " FROM frontier f LEFT JOIN pages p ON p.url = f.url"
            " LEFT JOIN blocked b ON b.url = f.url"
            " WHERE f.depth = 0 AND f.via IS NULL ORDER BY f.seq LIMIT ?",
            (limit,),
        )
        return [SeedOutcome(*row) for row in rows]

    def meta_items(self, prefix: str) -> dict[str, str]:
        """The committed ``meta`` rows whose key starts with ``prefix`` (``set_meta``).

        Raises:
            StoreError: see the class.
        """
        rows = self._stream(
            "SELECT key, value FROM meta WHERE substr(key, 1, ?) = ?", (len(prefix), prefix)
        )
        return {key: value for key, value in rows}

    def known_keys(self, keys: Sequence[str]) -> set[str]:
        """Those of ``keys`` that have a committed ``frontier`` row: one query for all
        of them (a primary-key probe each), for a caller that checks many at once.

        Raises:
            StoreError: see the class.
        """
        if not keys:
            return set()
        rows = self._stream(
            "SELECT key FROM frontier WHERE key IN (SELECT value FROM json_each(?))",
            (_encode_json(list(keys)),),
        )
        return {key for (key,) in rows}

    def first_payloads(self) -> Iterator[tuple[str, str, str, str | None]]:
        """``(payload_digest, url, fetched_at, canonical_url)`` of the committed pages
        that were not duplicates, oldest row first: what ``core.archive`` rebuilds its
        digest map from on resume. Reads on a connection of its own, so it may run in
        any one thread (the WARC writer's) while the crawl reads the store.

        Raises:
            StoreError: see the class.
        """
        self._check()
        conn = self._connect()
        try:
            conn.execute("PRAGMA query_only = ON")
            cur = conn.execute(
                "SELECT payload_digest, url, fetched_at, canonical_url FROM pages"
                " WHERE payload_digest IS NOT NULL AND duplicate_of IS NULL ORDER BY rowid"
            )
            while batch := cur.fetchmany(READ_BATCH_ROWS):
                yield from batch
        except sqlite3.Error as exc:
            raise StoreError(self._read_failure(exc)) from None
        finally:
            conn.close()

    def simhashes(self) -> Iterator[tuple[str, int, str]]:
        """``(host, simhash, url)`` of the committed pages with a SimHash, oldest row
        first, the SimHash unsigned again: the near-duplicate index on resume.

        Raises:
            StoreError: see the class.
        """
        rows = self._stream(
            "SELECT host, simhash, url FROM pages WHERE simhash IS NOT NULL ORDER BY rowid"
        )
        for host, fp, url in rows:
            yield host, to_unsigned(fp), url

    def sitemaps_read(self) -> set[str]:
        """The URLs of the sitemaps committed with an answer that is not transient (an
        HTTP status below 500, not 429): a resumed crawl does not fetch them again.

        Raises:
            StoreError: see the class.
        """
        rows = self._stream(
            "SELECT url FROM sitemaps WHERE status IS NOT NULL AND status < 500 AND status != 429"
        )
        return {url for (url,) in rows}

    def hosts_without_sitemaps(self) -> list[str]:
        """A page URL of each host with pages but no ``sitemaps`` row (its sitemaps
        were never read: the run was stopped or killed first), for a resumed crawl to
        read them (``SitemapReader.resume``).

        Raises:
            StoreError: see the class.
        """
        rows = self._stream(
            "SELECT min(url) FROM pages WHERE host NOT IN (SELECT host FROM sitemaps) GROUP BY host"
        )
        return [url for (url,) in rows]

    def requeue_for_recrawl(self, keys: Sequence[str]) -> None:
        """Put the frontier rows ``keys`` back as ``spilled``, in this order (each gets
        the next ``seq``: the frontier window reads a host's rows back in seq order),
        attempts 0; block until committed. For ``core.recrawl.prepare``, before a run.

        Raises:
            StoreError: see the class.
        """
        self._check()
        if keys:
            seq = self._next_seq
            self._next_seq = seq + len(keys)
            self._put((_RECRAWL, tuple(keys), seq))
        self.flush()

    def page_versions(self) -> Iterator[tuple[str, float, int | None, str | None]]:
        """``(url, fetched_at, status, payload_digest)`` of every fetch of every page
        (``page_versions``), by URL and then oldest first; ``fetched_at`` in epoch s.

        Raises:
            StoreError: see the class.
        """
        rows = self._stream(
            "SELECT url, fetched_at, status, payload_digest FROM page_versions"
            " ORDER BY url, fetched_at"
        )
        for url, at, status, digest in rows:
            yield url, from_iso_utc(at), status, digest

    def recrawl_candidates(
        self,
    ) -> Iterator[tuple[str, str, str | None, str | None, float]]:
        """``(url, key, etag, last_modified, fetched_at)`` of every page a recrawl may
        revisit: a 200 without an error whose frontier row is ``done``; ``fetched_at``
        (epoch s) of its ``pages`` row.

        Raises:
            StoreError: see the class.
        """
        rows = self._stream(
            "SELECT p.url, min(f.key), p.etag, p.last_modified, p.fetched_at FROM pages p"
            " JOIN frontier f ON f.url = p.url WHERE p.status = 200 AND p.error IS NULL"
            " AND f.state = 'done' GROUP BY p.url"
        )
        for url, key, etag, last_modified, at in rows:
            yield url, key, etag, last_modified, from_iso_utc(at)

    def queued_validators(self) -> Iterator[tuple[str, str | None, str | None]]:
        """``(url, etag, last_modified)`` of the URLs queued or spilled whose ``pages``
        row is a 200 with a validator (a recrawl's: ``core.recrawl.validators_of``).
        One index probe of ``pages`` per queued URL.

        Raises:
            StoreError: see the class.
        """
        return self._stream(
            "SELECT p.url, p.etag, p.last_modified FROM frontier f JOIN pages p"
            " ON p.url = f.url WHERE f.state IN ('queued', 'spilled') AND p.status = 200"
            " AND (p.etag IS NOT NULL OR p.last_modified IS NOT NULL)"
        )

    def run_fetches(self, run_id: int) -> Iterator[tuple[int | None, float, str | None]]:
        """``(status, elapsed_ms, error)`` of each committed page of run ``run_id``
        (``pages.run_id``), streamed: a cluster crawl's stats are counted from them.

        Raises:
            StoreError: see the class.
        """
        return self._stream(
            "SELECT status, elapsed_ms, error FROM pages WHERE run_id = ?", (run_id,)
        )

    def seed_urls(self) -> list[str]:
        """The URLs of the crawl's seeds (frontier rows at depth 0), in seq order.

        Raises:
            StoreError: see the class.
        """
        return [url for (url,) in self._stream(
            "SELECT url FROM frontier WHERE depth = 0 ORDER BY seq"
        )]  # fmt: skip

    def last_config(self) -> dict[str, Any] | None:
        """The config of the file's last run (``runs.config``), ``None`` without a run.

        Raises:
            StoreError: see the class (or the JSON does not parse).
        """
        text = self._scalar("SELECT (SELECT config FROM runs ORDER BY id DESC LIMIT 1)")
        if text is None:
            return None
        try:
            value = json.loads(text)
        except ValueError:
            raise StoreError(f"{self._name}: the last run's config is not JSON") from None
        return dict(value)

    def has_crawl(self) -> bool:
        """Whether the file already holds a crawl (any committed frontier row): resume.

        Raises:
            StoreError: see the class.
        """
        return bool(self._scalar("SELECT EXISTS (SELECT 1 FROM frontier)"))


__all__ = [
    "BROKEN_BLOCK_REASONS",
    "BROKEN_LINKS_SELECT",
    "BROKEN_LINKS_SQL",
    "BROKEN_TARGET_SQL",
    "FRONTIER_STATES",
    "MAX_BATCH_OPS",
    "PAGE_COLUMNS_V2",
    "SCHEMA_VERSION",
    "UPGRADABLE_VERSIONS",
    "BlockedRecord",
    "BrokenGroup",
    "Counts",
    "FrontierRow",
    "FrontierState",
    "HostRecord",
    "LinkCheck",
    "PageRecord",
    "SeedOutcome",
    "SitemapRecord",
    "SitemapUrlRecord",
    "Store",
    "anchor_select",
    "check_header",
    "check_schema",
    "from_iso_utc",
    "status_class",
    "status_mix",
    "to_iso_utc",
]
