"""Where a page's CPU goes, with every default on: a default crawl split by stage (issue #23
items 1 and 6).

    .venv/bin/python benchmarks/stage_profile.py                       # http, 1 round
    .venv/bin/python benchmarks/stage_profile.py --modes http,http-new,https,https-new --bare
    .venv/bin/python benchmarks/stage_profile.py --hosts 50 --pages 50 --max-pages 2000

Each run is a real ``crawldeck crawl seeds.txt --no-ui --db X --config bench.toml`` (the
``crawldeck`` next to this interpreter) of ``synthweb.py``'s nginx web, with
``e2e_bench.py``'s config (no politeness delay, ``--concurrency`` 64, one fetch in flight
per host, ``--max-depth``, ``--max-pages``, the web's addresses allowed) and otherwise
every default on: WARC, the OPIC ordering, sitemaps. Modes (``--modes``, run in turn
each round, so their ratios are same-run ratios):

- ``http``: the web over plain HTTP, keep-alive on;
- ``http-new``: plain HTTP, nginx closing every connection after one answer
  (``keepalive_timeout 0``): what a new TCP connection per request costs, without TLS;
- ``https``: the same web over TLS (nginx on loopback with a certificate made for the
  run: a CA and a leaf for every host's address, ECDSA P-256 by default, by the
  ``openssl`` command in a temporary directory, removed after), keep-alive on. The
  crawler trusts the CA through ``SSL_CERT_FILE`` (crawldeck has no config key for a CA
  bundle: its fetcher takes aiohttp's default context, that is OpenSSL's default
  paths, which read that variable);
- ``https-new``: over TLS, nginx closing every connection after one answer
  (``keepalive_timeout 0``): a TCP connection and a full TLS handshake per request.

How the CPU is split (reproducible: the stage of every module is a table below,
``STAGE_OF_MODULE``, and ``tests/unit/test_stage_profile.py`` checks that every ``core/``
module is in it):

- the whole tree: user + system time of the crawl and every descendant it reaped
  (``os.wait4``), that is what a page costs, the figure the split must add up to;
- per process, from ``/proc/PID/stat`` (polled every 0.2 s, and the crawl's own from its
  zombie before it is reaped): the crawl process (all its threads), the parse workers
  (``crawldeck.core.net.parse_worker``), the WARC writer (``crawldeck.core.storage.warc``); what
  children spent and exited between two polls is "unattributed";
- inside the crawl process, py-spy (a sampling profiler, attached by pid:
  ``py-spy record --nonblocking --threads --rate R``; a thread sleeping in the kernel
  is not sampled, py-spy's default) samples every thread's Python stack; a sample is
  charged to a stage by ``classify`` (the innermost frame whose module is in the
  table, looking no further out than the event loop's dispatch of a callback; stdlib
  helpers such as ``asyncio.tasks`` are charged to the code that called them; ``ssl``
  and ``asyncio.sslproto`` are TLS wherever they are called from; imports are
  start-up; a pool thread's unmapped samples go by the thread's name); each thread's
  CPU (``/proc/PID/task/TID/stat``) is split in proportion to its own samples, and the
  CPU of threads gone before the last poll in proportion to all samples. The parse
  workers' CPU goes to "parse and link extraction" and the WARC writer's to "WARC",
  added to the samples of those stages in the crawl process (the pool's and the
  writer's client sides). Pages of at most 32 KiB (all of this web's) are parsed in the
  crawl process's parse threads, so the parse workers are not started here.

Printed per run: the table (stage, ms CPU per page, share of the tree's CPU), per
thread of the crawl process from ``/proc`` (names from py-spy), the innermost frames of
the samples no table maps, pages/s; and per mode the medians, and the same-round ratios
of each mode's CPU per page to the first mode's. py-spy reads the crawl's memory without
stopping it (``--nonblocking``), but it takes CPU of its own on a 2-core machine (it is
printed; it is not in the crawl's tree): ``--bare`` runs each crawl again without it, so
the profiled CPU per page can be checked against the crawl alone. pages/s here are for
the profile, not for comparison (``compare.py`` and ``e2e_bench.py`` are). ``--raw DIR``
keeps py-spy's stacks (``flamegraph.pl`` draws them). The exit status is 0 unless a run
fails.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from e2e_bench import CONFIG, FIRST_PORT, RunFailed, check_log, crawldeck_result, descendants
from synthweb import SynthWeb, host_address

HERE = Path(__file__).resolve().parent
CRAWLDECK = Path(sys.executable).parent / "crawldeck"
PY_SPY = Path(sys.executable).parent / "py-spy"
MODES = ("http", "http-new", "https", "https-new")
TICKS = os.sysconf("SC_CLK_TCK")
HOT = 25  # innermost functions printed per run

FETCH = "fetch and decode"
TLS = "TLS"
PARSE = "parse and link extraction"
ADMIT = "normalization and admission"
FRONTIER = "frontier and OPIC credits"
SCHEDULE = "engine, politeness, retries"
STORE = "store writer and recording"
WARC = "WARC"
SITEMAPS = "sitemaps"
OBSERVER = "observer"
STATS = "stats and metrics"
LOOP = "event loop and socket reads (asyncio)"
CONSOLE = "console and reporter"
STARTUP = "start-up (imports, config, seeds, resume)"
RENDER = "rendering (off by default)"
CLUSTER = "cluster (not in a one-process crawl)"
OFFLINE = "export and recrawl (not in a crawl)"
OTHER = "other (no mapped frame)"
UNATTRIBUTED = "unattributed (children between polls)"

#: The stages, in the order the table prints them.
STAGES = (
    FETCH, TLS, PARSE, ADMIT, FRONTIER, SCHEDULE, STORE, WARC, SITEMAPS, OBSERVER, STATS,
    LOOP, CONSOLE, STARTUP, RENDER, CLUSTER, OFFLINE, OTHER, UNATTRIBUTED,
)  # fmt: skip

#: Every module of ``core/``, ``cli/`` and ``tui/`` (dotted, without the ``crawldeck.`` prefix) and
#: the stage its frames are charged to. A new module must be added here
#: (``tests/unit/test_stage_profile.py`` fails until it is).
STAGE_OF_MODULE: dict[str, str] = {
    "core": STARTUP,
    "core.policy": STARTUP,  # a folder by role: its docstring only
    "core.net": STARTUP,  # a folder by role: its docstring only
    "core.render": STARTUP,  # a folder by role: its docstring only
    "core.storage": STARTUP,  # a folder by role: its docstring only
    "core.crawl": STARTUP,  # a folder by role: its docstring only
    "core.policy.admission": ADMIT,
    "core.net.aiohttp_internals": FETCH,
    "core.storage.archive": WARC,
    "core.crawl.attach": CONSOLE,  # the attach socket's snapshots for attached consoles
    "core.crawl.assembly": STARTUP,
    "core.policy.back_queues": FRONTIER,
    "core.net.body_reader": FETCH,
    "core.policy.backoff": SCHEDULE,
    "core.render.browser_pool": RENDER,
    "core.clock": SCHEDULE,  # the loop clock every part reads
    "core.config": STARTUP,
    "core.config_checks": STARTUP,
    "core.crawl.content": PARSE,
    "core.storage.datasette_meta": STARTUP,
    "core.policy.date_templates": ADMIT,  # the calendar budget of the trap guard
    "core.net.dns": FETCH,
    "core.net.hosts_file": FETCH,  # asked by the resolver before each DNS query
    "core.policy.address_policy": FETCH,  # checked on each connection (core.net.transport)
    "core.policy.ip_limits": FETCH,  # charged as when it was in core.net.dns
    "core.crawl.engine": SCHEDULE,
    "core.errors": SCHEDULE,
    "core.storage.export": OFFLINE,
    "core.storage.link_report": OFFLINE,
    "core.net.fetcher": FETCH,
    "core.net.fetch_errors": FETCH,
    "core.policy.frontier": FRONTIER,
    "core.policy.frontier_entry": FRONTIER,
    "core.policy.gate": SCHEDULE,
    # the thresholds set once a run; the passes are the interpreter's
    "core.crawl.gcpolicy": STARTUP,
    "core.policy.heap": PARSE,  # malloc_trim in the parse workers (and the WARC writer)
    "core.policy.links": PARSE,
    "core.crawl.metrics": STATS,
    "core.storage.mirror": OFFLINE,
    "core.crawl.observer": OBSERVER,
    "core.other_crawlers": STARTUP,
    "core.net.parse": PARSE,
    "core.net.parse_worker": PARSE,
    "core.policy.politeness": SCHEDULE,
    "core.policy.politeness_state": SCHEDULE,
    "core.policy.prioritizer": FRONTIER,
    "core.render.procmem": STATS,
    "core.protocols": SCHEDULE,
    "core.records": FETCH,  # FetchResult built by the fetcher
    "core.crawl.recording": STORE,
    "core.crawl.recrawl": OFFLINE,
    "core.policy.redirect_traps": FETCH,  # judged with the redirect hop (core.net.redirects)
    "core.net.redirects": FETCH,
    "core.render.render_session": RENDER,
    "core.render_types": RENDER,
    "core.policy.request_checks": FETCH,
    "core.net.request_options": FETCH,
    "core.crawl.resume": STARTUP,
    "core.crawl.retries": SCHEDULE,
    "core.net.robots": ADMIT,
    "core.policy.robots": ADMIT,
    "core.policy.seeds": STARTUP,
    "core.policy.seen": ADMIT,
    "core.policy.shell": RENDER,
    "core.crawl.side_requests": FETCH,
    "core.policy.simhash": PARSE,
    "core.crawl.sitemaps": SITEMAPS,
    "core.policy.sitemaps": SITEMAPS,
    "core.policy.slots": SCHEDULE,
    "core.crawl.snapshot": OBSERVER,
    "core.policy.sniff": FETCH,
    "core.crawl.stats": STATS,
    "core.storage.store": STORE,
    "core.storage.store.base": STORE,
    "core.storage.store.facade": STORE,
    "core.storage.store.lock": STORE,
    "core.storage.store.ops": STORE,
    "core.storage.store.reads": STORE,
    "core.storage.store.schema": STORE,
    "core.storage.store.writer": STORE,
    # the hosts' politeness (and core.policy.ip_limits's per-address rate)
    "core.policy.token_bucket": SCHEDULE,
    "core.net.transport": FETCH,
    "core.policy.traps": ADMIT,
    "core.policy.urls": ADMIT,
    "core.storage.warc": WARC,
    "core.storage.warc_output": WARC,
    "core.storage.warc_reader": WARC,
    "core.storage.warc_records": WARC,
    "core.storage.warc_writer": WARC,
    "core.policy.window": FRONTIER,
    "core.words": OBSERVER,
    "core.cluster": CLUSTER,
    "core.cluster.addresses": CLUSTER,
    "core.cluster.collector": CLUSTER,
    "core.cluster.coordinator": CLUSTER,
    "core.cluster.flush": CLUSTER,
    "core.cluster.keys": CLUSTER,
    "core.cluster.leases": CLUSTER,
    "core.cluster.link": CLUSTER,
    "core.cluster.scripts": CLUSTER,
    "core.cluster.server": CLUSTER,
    "core.cluster.store": CLUSTER,
    "core.cluster.window": CLUSTER,
    "core.cluster.wire": CLUSTER,
    "core.cluster.worker": CLUSTER,
    "cli": CONSOLE,  # the command, the headless reporter's lines among it
    "tui": CONSOLE,
}

#: Libraries outside ``core/`` (top-level package) and the stage their frames are
#: charged to, whoever called them.
STAGE_OF_LIBRARY: dict[str, str] = {
    "aiohttp": FETCH,
    "aiohappyeyeballs": FETCH,
    "aiodns": FETCH,
    "yarl": FETCH,
    "multidict": FETCH,
    "propcache": FETCH,
    "frozenlist": FETCH,
    "aiosignal": FETCH,
    "ada_url": ADMIT,
    "protego": ADMIT,
    "rbloom": ADMIT,
    "selectolax": PARSE,
    "fastwarc": WARC,
    "warcio": WARC,
    "defusedxml": SITEMAPS,
    "textual": CONSOLE,
    "rich": CONSOLE,
    "playwright": RENDER,
    "redis": CLUSTER,
}

#: Threads of the crawl process by name prefix (the ``thread_name_prefix`` of their
#: pool, or their ``threading.Thread`` name), and the stage of their samples that no
#: module maps (a pool thread waking, handing its result to the event loop).
STAGE_OF_THREAD: dict[str, str] = {
    "crawldeck-parse": PARSE,
    "crawldeck-store": STORE,
    "crawldeck-warc": WARC,
    "asyncio-waitpid": WARC,  # asyncio's child watcher: it waits for the WARC writer
}

#: The frames through which the event loop runs every callback and task step: a sample's
#: stage is looked for only inside them (``classify``).
LOOP_DISPATCH: frozenset[tuple[str, str]] = frozenset(
    {
        ("asyncio.events", "Handle._run"),
        ("asyncio.base_events", "BaseEventLoop._run_once"),
    }
)

#: Standard-library modules charged to a stage wherever they are called from (the
#: innermost such frame wins over any caller).
STICKY: dict[str, str] = {
    "ssl": TLS,
    "asyncio.sslproto": TLS,
    "importlib": STARTUP,
}


def module_of(filename: str) -> str:
    """The dotted module name of a frame's file, as py-spy prints it with
    ``--full-filenames``: ``.../crawldeck/core/net/fetcher.py`` (an editable install's file)
    is ``core.net.fetcher``, ``.../crawldeck/cli/main.py`` is
    ``cli.main``, ``.../site-packages/aiohttp/client.py`` is ``aiohttp.client``,
    ``.../lib/python3.11/asyncio/sslproto.py`` is ``asyncio.sslproto``, ``<frozen
    importlib._bootstrap>`` is ``importlib._bootstrap``; ``""`` for anything else
    (``<string>``, a script)."""
    if filename.startswith("<frozen "):
        return filename[len("<frozen ") : -1]
    if not filename.endswith(".py"):
        return ""
    parts = filename[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    for anchor in ("site-packages", "dist-packages"):
        if anchor in parts:
            return ".".join(parts[len(parts) - parts[::-1].index(anchor) :])
    for root in ("core", "cli", "tui"):
        if root in parts:
            i = len(parts) - 1 - parts[::-1].index(root)
            return ".".join(parts[i:])
    for i, part in enumerate(parts):
        if part.startswith("python3") and i > 0 and parts[i - 1] == "lib":
            return ".".join(parts[i + 1 :])
    return ""


def stage_of(module: str) -> str | None:
    """The stage of ``module`` by the tables (``STICKY`` first, then ``core``/``cli``/``tui``
    modules, then libraries by top-level package), or ``None``: a helper charged to
    its caller."""
    for table in (STICKY, STAGE_OF_MODULE):
        name = module
        while name:
            if name in table:
                return table[name]
            name = name.rpartition(".")[0]
    return STAGE_OF_LIBRARY.get(module.partition(".")[0])


def classify(frames: list[tuple[str, str]], thread: str = "") -> str:
    """The stage a sample is charged to.

    ``frames``: ``(module, function)`` of each frame of its stack, outermost first
    (``module_of`` of each frame's file; the function as py-spy names it, e.g.
    ``Handle._run``); ``thread``: the name of its thread. Walking from the innermost
    frame out to the event loop's dispatch (``LOOP_DISPATCH``: the code above it only
    started the loop, it does not own the callback): the innermost ``STICKY`` frame
    wins; else the innermost frame with a stage; else the thread's stage by
    ``STAGE_OF_THREAD``; else ``LOOP`` if the stack is in asyncio or ``selectors`` (the
    loop polling, or a transport reading a socket for a protocol of no Python frame),
    else ``OTHER``."""
    inner: list[str] = []
    for module, function in reversed(frames):
        if (module, function) in LOOP_DISPATCH:
            break
        inner.append(module)
    for module in inner:
        name = module
        while name:
            if name in STICKY:
                return STICKY[name]
            name = name.rpartition(".")[0]
    for module in inner:
        stage = stage_of(module)
        if stage is not None:
            return stage
    for prefix, stage in STAGE_OF_THREAD.items():
        if thread.startswith(prefix):
            return stage
    if any(m.startswith(("asyncio.", "selectors")) for m, _ in frames):
        return LOOP
    return OTHER


@dataclass
class Samples:
    """py-spy's samples of one run, counted: per thread id and stage, the name of each
    thread id, and the innermost frames (``module.function``) of the samples no table
    maps (what ``OTHER`` and ``LOOP`` are made of), and of all samples with their stage
    (``"stage | module.function"``: where the time is spent inside a stage)."""

    counts: collections.Counter[tuple[int, str]] = field(default_factory=collections.Counter)
    names: dict[int, str] = field(default_factory=dict)
    unmapped: collections.Counter[str] = field(default_factory=collections.Counter)
    leaves: collections.Counter[str] = field(default_factory=collections.Counter)

    def total(self, tid: int | None = None) -> int:
        """The samples of thread ``tid`` (``None``: of every thread)."""
        return sum(n for (t, _), n in self.counts.items() if tid is None or t == tid)


def parse_raw(text: str) -> Samples:
    """py-spy's ``--format raw`` output (one line per distinct stack: ``thread (TID):
    NAME;func (file:line);...;func (file:line) COUNT``, outermost first), counted."""
    out = Samples()
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        modules = []
        functions = []
        tid, thread = 0, ""
        for frame in frames:
            if frame.startswith("thread ("):
                number, _, thread = frame[len("thread (") :].partition(")")
                tid = int(number, 0) if number.strip().isalnum() else 0
                thread = thread.lstrip(": ")
                if thread:
                    out.names[tid] = thread
                continue
            if frame.startswith("process "):
                continue
            where = frame.rpartition(" (")[2].rstrip(")")
            modules.append(module_of(where.rpartition(":")[0]))
            functions.append(frame.rpartition(" (")[0])
        stage = classify(
            list(zip(modules, functions, strict=True)), thread or out.names.get(tid, "")
        )
        out.counts[tid, stage] += int(count)
        where = f"{modules[-1] or frames[-1]}.{functions[-1]}" if modules else "(no frame)"
        if stage in (OTHER, LOOP):
            out.unmapped[where] += int(count)
        out.leaves[f"{stage} | {where}"] += int(count)
    return out


def _cpu_s(stat_path: str) -> tuple[float, float]:
    """``(utime + stime, cutime + cstime)`` in seconds from a ``/proc/.../stat`` file.

    Raises ``OSError`` when it is gone."""
    with open(stat_path) as f:
        fields = f.read().rpartition(")")[2].split()
    # after the command: state(0) ... utime(11) stime(12) cutime(13) cstime(14), proc(5)
    return (int(fields[11]) + int(fields[12])) / TICKS, (int(fields[13]) + int(fields[14])) / TICKS


def free_ports(hosts: int, n: int) -> list[int]:
    """``n`` ports from 8790 on which no listener holds any of the ``hosts`` addresses
    of ``synthweb``'s ``by_ip`` web (one web per mode).

    Raises ``SystemExit`` (one line) when 40 ports do not hold ``n``."""
    found: list[int] = []
    for port in range(FIRST_PORT, FIRST_PORT + 40):
        try:
            for i in range(hosts):
                with socket.socket() as sock:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    sock.bind((host_address(i), port))
        except OSError:
            continue
        found.append(port)
        if len(found) == n:
            return found
    raise SystemExit(f"stage_profile: not {n} free ports in 8790-8829 on 127.80.0.0/16")


def _kind(pid: int) -> str:
    """``parse`` (a parse worker), ``warc`` (the WARC writer) or ``other``, by the
    process's command line; ``""`` once it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
    if "core.net.parse_worker" in cmd:
        return "parse"
    if "core.storage.warc" in cmd:
        return "warc"
    return "other"


@dataclass
class Poll:
    """What ``/proc`` said of the crawl's tree, last seen: CPU s per descendant (with
    its kind: ``parse``, ``warc``, ``other``) and per thread of the crawl process."""

    children: dict[int, tuple[str, float]] = field(default_factory=dict)
    threads: dict[int, float] = field(default_factory=dict)

    def sample(self, pid: int) -> None:
        """Read the tree of ``pid`` once (descendants at any depth)."""
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    fields = f.read().rpartition(")")[2].split()
                self.threads[int(tid)] = (int(fields[11]) + int(fields[12])) / TICKS
        except OSError:
            pass
        for child in descendants(pid)[1:]:
            kind = self.children.get(child, ("", 0.0))[0]
            if kind in ("", "other"):  # just forked, not yet exec'd: look again
                kind = _kind(child)
            try:
                self.children[child] = (kind, _cpu_s(f"/proc/{child}/stat")[0])
            except OSError:
                continue


@dataclass
class Profile:
    """One profiled crawl: pages, the crawl's elapsed s, CPU s (tree, crawl process,
    per child kind), samples per stage and per thread, py-spy's own CPU s."""

    mode: str
    pages: int
    elapsed_s: float
    tree_cpu_s: float
    main_cpu_s: float
    child_cpu_s: dict[str, float]
    samples: Samples
    thread_cpu_s: dict[int, float]
    spy_cpu_s: float
    log: dict[str, int] = field(default_factory=dict)

    def stage_cpu_s(self) -> dict[str, float]:
        """CPU s per stage: each thread's CPU (``/proc``) split by its own samples; the
        rest of the crawl process's CPU (threads gone before the last poll, threads
        never sampled) split by all the samples; plus the parse workers' and the WARC
        writer's, plus what no poll saw."""
        samples = self.samples
        out = dict.fromkeys(STAGES, 0.0)
        rest = self.main_cpu_s
        for tid, cpu in self.thread_cpu_s.items():
            n = samples.total(tid)
            if n == 0 or cpu == 0:
                continue
            rest -= cpu
            for (t, stage), k in samples.counts.items():
                if t == tid:
                    out[stage] += cpu * k / n
        total = samples.total() or 1
        for (_, stage), k in samples.counts.items():
            out[stage] += max(0.0, rest) * k / total
        out[PARSE] += self.child_cpu_s.get("parse", 0.0)
        out[WARC] += self.child_cpu_s.get("warc", 0.0)
        out[OTHER] += self.child_cpu_s.get("other", 0.0)
        seen = self.main_cpu_s + sum(self.child_cpu_s.values())
        out[UNATTRIBUTED] += max(0.0, self.tree_cpu_s - seen)
        return out

    @property
    def rate(self) -> float:
        """Pages per second of the crawl's own elapsed time."""
        return self.pages / self.elapsed_s

    @property
    def ms_per_page(self) -> float:
        """The tree's CPU ms per page."""
        return 1000 * self.tree_cpu_s / self.pages


def make_certificates(tls: Path, hosts: int, key: str) -> Path:
    """A CA and a leaf certificate for the ``hosts`` addresses of ``synthweb``'s
    ``by_ip`` web (``subjectAltName`` IP entries), made in ``tls`` with the ``openssl``
    command; ``key``: ``ec`` (P-256) or ``rsa`` (2048 bits). Writes ``cert.pem`` (leaf
    then CA) and ``key.pem`` for nginx; returns the CA's PEM (for ``SSL_CERT_FILE``).

    Raises ``subprocess.CalledProcessError`` if openssl fails."""
    newkey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    if key == "rsa":
        newkey = ["-newkey", "rsa:2048"]

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=tls, check=True, capture_output=True, timeout=60)

    openssl("req", "-x509", *newkey, "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=crawldeck stage_profile CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    openssl("req", *newkey, "-nodes", "-keyout", "key.pem", "-out", "leaf.csr",
            "-subj", "/CN=synthweb")  # fmt: skip
    names = ",".join(f"IP:{host_address(i)}" for i in range(hosts))
    (tls / "leaf.ext").write_text(
        f"subjectAltName={names}\nbasicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
    )
    openssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "leaf.pem", "-days", "2",
            "-extfile", "leaf.ext")  # fmt: skip
    (tls / "cert.pem").write_text((tls / "leaf.pem").read_text() + (tls / "ca.pem").read_text())
    return tls / "ca.pem"


def _reap(spy: subprocess.Popen[bytes]) -> float:
    """Wait for py-spy (it stops when its target is gone; after 30 s it is sent SIGINT,
    on which it writes what it has); its CPU s (user + system)."""
    deadline = time.monotonic() + 30
    while True:
        pid, status, usage = os.wait4(spy.pid, os.WNOHANG)
        if pid:
            spy.returncode = os.waitstatus_to_exitcode(status)
            return usage.ru_utime + usage.ru_stime
        if time.monotonic() > deadline:
            spy.send_signal(signal.SIGINT)
            deadline = time.monotonic() + 30
        time.sleep(0.05)


def profile_one(
    mode: str, work: Path, tag: str, env: dict[str, str], rate: int, timeout_s: float
) -> Profile:
    """One crawl of the web whose seeds and config are in ``work``, under py-spy
    sampling ``rate`` times a second (0: no py-spy, no samples: the tree's CPU only).

    Raises:
        RunFailed: the crawl failed, timed out or fetched nothing, or py-spy did not
            write its samples.
    """
    db, log, raw = work / f"{tag}.db", work / f"{tag}.log", work / f"{tag}.raw"
    command = [str(CRAWLDECK), "crawl", str(work / "seeds.txt"), "--no-ui",
               "--db", str(db), "--config", str(work / "bench.toml")]  # fmt: skip
    poll = Poll()
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        spy = subprocess.Popen(
            [str(PY_SPY), "record", "--pid", str(proc.pid), "--nonblocking", "--threads",
             "--full-filenames", "--format", "raw", "--rate", str(rate), "-o", str(raw)],
            stdout=subprocess.DEVNULL, stderr=out, stdin=subprocess.DEVNULL,
        ) if rate else None  # fmt: skip
    start = time.monotonic()
    main_cpu = 0.0
    try:
        while True:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is not None:
                try:  # the zombie's own times are final; its reaped children's are not ours
                    main_cpu = _cpu_s(f"/proc/{proc.pid}/stat")[0]
                except OSError:
                    main_cpu = sum(poll.threads.values())
                break
            if time.monotonic() - start > timeout_s:
                raise RunFailed(f"killed after {timeout_s:.0f} s")
            poll.sample(proc.pid)
            time.sleep(0.2)
        _, status, usage = os.wait4(proc.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise RunFailed(f"exited {code}")
    finally:
        if proc.returncode is None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        spy_cpu = _reap(spy) if spy else 0.0
    pages, elapsed = crawldeck_result(db)
    if pages == 0:
        raise RunFailed("no pages fetched")
    if spy and not raw.exists():
        raise RunFailed(f"py-spy wrote no samples (its output: {log})")
    samples = parse_raw(raw.read_text()) if spy else Samples()
    kinds: dict[str, float] = collections.defaultdict(float)
    for kind, cpu in poll.children.values():
        kinds[kind] += cpu
    return Profile(mode, pages, elapsed, usage.ru_utime + usage.ru_stime, main_cpu,
                   dict(kinds), samples, poll.threads, spy_cpu)  # fmt: skip


def print_profile(p: Profile) -> None:
    """The table of one run: stage, ms CPU per page, share of the tree's CPU."""
    cpu = p.stage_cpu_s()
    print(
        f"\n  {p.mode}: {p.pages} pages in {p.elapsed_s:.1f} s = {p.rate:.1f} pages/s; tree CPU "
        f"{p.tree_cpu_s:.2f} s = {p.ms_per_page:.3f} ms/page (crawl process "
        f"{1000 * p.main_cpu_s / p.pages:.3f}, parse workers "
        f"{1000 * p.child_cpu_s.get('parse', 0) / p.pages:.3f}, WARC writer "
        f"{1000 * p.child_cpu_s.get('warc', 0) / p.pages:.3f}, other children "
        f"{1000 * p.child_cpu_s.get('other', 0) / p.pages:.3f}); "
        f"{p.samples.total()} samples; py-spy's own CPU {p.spy_cpu_s:.2f} s"
    )
    print(f"    {'stage':44s} {'ms/page':>8s} {'share':>7s}")
    for stage in STAGES:
        if cpu[stage] > 0:
            print(f"    {stage:44s} {1000 * cpu[stage] / p.pages:8.3f} "
                  f"{100 * cpu[stage] / p.tree_cpu_s:6.1f}%")  # fmt: skip
    print(f"    {'sum':44s} {1000 * sum(cpu.values()) / p.pages:8.3f}")
    names = p.samples.names
    busy = sorted(p.thread_cpu_s.items(), key=lambda kv: -kv[1])
    print(
        "    threads of the crawl process (/proc, CPU ms/page): "
        + ", ".join(f"{names.get(t, t)} {1000 * c / p.pages:.3f}" for t, c in busy if c > 0)
    )
    total = p.samples.total() or 1
    print(
        "    innermost frames of the unmapped samples (share of the samples): "
        + ", ".join(f"{k} {100 * n / total:.1f}%" for k, n in p.samples.unmapped.most_common(8))
    )
    print("    the innermost functions with most samples (their stage; ms/page: the crawl "
          "process's CPU by their share of all samples):")  # fmt: skip
    for key, n in p.samples.leaves.most_common(HOT):
        ms = 1000 * p.main_cpu_s * n / total / p.pages
        print(f"      {ms:6.3f}  {100 * n / total:4.1f}%  {key}")


def print_medians(runs: list[Profile], modes: list[str], bare: list[Profile]) -> None:
    """Per mode, the medians of each stage's ms per page and of the totals, with the
    ratio of each mode to the first (same rounds); with ``bare`` (the same crawls
    without py-spy), their CPU per page and the ratio of the profiled to them."""
    print(f"\nmedians over {len(runs) // len(modes)} round(s), ms CPU per page (share):")
    print(f"  {'':44s}" + "".join(f"{m:>18s}" for m in modes))
    per = {m: [r for r in runs if r.mode == m] for m in modes}
    for stage in STAGES:
        cells = []
        for m in modes:
            values = [1000 * r.stage_cpu_s()[stage] / r.pages for r in per[m]]
            shares = [100 * r.stage_cpu_s()[stage] / r.tree_cpu_s for r in per[m]]
            cells.append(f"{statistics.median(values):8.3f} ({statistics.median(shares):4.1f}%)")
        if any(not c.startswith("   0.000") for c in cells):
            print(f"  {stage:44s}" + "".join(f"{c:>18s}" for c in cells))
    totals: list[tuple[str, Callable[[Profile], float]]] = [
        ("tree CPU ms/page", lambda r: r.ms_per_page),
        ("pages/s (with py-spy)", lambda r: r.rate),
    ]
    for name, get in totals:
        values = [statistics.median(get(r) for r in per[m]) for m in modes]
        print(f"  {name:44s}" + "".join(f"{v:18.3f}" for v in values))
    first = per[modes[0]]
    for m in modes[1:]:
        ratios = [b.ms_per_page / a.ms_per_page for a, b in zip(first, per[m], strict=False)]
        print(f"  CPU per page {m}/{modes[0]} per round: " + ", ".join(f"{x:.3f}" for x in ratios))
    for m in modes if bare else []:
        alone = [r for r in bare if r.mode == m]
        ratios = [a.ms_per_page / b.ms_per_page for a, b in zip(per[m], alone, strict=False)]
        print(
            f"  {m} without py-spy: tree CPU {statistics.median(r.ms_per_page for r in alone):.3f}"
            f" ms/page, {statistics.median(r.rate for r in alone):.1f} pages/s; CPU per page "
            f"with/without py-spy per round: " + ", ".join(f"{x:.3f}" for x in ratios)
        )


def main(argv: list[str] | None = None) -> int:
    """Run the profiles and print the tables; 0 unless a run fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="http", help="comma-separated of " + ", ".join(MODES))
    parser.add_argument("--hosts", type=int, default=200, help="default 200")
    parser.add_argument("--pages", type=int, default=100, help="pages per host (default 100)")
    parser.add_argument("--concurrency", type=int, default=64, help="default 64")
    parser.add_argument("--max-depth", type=int, default=5, help="default 5")
    parser.add_argument("--max-pages", type=int, default=10000, help="default 10000")
    parser.add_argument("--rounds", type=int, default=1, help="default 1")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples/s (default 250)")
    parser.add_argument("--key", choices=("ec", "rsa"), default="ec",
                        help="certificate keys: ec (P-256, default) or rsa (2048)")  # fmt: skip
    parser.add_argument("--bare", action="store_true",
                        help="after each profiled crawl, the same crawl without py-spy "
                             "(what the profiler adds to the CPU per page)")  # fmt: skip
    parser.add_argument("--raw", type=Path, metavar="DIR",
                        help="keep py-spy's raw stacks there (MODE-ROUND.raw; flamegraph.pl "
                             "reads them)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds a run may take, then it is killed (default 900)")  # fmt: skip
    args = parser.parse_args(argv)
    modes = list(dict.fromkeys(m.strip() for m in args.modes.split(",") if m.strip()))
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        parser.error(f"--modes: unknown {', '.join(bad) or '(none)'}; known: {', '.join(MODES)}")
    for tool in (CRAWLDECK, PY_SPY):
        if not tool.exists():
            sys.exit(f"stage_profile: {tool} not found (pip install -e '.[bench]')")
    work = Path(tempfile.mkdtemp(prefix="crawldeck-stage-profile-"))
    tls = work / "tls"
    tls.mkdir()
    runs: list[Profile] = []
    bare: list[Profile] = []
    try:
        https = any(m.startswith("https") for m in modes)
        ca = make_certificates(tls, args.hosts, args.key) if https else None
        ports = free_ports(args.hosts, len(modes))
        print(f"machine: {os.cpu_count()} CPUs, {platform.platform()}, Python "
              f"{platform.python_version()}, load {os.getloadavg()[0]:.2f}")  # fmt: skip
        print(f"web: {args.hosts} hosts x {args.pages + 1} pages; concurrency "
              f"{args.concurrency}, 1 per host, depth {args.max_depth}, cap {args.max_pages} "
              f"pages; modes {', '.join(modes)}; {args.rounds} round(s); py-spy at "
              f"{args.rate}/s; keys {args.key}")  # fmt: skip
        with contextlib.ExitStack() as stack:
            webs = {}
            for k, mode in enumerate(modes):
                web = SynthWeb(args.hosts, args.pages, by_ip=True, port=ports[k],
                               tls=tls if mode.startswith("https") else None,
                               keepalive=not mode.endswith("-new"))  # fmt: skip
                webs[mode] = stack.enter_context(web)
            config = CONFIG.format(concurrency=args.concurrency, max_depth=args.max_depth,
                                   max_pages=args.max_pages)  # fmt: skip
            for i in range(args.rounds):
                for mode in modes:
                    web = webs[mode]
                    run_dir = work / f"{mode}-{i + 1}"
                    run_dir.mkdir()
                    (run_dir / "seeds.txt").write_text("\n".join(web.seeds) + "\n")
                    (run_dir / "bench.toml").write_text(config)
                    env = dict(os.environ)
                    if ca is not None:
                        env["SSL_CERT_FILE"] = str(ca)
                    web.reset_log()
                    time.sleep(0.2)  # let nginx reopen its log
                    run = profile_one(mode, run_dir, "crawl", env, args.rate, args.timeout)
                    run.log, _ = check_log(web)
                    runs.append(run)
                    print_profile(run)
                    if run.log["private"] or run.log["repeated"]:
                        print(f"    check: {run.log['private']} under /private/, "
                              f"{run.log['repeated']} repeated URLs")  # fmt: skip
                    if args.raw:
                        args.raw.mkdir(parents=True, exist_ok=True)
                        shutil.copy(run_dir / "crawl.raw", args.raw / f"{mode}-{i + 1}.raw")
                    if args.bare:
                        web.reset_log()
                        time.sleep(0.2)
                        alone = profile_one(mode, run_dir, "bare", env, 0, args.timeout)
                        bare.append(alone)
                        print(f"    the same crawl without py-spy: {alone.pages} pages, "
                              f"{alone.rate:.1f} pages/s, tree CPU {alone.ms_per_page:.3f} "
                              "ms/page")  # fmt: skip
                    shutil.rmtree(run_dir, ignore_errors=True)
    except (RunFailed, RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"stage_profile: {exc}")  # a crawl, nginx or openssl failed
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_medians(runs, modes, bare)
    return 0


if __name__ == "__main__":
    sys.exit(main())
