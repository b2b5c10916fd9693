"""A clone's ``git status`` stays clean after README's commands (issue #25): ``.gitignore``
covers the crawl file and its companions, the WARC files, and what the README's
``-o FILE`` and ``--mirror DIR`` write."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from crawldeck.core.crawl.attach import socket_path
from crawldeck.core.storage.datasette_meta import metadata_path

ROOT = Path(__file__).parents[2]


def _readme_outputs() -> list[str]:
    """The files and folders README's shell commands name after ``-o`` or ``--mirror``."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = "\n".join(re.findall(r"^```sh\n(.*?)^```", readme, flags=re.M | re.S))
    return re.findall(r"(?:-o|--output|--mirror|--stats-json) ([\w./-]+)", blocks)


def _left_by_a_crawl(tmp: Path, db: str) -> list[Path]:
    """The paths a crawl into ``db`` (in the current directory) leaves: the file, its
    SQLite journal files, lock, attach socket, Datasette metadata, WARC file and the
    private Redis of ``--workers``."""
    path = tmp / db
    stem = db.removesuffix(".db")
    return [
        path,
        *(tmp / (db + suffix) for suffix in ("-wal", "-shm", "-journal", ".lock")),
        socket_path(path),
        metadata_path(path),
        tmp / f"{stem}-00001.warc.gz",
        tmp / f"{db}.redis" / "dump.rdb",
    ]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_status_is_clean_after_the_readmes_commands(tmp_path: Path) -> None:
    outputs = _readme_outputs()
    assert "site" in outputs and "pages.csv" in outputs  # the mirror and the CSV
    shutil.copy(ROOT / ".gitignore", tmp_path / ".gitignore")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    made = [*_left_by_a_crawl(tmp_path, "crawl.db"), *_left_by_a_crawl(tmp_path, "demo.db")]
    for name in outputs:
        made.append(tmp_path / name / "index.html" if "." not in name else tmp_path / name)
    made.append(tmp_path / "warc" / "crawl-00001.warc.gz")  # --warc-dir warc
    for path in made:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert status.stdout.splitlines() == ["?? .gitignore"]
