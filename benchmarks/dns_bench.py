"""DNS benchmark: crawldeck's resolver cache against dnsmasq on loopback.

    .venv/bin/python benchmarks/dns_bench.py                 # 10 000 names, caps 8/64/256
    .venv/bin/python benchmarks/dns_bench.py --names 2000 --caps 16 --no-crawl

Needs Debian's dnsmasq (``apt-get install dnsmasq-base``). Every address is in
127.0.0.0/8.

1. **Lookups/s.** dnsmasq serves ``--names`` distinct names (``n<i>.bench.test`` ->
   ``127.10.x.y``, from a generated hosts file via ``--addn-hosts``, TTL 300 s). For each
   in-flight cap, a fresh ``DnsCache`` resolves every name at once (cold: each lookup
   is an A and an AAAA question, c-ares's own cache is empty too), then again (warm:
   every lookup a hit). The config is the default but for the cap (5 s per question, 2
   retries; ``retried`` counts questions sent again after a loss or a timeout). The
   cap is checked twice: by ``DnsStats.in_flight_peak`` and by
   a wrapper counting the questions that are really outstanding in c-ares.
2. **Cache hit ratio on a crawl of the local web.** The local web's hosts get names
   (``www.localweb.test`` ...; TTL 1 s, so the 5 s ``dns_min_ttl_s`` floor decides);
   the unmodified engine crawls them with an ``AiohttpFetcher`` on ``core.net.transport``'s
   pinning transport that also resolves before every request, as the engine will once
   issue #4 is wired in (one lookup per request plus one per new connection).

Prints the figures; exits 1 if a lookup failed or a cap was exceeded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from dnsserver import DNSMASQ, CountingResolver, DnsmasqServer

from crawldeck.core.config import build_config
from crawldeck.core.net.dns import DnsCache, DnsSettings


def bench_names(count: int) -> dict[str, list[str]]:
    """``count`` names, each on its own address in 127.10.0.0/16."""
    return {f"n{i}.bench.test": [f"127.10.{i // 250}.{i % 250 + 1}"] for i in range(count)}


async def lookups(server: DnsmasqServer, names: list[str], cap: int) -> dict[str, float]:
    """Cold and warm passes over ``names`` with ``dns_max_in_flight = cap``."""
    config = build_config({"dns_nameservers": [server.nameserver], "dns_max_in_flight": cap})
    resolvers: list[CountingResolver] = []

    def factory() -> CountingResolver:
        resolvers.append(CountingResolver(server.nameserver, 5.0))
        return resolvers[-1]

    dns = DnsCache(DnsSettings.from_config(config), resolver_factory=factory)
    started = time.perf_counter()
    cold = await asyncio.gather(*(dns.resolve(n) for n in names), return_exceptions=True)
    cold_s = time.perf_counter() - started
    after_cold = dns.stats()
    started = time.perf_counter()
    warm = await asyncio.gather(*(dns.resolve(n) for n in names), return_exceptions=True)
    warm_s = time.perf_counter() - started
    stats = dns.stats()
    await dns.aclose()
    failed = sum(not isinstance(r, list) for r in (*cold, *warm))
    return {
        "cap": cap,
        "cold_per_s": len(names) / cold_s,
        "cold_queries_per_s": after_cold.queries / cold_s,
        "retried": after_cold.queries - 2 * len(names),
        "warm_per_s": len(names) / warm_s,
        "peak": stats.in_flight_peak,
        "peak_counted": resolvers[0].peak if resolvers else 0,
        "hit_ratio": stats.hit_ratio,
        "failed": failed,
    }


async def crawl_hit_ratio(directory: Path) -> dict[str, float]:
    """Crawl the local web under real names (its pages link by name); the engine's DNS
    counters: every fetch, robots.txt included, is a lookup in the cache."""
    from crawldeck.core.crawl.engine import Engine
    from crawldeck.core.storage.store import Store
    from crawldeck.localweb.web import HOST_NAMES, LocalWeb

    names = {name: f"{name}.localweb.test" for name in HOST_NAMES}
    records = {f"{name}.localweb.test": [f"127.77.0.{i}"] for i, name in enumerate(HOST_NAMES, 1)}
    with (
        DnsmasqServer(directory / "dns", records, ttl_s=300, domain="localweb.test") as server,
        LocalWeb(delay_scale=0.2, busy_429_count=2, retry_after_s=1, names=names) as web,
    ):
        config = build_config(
            {
                "delay_ms": 20,
                "backoff_base_ms": 100,
                "concurrency": 8,
                "flush_interval_ms": 50,
                "render": "never",
                "dns_nameservers": [server.nameserver],
                "allow_networks": ["127.77.0.0/24"],
            }
        )
        store = Store(directory / "crawl.db", flush_interval_ms=config.flush_interval_ms)
        engine = Engine(config, store)
        engine.add_seeds(web.seeds())
        started = time.perf_counter()
        result = await asyncio.wait_for(engine.run(), timeout=300)
        elapsed = time.perf_counter() - started
        store.close()
        counters = engine.snapshot().counters
        return {
            "pages": result.counters.pages,
            "seconds": elapsed,
            "lookups": counters.dns_lookups,
            "queries_sent": counters.dns_queries,
            "queries_seen_by_dnsmasq": server.queries(),
            "hit_ratio": counters.dns_hit_ratio,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--names", type=int, default=10_000)
    parser.add_argument("--caps", default="8,64,256", help="in-flight caps to try")
    parser.add_argument("--no-crawl", action="store_true", help="skip the local-web crawl")
    args = parser.parse_args()
    if DNSMASQ is None:
        sys.exit("dns_bench: dnsmasq is not installed (apt-get install dnsmasq-base)")
    caps = [int(c) for c in args.caps.split(",")]
    ok = True
    with tempfile.TemporaryDirectory(prefix="crawldeck-dns-") as tmp:
        records = bench_names(args.names)
        with DnsmasqServer(
            Path(tmp), records, ttl_s=300, domain="bench.test", log_queries=False
        ) as server:
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"dnsmasq on {server.nameserver}, {len(records)} names, load average {load}")
            print(
                f"{'cap':>5} {'cold lookups/s':>15} {'cold queries/s':>15} "
                f"{'warm lookups/s':>15} {'peak':>5} {'peak (counted)':>15} {'retried':>8} "
                f"{'failed':>7}"
            )
            for cap in caps:
                row = asyncio.run(lookups(server, list(records), cap))
                print(
                    f"{cap:>5} {row['cold_per_s']:>15,.0f} {row['cold_queries_per_s']:>15,.0f} "
                    f"{row['warm_per_s']:>15,.0f} {row['peak']:>5.0f} "
                    f"{row['peak_counted']:>15.0f} {row['retried']:>8.0f} {row['failed']:>7.0f}"
                )
                if row["failed"] or row["peak"] > cap or row["peak_counted"] > cap:
                    ok = False
        if not args.no_crawl:
            crawl = asyncio.run(crawl_hit_ratio(Path(tmp)))
            print(
                f"local-web crawl by name: {crawl['pages']:.0f} pages in {crawl['seconds']:.1f} s, "
                f"{crawl['lookups']:.0f} lookups, {crawl['queries_sent']:.0f} queries sent, "
                f"{crawl['queries_seen_by_dnsmasq']:.0f} questions at dnsmasq, "
                f"hit ratio {crawl['hit_ratio']:.3f}"
            )
    print("OK" if ok else "FAILED: a lookup failed or the in-flight cap was exceeded")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
