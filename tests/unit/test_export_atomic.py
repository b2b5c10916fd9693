"""``crawldeck export -o FILE`` is atomic: the tests that need no server, process or
console (pure logic, the store, virtual time); the others are in
``tests/loopback/test_export_atomic.py``."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import exportkit
import pytest
from exportkit import HEADER

from crawldeck.core.errors import StoreError
from crawldeck.core.storage.export import export_file
from crawldeck.core.storage.store import Store

#: The fixtures shared with the other tier's file, as fixtures of this module.
big_crawl = exportkit.big_crawl


def test_the_new_file_replaces_the_old_with_its_mode_and_links_are_followed(
    big_crawl: Path, tmp_path: Path
) -> None:
    small = tmp_path / "small.db"
    Store(small).close()
    old = tmp_path / "real.csv"
    old.write_text("old\n")
    old.chmod(0o640)
    (tmp_path / "link.csv").symlink_to("real.csv")
    assert export_file(small, "pages", "csv", tmp_path / "link.csv") == 0
    assert (tmp_path / "link.csv").is_symlink()  # the link stays, its target is replaced
    assert old.read_text() == HEADER + "\n"
    assert stat.S_IMODE(old.stat().st_mode) == 0o640
    assert export_file(small, "pages", "jsonl", Path(os.devnull)) == 0  # written in place
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert [name for name in os.listdir(tmp_path) if name.startswith(".")] == []  # no temp


def test_outputs_that_would_replace_the_crawl_are_refused(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    Store(db).close()
    os.link(db, tmp_path / "hard.db")
    (tmp_path / "sym.db").symlink_to("c.db")
    size = db.stat().st_size
    for name in ("c.db", "hard.db", "sym.db", "./c.db"):
        with pytest.raises(StoreError, match="is the crawl file itself"):
            export_file(db, "pages", "csv", tmp_path / name)
    with pytest.raises(StoreError, match=r"'.*c\.db-wal' is a file of the crawl c\.db"):
        export_file(tmp_path / "sym.db", "pages", "csv", tmp_path / "c.db-wal")
    assert db.stat().st_size == size
