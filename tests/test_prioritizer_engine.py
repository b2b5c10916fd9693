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
from pathlib import Path

import pytest
from fakesite import FakeSite, crawl, links_page

from crawldeck.core.engine import Engine
from crawldeck.core.prioritizer import cash_priority
from crawldeck.core.snapshot import HostDetail

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
    if ordering == "opic":
        assert scores[A + "/"] == 1.0  # a seed's cash
        assert scores[A + "/q1"] == 0.25
        assert scores[A + "/hot"] == 0.5  # q3's quarter came after it was fetched
        assert scores[A + "/cold"] == 0.25
    else:
        assert set(scores.values()) == {0.0}


def test_a_resumed_opic_crawl_goes_on_in_the_same_order(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    first = site()
    c = crawl(first, [A + "/"], db, ordering="opic", delay_ms=50, max_pages=4)
    assert c.result.outcome == "max_pages"
    assert fetched(first) == ["/", "/p", "/q1", "/q2"]
    queued = c.rows("SELECT url, score, priority, state FROM frontier WHERE state = 'queued'")
    assert sorted(queued) == [
        (A + "/cold", 0.25, cash_priority(0.25, 32), "queued"),
        (A + "/hot", 0.5, cash_priority(0.25, 32), "queued"),  # its cash grew in SQLite
        (A + "/q3", 0.25, cash_priority(0.25, 32), "queued"),
    ]
    again = site()
    crawl(again, [A + "/"], db, ordering="opic", delay_ms=50)
    assert fetched(again) == ["/hot", "/q3", "/cold"]  # as the uninterrupted crawl


@pytest.mark.parametrize("ordering", ["opic", "bfs"])
def test_the_host_detail_shows_the_cash_of_the_next_urls(tmp_path: Path, ordering: str) -> None:
    details: list[HostDetail | None] = []

    async def look(engine: Engine) -> None:
        await asyncio.sleep(0.12)  # robots.txt, / and p fetched (delay 50 ms)
        details.append(engine.host_detail("127.0.0.1"))

    crawl(site(), [A + "/"], tmp_path / "c.db", ordering=ordering, delay_ms=50, during=look)
    (detail,) = details
    assert detail is not None
    assert detail.queue_head == (A + "/q1", A + "/q2", A + "/q3", A + "/cold")
    if ordering == "opic":
        assert detail.queue_scores == (0.25, 0.25, 0.25, 0.25)
    else:
        assert detail.queue_scores == ()


def test_the_console_draws_the_frontier_per_cash_band_under_opic() -> None:
    from crawldeck.core.snapshot import Counters
    from crawldeck.tui.screens import priority_bars

    by_band = (1, 0, 4, 0, 0, 2) + (0,) * 25 + (3,)  # 32 priorities, the last demoted
    c = Counters(queued_by_priority=by_band, spilled=5, ordering="opic")
    labels = [line.split("█")[0].split() for line in priority_bars(c, 60).plain.splitlines()]
    assert [label[:2] for label in labels] == [
        ["0", "cash"], ["2", "cash"], ["5", "cash"], ["31", "demoted"], ["spilled", "(SQLite)"],
    ]  # fmt: skip
    assert "2^-5" in priority_bars(c, 60).plain
    bfs = Counters(queued_by_priority=(1, 4, 0), spilled=0)
    assert [line.split()[1] for line in priority_bars(bfs, 60).plain.splitlines()] == [
        "seeds,", "links,", "lowest", "(SQLite)",
    ]  # fmt: skip
