"""What attached consoles cost a crawl: pages/s of the same headless crawl alone and with
``--watchers`` clients attached to its socket (issue #25 item 8).

    .venv/bin/python benchmarks/attach_bench.py                # A B A B A B
    .venv/bin/python benchmarks/attach_bench.py --rounds 5 --watchers 8

The crawl and the web are ``console_bench.py``'s (the local web plus ``--hosts`` static
hosts, fast settings: bound by CPU, the worst case for anything sharing the crawl's
loop), run as ``crawldeck crawl --no-ui``. On side B a separate process attaches
``--watchers`` ``tui.attach.SocketSource`` clients as soon as the socket is there: each
reads every snapshot and asks ``query_hosts`` once a second, as a console with a host
filter open does. Pages/s comes from the crawl file (pages / the run's duration); CPU
ms/page is the crawler's (user + system, start-up included; on side B the watchers'
process's too).

Prints each run, the medians and the ratio attached / alone; exits 1 when the watchers
cost more than ``--max-cost`` (default 10 %) of the pages/s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from console_bench import CRAWLDECK, bench_web, child_cpu_s, run_rate

from crawldeck.core.crawl.attach import socket_path

RUN_TIMEOUT_S = 300.0
#: The watchers' process: argv[1] the crawl file, argv[2] how many; reads until the end.
WATCHERS = """
import asyncio, sys
from pathlib import Path
from crawldeck.tui.attach import SocketSource

async def one(db):
    source = await SocketSource.connect(db)
    seen = []
    source.subscribe(seen.append)
    run = asyncio.create_task(source.run())
    while not run.done():
        await asyncio.to_thread(source.query_hosts, "127", 100)
        await asyncio.wait([run], timeout=1.0)
    source.close()
    return len(seen)

async def main():
    counts = await asyncio.gather(*(one(Path(sys.argv[1])) for _ in range(int(sys.argv[2]))))
    print(min(counts))

asyncio.run(main())
"""


def crawl(work: Path, db: Path, watchers: int) -> int:
    """Run the crawl headless with ``watchers`` attached (0: none); the fewest snapshots
    a watcher got."""
    command = [CRAWLDECK, "crawl", "seeds.txt", "--db", str(db), "--config", "bench.toml",
               "--no-ui", "-q"]  # fmt: skip
    proc = subprocess.Popen(command, cwd=work, stdout=subprocess.DEVNULL)
    seen = 0
    try:
        if watchers:
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while not socket_path(db).exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the crawl's socket never came")
                time.sleep(0.01)
            done = subprocess.run(
                [sys.executable, "-c", WATCHERS, str(db), str(watchers)], capture_output=True,
                text=True, timeout=RUN_TIMEOUT_S, check=True,
            )  # fmt: skip
            seen = int(done.stdout)
        proc.wait(timeout=RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"the crawl exited {proc.returncode}")
    return seen


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when the watchers cost at most ``--max-cost``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="A B pairs (default 3)")
    parser.add_argument("--watchers", type=int, default=3, help="clients attached (default 3)")
    parser.add_argument("--hosts", type=int, default=8, help="static hosts (default 8)")
    parser.add_argument("--pages-per-host", type=int, default=500, help="default 500")
    parser.add_argument("--max-cost", type=float, default=0.10, help="default 0.10 (10 %%)")
    args = parser.parse_args(argv)
    rates: dict[str, list[float]] = {"alone": [], "attached": []}
    cpu_ms: dict[str, list[float]] = {"alone": [], "attached": []}
    with bench_web(args.hosts, args.pages_per_host, "crawldeck-attach-bench-") as (work, seeds):
        print(f"{len(seeds)} hosts, {args.hosts} x {args.pages_per_host} static pages "
              f"+ the local web; {args.watchers} watchers on side B")  # fmt: skip
        for i in range(args.rounds):
            for mode in ("alone", "attached"):
                db = work / f"{mode}-{i}.db"
                cpu = child_cpu_s()
                seen = crawl(work, db, args.watchers if mode == "attached" else 0)
                cpu = child_cpu_s() - cpu
                pages, rate = run_rate(db)
                rates[mode].append(rate)
                cpu_ms[mode].append(1000 * cpu / pages)
                got = f", each watcher got {seen}+ snapshots" if seen else ""
                print(f"  {mode:8s} round {i + 1}: {pages} pages, {rate:7.1f} pages/s "
                      f"({1000 * cpu / pages:.2f} CPU ms/page{got})")  # fmt: skip
    alone = statistics.median(rates["alone"])
    attached = statistics.median(rates["attached"])
    ratio = attached / alone
    cost = f"cost {100 * (1 - ratio):+.1f} %, limit {100 * args.max_cost:.0f} %"
    print(f"median pages/s: alone {alone:.1f}, attached {attached:.1f}; ratio {ratio:.3f} ({cost})")
    return 0 if ratio >= 1 - args.max_cost else 1


if __name__ == "__main__":
    sys.exit(main())
