"""The helpers that ``tests/loopback/test_no_blocking.py`` and
``tests/unit/test_no_blocking.py`` share: one subject's tests, split by tier (issue #24
item 8)."""

from __future__ import annotations

import asyncio
import builtins
import os
import sqlite3
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from crawldeck.core.storage.store import Store
from crawldeck.core.storage.store.ops import Op


def _on_loop_thread() -> bool:
    """Whether the calling thread is running an event loop."""
    return asyncio._get_running_loop() is not None


class Detector:
    """Records blocking calls made on a thread that runs an event loop.

    ``calls`` holds one ``"what (where)"`` line per call: ``what`` names the call
    (``sql: SELECT ...``, ``Store.flush``, ``open /proc/...``), ``where`` the first
    crawldeck frame of the caller's stack.
    """

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def record(self, what: str) -> None:
        """Add ``what`` with its crawldeck caller, if called on a loop's thread."""
        if not _on_loop_thread():
            return
        where = "?"
        for frame in reversed(traceback.extract_stack()[:-2]):
            if "/core/" in frame.filename and "store.py" not in frame.filename:
                where = f"{Path(frame.filename).name}:{frame.lineno} {frame.name}"
                break
        with self._lock:
            self.calls.append(f"{what} ({where})")

    def summary(self) -> list[str]:
        """Distinct calls, each with how many times it was made, most frequent first."""
        counts: dict[str, int] = {}
        for call in self.calls:
            counts[call] = counts.get(call, 0) + 1
        return [f"{n} x {call}" for call, n in sorted(counts.items(), key=lambda kv: -kv[1])]


class _Connection:
    """A ``sqlite3.Connection`` whose ``execute``/``executemany`` report to a detector."""

    def __init__(self, conn: sqlite3.Connection, detector: Detector) -> None:
        self._conn = conn
        self._detector = detector

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._detector.record(f"sql: {' '.join(sql.split())[:60]}")
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._detector.record(f"sql: {' '.join(sql.split())[:60]}")
        return self._conn.executemany(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@contextmanager
def detecting(store: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[Detector]:
    """Watch ``store``'s connections, its writer waits and ``/proc`` while inside."""
    detector = Detector()
    for name in ("_wconn", "_kconn", "_rconn"):
        conn = getattr(store, name)
        monkeypatch.setattr(store, name, _Connection(conn, detector))
    wait = store._wait

    def watched_wait(waiter: Any) -> None:
        detector.record("Store._wait (the writer thread)")
        wait(waiter)

    monkeypatch.setattr(store, "_wait", watched_wait)
    real_open = builtins.open
    real_listdir = os.listdir

    def watched_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file).startswith("/proc"):
            detector.record(f"open {file}")
        return real_open(file, *args, **kwargs)

    def watched_listdir(path: Any = ".") -> list[Any]:
        if str(path).startswith("/proc"):
            detector.record(f"listdir {path}")
        return real_listdir(path)

    monkeypatch.setattr(builtins, "open", watched_open)
    monkeypatch.setattr(os, "listdir", watched_listdir)
    yield detector


@dataclass(frozen=True, slots=True)
class _Slow:
    """A writer operation (``core.storage.store.ops``) that takes ``delay_s`` more to apply."""

    op: Op
    delay_s: float

    def apply(
        self, conn: sqlite3.Connection, keys: list[str], blocked: Counter[str], totals: Counter[str]
    ) -> None:
        time.sleep(self.delay_s)
        self.op.apply(conn, keys, blocked, totals)


class SlowStore(Store):
    """A ``Store`` whose writer takes ``delay_s`` more per operation."""

    delay_s = 0.004

    def _put(self, op: Op) -> None:
        super()._put(cast(Op, _Slow(op, self.delay_s)))
