"""Render throughput and memory of ``core.render.browser_pool.RenderPool`` on the local spa host.

    .venv/bin/python benchmarks/render_bench.py                   # pool sizes 1 and 2
    .venv/bin/python benchmarks/render_bench.py --pages 60 --idle-ms 200 --sizes 1 2 3

For each pool size: a fresh ``LocalWeb`` and ``RenderPool`` (Debian's Chromium,
``render_browser_path``), a gate that checks robots.txt through a real ``RobotsCache``
but adds no politeness delay (this measures the browsers, not the crawl's manners);
every browser is started and warmed with one page first (not timed); then ``--pages``
pages are queued at once, the four spa shells that settle (inline script, hash router,
fetch(), disallowed XHR) in turn, their bodies fetched beforehand, so the pool is
saturated. Printed per size: pages/s, render time per page (mean, p50, p95, in ms, from
``RenderResult.elapsed_ms``), browser start-up time, and the peak memory of the
browsers' process trees sampled every second (RSS summed over processes, an upper
bound, and PSS, shared pages split) from ``RenderPool.stats()``.

Every page must render without error or time-out and give its links, and no request
robots.txt disallows may reach the server; the script exits 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from crawldeck.core.config import build_config
from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.net.robots import RobotsCache, RobotsSettings
from crawldeck.core.render.browser_pool import RenderPool
from crawldeck.core.render_types import RenderResult
from crawldeck.localweb import LocalWeb

KINDS = ("inline", "hash", "fetch", "private")
MiB = 2**20


@dataclass
class Figures:
    size: int
    pages: int
    wall_s: float
    launch_s: float
    per_page_ms: list[float]
    peak_rss: int
    peak_pss: int
    problems: list[str]

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall_s


async def run(size: int, pages: int, idle_ms: int, budget_ms: int, chromium: str) -> Figures:
    problems: list[str] = []
    with LocalWeb(delay_scale=0) as web:
        shells = [web.expected.shells[k] for k in KINDS]
        async with httpx.AsyncClient(trust_env=False) as client:
            bodies = {url: (await client.get(url)).content for url in shells}
        config = build_config(
            {
                "render_browser_path": chromium,
                "render_pool_size": size,
                "render_idle_ms": idle_ms,
                "render_timeout_ms": budget_ms,
                "render_max_pages_per_browser": 1000,
            }
        )
        async with AiohttpFetcher(config) as fetcher:
            robots = RobotsCache(
                fetcher, RobotsSettings.from_config(config), time.time, lambda line: None
            )

            async def gate(url: str, resource_type: str) -> bool:
                return (await robots.check(url)).allowed

            pool = RenderPool(config, gate=gate)
            try:
                t0 = time.perf_counter()
                await pool.start()
                warm = [pool.render(shells[0], bodies[shells[0]]) for _ in range(size)]
                await asyncio.gather(*warm)
                launch_s = time.perf_counter() - t0
                peak_rss = peak_pss = 0
                done = asyncio.Event()

                async def sample() -> None:
                    nonlocal peak_rss, peak_pss
                    for _ in range(10_000):  # bounded; ends when the pages are done
                        stats = pool.stats()
                        peak_rss = max(peak_rss, stats.rss_bytes)
                        peak_pss = max(peak_pss, stats.pss_bytes)
                        if done.is_set():
                            return
                        await asyncio.sleep(1.0)

                sampler = asyncio.create_task(sample())
                order = [shells[i % len(shells)] for i in range(pages)]
                started = time.perf_counter()
                results: list[RenderResult] = await asyncio.gather(
                    *(pool.render(url, bodies[url]) for url in order)
                )
                wall_s = time.perf_counter() - started
                done.set()
                await sampler
                stats = pool.stats()
                peak_rss = max(peak_rss, stats.rss_bytes)
                peak_pss = max(peak_pss, stats.pss_bytes)
            finally:
                await pool.aclose()
                await robots.aclose()
        for result in results:
            if result.error or result.timed_out or len(result.links) < 2:
                problems.append(f"{result.url}: error={result.error} timed_out={result.timed_out}")
        private = {urlsplit(url).path for url in web.expected.render_disallowed}
        asked = {a.path for a in web.access_log("spa")}
        if asked & private:
            problems.append(f"disallowed requested: {sorted(asked & private)}")
        if web.errors():
            problems.extend(web.errors())
    return Figures(
        size=size,
        pages=pages,
        wall_s=wall_s,
        launch_s=launch_s,
        per_page_ms=[r.elapsed_ms for r in results],
        peak_rss=peak_rss,
        peak_pss=peak_pss,
        problems=problems,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=40, help="pages rendered per pool size")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2], help="pool sizes")
    parser.add_argument("--idle-ms", type=int, default=500, help="render_idle_ms")
    parser.add_argument("--budget-ms", type=int, default=15_000, help="render_timeout_ms")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="render_browser_path")
    args = parser.parse_args()
    if not 1 <= args.pages <= 10_000:
        parser.error("--pages must be in 1..10000")
    print(
        f"render_bench: {args.pages} pages per size, shells {', '.join(KINDS)}, "
        f"render_idle_ms={args.idle_ms}, render_timeout_ms={args.budget_ms}",
        flush=True,
    )
    print(
        f"{'pool':>4} {'pages/s':>8} {'mean ms':>8} {'p50 ms':>7} {'p95 ms':>7} "
        f"{'start s':>8} {'RSS MiB':>8} {'PSS MiB':>8}"
    )
    failed = False
    for size in args.sizes:
        f = asyncio.run(run(size, args.pages, args.idle_ms, args.budget_ms, args.chromium))
        times = sorted(f.per_page_ms)
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        print(
            f"{f.size:>4} {f.pages_per_s:>8.2f} {statistics.fmean(times):>8.0f} "
            f"{statistics.median(times):>7.0f} {p95:>7.0f} {f.launch_s:>8.2f} "
            f"{f.peak_rss / MiB:>8.0f} {f.peak_pss / MiB:>8.0f}",
            flush=True,
        )
        for problem in f.problems:
            failed = True
            print(f"     problem: {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
