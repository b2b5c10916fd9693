"""Two commits of crawldeck, end to end on one web, alternating A B A B (issue #23 item 6).

    .venv/bin/python benchmarks/compare.py e70d53d            # e70d53d against HEAD
    .venv/bin/python benchmarks/compare.py e70d53d main --rounds 4
    .venv/bin/python benchmarks/compare.py e70d53d --hosts 50 --pages 50 --max-pages 2000

Each commit is built once into its own tree and venv under ``benchmarks/.compare/SHA``
(``git archive SHA`` unpacked, then ``python -m venv``, ``pip install -e .`` and
``python -m compileall -q`` of its ``crawldeck`` package, so that the first round does
not pay for writing the .pyc files that later rounds find; kept for the next
comparison, ignored by git), so neither side runs the other's code or packages.
Then both crawl ``synthweb.py``'s nginx web (the same web for every run, IP literal
hosts) one after the other, ``--rounds`` times, each run a real
``crawldeck crawl seeds.txt --no-ui`` with ``e2e_bench.py``'s config (no politeness
delay, ``--concurrency``, one fetch in flight per host, ``--max-depth``,
``--max-pages``) and otherwise every default on (WARC, sitemaps, the default ordering).

Printed per run and as medians with the same-round ratios (round i's HEAD over its
BASE, the two run back to back, so the machine's drift cancels out): pages, pages/s
(the crawl's own elapsed time), CPU ms per page (the crawl process and the children it
reaped: parse workers, WARC writer), peak RSS (``ru_maxrss``, and the process tree's
RSS sampled every 0.5 s). The servers' log is checked after each run (nothing under
robots.txt's ``/private/``, no URL twice). The exit status is 0 unless a build or a run
fails.

On this 2-core machine other work makes the figures noisy: compare on an idle machine,
and read the ratios per round rather than across runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from e2e_bench import (
    CONFIG,
    Run,
    RunFailed,
    check_log,
    crawldeck_result,
    free_port,
    measure,
    print_spread,
    print_table,
)
from synthweb import SynthWeb

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = HERE / ".compare"


def resolve(commit: str) -> str:
    """The full SHA of ``commit`` (any name git accepts).

    Raises:
        SystemExit: one line, if git does not know it.
    """
    done = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"compare: unknown commit {commit!r}")
    return done.stdout.strip()


def build(sha: str) -> Path:
    """The ``crawldeck`` script of commit ``sha``, built once into
    ``CACHE/sha`` (its tree from ``git archive``, its own venv, its bytecode compiled;
    pip's and compileall's output in ``CACHE/sha.log``).

    Raises:
        SystemExit: one line, if the archive or the install fails (the half-built tree
            is removed, so the next call starts again).
    """
    tree = CACHE / sha
    script = tree / ".venv" / "bin" / "crawldeck"
    if script.exists():
        return script
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    print(f"compare: building {sha[:10]} in {tree}", flush=True)
    try:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", sha],
            capture_output=True, check=True, timeout=120,
        )  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        subprocess.run([sys.executable, "-m", "venv", str(tree / ".venv")], check=True, timeout=300)
        with open(CACHE / f"{sha}.log", "wb") as log:
            subprocess.run(
                [str(tree / ".venv" / "bin" / "pip"), "install", "-q", "-e", str(tree)],
                stdout=log, stderr=subprocess.STDOUT, check=True, timeout=1800,
            )  # fmt: skip
            # An editable install leaves the package's own modules uncompiled (pip
            # compiles what it copies into site-packages): without this, the first
            # round's crawl wrote them, a first-round bias (issue #23).
            subprocess.run(
                [str(tree / ".venv" / "bin" / "python"), "-m", "compileall", "-q",
                 str(tree / "crawldeck")],
                stdout=log, stderr=subprocess.STDOUT, check=True, timeout=600,
            )  # fmt: skip
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(tree, ignore_errors=True)
        raise SystemExit(
            f"compare: could not build {sha[:10]} ({exc}); its output: {CACHE / sha}.log"
        ) from None
    return script


def run_one(script: Path, side: str, work: Path, tag: str, timeout_s: float) -> Run:
    """One crawl by the ``crawldeck`` at ``script`` over the web (seeds and config in
    ``work``); its figures, the log not yet checked.

    Raises:
        RunFailed: the process failed, timed out or fetched nothing.
    """
    db, log = work / f"{tag}.db", work / f"{tag}.log"
    command = [str(script), "crawl", str(work / "seeds.txt"), "--no-ui",
               "--db", str(db), "--config", str(work / "bench.toml")]  # fmt: skip
    try:
        wall, cpu, maxrss, tree = measure(command, log, timeout_s, None, work)
        pages, elapsed = crawldeck_result(db)
        if pages == 0:
            raise RunFailed("no pages fetched")
    except (RunFailed, OSError) as exc:
        tail = log.read_text(errors="replace").splitlines()[-25:] if log.exists() else []
        print("\n".join("    | " + line for line in tail))
        raise RunFailed(f"{side} run {tag} failed: {exc}") from None
    return Run(side, wall, cpu, maxrss, tree, pages, elapsed)


def main(argv: list[str] | None = None) -> int:
    """Build both commits, run the rounds, print the table; 0 unless a run fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the commit to compare against (e.g. the last release)")
    parser.add_argument("head", nargs="?", default="HEAD", help="default HEAD")
    parser.add_argument("--hosts", type=int, default=200, help="default 200")
    parser.add_argument("--pages", type=int, default=100, help="pages per host (default 100)")
    parser.add_argument("--concurrency", type=int, default=64, help="default 64")
    parser.add_argument("--max-depth", type=int, default=5, help="default 5")
    parser.add_argument("--max-pages", type=int, default=10000, help="default 10000")
    parser.add_argument("--rounds", type=int, default=3, help="A B pairs (default 3)")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds a run may take, then it is killed (default 900)")  # fmt: skip
    args = parser.parse_args(argv)
    shas = {"head": resolve(args.head), "base": resolve(args.base)}
    sides = (f"head {shas['head'][:7]}", f"base {shas['base'][:7]}")
    scripts = {sides[0]: build(shas["head"]), sides[1]: build(shas["base"])}
    port = free_port(args.hosts)
    load = os.getloadavg()[0]
    print(
        f"machine: {os.cpu_count()} CPUs, {platform.platform()}, Python "
        f"{platform.python_version()}, load {load:.2f}; nginx port {port}"
    )
    rounds = f"{args.rounds} round{'s' if args.rounds != 1 else ''}"
    print(
        f"web: {args.hosts} hosts x {args.pages + 1} pages; concurrency {args.concurrency}, "
        f"1 per host, depth {args.max_depth}, cap {args.max_pages} pages, "
        f"{rounds} of {sides[0]} then {sides[1]}"
    )
    work = Path(tempfile.mkdtemp(prefix="crawldeck-compare-"))
    runs: list[Run] = []
    problems: list[str] = []
    try:
        with SynthWeb(args.hosts, args.pages, by_ip=True, port=port) as web:
            (work / "seeds.txt").write_text("\n".join(web.seeds) + "\n")
            (work / "bench.toml").write_text(
                CONFIG.format(concurrency=args.concurrency, max_depth=args.max_depth,
                              max_pages=args.max_pages)
            )  # fmt: skip
            for i in range(args.rounds):
                for side in sides:
                    web.reset_log()
                    time.sleep(0.2)  # let nginx reopen its log
                    tag = f"{side.split()[0]}-{i + 1}"
                    run = run_one(scripts[side], side, work, tag, args.timeout)
                    run.log, run.statuses = check_log(web)
                    runs.append(run)
                    if run.log["private"] or run.log["repeated"]:
                        problems.append(
                            f"{side} round {i + 1}: {run.log['private']} under /private/, "
                            f"{run.log['repeated']} repeated URLs"
                        )
                    print(
                        f"  {side} round {i + 1}: {run.pages:6d} pages in {run.elapsed_s:6.1f} s"
                        f" = {run.rate:7.1f} pages/s, CPU {run.cpu_s:6.1f} s = "
                        f"{run.cpu_ms_per_page:5.2f} ms/page, RSS {run.maxrss_kib / 1024:6.1f} "
                        f"MiB (tree {run.tree_rss_kib / 1024:.1f}), load {os.getloadavg()[0]:.2f}",
                        flush=True,
                    )
    except RunFailed as exc:
        print(f"compare: {exc}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(runs, sides)
    print_spread(runs, sides)
    print("checks: " + ("; ".join(problems) if problems else "no /private/ request, no URL twice"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
