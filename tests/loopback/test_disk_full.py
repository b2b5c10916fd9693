"""A full disk ends a crawl with one line and exit 2, and loses nothing committed.

Real full disks: each case runs ``crawldeck crawl`` in a private mount namespace
(``unshare -m``) on a tiny tmpfs, against the local web on loopback (the network is
shared). Needs root and util-linux ``unshare``; skipped, saying which, without them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import TypedDict

import pytest

from crawldeck.core.storage.store import Store
from crawldeck.localweb import LocalWeb

CRAWLDECK = str(Path(sys.executable).parent / "crawldeck")
ONE_LINE = "crawldeck crawl: error: c.db: disk full (No space left on device)"
#: What follows it on the line: how to go on (trial 14: "and then?").
GO_ON = re.compile(
    r"; free some space, then resume with: \S*crawldeck crawl \S+seeds\.txt --no-ui .*"
)
#: The start of a crawl's warning line on stderr (``cli.headless.HeadlessLog``).
WARNING = "crawldeck: warning: "
#: The same from the crawl's WARC file, which may be the first to meet the full disk.
ONE_LINE_WARC = re.compile(
    r"crawldeck crawl: error: c-\d{5}\.warc\.gz: disk full \(No space left on device\)"
)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a tmpfs (CI runs as root)"),
    pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)"),
]

#: Runs inside ``unshare -m``: mounts a tmpfs of ``size_bytes`` on ``mnt``, fills all but
#: ``room_bytes`` of it, runs the crawl (its output goes to ``out``, off the tmpfs),
#: then frees the space, lists the committed pages and runs the same crawl again.
#: Prints one JSON object: return codes, stderr, committed URLs, the time between.
DRIVER = textwrap.dedent(
    """
    import json, os, sqlite3, subprocess, sys, time

    mnt, out, size_bytes, room_bytes, crawldeck, *crawl = sys.argv[1:]
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", mnt],
                   check=True)
    fill = os.path.join(mnt, "fill")
    with open(fill, "wb", buffering=0) as f:  # fill the tmpfs to the brim, give back room
        try:
            while True:
                f.write(b"\\0" * 4096)
        except OSError:
            pass
    os.truncate(fill, max(0, os.path.getsize(fill) - int(room_bytes)))
    statvfs = os.statvfs(mnt)

    def crawl_once(tag):
        with open(f"{out}/{tag}.out", "w") as o, open(f"{out}/{tag}.err", "w") as e:
            return subprocess.run([crawldeck, *crawl], cwd=mnt, stdout=o, stderr=e,
                                  timeout=120).returncode

    first = crawl_once("first")
    os.unlink(fill)  # the disk has room again
    between = time.time()
    db = os.path.join(mnt, "c.db")
    committed = []
    if os.path.getsize(db):
        conn = sqlite3.connect(db)
        committed = [u for (u,) in conn.execute("SELECT url FROM pages WHERE status = 200")]
        conn.close()
    second = crawl_once("second")
    conn = sqlite3.connect(db)
    final = [u for (u,) in conn.execute("SELECT url FROM pages WHERE status = 200")]
    runs = [s for (s,) in conn.execute("SELECT status FROM runs ORDER BY id")]
    conn.close()
    print(json.dumps({
        "free_before": statvfs.f_bavail * statvfs.f_frsize, "first": first,
        "second": second, "between": between, "committed": committed, "final": final,
        "runs": runs,
    }))
    """
)


class DiskFullRun(TypedDict):
    """What ``DRIVER`` printed (JSON), with the two crawls' output files read back."""

    free_before: int  # bytes free on the tmpfs before the first crawl
    first: int  # the first crawl's exit status (the disk fills)
    second: int  # the second crawl's exit status (room again)
    between: float  # Unix time (s) between the two crawls
    committed: list[str]  # URLs with a 200 in the crawl file after the first crawl
    final: list[str]  # the same after the second
    runs: list[str]  # runs.status, oldest first
    first_err: str
    second_err: str
    second_out: str


@pytest.fixture(scope="module")
def web() -> Iterator[LocalWeb]:
    with LocalWeb(delay_scale=0.2, busy_429_count=1, retry_after_s=1) as w:
        yield w


def crawl_on_tmpfs(
    tmp_path: Path, web: LocalWeb, size: int, room: int, extra_config: str = ""
) -> DiskFullRun:
    (tmp_path / "mnt").mkdir()
    (tmp_path / "seeds.txt").write_text("\n".join(web.seeds()) + "\n")
    # render_timeout_ms: spa's /app/never never settles, its render is cut at this budget
    (tmp_path / "fast.toml").write_text(
        "flush_interval_ms = 20\nbackoff_base_ms = 100\nrender_timeout_ms = 3000\n" + extra_config
    )
    crawl = ["crawl", str(tmp_path / "seeds.txt"), "--no-ui", "--db", "c.db",
             "--config", str(tmp_path / "fast.toml"), "--delay-ms", "20"]  # fmt: skip
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, "-c", DRIVER,
         str(tmp_path / "mnt"), str(tmp_path), str(size), str(room), CRAWLDECK, *crawl],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result: DiskFullRun = json.loads(proc.stdout)
    result["first_err"] = (tmp_path / "first.err").read_text()
    result["second_err"] = (tmp_path / "second.err").read_text()
    result["second_out"] = (tmp_path / "second.out").read_text()
    return result


def asked_after(web: LocalWeb, at: float) -> set[str]:
    return {
        web.url(name, a.path)
        for name in web.hosts
        for a in web.access_log(name)
        if a.at > at and not a.path.endswith("robots.txt") and a.status != 429
    }


def assert_resumed_complete(web: LocalWeb, result: DiskFullRun) -> None:
    assert result["second"] == 0, result["second_err"]
    assert "Traceback" not in result["second_err"]
    final = set(result["final"])
    assert set(result["committed"]) <= final  # nothing committed was lost
    expected = web.expected.all_good | web.expected.all_files
    assert expected - {web.expected.canonical(u) for u in final} == set()
    # what was committed before the disk filled is not fetched again
    assert asked_after(web, result["between"]) & set(result["committed"]) == set()


def test_a_disk_already_full_ends_the_crawl_with_one_line(tmp_path: Path, web: LocalWeb) -> None:
    result = crawl_on_tmpfs(tmp_path, web, size=16 << 20, room=0)
    assert result["free_before"] == 0
    assert result["first"] == 2
    [line] = result["first_err"].splitlines()
    assert line.startswith(ONE_LINE) and GO_ON.fullmatch(line[len(ONE_LINE) :]), line
    assert result["committed"] == []
    assert_resumed_complete(web, result)


def test_a_disk_that_fills_during_the_crawl_ends_it_with_one_line(
    tmp_path: Path, web: LocalWeb
) -> None:
    # 320 KiB of room: the schema, the -shm file and a few batches of pages fit, the
    # crawl of the local web does not (its WAL alone grows past 1 MiB)
    # warc off: with it, the WARC writer's first records (a 100 KB page among them) could
    # fill the 320 KiB before the store's first commit, and nothing was committed (1 run
    # in 4 on an idle machine); here the crawl file alone fills the disk
    result = crawl_on_tmpfs(
        tmp_path, web, size=16 << 20, room=320 << 10, extra_config="warc = false\n"
    )
    assert 0 < result["free_before"] <= 320 << 10
    assert result["first"] == 2, result["first_err"]
    # the crawl's warnings (robots.txt unreachable ...) go to stderr too, before it
    [line] = [e for e in result["first_err"].splitlines() if not e.startswith(WARNING)]
    failed, way_on = line.split(";", 1)
    assert failed == ONE_LINE or ONE_LINE_WARC.fullmatch(failed), line
    assert GO_ON.fullmatch(";" + way_on), line
    assert len(result["committed"]) >= 1  # some pages were committed before the disk filled
    assert_resumed_complete(web, result)
    assert result["runs"] == ["killed", "finished"]


def test_the_committed_rows_survive_in_a_consistent_file(tmp_path: Path) -> None:
    """The store's own view: a batch that hits the full disk is rolled back whole.

    The tmpfs holds the empty store and about 12 flushes of one page and 20 links (about
    85 kB of WAL each since schema version 3 keeps a link in its table, its primary key
    and ``links_to``, and a page in ``pages_host`` too: 768 kB held 6 of them, 1 MiB 9)."""
    script = textwrap.dedent(
        """
        import os, subprocess, sys
        from pathlib import Path
        from crawldeck.core.errors import StoreError
        from crawldeck.core.records import FrontierRow, PageRecord
        from crawldeck.core.storage.store import Store

        mnt = sys.argv[1]
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1280k", "tmpfs", mnt], check=True)
        s = Store(Path(mnt) / "c.db", flush_interval_ms=10_000)
        s.enqueue_urls([FrontierRow("p0", "http://h.test/p0", "h.test", 0, 0)])
        s.flush()
        i = 0
        try:
            while True:  # one page per flush, 20 links each, until the disk is full
                url = f"http://h.test/p{i}"
                links = [(url, f"{url}/{'x' * 200}{j}") for j in range(20)]
                nxt = FrontierRow(f"p{i + 1}", f"http://h.test/p{i + 1}", "h.test", 0, 0)
                page = PageRecord(url, url, "h.test", 0, 200, "text/html", 1, 1.0, 0.0,
                                  False, None, False)
                s.record_page(page, key=f"p{i}", links=links, new_rows=[nxt], state="done")
                s.flush()
                i += 1
        except StoreError as exc:
            print(i, exc, flush=True)
        s.close()
        os.system(f"cp {mnt}/c.db* {sys.argv[2]}/")
        """
    )
    (tmp_path / "mnt").mkdir()
    (tmp_path / "copy").mkdir()
    proc = subprocess.run(
        ["unshare", "-m", sys.executable, "-c", script, str(tmp_path / "mnt"),
         str(tmp_path / "copy")],
        capture_output=True, text=True, timeout=120, check=False,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    flushed, message = proc.stdout.split(" ", 1)
    assert message.strip() == f"{tmp_path / 'mnt' / 'c.db'}: disk full (No space left on device)"
    n = int(flushed)
    assert n >= 10
    with Store(tmp_path / "copy" / "c.db") as s:  # recovery on open, with room now
        assert s.counts()["pages"] == n  # every flushed page, not the failed one
        assert s.counts()["done"] == n and s.counts()["queued"] == 1
    with closing(sqlite3.connect(tmp_path / "copy" / "c.db")) as conn:
        assert conn.execute("SELECT count(*) FROM links").fetchone() == (20 * n,)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
