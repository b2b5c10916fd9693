"""Peak memory of a crawl beside one hostile sitemap host, per kind (issue #22 item 1).

For each kind of ``tests/hostile_sitemaps.py`` (and ``none``: the same crawl with a
harmless host), a real ``crawldeck crawl --no-ui`` process crawls the local web (9
loopback hosts, no delays) and a hostile host whose robots.txt names that one sitemap;
printed per kind: the crawl process's peak RSS (its ``VmHWM``), the largest peak of
its children (parse workers, WARC writer), the peak of the sum of RSS over the whole
process tree (sampled from ``/proc`` every 20 ms), the run's
time, and the sitemap's row (``urls``, ``error``). ``--tree DIR`` runs the crawler of
another source tree (a checkout of an older commit: ``git archive e70d53d | tar -x -C
DIR``) under the same servers, for a before/after. Each run is bounded by
``--timeout`` seconds (then killed and reported).

    .venv/bin/python benchmarks/sitemap_memory.py [--tree DIR] [--kinds a,b]
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from hostile_sitemaps import KINDS, install, robots_txt  # noqa: E402
from httpserver import HTTPTestServer, Response  # noqa: E402

from crawldeck.localweb.web import LocalWeb  # noqa: E402

_PAGE = 4096


def _tree(root: int) -> dict[int, tuple[int, int]]:
    """``root`` and its descendants now: pid -> (VmRSS, VmHWM) in bytes."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found: dict[int, tuple[int, int]] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
            rss = int(status["VmRSS"].split()[0]) * 1024
            hwm = int(status["VmHWM"].split()[0]) * 1024
        except (OSError, KeyError, ValueError):
            continue
        found[pid] = (rss, hwm)
    return found


def run(kind: str, web: LocalWeb, tree: Path | None, timeout: float) -> str:
    """One crawl beside the host of ``kind``; its line of figures."""
    with HTTPTestServer("127.0.0.3") as bad, tempfile.TemporaryDirectory() as tmp:
        bad.set("/", Response(200, {"Content-Type": "text/html"}, b"<p>hostile host</p>"))
        paths = install(bad)
        named = [] if kind == "none" else [paths[kind]]
        bad.set("/robots.txt", robots_txt(bad, named))
        db = Path(tmp) / "c.db"
        code = "import sys; from crawldeck.cli.launch import main; sys.exit(main())"
        if tree is not None:  # the editable install's finder comes before sys.path
            code = (
                f"import sys; sys.path.insert(0, {str(tree)!r}); sys.meta_path[:] = "
                "[f for f in sys.meta_path if 'editable' not in repr(f)]; " + code
            )
        args = [sys.executable, "-c", code, "crawl", *web.seeds(), bad.url("/"), "--no-ui"]
        args += ["--db", str(db), "-s", "render=never", "--delay-ms", "0"]
        started = time.monotonic()
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
        peak = [0]
        hwm: dict[int, int] = {}  # pid -> its VmHWM, the last seen
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                tree = _tree(proc.pid)
                peak[0] = max(peak[0], sum(rss for rss, _ in tree.values()))
                hwm.update((pid, high) for pid, (_, high) in tree.items())
                done.wait(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        killer = threading.Timer(timeout, lambda: os.kill(proc.pid, signal.SIGKILL))
        killer.start()
        _, status = os.waitpid(proc.pid, 0)
        killer.cancel()
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.monotonic() - started
        row: tuple[object, ...] = ("-", "-")
        if named:
            conn = sqlite3.connect(db)
            try:
                found = conn.execute(
                    "SELECT urls, error FROM sitemaps WHERE url = ?", (bad.url(named[0]),)
                ).fetchall()
            finally:
                conn.close()
            row = found[0] if found else ("no row", "")
        pages = sqlite3.connect(db).execute("SELECT count(*) FROM pages").fetchone()[0]
        error = str(row[1])[:70]
        crawl = hwm.get(proc.pid, 0) / 2**20
        others = max((high for pid, high in hwm.items() if pid != proc.pid), default=0) / 2**20
        return (
            f"{kind:15} {crawl:9.1f} {others:9.1f} {peak[0] / 2**20:9.1f} {elapsed:7.1f}"
            f" {proc.returncode:4} {pages:6} {row[0]!s:>6}  {error}"
        )


def main() -> None:
    """Parse the flags, run each kind, print a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, help="the source tree to run (default: this one)")
    parser.add_argument("--kinds", default=",".join(("none", *KINDS)))
    parser.add_argument("--timeout", type=float, default=300.0)
    ns = parser.parse_args()
    print(f"tree: {ns.tree or ROOT}")
    print("MiB; crawl: the crawl process's VmHWM; child: the largest VmHWM of its"
          " children; tree: the sampled peak of the sum of VmRSS over the tree")  # fmt: skip
    print(f"{'kind':15} {'crawl':>9} {'child':>9} {'tree':>9} {'time s':>7}"
          f" {'rc':>4} {'pages':>6} {'urls':>6}  error")  # fmt: skip
    with LocalWeb(delay_scale=0) as web:
        for kind in ns.kinds.split(","):
            print(run(kind, web, ns.tree, ns.timeout), flush=True)


if __name__ == "__main__":
    main()
