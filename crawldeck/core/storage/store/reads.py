"""The reads of the crawl file: what resume, the frontier window, the seen set, export,
``show``, recrawl, stats and the console ask of a ``Store``, on its read connections
(committed rows only, but ``contains``).
"""

from __future__ import annotations

import heapq
import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, Final

from crawldeck.core.errors import StoreError
from crawldeck.core.policy.simhash import to_unsigned
from crawldeck.core.records import (
    LINKS_CUT_ERRORS,
    LINKS_CUT_SQL,
    PARTIAL_ERROR,
    SPILL_SEQ_SPAN,
    BlockedRecord,
    BrokenGroup,
    Counts,
    FrontierRow,
    HostRecord,
    LinkCheck,
    SeedOutcome,
    from_iso_utc,
)
from crawldeck.core.storage.store.base import StoreBase
from crawldeck.core.storage.store.lock import _disk_full, _is_disk_full
from crawldeck.core.storage.store.ops import _SQL_TRANSIENT_FAILURES, _encode_json
from crawldeck.core.storage.store.schema import (
    _FRONTIER_COLUMNS,
    BROKEN_ALL_SELECT,
    TRANSIENT_FAILURE_SQL,
    _one_line,
)

#: ``Counts.retrying``: the pages of a transient failure whose URL is queued again.
_SQL_RETRYING: Final = (
    "SELECT count(*) FROM pages p JOIN frontier f ON f.url = p.url"
    f" WHERE f.state IN ('queued', 'spilled', 'in_flight') AND {TRANSIENT_FAILURE_SQL}"
)

#: Rows fetched per ``fetchmany`` by the streaming readers.
READ_BATCH_ROWS: Final = 1000

#: ``Store.broken_groups``: each group of the broken links (``BROKEN_ALL_SELECT``: the
#: ``broken_links`` view's rows and the broken seeds; by status and the reason of the
#: error) with its size and its first ``?`` rows, the largest group first.
_SQL_BROKEN_GROUPS: Final = (
    "WITH k AS (SELECT *, CASE WHEN error IS NULL THEN NULL WHEN instr(error, ':') > 0"
    " THEN substr(error, 1, instr(error, ':') - 1) ELSE error END AS reason"
    f" FROM ({BROKEN_ALL_SELECT})),"
    " g AS (SELECT status, reason, count(*) AS n, count(DISTINCT to_url) AS u FROM k"
    " GROUP BY status, reason),"
    " t AS (SELECT *, row_number() OVER (PARTITION BY status, reason, to_url"
    " ORDER BY from_url) AS j FROM k),"
    " r AS (SELECT *, row_number() OVER (PARTITION BY status, reason"
    " ORDER BY j, to_url, from_url) AS k FROM t)"
    " SELECT g.status, g.reason, g.n, g.u, r.from_url, r.to_url, r.status, r.error,"
    " r.final_url, r.anchor FROM g JOIN r ON r.status IS g.status AND r.reason IS g.reason"
    " AND r.k <= ? ORDER BY g.n DESC, g.status, g.reason, r.k"
)


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


class StoreReads(StoreBase):
    """The reads of a ``Store`` (see ``core.storage.store.facade.Store`` for the threading):
    its own read connections, committed rows only (but ``contains``, which sees the
    keys still queued too); each raises ``StoreError`` with one line when SQLite fails.
    """

    def _reader(self) -> sqlite3.Connection:
        self._check()
        assert self._rconn is not None
        return self._rconn

    def contains(self, key: str) -> bool:
        """Whether the frontier holds ``key``: queued-but-uncommitted keys, then SQLite.

        One primary-key lookup (tens of microseconds) when the key is not pending. The
        one call that may run in any thread (``core.policy.seen.SeenSet.seen_among`` calls it
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

    def load_excluded(self) -> Iterator[FrontierRow]:
        """Stream the frontier rows an earlier run's include / exclude patterns blocked
        (state ``blocked``, a ``blocked`` row of reason ``excluded``), in ``seq`` order,
        as ``queued`` rows: what ``readmit_excluded`` may queue again. Committed rows
        only.

        Raises:
            StoreError: see the class.
        """
        self._reader()
        sql = (
            f"SELECT {_FRONTIER_COLUMNS} FROM frontier WHERE state = 'blocked' AND url IN"
            " (SELECT url FROM blocked WHERE reason = 'excluded') ORDER BY seq"
        )
        return (_row_to_frontier(row, "queued") for row in self._stream(sql, ()))

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

    def fetch_records(self) -> int:
        """Recorded fetches of every run: ``page_versions`` rows (a page's answer or final
        failure, a revisit's 304, each try a rerun made), committed with their pages,
        so after a kill they may be ahead of ``hosts.pages_fetched``, which is written
        at intervals (issue #25 trial 21).

        Raises:
            StoreError: see the class.
        """
        return int(self._scalar("SELECT count(*) FROM page_versions"))

    def fetches_by_host(self) -> dict[str, int]:
        """``fetch_records`` per host key (a join of ``page_versions`` to ``pages``:
        read on resume only when the hosts rows are behind).

        Raises:
            StoreError: see the class.
        """
        rows = self._stream(
            "SELECT p.host, count(*) FROM page_versions v JOIN pages p ON p.url = v.url"
            " GROUP BY p.host"
        )
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
            retrying=int(self._scalar(_SQL_RETRYING)),
        )

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

    def partial_pages(self) -> int:
        """Committed pages read in part: their body cut at ``max_body_bytes`` or when
        the read was stopped (``error`` ``body_too_large: ...``, as ``Recorder`` marks
        a truncated result), over all runs; for the end-of-crawl summary (issue #25).

        Raises:
            StoreError: see the class.
        """
        return int(self._scalar(f"SELECT count(*) FROM pages WHERE error LIKE '{PARTIAL_ERROR}:%'"))

    def links_cut_pages(self) -> int:
        """Committed pages whose links were cut: read from the first ``parse_max_bytes``
        of the body only, or past ``max_links_per_page`` (``error`` starting as one of
        ``LINKS_CUT_SQL``), over all runs; for the end-of-crawl summary (issue #25).

        Raises:
            StoreError: see the class.
        """
        return int(self._scalar(f"SELECT count(*) FROM pages WHERE {LINKS_CUT_SQL}"))

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
        """The committed broken links (the ``broken_links`` view's rows and the broken
        seeds no page links to, as ``crawldeck links --broken`` lists them:
        ``BROKEN_ALL_SELECT``) grouped by what their target got: its HTTP status and
        the reason of its error (``connect``, ``dns``, ``redirect_loop``:
        ``pages.error`` up to its ``:``), the largest group first
        (then by status and reason), each with its count of links and of distinct
        targets and its first ``per_group`` links: one link to each target first (by
        target, then referring page), then the second ones, so the first lines show
        different URLs (issue #25 trial 13: three links to one URL). Four passes over the
        view (its rows are few: one per broken link), for the end-of-crawl summary.

        Raises:
            StoreError: see the class.
        """
        groups: dict[tuple[int | None, str | None], BrokenGroup] = {}
        rows = self._stream(_SQL_BROKEN_GROUPS, (per_group,))
        for status, reason, count, targets, *link in rows:
            group = groups.get((status, reason))
            if group is None:
                group = BrokenGroup(status, reason, count, targets, [])
                groups[(status, reason)] = group
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
        that were not duplicates, oldest row first: what ``core.storage.archive`` rebuilds its
        digest map from on resume. Reads on a connection of its own, so it may run in
        any one thread (the WARC writer's) while the crawl reads the store.

        Raises:
            StoreError: see the class.
        """
        yield from self._read_alone(
            "SELECT payload_digest, url, fetched_at, canonical_url FROM pages"
            " WHERE payload_digest IS NOT NULL AND duplicate_of IS NULL ORDER BY rowid"
        )

    def warc_file_names(self) -> list[str]:
        """The distinct ``warc_file`` names of the committed pages (``crawl-00003.warc.gz``,
        or with the directory ``recorded_prefix`` puts before it), in no order: the
        WARC writer numbers its first file past them (``core.storage.warc_writer``).
        One scan of ``pages``, on a connection of its own like ``first_payloads``.

        Raises:
            StoreError: see the class.
        """
        sql = "SELECT DISTINCT warc_file FROM pages WHERE warc_file IS NOT NULL"
        return [name for (name,) in self._read_alone(sql)]

    def _read_alone(self, sql: str) -> Iterator[tuple[Any, ...]]:
        """The rows of ``sql``, read in batches on a connection of this call's own
        (``query_only``), closed when the rows end or the iterator is dropped: the
        readers that may run in another thread than the crawl's (the WARC writer's).

        Raises:
            StoreError: see the class.
        """
        self._check()
        conn = self._connect()
        try:
            conn.execute("PRAGMA query_only = ON")
            cur = conn.execute(sql)
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

    def page_versions(self) -> Iterator[tuple[str, float, int | None, str | None, str]]:
        """``(url, fetched_at, status, payload_digest, content_type)`` of every fetch of
        every page (``page_versions``), by URL and then oldest first; ``fetched_at`` in
        epoch s; ``content_type`` the media type of the page's row now (``""`` when
        none: whether a crawl reads such a body, ``core.crawl.recrawl``).

        Raises:
            StoreError: see the class.
        """
        rows = self._stream(
            "SELECT v.url, v.fetched_at, v.status, v.payload_digest, p.content_type"
            " FROM page_versions v LEFT JOIN pages p ON p.url = v.url"
            " ORDER BY v.url, v.fetched_at"
        )
        for url, at, status, digest, media in rows:
            yield url, from_iso_utc(at), status, digest, media or ""

    def recrawl_candidates(
        self,
    ) -> Iterator[tuple[str, str, str | None, str | None, float]]:
        """``(url, key, etag, last_modified, fetched_at)`` of every page a recrawl may
        revisit: a 200 without an error, or whose only error is that its links were cut
        (``LINKS_CUT_ERRORS``: the page itself is whole), or a 4xx (a broken link's
        target may be there now: a link checker checks it again), whose frontier row is
        ``done``; ``fetched_at`` (epoch s) of its ``pages`` row.

        Raises:
            StoreError: see the class.
        """
        cut = " OR ".join(f"p.error LIKE '{start}%'" for start in LINKS_CUT_ERRORS)
        rows = self._stream(
            "SELECT p.url, min(f.key), p.etag, p.last_modified, p.fetched_at FROM pages p"
            f" JOIN frontier f ON f.url = p.url WHERE (p.status = 200 AND (p.error IS NULL"
            f" OR {cut}) OR p.status BETWEEN 400 AND 499) AND f.state = 'done' GROUP BY p.url"
        )
        for url, key, etag, last_modified, at in rows:
            yield url, key, etag, last_modified, from_iso_utc(at)

    def queued_validators(self) -> Iterator[tuple[str, str | None, str | None]]:
        """``(url, etag, last_modified)`` of the URLs queued or spilled whose ``pages``
        row is a 200 with a validator (a recrawl's: ``core.crawl.recrawl.validators_of``).
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

    def transient_failures(self) -> int:
        """How many URLs failed transiently (429, 5xx, no response): the next run
        queues them again (``requeue_failed``, which does the writing).

        Raises:
            StoreError: see the class.
        """
        return int(self._scalar(f"SELECT count(*) FROM ({_SQL_TRANSIENT_FAILURES})"))

    def queued_revisits(self) -> int:
        """How many URLs the queue holds (``queued``, ``spilled``, ``in_flight``) whose
        stored page is a 200: a stopped recrawl's revisits not yet made. One pass over
        the queued rows, an index probe of ``pages`` each.

        Raises:
            StoreError: see the class.
        """
        return int(self._scalar(
            "SELECT count(*) FROM frontier f JOIN pages p ON p.url = f.url"
            " WHERE f.state IN ('queued', 'spilled', 'in_flight') AND p.status = 200"
        ))  # fmt: skip

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


__all__ = ["READ_BATCH_ROWS", "StoreReads"]
