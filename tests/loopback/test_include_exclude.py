"""Include and exclude patterns (issue #14 item 3): the tests that start a real server on
loopback or a process; the others are in ``tests/unit/test_include_exclude.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CRAWLDECK = str(Path(sys.executable).parent / "crawldeck")


def test_the_command_refuses_a_bad_pattern_in_one_line(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.0.0.1:9/\n")
    done = subprocess.run(
        [CRAWLDECK, "crawl", str(seeds), "--no-ui",
         "--db", str(tmp_path / "c.db"), "--include", "/docs/", "--exclude", "a[b"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "crawldeck crawl: error: argument --exclude: 'a[b' is not a regular expression: "
        "unterminated character set at position 1"
    ]
    assert not (tmp_path / "c.db").exists()
