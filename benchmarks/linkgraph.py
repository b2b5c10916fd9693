"""Link graphs for ``ordering_bench.py`` (issue #15 item 3): real documentation sites as
the crawler sees them, and a synthetic web with power-law in-links.

A ``Graph`` is a directed graph of pages in compressed sparse rows: node ``u``'s
outlinks are ``indices[indptr[u]:indptr[u + 1]]``, distinct, in document order, with
no self-link (a page's link to itself changes no crawl order and no PageRank share
worth having). Every node is one URL the crawler would request (``urls.clean``), one
dedupe key (``urls.normalize``): an HTML page, another file, a 404, or a redirect.

``docs_graph`` reads Debian's documentation packages (``DOC_SITES``: ``openjdk-17-doc``,
``rust-doc``, ``python-scipy-doc``, ``python3-doc``, ``python-django-doc``), one loopback
host each (``127.82.0.N:8782``), as ``localweb.static.StaticSite`` serves them: every
HTML file is parsed with the crawler's own ``core.policy.links.extract_links``, every link
(its ``<link rel="canonical">`` too, as ``core.crawl.recording`` admits it; a meta refresh
counts as one more link, where the crawler follows it as a redirect) resolved with
``core.policy.urls.clean`` against the page's base, kept when its host is one of the five
and the crawler's trap guards (``core.policy.traps.TrapGuard``, with the crawl's config
``crawl_config``) admit it, and deduplicated by ``core.policy.urls.normalize``. A URL
maps to a file as ``StaticSite`` maps it: a directory without its trailing slash is
a 301 to it (one outlink: the target), a directory with one is its ``index.html``.
The graph is cached (pickle) under ``--cache`` keyed by the packages' versions.

``synthetic_graph`` draws 10^5 pages over 10^3 hosts (numpy, deterministic by seed):
host sizes Zipf (exponent 1: the largest host about 13 % of the pages, the smallest
``MIN_HOST_PAGES``), each page linking to its host's home page (navigation), from a
random earlier page of its host (so every page is reachable from its home page),
``INTRA_LINKS`` (Poisson mean) links into its own host and ``INTER_LINKS`` into other
hosts; a link's target page is drawn with weight ``rank**-1`` by a random rank per
host (home first), a cross-host link's host with weight ``size**0.9`` times a
log-normal factor, half of them to the home page. In-degrees then follow a power law
(printed by ``ordering_bench.py``). Every host's home page is linked from a random page
of a larger host, so the whole web is reachable from the ``SYNTH_SEEDS`` largest hosts'
home pages, the seeds.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import pickle
import posixpath
import re
import signal
import socket
import subprocess
import time
from array import array
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from multidict import CIMultiDict

from crawldeck.core.config import CrawlConfig
from crawldeck.core.errors import UrlError
from crawldeck.core.policy import urls
from crawldeck.core.policy.links import extract_links
from crawldeck.core.policy.traps import ScopePolicy, TrapGuard, TrapSettings, UrlPatterns

#: Port and address block of the documentation web (``docs_crawl.py`` uses 127.78/8780).
DOCS_PORT = 8782
NGINX = "/usr/sbin/nginx"
#: Bumped when the graph's construction changes, so older caches are not read.
GRAPH_FORMAT = 3
#: Synthetic web: pages, hosts, the smallest host, Poisson means of the links a page
#: has into its own host and into others, and how many of the largest hosts seed it.
SYNTH_PAGES = 100_000
SYNTH_HOSTS = 1_000
MIN_HOST_PAGES = 5
INTRA_LINKS = 8.0
INTER_LINKS = 1.2
SYNTH_SEEDS = 10


@dataclass(frozen=True, slots=True)
class DocSite:
    """One documentation package served as one loopback host.

    Attributes:
        package: the Debian package (``apt-get install`` name).
        root: the directory served as ``/`` (its ``index.html`` is the seed).
        address: the host's IPv4 loopback address (port ``DOCS_PORT``).
    """

    package: str
    root: Path
    address: str

    @property
    def host(self) -> str:
        """The host key, ``address:port``."""
        return f"{self.address}:{DOCS_PORT}"

    @property
    def seed(self) -> str:
        """The seed URL: the site's ``/index.html``."""
        return f"http://{self.host}/index.html"


DOC_SITES = (
    DocSite("openjdk-17-doc", Path("/usr/share/doc/openjdk-17-doc"), "127.82.0.1"),
    DocSite("rust-doc", Path("/usr/share/doc/rust-doc/html"), "127.82.0.2"),
    DocSite("python-scipy-doc", Path("/usr/share/doc/python-scipy-doc/html"), "127.82.0.3"),
    DocSite("python3-doc", Path("/usr/share/doc/python3/html"), "127.82.0.4"),
    DocSite("python-django-doc", Path("/usr/share/doc/python-django-doc/html"), "127.82.0.5"),
)


@dataclass(slots=True)
class Graph:
    """A web graph in compressed sparse rows (module docstring).

    Attributes:
        name: shown in the tables (``docs``, ``synthetic``).
        urls: node -> the URL the crawler requests.
        hosts: host index -> host key (``urls.host_key``).
        host_of: node -> host index (``array('i')``).
        indptr: ``n + 1`` row offsets into ``indices`` (``array('q')``).
        indices: outlink node ids, row by row (``array('i')``).
        seeds: the seed nodes, in order.
        link_counts: node -> the distinct dedupe keys its links resolve to, any host,
            itself included (``array('i')``): what the crawler splits a page's OPIC
            cash over (``core.crawl.recording``), the outlinks of the graph and those it
            cannot follow.
    """

    name: str
    urls: list[str]
    hosts: list[str]
    host_of: array[int]
    indptr: array[int]
    indices: array[int]
    seeds: list[int]
    link_counts: array[int]

    @property
    def n(self) -> int:
        """Number of nodes."""
        return len(self.urls)

    def outlinks(self, u: int) -> array[int]:
        """Node ``u``'s outlinks (distinct, document order, no self-link)."""
        return self.indices[self.indptr[u] : self.indptr[u + 1]]

    def reachable(self) -> int:
        """How many nodes the seeds reach (seeds included), by breadth-first search."""
        seen = bytearray(self.n)
        stack = list(self.seeds)
        for s in stack:
            seen[s] = 1
        count = len(stack)
        indptr, indices = self.indptr, self.indices
        while stack:
            u = stack.pop()
            for v in indices[indptr[u] : indptr[u + 1]]:
                if not seen[v]:
                    seen[v] = 1
                    count += 1
                    stack.append(v)
        return count


def from_adjacency(
    name: str,
    node_urls: list[str],
    hosts: list[str],
    host_of: Iterable[int],
    adjacency: Sequence[Iterable[int]],
    seeds: list[int],
    link_counts: Iterable[int] | None = None,
) -> Graph:
    """A ``Graph`` from one outlink list per node: repeats and self-links dropped, the
    first occurrence's order kept; ``link_counts`` default to each node's distinct
    outlinks in ``adjacency`` (self-links included).

    Raises:
        ValueError: the lists disagree in length, or a node id is out of range.
    """
    n = len(node_urls)
    host_col = array("i", host_of)
    if len(adjacency) != n or len(host_col) != n:
        raise ValueError("from_adjacency: urls, host_of and adjacency differ in length")
    indptr = array("q", [0])
    indices = array("i")
    counts = array("i")
    for u, row in enumerate(adjacency):
        distinct = dict.fromkeys(row)
        kept = [v for v in distinct if v != u]
        if any(v < 0 or v >= n for v in kept):
            raise ValueError(f"from_adjacency: node {u} links outside 0..{n - 1}")
        indices.extend(kept)
        indptr.append(len(indices))
        counts.append(len(distinct))
    if link_counts is not None:
        counts = array("i", link_counts)
        if len(counts) != n:
            raise ValueError("from_adjacency: link_counts differ in length")
    return Graph(name, node_urls, hosts, host_col, indptr, indices, seeds, counts)


# ---------------------------------------------------------------- documentation web


def crawl_config(include: str) -> CrawlConfig:
    """The crawl settings that decide which URLs are pages, shared by the graph, the
    simulator and the real crawl: scope ``any`` narrowed by the ``include`` regular
    expression, ``max_depth`` 10 000 (depth is no limit here), the other trap limits
    at their defaults."""
    return CrawlConfig(scope="any", include=(include,), max_depth=10_000)


def sites_include(sites: Sequence[DocSite]) -> str:
    """The ``include`` pattern of a web of ``sites``: their hosts, nothing else."""
    return "^http://(" + "|".join(re.escape(site.host) for site in sites) + ")/"


def synth_include() -> str:
    """The ``include`` pattern of the synthetic web: its hosts' address block."""
    return r"^http://127\.83\."


def _guard(config: CrawlConfig) -> TrapGuard:
    """The crawler's trap guards for ``config`` (as ``core.crawl.assembly`` builds them)."""
    return TrapGuard(
        TrapSettings.from_config(config),
        ScopePolicy(config.scope),
        datetime.date.today(),
        patterns=UrlPatterns.from_config(config),
        hosts=config.hosts,
    )


def _html_files(root: Path) -> list[str]:
    """Paths (relative, ``/``-separated, sorted) of the ``.html`` files under ``root``,
    following symbolic links to directories once each (Debian's trees use them)."""
    found: list[str] = []
    visited: set[str] = set()
    for here, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(here)
        if real in visited:
            dirs.clear()
            continue
        visited.add(real)
        rel = os.path.relpath(here, root)
        for name in files:
            if name.endswith((".html", ".htm")):
                found.append(name if rel == "." else f"{rel}/{name}")
    return sorted(found)


def _parse_chunk(
    job: tuple[str, str, list[str], frozenset[str]],
) -> list[tuple[str, list[str], int]]:
    """``(url, outlink URLs, distinct keys linked)`` of each HTML file of one chunk (a
    process pool job): ``extract_links`` (its ``<link rel="canonical">`` is a link, as
    ``core.crawl.recording`` admits it) then ``urls.clean`` against the base; links to other
    hosts than ``served`` dropped from the list, counted in the number (distinct by
    ``urls.normalize``, as the crawler counts a page's outlinks)."""
    prefix, root, rels, served = job
    headers = CIMultiDict({"content-type": "text/html; charset=utf-8"})
    strip = CrawlConfig().strip_params
    memo: dict[tuple[str, str], tuple[str, str, bool] | None] = {}  # -> (URL, key, served)
    out: list[tuple[str, list[str], int]] = []
    for rel in rels:
        url = urls.clean(prefix + quote(rel))
        body = (Path(root) / rel).read_bytes()
        page = extract_links(body, url, headers, "crawldeck")
        hrefs = list(page.links)
        if page.canonical and not page.nofollow:
            hrefs.append(page.canonical)
        if page.refresh:
            hrefs.append(page.refresh)
        base_dir = page.base.rpartition("/")[0]
        found: list[str] = []
        linked: set[str] = set()
        for href in hrefs:
            key = (base_dir, href)
            if key in memo and not href.startswith("?"):
                target = memo[key]
            else:
                try:
                    clean = urls.clean(href, page.base)
                    target = (clean, urls.normalize(clean, strip), urls.host_key(clean) in served)
                except UrlError:
                    target = None
                memo[key] = target
            if target is not None:
                linked.add(target[1])
                if target[2]:
                    found.append(target[0])
        out.append((url, found, len(linked)))
    return out


def _package_versions(packages: Iterable[str]) -> str:
    """``package=version`` of each package, as dpkg knows it (``?`` when unknown)."""
    lines = []
    for package in packages:
        proc = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package],
            capture_output=True,
            text=True,
            check=False,
        )
        lines.append(f"{package}={proc.stdout.strip() or '?'}")
    return ",".join(lines)


def docs_graph(cache: Path, *, workers: int = 2, progress: bool = True) -> Graph:
    """The documentation web's graph (module docstring), from ``cache`` when there.

    Raises:
        FileNotFoundError: a package of ``DOC_SITES`` is not installed (its
            ``index.html`` is missing).
    """
    for site in DOC_SITES:
        if not (site.root / "index.html").is_file():
            raise FileNotFoundError(
                f"{site.root}/index.html: install {site.package} "
                "(apt-get install --no-install-recommends " + site.package + ")"
            )
    versions = _package_versions(site.package for site in DOC_SITES)
    digest = hashlib.sha256(f"{GRAPH_FORMAT}|{versions}".encode()).hexdigest()[:16]
    path = cache / f"docs-{digest}.pickle"
    if path.is_file():
        with path.open("rb") as f:
            graph: Graph = pickle.load(f)
        return graph
    graph = site_graph("docs", DOC_SITES, workers=workers, progress=progress)
    cache.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    with partial.open("wb") as f:
        pickle.dump(graph, f, protocol=pickle.HIGHEST_PROTOCOL)
    partial.replace(path)
    return graph


def site_graph(
    name: str, sites: Sequence[DocSite], *, workers: int = 1, progress: bool = False
) -> Graph:
    """The graph of ``sites`` served as ``StaticSite`` serves them (module docstring):
    every HTML file parsed (in ``workers`` processes; ``1``: in this one), every URL
    they link to on these hosts a node, the seeds each site's ``/index.html``."""
    served = frozenset(site.host for site in sites)
    jobs: list[tuple[str, str, list[str], frozenset[str]]] = []
    for site in sites:
        rels = _html_files(site.root)
        for i in range(0, len(rels), 500):
            jobs.append((f"http://{site.host}/", str(site.root), rels[i : i + 500], served))
    page_links: dict[str, tuple[list[str], int]] = {}
    with contextlib.ExitStack() as stack:
        if workers > 1:
            chunks = stack.enter_context(ProcessPoolExecutor(max_workers=workers)).map(
                _parse_chunk, jobs
            )
        else:
            chunks = map(_parse_chunk, jobs)
        for done, chunk in enumerate(chunks, 1):
            page_links.update((url, (found, linked)) for url, found, linked in chunk)
            if progress and done % 10 == 0:
                print(f"  parsed {len(page_links)} HTML files ({done}/{len(jobs)} chunks)")
    config = crawl_config(sites_include(sites))
    guard = _guard(config)
    strip = config.strip_params
    roots = {site.host: site.root for site in sites}
    hosts = [site.host for site in sites]
    host_index = {host: i for i, host in enumerate(hosts)}
    ids: dict[str, int] = {}
    node_urls: list[str] = []
    admitted: dict[str, bool] = {}

    def node(url: str, *, seed: bool = False) -> int | None:
        """The node of ``url`` (made on first sight), or ``None`` if the guards refuse it."""
        ok = admitted.get(url)
        if ok is None:
            ok = admitted[url] = seed or guard.admit(url, 0, 0) is None
        if not ok:
            return None
        key = urls.normalize(url, strip)
        found = ids.get(key)
        if found is None:
            found = ids[key] = len(node_urls)
            node_urls.append(url)
        return found

    seeds = [node(site.seed, seed=True) for site in sites]
    for url in page_links:
        node(url)
    adjacency: list[list[int]] = []
    link_counts: list[int] = []
    u = 0
    while u < len(node_urls):  # a redirect can make new nodes: they get rows too
        targets, linked = _served_links(node_urls[u], roots, page_links)
        adjacency.append([v for v in map(node, targets) if v is not None])
        link_counts.append(linked)
        u += 1
    host_of = [host_index[urls.host_key(url)] for url in node_urls]
    found_seeds = [s for s in seeds if s is not None]
    return from_adjacency(name, node_urls, hosts, host_of, adjacency, found_seeds, link_counts)


def _served_file(url: str, roots: dict[str, Path]) -> Path | str | None:
    """What ``StaticSite`` serves at ``url``: the HTML file (a directory's
    ``index.html``), the URL a directory without its trailing slash redirects to
    (301), or ``None`` (another file, a 404: no links)."""
    parts = urlsplit(url)
    root = roots[parts.netloc]
    path = unquote(parts.path) or "/"
    relative = posixpath.normpath(path).lstrip("/")
    target = root / relative if relative not in ("", ".") else root
    if target.is_dir():
        if not path.endswith("/"):
            query = f"?{parts.query}" if parts.query else ""
            return urls.clean(f"{parts.scheme}://{parts.netloc}{parts.path}/{query}")
        target = target / "index.html"
    elif path.endswith("/"):
        return None
    if target.suffix not in (".html", ".htm") or not target.is_file():
        return None
    return target


def _served_links(
    url: str, roots: dict[str, Path], page_links: dict[str, tuple[list[str], int]]
) -> tuple[list[str], int]:
    """``(served URLs linked, distinct keys linked)`` of the page ``StaticSite`` serves
    at ``url`` (``_served_file``): an HTML file's links, a directory's 301 target, else
    none."""
    served = _served_file(url, roots)
    if served is None:
        return [], 0
    if isinstance(served, str):
        return [served], 1
    netloc = urlsplit(url).netloc
    rel = served.relative_to(roots[netloc]).as_posix()
    return page_links.get(urls.clean(f"http://{netloc}/" + quote(rel)), ([], 0))


def page_bytes(graph: Graph, sites: Sequence[DocSite]) -> list[int]:
    """Each node's HTML body size in bytes as ``StaticSite`` serves it from ``sites``
    (``0`` for a redirect, another file or a 404: nothing the crawler parses)."""
    roots = {site.host: site.root for site in sites}
    sizes = []
    for url in graph.urls:
        served = _served_file(url, roots)
        sizes.append(served.stat().st_size if isinstance(served, Path) else 0)
    return sizes


# ---------------------------------------------------------------- synthetic web


def synth_host(h: int) -> str:
    """The host key of synthetic host ``h``: ``127.83.<h // 250>.<h % 250 + 1>:8783``."""
    return f"127.83.{h // 250}.{h % 250 + 1}:8783"


def synthetic_graph(
    pages: int = SYNTH_PAGES, n_hosts: int = SYNTH_HOSTS, *, seed: int = 15
) -> Graph:
    """The synthetic web (module docstring), the same for the same arguments.

    Raises:
        ValueError: fewer than ``MIN_HOST_PAGES`` pages per host.
    """
    import numpy as np

    if pages < n_hosts * MIN_HOST_PAGES:
        raise ValueError(f"synthetic_graph: {pages} pages cannot fill {n_hosts} hosts")
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, n_hosts + 1)
    spare = pages - n_hosts * MIN_HOST_PAGES
    sizes = MIN_HOST_PAGES + np.floor(zipf / zipf.sum() * spare).astype(np.int64)
    sizes[0] += pages - int(sizes.sum())
    start = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    host_of = np.repeat(np.arange(n_hosts), sizes)
    local = np.arange(pages) - start[host_of]  # index within the host, 0 = home
    # in-link weight: rank**-1 with the home page first and a random rank for the rest
    rank = np.zeros(pages, dtype=np.int64)
    for h in range(n_hosts):
        rank[start[h] + 1 : start[h] + sizes[h]] = 1 + rng.permutation(int(sizes[h]) - 1)
    weight = 1.0 / (rank + 1.0)
    within = np.zeros(pages)
    for h in range(n_hosts):
        w = np.cumsum(weight[start[h] : start[h] + sizes[h]])
        within[start[h] : start[h] + sizes[h]] = h + w / w[-1]
    within[start + sizes - 1] = np.arange(n_hosts) + 1.0  # exact ends

    def draw_in(host: np.ndarray) -> np.ndarray:
        """A page of each host in ``host``, by in-link weight."""
        return np.searchsorted(within, host + rng.random(len(host)), side="right").clip(
            max=pages - 1
        )

    kinds: list[tuple[np.ndarray, np.ndarray, int]] = []  # (source, target, order)
    rest = np.flatnonzero(local > 0)
    kinds.append((rest, start[host_of[rest]], 0))  # navigation: home page
    parent = start[host_of[rest]] + np.floor(rng.random(len(rest)) * local[rest]).astype(np.int64)
    kinds.append((parent, rest, 1))  # from an earlier page of the host: reachability
    k = rng.poisson(INTRA_LINKS, pages)
    src = np.repeat(np.arange(pages), k)
    kinds.append((src, draw_in(host_of[src]), 2))
    popularity = sizes**0.9 * rng.lognormal(0.0, 1.0, n_hosts)
    cum = np.cumsum(popularity) / popularity.sum()
    k = rng.poisson(INTER_LINKS, pages)
    src = np.repeat(np.arange(pages), k)
    to_host = np.searchsorted(cum, rng.random(len(src)), side="right").clip(max=n_hosts - 1)
    home = rng.random(len(src)) < 0.5
    kinds.append((src, np.where(home, start[to_host], draw_in(to_host)), 3))
    later = np.arange(1, n_hosts)
    earlier = np.floor(rng.random(n_hosts - 1) * later).astype(np.int64)
    linker = start[earlier] + np.floor(rng.random(n_hosts - 1) * sizes[earlier]).astype(np.int64)
    kinds.append((linker, start[later], 3))  # every host linked from a larger one
    source = np.concatenate([s for s, _, _ in kinds])
    target = np.concatenate([t for _, t, _ in kinds])
    order = np.concatenate([np.full(len(s), o) for s, _, o in kinds])
    keep = source != target
    source, target, order = source[keep], target[keep], order[keep]
    sort = np.lexsort((rng.random(len(source)), order, source))
    source, target = source[sort], target[sort]
    adjacency: list[list[int]] = [[] for _ in range(pages)]
    for s, t in zip(source.tolist(), target.tolist(), strict=True):
        adjacency[s].append(t)
    hosts = [synth_host(h) for h in range(n_hosts)]
    node_urls = [
        f"http://{hosts[h]}/" if j == 0 else f"http://{hosts[h]}/p/{j}.html"
        for h, j in zip(host_of.tolist(), local.tolist(), strict=True)
    ]
    seeds = [int(start[h]) for h in range(min(SYNTH_SEEDS, n_hosts))]
    return from_adjacency("synthetic", node_urls, hosts, host_of.tolist(), adjacency, seeds)


class GraphWeb:
    """nginx serving a ``Graph`` whose hosts are ``address:port`` literals (the synthetic
    web's), for a real crawl of it: one small HTML file per node under
    ``work/www/<address>/`` (``/`` is ``index.html``) holding an ``<a href>`` per
    outlink, in order (root-relative within a host, absolute across hosts); one nginx
    worker listening on every host's address; no robots.txt (404: allowed).

    Use as a context manager. Raises ``RuntimeError`` when nginx is not installed or
    does not start listening within 20 s.
    """

    def __init__(self, graph: Graph, work: Path) -> None:
        self.graph = graph
        self.work = work
        self._proc: subprocess.Popen[bytes] | None = None

    def write_tree(self) -> None:
        """Write one file per node under ``work/www`` (see the class docstring); done
        by entering the context."""
        g = self.graph
        www = self.work / "www"
        for h in g.hosts:
            (www / h.rpartition(":")[0] / "p").mkdir(parents=True, exist_ok=True)
        for u, url in enumerate(g.urls):
            parts = urlsplit(url)
            hrefs = []
            for v in g.outlinks(u):
                target = urlsplit(g.urls[v])
                same = target.netloc == parts.netloc
                hrefs.append(target.path if same else g.urls[v])
            body = "".join(f'<li><a href="{href}">{href}</a></li>' for href in hrefs)
            path = parts.path if parts.path != "/" else "/index.html"
            (www / (parts.hostname or "") / path.lstrip("/")).write_text(
                f"<!doctype html><html><head><title>{url}</title></head><body><ul>{body}"
                "</ul></body></html>\n"
            )

    def __enter__(self) -> GraphWeb:
        """Write the tree, start nginx, wait until it listens."""
        self.write_tree()
        listens = "".join(f"    listen {host};\n" for host in self.graph.hosts)
        user = "user root;\n" if os.geteuid() == 0 else ""
        conf = self.work / "nginx.conf"
        conf.write_text(
            f"{user}worker_processes 1;\nworker_rlimit_nofile 20000;\n"
            f"pid {self.work}/nginx.pid;\nerror_log {self.work}/error.log warn;\n"
            "events { worker_connections 4000; }\n"
            "http {\n  default_type text/html;\n  types { text/html html; }\n"
            f"  access_log off;\n  client_body_temp_path {self.work}/tmp;\n"
            "  keepalive_requests 100000;\n"
            f"  server {{\n{listens}    root {self.work}/www/$server_addr;\n  }}\n}}\n"
        )
        if not Path(NGINX).exists():
            raise RuntimeError(f"{NGINX} is not installed (apt-get install nginx-light)")
        self._proc = subprocess.Popen(
            [NGINX, "-p", str(self.work), "-c", str(conf), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        address, _, port = self.graph.hosts[-1].rpartition(":")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                err = self._proc.stderr.read().decode() if self._proc.stderr else ""
                raise RuntimeError(f"nginx exited: {err.strip()}")
            try:
                socket.create_connection((address, int(port)), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not start listening in 20 s")

    def __exit__(self, *exc: object) -> None:
        """Stop nginx."""
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGTERM)
            self._proc.wait(timeout=10)


__all__ = [
    "DOCS_PORT",
    "DOC_SITES",
    "DocSite",
    "Graph",
    "GraphWeb",
    "crawl_config",
    "docs_graph",
    "from_adjacency",
    "page_bytes",
    "site_graph",
    "sites_include",
    "synth_host",
    "synth_include",
    "synthetic_graph",
]
