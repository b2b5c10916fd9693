"""The prioritizer (``core.policy.prioritizer``) and the frontier under each ordering, pure.

OPIC's cash bands and its conservation (every seed's cash is, at each step, in the
queued URLs, or was handed to URLs fetched already, or was held by a fetched page
without outlinks: none is made or lost on the way), its order on small known graphs
(a URL linked from more pages is fetched earlier, even when found later), and
larger-sites-first's choice among ready hosts. Time is a number passed to ``pop``.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawldeck.core.policy.frontier import Frontier
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.prioritizer import (
    BFS_PRIORITIES,
    DEFAULT_FRONT_QUEUES,
    ORDERINGS,
    PRIORITY_LINK,
    PRIORITY_SEED,
    SEED_CASH,
    Ordering,
    Prioritizer,
    cash_priority,
    importance_priority,
    split_cash,
)

Graph = dict[str, list[str]]


def entry(key: str, priority: int, score: float = 0.0, host: str | None = None) -> FrontierEntry:
    """An entry whose url and key are ``key`` and whose host is its part before ``/``."""
    return FrontierEntry(key, key, host or key.split("/")[0], 1, priority, score=score)


def crawl_order(graph: Graph, seeds: list[str], ordering: Ordering) -> list[str]:
    """The pages of ``graph`` (``host/path`` keys) in the order a frontier of
    ``ordering`` hands them out, one host at a time and every host ready at once (no
    delay), each page's links queued before the next pop, as the crawler's recorder
    does (``Prioritizer.share``, ``Frontier.credit``)."""
    prioritizer = Prioritizer(ordering)
    frontier = Frontier(prioritizer.priorities, ordering=ordering)
    seen = set(seeds)
    for seed in seeds:
        cash, priority = prioritizer.seed()
        frontier.add(entry(seed, priority, cash))
    order = []
    while (e := frontier.pop(0.0)) is not None:
        order.append(e.key)
        outs = list(dict.fromkeys(graph.get(e.key, [])))
        share = prioritizer.share(e.score, len(outs))
        for out in outs:
            if out not in seen:
                seen.add(out)
                frontier.add(entry(out, prioritizer.priority(share), share))
            else:
                frontier.credit(out, share)
        frontier.release(e.host, 0.0)
        frontier._check()
    return order


# ------------------------------------------------------------------ cash bands


@given(st.integers(min_value=0, max_value=DEFAULT_FRONT_QUEUES - 2), st.floats(0.0, 1.0))
def test_cash_in_each_band_gets_its_priority(p: int, within: float) -> None:
    low = 2.0**-p
    cash = low + within * (2 * low - low)
    if cash >= 2 * low:  # the top of the band is the next one's
        cash = low
    assert cash_priority(cash, DEFAULT_FRONT_QUEUES) == p


def test_cash_bands_at_their_edges_and_beyond() -> None:
    f = DEFAULT_FRONT_QUEUES
    assert [cash_priority(c, f) for c in (8.0, 1.0, 0.999, 0.5, 0.4999, 0.25, 0.1)] == [
        0, 0, 1, 1, 2, 2, 4,
    ]  # fmt: skip
    lowest = f - 2  # the demoted queue, f - 1, is never a band
    assert cash_priority(2.0**-lowest, f) == lowest
    assert cash_priority(2.0**-40, f) == lowest
    assert cash_priority(0.0, f) == lowest
    assert cash_priority(0.3, 4) == 2 and cash_priority(0.1, 4) == 2


def test_a_prioritizer_for_each_ordering() -> None:
    opic = Prioritizer("opic", 12)
    assert (opic.priorities, opic.demoted, opic.seed()) == (12, 11, (SEED_CASH, 0))
    assert (opic.priority(0.3), opic.priority(0.3, 50), opic.restored(9, 0.3)) == (2, 2, 2)
    assert opic.restored(1, 0.0) == 1  # the cluster's queue keeps no cash: its priority
    both = Prioritizer("opic-inlinks")
    assert (both.priorities, both.seed(), both.by_cash) == (
        DEFAULT_FRONT_QUEUES,
        (SEED_CASH, 0),
        True,
    )
    # 0.3 is in [2^-2, 2^-1): (32 + 1) // 2 = 16; with 4 in-links 4.8, in [2^2, 2^3): 14
    assert (both.priority(0.3), both.priority(0.3, 4), both.restored(9, 0.3, 4)) == (16, 14, 9)
    for ordering in ("bfs", "larger-sites-first"):
        other = Prioritizer(ordering)
        assert (other.priorities, other.seed()) == (BFS_PRIORITIES, (0.0, PRIORITY_SEED))
        assert other.priority(0.9, 7) == PRIORITY_LINK and other.restored(2, 0.9) == 2
        assert other.share(1.0, 4) == 0.0 and other.handed_out == 0.0
    with pytest.raises(ValueError, match="ordering must be one of"):
        Prioritizer("pagerank")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="front_queues"):
        Prioritizer("opic", 2)
    assert ORDERINGS == ("bfs", "opic", "opic-inlinks", "larger-sites-first")


def test_importance_bands_at_their_edges_and_beyond() -> None:
    """``cash * inlinks**2`` in bands of a factor of 4 from ``2^30`` down."""
    f = DEFAULT_FRONT_QUEUES
    assert [importance_priority(c, 1, f) for c in (2.0**31, 2.0**30, 2.0**29, 1.0, 0.5)] == [
        0, 0, 1, 15, 16,
    ]  # fmt: skip
    assert importance_priority(1.0, 2, f) == 14  # 4: one band up
    assert importance_priority(1.0, 4, f) == 13  # 16
    assert importance_priority(2.0**-20, 1024, f) == 15  # 2^-20 * 2^20 = 1
    assert importance_priority(1.0, 2**20, f) == 0  # beyond the top band
    lowest = f - 2  # the demoted queue, f - 1, is never a band
    assert importance_priority(2.0**-29, 1, f) == lowest
    assert importance_priority(2.0**-60, 1, f) == lowest
    assert importance_priority(0.0, 9, f) == lowest  # no cash: a sitemap URL
    assert importance_priority(0.3, 1, 4) == 2


def test_split_cash_divides_and_a_page_without_links_keeps_none() -> None:
    assert split_cash(1.0, 4) == 0.25
    assert split_cash(0.5, 0) == 0.0
    p = Prioritizer("opic")
    assert p.share(0.6, 3) == pytest.approx(0.2)
    assert p.share(0.4, 0) == 0.0  # lost: not handed out
    assert p.handed_out == pytest.approx(0.6)


# ---------------------------------------------------------- OPIC conservation


@settings(max_examples=60)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 4),
    st.integers(1, 60),
    st.sampled_from(["opic", "opic-inlinks"]),
)
def test_opic_cash_is_conserved_at_every_step(
    seed: int, seeds: int, budget: int, ordering: Ordering
) -> None:
    """A random graph (40 pages over 5 hosts, 0-6 links each, self-links and links to
    fetched pages included), crawled by the real frontier and prioritizer for
    ``budget`` pops: at every step the seeds' cash is what the queued URLs hold plus
    what went to fetched pages plus what pages without links held; the cash handed
    out is the cash of the fetched pages that had links; each queued URL's in-links
    are the fetched pages that linked to it, and its priority is the band of its cash
    (and in-links, under ``opic-inlinks``)."""
    rng = random.Random(seed)
    pages = [f"h{i % 5}/{i}" for i in range(40)]
    graph = {p: [rng.choice(pages) for _ in range(rng.randint(0, 6))] for p in pages}
    prioritizer = Prioritizer(ordering)
    frontier = Frontier(prioritizer.priorities, max_back_queues=3, ordering=ordering)
    linked_from: dict[str, int] = {}
    queued: dict[str, FrontierEntry] = {}
    for p in pages[:seeds]:
        cash, priority = prioritizer.seed()
        queued[p] = entry(p, priority, cash)
        frontier.add(queued[p])
        linked_from[p] = 1  # a seed counts as found by one link
    fetched: set[str] = set()
    to_fetched = kept_by_leaves = fetched_with_links = 0.0
    for _ in range(budget):
        e = frontier.pop(0.0)
        if e is None:
            break
        del queued[e.key]
        fetched.add(e.key)
        outs = list(dict.fromkeys(graph[e.key]))
        if not outs:
            kept_by_leaves += e.score
        else:
            fetched_with_links += e.score
        share = prioritizer.share(e.score, len(outs))
        for out in outs:
            if out in fetched:
                to_fetched += share
                assert not frontier.credit(out, share)
            elif out in queued:
                assert frontier.credit(out, share)
                linked_from[out] += 1
            else:
                queued[out] = entry(out, prioritizer.priority(share), share)
                frontier.add(queued[out])
                linked_from[out] = 1
        frontier.release(e.host, 0.0)
        frontier._check()
        in_queue = sum(q.score for q in queued.values())
        assert in_queue + to_fetched + kept_by_leaves == pytest.approx(seeds * SEED_CASH)
        assert prioritizer.handed_out == pytest.approx(fetched_with_links)
        for q in queued.values():  # each URL's priority is its cash's (and in-links') band
            assert q.inlinks == linked_from[q.key]
            seed = q.key in pages[:seeds]  # a seed keeps the top priority
            assert q.priority == (0 if seed else prioritizer.priority(q.score, q.inlinks))


# ---------------------------------------------------------------- known orders


def test_opic_fetches_the_page_more_pages_link_to_first() -> None:
    """One host. The seed links to p, q1, q2, q3 (a quarter each); p links to cold, each
    q to hot. Breadth-first fetches cold before hot (found first); OPIC fetches hot
    as soon as two quarters made it half, before q3 and cold."""
    graph = {
        "a/": ["a/p", "a/q1", "a/q2", "a/q3"],
        "a/p": ["a/cold"],
        "a/q1": ["a/hot"],
        "a/q2": ["a/hot"],
        "a/q3": ["a/hot"],
    }
    bfs = crawl_order(graph, ["a/"], "bfs")
    assert bfs == ["a/", "a/p", "a/q1", "a/q2", "a/q3", "a/cold", "a/hot"]
    opic = crawl_order(graph, ["a/"], "opic")
    assert opic == ["a/", "a/p", "a/q1", "a/q2", "a/hot", "a/q3", "a/cold"]


def test_opic_inlinks_fetches_the_page_every_page_links_to_before_a_rich_one() -> None:
    """One host, rustdoc's shape. The seed links to four pages n1-n4 and to book (a
    fifth each); each n links to settings and to nine pages of its own (a tenth of a
    fifth each); book links to chapter alone (all its fifth). OPIC fetches chapter (0.2)
    before settings (4 x 0.02 = 0.08). With in-links, once three n pages link to it
    settings (0.06 x 3^2 = 0.54) goes before n4 (0.2). Breadth-first fetches settings
    after book (n1 found it first) and chapter last, behind the 36 x pages."""
    graph: Graph = {"a/": ["a/n1", "a/n2", "a/n3", "a/n4", "a/book"], "a/book": ["a/chapter"]}
    for i in range(1, 5):
        graph[f"a/n{i}"] = ["a/settings"] + [f"a/x{i}{j}" for j in range(9)]
    head = ["a/", "a/n1", "a/n2", "a/n3", "a/n4", "a/book"]
    opic = crawl_order(graph, ["a/"], "opic")
    assert opic[:8] == [*head, "a/chapter", "a/settings"]
    both = crawl_order(graph, ["a/"], "opic-inlinks")
    assert both[:8] == [*head[:4], "a/settings", "a/n4", "a/book", "a/chapter"]
    bfs = crawl_order(graph, ["a/"], "bfs")
    assert bfs.index("a/settings") == 6 and bfs.index("a/chapter") == 43


def test_opic_chooses_among_ready_hosts_by_their_best_cash() -> None:
    """Two hosts ready at once: the one whose best URL has more cash goes first, and
    a host that is not ready yet is never taken, however rich."""
    f = Frontier(DEFAULT_FRONT_QUEUES, ordering="opic")
    poor = entry("a/1", cash_priority(0.01, DEFAULT_FRONT_QUEUES), 0.01)
    rich = entry("b/1", cash_priority(0.6, DEFAULT_FRONT_QUEUES), 0.6)
    richest = entry("c/1", 0, 1.0)
    for e in (poor, rich, richest):
        f.add(e)
    f.release("c", 50.0)  # c waits for its politeness delay
    assert f.pop(10.0) is rich
    assert f.pop(10.0) is poor
    assert f.pop(10.0) is None and f.next_ready_at() == 50.0
    assert f.pop(50.0) is richest
    f._check()


def test_a_credit_raises_a_url_within_its_host_and_its_host_among_ready_ones() -> None:
    f = Frontier(DEFAULT_FRONT_QUEUES, ordering="opic")
    for key in ("a/1", "a/2", "a/3"):
        f.add(entry(key, cash_priority(0.1, DEFAULT_FRONT_QUEUES), 0.1))
    f.add(entry("b/1", cash_priority(0.3, DEFAULT_FRONT_QUEUES), 0.3))
    assert [e.key for e in f.peek("a", 3)] == ["a/1", "a/2", "a/3"]
    assert f.soonest(2) == ["a", "b"]  # not ready yet: by ready time
    assert f.pop(0.0) is not None and f.pop(0.0) is not None  # b/1, then a/1
    f.release("a", 0.0)
    f.release("b", 0.0)
    assert f.credit("a/3", 0.5)  # 0.6: band 1
    assert not f.credit("a/1", 0.5)  # fetched already
    assert not f.credit("x/9", 0.5)  # never queued
    assert [(e.key, e.priority) for e in f.peek("a", 3)] == [("a/3", 1), ("a/2", 4)]
    assert f.by_priority()[1] == 1 and f.by_priority()[4] == 1
    f._check()
    got = f.pop(0.0)
    assert got is not None and got.key == "a/3" and got.score == pytest.approx(0.6)
    f._check()


def test_larger_sites_first_takes_the_ready_host_with_the_most_urls() -> None:
    f = Frontier(BFS_PRIORITIES, ordering="larger-sites-first")
    for host, n in (("small", 1), ("big", 9), ("mid", 3)):
        for i in range(n):
            f.add(entry(f"{host}/{i}", PRIORITY_LINK))
    order = []
    while (e := f.pop(0.0)) is not None:
        order.append(e.key)
        f.release(e.host, 0.0)
        f._check()
    # big (9, then 8 ...) until it is down to mid's order of magnitude (3: 2 bits)
    assert order[:6] == ["big/0", "big/1", "big/2", "big/3", "big/4", "big/5"]
    assert sorted(order) == sorted(
        [f"big/{i}" for i in range(9)] + ["mid/0", "mid/1", "mid/2", "small/0"]
    )
    per_host = [k for k in order if k.startswith("big/")]
    assert per_host == [f"big/{i}" for i in range(9)]  # breadth-first within a host


def test_larger_sites_first_counts_the_urls_a_host_has_beyond_memory() -> None:
    """``set_beyond``: URLs of a host spilled out of memory count in its rank, when it
    becomes ready and while it waits in the ready heap (up and down); a URL read back
    (``add(entry, beyond=True)``) moves from that count to its queue, so the rank
    stays. ``bfs`` and ``opic`` keep no count."""

    def popped(f: Frontier) -> str | None:
        e = f.pop(0.0)
        return None if e is None else e.key

    f = Frontier(BFS_PRIORITIES, ordering="larger-sites-first")
    for key in ("a/0", "b/0", "b/1", "c/0"):
        f.add(entry(key, PRIORITY_LINK))
    f.set_beyond("a", 6)  # 7 URLs: 3 bits, before b's 2 (2 bits) and c's 1
    f.set_beyond("z", 0)  # nothing of an unknown host: nothing kept
    assert "z" not in f._hosts
    assert popped(f) == "a/0"  # b and c wait in the ready heap
    f.release("a", 0.0)
    f.add(entry("a/1", PRIORITY_LINK), beyond=True)  # read back: 6 pending, still 3 bits
    assert (f._hosts["a"].beyond, f.queued("a")) == (5, 1)
    f._check()
    assert popped(f) == "a/1"  # ranked by 6 when ready again
    f.release("a", 10.0)
    f.set_beyond("c", 3)  # 4 URLs: 3 bits, a new ready-heap entry before b's
    f._check()
    assert popped(f) == "c/0"
    f.release("c", 10.0)
    f.set_beyond("b", 30)  # 32 URLs: 6 bits
    assert f._hosts["b"].rank == -6
    f.set_beyond("b", 0)  # and back to its 2 in memory: a new entry, worse
    assert f._hosts["b"].rank == -2
    f._check()
    assert popped(f) == "b/0"
    for ordering in ("bfs", "opic"):
        other = Frontier(Prioritizer(ordering).priorities, ordering=ordering)
        other.add(entry("a/0", 1))
        other.set_beyond("a", 9)
        other.set_beyond("z", 9)
        assert other._hosts["a"].beyond == 0 and "z" not in other._hosts
        other._check()


def test_demoted_urls_wait_in_the_lowest_front_queue_under_opic() -> None:
    f = Frontier(DEFAULT_FRONT_QUEUES, max_back_queues=1, ordering="opic")
    f.add(entry("a/1", 0, 1.0))
    f.add(entry("a/2", 3, 0.2))
    f.add(entry("b/1", 5, 0.05))
    f.demote("a")
    f._check()
    assert f.by_priority()[-1] == 2  # a's URLs, demoted
    assert f.credit("a/2", 0.5) and f.by_priority()[-1] == 2  # still demoted
    got = f.pop(0.0)
    assert got is not None and got.key == "b/1"  # b took the freed slot
    f._check()
    f.release("b", 0.0)
    again = f.pop(0.0)
    assert again is not None and (again.key, again.priority) == ("a/1", 0)  # its cash's back
    assert [(e.key, e.priority) for e in f.peek("a", 2)] == [("a/2", 1)]
    f._check()


def test_push_front_under_opic_goes_first_in_the_hosts_best_queue() -> None:
    f = Frontier(DEFAULT_FRONT_QUEUES, ordering="opic")
    f.add(entry("a/1", 1, 0.6))
    f.add(entry("a/2", 2, 0.3))
    first = f.pop(0.0)
    assert first is not None and first.key == "a/1"
    retry = entry("a/9", 6, 0.02)
    f.push_front(retry)  # a retry goes first whatever its cash
    f.release("a", 0.0)
    assert retry.priority == 2
    assert f.pop(0.0) is retry
    f._check()


@pytest.mark.parametrize("ordering", ORDERINGS)
def test_each_ordering_rejects_a_frontier_it_cannot_run(ordering: Ordering) -> None:
    with pytest.raises(ValueError, match="priorities"):
        Frontier(0, ordering=ordering)
    if ordering in ("opic", "opic-inlinks"):
        with pytest.raises(ValueError, match="priorities"):
            Frontier(1, ordering=ordering)
