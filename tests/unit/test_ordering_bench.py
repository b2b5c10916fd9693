"""The logic of ``benchmarks/ordering_bench.py`` on tiny graphs (issue #15 item 3), so the
benchmark cannot rot silently: PageRank against hand computations, the omniscient order
against its definition, the capture curves, and the simulator driving the real
``Frontier`` and ``Prioritizer``. Pure Python (the benchmark's scipy path is for its
big graphs; the benchmark checks that path's result against one pure step itself)."""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from crawldeck.core.policy import urls
from crawldeck.core.policy.links import extract_links

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str) -> ModuleType:
    """Import ``benchmarks/NAME.py`` (benchmarks/ is no package; its modules import each
    other by bare name, as when run as scripts)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


linkgraph = _load("linkgraph")
bench = _load("ordering_bench")


def graph(adjacency: list[list[int]], seeds: list[int], hosts: list[int] | None = None) -> Any:
    """A ``linkgraph.Graph`` of ``len(adjacency)`` pages, page i on host ``hosts[i]``
    (default: all on one host)."""
    n = len(adjacency)
    host_of = hosts if hosts is not None else [0] * n
    names = [f"127.0.0.{h + 1}:80" for h in range(max(host_of) + 1)]
    node_urls = [f"http://{names[host_of[i]]}/{i}.html" for i in range(n)]
    return linkgraph.from_adjacency("t", node_urls, names, host_of, adjacency, seeds)


def test_from_adjacency_drops_repeated_and_self_links_and_keeps_order() -> None:
    g = graph([[2, 1, 2, 0], [1], []], [0])
    assert list(g.outlinks(0)) == [2, 1]
    assert list(g.outlinks(1)) == []
    assert g.reachable() == 3


def test_pagerank_of_four_pages_is_the_hand_computation() -> None:
    # 0 -> 1, 0 -> 2, 1 -> 2, 2 -> 0, 3 -> 2; no dangling page, d = 0.85, n = 4:
    #   x3 = a,  x1 = a + d x0 / 2,  x2 = a + d (x0 / 2 + x1 + x3),  x0 = a + d x2
    # with a = (1 - d) / 4; substituting: x0 (1 - d^2 (1 + d) / 2) = a (1 + d + 2 d^2)
    d = 0.85
    a = (1 - d) / 4
    x0 = a * (1 + d + 2 * d * d) / (1 - d * d * (1 + d) / 2)
    x1 = a + d * x0 / 2
    x2 = (x0 - a) / d
    expected = [x0, x1, x2, a]
    assert math.fsum(expected) == pytest.approx(1.0, abs=1e-12)
    rank = bench.pagerank(graph([[1, 2], [2], [0], [2]], [0]), sparse=False)
    assert rank == pytest.approx(expected, abs=1e-9)
    assert math.fsum(rank) == pytest.approx(1.0, abs=1e-12)


def test_pagerank_spreads_a_dangling_pages_mass_uniformly() -> None:
    # 0 -> 1, page 1 has no outlink: x0 = (1 - d) / 2 + d x1 / 2, x1 = 1 - x0
    # so x0 = 0.5 / (1 + d / 2)
    rank = bench.pagerank(graph([[1], []], [0]), sparse=False)
    assert rank[0] == pytest.approx(0.5 / 1.425, abs=1e-9)
    assert rank[1] == pytest.approx(1 - 0.5 / 1.425, abs=1e-9)


def test_the_fixed_point_check_refuses_a_wrong_vector() -> None:
    g = graph([[1, 2], [2], [0], [2]], [0])
    rank = bench.pagerank(g, sparse=False)
    assert bench.fixed_point_error(g, rank) < 1e-8
    assert bench.fixed_point_error(g, [0.25] * 4) > 0.1


def test_omniscient_order_takes_the_best_discovered_page_and_respects_reachability() -> None:
    # 4 is the best page but only 3, the worst, links to it; 1 and 2 are seeds' links
    adjacency = [[1, 2, 3], [2], [1], [4], [4], [0]]
    g = graph(adjacency, [0])
    rank = [0.05, 0.20, 0.15, 0.01, 0.50, 0.09]
    order = bench.greedy_order(g, rank, 10)
    assert order == [0, 1, 2, 3, 4]  # 5 is linked by nobody: never discovered
    found = {0}
    for u in order:  # by the definition: the best page discovered so far, each step
        assert u == max(found, key=lambda v: rank[v])
        found.discard(u)
        found |= {v for v in g.outlinks(u) if v not in order[: order.index(u) + 1]}
    assert bench.greedy_order(g, rank, 2) == [0, 1]


def test_capture_curve_is_monotone_and_ends_at_the_share_captured() -> None:
    rank = [0.4, 0.1, 0.3, 0.2]
    order = [2, 0, 3]
    curve = bench.capture_curve(order, rank, 4, (0.25, 0.5, 0.75, 1.0))
    assert curve == pytest.approx([0.3, 0.7, 0.9, 0.9])
    assert all(a <= b for a, b in itertools.pairwise(curve))
    assert curve[-1] == pytest.approx(math.fsum(rank[u] for u in order))
    assert bench.top_k_curve(rank, 4, (0.25, 0.5, 1.0)) == pytest.approx([0.4, 0.7, 1.0])


def test_halfway_measures_from_bfs_to_omniscient() -> None:
    assert bench.halfway(0.2, 0.6, 0.4) == pytest.approx(0.5)
    assert bench.halfway(0.2, 0.6, 0.1) == pytest.approx(-0.25)


def test_simulated_bfs_fetches_in_discovery_order_within_the_budget() -> None:
    # seed 0 -> 1, 2, 3; 1 -> 3; 2 -> 4; one host, one fetch at a time
    g = graph([[1, 2, 3], [3], [4], [], [0]], [0])
    one = bench.SimSettings(concurrency=1, fetch_ms=10.0, delay_ms=5.0)
    assert bench.simulate(g, "bfs", 10, one) == [0, 1, 2, 3, 4]
    assert bench.simulate(g, "bfs", 3, one) == [0, 1, 2]


def test_simulated_opic_moves_a_page_up_when_its_cash_grows() -> None:
    # seed 0 gives 1/3 each to 1, 2, 3; 1 gives its 1/3 to 3, which then has 2/3 and
    # goes before 2 (the real Frontier.credit and Prioritizer at work)
    g = graph([[1, 2, 3], [3], [], []], [0])
    one = bench.SimSettings(concurrency=1, fetch_ms=10.0, delay_ms=0.0)
    assert bench.simulate(g, "bfs", 10, one) == [0, 1, 2, 3]
    assert bench.simulate(g, "opic", 10, one) == [0, 1, 3, 2]


def test_simulated_larger_sites_first_takes_the_host_with_more_queued_urls() -> None:
    # the seed's host 0 links to one page of host 1 and to three of host 2: with one
    # fetch at a time, host 2 (more queued URLs) goes first, bfs takes host 1 first
    hosts = [0, 1, 2, 2, 2]
    g = graph([[1, 2, 3, 4], [], [], [], []], [0], hosts)
    one = bench.SimSettings(concurrency=1, fetch_ms=10.0, delay_ms=0.0)
    assert bench.simulate(g, "bfs", 10, one) == [0, 1, 2, 3, 4]
    assert bench.simulate(g, "larger-sites-first", 10, one)[:2] == [0, 2]


def test_simulate_refuses_an_unknown_ordering() -> None:
    with pytest.raises(ValueError, match="unknown ordering"):
        bench.simulate(graph([[]], [0]), "random", 1)


def test_site_graph_is_the_graph_the_crawler_sees(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "sub").mkdir(parents=True)
    b.mkdir()
    (a / "index.html").write_text(
        '<html><head><link rel="canonical" href="/index.html"></head><body>'
        '<a href="page.html">p</a><a href="sub">s</a><a href="missing.html">m</a>'
        '<a href="page.html#top">p again</a><a href="http://127.82.0.12:8782/index.html">b</a>'
        '<a href="https://example.org/x">out</a><a href="mailto:x@example.org">mail</a>'
        '<a href="nofollowed.html" rel="nofollow">nf</a></body></html>'
    )
    (a / "page.html").write_text('<a href="index.html">home</a>')
    (a / "sub" / "index.html").write_text('<a href="../page.html">up</a>')
    (a / "orphan.html").write_text('<a href="page.html">p</a>')
    (b / "index.html").write_text('<a href="a.txt">text</a>')
    (b / "a.txt").write_text("plain")
    sites = [
        linkgraph.DocSite("a", a, "127.82.0.11"),
        linkgraph.DocSite("b", b, "127.82.0.12"),
    ]
    g = linkgraph.site_graph("t", sites)
    node = {url.removeprefix("http://127.82.0."): i for i, url in enumerate(g.urls)}

    def links(name: str) -> list[str]:
        return [g.urls[v].removeprefix("http://127.82.0.") for v in g.outlinks(node[name])]

    assert links("11:8782/index.html") == [
        "11:8782/page.html",
        "11:8782/sub",  # a directory without its slash: a node of its own
        "11:8782/missing.html",  # a 404: a node without links
        "12:8782/index.html",
    ]
    # what its OPIC cash is split over: the four, example.org, and itself (canonical)
    assert g.link_counts[node["11:8782/index.html"]] == 6
    assert links("11:8782/sub") == ["11:8782/sub/"]  # StaticSite's 301
    assert links("11:8782/sub/") == ["11:8782/page.html"]  # its index.html's links
    assert links("11:8782/missing.html") == []
    assert links("12:8782/index.html") == ["12:8782/a.txt"]
    assert links("12:8782/a.txt") == []
    assert "11:8782/orphan.html" in node  # every HTML file is a page, linked or not
    assert [g.urls[s].removeprefix("http://127.82.0.") for s in g.seeds] == [
        "11:8782/index.html",
        "12:8782/index.html",
    ]
    assert g.reachable() == 7  # not the orphan, not sub/index.html by its own name
    sizes = linkgraph.page_bytes(g, sites)
    assert sizes[node["11:8782/index.html"]] == (a / "index.html").stat().st_size
    assert sizes[node["11:8782/sub/"]] == (a / "sub" / "index.html").stat().st_size
    assert sizes[node["11:8782/sub"]] == sizes[node["12:8782/a.txt"]] == 0  # nothing parsed


def test_the_served_synthetic_web_links_what_the_graph_says(tmp_path: Path) -> None:
    hosts = [linkgraph.synth_host(0), linkgraph.synth_host(1)]
    node_urls = [
        f"http://{hosts[0]}/",
        f"http://{hosts[0]}/p/1.html",
        f"http://{hosts[1]}/",
        f"http://{hosts[1]}/p/1.html",
    ]
    g = linkgraph.from_adjacency(
        "t", node_urls, hosts, [0, 0, 1, 1], [[1, 2], [0, 3], [3], [0]], [0]
    )
    linkgraph.GraphWeb(g, tmp_path).write_tree()
    node = {url: i for i, url in enumerate(g.urls)}
    for u, url in enumerate(g.urls):
        address, path = url.removeprefix("http://").split(":8783")
        file = tmp_path / "www" / address / (path.lstrip("/") or "index.html")
        page = extract_links(file.read_bytes(), url, {"content-type": "text/html"}, "crawldeck")
        assert [node[urls.clean(href, page.base)] for href in page.links] == list(g.outlinks(u))


def test_a_large_page_waits_for_the_parse_pool_to_start() -> None:
    # s links p (over 32 KiB) and q; p links x, q links y. Links are queued at a fetch's
    # end, unless the page goes to the parse pool, whose worker is up 100 ms after the
    # first such page's fetch: x is then found after y
    g = graph([[1, 2], [3], [4], [], []], [0])
    sizes = [1000, 40 * 1024, 1000, 1000, 1000]
    plain = bench.SimSettings(concurrency=1, fetch_ms=10.0, delay_ms=0.0)
    pooled = bench.SimSettings(concurrency=1, fetch_ms=10.0, delay_ms=0.0, pool_start_ms=100.0)
    assert bench.simulate(g, "bfs", 10, plain, sizes) == [0, 1, 2, 3, 4]
    assert bench.simulate(g, "bfs", 10, pooled, sizes) == [0, 1, 2, 4, 3]
    with pytest.raises(ValueError, match="sizes"):
        bench.simulate(g, "bfs", 10, pooled)
