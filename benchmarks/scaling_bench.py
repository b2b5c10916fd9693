"""Scaling with the number of hosts (issue #6 part 3): pages/s and RSS at 10, 1 000 and
50 000 hosts.

    .venv/bin/python benchmarks/scaling_bench.py                      # 10, 1000, 50000
    .venv/bin/python benchmarks/scaling_bench.py --hosts 1000 --max-pages 5000
    .venv/bin/python benchmarks/scaling_bench.py --seeding             # issue #23 item 4

The web is ``SynthWeb`` in names mode (``benchmarks/synthweb.py``): H hosts named
``h<i>.synth.test``, 200 pages of ~15 KB and ~50 links each, spread over 250 loopback
addresses by a dnsmasq the web starts, so the crawler's DNS cache, its per-host
state (politeness, robots.txt cache, back queues, connection pool) and its frontier
all grow with H. Every host's root is a seed, so all H hosts are in the frontier from
the start. Each size is crawled once by a real ``crawldeck crawl --no-ui`` process
(delay 0, concurrency 100, one request in flight per host, depth 5) up to
``--max-pages`` pages (10 hosts hold only 2 010 pages: that crawl is the whole web,
bound by per-host latency with only 10 hosts to fetch from at once).

Printed per size: pages, robots.txt fetches (nginx's access log), pages/s and fetches/s
(pages + robots.txt) over the crawler's own elapsed time (``runs`` in its SQLite file),
CPU ms per page and per fetch, and peak RSS (``ru_maxrss`` of the crawler process). A robots.txt
fetch is a full request for the crawler (connection, request, parse), and at 50 000
hosts with every host a seed there is one per host, so fetches/s is the figure that
compares the crawler's speed across sizes; pages/s is printed too, with the share of
fetches that were robots.txt. RSS per host is ``(RSS at 50 000 - RSS at 1 000) / 49 000``.

``--seeding`` (issue #23 item 4) measures what seeding costs against crawling the seeds:
a seeds file of ``--seeds-per-host`` URLs (the root and ``/p/0.html`` ...) on each of
``--seed-hosts`` hosts (5 x 20 000 = 100 000 URLs), and three crawler processes on the
same names web:

- ``start-up``: the whole seeds file, ``max_pages = 1``, concurrency 1 (start, read and
  admit every seed, fetch one robots.txt and one page, save, exit);
- ``one seed``: the same with a seeds file of one URL (the start and the exit alone);
- ``crawl``: the whole seeds file crawled as the scaling runs crawl (concurrency 100,
  depth 5) up to ``--crawl-pages`` pages (default 20 000; the seeds' priority puts
  them first, and each page's links are admitted as in any crawl).

Seeding's CPU is ``start-up - one seed``. The crawl's CPU per fetch is ``(crawl -
start-up) / (pages + robots.txt)``, and crawling the seeds once is that times one
fetch a seed plus one robots.txt a host (a whole run of the 100 000 seeds takes over
half an hour on a loaded 2-core machine). Printed: seeding's CPU, its share of the
seeds' crawl (target: at most 5 %), and the crawl's fetches/s. Every CPU figure is
the process's ``ru_utime + ru_stime`` (its threads included: the SQLite writer's too).
"""

from __future__ import annotations

import argparse
import collections
import socket
import tempfile
from pathlib import Path

from e2e_bench import CRAWLDECK, RunFailed, crawldeck_result, measure
from synthweb import SynthWeb

CONFIG = """\
delay_ms = 0
adaptive_delay_factor = 0
ip_delay_ms = 0
concurrency = 100
per_host_concurrency = 1
max_depth = 5
max_pages = {max_pages}
dns_nameservers = ["{nameserver}"]
allow_networks = ["127.81.0.0/16"]
scope = "any"
render = "never"
"""


def free_port() -> int:
    """The first port from 8900 free on 127.81.0.1 (the names mode's first address)."""
    for port in range(8900, 8940):
        try:
            with socket.socket() as sock:
                sock.bind(("127.81.0.1", port))
        except OSError:
            continue
        return port
    raise SystemExit("scaling_bench: no free port in 8900-8939 on 127.81.0.1")


def run_size(hosts: int, max_pages: int, timeout_s: float) -> dict[str, float]:
    """One crawl of an H-host web; its figures."""
    with tempfile.TemporaryDirectory(prefix="crawldeck-scaling-") as tmp:
        work = Path(tmp)
        with SynthWeb(hosts, 200, by_ip=False, port=free_port()) as web:
            (work / "seeds.txt").write_text("\n".join(web.seeds) + "\n")
            (work / "bench.toml").write_text(
                CONFIG.format(max_pages=max_pages, nameserver=web.nameserver)
            )
            db = work / "crawl.db"
            command = [str(CRAWLDECK), "crawl", str(work / "seeds.txt"), "--no-ui",
                       "--db", str(db), "--config", str(work / "bench.toml")]  # fmt: skip
            wall, cpu, maxrss, _ = measure(command, work / "crawl.log", timeout_s)
            rows = web.requests()
        pages, elapsed = crawldeck_result(db)
    robots = sum(1 for *_, path, _ in rows if path == "/robots.txt")
    repeated = sum(
        n - 1 for n in collections.Counter((h, p) for _, _, h, p, _ in rows).values() if n > 1
    )
    private = sum(1 for *_, path, _ in rows if path.startswith("/private/"))
    return {
        "hosts": hosts,
        "pages": pages,
        "robots": robots,
        "requests": len(rows),
        "repeated": repeated,
        "private": private,
        "elapsed": elapsed,
        "wall": wall,
        "cpu": cpu,
        "rss_mib": maxrss / 1024,
    }


def seed_urls(web: SynthWeb, per_host: int) -> list[str]:
    """``per_host`` URLs of every host of ``web``: its root, then ``/p/0.html`` ..."""
    paths = ["/", *(f"/p/{i}.html" for i in range(per_host - 1))]
    return [f"http://{name}{path}" for name in web.names for path in paths]


def run_seeding(hosts: int, per_host: int, crawl_pages: int, timeout_s: float) -> dict[str, float]:
    """The three crawls of ``--seeding`` (see the module docstring); their figures."""
    out: dict[str, float] = {"hosts": hosts, "seeds": hosts * per_host}
    with tempfile.TemporaryDirectory(prefix="crawldeck-seeding-") as tmp:
        work = Path(tmp)
        with SynthWeb(hosts, 200, by_ip=False, port=free_port()) as web:
            seeds = seed_urls(web, per_host)
            (work / "all.txt").write_text("\n".join(seeds) + "\n")
            (work / "one.txt").write_text(seeds[0] + "\n")
            runs = [
                ("start-up", "all.txt", 1, 1, 5),
                ("one seed", "one.txt", 1, 1, 5),
                ("crawl", "all.txt", crawl_pages, 100, 5),
            ]
            for name, seeds_file, max_pages, concurrency, depth in runs:
                config = CONFIG.format(max_pages=max_pages, nameserver=web.nameserver)
                config = config.replace("concurrency = 100", f"concurrency = {concurrency}")
                config = config.replace("max_depth = 5", f"max_depth = {depth}")
                (work / "bench.toml").write_text(config)
                db = work / f"{name.replace(' ', '-')}.db"
                command = [str(CRAWLDECK), "crawl", str(work / seeds_file), "--no-ui",
                           "--db", str(db), "--config", str(work / "bench.toml")]  # fmt: skip
                web.reset_log()
                wall, cpu, maxrss, _ = measure(command, work / f"{name}.log", timeout_s)
                pages, elapsed = crawldeck_result(db)
                robots = sum(1 for *_, path, _ in web.requests() if path == "/robots.txt")
                out[f"{name} cpu"] = cpu
                out[f"{name} pages"] = pages
                out[f"{name} robots"] = robots
                out[f"{name} elapsed"] = elapsed
                out[f"{name} rss_mib"] = maxrss / 1024
                print(
                    f"{name:>8}: {pages:,} pages + {robots:,} robots.txt, CPU {cpu:.2f} s, "
                    f"wall {wall:.1f} s, peak RSS {maxrss / 1024:.0f} MiB",
                    flush=True,
                )
    return out


def print_seeding(r: dict[str, float]) -> None:
    """The ``--seeding`` summary: seeding's CPU and its share of the crawl's."""
    seeding = r["start-up cpu"] - r["one seed cpu"]
    fetches = r["crawl pages"] + r["crawl robots"]
    per_fetch = (r["crawl cpu"] - r["start-up cpu"]) / fetches
    once = per_fetch * (r["seeds"] + r["hosts"])
    print(
        f"\nseeding {r['seeds']:,.0f} URLs over {r['hosts']:,.0f} hosts: {seeding:.2f} s CPU "
        f"({1e6 * seeding / r['seeds']:.1f} us a seed), {seeding / once:.1%} of crawling them "
        f"once ({r['seeds'] + r['hosts']:,.0f} fetches at {1000 * per_fetch:.2f} CPU ms a "
        f"fetch = {once:.0f} s); the crawl: {fetches:,.0f} fetches, "
        f"{fetches / r['crawl elapsed']:.0f} fetches/s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[10, 1000, 50_000])
    parser.add_argument("--max-pages", type=int, default=30_000)
    parser.add_argument("--timeout", type=float, default=1200.0, help="per crawl, s")
    parser.add_argument("--seeding", action="store_true", help="seeding CPU against crawl CPU")
    parser.add_argument("--seed-hosts", type=int, default=20_000, help="with --seeding")
    parser.add_argument("--seeds-per-host", type=int, default=5, help="with --seeding")
    parser.add_argument("--crawl-pages", type=int, default=20_000, help="with --seeding")
    args = parser.parse_args()
    if args.seeding:
        try:
            r = run_seeding(args.seed_hosts, args.seeds_per_host, args.crawl_pages, args.timeout)
            print_seeding(r)
        except RunFailed as exc:
            print(f"--seeding: a crawl failed: {exc}")
            return 1
        return 0
    results = []
    for hosts in args.hosts:
        try:
            r = run_size(hosts, args.max_pages, args.timeout)
        except RunFailed as exc:
            print(f"{hosts} hosts: the crawl failed: {exc}")
            return 1
        results.append(r)
        print(
            f"{hosts:>6} hosts: {r['pages']:,.0f} pages + {r['robots']:,.0f} robots.txt in "
            f"{r['elapsed']:.1f} s; {r['pages'] / r['elapsed']:.0f} pages/s, "
            f"{(r['pages'] + r['robots']) / r['elapsed']:.0f} fetches/s, "
            f"{1000 * r['cpu'] / r['pages']:.2f} CPU ms/page, RSS {r['rss_mib']:.0f} MiB; "
            f"log: {r['requests']:,.0f} requests, {r['repeated']:.0f} repeated, "
            f"{r['private']:.0f} disallowed",
            flush=True,
        )
    print()
    print("| hosts | pages | robots.txt | pages/s | fetches/s | robots share | CPU ms/page "
          "| CPU ms/fetch | peak RSS MiB |")  # fmt: skip
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        fetches = r["pages"] + r["robots"]
        print(
            f"| {r['hosts']:,.0f} | {r['pages']:,.0f} | {r['robots']:,.0f} "
            f"| {r['pages'] / r['elapsed']:.0f} | {fetches / r['elapsed']:.0f} "
            f"| {r['robots'] / fetches:.0%} | {1000 * r['cpu'] / r['pages']:.2f} "
            f"| {1000 * r['cpu'] / fetches:.2f} | {r['rss_mib']:.0f} |"
        )
    # sizes given as a round (``--hosts 1000 20000 1000 20000``): each larger size against
    # the run of the first size just before it, the same round on the same machine load
    base = None
    for r in results:
        if r["hosts"] == args.hosts[0]:
            base = r
        elif base is not None:
            fetch_a = (base["pages"] + base["robots"]) / base["elapsed"]
            fetch_b = (r["pages"] + r["robots"]) / r["elapsed"]
            cpu_a = base["cpu"] / (base["pages"] + base["robots"])
            cpu_b = r["cpu"] / (r["pages"] + r["robots"])
            print(
                f"{r['hosts']:,.0f} against {base['hosts']:,.0f} hosts: fetches/s "
                f"{fetch_b / fetch_a:.2f}x, CPU per fetch {cpu_b / cpu_a:.2f}x"
            )
    by_hosts = {r["hosts"]: r for r in results}
    if 1000 in by_hosts and 50_000 in by_hosts:
        a, b = by_hosts[1000], by_hosts[50_000]
        pages_drop = 1 - (b["pages"] / b["elapsed"]) / (a["pages"] / a["elapsed"])
        fetch_a = (a["pages"] + a["robots"]) / a["elapsed"]
        fetch_b = (b["pages"] + b["robots"]) / b["elapsed"]
        per_host = (b["rss_mib"] - a["rss_mib"]) * 2**20 / 49_000
        print(
            f"\n1 000 -> 50 000 hosts: pages/s {-pages_drop:+.0%}, fetches/s "
            f"{fetch_b / fetch_a - 1:+.0%}, RSS {per_host / 1024:.1f} KiB per added host"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
