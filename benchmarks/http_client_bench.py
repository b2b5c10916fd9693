"""CPU per request of three asyncio HTTP clients on the synthetic web: why the fetcher
uses aiohttp (issue #6).

    .venv/bin/python benchmarks/http_client_bench.py [--hosts 500] [--requests 6000]

``SynthWeb`` (nginx, ``--hosts`` IP-literal hosts) serves ~15 KB pages; each client
GETs the same ``--requests`` URLs, spread round-robin over the hosts, 100 at a time,
keep-alive on, and reads every body. Printed per client: CPU ms per request (user +
system of this process, nginx runs in its own) and requests/s.

- ``httpx``: one ``AsyncClient`` with a pool as large as the number of hosts (what
  crawldeck used before: httpx 0.28 over httpcore).
- ``httpcore``: one ``AsyncConnectionPool`` per host (httpx's layer removed, and its
  pool kept small).
- ``aiohttp``: one ``ClientSession``, ``auto_decompress=False`` (what ``core.net.fetcher``
  does).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import time
from collections.abc import Awaitable, Callable

from synthweb import SynthWeb

Get = Callable[[str], Awaitable[int]]


def cpu_s() -> float:
    """User + system CPU seconds of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def timed(get: Get, urls: list[str]) -> tuple[float, float]:
    """``(CPU ms per request, requests/s)`` of ``get`` over ``urls``, 100 at a time."""
    gate = asyncio.Semaphore(100)

    async def one(url: str) -> int:
        async with gate:
            return await get(url)

    cpu, wall = cpu_s(), time.perf_counter()
    sizes = await asyncio.gather(*(one(url) for url in urls))
    assert all(size > 10_000 for size in sizes)
    return (cpu_s() - cpu) / len(urls) * 1000, len(urls) / (time.perf_counter() - wall)


async def with_httpx(urls: list[str], hosts: int) -> tuple[float, float]:
    """httpx 0.28: one client, one pool for every host."""
    import httpx

    limits = httpx.Limits(max_connections=hosts * 2, max_keepalive_connections=hosts * 2)
    async with httpx.AsyncClient(limits=limits, trust_env=False) as client:

        async def get(url: str) -> int:
            return len((await client.get(url)).content)

        return await timed(get, urls)


async def with_httpcore(urls: list[str], hosts: int) -> tuple[float, float]:
    """httpcore: a small pool per host."""
    import httpcore

    pools: dict[str, httpcore.AsyncConnectionPool] = {}

    async def get(url: str) -> int:
        host = url.split("/")[2]
        pool = pools.get(host)
        if pool is None:
            pool = pools[host] = httpcore.AsyncConnectionPool(max_connections=2)
        return len((await pool.request("GET", url)).content)

    try:
        return await timed(get, urls)
    finally:
        for pool in pools.values():
            await pool.aclose()


async def with_aiohttp(urls: list[str], hosts: int) -> tuple[float, float]:
    """aiohttp: one session, as core.net.fetcher sets it up (no decompression by aiohttp)."""
    import aiohttp

    connector = aiohttp.TCPConnector(limit=hosts * 2, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:

        async def get(url: str) -> int:
            async with session.get(url, allow_redirects=False) as response:
                return len(await response.read())

        return await timed(get, urls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--port", type=int, default=8795)
    args = parser.parse_args()
    with SynthWeb(args.hosts, 200, port=args.port) as web:
        names = web.names
        urls = [
            f"http://{names[i % args.hosts]}/p/{(i // args.hosts) % 200}.html"
            for i in range(args.requests)
        ]
        print(f"{args.requests:,} GETs of ~15 KB pages over {args.hosts} hosts, 100 at a time")
        for name, client in (
            ("aiohttp", with_aiohttp),
            ("httpcore", with_httpcore),
            ("httpx", with_httpx),
        ):
            ms, rate = asyncio.run(client(urls, args.hosts))
            print(f"{name:9} {ms:7.2f} CPU ms/request  {rate:8,.0f} requests/s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
