"""The SQLite store against real files: the tests that start a real server on loopback or a
process; the others are in ``tests/unit/test_store.py``."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from crawldeck.core.errors import StoreError
from crawldeck.core.records import (
    FrontierRow,
)
from crawldeck.core.storage.store import Store

REPO = Path(__file__).resolve().parents[2]


def raw(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows from a separate plain connection (what another reader of the file sees)."""
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "crawl.db"


# ---------------------------------------------------------------- crash safety

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from crawldeck.core.records import FrontierRow, PageRecord
    from crawldeck.core.storage.store import Store

    s = Store(Path(sys.argv[1]), flush_interval_ms=2)
    s.enqueue_urls([FrontierRow("p0", "http://h.test/p0", "h.test", 0, 0)])
    s.flush()
    print("ready", flush=True)
    i = 0
    while True:
        url = f"http://h.test/p{i}"
        links = [(url, f"{url}/l{j}") for j in range(20)]
        new = [FrontierRow(f"p{i}/l{j}", f"{url}/l{j}", "h.test", 1, 1, via=url) for j in range(5)]
        new.append(FrontierRow(f"p{i + 1}", f"http://h.test/p{i + 1}", "h.test", 0, 0))
        page = PageRecord(url, url, "h.test", 0, 200, "text/html", 100, 1.0, float(i),
                          False, None, False)
        s.record_page(page, key=f"p{i}", links=links, new_rows=new, state="done")
        i += 1
        if i == 1500:
            s.flush()
            print("flushed", flush=True)
        while s.backlog > 3000:
            time.sleep(0.001)
    """
)


def test_sigkill_mid_write_leaves_a_consistent_prefix(db: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        with pytest.raises(StoreError) as info:  # the child holds the lock
            Store(db)
        assert str(info.value) == f"{db} is in use by another crawldeck (pid {proc.pid})"
        assert proc.stdout.readline() == "flushed\n"
        proc.send_signal(signal.SIGKILL)  # the child keeps writing until this instant
        proc.wait()
    assert proc.returncode == -signal.SIGKILL

    with Store(db) as s:  # the kernel dropped the child's lock; WAL recovery on open
        pages = [r[0] for r in raw(db, "SELECT url FROM pages ORDER BY rowid")]
        m = len(pages)
        assert m >= 1500  # everything flushed before the kill survived
        # a prefix: pages 0..m-1, in order, nothing else
        assert pages == [f"http://h.test/p{i}" for i in range(m)]
        assert raw(db, "SELECT count(*) FROM links") == [(20 * m,)]
        linked = raw(db, "SELECT count(*) FROM links l JOIN pages p ON l.from_url = p.url")
        assert linked == [(20 * m,)]
        # every page's own row is done, its 5 link rows and the next page's row exist
        states = dict(raw(db, "SELECT key, state FROM frontier"))
        assert len(states) == 1 + 6 * m
        for i in range(m):
            assert states[f"p{i}"] == "done"
            for j in range(5):
                assert states[f"p{i}/l{j}"] == "queued"
        assert states[f"p{m}"] == "queued"  # the page that was not recorded is still queued
        counts = s.counts()
        assert (counts["pages"], counts["done"], counts["queued"]) == (m, m, 5 * m + 1)
        # the resumed frontier is in insertion order and seq continues after the crash
        first = next(s.load_frontier())
        assert first.key == "p0/l0"
        s.enqueue_urls([FrontierRow("new", "http://h.test/new", "h.test", 0, 0)])
        s.flush()
        assert list(s.load_frontier())[-1].key == "new"
