"""A new user's trial of the command line (issue #14's loose ends): the tests that start a
real server on loopback or a process; the others are in
``tests/unit/test_cli_errors.py``."""

from __future__ import annotations

from pathlib import Path

from clikit import run


def test_a_worker_error_names_the_worker_command(tmp_path: Path) -> None:
    """The cluster side (``cli.cluster``) says its errors in the same form."""
    proc = run("worker", "--redis", "redis://127.0.0.1:9/0", "--crawl-id", "x", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crawldeck worker: error: "), proc.stderr
    assert "127.0.0.1:9" in lines[0]
