"""``crawldeck export -o FILE`` is atomic: FILE is the old file or the whole new export.

Real processes: an export of a large crawl file is killed (SIGKILL, SIGTERM) half way
and FILE is checked; a disk that fills during an export (tmpfs in a private mount
namespace, root only) fails in one line and leaves FILE as it was.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import exportkit
import pytest
from exportkit import HEADER, ROWS

#: The fixtures shared with the other tier's file, as fixtures of this module.
big_crawl = exportkit.big_crawl

CRAWLDECK = str(Path(sys.executable).parent / "crawldeck")


def row_line(i: int) -> str:
    url = f"http://a.test/page/{i:09d}"
    return (
        f"{url},{url},a.test,1,200,text/html,1234,12.5,2024-05-01T12:00:00.250000Z,0,,0" + "," * 13
    )  # the 12 columns of issue #13 and run_id, NULL


def start_export(db: Path, out_dir: Path, name: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [CRAWLDECK, "export", str(db), "--format", "csv", "-o", name],
        cwd=out_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_partial_temp(proc: subprocess.Popen[str], out_dir: Path, before: set[str]) -> Path:
    """The export's temporary file, once it holds some rows (the export still running)."""
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no temporary file appeared"
        new = [out_dir / n for n in set(os.listdir(out_dir)) - before]
        partial = [p for p in new if p.exists() and p.stat().st_size > 100_000]
        if partial:
            return partial[0]
        time.sleep(0.005)


def assert_complete(path: Path) -> None:
    lines = path.read_text().splitlines()
    assert len(lines) == ROWS + 1
    assert lines[0] == HEADER
    assert lines[1] == row_line(0) and lines[-1] == row_line(ROWS - 1)


@pytest.mark.parametrize("existing", [False, True], ids=["new-file", "over-old-file"])
def test_a_sigkilled_export_never_leaves_a_partial_file(
    big_crawl: Path, tmp_path: Path, existing: bool
) -> None:
    out = tmp_path / "pages.csv"
    if existing:
        out.write_text("the old export\n")
    before = set(os.listdir(tmp_path))
    with start_export(big_crawl, tmp_path, "pages.csv") as proc:
        temp = wait_for_partial_temp(proc, tmp_path, before)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert temp.parent == tmp_path and temp.name.startswith(".pages.csv.")  # hidden, beside
    assert 0 < temp.stat().st_size < 24_000_000  # it really was killed half way
    if existing:
        assert out.read_text() == "the old export\n"
    else:
        assert not out.exists()
    # a later export to the same name gets the whole file, whatever was left behind
    again = subprocess.run(
        [CRAWLDECK, "export", str(big_crawl), "--format", "csv", "-o", "pages.csv"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert_complete(out)
    assert set(os.listdir(tmp_path)) == before | {"pages.csv", temp.name}


def test_a_sigterm_stops_the_export_and_removes_its_temporary_file(
    big_crawl: Path, tmp_path: Path
) -> None:
    out = tmp_path / "pages.csv"
    out.write_text("the old export\n")
    before = set(os.listdir(tmp_path))
    with start_export(big_crawl, tmp_path, "pages.csv") as proc:
        wait_for_partial_temp(proc, tmp_path, before)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.splitlines() == ["crawldeck: export stopped; 'pages.csv' left as it was"]
    assert out.read_text() == "the old export\n"
    assert set(os.listdir(tmp_path)) == before  # the temporary file is gone


def test_a_failed_export_removes_its_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a crawl\n")
    proc = subprocess.run(
        [CRAWLDECK, "export", "notes.txt", "--format", "csv", "-o", "out.csv"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "crawldeck export: error: notes.txt is not a SQLite crawl file (file is not a database)"
    ]
    assert os.listdir(tmp_path) == ["notes.txt"]


#: In a private mount namespace: a 1 MiB tmpfs on argv[1] holding an old export, then
#: an export of a 35 MB crawl into it (the disk fills half way).
FULL_DISK = textwrap.dedent(
    """
    import os, subprocess, sys
    mnt, db, crawldeck = sys.argv[1:]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt], check=True)
    with open(os.path.join(mnt, "pages.csv"), "w") as f:
        f.write("the old export\\n")
    proc = subprocess.run([crawldeck, "export", db, "--format", "csv", "-o", "pages.csv"],
                          cwd=mnt, capture_output=True, text=True)
    print(proc.returncode)
    print(proc.stderr, end="")
    print("listing:", " ".join(sorted(os.listdir(mnt))))
    with open(os.path.join(mnt, "pages.csv")) as f:
        print("content:", f.read(), end="")
    """
)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a tmpfs (CI runs as root)")
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_a_disk_that_fills_during_an_export_leaves_the_old_file(
    big_crawl: Path, tmp_path: Path
) -> None:
    (tmp_path / "mnt").mkdir()
    proc = subprocess.run(
        ["unshare", "-m", sys.executable, "-c", FULL_DISK, str(tmp_path / "mnt"),
         str(big_crawl), CRAWLDECK],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "2",
        "crawldeck export: error: cannot write 'pages.csv': No space left on device",
        "listing: pages.csv",
        "content: the old export",
    ]
