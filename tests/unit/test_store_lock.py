"""The single-writer lock holds for every name of a crawl file (issue #10, item 14): the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_store_lock.py``."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import lockkit
from lockkit import refused, spellings

from crawldeck.core.records import FrontierRow
from crawldeck.core.storage.store import Store

#: The fixtures shared with the other tier's file, as fixtures of this module.
crawl_file = lockkit.crawl_file
holder_cwd = lockkit.holder_cwd


def posix_locks(db: Path) -> list[str]:
    """This process's POSIX record locks on ``db``'s inode, from /proc/locks (SQLite's)."""
    st = os.stat(db)
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    found = []
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            if fields[1] == "POSIX" and fields[4] == str(os.getpid()) and fields[5] == inode:
                found.append(" ".join(fields[1:]))
    return sorted(found)


def descriptors_on(db: Path) -> int:
    """How many descriptors of this process are open on ``db``'s inode."""
    st = os.stat(db)
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            other = os.fstat(int(name))
        except OSError:
            continue
        count += (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)
    return count


def test_every_name_is_refused_in_the_same_process_without_dropping_sqlite_locks(
    holder_cwd: Path, tmp_path: Path
) -> None:
    db = holder_cwd
    names = spellings(db, tmp_path)
    first = Store(db)
    try:
        held = posix_locks(db)
        assert held  # SQLite's shared lock of a WAL connection on the database file
        for path in names:
            message = refused(path)
            assert message == f"{path} is in use by another crawldeck (pid {os.getpid()})"
        # a refusal opened and closed nothing: SQLite's locks are all still there
        assert posix_locks(db) == held
        first.enqueue_urls([FrontierRow("k2", "http://a.test/2", "a.test", 0, 0)])
        first.flush()
    finally:
        first.close()
    for path in names:
        with Store(path) as s:
            assert s.counts()["queued"] == 2


def test_closing_keeps_the_locks_of_another_connection_of_this_process(crawl_file: Path) -> None:
    s = Store(crawl_file)
    reader = sqlite3.connect(crawl_file)
    try:
        cur = reader.execute("SELECT key FROM frontier")  # a read transaction stays open
        assert cur.fetchone() == ("k",)
        held = posix_locks(crawl_file)
        assert held
        s.close()
        # the Store's descriptor was not closed under the reader: its lock survives
        assert posix_locks(crawl_file) == held
        with Store(crawl_file) as again:  # and the flock itself is gone
            assert again.counts()["queued"] == 1
        cur.close()
    finally:
        reader.close()
    Store(crawl_file).close()  # closes the descriptors parked meanwhile
    assert descriptors_on(crawl_file) == 0
    assert posix_locks(crawl_file) == []
