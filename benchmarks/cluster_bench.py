"""crawldeck's cluster crawl against the single process on one synthetic web (issue #12 item 7).

    .venv/bin/python benchmarks/cluster_bench.py                 # 500 hosts, A B C D x 3
    .venv/bin/python benchmarks/cluster_bench.py --hosts 50 --pages 40 --max-pages 1500 --rounds 1
    .venv/bin/python benchmarks/cluster_bench.py --memory-only   # Redis memory per URL alone
    .venv/bin/python benchmarks/cluster_bench.py --ordering opic # OPIC: credits go to Redis
    .venv/bin/python benchmarks/cluster_bench.py --profile 2 --no-memory  # cProfile, see below

The web is ``e2e_bench.py``'s: ``SynthWeb`` (``benchmarks/synthweb.py``), nginx on
loopback, ``--hosts`` hosts x ``--pages`` pages, each host its own address
``127.80.x.y``, a robots.txt disallowing ``/private/``. Four configurations run
alternately, A B C D per round (``--rounds`` rounds), each a real ``crawldeck crawl
seeds.txt --no-ui --db X --config bench.toml`` process with ``e2e_bench.py``'s config
(``delay_ms = 0``, ``ip_delay_ms = 0``, ``concurrency`` = C, one request in flight per
host, depth D, ``max_pages`` = N):

- A: the single process, no Redis (the SQLite crawl);
- B, C, D, E: ``--workers 1``, ``2``, ``4``, ``8`` (E only when asked: ``--only ACE``;
  on 2 cores it measures Redis's and the coordinator's cost per page with 8 writers,
  not a speed-up) ``--redis unix:///... --crawl-id bench`` on a
  fresh ``redis-server`` the benchmark starts for the run (``PrivateRedis``: a unix
  socket in a temporary directory, append-only file ``everysec``, as a private crawl's).
  The crawl's config is shared by the workers, so each worker has the same
  ``concurrency`` C (each is a whole crawler of its own; C x N requests in flight in
  all, at most one per host). The coordinator fetches nothing: it runs the collector
  into the one SQLite file and watches.

Measured per run:

- pages/s: the crawl file's ``pages`` over its run's ``runs.started_at`` ..
  ``finished_at`` (a cluster run's includes the workers' start-up and leaving); also
  over the first .. last ``pages.fetched_at`` (the fetching itself);
- crawler CPU: user + system of the ``crawldeck crawl`` process from ``os.wait4``,
  which includes the children it waited for (the workers, started and reaped by the
  coordinator); Redis CPU: the delta of ``used_cpu_user + used_cpu_sys`` (``INFO cpu``)
  of the run's server (its main thread's share is shown too: that is the thread one
  Redis instance is bound by); both per page, and Redis's share of the sum;
- Redis commands per page, three ways: ``total_commands_processed`` (``INFO stats``,
  which counts the commands scripts call too), the script calls among them
  (``EVALSHA``, ``INFO commandstats``) and the commands the workers sent (their last
  line in ``X.workers.log``, a script counted once);
- round trips per page: the workers' "Redis round trips" (pipelines sent) summed over
  the crawl file's pages; and Redis's ``total_reads_processed`` (socket reads of every
  client: the coordinator's and the collector's batches too, about one per round
  trip; the benchmark's own few INFO calls included);
- the machine's CPU busy share over the run (``/proc/stat``: every process, nginx and
  redis-server and other work included) and the peak RSS of the process tree.

After each run, nginx's access log is checked. The benchmark reloads nginx with
``$request_time`` added to the log format, so each request's start (end minus its
time; nginx takes both from its cached millisecond clock, so the check is exact at
1 ms) is known as well as its end: no URL (address + path) requested twice, no request
under ``/private/``, no host with more than one robots.txt, and no host with two
requests in flight at once (``per_host_concurrency = 1`` held across workers; with
``delay_ms = 0`` that is the per-host politeness there is to check). Any status other
than 200 is printed.

Then (unless ``--no-memory``) Redis memory per URL, in a fresh ``redis-server``
without persistence: ``--memory-urls`` URLs (about 70 bytes each) over
``--memory-hosts`` hosts are pushed through the real ``PUSH`` script in batches per
shard as a worker sends them (``encode_entry``, ``seen_member``, ``score``,
``path_prefix``); ``used_memory``'s delta per URL with the URLs queued (``:q``
members, ``:e`` entries and ``:seen`` members), then after the queues and entries are
deleted (the seen sets alone); the
same for ``--big-host-urls`` URLs on one host (a seen set past 512 members is a
hashtable, not an intset, and the queue past ``cluster_hot_queue`` is split into
path-prefix sub-queues).

``--profile N`` replaces the rounds by one crawl of A under ``python -m cProfile`` and
one cluster crawl whose coordinator and ``N`` workers (started by the benchmark once
the crawl is published) each run under it, and prints each process's top functions by
own time. ``--only BCD`` runs some configurations; ``--keep`` keeps the crawl files
and logs. The code measured is the ``crawldeck`` package the interpreter imports (the
header names its directory).

Prints each run, a table of medians over the rounds with the ratio to A, the commands
that cost Redis the most (``INFO commandstats``, summed over the cluster runs), the
memory figures and what 10^9 seen URLs need. The exit status is 0 unless a run fails
(nonzero exit, no pages, or more than ``--timeout`` s: the coordinator and its workers
are killed); a failed run is reported and left out of the table, and the others run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import pstats
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import redis
from e2e_bench import CONFIG, CRAWLDECK, RunFailed, crawldeck_result, free_port, measure
from synthweb import NGINX, SynthWeb

import crawldeck
from crawldeck.core.cluster.keys import (
    Keyspace,
    encode_entry,
    path_prefix,
    score,
    seen_member,
    shard_of,
)
from crawldeck.core.cluster.scripts import PUSH
from crawldeck.core.cluster.server import PrivateRedis
from crawldeck.core.config import CrawlConfig
from crawldeck.core.policy import urls
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.prioritizer import ORDERINGS

#: The configurations: name -> workers (``None``: the single process without Redis).
CONFIGS: dict[str, int | None] = {"A": None, "B": 1, "C": 2, "D": 4, "E": 8}
CRAWL_ID = "bench"
WORKER_LINE = re.compile(
    r"crawldeck worker (?P<id>\S+): (?P<outcome>\w+), (?P<pages>\d+) pages? in "
    r"(?P<s>[\d.]+) s, (?P<trips>\d+) Redis round trips?, (?P<commands>\d+) commands?, "
    r"(?P<fenced>\d+) ops? fenced, (?P<lost>\d+) leases? lost"
)
#: Hosts' URLs pushed per script call in the memory measurement (a worker's flush
#: carries a few pages' outlinks per host).
MEMORY_BATCH = 50
#: Seconds between two samples of the processes' CPU.
SAMPLE_S = 0.2
#: Functions printed per profile.
PROFILE_LINES = 25
#: Repeated URLs printed per run, with their requests' times.
REPEAT_EXAMPLES = 5


@dataclass
class Run:
    """One crawl's figures (Redis ones are ``None`` for A)."""

    config: str
    workers: int | None
    wall_s: float
    cpu_s: float
    tree_rss_kib: int
    pages: int
    elapsed_s: float
    fetch_span_s: float
    busy_share: float
    coordinator_cpu_s: float
    workers_cpu_s: float
    nginx_cpu_s: float
    redis_cpu_s: float | None = None
    redis_main_cpu_s: float | None = None
    redis_commands: int | None = None
    redis_scripts: int | None = None
    redis_reads: int | None = None
    commandstats: dict[str, tuple[int, int]] = field(default_factory=dict)
    worker_lines: list[dict[str, str]] = field(default_factory=list)
    log: dict[str, int] = field(default_factory=dict)
    statuses: dict[int, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.pages / self.elapsed_s

    @property
    def fetch_rate(self) -> float:
        return self.pages / self.fetch_span_s if self.fetch_span_s > 0 else float("nan")

    def per_page(self, value: float | None, scale: float = 1.0) -> float:
        return float("nan") if value is None else scale * value / self.pages

    def cluster(self, value: float) -> float:
        """``value``, or NaN for the single process."""
        return float("nan") if self.workers is None else value

    @property
    def total_cpu_s(self) -> float:
        return self.cpu_s + (self.redis_cpu_s or 0.0)

    @property
    def redis_share(self) -> float:
        return float("nan") if self.redis_cpu_s is None else self.redis_cpu_s / self.total_cpu_s

    def worker_sum(self, name: str) -> int | None:
        if self.workers is None:
            return None
        return sum(int(line[name]) for line in self.worker_lines)


# --------------------------------------------------------------------- the web


class TimedWeb(SynthWeb):
    """``SynthWeb`` whose access log also has ``$request_time``: rows of ``(start ms,
    end ms, address, path, status)``. nginx is reloaded with the new log format after
    it starts (``SynthWeb`` writes its config inline); raises ``RuntimeError`` if the
    log does not show the new field."""

    def __enter__(self) -> TimedWeb:
        super().__enter__()
        conf = self.work / "nginx.conf"
        text = conf.read_text()
        conf.write_text(text.replace("$status'", "$status $request_time'"))
        subprocess.run([NGINX, "-p", str(self.work), "-c", str(conf), "-s", "reload"],
                       check=True, timeout=30, capture_output=True)  # fmt: skip
        deadline = time.monotonic() + 15
        host, port = self.names[0].rsplit(":", 1)
        while True:
            time.sleep(0.3)
            self.reset_log()
            time.sleep(0.3)
            with urllib.request.urlopen(f"http://{host}:{port}/robots.txt", timeout=10) as r:
                r.read()
            lines = self.raw_lines()
            if lines and len(lines[-1].split(" ")) == 6:
                self.reset_log()
                return self
            if time.monotonic() > deadline:
                raise RuntimeError("nginx did not take the log format with $request_time")

    def raw_lines(self) -> list[str]:
        """The access log's lines (after nginx's 1 s buffer flush)."""
        time.sleep(1.2)
        return self.access_log.read_text().splitlines() if self.access_log.exists() else []

    def timed_requests(self) -> list[tuple[int, int, str, str, int]]:
        """The access log so far: ``(start ms, end ms, server address, path, status)``."""
        rows = []
        for line in self.raw_lines():
            msec, addr, _host, path, status, took = line.split(" ")
            end = round(float(msec) * 1000)
            rows.append((end - round(float(took) * 1000), end, addr, path, int(status)))
        return rows


def check_log(web: TimedWeb) -> tuple[dict[str, int], dict[int, int]]:
    """What nginx logged for a run: request counts, repeats, robots.txt per host, the
    per-host overlaps (two requests of one address in flight at once; ``overlap_ms``
    the longest), and the statuses other than 200."""
    rows = web.timed_requests()
    urls_seen = Counter((addr, path) for _s, _e, addr, path, _st in rows)
    robots = Counter(addr for _s, _e, addr, path, _st in rows if path == "/robots.txt")
    by_host: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for start, end, addr, _path, _status in rows:
        by_host[addr].append((start, end))
    overlaps = longest = 0
    for spans in by_host.values():
        spans.sort()
        busy_until = -1
        for start, end in spans:
            if start < busy_until:
                overlaps += 1
                longest = max(longest, busy_until - start)
            busy_until = max(busy_until, end)
    counts = {
        "requests": len(rows),
        "robots": sum(robots.values()),
        "hosts": len(by_host),
        "robots_twice": sum(1 for n in robots.values() if n > 1),
        "private": sum(1 for *_, path, _st in rows if path.startswith("/private/")),
        "repeated": sum(n - 1 for n in urls_seen.values() if n > 1),
        "overlaps": overlaps,
        "overlap_ms": longest,
    }
    if rows:
        first = min(start for start, *_ in rows)
        twice = [u for u, n in urls_seen.items() if n > 1][:REPEAT_EXAMPLES]
        for addr, path in twice:
            at = [f"{(s - first) / 1000:.3f}-{(e - first) / 1000:.3f}"
                  for s, e, a, p, _st in rows if (a, p) == (addr, path)]  # fmt: skip
            print(f"    repeated: {addr}{path} at {', '.join(at)} s")
    return counts, dict(Counter(st for *_, st in rows if st != 200))


# -------------------------------------------------------------------- the runs


def machine_busy() -> tuple[int, int]:
    """``(busy, total)`` jiffies of all CPUs from ``/proc/stat``."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


class CpuSampler(threading.Thread):
    """Samples, every ``SAMPLE_S``, the own CPU (user + system, s; ``/proc/PID/stat``)
    of this benchmark's descendants by role: ``coordinator`` (the ``crawldeck crawl``
    process), ``worker`` (its workers), ``nginx`` (the web's server), so the
    coordinator's own CPU is known apart from its workers' (``os.wait4`` gives their
    sum). A process's CPU before the first sample (``start``) is not counted, and a
    process's last ``SAMPLE_S`` before it exits is missed: the figures are a little low.
    """

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self._tick = os.sysconf("SC_CLK_TCK")
        self.role: dict[int, str] = {}
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self._done = threading.Event()
        self._sample()
        self.first = dict(self.last)

    def _sample(self) -> None:
        todo = _children(os.getpid())
        while todo:
            pid = todo.pop()
            todo += _children(pid)
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{pid}/cmdline", "rb") as f:  # each time: a child
                    argv = f.read().split(b"\0")  # has its parent's until it execs
                self.role[pid] = (
                    "nginx" if argv[0].startswith((b"nginx", NGINX.encode()))
                    else "worker" if b"worker" in argv
                    else "coordinator" if b"crawl" in argv
                    else "other"
                )  # fmt: skip
            except OSError:
                continue
            self.last[pid] = (int(fields[11]) + int(fields[12])) / self._tick

    def run(self) -> None:
        while not self._done.wait(SAMPLE_S):
            self._sample()

    def stop(self) -> dict[str, float]:
        """Stop sampling; CPU s by role over the sampled time."""
        self._done.set()
        if self.is_alive():
            self.join()
        out: dict[str, float] = defaultdict(float)
        for pid, cpu in self.last.items():
            out[self.role[pid]] += cpu - self.first.get(pid, 0.0)
        return dict(out)


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def redis_figures(client: redis.Redis) -> dict[str, Any]:
    """The server's CPU (s), commands, socket reads and commandstats now."""
    cpu, stats = client.info("cpu"), client.info("stats")
    return {
        "cpu": float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
        "main": float(cpu["used_cpu_user_main_thread"]) + float(cpu["used_cpu_sys_main_thread"]),
        "commands": int(stats["total_commands_processed"]),
        "reads": int(stats["total_reads_processed"]),
        "cmdstats": {
            name.removeprefix("cmdstat_"): (int(v["calls"]), int(v["usec"]))
            for name, v in client.info("commandstats").items()
        },
    }


def kill_leftovers(marker: str) -> list[int]:
    """SIGKILL the processes whose command line holds ``marker`` (this run's own
    Redis socket path: the workers of a coordinator killed at the timeout, which run
    in their own sessions); their pids."""
    killed = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and "redis-server" not in cmdline:
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed.append(int(entry))
            except ProcessLookupError:
                continue
    return killed


def fetch_span_s(db: Path) -> float:
    """Seconds from the first to the last ``pages.fetched_at`` in ``db``."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        first, last = conn.execute("SELECT min(fetched_at), max(fetched_at) FROM pages").fetchone()
    finally:
        conn.close()

    def utc(text: str) -> datetime:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))

    return (utc(last) - utc(first)).total_seconds()


def run_config(name: str, work: Path, tag: str, args: argparse.Namespace) -> Run:
    """One crawl of configuration ``name``; its figures (the log is checked by the caller).

    Raises:
        RunFailed: the crawl failed, timed out (killed with its workers) or fetched nothing.
    """
    workers = CONFIGS[name]
    db, log = work / f"{tag}.db", work / f"{tag}.log"
    command = [str(CRAWLDECK), "crawl", str(work / "seeds.txt"), "--no-ui", "--db", str(db),
               "--config", str(work / "bench.toml")]  # fmt: skip
    server = client = None
    before: dict[str, Any] = {}
    if workers is not None:
        server = PrivateRedis(work / f"redis-{tag}")
        server.start()
        client = redis.Redis.from_url(server.url)
        command += ["--workers", str(workers), "--redis", server.url, "--crawl-id", CRAWL_ID]
        before = redis_figures(client)
    busy0 = machine_busy()
    sampler = CpuSampler()
    sampler.start()
    try:
        wall, cpu, _maxrss, tree = measure(command, log, args.timeout)
        busy1 = machine_busy()
        roles = sampler.stop()
        after = redis_figures(client) if client is not None else {}
        pages, elapsed = crawldeck_result(db)
        if pages == 0:
            raise RunFailed("no pages fetched")
        span = fetch_span_s(db)
    except (RunFailed, OSError, sqlite3.Error, ValueError, redis.RedisError) as exc:
        if server is not None and server.socket_path is not None:
            killed = kill_leftovers(str(server.socket_path))
            if killed:
                print(f"    killed leftover workers {killed}")
        tail = log.read_text(errors="replace").splitlines()[-25:] if log.exists() else []
        print("\n".join("    | " + line for line in tail))
        raise RunFailed(f"{name} run {tag} failed: {exc}") from None
    finally:
        sampler.stop()
        if client is not None:
            client.close()
        if server is not None:
            server.stop()
    run = Run(name, workers, wall, cpu, tree, pages, elapsed, span,
              (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1]),
              roles.get("coordinator", 0.0), roles.get("worker", 0.0),
              roles.get("nginx", 0.0))  # fmt: skip
    if workers is not None:
        run.redis_cpu_s = after["cpu"] - before["cpu"]
        run.redis_main_cpu_s = after["main"] - before["main"]
        run.redis_commands = after["commands"] - before["commands"]
        run.redis_reads = after["reads"] - before["reads"]
        run.commandstats = {
            cmd: (calls - before["cmdstats"].get(cmd, (0, 0))[0],
                  usec - before["cmdstats"].get(cmd, (0, 0))[1])
            for cmd, (calls, usec) in after["cmdstats"].items()
        }  # fmt: skip
        run.redis_scripts = run.commandstats.get("evalsha", (0, 0))[0]
        text = Path(f"{db}.workers.log").read_text(errors="replace")
        run.worker_lines = [m.groupdict() for m in WORKER_LINE.finditer(text)]
        if len(run.worker_lines) != workers:
            print(f"    note: {len(run.worker_lines)} worker lines in {db}.workers.log, "
                  f"{workers} workers started")  # fmt: skip
    return run


def describe(run: Run, round_no: int) -> str:
    """One line about ``run``."""
    log = run.log
    line = (
        f"  {run.config} round {round_no}: {run.pages:6d} pages in {run.elapsed_s:5.1f} s = "
        f"{run.rate:6.1f} pages/s (fetching {run.fetch_rate:6.1f}/s), CPU "
        f"{run.per_page(run.cpu_s, 1000):.2f} ms/page"
    )
    if run.workers is not None:
        trips = run.worker_sum("trips")
        line += (
            f" + Redis {run.per_page(run.redis_cpu_s, 1000):.2f} ("
            f"{100 * run.redis_share:.1f} %), {run.per_page(run.redis_commands):.1f} Redis "
            f"commands/page, {run.per_page(trips):.2f} worker round trips/page, "
            f"{run.worker_sum('fenced')} ops fenced, {run.worker_sum('lost')} leases lost"
        )
    line += (
        f", machine {100 * run.busy_share:.0f} % busy; log: {log['requests']} requests, "
        f"{log['robots']} robots.txt on {log['hosts']} hosts ({log['robots_twice']} twice), "
        f"{log['repeated']} repeated, {log['private']} /private/, {log['overlaps']} "
        f"per-host overlaps"
    )
    if run.statuses:
        line += ", non-200 " + ", ".join(f"{k}: {v}" for k, v in sorted(run.statuses.items()))
    return line


def print_table(runs: list[Run]) -> None:
    """Medians per configuration, and each configuration's ratio to A for the rates
    and CPU."""
    rows: list[tuple[str, Callable[[Run], float], str, bool]] = [
        ("pages", lambda r: r.pages, "{:,.0f}", False),
        ("pages/s (run's started..finished)", lambda r: r.rate, "{:,.1f}", True),
        ("pages/s (first..last fetch)", lambda r: r.fetch_rate, "{:,.1f}", True),
        ("wall s (spawn to reap)", lambda r: r.wall_s, "{:.1f}", False),
        ("CPU ms/page, crawler processes", lambda r: r.per_page(r.cpu_s, 1000), "{:.2f}", True),
        ("  coordinator's own (sampled)", lambda r: r.per_page(r.coordinator_cpu_s, 1000),
         "{:.2f}", False),
        ("  workers' (sampled)", lambda r: r.cluster(r.per_page(r.workers_cpu_s, 1000)),
         "{:.2f}", False),
        ("CPU ms/page, nginx (sampled)", lambda r: r.per_page(r.nginx_cpu_s, 1000),
         "{:.2f}", False),
        ("CPU ms/page, redis-server", lambda r: r.per_page(r.redis_cpu_s, 1000), "{:.2f}", False),
        ("  of which its main thread", lambda r: r.per_page(r.redis_main_cpu_s, 1000),
         "{:.2f}", False),
        ("CPU ms/page, crawler + Redis", lambda r: r.per_page(r.total_cpu_s, 1000), "{:.2f}", True),
        ("Redis share of that CPU %", lambda r: 100 * r.redis_share, "{:.1f}", False),
        ("Redis commands/page (server, incl. in scripts)", lambda r: r.per_page(r.redis_commands),
         "{:.1f}", False),
        ("  script calls/page (EVALSHA)", lambda r: r.per_page(r.redis_scripts), "{:.2f}", False),
        ("  commands/page sent by workers", lambda r: r.per_page(r.worker_sum("commands")),
         "{:.2f}", False),
        ("round trips/page (workers)", lambda r: r.per_page(r.worker_sum("trips")),
         "{:.2f}", False),
        ("socket reads/page (Redis, all clients)", lambda r: r.per_page(r.redis_reads),
         "{:.2f}", False),
        ("machine CPU busy % (2 cores, all processes)", lambda r: 100 * r.busy_share,
         "{:.0f}", False),
        ("peak RSS MiB (process tree, sampled)", lambda r: r.tree_rss_kib / 1024, "{:.0f}", False),
    ]  # fmt: skip
    names = [n for n in CONFIGS if any(r.config == n for r in runs)]
    label = {n: "A single" if w is None else f"{n} {w} worker{'s' * (w > 1)}"
             for n, w in CONFIGS.items()}  # fmt: skip
    width = max(len(r[0]) for r in rows)
    counts = ", ".join(f"{n} {sum(r.config == n for r in runs)}" for n in names)
    print(f"\nmedians over the runs that succeeded ({counts}):")
    print(f"  {'':{width}}" + "".join(f"  {label[n]:>12}" for n in names))
    ratios: dict[str, list[str]] = {}
    for title, get, fmt, with_ratio in rows:
        values = {n: statistics.median(get(r) for r in runs if r.config == n) for n in names}
        cells = "".join(
            f"  {'-' if math.isnan(values[n]) else fmt.format(values[n]):>12}" for n in names
        )
        print(f"  {title:{width}}{cells}")
        if with_ratio and "A" in values:
            ratios[title] = [f"{values[n] / values['A']:.2f}" for n in names]
    for title, ratio in ratios.items():
        head = ("ratio to A: " + title)[:width]
        print(f"  {head:{width}}" + "".join(f"  {c:>12}" for c in ratio))


def print_commandstats(runs: list[Run]) -> None:
    """The commands that cost Redis the most, per configuration (summed over its
    runs): calls and microseconds per page (a script's usec include its commands')."""
    for name, workers in CONFIGS.items():
        if workers is None:
            continue
        mine = [r for r in runs if r.config == name]
        if not mine:
            continue
        pages = sum(r.pages for r in mine)
        cpu = sum(r.redis_cpu_s or 0.0 for r in mine)
        total: Counter[str] = Counter()
        calls: Counter[str] = Counter()
        for r in mine:
            for cmd, (n, usec) in r.commandstats.items():
                total[cmd] += usec
                calls[cmd] += n
        top = ", ".join(
            f"{cmd} {calls[cmd] / pages:.2f}/page {usec / pages:.0f} us/page"
            for cmd, usec in total.most_common(9)
        )
        print(f"  {name}: Redis CPU {1e6 * cpu / pages:.0f} us/page; by command: {top}")


def profile_run(web: TimedWeb, work: Path, args: argparse.Namespace) -> None:
    """``--profile``: one crawl of A under cProfile, then one cluster crawl with the
    coordinator and ``--profile`` workers each under cProfile (the benchmark starts
    the workers once the crawl is published); prints each process's top functions by
    own time (cProfile sees the event loop's thread only: the parse threads' time is
    not in it).

    Raises:
        RunFailed: a process failed or took more than ``--timeout`` s (all are killed).
    """
    profile = [sys.executable, "-m", "cProfile", "-o"]
    launch = ["-m", "crawldeck.cli.launch"]
    crawl = ["crawl", str(work / "seeds.txt"), "--no-ui", "--config", str(work / "bench.toml")]
    web.reset_log()
    measure([*profile, str(work / "single.prof"), *launch, *crawl, "--db", str(work / "p-A.db")],
            work / "p-A.log", args.timeout)  # fmt: skip
    with PrivateRedis(work / "redis-profile") as server:
        client = redis.Redis.from_url(server.url)
        before = redis_figures(client)
        flags = ["--redis", server.url, "--crawl-id", CRAWL_ID]
        procs = [subprocess.Popen(
            [*profile, str(work / "coordinator.prof"), *launch, *crawl, "--db",
             str(work / "p-C.db"), *flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )]  # fmt: skip
        deadline = time.monotonic() + args.timeout
        try:
            while not client.exists(Keyspace(CRAWL_ID).config):
                if time.monotonic() > deadline or procs[0].poll() is not None:
                    raise RunFailed("profile: the coordinator did not publish the crawl")
                time.sleep(0.05)
            for i in range(args.profile):
                worker = [*profile, str(work / f"worker{i}.prof"), *launch, "worker", *flags]
                procs.append(subprocess.Popen(worker, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL,
                                              start_new_session=True))  # fmt: skip
            for proc in procs:
                proc.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise RunFailed(f"profile: a process ran past {args.timeout:.0f} s") from None
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        after = redis_figures(client)
        client.close()
    pages, elapsed = crawldeck_result(work / "p-C.db")
    print(f"\nprofiled cluster crawl: {pages} pages in {elapsed:.1f} s with {args.profile} "
          f"workers; Redis CPU {after['cpu'] - before['cpu']:.2f} s")  # fmt: skip
    for name in ["single", "coordinator", *(f"worker{i}" for i in range(args.profile))]:
        print(f"\n--- {name}: top functions by own time ---")
        stats = pstats.Stats(str(work / f"{name}.prof"))
        stats.sort_stats("tottime").print_stats(PROFILE_LINES)


# ------------------------------------------------------------------ the memory


def memory_urls(count: int, hosts: int) -> list[FrontierEntry]:
    """``count`` frontier entries over ``hosts`` hosts, as a worker pushes them: a
    cleaned URL of about 70 bytes, its normalized key, its host key, the page it was
    found on (``via``), depth 3."""
    entries = []
    strip = CrawlConfig().strip_params
    sections = ["news", "products", "blog", "docs", "support", "about", "category", "shop"]
    for i in range(count):
        h = i % hosts
        host = f"www.site{h:05d}.example-shop.com"
        n = i // hosts
        url = urls.clean(f"https://{host}/{sections[n % 8]}/item-{n:06d}-spring-sale.html")
        via = urls.clean(f"https://{host}/{sections[(n + 3) % 8]}/index-{n // 30}.html")
        entries.append(
            FrontierEntry(url, urls.normalize(url, strip), urls.host_key(url), 3, 1, via=via)
        )
    return entries


def push_entries(client: redis.Redis, entries: list[FrontierEntry], hot: int) -> None:
    """Push ``entries`` through the real ``PUSH`` script: per shard, per host, in
    batches of ``MEMORY_BATCH`` URLs per host, as ``ClusterStore`` flushes them."""
    keys = Keyspace(CRAWL_ID)
    sha = client.script_load(PUSH)
    by_host: dict[str, list[FrontierEntry]] = defaultdict(list)
    for e in entries:
        by_host[e.host].append(e)
    now = time.time()
    now_ms = int(now * 1000)
    for start in range(0, max(len(v) for v in by_host.values()), MEMORY_BATCH):
        pipe = client.pipeline(transaction=False)
        shards: dict[int, list[list[Any]]] = defaultdict(list)
        for host, group in by_host.items():
            rows = [
                [str(seen_member(e.key)), str(score(e.priority, now_ms)), path_prefix(e.url),
                 encode_entry(e), 0]
                for e in group[start : start + MEMORY_BATCH]
            ]  # fmt: skip
            if rows:
                shards[shard_of(host)].append([host, rows, []])
        for shard, payload in shards.items():
            arg = json.dumps(payload, separators=(",", ":"))
            pipe.evalsha(sha, 1, keys.stream(shard), keys.tag(shard), arg, hot, now, now_ms, 0)
        pipe.execute()


@dataclass(frozen=True)
class Memory:
    """Bytes per URL of one memory measurement: ``used_memory`` deltas with the URLs
    queued and with the seen sets alone, and the seen sets' own ``MEMORY USAGE`` (a
    hashtable set that has just grown holds its old bucket array too until its
    incremental rehash ends, which only operations on that set advance: the delta then
    counts both arrays)."""

    urls: int
    hosts: int
    queued_b: float
    seen_b: float
    seen_usage_b: float
    entry_chars: float
    encodings: str


def measure_memory(work: Path, count: int, hosts: int) -> Memory:
    """Push ``count`` URLs over ``hosts`` hosts into a fresh ``redis-server`` (no
    persistence), then delete the queues; bytes per URL with the queues and without."""
    entries = memory_urls(count, hosts)
    hot = CrawlConfig().cluster_hot_queue
    server = PrivateRedis(work / f"memory-{count}-{hosts}", extra_args=("--appendonly", "no"))
    with server:
        client = redis.Redis.from_url(server.url)
        client.script_load(PUSH)
        base = int(client.info("memory")["used_memory"])
        push_entries(client, entries, hot)
        queued = int(client.info("memory")["used_memory"])
        host_key = Keyspace(CRAWL_ID).host(entries[0].host)
        encodings = ", ".join(
            f"{suffix} {client.object('encoding', host_key + suffix).decode()}"
            for suffix in (":q", ":seen")
        )
        subs = client.scard(host_key + ":subs")
        if subs:
            encodings += f", {subs} sub-queues"
        doomed = [k for k in client.scan_iter(match="cd:*:h:*", count=1000)
                  if re.search(rb":(q|q:[^:]*|subs|e)$", k)]  # fmt: skip
        for i in range(0, len(doomed), 500):
            client.delete(*doomed[i : i + 500])
        seen = int(client.info("memory")["used_memory"])
        members = usage = 0
        for k in client.scan_iter(match="cd:*:seen", count=1000):
            members += client.scard(k)
            usage += client.memory_usage(k, samples=0) or 0
        client.close()
    if members != count:
        raise RunFailed(f"memory: {members} seen members for {count} URLs pushed")
    chars = statistics.mean(len(encode_entry(e)) for e in entries[:1000])
    return Memory(count, hosts, (queued - base) / count, (seen - base) / count, usage / count,
                  chars, encodings)  # fmt: skip


def print_memory(results: list[Memory], servers_gb: float = 64.0, nodes: int = 3) -> None:
    """The memory figures and what 10^9 seen URLs need at each."""
    print(
        "\nRedis memory per URL (used_memory deltas; queued = :q member + :e entry + :seen member):"
    )
    for m in results:
        print(f"  {m.urls:,} URLs over {m.hosts:,} host{'s' * (m.hosts > 1)}: queued "
              f"{m.queued_b:.1f} B/URL (entry JSON {m.entry_chars:.0f} chars), seen alone "
              f"{m.seen_b:.1f} B/URL (the sets' MEMORY USAGE {m.seen_usage_b:.1f}; "
              f"{m.encodings})")  # fmt: skip
    total = nodes * servers_gb * 1e9 / 2**30
    for m in results:
        low, high = sorted((m.seen_b, m.seen_usage_b))
        print(f"  10^9 seen URLs like these ({m.hosts:,} host{'s' * (m.hosts > 1)}): "
              f"{1e9 * low / 2**30:,.0f}-{1e9 * high / 2**30:,.0f} GiB, of {nodes} x "
              f"{servers_gb:.0f} GB = {total:,.0f} GiB")  # fmt: skip


# ------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 unless a run fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=500, help="default 500")
    parser.add_argument("--pages", type=int, default=100, help="pages per host (default 100)")
    parser.add_argument("--concurrency", type=int, default=100,
                        help="per process (each worker's too; default 100)")  # fmt: skip
    parser.add_argument("--max-depth", type=int, default=5, help="default 5")
    parser.add_argument("--max-pages", type=int, default=12000, help="default 12000")
    parser.add_argument("--rounds", type=int, default=3, help="A B C D rounds (default 3)")
    parser.add_argument("--ordering", default="bfs", choices=ORDERINGS,
                        help="the crawls' ordering (default bfs)")  # fmt: skip
    parser.add_argument("--port", type=int, help="nginx port (default: the first free from 8790)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds a run may take, then it is killed (default 300)")  # fmt: skip
    parser.add_argument("--memory-urls", type=int, default=200_000, help="default 200 000")
    parser.add_argument("--memory-hosts", type=int, default=1000, help="default 1 000")
    parser.add_argument("--big-host-urls", type=int, default=20_000, help="default 20 000")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory measurement")
    parser.add_argument("--memory-only", action="store_true", help="only the memory measurement")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory (crawl files, logs)")  # fmt: skip
    parser.add_argument(
        "--only", default="ABCD", help="the configurations to run (default ABCD; E: 8 workers)"
    )
    parser.add_argument("--profile", type=int, metavar="N", default=0,
                        help="instead of the rounds: profile A, then a crawl with N "
                             "workers and its coordinator, each under cProfile")  # fmt: skip
    args = parser.parse_args(argv)
    if not CRAWLDECK.exists():
        sys.exit(f"cluster_bench: {CRAWLDECK} not found: pip install -e . first")
    work = Path(tempfile.mkdtemp(prefix="cd-cbench-"))
    runs: list[Run] = []
    problems: list[str] = []
    failed: list[str] = []
    try:
        if not args.memory_only:
            port = args.port or free_port(args.hosts)
            print(f"machine: {os.cpu_count()} CPUs, {platform.platform()}, Python "
                  f"{platform.python_version()}, {redis_version()}; nginx port {port}; "
                  f"crawldeck from {Path(crawldeck.__file__).parent}")  # fmt: skip
            print(f"web: {args.hosts} hosts x {args.pages + 1} pages; concurrency "
                  f"{args.concurrency} per process, 1 per host, depth {args.max_depth}, cap "
                  f"{args.max_pages} pages, ordering {args.ordering}; {args.rounds} "
                  f"round{'s' * (args.rounds != 1)} "
                  f"of {' '.join(args.only)} (A single, B 1 worker, C 2, D 4, E 8)")  # fmt: skip
            with TimedWeb(args.hosts, args.pages, by_ip=True, port=port) as web:
                (work / "seeds.txt").write_text("\n".join(web.seeds) + "\n")
                (work / "bench.toml").write_text(
                    CONFIG.format(concurrency=args.concurrency, max_depth=args.max_depth,
                                  max_pages=args.max_pages)
                    + f'ordering = "{args.ordering}"\n'
                )  # fmt: skip
                if args.profile:
                    profile_run(web, work, args)
                    return 0
                for i in range(args.rounds):
                    for name in [n for n in CONFIGS if n in args.only]:
                        web.reset_log()
                        time.sleep(0.2)  # let nginx reopen its log
                        try:
                            run = run_config(name, work, f"{name}-{i + 1}", args)
                        except RunFailed as exc:  # the others still run; exit status 1
                            print(f"  {exc}", flush=True)
                            failed.append(f"{name} round {i + 1}")
                            continue
                        run.log, run.statuses = check_log(web)
                        runs.append(run)
                        problems += [f"{name} round {i + 1}: {p}" for p in run_problems(run)]
                        print(describe(run, i + 1), flush=True)
            print_table(runs)
            print("\nRedis's costliest commands (INFO commandstats, summed over the runs):")
            print_commandstats(runs)
            if failed:
                print(f"failed (killed or exited nonzero, not in the table): {', '.join(failed)}")
            print("checks: " + ("; ".join(problems) if problems else
                                "no URL twice, no /private/, one robots.txt per host, "
                                "no host with two requests in flight"))  # fmt: skip
        if not args.no_memory:
            results = [measure_memory(work, args.memory_urls, args.memory_hosts),
                       measure_memory(work, args.big_host_urls, 1)]  # fmt: skip
            print_memory(results)
    except RunFailed as exc:
        print(f"cluster_bench: {exc}")
        return 1
    finally:
        if args.keep:
            print(f"cluster_bench: work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


def run_problems(run: Run) -> list[str]:
    """The server-side checks ``run`` failed."""
    log, out = run.log, []
    if log["private"]:
        out.append(f"{log['private']} under /private/")
    if log["repeated"]:
        out.append(f"{log['repeated']} repeated URLs")
    if log["robots_twice"]:
        out.append(f"{log['robots_twice']} hosts with robots.txt twice")
    if log["overlaps"]:
        out.append(f"{log['overlaps']} per-host overlaps (longest {log['overlap_ms']} ms)")
    fenced = run.worker_sum("fenced")
    if fenced:
        out.append(f"{fenced} ops fenced")
    return out


def redis_version() -> str:
    """``redis-server``'s version line, shortened."""
    out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True,
                         timeout=10, check=False).stdout  # fmt: skip
    match = re.search(r"v=(\S+)", out)
    return f"redis-server {match.group(1) if match else '?'}"


if __name__ == "__main__":
    sys.exit(main())
