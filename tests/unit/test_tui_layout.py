"""The console at 80 x 24 and 160 x 48, its figures, the help generated from the: the tests
that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/console/test_tui_layout.py``."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from console.test_tui_snapshots import STEPS, snapshot_at
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.crawl.snapshot import Counters, CrawlSnapshot
from crawldeck.core.policy.frontier import Frontier
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.storage.store import Store
from crawldeck.tui.history import CrawlHistory, ThroughputHistory
from crawldeck.tui.screens import (
    bar_rows,
    eta_text,
    fetches_in_flight,
    priority_bars,
    rate_label,
    status_bars,
    summary_text,
)
from crawldeck.tui.widgets import url_on_host

LAST = snapshot_at(STEPS)


def test_bars_are_drawn_in_eighths_of_a_cell() -> None:
    text = bar_rows([("a", 3, ""), ("bb", 1, ""), ("c", 0, "")], 4, 3 + 8 + 13).plain
    # 8-cell bars: 3/4 is 6 cells, 1/4 is 2 cells, 0 is none
    assert text.splitlines() == [
        "a  ██████         3  75%",
        "bb ██             1  25%",
        "c                 0   0%",
    ]
    one = bar_rows([("x", 1, ""), ("y", 63, "")], 64, 2 + 8 + 13).plain.splitlines()
    assert one[0] == "x ▏              1   2%"  # 1/64 of 8 cells: one eighth
    empty = bar_rows([("x", 0, "")], 0, 30).plain
    assert empty == "x " + " " * 15 + "       0"  # no share of nothing


def test_status_and_priority_bars_without_figures() -> None:
    c = Counters()
    assert [line.split() for line in status_bars(c, 40).plain.splitlines()] == [
        ["2xx", "0"], ["3xx", "0"], ["4xx", "0"], ["5xx", "0"], ["error", "0"],
    ]  # fmt: skip
    assert priority_bars(c, 40).plain.split() == ["spilled", "(SQLite)", "0"]


# ------------------------------------------------------------------ the run's history


def snap(at: float, pages: int, size: int) -> CrawlSnapshot:
    return CrawlSnapshot(at, 0.0, "running", Counters(pages=pages, bytes=size), 0.0, 0.0, 10.0,
                         None, (), (), (), ())  # fmt: skip


def test_history_doubles_its_buckets_when_the_run_outgrows_them() -> None:
    history = CrawlHistory(points=4)
    for second in range(9):  # 1 page in second 1, 2 in second 2, ...
        history.add(snap(100.0 + second, second * (second + 1) // 2, 0))
    # 8 seconds of growth: 4 buckets of 1 s would not hold them, 4 of 2 s do
    assert history.bucket_s == 2.0
    assert history.pages == [1 + 2, 3 + 4, 5 + 6, 7 + 8]
    assert history.pages_per_s() == [1.5, 3.5, 5.5, 7.5]
    assert history.span_s == 8.0


def test_the_charts_count_pages_as_recorded_not_as_committed() -> None:
    """20 pages/s recorded steadily, committed a second at a time just after each
    bucket's end: every point of both charts is 20, not 40 and 0 in turn (issue #25
    trial 10: a steady 6.3/s drew "peak 12.7 · mean 4.9")."""
    run, recent = CrawlHistory(), ThroughputHistory(points=4)
    for tick in range(41):  # 10 s in quarters
        at = 100.0 + tick / 4
        committed = 20 * math.floor((tick - 1) / 4) if tick else 0  # 0.25 s late
        shown = replace(snap(at, max(0, committed), 0), pages_fetched=5 * tick,
                        bytes_fetched=5000 * tick)  # fmt: skip
        run.add(shown)
        recent.add(shown)
    assert run.pages_per_s() == [20.0] * 10
    assert run.bytes_per_s() == [20_000.0] * 10
    assert list(recent.pages) == [20.0] * 4


def test_history_knows_how_far_into_the_run_it_began() -> None:
    """An attached console's first snapshot comes 100 s into the run: the history
    says from when it counts (issue #25 trial 9: "0:00:01" beside 0:00:42 elapsed)."""
    history = CrawlHistory()
    for second in range(3):
        history.add(snap(100.0 + second, second, 0))
    assert (history.from_s, history.span_s) == (100.0, 2.0)
    own = CrawlHistory()
    own.add(replace(snap(100.0, 0, 0), started_at=99.5))
    assert own.from_s == 0.5


@given(
    steps=st.lists(
        st.tuples(st.floats(0.01, 700.0), st.integers(0, 50), st.integers(0, 10**6)),
        max_size=80,
    ),
    points=st.integers(2, 16),
)
def test_history_spreads_each_interval_over_the_buckets_it_covers(
    steps: list[tuple[float, int, int]], points: int
) -> None:
    history = CrawlHistory(points=points)
    at, pages, size = 1000.0, 7, 0
    history.add(snap(at, pages, size))
    intervals: list[tuple[float, float, int, int]] = []
    for gap, more_pages, more_bytes in steps:
        intervals.append((at - 1000.0, at + gap - 1000.0, more_pages, more_bytes))
        at, pages, size = at + gap, pages + more_pages, size + more_bytes
        history.add(snap(at, pages, size))
    assert len(history.pages) <= points
    assert history.bucket_s in {2.0**k for k in range(64)}
    assert sum(history.pages) == pytest.approx(pages - 7)
    assert sum(history.bytes) == pytest.approx(size)
    # each bucket (b, b + 1] holds every interval's share of its time in it
    width = history.bucket_s
    model = [0.0] * len(history.pages)
    for begin, end, more, _ in intervals:
        for b in range(len(model)):
            overlap = min(end, (b + 1) * width) - max(begin, b * width)
            model[b] += more * max(0.0, overlap) / (end - begin)
    assert history.pages == pytest.approx(model, abs=1e-6)


def test_late_snapshots_across_a_bucket_end_give_no_false_peak() -> None:
    """Snapshots of a steady 10 pages/s that come late across a second's end: each
    second still shows 10/s (ended-in buckets showed 0 and 20: the chart's peak was
    twice the rate; issue #25)."""
    history = CrawlHistory()
    for at in (0.0, 0.9, 2.1, 2.9, 4.1, 5.0):
        history.add(snap(100.0 + at, round(at * 10), 0))
    assert history.pages_per_s() == pytest.approx([10.0] * 5)
    mean = history.mean_pages_per_s()
    assert rate_label("pages/s", history.pages_per_s(), mean, lambda v: f"{v:.1f}").plain == (
        "pages/s  peak 10.0 · mean 10.0"
    )


def test_the_run_means_leave_the_pauses_out() -> None:
    """10 pages/s for 4 s, paused 4 s, 10 pages/s for 4 s again: the mean is 10/s, as
    the header's run average (which leaves paused time out) says, not 6.7 (issue #25:
    the "This run" mean counted paused seconds as seconds of 0/s)."""
    history = CrawlHistory()
    pages = 0
    for second in range(13):
        paused = 4 < second <= 8
        if second and not paused:
            pages += 10
        history.add(replace(snap(100.0 + second, pages, pages * 1000),
                            state="paused" if paused else "running"))  # fmt: skip
    assert history.pages_per_s() == [10.0] * 4 + [0.0] * 4 + [10.0] * 4
    assert history.mean_pages_per_s() == pytest.approx(10.0)
    assert history.mean_bytes_per_s() == pytest.approx(10_000.0)
    many = CrawlHistory(points=4)  # halved twice: the crawl time merges with the pages
    for second in range(13):
        paused = 4 < second <= 8
        many.add(replace(snap(100.0 + second, 10 * min(second, 4) + 10 * max(0, second - 8)
                              , 0), state="paused" if paused else "running"))  # fmt: skip
    assert many.bucket_s == 4.0
    assert many.mean_pages_per_s() == pytest.approx(10.0)


# ------------------------------------------------------------------ the frontier figure


def entry(host: str, n: int, priority: int) -> FrontierEntry:
    url = f"http://{host}/{n}"
    return FrontierEntry(url=url, key=url, host=host, depth=0, priority=priority)


def test_frontier_counts_its_urls_per_priority() -> None:
    f = Frontier(priorities=3, max_back_queues=2)
    f.add(entry("a", 1, 0))
    f.add(entry("a", 2, 1))
    f.add(entry("b", 1, 1))
    f.add(entry("c", 1, 9))  # clamped to 2; waits in a front queue (no free slot)
    f.push_front(entry("d", 1, 0))
    f._check()
    assert f.by_priority() == (2, 2, 1)
    popped = f.pop(0.0)
    assert popped is not None
    assert f.by_priority()[popped.priority] == (2, 2, 1)[popped.priority] - 1
    f._check()
    f.demote("b")  # to the lowest front queue, its priority kept
    f._check()
    assert sum(f.by_priority()) == len(f) == 4
    assert f.drop_host("c") == 1
    f._check()
    assert f.by_priority()[2] == 0
    assert f.drop_host("b") == 1
    f._check()
    assert sum(f.by_priority()) == len(f) == 2


async def test_an_engine_snapshot_counts_the_seeds_at_priority_0(tmp_path: Path) -> None:
    store = Store(tmp_path / "crawl.db")
    try:
        engine = Engine(build_config({}), store)
        seeds = [f"http://127.0.0.1:9/{n}" for n in range(3)] + ["http://127.0.0.2:9/"]
        assert engine.add_seeds(seeds) == []
        counters = engine.snapshot().counters
        assert counters.queued_by_priority == (4,) + (0,) * 31  # opic-inlinks: 32 queues
        assert counters.spilled == 0 and counters.queued == 4
    finally:
        store.close()


def test_history_charts_only_the_buckets_that_are_over() -> None:
    history = CrawlHistory()
    history.add(snap(10.0, 0, 0))
    history.add(snap(10.5, 4, 400))  # half of the first second
    assert history.pages == [4] and history.pages_per_s() == [] and history.span_s == 0
    history.add(snap(11.0, 9, 900))  # the first second is over
    assert history.pages_per_s() == [9.0] and history.bytes_per_s() == [900.0]
    history.add(snap(11.25, 10, 1000))  # a quarter of the second: not charted yet
    assert history.pages == [9, 1] and history.pages_per_s() == [9.0]
    assert history.span_s == 1.0


def test_the_eta_is_that_of_the_first_budget_reached() -> None:
    # 3855 pages, 53 970 000 bytes after 120 s; 28.4 pages/s, 398 000 bytes/s
    assert eta_text(replace(LAST, max_pages=None)) is None  # no budget: no estimate
    assert eta_text(replace(LAST, max_time_s=300)) == "0:01:15"  # the pages' (75 s) first
    assert eta_text(replace(LAST, max_time_s=150)) == "0:00:30"  # 150 - 120 s
    # (60 000 000 - 53 970 000) / 398 000 = 15.2 s
    assert eta_text(replace(LAST, max_bytes=60_000_000)) == "0:00:15"
    assert eta_text(replace(LAST, max_bytes=50_000_000)) == "done"
    no_rate = replace(LAST, max_pages=None, max_bytes=60_000_000, bytes_per_s=0.0)
    assert eta_text(no_rate) == "-"
    assert eta_text(replace(no_rate, max_time_s=600)) == "0:08:00"  # the clock needs no rate
    summary = summary_text(replace(LAST, max_pages=None, max_time_s=600, max_bytes=10**8))
    lines = summary.plain.splitlines()
    assert lines[0] == "elapsed  0:02:00/0:10:00 · 28.4 pages/s · 398.0 kB/s (last 10 s)"
    assert lines[1] == "fetched  3855  (54.0 MB/100.0 MB)"
    # in fewer cells bytes/s goes first, not the window (issue #25 trial 9)
    budgeted = replace(LAST, max_pages=None, max_time_s=600)
    assert summary_text(budgeted, 70).plain.splitlines()[0] == lines[0]
    assert summary_text(budgeted, 60).plain.splitlines()[0] == (
        "elapsed  0:02:00/0:10:00 · 28.4 pages/s (last 10 s)"
    )


def test_fetches_in_flight_leave_out_the_renders() -> None:
    """The header's and the overview's "in flight" count fetches: URLs in process less
    those rendering or waiting for a browser; with rendering off, every URL in process."""
    assert LAST.counters.in_flight == 5 and LAST.render is not None
    assert fetches_in_flight(LAST) == 5 - LAST.render.busy - LAST.render.queued == 3
    assert fetches_in_flight(replace(LAST, render=None)) == 5
    summary = summary_text(LAST).plain
    assert "frontier 540 queued · 3 in flight · 2 rendering" in summary
    assert "render   1/2 busy · 1 queued · 40 done · 1 cut · mem 182.0 MB" in summary


@pytest.mark.parametrize(
    ("url", "host", "shown"),
    [
        ("http://a.test:8080/x/y?q=1", "a.test:8080", "/x/y?q=1"),
        ("https://a.test", "a.test", "/"),
        ("https://a.test?q", "a.test", "?q"),
        ("https://a.test.evil/x", "a.test", "https://a.test.evil/x"),
        ("https://b.test/x", "a.test", "https://b.test/x"),
        ("not a url", "a.test", "not a url"),
    ],
)
def test_the_blocked_table_shows_a_url_by_its_path_on_the_row_host(
    url: str, host: str, shown: str
) -> None:
    assert url_on_host(url, host) == shown


def test_the_stop_reason_names_the_flag_and_its_value() -> None:
    """The console names a setting by its flag (issue #25: it said ``max_pages``)."""
    from crawldeck.tui.app import stop_reason

    snap = replace(snapshot_at(3), max_pages=50, max_time_s=600.0, max_bytes=5_000_000)
    assert stop_reason("max_pages", snap) == "--max-pages 50 reached"
    assert stop_reason("max_time", snap) == "--max-time 600s spent"
    assert stop_reason("max_bytes", snap) == "--max-bytes 5MB reached"
    assert stop_reason("stopped", snap) == "stopped on request, state saved"
