"""The ``Store``: one crawl's SQLite file, its writes queued for one writer thread
(``core.storage.store.writer``, operations of ``core.storage.store.ops``) and its reads
(``core.storage.store.reads``), over the schema (``core.storage.store.schema``) and the lock
(``core.storage.store.lock``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

from crawldeck.core.errors import StoreError
from crawldeck.core.protocols import StoreRoles
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
from crawldeck.core.storage.store.lock import _erase, _lock_file, _unlock_file
from crawldeck.core.storage.store.ops import (
    AddScores,
    BeginRun,
    Blocked,
    EndRun,
    Enqueue,
    FailUrls,
    Group,
    Mark,
    Op,
    Queued,
    Readmit,
    RecordPage,
    RecordSitemap,
    Recrawl,
    Requeue,
    SetMeta,
    SetScores,
    Stop,
    UpsertHost,
    Waiter,
    _check_states,
    _encode_json,
)
from crawldeck.core.storage.store.reads import StoreReads
from crawldeck.core.storage.store.schema import (
    _add_ordering_columns,
    _prepare_schema,
    check_header,
    check_schema,
)
from crawldeck.core.storage.store.writer import StoreWriter

#: Operations queued for the writer at which the crawl waits (``Store.room``): bounds
#: the memory the queue holds (a page operation holds its row, outlinks and new
#: frontier rows) and how far the file lags behind the crawl (lost on a kill).
MAX_BACKLOG_OPS: Final = 10_000


class Store(StoreWriter, StoreReads):
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
    crawl makes in a thread (``contains``, from ``core.policy.seen``; ``read_spilled`` runs its
    reads and ``flush`` in a thread of its own, one at a time). The write calls only
    queue; ``flush``, ``requeue_failed`` and ``close`` block until the writer has
    committed (from a coroutine, ``await drain()``, or call them through
    ``asyncio.to_thread``). Reads use their own connections and see committed data,
    except ``contains``, which also sees the keys still queued. The queue is bounded by
    back-pressure: the crawl awaits ``room`` before each URL it takes, which waits (on
    the loop, without blocking it) while the backlog is at ``max_backlog`` or more, so
    the backlog stays under ``max_backlog`` plus what the fetches already in flight
    record. Always ``close()`` (or use ``with``): the writer is a daemon thread, and
    what is still queued when the interpreter exits without ``close()`` is lost, as
    after a kill (the file stays consistent).

    Raises (constructor):
        StoreError: the file is in use by another crawldeck (under any of its names, in
            this process or another: see ``core.storage.store.lock``), is not a regular file,
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
        # the runs' begin and end stamps are epoch seconds: the wall clock by default
        clock: Callable[[], float] = time.time,
        fresh: bool = False,
        max_backlog: int = MAX_BACKLOG_OPS,
    ) -> None:
        self.path = Path(path)
        self._high_water = max(1, max_backlog)
        self._room_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._room_lock = threading.Lock()
        self._name = str(path)  # as the operator named it: /etc/passwd, not passwd
        self._clock = clock
        self._flush_interval_s = max(0, flush_interval_ms) / 1000
        self._queue: queue.SimpleQueue[Queued] = queue.SimpleQueue()
        self._group: list[Op] | None = None  # inside atomic()
        self._pending: set[str] = set()
        self._pending_lock = threading.Lock()
        self._kconn_lock = threading.Lock()  # contains() may run in several threads
        self._spill_lock = threading.Lock()  # one read_spilled at a time
        self._roles = StoreRoles(
            run_log=self, keys=self, cash=self, scores=self, history=self, warc_home=None
        )
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

    def _release(self) -> None:
        for conn in (self._rconn, self._kconn, self._wconn):
            if conn is not None:
                conn.close()
        self._rconn = self._kconn = self._wconn = None
        if self._lock_fd >= 0:  # after the connections: see core.storage.store.lock
            _unlock_file(self._lock_fd, self._file_id)
            self._lock_fd = -1

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

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
        group: list[Op] = []
        self._group = group
        try:
            yield
        finally:
            self._group = None
            if group:
                self._queue.put(Group(tuple(group)))

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
        self._put(SetMeta(key, value))

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
        self._put(Enqueue(batch, seq))

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
        self._put(RecordPage(page, key, edges, rows, seq, state, hop, self._run_id))

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
            self._put(FailUrls(tuple(urls), error))

    def requeue_failed(self) -> dict[str, int]:
        """Put the URLs that failed transiently back in the queue; block until committed.

        A frontier row whose page got a 429 or 5xx status (a 5xx other than 503 is
        recorded ``done``: it is not retried within a run), or failed with no response
        for a transient reason (``pages.error`` starting ``timeout:``, ``connect:``,
        ``connection_lost:`` or ``dns_temporary:``: ``TRANSIENT_FAILURE_SQL``), goes
        back to ``queued`` with its ``attempts`` counted on (the next try is a retry:
        ``attempts + 1``). Its ``pages`` row stays until the next try replaces it: a
        run stopped before that still lists the link as broken (``links --broken``,
        ``show``), as Heritrix keeps a URL's last outcome (issue #25 trial 15);
        ``Counts.retrying`` counts these rows. Deterministic failures (4xx,
        ``protocol:``, ``parse_timeout:``, redirect loops) stay failed. For rerunning
        a finished crawl (``Engine`` does this when it resumes).

        Returns:
            the requeued URLs per host key (empty when none).

        Raises:
            StoreError: see the class.
        """
        self._check()
        waiter = Waiter()
        self._queue.put(Requeue(waiter))
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
        self._put(Blocked(rec, self._run_id))

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
        self._put(Mark(state, attempts, available_at, key))

    def add_scores(self, scores: Sequence[tuple[str, float]]) -> None:
        """Queue adding cash to waiting frontier rows: ``(key, cash)`` pairs, each row's
        ``score`` grows by its cash and its ``inlinks`` by one if it is ``queued`` or
        ``spilled`` (OPIC, ``core.policy.prioritizer``: a fetched page's share for each
        outlink the crawl already knows, one pair per linking page; an unknown key, or
        a URL fetched already, is left as it is).

        Raises:
            StoreError: see the class.
        """
        self._check()
        if scores:
            self._put(AddScores([(cash, key) for key, cash in scores]))

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
            self._put(SetScores([(cash, n, key) for key, cash, n in scores]))

    def record_sitemap(self, rec: SitemapRecord, entries: Sequence[SitemapUrlRecord]) -> None:
        """Queue a sitemap's ``sitemaps`` row and the ``sitemap_urls`` rows of the URLs it
        lists, in one operation (INSERT OR REPLACE: read again, the new answer wins).

        Raises:
            StoreError: see the class.
        """
        self._check()
        self._put(RecordSitemap(rec, tuple(entries)))

    def upsert_host(self, rec: HostRecord) -> None:
        """Queue the insert or full replacement of the ``hosts`` row of ``rec.host``.

        Raises:
            StoreError: see the class.
        """
        self._check()
        self._put(UpsertHost(rec))

    def begin_run(self, config: Mapping[str, Any], *, started_at: float | None = None) -> int:
        """Queue a ``runs`` row (status ``running``, ``config`` as JSON); the id is
        allotted here (as ``seq`` is), so nothing waits for the writer. ``started_at``
        (epoch s; ``None``: now) is the time the run's stats give as ``start_time``, so
        that ``crawldeck stats`` shows one start, not two a few µs apart (issue #25).

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
        self._put(BeginRun(run_id, self._clock() if started_at is None else started_at, text))
        return run_id

    def end_run(
        self,
        run_id: int,
        status: str,
        *,
        live_hosts: str | None = None,
        stats: Mapping[str, Any] | None = None,
        finished_at: float | None = None,
    ) -> None:
        """Queue the end of run ``run_id``: ``finished_at`` (epoch s; ``None``: now),
        ``status`` (e.g. ``finished``).

        Args:
            stats: the run's figures (``core.crawl.stats.run_stats``), stored as JSON in
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
        at = self._clock() if finished_at is None else finished_at
        self._put(EndRun(at, status, run_id, live_hosts, text))

    def readmit_excluded(self, rows: Sequence[tuple[str, str]]) -> None:
        """Queue again the frontier rows ``(key, url)`` that an earlier run's include /
        exclude patterns blocked (``blocked`` reason ``excluded``, frontier state
        ``blocked``): each row ``queued``, its ``blocked`` row deleted; block until
        committed. For ``core.crawl.resume.restore`` when this run's patterns let them
        through (issue #25 trial 18: a narrower rerun's refusals were for good).

        Raises:
            StoreError: see the class.
        """
        self._check()
        if rows:
            self._put(Readmit(tuple(rows)))
        self.flush()

    def requeue_for_recrawl(self, keys: Sequence[str]) -> None:
        """Put the frontier rows ``keys`` back as ``spilled``, in this order (each gets
        the next ``seq``: the frontier window reads a host's rows back in seq order),
        attempts 0; block until committed. For ``core.crawl.recrawl.prepare``, before a run.

        Raises:
            StoreError: see the class.
        """
        self._check()
        if keys:
            seq = self._next_seq
            self._next_seq = seq + len(keys)
            self._put(Recrawl(tuple(keys), seq))
        self.flush()

    def roles(self) -> StoreRoles:
        """Every optional role of ``core.protocols.StoreRoles`` but the WARC home (the
        WARC files go beside the crawl file): the runs, the seen set's exact check,
        the OPIC cash, the credits of URLs in memory and the earlier runs."""
        return self._roles

    def close(self) -> None:
        """Commit everything queued, stop the writer, close the file and drop the lock.

        Idempotent. Raises:
            StoreError: a write failed and that was not reported by an earlier call
                (the file is closed and unlocked all the same).
        """
        if self._closed:
            return
        self._closed = True
        self._queue.put(Stop())
        self._thread.join()
        self._release()
        if self._error is not None and not self._error_reported:
            self._error_reported = True
            raise StoreError(self._write_failure(self._error))

    async def read_spilled(
        self, host: str, after: int, limit: int, *, within_s: float = 0.0
    ) -> tuple[list[FrontierRow], int]:
        """``core.protocols.SpillStore.read_spilled``: ``load_spilled`` in a thread of
        the loop's default executor, and when fewer than ``limit`` rows come back,
        ``flush`` and ``load_spilled`` again (rows still queued for the writer are not
        seen by a read). Reads run one after the other (one read connection).
        ``within_s`` is ignored (the file is local).

        Raises:
            StoreError: see the class.
        """
        return await asyncio.to_thread(self._read_spilled, host, after, limit)

    def _read_spilled(self, host: str, after: int, limit: int) -> tuple[list[FrontierRow], int]:
        """``read_spilled``'s reads, in a thread."""
        with self._spill_lock:
            rows, last = self.load_spilled(host, after, limit)
            if len(rows) < limit:
                self.flush()
                rows, last = self.load_spilled(host, after, limit)
            return rows, last


__all__ = ["MAX_BACKLOG_OPS", "Store"]
