"""The crawl file's schema: its tables, views and indexes, the checks of a file opened
(``check_header``, ``check_schema``) and the upgrade of an older version in place.

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
              ``core.policy.simhash.to_signed``), near_duplicate_of (fk pages.url); from
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
              cash: ``core.policy.prioritizer``, issue #15; 0 under other orderings), inlinks
              (INTEGER, the fetched pages that linked to it, counted under the cash
              orderings; 1 otherwise); score and inlinks are added on open to a file
              that lacks them
    links     from_url (fk pages.url), to_url (fk pages.url, indexed), pk (from_url,
              to_url): a page's outlinks; a page recorded again replaces them (its
              latest response wins, as its ``pages`` row); anchor (issue #25: the
              link's anchor text, ``core.policy.links.Extracted.anchors``, NULL without
              one, for a redirect's edge and in rows of a crawldeck before it, whose
              files get the column on open)
    sitemaps  url (unique), host, fetched_at (TEXT, UTC), status (HTTP, NULL without an
              answer), kind (urlset, sitemapindex, text), urls (listed and kept), error
              (``reason: detail``; ``core.policy.sitemaps``); created on open if missing
    sitemap_urls url, sitemap (unique together; url indexed), lastmod_at (TEXT, UTC),
              changefreq, priority (REAL): what each sitemap says of each URL
    page_versions url, fetched_at (TEXT, UTC; indexed together), status,
              payload_digest, etag, last_modified, run_id (fk runs.id): one row per
              fetch of a page, every run's, kept when ``pages`` replaces its row; a 304
              is a row of its own with the digest of the version it confirms, and
              leaves ``pages`` as it was (``core.crawl.recrawl``)
    runs      id (pk), started_at (TEXT, UTC), finished_at (TEXT, UTC), status,
              config (JSON object), stats (JSON object: the run's figures,
              ``core.crawl.stats``; NULL while it runs, for a run killed, and for the runs
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
(read-only: ``core.storage.export``) reads its links' anchor as NULL (``anchor_select``).

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

import contextlib
import os
import sqlite3
from collections.abc import Collection
from pathlib import Path
from typing import Final
from urllib.parse import quote

from crawldeck.core.errors import StoreError

#: The schema this code writes; a file of an older version in ``UPGRADABLE_VERSIONS``
#: is upgraded in place when a ``Store`` opens it, any other version is refused.
SCHEMA_VERSION: Final = 3

#: Versions brought to ``SCHEMA_VERSION`` on open, in one transaction (``_upgrade``):
#: 1 -> 2 the ``pages`` columns of issue #13 (``ALTER TABLE ... ADD COLUMN``, NULL in
#: old rows); 2 -> 3 the keys, names and views of issue #14 item 11.
UPGRADABLE_VERSIONS: Final = frozenset({"1", "2"})

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

#: The condition of a ``pages`` row ``p`` whose failure may pass: a 429 or 5xx (RFC 9110
#: §15.6: the server's trouble, not the URL's), or no response for a transient reason
#: (``error`` starting ``timeout:``, ``connect:``, ``connection_lost:`` or
#: ``dns_temporary:``). A rerun queues such URLs again (``Store.requeue_failed``), and
#: the row keeps the earlier answer until the new one replaces it.
TRANSIENT_FAILURE_SQL: Final = (
    "(p.status = 429 OR p.status >= 500 OR p.error LIKE 'timeout:%'"
    " OR p.error LIKE 'connect:%' OR p.error LIKE 'connection_lost:%'"
    " OR p.error LIKE 'dns_temporary:%')"
)

#: The ``blocked`` reasons that are a broken link's: the name does not resolve (the
#: crawl records it in ``blocked``, not ``pages``: no request was sent), and an href
#: that is no URL (``bad_url``: ``http://[bad``, a port past 65535; its ``links`` row
#: goes to the href as written), which linkchecker reports as an error. Every other
#: reason is a refusal (robots.txt, scope, a trap rule, a cap, a ``mailto:``): the URL
#: was never tried, so a link to it is not broken.
BROKEN_BLOCK_REASONS: Final = ("dns", "bad_url")

_BROKEN_REASONS_SQL: Final = "(" + ", ".join(f"'{r}'" for r in BROKEN_BLOCK_REASONS) + ")"

#: Redirects followed back from a broken target (``BROKEN_LINKS_SELECT``): more hops
#: than any chain the crawl follows by default (``max_redirects``, 20).
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

#: The FROM and WHERE of the seeds whose target is broken and that no page links to (a
#: page that does is in ``broken_links``), over ``frontier f``, ``pages p`` and
#: ``blocked b``: a link checker reports its start URL when it fails (linkchecker does;
#: issue #25 trial 11). ``crawldeck links --broken``, the end-of-crawl summary and the
#: console count them with the view's rows, so the three agree (trial 15).
BROKEN_SEEDS_FROM: Final = (
    " FROM frontier f LEFT JOIN pages p ON p.url = f.url LEFT JOIN blocked b ON b.url = f.url"
    f" WHERE f.depth = 0 AND f.via IS NULL AND (p.url IS NOT NULL AND {BROKEN_TARGET_SQL}"
    f" OR p.url IS NULL AND b.reason IN {_BROKEN_REASONS_SQL})"
    " AND NOT EXISTS (SELECT 1 FROM links l WHERE l.to_url = f.url)"
)
#: Every broken link as ``broken_links``' columns (``from_url`` ... ``anchor``): the
#: view's rows (from its SELECT: a file made before the view reads too), then the
#: broken seeds (``BROKEN_SEEDS_FROM``; ``from_url`` NULL).
BROKEN_ALL_SELECT: Final = (
    f"SELECT from_url, to_url, status, error, final_url, anchor FROM ({BROKEN_LINKS_SELECT})"
    " UNION ALL SELECT NULL, f.url, p.status, coalesce(p.error, b.reason || ': ' || b.detail),"
    " p.url, NULL" + BROKEN_SEEDS_FROM
)


def anchor_select(sql: str, columns: Collection[str]) -> str:
    """``sql``, a SELECT that reads ``l.anchor`` of ``links l`` (``BROKEN_LINKS_SELECT``),
    for a file whose ``links`` has ``columns``: as is, or reading NULL for the anchor
    when the file was made before ``links.anchor`` and not opened by a ``Store`` since
    (a read-only reader does not add the column)."""
    return sql if "anchor" in columns else sql.replace("l.anchor", "NULL")


#: Exact duplicates are found by payload digest (``core.storage.archive``'s map, rebuilt from it).
_SQL_DIGEST_INDEX: Final = (
    "CREATE INDEX IF NOT EXISTS pages_payload_digest ON pages (payload_digest)"
    " WHERE payload_digest IS NOT NULL"
)

#: Spilled rows by host, in (priority, seq) order (the frontier window reads a host's
#: rows back best priority first, ``load_spilled``): a partial index, so rows in any
#: other state (nearly all of them) cost it nothing; a row leaves it when its state
#: changes.
_SQL_SPILLED_INDEX: Final = (
    "CREATE INDEX IF NOT EXISTS frontier_spilled_host_priority_seq "
    "ON frontier (host, priority, seq) WHERE state = 'spilled'"
)

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

#: The sitemap tables (issue #13 item 6), made on open when a file lacks them.
_SQL_SITEMAP_TABLES: Final = (
    "CREATE TABLE IF NOT EXISTS sitemaps (url TEXT NOT NULL UNIQUE, host TEXT NOT NULL,"
    " fetched_at TEXT NOT NULL, status INTEGER, kind TEXT, urls INTEGER NOT NULL, error TEXT)",
    "CREATE TABLE IF NOT EXISTS sitemap_urls (url TEXT NOT NULL, sitemap TEXT NOT NULL,"
    " lastmod_at TEXT, changefreq TEXT, priority REAL, UNIQUE (url, sitemap))",
    "CREATE INDEX IF NOT EXISTS sitemap_urls_url ON sitemap_urls (url)",
)

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


#: The first 16 bytes of every SQLite file (a crawl file's too).
SQLITE_HEADER: Final = b"SQLite format 3\x00"


def is_sqlite_file(path: Path) -> bool:
    """Whether ``path`` starts with ``SQLITE_HEADER`` (``False`` when it cannot be read):
    a crawl file given where a text file is asked for (``crawldeck crawl crawl.db``)."""
    try:
        with path.open("rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def check_header(path: Path) -> None:
    """Refuse a non-empty file that does not start with the SQLite magic string.

    SQLite itself takes a file shorter than its header for an empty database and would
    write a schema over it; this check keeps such a file untouched.

    Raises:
        StoreError: the file exists, is not empty and is not SQLite, or cannot be read.
    """
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
    if head and head != SQLITE_HEADER:
        raise StoreError(f"{path} is not a SQLite crawl file (file is not a database)")


def connect_reader(path: Path) -> sqlite3.Connection:
    """A connection (autocommit) that reads the crawl file ``path`` and writes nothing,
    while a crawl may be writing it (WAL: readers never block the writer).

    Opened read-write under ``PRAGMA query_only``: the last connection to a WAL file
    checkpoints it and removes its ``-wal`` and ``-shm`` files when it closes, which a
    ``mode=ro`` connection cannot do (a ``stats`` or ``export`` left the two files
    beside the crawl file; issue #25). Read-only (``mode=ro``) when the file or its
    directory cannot be written (a read-only mount or copy). The URI's path is
    percent-encoded (a ``?`` or ``#`` in a name is the file's, not the URI's).

    Raises:
        sqlite3.Error: SQLite cannot open ``path`` (it does not exist: neither mode
            creates it).
    """
    resolved = path.resolve()
    writable = os.access(resolved, os.W_OK) and os.access(resolved.parent, os.W_OK)
    uri = f"file:{quote(str(resolved), safe='/')}?mode={'rw' if writable else 'ro'}"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    if writable:
        conn.execute("PRAGMA query_only = ON")
    return conn


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


def _drop_changed_views(cur: sqlite3.Cursor) -> None:
    """Drop each view of the file whose definition is not this version's (made anew by
    ``_prepare_schema``): a view holds no data, and its SQL may change without a schema
    version (a file opened by a crawldeck whose views said otherwise keeps its old ones
    under ``CREATE VIEW IF NOT EXISTS``)."""
    views = {
        "page_summary": PAGE_SUMMARY_SQL,
        "host_summary": HOST_SUMMARY_SQL,
        "broken_links": BROKEN_LINKS_SQL,
    }
    for name, sql in cur.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view'"):
        made = views.get(name)
        if made is not None and sql != made.replace(" IF NOT EXISTS", "", 1):
            cur.execute(f"DROP VIEW {name}")


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
            _drop_changed_views(cur)
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


__all__ = [
    "BROKEN_ALL_SELECT",
    "BROKEN_BLOCK_REASONS",
    "BROKEN_LINKS_SELECT",
    "BROKEN_LINKS_SQL",
    "BROKEN_REDIRECT_HOPS",
    "BROKEN_SEEDS_FROM",
    "BROKEN_TARGET_SQL",
    "HOST_SUMMARY_SQL",
    "PAGE_COLUMNS_V2",
    "PAGE_SUMMARY_SQL",
    "RENAMED_COLUMNS",
    "SCHEMA_VERSION",
    "SQLITE_HEADER",
    "TRANSIENT_FAILURE_SQL",
    "UPGRADABLE_VERSIONS",
    "anchor_select",
    "check_header",
    "check_schema",
    "connect_reader",
    "is_sqlite_file",
]
