"""The link checker's reads of a crawl file (issue #25 item 4; ``crawldeck links``):
``link_report`` streams the ``links`` rows with what each target got
(``core.records.LinkCheck``), or only the broken ones (the ``broken_links`` view's
SELECT, so a file made before the view reads too); ``broken_count``, ``blocked_links``
and ``unchecked_links`` count them. Read-only, as ``core.storage.export`` opens a file
(``reading``: an older schema upgraded first).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from crawldeck.core.errors import CrawldeckError
from crawldeck.core.policy import urls
from crawldeck.core.records import LINKS_CUT_SQL, LinkCheck
from crawldeck.core.storage.export import (
    EXPORT_BATCH_ROWS,
    reading,
    same_page,
    strip_params_of,
)
from crawldeck.core.storage.store import (
    BROKEN_ALL_SELECT,
    BROKEN_BLOCK_REASONS,
    BROKEN_LINKS_SELECT,
    BROKEN_SEEDS_FROM,
    anchor_select,
)
from crawldeck.core.words import plural

_BROKEN_REASONS: Final = "(" + ", ".join(f"'{r}'" for r in BROKEN_BLOCK_REASONS) + ")"
#: Every link with what its target got (``link_report``), in insertion order; a
#: target whose name did not resolve reads as a failed fetch (``error`` ``dns: ...``).
#: A target with a ``pages`` row is judged by it, not by a ``blocked`` row of the same
#: URL (a redirect loop's first hop is both: fetched, then refused when the chain came
#: back to it; issue #25). Its ``final_url`` is as ``broken_links`` gives it: the
#: target itself for a failed chain (whose error tells the chain: its row's own
#: ``final_url`` is only the next hop, which read as the chain's end: issue #25 trial 8),
#: the next hop of a redirect. The ``pages`` and ``blocked`` rows are found by their
#: primary keys.
_SQL_ALL_LINKS: Final = (
    "SELECT l.from_url, l.to_url, p.status, coalesce(p.error, CASE WHEN b.reason IN"
    f" {_BROKEN_REASONS} THEN b.reason || ': ' || b.detail END),"
    " CASE WHEN p.error IS NULL THEN p.final_url ELSE p.url END,"
    f" CASE WHEN p.url IS NULL AND b.reason NOT IN {_BROKEN_REASONS} THEN b.reason END,"
    f" p.url IS NOT NULL OR b.reason IN {_BROKEN_REASONS}"
    " , l.anchor FROM links l LEFT JOIN pages p ON p.url = l.to_url"
    " LEFT JOIN blocked b ON b.url = l.to_url ORDER BY l.rowid"
)
#: The ``broken_links`` view's rows, from its SELECT (``core.storage.store.BROKEN_LINKS_SELECT``)
#: so that a file opened read-only before its next crawl (which adds the view) reads too.
_SQL_BROKEN_LINKS: Final = (
    "SELECT from_url, to_url, status, error, final_url, NULL, 1, anchor"
    f" FROM ({BROKEN_LINKS_SELECT}) ORDER BY to_url, from_url"
)
#: The broken seeds that no page links to (``BROKEN_SEEDS_FROM``): ``links --broken``
#: lists them too, from no page, in the order they were given.
_SQL_BROKEN_SEEDS: Final = (
    "SELECT f.url, p.status, coalesce(p.error, b.reason || ': ' || b.detail), p.url"
    + BROKEN_SEEDS_FROM
    + " ORDER BY f.seq"
)
_SQL_BLOCKED_LINKS: Final = (
    "SELECT b.reason, count(*), count(DISTINCT b.url) FROM blocked b"
    " CROSS JOIN links l ON l.to_url = b.url"
    f" WHERE b.reason NOT IN {_BROKEN_REASONS}"
    " AND NOT EXISTS (SELECT 1 FROM pages p WHERE p.url = b.url)"
    " AND NOT EXISTS (SELECT 1 FROM pages r WHERE r.url = l.from_url"
    " AND r.status BETWEEN 300 AND 399)"
    " GROUP BY b.reason ORDER BY b.reason"
)
#: Links whose target was neither fetched nor refused (``LinkCheck.tried`` false and no
#: ``blocked``: ``crawldeck links``' ``not fetched``).
_SQL_UNCHECKED_LINKS: Final = (
    "SELECT l.to_url FROM links l WHERE NOT EXISTS (SELECT 1 FROM pages p WHERE p.url ="
    " l.to_url) AND NOT EXISTS (SELECT 1 FROM blocked b WHERE b.url = l.to_url)"
)


def _anchored(conn: sqlite3.Connection, sql: str) -> str:
    """``sql`` over ``links`` as the file's columns allow (``anchor_select``: NULL
    anchors for a file made before ``links.anchor``)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(links)")}
    return anchor_select(sql, columns)


def link_report(db: Path, *, broken: bool) -> Iterator[LinkCheck]:
    """The links of the crawl file ``db`` with what their targets got (``crawldeck
    links``), read-only and streaming (``EXPORT_BATCH_ROWS`` a batch): with ``broken``
    only the broken ones (the ``broken_links`` view: HTTP 4xx/5xx, no response, a
    redirect chain that failed), ordered by link then referring page, then the broken
    seeds no page links to (``from_url`` ``None``); else every link
    in insertion order, a target refused untried with ``blocked`` (robots, scope, ...),
    one fetched under another spelling with that page's answer (``same_page``), one
    never reached with ``tried`` false; each with its anchor text (NULL for a file
    made before ``links.anchor``, ``core.storage.store.anchor_select``).

    Raises:
        StoreError: as ``export``.
    """
    with reading(db) as conn:
        strip = strip_params_of(conn)
        cur = conn.execute(_anchored(conn, _SQL_BROKEN_LINKS if broken else _SQL_ALL_LINKS))
        while rows := cur.fetchmany(EXPORT_BATCH_ROWS):
            for from_url, to_url, status, error, final_url, blocked, tried, anchor in rows:
                same_as = None
                pending = None
                if not tried and blocked is None:
                    same = same_page(conn, strip, to_url)
                    if same is not None:
                        (status, error, final_url, same_as), tried = same, True
                    else:
                        pending = _pending(conn, strip, to_url)
                yield LinkCheck(
                    from_url, to_url, status, error, final_url, blocked, bool(tried), broken,
                    anchor, same_as, pending,
                )  # fmt: skip
        if broken:
            for url, status, error, final_url in conn.execute(_SQL_BROKEN_SEEDS):
                yield LinkCheck(None, url, status, error, final_url)


#: A link target's frontier row and its host's state, by the target's dedupe key.
_SQL_PENDING: Final = (
    "SELECT f.state, f.attempts, h.state FROM frontier f LEFT JOIN hosts h ON h.host = f.host"
    " WHERE f.key = ?"
)
#: Host states that hold a host's queued URLs (``hosts.state``), in words.
_HELD_HOSTS: Final = {
    "parked": "parked",
    "demoted": "demoted",
    "backoff": "in backoff",
    "dns_failing": "failing DNS",
}


def _pending(conn: sqlite3.Connection, strip: tuple[str, ...], url: str) -> str | None:
    """What the frontier says of the untried link target ``url`` when there is more to
    say than "not fetched": ``queued after 2 tries, its host parked``; ``None`` for a
    URL never tried on a host that holds nothing back (or no row)."""
    try:
        key = urls.normalize(url, strip)
    except CrawldeckError:
        return None
    row = conn.execute(_SQL_PENDING, (key,)).fetchone()
    if row is None:
        return None
    state, attempts, host_state = row
    parts = []
    if attempts:
        parts.append(f"{state} after {plural(attempts, 'try', 'tries')}")
    if host_state in _HELD_HOSTS:
        parts.append(f"its host {_HELD_HOSTS[host_state]}")
    return ", ".join(parts) or None


def broken_count(db: Path) -> int:
    """How many broken links the crawl file ``db`` holds, read-only: the
    ``broken_links`` view's rows and the broken seeds no page links to, as ``crawldeck
    links --broken`` lists them (``BROKEN_ALL_SELECT``).

    Raises:
        StoreError: as ``export``.
    """
    with reading(db) as conn:
        sql = _anchored(conn, f"SELECT count(*) FROM ({BROKEN_ALL_SELECT})")
        return int(conn.execute(sql).fetchone()[0])


def blocked_links(db: Path) -> dict[str, tuple[int, int]]:
    """Links of ``db`` whose target was refused untried, by ``blocked.reason``
    (``robots``, ``scope``, ...; not ``BROKEN_BLOCK_REASONS``): not broken, never
    checked. Each reason maps to ``(links, URLs)``: the links counted once per page
    that holds them, and the distinct targets (the figure the summary's ``blocked``
    rows count).

    Raises:
        StoreError: as ``export``.
    """
    with reading(db) as conn:
        rows = conn.execute(_SQL_BLOCKED_LINKS).fetchall()
    return {reason: (links, urls) for reason, links, urls in rows}


def unchecked_links(db: Path) -> int:
    """Links of ``db`` whose target was never checked: neither fetched (no ``pages``
    row, under its spelling or its dedupe key: ``same_page``) nor refused (no
    ``blocked`` row), still queued when the crawl stopped (a budget, Ctrl-C); 0 after
    a crawl that finished. Read-only.

    Raises:
        StoreError: as ``export``.
    """
    with reading(db) as conn:
        strip = strip_params_of(conn)
        cur = conn.execute(_SQL_UNCHECKED_LINKS)
        left = 0
        while rows := cur.fetchmany(EXPORT_BATCH_ROWS):
            left += sum(same_page(conn, strip, url) is None for (url,) in rows)
        return left


def cut_pages(db: Path) -> int:
    """Pages of ``db`` whose links were read in part (``LINKS_CUT_SQL``: from the first
    ``parse_max_bytes`` of the body, or the first ``max_links_per_page``): the links
    past the cut were never checked, so no report lists them. Read-only.

    Raises:
        StoreError: as ``export``.
    """
    with reading(db) as conn:
        return int(conn.execute(f"SELECT count(*) FROM pages WHERE {LINKS_CUT_SQL}").fetchone()[0])


__all__ = ["blocked_links", "broken_count", "cut_pages", "link_report", "unchecked_links"]
