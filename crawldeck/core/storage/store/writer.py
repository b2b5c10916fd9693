"""The writer of a crawl file: a queue of operations, one thread that commits them.

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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import sqlite3
import time
from collections import Counter
from typing import Final

from crawldeck.core.errors import StoreError
from crawldeck.core.storage.datasette_meta import metadata_path, write_metadata
from crawldeck.core.storage.store.base import StoreBase
from crawldeck.core.storage.store.ops import EndRun, Op, Requeue, Stop, Sync, Waiter, _requeue
from crawldeck.core.storage.store.schema import _one_line

log = logging.getLogger("crawldeck.store")

#: A batch is committed when it holds this many operations, even before the interval.
MAX_BATCH_OPS: Final = 1000


def _resolve(future: asyncio.Future[None]) -> None:
    """On ``future``'s loop: a ``room`` waiter may go on (unless it was cancelled)."""
    if not future.done():
        future.set_result(None)


class StoreWriter(StoreBase):
    """The writes of a ``Store``: the queue, the back-pressure on it (``room``), the
    writer thread that applies the operations (``core.storage.store.ops``) in batches, and the
    waits for a commit (``flush``, ``drain``)."""

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

    def _put(self, op: Op) -> None:
        if self._group is None:
            self._queue.put(op)
        else:
            self._group.append(op)

    def flush(self) -> None:
        """Block until every operation queued so far is committed.

        Raises:
            StoreError: a write failed; see the class.
        """
        self._check()
        waiter = Waiter()
        self._queue.put(Sync(waiter))
        self._wait(waiter)

    async def drain(self) -> None:
        """``flush`` in a thread of the loop's default executor (``CrawlStore.drain``):
        the loop runs on while the writer commits.

        Raises:
            StoreError: a write failed; see the class.
        """
        await asyncio.to_thread(self.flush)

    def _wait(self, waiter: Waiter) -> None:
        while not waiter.event.wait(0.25):
            if not self._thread.is_alive():  # pragma: no cover - the writer never dies silently
                raise StoreError(f"{self._name}: the writer thread stopped")
        if self._error is not None:
            self._check()

    def _writer(self) -> None:
        conn = self._wconn
        assert conn is not None
        get = self._queue.get
        interval = self._flush_interval_s
        while True:
            op = get()
            if self._error is not None:  # failed: drop the work, still wake waiters
                self._wake_room()
                if isinstance(op, Sync):
                    op.waiter.event.set()
                if isinstance(op, Stop):
                    return
                continue
            keys: list[str] = []
            blocked: Counter[str] = Counter()
            totals: Counter[str] = Counter()
            waiters: list[Waiter] = []
            stop = False
            ended = False  # a run's end is in the batch: the metadata file after it
            try:
                conn.execute("BEGIN IMMEDIATE")
                # the writer thread's batching deadline, a blocking queue wait: real
                # time (a thread cannot wait on the loop's clock)
                deadline = time.monotonic() + interval
                count = 0
                while True:
                    if isinstance(op, Stop):
                        stop = True
                        break
                    if isinstance(op, Requeue):
                        waiters.append(op.waiter)
                        op.waiter.result = _requeue(conn)
                        break
                    if isinstance(op, Sync):
                        waiters.append(op.waiter)
                        break
                    op.apply(conn, keys, blocked, totals)
                    ended = ended or isinstance(op, EndRun)
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
        beside the crawl file (``core.storage.datasette_meta``). A failure (a full disk) is a
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


__all__ = ["MAX_BATCH_OPS", "StoreWriter"]
