"""The state a ``Store``'s parts share, and the checks every call makes."""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Final

from crawldeck.core.errors import StoreError
from crawldeck.core.storage.store.lock import _disk_full, _is_disk_full
from crawldeck.core.storage.store.ops import Op, Queued
from crawldeck.core.storage.store.schema import _one_line

#: Prepared statements a connection of the store keeps (sqlite3's LRU cache by SQL).
CACHED_STATEMENTS: Final = 256


class StoreBase:
    """The state a ``Store`` shares between its writes (``core.storage.store.writer``), its reads
    (``core.storage.store.reads``) and its facade (``core.storage.store.facade``, which sets every
    attribute in ``Store.__init__``), and the checks every call makes."""

    path: Path
    _name: str
    _clock: Callable[[], float]
    _flush_interval_s: float
    _high_water: int
    _room_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]
    _room_lock: threading.Lock
    _queue: queue.SimpleQueue[Queued]
    _group: list[Op] | None
    _pending: set[str]
    _pending_lock: threading.Lock
    _kconn_lock: threading.Lock
    _spill_lock: threading.Lock
    _error: BaseException | None
    _error_reported: bool
    _blocked_added: Counter[str]
    _pages_added: Counter[str]
    _closed: bool
    _run_id: int | None
    _next_seq: int
    _next_run_id: int
    _lock_fd: int
    _file_id: tuple[int, int]
    _wconn: sqlite3.Connection | None
    _kconn: sqlite3.Connection | None
    _rconn: sqlite3.Connection | None
    _thread: threading.Thread

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

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                # the writer's statements, with ``_insert_rows``'s 32 sizes of each of
                # its three INSERTs, stay prepared (sqlite3 keeps 128 by default)
                cached_statements=CACHED_STATEMENTS,
            )
        except sqlite3.Error as exc:
            raise StoreError(self._open_failure(exc)) from None
        conn.execute("PRAGMA busy_timeout = 5000")
        return conn

    def _open_failure(self, exc: sqlite3.Error) -> str:
        if _is_disk_full(exc, self.path):
            return _disk_full(self._name, exc)
        return f"cannot open {self.path}: {_one_line(exc)}"


__all__ = ["StoreBase"]
