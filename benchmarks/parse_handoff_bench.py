"""What handing a small page to the parse threads and back costs (issue #23 item 2).

    .venv/bin/python benchmarks/parse_handoff_bench.py [--pages 3000] [--rounds 3]
    PYTHONPATH=/tmp/base .venv/bin/python benchmarks/parse_handoff_bench.py   # another tree

``ParsePool.extract`` of ``synthweb.py``'s pages (101 pages of about 15 KB and 50 links,
the e2e web's) by ``--concurrency`` tasks on one event loop, each doing
``--loop-work-us`` of pure-Python work per page besides (the rest of a page's work on
the loop in a crawl, about 0.6-0.9 ms there), so the loop holds the GIL about as
often as in a crawl. Against ``inline``: ``extract_links`` called on the loop itself.
Printed per mode and round: CPU ms per page of this process (``getrusage``: every
thread), wall pages/s, and the loop's wake-ups from other threads per page (writes to
its self-pipe: ``call_soon_threadsafe``). Modes alternate within a round, so their
ratios are same-run ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
import time
from pathlib import Path

from synthweb import build_tree

from crawldeck.core.config import CrawlConfig
from crawldeck.core.net.parse import ParsePool
from crawldeck.core.policy.links import extract_links

HEADERS = {"Content-Type": "text/html; charset=utf-8"}


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _busy(us: int) -> None:
    """About ``us`` microseconds of pure-Python work (holds the GIL)."""
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


async def _run(
    mode: str, pages: list[bytes], n: int, conc: int, work_us: int
) -> tuple[float, float, float]:
    loop = asyncio.get_running_loop()
    wakes = 0
    write_to_self = loop._write_to_self  # type: ignore[attr-defined]

    def counted() -> None:
        nonlocal wakes
        wakes += 1
        write_to_self()

    loop._write_to_self = counted  # type: ignore[attr-defined]
    pool = ParsePool(CrawlConfig())
    todo = iter(range(n))

    async def worker() -> None:
        for i in todo:
            body = pages[i % len(pages)]
            url = f"http://127.0.0.1/p/{i}.html"
            if mode == "inline":
                extract_links(body, url, HEADERS, "crawldeck")
            else:
                await pool.extract(body, url, HEADERS, "crawldeck")
            _busy(work_us)
            await asyncio.sleep(0)

    cpu0, t0 = _cpu_s(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(conc)))
    cpu, wall = _cpu_s() - cpu0, time.perf_counter() - t0
    await pool.aclose()
    return cpu * 1000 / n, n / wall, wakes / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=3000, help="pages per run (default 3000)")
    parser.add_argument("--rounds", type=int, default=3, help="default 3")
    parser.add_argument("--concurrency", type=int, default=64, help="default 64")
    parser.add_argument("--loop-work-us", type=int, default=600, help="default 600")
    parser.add_argument("--modes", default="pool,inline", help="pool, inline (default both)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        build_tree(Path(tmp), ["127.0.0.1:1"], 100)
        files = sorted(Path(tmp).rglob("*.html"))
        bodies = [p.read_bytes() for p in files if "private" not in str(p)]
    print(
        f"{len(bodies)} pages, {sum(map(len, bodies)) // len(bodies)} bytes each on average; "
        f"{args.pages} a run, concurrency {args.concurrency}, "
        f"{args.loop_work_us} us of loop work a page"
    )
    modes = args.modes.split(",")
    for r in range(args.rounds):
        for mode in modes:
            cpu, rate, wakes = asyncio.run(
                _run(mode, bodies, args.pages, args.concurrency, args.loop_work_us)
            )
            print(
                f"round {r + 1} {mode:7s} CPU {cpu:.3f} ms/page  {rate:7.1f} pages/s  "
                f"wake-ups {wakes:.3f}/page"
            )
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
