"""The ``ordering`` key in a real ``Engine`` on virtual time (issue #15 items 1, 2, 5).

One host on a ``FakeSite``: the seed links to p, q1, q2, q3; p links to cold, each q
to hot. Breadth-first fetches cold (found first) before hot; OPIC hands hot the two
quarters of q1 and q2 and fetches it before q3 and cold. A crawl stopped by
``max_pages`` with hot's cash raised and resumed from its file goes on in the order
an uninterrupted crawl takes (the cash is in ``frontier.score``); the console's host
detail shows each queued URL's cash. The evidence is the site's request log, in
fetch order, and the SQLite file.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from fakesite import FakeSite, crawl, links_page

from crawldeck.core.crawl.engine import Engine
from crawldeck.core.crawl.snapshot import HostDetail
from crawldeck.core.policy.prioritizer import Prioritizer

A = "http://127.0.0.1"
PAGES = {
    "/": ("/p", "/q1", "/q2", "/q3"),
    "/p": ("/cold",),
    "/q1": ("/hot",),
    "/q2": ("/hot",),
    "/q3": ("/hot",),
    "/cold": (),
    "/hot": (),
}


def site() -> FakeSite:
    """The graph of the module docstring."""
    s = FakeSite()
    for path, hrefs in PAGES.items():
        s.add(A + path, links_page(*hrefs))
    return s


def fetched(s: FakeSite) -> list[str]:
    """The pages requested, in order (robots.txt left out)."""
    return [t for t in s.targets(A) if t != "/robots.txt"]


# delay_ms: the host is free again only after a page's links are queued (a delay of 0
# would let another worker take the host while the page is still being recorded)
@pytest.mark.parametrize(
    ("ordering", "order"),
    [
        ("bfs", ["/", "/p", "/q1", "/q2", "/q3", "/cold", "/hot"]),
        ("opic", ["/", "/p", "/q1", "/q2", "/hot", "/q3", "/cold"]),
        # hot: 0.5 cash x 2^2 in-links = 2, against 0.25 x 1 for q3 and cold
        ("opic-inlinks", ["/", "/p", "/q1", "/q2", "/hot", "/q3", "/cold"]),
        ("larger-sites-first", ["/", "/p", "/q1", "/q2", "/q3", "/cold", "/hot"]),
    ],
)
def test_the_ordering_decides_which_page_of_a_host_goes_first(
    tmp_path: Path, ordering: str, order: list[str]
) -> None:
    s = site()
    c = crawl(s, [A + "/"], tmp_path / "c.db", ordering=ordering, delay_ms=50)
    assert fetched(s) == order
    scores = dict(c.rows("SELECT url, score FROM frontier"))
    inlinks = dict(c.rows("SELECT url, inlinks FROM frontier"))
    if ordering.startswith("opic"):
        assert scores[A + "/"] == 1.0  # a seed's cash
        assert scores[A + "/q1"] == 0.25
        assert scores[A + "/hot"] == 0.5  # q3's quarter came after it was fetched
        assert scores[A + "/cold"] == 0.25
        assert (inlinks[A + "/hot"], inlinks[A + "/cold"]) == (2, 1)  # q1 and q2; p
    else:
        assert set(scores.values()) == {0.0}
        assert set(inlinks.values()) == {1}  # counted under the cash orderings only


@pytest.mark.parametrize("ordering", ["opic", "opic-inlinks"])
def test_a_resumed_opic_crawl_goes_on_in_the_same_order(tmp_path: Path, ordering: str) -> None:
    db = tmp_path / "c.db"
    first = site()
    c = crawl(first, [A + "/"], db, ordering=ordering, delay_ms=50, max_pages=4)
    assert c.result.outcome == "max_pages"
    assert fetched(first) == ["/", "/p", "/q1", "/q2"]
    queued = c.rows(
        "SELECT url, score, inlinks, priority, state FROM frontier WHERE state = 'queued'"
    )
    quarter = Prioritizer(ordering).priority(0.25)  # as pushed
    assert sorted(queued) == [
        (A + "/cold", 0.25, 1, quarter, "queued"),
        (A + "/hot", 0.5, 2, quarter, "queued"),  # its cash and in-links grew in SQLite
        (A + "/q3", 0.25, 1, quarter, "queued"),
    ]
    again = site()
    crawl(again, [A + "/"], db, ordering=ordering, delay_ms=50)
    assert fetched(again) == ["/hot", "/q3", "/cold"]  # as the uninterrupted crawl


@pytest.mark.parametrize("ordering", ["opic", "opic-inlinks", "bfs"])
def test_the_host_detail_shows_the_cash_of_the_next_urls(tmp_path: Path, ordering: str) -> None:
    details: list[HostDetail | None] = []

    async def look(engine: Engine) -> None:
        await asyncio.sleep(0.12)  # robots.txt, / and p fetched (delay 50 ms)
        details.append(engine.host_detail("127.0.0.1"))

    crawl(site(), [A + "/"], tmp_path / "c.db", ordering=ordering, delay_ms=50, during=look)
    (detail,) = details
    assert detail is not None
    assert detail.queue_head == (A + "/q1", A + "/q2", A + "/q3", A + "/cold")
    if ordering.startswith("opic"):
        assert detail.queue_scores == (0.25, 0.25, 0.25, 0.25)
    else:
        assert detail.queue_scores == ()
    assert detail.queue_inlinks == ((1, 1, 1, 1) if ordering == "opic-inlinks" else ())


def test_the_console_draws_the_frontier_per_cash_band_under_opic() -> None:
    from crawldeck.core.crawl.snapshot import Counters
    from crawldeck.tui.screens import priority_bars

    by_band = (1, 0, 4, 0, 0, 2) + (0,) * 25 + (3,)  # 32 priorities, the last demoted
    c = Counters(queued_by_priority=by_band, spilled=5, ordering="opic")
    labels = [line.split("█")[0].split() for line in priority_bars(c, 60).plain.splitlines()]
    assert [label[:2] for label in labels] == [
        ["0", "cash"], ["2", "cash"], ["5", "cash"], ["31", "demoted"], ["spilled", "(SQLite)"],
    ]  # fmt: skip
    assert "2^-5" in priority_bars(c, 60).plain
    bfs = Counters(queued_by_priority=(1, 4, 0), spilled=0, ordering="bfs")
    assert [line.split()[1] for line in priority_bars(bfs, 60).plain.splitlines()] == [
        "seeds,", "links,", "lowest", "(SQLite)",
    ]  # fmt: skip


def test_the_console_draws_importance_bands_and_in_links_under_opic_inlinks() -> None:
    from crawldeck.core.crawl.snapshot import Counters, HostDetail, HostRow
    from crawldeck.tui.host_detail import _queue_text
    from crawldeck.tui.screens import priority_bars

    by_band = (1, 0, 4, 0, 0, 2) + (0,) * 25 + (3,)
    c = Counters(queued_by_priority=by_band, spilled=0, ordering="opic-inlinks")
    lines = priority_bars(c, 60).plain.splitlines()
    # band p holds cash x in-links^2 >= 2^(30 - 2p)
    assert [line.split("█")[0].strip() for line in lines[:3]] == [
        "0 seeds, cash x in^2 >= 2^30", "2 cash x in^2 >= 2^26", "5 cash x in^2 >= 2^20",
    ]  # fmt: skip
    assert lines[3].startswith("31 demoted")
    row = HostRow("127.0.0.1", 2, 0, 0, 0, 0.0, "default", 1.0, 0.0, "ok")
    detail = HostDetail(
        row=row, queue_head=(A + "/hot", A + "/q3"), robots_rules=(),
        crawl_delay_s=None, responses=(), queue_scores=(0.5, 0.25), queue_inlinks=(2, 1),
    )  # fmt: skip
    assert _queue_text(detail).plain.splitlines() == [
        f" 1. cash 0.500         2 in-links  {A}/hot",
        f" 2. cash 0.250         1 in-links  {A}/q3",
    ]


def test_the_frontier_bars_fit_their_height_with_the_lowest_bands_summed() -> None:
    from crawldeck.core.crawl.snapshot import Counters
    from crawldeck.tui.screens import priority_bars

    bands = [0] * 32
    for p, n in ((0, 2), (15, 1), (16, 3), (18, 20), (20, 24), (22, 5), (31, 1)):
        bands[p] = n
    c = Counters(queued_by_priority=tuple(bands), spilled=4, ordering="opic-inlinks")
    lines = priority_bars(c, 60, 5).plain.splitlines()
    labels = [re.split(r"\s+[▏▎▍▌▋▊▉█]|\s{2,}", line)[0] for line in lines]
    assert labels == [
        "0 seeds, cash x in^2 >= 2^30", "15 cash x in^2 >= 2^0", "16 cash x in^2 >= 2^-2",
        "18-31 lower bands", "spilled (SQLite)",
    ]  # fmt: skip
    assert priority_bars(c, 60, 5).plain.splitlines()[3].split()[-2] == "50"  # 20 + 24 + 5 + 1
    assert len(priority_bars(c, 60, 9).plain.splitlines()) == 8  # room for all: 7 bands + spilled
