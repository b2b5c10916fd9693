"""The console at 80 x 24 and 160 x 48, its figures, the help generated from the
bindings and the resume command (issue #14, items 9 and 10), through Textual's Pilot
over ``FakeEngine`` (the fixed two-minute crawl of ``test_tui_snapshots``).

The values asserted are the widgets' contents (header text, table lines as drawn,
the bars' lines, the chart's points), computed from the fake crawl's snapshots.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.text import Text
from test_tui_snapshots import HOSTS, RESUME, STEPS, FakeEngine, fake_app, settle, snapshot_at
from textual.binding import Binding, BindingType
from textual.widgets import Sparkline, Static, TabbedContent

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import CrawlResult, Engine, Outcome
from crawldeck.core.crawl.snapshot import Counters, CrawlSnapshot
from crawldeck.core.policy.frontier import Frontier
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.storage.store import Store
from crawldeck.tui import app as app_module
from crawldeck.tui.app import CrawlApp
from crawldeck.tui.screens import (
    CrawlHistory,
    HelpScreen,
    OverviewPanel,
    bar_rows,
    eta_text,
    fetches_in_flight,
    priority_bars,
    status_bars,
    summary_text,
)
from crawldeck.tui.table import LineTable
from crawldeck.tui.widgets import HOST_COLUMNS, url_on_host

LAST = snapshot_at(STEPS)


def plain(app: CrawlApp, selector: str) -> str:
    content = app.query_one(selector, Static).content
    return content.plain if isinstance(content, Text) else str(content)


def table_line(table: LineTable, y: int) -> str:
    """Line ``y`` of a table as drawn (0: the header)."""
    return table.render_line(y).text


# ------------------------------------------------------------------ 80 x 24


async def test_80x24_keeps_the_header_eta_and_the_hosts_key_columns() -> None:
    app = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        status = plain(app, "#status")
        # the header's first 80 cells: state, file, pages, pages/s, the fetches in
        # flight (5 URLs in process less 1 rendering and 1 waiting for a browser), ETA
        assert status[:80].startswith(
            " RUNNING   crawl.db  pages 3855/6000 · 28.4/s · in flight 3 · ETA 0:01:15 · queu"
        )
        assert eta_text(LAST) == "0:01:15"  # (6000 - 3855) / 28.4 s
        # no chart at 80 x 24: the figures take the panel's width
        assert not app.query_one("#charts").display
        summary = plain(app, "#summary").splitlines()
        assert summary[0] == "elapsed  0:02:00 · 28.4 pages/s · 398.0 kB/s (last 10 s)"
        assert summary[1].endswith("64% ETA 0:01:15")
        assert summary[2].split() == [
            "status", "2xx", "3374", "3xx", "385", "4xx", "96", "5xx", "15", "error", "12",
        ]  # fmt: skip
        table = app.query_one("#hosts-table", LineTable)
        assert table.scrollable_content_region.width == 79  # 80 less the scroll bar
        header = table_line(table, 0)
        assert header.split() == [
            "host", "queue", "infl", "fetched", "err", "delay", "next", "robots.txt",
        ]  # fmt: skip
        first = table_line(table, 1).split()
        assert first == ["docs.example.org", "412", "1", "830", "2", "1000", "0.4s", "fetched"]
        # the sixth row: a host name of 18 characters, whole; robots.txt in full
        assert table_line(table, 6).split() == [
            "legacy.example.org", "20", "0", "121", "14", "8000", "7.6s", "5xx", "audit",
        ]  # fmt: skip


async def test_arrows_scroll_the_other_columns_past_a_fixed_host_column() -> None:
    app = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.query_one("#hosts-table", LineTable)
        await pilot.press("right")
        header = table_line(table, 0).split()
        assert header[:3] == ["host", "infl", "fetched"]  # one column (queue) scrolled away
        await pilot.press(*["right"] * 10)  # stops at the last column
        assert table.scroll_x == table.max_scroll_x > 0
        header = table_line(table, 0).split()
        assert header[0] == "host" and header[-3:] == ["from", "tok", "IP"]
        assert table_line(table, 1).split()[-3:] == ["Crawl-delay", "3.2", "-"]
        await pilot.press(*["left"] * 10)
        assert table.scroll_x == 0
        assert table_line(table, 0).split()[:2] == ["host", "queue"]
        await pilot.press("right")
        # a click on a header sorts by the column drawn there, fixed or scrolled
        await pilot.click("#hosts-table", offset=(22, 0))  # infl: after host's 20 cells
        assert app.hosts_panel.sort_column == "in_flight"
        await pilot.click("#hosts-table", offset=(19, 0))  # host's last cell, not queue's
        assert app.hosts_panel.sort_column == "host"


async def test_the_host_column_takes_the_room_a_wide_terminal_leaves() -> None:
    app = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.query_one("#hosts-table", LineTable)
        assert table.columns[0].width == 18
        await pilot.resize_terminal(130, 40)
        await pilot.pause()
        # 130 less the other columns (96 cells), a cell each side and the scroll bar
        assert table.columns[0].width == 130 - 96 - 3
        await pilot.resize_terminal(200, 50)
        await pilot.pause()
        assert table.columns[0].width == 32
        assert [c.key for c in table.columns] == [c.key for c in HOST_COLUMNS]


# ------------------------------------------------------------------ 160 x 48


async def test_160x48_shows_the_run_chart_the_status_bars_and_the_frontier() -> None:
    app = fake_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        overview = app.query_one(OverviewPanel)
        assert overview.display
        assert app.query_one("#charts").display  # the 3-minute chart as well
        # the run's chart: one point a second, each the pages of that second
        pages = app.query_one("#run-pages-chart", Sparkline).data
        waves = [20 + (i * 37) % 25 for i in range(STEPS)]
        assert pages == [float(n) for n in waves]
        sizes = app.query_one("#run-bytes-chart", Sparkline).data
        assert sizes == [n * 14_000.0 for n in waves]
        mean = sum(waves) / STEPS
        assert plain(app, "#run-pages-label") == f"pages/s  peak 44.0 · mean {mean:.1f}"
        assert overview.query_one("#run-chart").border_subtitle == "0:02:00, 1 s per point"
        # the status mix: every class, its count and share of the 3882 pages classed
        mix = LAST.counters.status_mix
        total = sum(mix.values())
        lines = plain(app, "#status-bars").splitlines()
        assert [line.split()[0] for line in lines] == ["2xx", "3xx", "4xx", "5xx", "error"]
        for line, key in zip(lines, ("2xx", "3xx", "4xx", "5xx", "error"), strict=True):
            count, share = line.split()[-2:]
            assert int(count) == mix[key]
            assert share == f"{100 * mix[key] / total:.0f}%"
        # the frontier (opic-inlinks): 12 seeds at priority 0, 393 links over bands 15
        # (an eighth), 16 (a half) and 17, 135 spilled; only the bands that hold URLs
        lines = plain(app, "#frontier-bars").splitlines()
        assert [line.split()[-2:] for line in lines] == [
            ["12", "2%"], ["49", "9%"], ["196", "36%"], ["148", "27%"], ["135", "25%"],
        ]  # fmt: skip
        assert lines[0].startswith("0 seeds, cash x in^2 >= 2^30 ")
        assert lines[1].startswith("15 cash x in^2 >= 2^0 ")
        assert lines[3].startswith("17 cash x in^2 >= 2^-4 ")
        assert lines[4].startswith("spilled (SQLite) ")
        # the bars fit their box
        box = app.query_one("#frontier-bars", Static)
        assert max(len(line) for line in lines) <= box.size.width


async def test_120x36_has_the_3_minute_chart_and_no_overview() -> None:
    app = fake_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert app.query_one("#charts").display
        assert not app.query_one(OverviewPanel).display
        assert app.query_one("#throughput").border_title == "Throughput · last 3 min"


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


@given(
    steps=st.lists(
        st.tuples(st.floats(0.01, 700.0), st.integers(0, 50), st.integers(0, 10**6)),
        max_size=80,
    ),
    points=st.integers(2, 16),
)
def test_history_keeps_every_page_in_the_bucket_its_interval_ends_in(
    steps: list[tuple[float, int, int]], points: int
) -> None:
    history = CrawlHistory(points=points)
    at, pages, size = 1000.0, 7, 0
    history.add(snap(at, pages, size))
    ends: list[tuple[float, int, int]] = []
    for gap, more_pages, more_bytes in steps:
        at, pages, size = at + gap, pages + more_pages, size + more_bytes
        history.add(snap(at, pages, size))
        ends.append((at - 1000.0, more_pages, more_bytes))
    assert len(history.pages) <= points
    assert history.bucket_s in {2.0**k for k in range(64)}
    assert sum(history.pages) == pages - 7 and sum(history.bytes) == size
    model_pages = [0] * len(history.pages)
    for elapsed, more, _ in ends:  # bucket b holds what ended in (b, b + 1] buckets
        b = 0
        while (b + 1) * history.bucket_s < elapsed:
            b += 1
        model_pages[b] += more
    assert model_pages == history.pages


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


# ------------------------------------------------------------------ help


@pytest.mark.parametrize("key", ["question_mark", "f1"])
async def test_help_lists_every_key_in_force(key: str) -> None:
    app = fake_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        in_force = list(app.screen.active_bindings.values())
        await pilot.press(key)
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        rows = {keys: what for keys, what in help_screen.rows}
        for active in in_force:
            shown = app.get_key_display(active.binding)
            row = next(k for k in rows if shown in k.split(", "))
            binding = active.binding
            assert rows[row] in (binding.tooltip, binding.description), (shown, rows[row])
        assert rows["q, ^c, ^q"].startswith("quit: stop cleanly")
        assert rows["?, f1"] == "this help"
        assert rows["→"] == "Columns past the right edge"
        assert [rows[d] for d in "1234"] == ["Hosts tab", "Backoff tab", "Blocked tab", "Log tab"]
        close = help_screen.query_one("#help-close", Static).content
        assert isinstance(close, Text) and close.plain.strip() == "esc, q, ?, f1 closes this help."
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_the_help_of_an_ended_run_says_q_only_closes_the_console() -> None:
    """A new user's trial (issue #25): once FINISHED, the help still said q would stop
    cleanly and print the resume command."""
    app = fake_app(finish=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        while app.result is None:
            await pilot.pause(0.01)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        rows = dict(app.screen.rows)
        assert (
            rows["q, ^c, ^q"] == "quit: close the console (the run has ended, its state is saved)"
        )


async def test_enter_on_a_refused_hosts_row_says_why_there_is_no_detail() -> None:
    """A new user's trial (issue #25): Enter on a Blocked row of a host the crawl never
    queued (out of scope) said "Unknown host"."""
    app = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        engine = app.engine
        assert isinstance(engine, FakeEngine)
        engine.host_detail = lambda host, queue_head=20: None  # type: ignore[method-assign]
        await pilot.press("enter")
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert messages and messages[-1].startswith("No detail for ")
        assert messages[-1].endswith(": none of its URLs was queued (refused).")


class WithBell(CrawlApp):
    """The console with one more key: the help must list it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "bell", "Ring the bell", tooltip="ring the terminal's bell")
    ]


async def test_a_new_binding_is_in_the_help_without_more_work() -> None:
    app = WithBell(FakeEngine([snapshot_at(i) for i in range(5)]), Path("crawl.db"))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        assert ("b", "ring the terminal's bell") in app.screen.rows
        await pilot.press("f1")  # closes it
        assert not isinstance(app.screen, HelpScreen)


# ------------------------------------------------------------------ the resume command


class SlowStop(FakeEngine):
    """A fake crawl whose stop takes until ``done`` is set (in-flight fetches finishing)."""

    def __init__(self) -> None:
        super().__init__([snapshot_at(i) for i in range(5)])
        self.done = asyncio.Event()

    async def run(self) -> CrawlResult:
        result = await super().run()
        await self.done.wait()
        return result


async def test_q_shows_the_resume_command_while_the_run_stops() -> None:
    engine = SlowStop()
    app = CrawlApp(engine, Path("crawl.db"), resume_hint=RESUME)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not app.query_one("#resume").display
        await pilot.press("q")
        await pilot.pause()
        assert app.display_state() == "STOPPING"
        assert app.query_one("#resume").display
        assert plain(app, "#resume") == (
            f"Stopping: in-flight fetches finish, state is saved. {RESUME}"
        )
        engine.done.set()
        await pilot.pause(0.2)
    assert app.result is not None and app.result.outcome == "stopped"


GO_ON = ("To continue, run the same command with a higher {} (it counts every run of the "
         "crawl file, so the same cap fetches nothing more).")  # fmt: skip


@pytest.mark.parametrize(
    ("outcome", "reason", "hint"),
    [
        # a whole-crawl budget: the same command would stop at once, a higher cap goes on
        ("max_pages", "--max-pages 6000 reached", GO_ON.format("--max-pages")),
        ("max_time", "--max-time spent", RESUME),  # per run; the fake snapshot has no value
        ("max_bytes", "--max-bytes reached", GO_ON.format("--max-bytes")),
    ],
)
async def test_a_budget_stop_keeps_the_console_open_with_the_way_on(
    outcome: Outcome, reason: str, hint: str
) -> None:
    app = fake_app(finish=outcome)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.pause(0.1)
        assert app.result is not None and app.result.outcome == outcome
        assert app.is_running and app.display_state() == "STOPPED"
        assert plain(app, "#status").startswith(" STOPPED   crawl.db  pages")
        assert "ETA -" in plain(app, "#status")  # no estimate once the run is over
        assert plain(app, "#resume") == f"Stopped: {reason}; q quits. {hint}"
        await pilot.press("q")
        await pilot.pause()
    assert not app.is_running


async def test_a_finished_crawl_shows_no_resume_line() -> None:
    app = fake_app(finish=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.pause(0.1)
        assert app.display_state() == "FINISHED"
        assert not app.query_one("#resume").display
        # once the run has ended, the rates are the whole run's, not how it wound down
        # (3855 pages in 120 s), in the header and the throughput panel alike
        assert " pages 3855/6000 · 32.1/s average · in flight" in plain(app, "#status")
        summary = plain(app, "#summary").splitlines()
        assert summary[0] == "elapsed  0:02:00 · 32.1 pages/s (this run's average)"
        assert app.query_one(TabbedContent).active == "tab-hosts"
        assert {row.host for row in app.hosts_panel.rows()} == {row.host for row in HOSTS}


async def test_without_a_resume_command_the_stop_is_shown_alone() -> None:
    app = CrawlApp(FakeEngine([snapshot_at(i) for i in range(5)], finish="max_time"),
                   Path("crawl.db"))  # fmt: skip
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.pause(0.1)
        assert plain(app, "#resume") == "Stopped: --max-time spent; q quits."


async def test_the_dupes_row_makes_the_throughput_panel_a_line_taller() -> None:
    plain_snaps = [snapshot_at(i) for i in range(3)]
    last = plain_snaps[-1]
    dupes = replace(last, at=last.at + 1, counters=replace(last.counters, duplicates=2))
    engine = FakeEngine([*plain_snaps, dupes])
    app = CrawlApp(engine, Path("crawl.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.pause(0.1)
        summary = plain(app, "#summary").splitlines()
        assert summary[2] == "dupes    2 exact · 0 near"
        assert summary[-1].startswith("render   1/2 busy")  # the last row is not cut
        assert len(summary) == 8
        assert app.query_one("#throughput").outer_size.height == 8 + 2  # and the border


async def test_run_console_shows_the_hint_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    apps: list[CrawlApp] = []

    class Kept(CrawlApp):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            apps.append(self)

    monkeypatch.setattr(app_module, "CrawlApp", Kept)
    engine = SlowStop()
    seen: list[str] = []

    async def until(check: Callable[[], bool]) -> None:
        for _ in range(500):  # 10 s at most (a loaded machine)
            if check():
                return
            await asyncio.sleep(0.02)
        raise AssertionError("not within 10 s")

    async def stop_and_read() -> None:
        # as q: the run stops once the console runs (its SIGTERM handler is set then)
        await until(lambda: bool(apps) and apps[0].is_running)
        os.kill(os.getpid(), signal.SIGTERM)
        await until(lambda: apps[0].query_one("#resume").display)  # stopping
        seen.append(plain(apps[0], "#resume"))
        engine.done.set()

    hint = "resume with: crawldeck crawl seeds.txt --db crawl.db"
    driver = asyncio.create_task(stop_and_read())
    result = await asyncio.wait_for(
        app_module.run_console(
            engine, Path("crawl.db"), headless=True, size=(80, 24), resume_hint=hint
        ),
        timeout=20,
    )
    await driver
    assert result is not None and result.outcome == "stopped"
    assert seen == [f"Stopping: in-flight fetches finish, state is saved. {hint}"]


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
    assert lines[1] == "pages    3855  (54.0 MB/100.0 MB)"


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


async def test_the_overview_backoff_count_is_the_backoff_tab_rows() -> None:
    """One frame, one figure: a snapshot whose counters say no host is waiting out a
    backoff at this instant, while three hosts' last answers started one, shows 3 in
    the overview, the Backoff tab's label and its table alike."""
    app = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.draw(replace(LAST, counters=replace(LAST.counters, hosts_backoff=0)))
        await pilot.pause()
        assert "12 known · 11 active · 3 backoff" in plain(app, "#summary")
        assert str(app.query_one(TabbedContent).get_tab("tab-backoff").label) == "Backoff 3"
        await pilot.press("2")
        await settle(pilot)
        assert app.query_one("#backoff-table", LineTable).row_count == 3


class LateEngine(FakeEngine):
    """A ``FakeEngine`` whose snapshots come after the console drew its first one."""

    def __init__(self, snapshots: list[CrawlSnapshot], drawn: asyncio.Event) -> None:
        super().__init__(snapshots)
        self.drawn = drawn

    async def run(self) -> CrawlResult:
        await self.drawn.wait()
        return await super().run()


async def test_the_tab_labels_catch_up_when_the_snapshots_stop() -> None:
    """The console draws the first snapshot (1 URL blocked), then the engine publishes
    the rest in less than the labels' second and stops publishing: a second later the
    labels and the counts drawn with them show the last snapshot (40 blocked), not
    the first (the race behind a CI failure of the 80 x 24 snapshot)."""
    drawn = asyncio.Event()
    engine = LateEngine([snapshot_at(i) for i in range(STEPS + 1)], drawn)
    app = CrawlApp(engine, Path("crawl.db"))
    async with app.run_test(size=(120, 40)) as pilot:
        while app.snapshot is None:
            await pilot.pause(0.01)
        tab = app.query_one(TabbedContent).get_tab("tab-blocked")
        assert str(tab.label) == "Blocked 1"  # snapshot 0: one URL blocked
        drawn.set()
        while engine.published <= STEPS or app.snapshot.counters.pages != LAST.counters.pages:
            await pilot.pause(0.01)
        assert not app.drawing_settled  # the labels wait for their second
        await settle(pilot)
        assert str(tab.label) == "Blocked 40"
        assert "blocked  40 · " in plain(app, "#summary")


def test_the_stop_reason_names_the_flag_and_its_value() -> None:
    """The console names a setting by its flag (issue #25: it said ``max_pages``)."""
    from crawldeck.tui.app import stop_reason

    snap = replace(snapshot_at(3), max_pages=50, max_time_s=600.0, max_bytes=5_000_000)
    assert stop_reason("max_pages", snap) == "--max-pages 50 reached"
    assert stop_reason("max_time", snap) == "--max-time 600s spent"
    assert stop_reason("max_bytes", snap) == "--max-bytes 5000000 reached"
    assert stop_reason("stopped", snap) == "stopped on request, state saved"
