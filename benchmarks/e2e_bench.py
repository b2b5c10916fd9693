"""crawldeck against Scrapy, end to end on the same synthetic web (issue #6 part 1).

    .venv/bin/python benchmarks/e2e_bench.py              # 500 hosts x 200 pages, A B A B
    .venv/bin/python benchmarks/e2e_bench.py --hosts 50 --pages 50 --max-pages 2000 --rounds 1

The web is ``SynthWeb`` (``benchmarks/synthweb.py``): nginx on loopback, ``--hosts``
hosts x ``--pages`` pages of about 15 KB with about 50 links each, every host its own IP
literal (``127.80.x.y``), a robots.txt on each that disallows ``/private/`` (linked from
every page). Both crawlers start from the ``--hosts`` root URLs and run alternately,
A B A B (``--rounds`` pairs), as separate processes, each with the same work:

- A: a real ``crawldeck crawl seeds.txt --no-ui --db X --config bench.toml`` (the
  ``crawldeck`` script next to this interpreter), config: ``delay_ms = 0``,
  ``adaptive_delay_factor = 0``, ``ip_delay_ms = 0``, ``concurrency`` = C,
  ``per_host_concurrency = 1``, ``max_depth`` = D, ``max_pages`` = N, ``scope = "any"``
  (Scrapy's spider has no ``allowed_domains``), ``allow_networks =
  ["127.80.0.0/16"]``.
- B (``--warc``): the same crawldeck with ``warc = false`` added to its config, so the
  table is the cost of the WARC files (issue #13), with the WARC bytes written per
  page (compressed, every file of the run).
- B (``--ordering NAME``): the same crawldeck with ``ordering = "NAME"`` added to its
  config, so the table is what the default ordering costs against NAME (issue #15:
  ``--ordering bfs`` is the cost of the prioritizer).
- B: ``benchmarks/scrapy_spider.py`` with Scrapy's own venv (``benchmarks/.venv-scrapy``,
  created here with a pinned Scrapy when missing; Scrapy is never a dependency of
  crawldeck): a ``CrawlSpider`` following every link, robots.txt obeyed, concurrency
  C, one request in flight per host, no delay, depth D, a cap of N pages, Scrapy's
  "Broad Crawls" settings (its docstring lists them).

Measured per run, for the crawler process only (``os.wait4`` on the child gives its own
rusage, and that of any children it waited for):

- wall: from spawning the process to reaping it (interpreter start-up included);
- CPU s: user + system time of the process;
- peak RSS: ``ru_maxrss`` (KiB on Linux), the largest resident set of the process (or
  of one child it waited for); the sum of the RSS of the process and its descendants is
  also sampled every 0.5 s (``tree``), which is what counts if a crawler spreads over
  several processes;
- pages and the crawler's own elapsed time: crawldeck's ``pages`` rows and
  ``runs.started_at`` / ``finished_at`` in its SQLite file; Scrapy's page responses
  (robots.txt ones not counted) and ``elapsed_time_seconds`` from its stats (spider
  opened to closed). Neither counts interpreter start-up.

After each run, nginx's access log is checked: requests (and robots.txt ones), none under
``/private/``, no URL (address + path) requested twice, any status other than 200.
Concurrency per host is not in the log (nginx logs a request when it ends), so it is not
checked here; both crawlers are configured for one request in flight per host.

Prints each run and a table of medians over the rounds: pages, pages/s (pages / the
crawler's own elapsed time), pages/s by the wall clock, CPU ms per page (the same number
as CPU s per 1 000 pages), peak RSS MiB (``ru_maxrss`` and the sampled tree), and the
ratio crawldeck / Scrapy. Check failures are printed; the exit status is 0 unless a run
fails (a nonzero exit, no pages, or more than ``--timeout`` seconds: the run is killed).
Other work on the machine (it has 2 cores) makes the figures noisy: alternating A and B
spreads that noise over both sides, and the CPU figures are steadier than the rates.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from synthweb import SynthWeb, host_address

HERE = Path(__file__).resolve().parent
SCRAPY_VENV = HERE / ".venv-scrapy"
SCRAPY_PYTHON = SCRAPY_VENV / "bin" / "python"
SCRAPY_PIN = "scrapy==2.19.0"
SPIDER = HERE / "scrapy_spider.py"
CRAWLDECK = Path(sys.executable).parent / "crawldeck"
SIDES = ("crawldeck", "scrapy")
FIRST_PORT = 8790
CONFIG = """\
delay_ms = 0
adaptive_delay_factor = 0
ip_delay_ms = 0
concurrency = {concurrency}
per_host_concurrency = 1
max_depth = {max_depth}
max_pages = {max_pages}
scope = "any"
allow_networks = ["127.80.0.0/16"]
"""


@dataclass
class Run:
    """One crawl's figures."""

    side: str
    wall_s: float
    cpu_s: float
    maxrss_kib: int
    tree_rss_kib: int
    pages: int
    elapsed_s: float
    log: dict[str, int] = field(default_factory=dict)
    statuses: dict[int, int] = field(default_factory=dict)
    warc_bytes: int = 0

    @property
    def rate(self) -> float:
        return self.pages / self.elapsed_s

    @property
    def wall_rate(self) -> float:
        return self.pages / self.wall_s

    @property
    def cpu_ms_per_page(self) -> float:
        return 1000 * self.cpu_s / self.pages


class RunFailed(Exception):
    """A crawler process failed, timed out or fetched nothing."""


def ensure_scrapy_venv() -> str:
    """Create ``benchmarks/.venv-scrapy`` with ``SCRAPY_PIN`` if missing; Scrapy's version."""
    if not SCRAPY_PYTHON.exists():
        print(f"e2e_bench: {SCRAPY_VENV} is missing; creating it (Scrapy lives only there)")
        command = [sys.executable, "-m", "venv", str(SCRAPY_VENV)]
        print("  $ " + " ".join(command))
        subprocess.run(command, check=True, timeout=300)
        command = [str(SCRAPY_VENV / "bin" / "pip"), "install", "-q", SCRAPY_PIN]
        print("  $ " + " ".join(command))
        subprocess.run(command, check=True, timeout=900)
    version = subprocess.run(
        [str(SCRAPY_PYTHON), "-c", "import scrapy; print(scrapy.__version__)"],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout.strip()  # fmt: skip
    if f"scrapy=={version}" != SCRAPY_PIN:
        print(f"e2e_bench: note: {SCRAPY_VENV} holds Scrapy {version}, the pin is {SCRAPY_PIN}")
    return version


def free_port(hosts: int) -> int:
    """The first port from 8790 that no listener holds on any of the hosts' addresses."""
    for port in range(FIRST_PORT, FIRST_PORT + 40):
        try:
            for i in range(hosts):
                with socket.socket() as sock:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    sock.bind((host_address(i), port))
        except OSError:
            continue
        return port
    raise SystemExit("e2e_bench: no free port in 8790-8829 on 127.80.0.0/16")


def descendants(pid: int) -> list[int]:
    """``pid`` and the pids of its descendants at any depth, from ``/proc`` (a process
    gone meanwhile is left out of the walk below it)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return out


def tree_rss_kib(pid: int) -> int:
    """The summed RSS (KiB) of ``pid`` and its descendants, from ``/proc``."""
    total = 0
    for p in descendants(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            continue
    return total


def measure(
    command: list[str],
    log: Path,
    timeout_s: float,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[float, float, int, int]:
    """Run ``command`` (in ``env``: ``None`` for ours; in ``cwd``, ``None`` for this
    one); ``(wall s, CPU s, ru_maxrss KiB, sampled tree RSS KiB)``.

    Raises ``RunFailed`` on a nonzero exit or after ``timeout_s`` (the process group is
    killed)."""
    with open(log, "wb") as out:
        start = time.monotonic()
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    tree_peak, next_sample = 0, start
    try:
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            now = time.monotonic()
            if pid:
                wall = now - start
                break
            if now - start > timeout_s:
                os.killpg(proc.pid, signal.SIGKILL)
                os.wait4(proc.pid, 0)
                proc.returncode = -signal.SIGKILL
                raise RunFailed(f"killed after {timeout_s:.0f} s")
            if now >= next_sample:
                tree_peak = max(tree_peak, tree_rss_kib(proc.pid))
                next_sample = now + 0.5
            time.sleep(0.01)
    finally:
        if proc.returncode is None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RunFailed(f"exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, tree_peak


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def crawldeck_result(db: Path) -> tuple[int, float]:
    """``(pages, elapsed s)`` of the last run in ``db``, timed by the crawl file itself."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        started, finished = conn.execute(
            "SELECT started_at, finished_at FROM runs ORDER BY id DESC LIMIT 1"
        ).fetchone()
        pages = int(conn.execute("SELECT count(*) FROM pages").fetchone()[0])
    finally:
        conn.close()
    if finished is None:
        raise RunFailed(f"{db} has no finished_at")
    return pages, (_utc(finished) - _utc(started)).total_seconds()


def check_log(web: SynthWeb) -> tuple[dict[str, int], dict[int, int]]:
    """What nginx logged for the run: counts, and the statuses other than 200."""
    rows = web.requests()
    urls = collections.Counter((addr, path) for _, addr, _, path, _ in rows)
    statuses = collections.Counter(status for *_, status in rows if status != 200)
    counts = {
        "requests": len(rows),
        "robots": sum(1 for *_, path, _ in rows if path == "/robots.txt"),
        "private": sum(1 for *_, path, _ in rows if path.startswith("/private/")),
        "repeated": sum(n - 1 for n in urls.values() if n > 1),
    }
    return counts, dict(statuses)


def baseline_command(tree: Path) -> list[str]:
    """The ``crawldeck`` command of the source tree ``tree`` (a checkout of another
    commit, run with this venv's Python and packages): its launcher under the import
    names of its time (``crawldeck.cli`` since issue #24, ``crawldeck.tui`` since issue
    #11, ``tui`` before)."""
    module = "crawldeck.tui.launch" if (tree / "crawldeck").is_dir() else "tui.launch"
    if (tree / "crawldeck" / "cli" / "launch.py").exists():
        module = "crawldeck.cli.launch"
    if not (tree / module.replace(".", "/")).with_suffix(".py").exists():
        module = module.replace("launch", "cli")
    code = f"import sys; sys.argv[0] = 'crawldeck'; from {module} import main; sys.exit(main())"
    return [sys.executable, "-c", code]  # run in ``tree``: ``-c`` puts the directory first


def run_side(side: str, work: Path, tag: str, args: argparse.Namespace) -> Run:
    """One crawl by ``side`` over the web; its figures (the log is checked by the caller)."""
    log = work / f"{tag}.log"
    env = None
    cwd = None
    if side in ("crawldeck", "baseline", "nowarc", "ordering"):
        db = work / f"{tag}.db"
        launcher = [str(CRAWLDECK)]
        if side == "baseline":
            launcher = baseline_command(args.against)
            env = {**os.environ, "PYTHONPATH": str(args.against)}
            cwd = args.against  # else ``-c`` imports the crawldeck of this directory first
        config = work / (f"bench-{side}.toml" if side in ("nowarc", "ordering") else "bench.toml")
        command = [*launcher, "crawl", str(work / "seeds.txt"), "--no-ui",
                   "--db", str(db), "--config", str(config)]  # fmt: skip
    else:
        stats = work / f"{tag}.json"
        command = [str(SCRAPY_PYTHON), str(SPIDER), "--seeds", str(work / "seeds.txt"),
                   "--concurrency", str(args.concurrency), "--max-depth", str(args.max_depth),
                   "--max-pages", str(args.max_pages), "--out", str(stats)]  # fmt: skip
    try:
        wall, cpu, maxrss, tree = measure(command, log, args.timeout, env, cwd)
        if side != "scrapy":
            pages, elapsed = crawldeck_result(db)
        else:
            data = json.loads(stats.read_text())
            pages, elapsed = int(data["pages"]), float(data["elapsed_s"])
        if pages == 0:
            raise RunFailed("no pages fetched")
    except (RunFailed, OSError, sqlite3.Error, ValueError, KeyError, TypeError) as exc:
        tail = log.read_text(errors="replace").splitlines()[-25:] if log.exists() else []
        print("\n".join("    | " + line for line in tail))
        raise RunFailed(f"{side} run {tag} failed: {exc}") from None
    warc = sum(p.stat().st_size for p in work.glob(f"{tag}-*.warc.gz"))
    return Run(side, wall, cpu, maxrss, tree, pages, elapsed, warc_bytes=warc)


def print_table(runs: list[Run], sides: tuple[str, str]) -> None:
    """Medians per side and the ratio of the first side to the second."""
    rows = [
        ("pages", lambda r: r.pages, "{:,.0f}"),
        ("pages/s (crawler's own elapsed)", lambda r: r.rate, "{:,.1f}"),
        ("pages/s (wall clock)", lambda r: r.wall_rate, "{:,.1f}"),
        ("CPU ms per page (= CPU s per 1 000 pages)", lambda r: r.cpu_ms_per_page, "{:.2f}"),
        ("peak RSS MiB (ru_maxrss)", lambda r: r.maxrss_kib / 1024, "{:,.1f}"),
        ("peak RSS MiB (process tree, sampled)", lambda r: r.tree_rss_kib / 1024, "{:,.1f}"),
    ]
    if "nowarc" in sides:
        rows.append(("WARC bytes written per page", lambda r: r.warc_bytes / r.pages, "{:,.0f}"))
    width = max(len(name) for name, _, _ in rows)
    n = len([r for r in runs if r.side == sides[0]])
    print(f"\nmedians over {n} round{'s' if n != 1 else ''}:")
    names = [side.capitalize() if side == "scrapy" else side for side in sides]
    print(f"  {'':{width}}  {names[0]:>12}  {names[1]:>12}  {'/'.join(names):>16}")
    for name, get, fmt in rows:
        values = [statistics.median(get(r) for r in runs if r.side == side) for side in sides]
        ratio = f"{values[0] / values[1]:>16.3f}" if values[1] else ""
        cells = "  ".join(f"{fmt.format(v):>12}" for v in values)
        print(f"  {name:{width}}  {cells}  {ratio}")


def print_spread(runs: list[Run], sides: tuple[str, str]) -> None:
    """The spread of the rounds: per side, the lowest and highest pages/s (the
    crawler's own elapsed); and the ratio of the first side to the second within each
    round (round i's A over its B, the two run one after the other), lowest, median
    and highest, for pages/s and CPU ms per page."""
    by_side = {side: [r for r in runs if r.side == side] for side in sides}
    for side, own in by_side.items():
        rates = [r.rate for r in own]
        print(f"  {side}: pages/s from {min(rates):,.1f} to {max(rates):,.1f}")
    pairs = list(zip(by_side[sides[0]], by_side[sides[1]], strict=False))
    measures: list[tuple[str, Callable[[Run], float]]] = [
        ("pages/s", lambda r: r.rate),
        ("CPU ms per page", lambda r: r.cpu_ms_per_page),
    ]
    for name, get in measures:
        ratios = [get(a) / get(b) for a, b in pairs if get(b)]
        if ratios:
            print(
                f"  {name} {sides[0]}/{sides[1]} per round: lowest {min(ratios):.3f}, median "
                f"{statistics.median(ratios):.3f}, highest {max(ratios):.3f} "
                f"({', '.join(f'{x:.3f}' for x in ratios)})"
            )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 unless a run fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=500, help="default 500")
    parser.add_argument("--pages", type=int, default=200, help="pages per host (default 200)")
    parser.add_argument("--concurrency", type=int, default=100, help="default 100")
    parser.add_argument("--max-depth", type=int, default=5, help="default 5")
    parser.add_argument("--max-pages", type=int, default=20000, help="default 20000")
    parser.add_argument("--rounds", type=int, default=2, help="A B pairs (default 2)")
    parser.add_argument("--port", type=int, help="nginx port (default: the first free from 8790)")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds a run may take, then it is killed (default 900)")  # fmt: skip
    parser.add_argument("--against", type=Path, metavar="TREE",
                        help="B is crawldeck from the source tree TREE (an older "
                             "commit: git worktree add TREE COMMIT), not Scrapy")  # fmt: skip
    parser.add_argument("--warc", action="store_true",
                        help="B is crawldeck with warc = false: what WARC output costs "
                             "(issue #13), not Scrapy")  # fmt: skip
    parser.add_argument("--ordering", metavar="NAME",
                        help="B is crawldeck with ordering = NAME: what the default "
                             "ordering costs against NAME (issue #15), not Scrapy")  # fmt: skip
    args = parser.parse_args(argv)
    sides = SIDES if args.against is None else ("crawldeck", "baseline")
    if args.warc:
        sides = ("crawldeck", "nowarc")
    if args.ordering:
        sides = ("crawldeck", "ordering")
    if not CRAWLDECK.exists():
        sys.exit(f"e2e_bench: {CRAWLDECK} not found: pip install -e . first")
    other = args.against or args.warc or args.ordering
    scrapy_version = "not used" if other else ensure_scrapy_venv()
    port = args.port or free_port(args.hosts)
    print(f"machine: {os.cpu_count()} CPUs, {platform.platform()}, Python "
          f"{platform.python_version()}; Scrapy {scrapy_version}; nginx port {port}")  # fmt: skip
    print(f"web: {args.hosts} hosts x {args.pages + 1} pages; concurrency {args.concurrency}, "
          f"1 per host, depth {args.max_depth}, cap {args.max_pages} pages, "
          f"{args.rounds} round{'s' if args.rounds != 1 else ''} of A B")  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="crawldeck-e2e-bench-"))
    runs: list[Run] = []
    problems: list[str] = []
    try:
        with SynthWeb(args.hosts, args.pages, by_ip=True, port=port) as web:
            (work / "seeds.txt").write_text("\n".join(web.seeds) + "\n")
            (work / "bench.toml").write_text(
                CONFIG.format(concurrency=args.concurrency, max_depth=args.max_depth,
                              max_pages=args.max_pages)
            )  # fmt: skip
            config = (work / "bench.toml").read_text()
            (work / "bench-nowarc.toml").write_text(config + "warc = false\n")
            (work / "bench-ordering.toml").write_text(config + f'ordering = "{args.ordering}"\n')
            for i in range(args.rounds):
                for side in sides:
                    web.reset_log()
                    time.sleep(0.2)  # let nginx reopen its log
                    run = run_side(side, work, f"{side}-{i + 1}", args)
                    run.log, run.statuses = check_log(web)
                    runs.append(run)
                    bad = [f"{run.log['private']} under /private/"] if run.log["private"] else []
                    if run.log["repeated"]:
                        bad.append(f"{run.log['repeated']} repeated URLs")
                    problems += [f"{side} round {i + 1}: {b}" for b in bad]
                    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(run.statuses.items()))
                    print(
                        f"  {side:9s} round {i + 1}: {run.pages:6d} pages in "
                        f"{run.elapsed_s:6.1f} s = {run.rate:7.1f} pages/s (wall "
                        f"{run.wall_s:6.1f} s = {run.wall_rate:7.1f}/s), CPU {run.cpu_s:6.1f} s "
                        f"= {run.cpu_ms_per_page:5.2f} ms/page, RSS {run.maxrss_kib / 1024:6.1f} "
                        f"MiB (tree {run.tree_rss_kib / 1024:.1f}); log: {run.log['requests']} "
                        f"requests ({run.log['robots']} robots.txt), "
                        f"{run.log['private']} /private/, {run.log['repeated']} repeated"
                        f"; WARC {run.warc_bytes / max(1, run.pages):,.0f} bytes/page"
                        + (f", non-200 {statuses}" if statuses else ""),
                        flush=True,
                    )
    except RunFailed as exc:
        print(f"e2e_bench: {exc}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(runs, sides)
    print_spread(runs, sides)
    print("checks: " + ("; ".join(problems) if problems else "no /private/ request, no URL twice"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
