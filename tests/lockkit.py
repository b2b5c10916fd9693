"""The helpers that ``tests/loopback/test_store_lock.py`` and
``tests/unit/test_store_lock.py`` share: one subject's tests, split by tier (issue #24
item 8)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from crawldeck.core.errors import StoreError
from crawldeck.core.records import FrontierRow
from crawldeck.core.storage.store import Store


@pytest.fixture
def crawl_file(tmp_path: Path) -> Path:
    """``real/c.db``, a crawl file with one frontier row."""
    (tmp_path / "real").mkdir()
    db = tmp_path / "real" / "c.db"
    with Store(db) as s:
        s.enqueue_urls([FrontierRow("k", "http://a.test/", "a.test", 0, 0)])
    return db


def spellings(db: Path, tmp_path: Path) -> list[Path]:
    """Other names of ``db``: symlinks (absolute, relative, a chain), hard links in
    another directory, and relative paths with ``.`` and ``..`` (the cwd is ``db``'s
    directory, see the tests)."""
    other = tmp_path / "elsewhere"
    other.mkdir()
    (db.parent / "x").mkdir()
    (other / "abs-link.db").symlink_to(db)
    (other / "rel-link.db").symlink_to(Path("..") / "real" / db.name)
    (other / "chain.db").symlink_to(other / "abs-link.db")
    os.link(db, other / "hard.db")
    os.link(db, db.parent / "hard-here.db")
    return [
        other / "abs-link.db",
        other / "rel-link.db",
        other / "chain.db",
        other / "hard.db",
        db.parent / "hard-here.db",
        Path("./x/../c.db"),
        Path("c.db"),
        tmp_path / "real" / ".." / "real" / "." / "c.db",
    ]


def refused(path: Path) -> str:
    with pytest.raises(StoreError) as info:
        Store(path)
    return str(info.value)


@pytest.fixture
def holder_cwd(crawl_file: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(crawl_file.parent)
    return crawl_file
