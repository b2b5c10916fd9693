"""Issue #15 item 3: PageRank captured per crawl ordering, measured like the papers.

    .venv/bin/pip install numpy scipy          # the benchmark's own needs, not the crawler's
    .venv/bin/python benchmarks/ordering_bench.py                  # both graphs, simulator
    .venv/bin/python benchmarks/ordering_bench.py --real 0.1       # + real crawls of both

Graphs (``linkgraph.py``): the documentation web (five Debian doc packages, one loopback
host each, parsed with the crawler's own link extraction and URL normalization) and
a synthetic web of 10^5 pages over 10^3 hosts with power-law in-links.

For each graph: PageRank over the whole graph (damping 0.85, the dangling pages' mass
spread uniformly, power iteration with ``scipy.sparse`` until the L1 change is below
1e-9; each page's share, summing to 1), then the order in which each ordering fetches
the pages, and the PageRank share captured after 1, 5, 10, 20 and 50 % of the pages the
seeds reach:

- the orderings (``bfs``, ``opic``, ``larger-sites-first``) by the simulator
  (``simulate``): the crawler's real ``Frontier`` and ``Prioritizer``
  (``core/policy/frontier.py``, ``core/policy/prioritizer.py``) driven by a discrete-event loop that
  does what the engine does, on virtual time, with no network: ``concurrency`` fetches
  in flight, each taking ``fetch_ms``; a worker pops the frontier at ``now``; at a
  fetch's end its host is released at ``end + delay_ms`` (as ``Engine`` does once the
  fetch is answered; ``adaptive_delay_factor`` 0 in the real crawl so that the delay
  is just ``delay_ms``), then its outlinks not seen before are added (seen set: one
  bit per node, the graph's nodes being dedupe keys already) at depth + 1 and, under
  ``opic``, the page's cash is split over every distinct key it links to, as
  ``core.crawl.recording`` splits it (``Graph.link_counts``: links out of the web and
  refused ones get their shares, lost), a queued outlink's cash grows
  (``Frontier.credit``). What it leaves out: the engine's real fetch times (each
  fetch takes ``fetch_ms`` exactly, so every host goes at the same pace when
  politeness binds), robots.txt fetches, the SQLite window (every URL stays in
  memory), parse time (the engine queues a page's links once it is parsed, and a
  large page parsed in a worker process can be overtaken by the next page of its
  host, which then queues its links first; ``--pool-start-ms`` models the one large
  effect of it measured, the parse pool's worker starting on first use:
  ``SimSettings.pool_start_ms``);
- ``omniscient``: at each step the page of highest PageRank among those discovered so
  far (a page is discovered once a fetched page links to it; the seeds are), without
  politeness. Greedy, so not an upper bound: a low-PageRank page that is the only way
  to a high-PageRank part of the web (a seed no page links to) waits behind every
  better page discovered;
- ``top-k bound``: the k pages of highest PageRank, reachable or not, the bound no
  order passes.

``--real FRACTION`` also crawls each graph on loopback with the real ``crawldeck crawl``
(one process per ordering, ``--max-pages`` FRACTION of the reachable pages; the docs
web served by ``StaticSite``, the synthetic web by nginx), reads the order of its
``pages`` rows (``fetched_at``) and compares that curve with the simulator's at the
same concurrency and delay and the crawl's median fetch time: the table gives both,
the largest difference at the checkpoints, and the share of pages both fetched.

Prints markdown tables; ``--out FILE`` also writes them to FILE.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import heapq
import math
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from linkgraph import (
    DOC_SITES,
    DOCS_PORT,
    Graph,
    GraphWeb,
    docs_graph,
    page_bytes,
    sites_include,
    synth_include,
    synthetic_graph,
)

from crawldeck.core.config import CrawlConfig
from crawldeck.core.net.parse import THREAD_PARSE_MAX_BYTES
from crawldeck.core.policy import urls
from crawldeck.core.policy.frontier import Frontier
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.prioritizer import ORDERINGS, Ordering, Prioritizer

#: Checkpoints: fractions of the pages reachable from the seeds.
CHECKPOINTS = (0.01, 0.05, 0.10, 0.20, 0.50)
DAMPING = 0.85
#: Power iteration stops once the L1 norm of the change is below this.
TOLERANCE = 1e-9
MAX_ITERATIONS = 10_000
#: Above this many nodes ``pagerank`` wants scipy (the pure-Python loop is for tests).
PURE_PAGERANK_MAX_NODES = 20_000


# ---------------------------------------------------------------- PageRank


def pagerank(
    graph: Graph,
    *,
    damping: float = DAMPING,
    tolerance: float = TOLERANCE,
    sparse: bool | None = None,
) -> list[float]:
    """Each node's PageRank share (floats summing to 1).

    ``x' = d * (M x + dangling(x) / n) + (1 - d) / n`` where ``M[v, u] = 1 / outdeg(u)``
    for a link ``u -> v`` and ``dangling(x)`` is the mass of the pages without
    outlinks, spread uniformly (Page, Brin, Motwani & Winograd 1998; Langville & Meyer,
    "Deeper inside PageRank", 2004, for the dangling nodes), from the uniform vector
    until ``sum |x' - x| < tolerance``.

    Args:
        graph: the graph (``linkgraph.Graph``).
        damping: the damping factor ``d`` (0.85).
        tolerance: the L1 change at which the iteration stops.
        sparse: ``True`` multiplies with ``scipy.sparse``, ``False`` in pure Python;
            ``None``: pure Python up to ``PURE_PAGERANK_MAX_NODES`` nodes.

    Raises:
        RuntimeError: no convergence within ``MAX_ITERATIONS``.
        ImportError: ``sparse`` and scipy/numpy are not installed.
    """
    n = graph.n
    if sparse is None:
        sparse = n > PURE_PAGERANK_MAX_NODES
    step = _sparse_step(graph, damping) if sparse else _pure_step(graph, damping)
    x = [1.0 / n] * n
    for _ in range(MAX_ITERATIONS):
        x_next, change = step(x)
        x = x_next
        if change < tolerance:
            total = math.fsum(x)
            return [float(value) / total for value in x]
    raise RuntimeError(f"pagerank: no convergence in {MAX_ITERATIONS} iterations")


def fixed_point_error(graph: Graph, rank: Sequence[float], damping: float = DAMPING) -> float:
    """The L1 change one pure-Python power iteration step makes to ``rank``: about
    ``TOLERANCE`` for ``pagerank``'s result, whichever way it multiplied (the check
    the benchmark runs on its scipy result)."""
    return _pure_step(graph, damping)(list(rank))[1]


Step = Callable[[list[float]], tuple[list[float], float]]


def _pure_step(graph: Graph, damping: float) -> Step:
    """One power iteration step in pure Python: ``x -> (x', L1 change)``."""
    n = graph.n
    indptr, indices = graph.indptr, graph.indices
    degree = [indptr[u + 1] - indptr[u] for u in range(n)]

    def step(x: list[float]) -> tuple[list[float], float]:
        dangling = math.fsum(x[u] for u in range(n) if degree[u] == 0)
        base = damping * dangling / n + (1.0 - damping) / n
        y = [base] * n
        for u in range(n):
            if degree[u]:
                share = damping * x[u] / degree[u]
                for v in indices[indptr[u] : indptr[u + 1]]:
                    y[v] += share
        return y, math.fsum(abs(a - b) for a, b in zip(y, x, strict=True))

    return step


def _sparse_step(graph: Graph, damping: float) -> Step:
    """One power iteration step with ``scipy.sparse`` (vectors as numpy arrays; the
    ``list[float]`` of the signature is what ``pagerank`` starts and ends with)."""
    import numpy as np
    from scipy import sparse  # type: ignore[import-untyped]

    n = graph.n
    indptr = np.frombuffer(graph.indptr, dtype=np.int64)
    cols = np.frombuffer(graph.indices, dtype=np.int32)
    degree = np.diff(indptr).astype(np.float64)
    rows = np.repeat(np.arange(n), np.diff(indptr))
    weights = 1.0 / degree[rows]
    # column-stochastic transpose: y = M @ x with M[v, u] = 1 / outdeg(u)
    matrix = sparse.csr_matrix((weights, (cols, rows)), shape=(n, n))
    dangling = degree == 0

    def step(x: list[float]) -> tuple[list[float], float]:
        vec = np.asarray(x, dtype=np.float64)
        y = damping * (matrix @ vec) + (damping * vec[dangling].sum() + 1.0 - damping) / n
        return y, float(np.abs(y - vec).sum())

    return step


# ---------------------------------------------------------------- orders and curves


def greedy_order(graph: Graph, rank: Sequence[float], budget: int) -> list[int]:
    """Up to ``budget`` nodes in the omniscient order for the PageRank vector ``rank``:
    at each step the discovered node of highest rank (ties: the lower node id), its
    outlinks then discovered; the seeds are discovered at the start."""
    found = bytearray(graph.n)
    heap: list[tuple[float, int]] = []
    for s in graph.seeds:
        if not found[s]:
            found[s] = 1
            heap.append((-rank[s], s))
    heapq.heapify(heap)
    order: list[int] = []
    indptr, indices = graph.indptr, graph.indices
    while heap and len(order) < budget:
        _, u = heapq.heappop(heap)
        order.append(u)
        for v in indices[indptr[u] : indptr[u + 1]]:
            if not found[v]:
                found[v] = 1
                heapq.heappush(heap, (-rank[v], v))
    return order


def top_k_curve(
    rank: Sequence[float], reachable: int, checkpoints: Sequence[float] = CHECKPOINTS
) -> list[float]:
    """The PageRank share of the ``ceil(c * reachable)`` pages of highest PageRank, for
    each checkpoint ``c``: the bound no order reaches, reachability or not."""
    best = sorted(rank, reverse=True)
    prefix = [0.0]
    for value in best[: math.ceil(max(checkpoints) * reachable)]:
        prefix.append(prefix[-1] + value)
    return [prefix[min(len(prefix) - 1, math.ceil(c * reachable))] for c in checkpoints]


def capture_curve(
    order: Sequence[int],
    rank: Sequence[float],
    reachable: int,
    checkpoints: Sequence[float] = CHECKPOINTS,
) -> list[float]:
    """The PageRank share captured by the first ``ceil(c * reachable)`` pages of
    ``order`` for each checkpoint ``c`` (a fraction of the ``reachable`` pages); an
    order shorter than a checkpoint gives its whole share there (``nan`` if it is
    empty). Non-decreasing in ``c`` for increasing checkpoints."""
    prefix = [0.0]
    for u in order:
        prefix.append(prefix[-1] + rank[u])
    out = []
    for c in checkpoints:
        k = min(len(order), math.ceil(c * reachable))
        out.append(prefix[k] if order else math.nan)
    return out


# ---------------------------------------------------------------- the simulator


@dataclass(frozen=True, slots=True)
class SimSettings:
    """The simulator's crawl (``simulate``).

    Attributes:
        concurrency: fetches in flight (``concurrency``).
        fetch_ms: how long each fetch takes (virtual ms).
        delay_ms: politeness delay from a fetch's end to the host's next start (ms).
        pool_start_ms: ``None``: a page's links are queued at its fetch's end. A
            number: the engine's parse pool as it starts, for pages over
            ``core.net.parse.THREAD_PARSE_MAX_BYTES`` (parsed in a worker process that
            starts on first use): their links are queued no earlier than this many ms
            after the first such page's fetch ended (needs the pages' sizes).
    """

    concurrency: int = 16
    fetch_ms: float = 2.0
    delay_ms: float = 0.0
    pool_start_ms: float | None = None


class _Driver:
    """The frontier and prioritizer of one ordering, driven as the engine drives them:
    ``add`` a URL found (its cash and priority from the prioritizer), and ``fetched``
    for a page whose outlinks are known: under ``opic`` its cash is split over all of
    them, a queued outlink's cash grows (``Frontier.credit``; the share of an outlink
    fetched already or in flight is lost, as in the crawler)."""

    def __init__(self, ordering: str, graph: Graph) -> None:
        if ordering not in ORDERINGS:
            raise ValueError(f"unknown ordering {ordering!r} (one of {', '.join(ORDERINGS)})")
        self.prioritizer = Prioritizer(cast(Ordering, ordering))
        self.frontier = Frontier(self.prioritizer.priorities, ordering=self.prioritizer.ordering)
        self.graph = graph

    def seed(self, s: int) -> None:
        """Queue the seed ``s``."""
        cash, priority = self.prioritizer.seed()
        self._add(s, 0, priority, cash)

    def _add(self, v: int, depth: int, priority: int, cash: float) -> None:
        url = self.graph.urls[v]
        host = self.graph.hosts[self.graph.host_of[v]]
        self.frontier.add(FrontierEntry(url, url, host, depth, priority, score=cash))

    def fetched(
        self, entry: FrontierEntry, outlinks: Sequence[int], linked: int, found: bytearray
    ) -> None:
        """``entry``'s page was fetched: queue its ``outlinks`` not ``found`` yet (and
        mark them), credit the others under ``opic``; its cash is split over ``linked``
        URLs (``Graph.link_counts``: those it cannot follow get their shares too, lost,
        as in the crawler)."""
        prioritizer = self.prioritizer
        share = prioritizer.share(entry.score, linked)
        priority = prioritizer.priority(share)
        by_cash = prioritizer.by_cash
        urls_ = self.graph.urls
        for v in outlinks:
            if not found[v]:
                found[v] = 1
                self._add(v, entry.depth + 1, priority, share)
            elif by_cash:
                self.frontier.credit(urls_[v], share)


def simulate(
    graph: Graph,
    ordering: str,
    budget: int,
    settings: SimSettings = SimSettings(),
    sizes: Sequence[int] | None = None,
) -> list[int]:
    """The first ``budget`` nodes ``ordering`` fetches (module docstring, "simulator");
    ``sizes``: each node's body bytes, for ``settings.pool_start_ms``.

    Raises:
        ValueError: an unknown ``ordering``, or ``pool_start_ms`` without ``sizes``.
    """
    if settings.pool_start_ms is not None and sizes is None:
        raise ValueError("simulate: pool_start_ms needs the pages' sizes")
    driver = _Driver(ordering, graph)
    frontier = driver.frontier
    node_of = {url: i for i, url in enumerate(graph.urls)}
    found = bytearray(graph.n)
    for s in graph.seeds:
        if not found[s]:
            found[s] = 1
            driver.seed(s)
    fetch_s = settings.fetch_ms / 1000.0
    delay_s = settings.delay_ms / 1000.0
    pool_ready: float | None = None  # when the parse pool's worker is up
    now = 0.0
    seq = 0
    in_flight: list[tuple[float, int, FrontierEntry]] = []  # (end, seq, entry)
    parsed: list[tuple[float, int, FrontierEntry]] = []  # (links queued at, seq, entry)
    order: list[int] = []
    indptr, indices = graph.indptr, graph.indices
    while len(order) < budget:
        while parsed and parsed[0][0] <= now:  # links queued before the next dispatch
            _, _, page = heapq.heappop(parsed)
            u = node_of[page.url]
            driver.fetched(page, indices[indptr[u] : indptr[u + 1]], graph.link_counts[u], found)
        while len(in_flight) < settings.concurrency:
            popped = frontier.pop(now)
            if popped is None:
                break
            heapq.heappush(in_flight, (now + fetch_s, seq, popped))
            seq += 1
        ready = frontier.next_ready_at() if len(in_flight) < settings.concurrency else None
        if ready is not None and ready <= now:
            ready = None  # a host is ready but every worker is busy
        events = [queue[0][0] for queue in (in_flight, parsed) if queue]
        if ready is not None:
            events.append(ready)
        if not events:
            break  # nothing queued, nothing in flight: the crawl is over
        soonest = min(events)
        if not in_flight or in_flight[0][0] != soonest:
            now = soonest  # a host's politeness time has come, or a page's parse is done
            continue
        end, _, entry = heapq.heappop(in_flight)
        now = end
        frontier.release(entry.host, end + delay_s)
        u = node_of[entry.url]
        order.append(u)
        queued_at = end
        start_ms = settings.pool_start_ms
        if start_ms is not None and sizes is not None and sizes[u] > THREAD_PARSE_MAX_BYTES:
            if pool_ready is None:
                pool_ready = end + start_ms / 1000.0
            queued_at = max(end, pool_ready)
        heapq.heappush(parsed, (queued_at, seq, entry))
        seq += 1
    return order


# ---------------------------------------------------------------- the real crawl


@contextlib.contextmanager
def served(graph: Graph, work: Path) -> Iterator[tuple[str, str]]:
    """Serve ``graph`` on loopback while in the block: the docs web from its packages'
    files (``StaticSite``, one per host, a robots.txt allowing all), the synthetic web
    with nginx (``GraphWeb``). Yields the crawl's ``include`` pattern and the network
    to allow (``allow_networks``).

    Raises:
        RuntimeError: nginx does not start (the synthetic web).
    """
    if graph.name != "docs":
        with GraphWeb(graph, work):
            yield synth_include(), "127.83.0.0/16"
        return
    from crawldeck.localweb.static import StaticSite

    servers = [
        StaticSite(site.root, site.address, DOCS_PORT, robots_txt="User-agent: *\nDisallow:\n")
        for site in DOC_SITES
    ]
    try:
        for server in servers:
            server.start()
        yield sites_include(DOC_SITES), "127.82.0.0/16"
    finally:
        for server in servers:
            server.stop()


def real_crawl(
    graph: Graph,
    ordering: str,
    budget: int,
    settings: SimSettings,
    work: Path,
    scope: tuple[str, str],
) -> tuple[list[int], float, float]:
    """Crawl ``graph``, being served (``served``, which gave ``scope``: the include
    pattern and the network allowed), with ``crawldeck crawl`` (``ordering``,
    ``--max-pages budget``, ``settings``' concurrency and delay, the trap limits of
    ``linkgraph.crawl_config``, no WARC, no sitemaps, ``adaptive_delay_factor`` 0).

    Returns:
        ``(order, seconds, median fetch ms)``: the nodes in the order they were
        fetched (``pages.fetched_at``: the rowid is the order pages were recorded in,
        after their parse, and a large page's parse in a worker process lets smaller
        ones overtake it; URLs that are no node of ``graph`` skipped), the crawl's wall
        time, and the median ``elapsed_ms`` of its pages.

    Raises:
        RuntimeError: the crawl exits with an error, or the crawler has no ``ordering``
            key and ``ordering`` is not ``bfs``.
    """
    include, network = scope
    seeds = work / "seeds.txt"
    seeds.write_text("".join(graph.urls[s] + "\n" for s in graph.seeds))
    db = work / f"{graph.name}-{ordering}.db"
    settings_args = [
        "scope=any", f"include=[{_toml(include)}]", f"allow_networks=[{_toml(network)}]",
        "max_depth=10000", "adaptive_delay_factor=0", "warc=false", "sitemaps=false",
    ]  # fmt: skip
    if "ordering" in CrawlConfig.__dataclass_fields__:
        settings_args.append(f"ordering={_toml(ordering)}")
    elif ordering != "bfs":
        raise RuntimeError(f"this crawler has no ordering key: cannot crawl {ordering!r}")
    command = [str(Path(sys.executable).parent / "crawldeck"), "crawl", str(seeds), "--no-ui",
               "--db", str(db), "--max-pages", str(budget),
               "--delay-ms", str(round(settings.delay_ms)),
               "--concurrency", str(settings.concurrency)]  # fmt: skip
    for item in settings_args:
        command += ["-s", item]
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"crawl exited {proc.returncode}: {proc.stderr[-2000:]}")
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT url, elapsed_ms FROM pages ORDER BY fetched_at, rowid").fetchall()
    conn.close()
    strip = _strip()
    node_of = {urls.normalize(url, strip): i for i, url in enumerate(graph.urls)}
    order = [node_of[k] for k in (urls.normalize(url, strip) for url, _ in rows) if k in node_of]
    elapsed = sorted(ms for _, ms in rows)
    return order, seconds, elapsed[len(elapsed) // 2] if elapsed else 0.0


def _strip() -> tuple[str, ...]:
    """The crawl's ``strip_params`` (the defaults)."""
    return CrawlConfig().strip_params


def _toml(text: str) -> str:
    """``text`` as a TOML basic string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ---------------------------------------------------------------- report


def _percent(values: Sequence[float]) -> list[str]:
    """Shares as percentages with one decimal."""
    return [f"{100 * v:.1f}" for v in values]


def table(
    rows: Sequence[tuple[str, ...]],
    curves: Sequence[Sequence[float]],
    head: Sequence[str],
    marks: Sequence[float] = CHECKPOINTS,
) -> list[str]:
    """A markdown table, one line per row: the row's labels (``head`` names them), then
    the PageRank % captured at each of ``marks`` (from ``curves``)."""
    lines = [
        "| " + " | ".join([*head, *(f"{100 * c:g} %" for c in marks)]) + " |",
        "|" + " --- |" * len(head) + " ---: |" * len(marks),
    ]
    for labels, curve in zip(rows, curves, strict=True):
        lines.append("| " + " | ".join([*labels, *_percent(curve)]) + " |")
    return lines


def in_degree_tail(graph: Graph) -> str:
    """The in-degree distribution's tail in one line: the share of pages with at least
    1, 10, 100, 1 000 in-links and the largest in-degree (a power law falls by a
    roughly constant factor per decade)."""
    import numpy as np

    degree = np.bincount(np.frombuffer(graph.indices, dtype=np.int32), minlength=graph.n)
    shares = ", ".join(f">= {k}: {100 * np.mean(degree >= k):.2f} %" for k in (1, 10, 100, 1000))
    return f"in-links {shares}; max {int(degree.max())}"


def halfway(bfs: float, best: float, value: float) -> float:
    """Where ``value`` lies from ``bfs`` (0) to ``best`` (1): the issue's "halfway"."""
    return (value - bfs) / (best - bfs) if best != bfs else math.nan


def run_graph(
    graph: Graph,
    orderings: Sequence[str],
    settings: SimSettings,
    sizes: Sequence[int] | None = None,
) -> tuple[list[float], dict[str, list[float]]]:
    """PageRank (checked), the omniscient order, the top-k bound and each ordering's
    simulated curve for one graph, with progress printed: ``(rank, curves by name)``.

    Raises:
        RuntimeError: the PageRank vector is no fixed point (``fixed_point_error``).
    """
    t0 = time.perf_counter()
    rank = pagerank(graph, sparse=True)
    seconds = time.perf_counter() - t0
    error = fixed_point_error(graph, rank)
    if error > 100 * TOLERANCE:
        raise RuntimeError(f"{graph.name}: PageRank is no fixed point (L1 step {error:.2e})")
    reach = graph.reachable()
    budget = math.ceil(max(CHECKPOINTS) * reach)
    reach_share = sum(rank[u] for u in greedy_order(graph, rank, graph.n))
    print(
        f"{graph.name}: {graph.n} pages, {len(graph.indices)} links, {len(graph.hosts)} hosts, "
        f"{reach} reachable from {len(graph.seeds)} seeds (holding {100 * reach_share:.1f} % of "
        f"the PageRank); PageRank {seconds:.1f} s, one pure step moves it by {error:.1e}; "
        + in_degree_tail(graph),
        flush=True,
    )
    curves: dict[str, list[float]] = {}
    for name in orderings:
        t0 = time.perf_counter()
        curves[name] = capture_curve(simulate(graph, name, budget, settings, sizes), rank, reach)
        print(f"  {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    curves["omniscient"] = capture_curve(greedy_order(graph, rank, budget), rank, reach)
    curves["top-k bound"] = top_k_curve(rank, reach)
    return rank, curves


def real_section(
    graph: Graph,
    rank: Sequence[float],
    orderings: Sequence[str],
    settings: SimSettings,
    fraction: float,
    sizes: Sequence[int] | None = None,
) -> list[str]:
    """Real crawls of ``graph`` to ``fraction`` of its reachable pages, each against the
    simulator at the crawl's median fetch time: markdown lines. The table gives both
    curves, their largest difference at the checkpoints, and the share of pages the
    two fetched in common within the budget."""
    reach = graph.reachable()
    budget = math.ceil(fraction * reach)
    marks = [c for c in CHECKPOINTS if c <= fraction]
    rows: list[tuple[str, ...]] = []
    curves: list[list[float]] = []
    with tempfile.TemporaryDirectory(prefix="crawldeck-ordering-") as tmp:
        work = Path(tmp)
        with served(graph, work) as scope:
            for name in orderings:
                order, seconds, median_ms = real_crawl(graph, name, budget, settings, work, scope)
                print(
                    f"  real {graph.name} {name}: {len(order)} pages in {seconds:.1f} s, "
                    f"median fetch {median_ms:.1f} ms",
                    flush=True,
                )
                like = dataclasses.replace(settings, fetch_ms=median_ms)
                simulated = simulate(graph, name, budget, like, sizes)
                real = capture_curve(order, rank, reach, marks)
                sim = capture_curve(simulated, rank, reach, marks)
                diff = max(abs(a - b) for a, b in zip(real, sim, strict=True))
                common = len(set(order) & set(simulated)) / max(1, len(order))
                rows.append((name, f"real crawl, {seconds:.0f} s", "", ""))
                agreement = (f"{100 * diff:.1f}", f"{100 * common:.0f}")
                rows.append((name, f"simulated, fetch {median_ms:.1f} ms", *agreement))
                curves += [real, sim]
    head = ("ordering", "run", "largest difference (points)", "same pages (%)")
    return [
        f"Real crawls of {graph.name} against the simulator (--max-pages {budget}, concurrency "
        f"{settings.concurrency}, delay {settings.delay_ms:g} ms; the simulator's fetch time "
        "is the crawl's median elapsed_ms):",
        "",
        *table(rows, curves, head, marks),
    ]


def main() -> int:
    """Run the benchmark (module docstring); 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--graphs", default="docs,synthetic", help="comma-separated")
    parser.add_argument("--orderings", default=",".join(ORDERINGS), help="comma-separated")
    parser.add_argument("--concurrency", type=int, default=16, help="fetches in flight")
    parser.add_argument("--fetch-ms", type=float, default=2.0, help="simulated fetch time")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="politeness delay")
    parser.add_argument(
        "--pool-start-ms",
        type=float,
        help="simulate the parse pool's start for pages over 32 KiB (SimSettings)",
    )
    parser.add_argument(
        "--real",
        type=float,
        default=0.0,
        metavar="FRACTION",
        help="also crawl each graph for real, to FRACTION of its reachable pages",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "crawldeck-ordering-cache",
        help="where the docs graph is cached",
    )
    parser.add_argument("--out", type=Path, help="also write the tables to this file")
    args = parser.parse_args()
    orderings = [o for o in args.orderings.split(",") if o]
    settings = SimSettings(args.concurrency, args.fetch_ms, args.delay_ms, args.pool_start_ms)
    rows: list[tuple[str, ...]] = []
    curves: list[list[float]] = []
    notes: list[str] = []
    for name in args.graphs.split(","):
        t0 = time.perf_counter()
        sizes: list[int] | None = None  # the synthetic web's pages are all small
        if name == "docs":
            graph = docs_graph(args.cache, workers=os.cpu_count() or 2)
            sizes = page_bytes(graph, DOC_SITES)
        elif name == "synthetic":
            graph = synthetic_graph()
        else:
            parser.error(f"--graphs: no graph {name!r} (docs, synthetic)")
        print(f"{name}: graph in {time.perf_counter() - t0:.1f} s", flush=True)
        rank, found = run_graph(graph, orderings, settings, sizes)
        for label, curve in found.items():
            rows.append((graph.name, label))
            curves.append(curve)
        at10 = CHECKPOINTS.index(0.10)
        notes.append("")
        if "bfs" in found:
            for label in orderings:
                if label != "bfs":
                    h = halfway(found["bfs"][at10], found["omniscient"][at10], found[label][at10])
                    notes.append(
                        f"- {graph.name}: {label} at 10 % is {h:.2f} of the way from bfs "
                        "to omniscient"
                    )
        if args.real > 0:
            notes += ["", *real_section(graph, rank, orderings, settings, args.real, sizes)]
    text = "\n".join(
        [
            f"Simulated: concurrency {settings.concurrency}, fetch {settings.fetch_ms:g} ms, "
            f"delay {settings.delay_ms:g} ms, parse pool start {settings.pool_start_ms} ms; "
            "PageRank % captured after the % of the reachable pages:",
            "",
            *table(rows, curves, ("graph", "ordering")),
            *notes,
        ]
    )
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
