"""A new user's trial of the console: the glitches it found, through Textual's Pilot
over ``FakeEngine`` (the fixed crawl of ``test_tui_snapshots``).

1. a resumed run's first second drew the whole run's chart as full-height bars of 0;
2. a parked host (known, nothing queued) was left out of a Hosts table with room;
3. the host detail said the robots.txt status twice (``404 allow — missing (HTTP 404;
   404)``);
4. the ``next`` countdown ran on once the crawl was stopped (or paused);
5. the help placed the overview "below the tables" and listed Textual's own keys.
"""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.text import Text
from textual.widgets import Static

from console.test_tui_snapshots import (
    BACKOFF,
    HOSTS,
    T0,
    FakeEngine,
    detail_of,
    fake_app,
    settle,
    snapshot_at,
)
from crawldeck.core.crawl.snapshot import CrawlSnapshot, HostDetail, HostRow
from crawldeck.tui.app import CrawlApp
from crawldeck.tui.host_detail import HostDetailScreen
from crawldeck.tui.screens import HelpScreen, RateChart
from crawldeck.tui.table import LineTable
from crawldeck.tui.widgets import HOST_COLUMNS

NEXT = [c.key for c in HOST_COLUMNS].index("next")


def chart_lines(app: CrawlApp, selector: str) -> list[str]:
    """The lines of a chart as drawn on screen."""
    chart = app.query_one(selector, RateChart)
    return [chart.render_line(y).text for y in range(chart.size.height)]


def next_cells(app: CrawlApp) -> dict[str, str]:
    """The ``next`` column of the hosts table, by host."""
    table = app.query_one("#hosts-table", LineTable)
    return {key: str(cells[NEXT]) for key, cells in zip(table.row_keys, table._cells, strict=True)}


# ------------------------------------------------------------------ 1. the charts


async def test_a_resumed_run_charts_its_zero_pages_as_no_bars() -> None:
    """160 x 48 at the start of a resumed run: a second without a page. The run chart's
    one point of 0 drew full-height bars; the 3-minute chart's zeros a line of eighths."""
    start = snapshot_at(0)
    idle = replace(start, at=T0 + 1.5, pages_per_s=0.0, bytes_per_s=0.0)
    app = CrawlApp(FakeEngine([start, idle]), Path("crawl.db"))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        label = app.query_one("#run-pages-label", Static).content
        assert isinstance(label, Text) and "peak 0.0 · mean 0.0" in label.plain
        assert app.query_one("#run-pages-chart", RateChart).data == [0.0]
        for chart in ("#run-pages-chart", "#run-bytes-chart", "#pages-chart", "#bytes-chart"):
            lines = chart_lines(app, chart)
            assert lines and all(not line.strip() for line in lines), (chart, lines)


# ------------------------------------------------------------------ 2. every known host

PARKED = HostRow("127.0.0.1:8799", 0, 0, 0, 3, 1000, "backoff", 0.0, 0.0, "unknown", state="parked")


class ThreeHosts(FakeEngine):
    """Three known hosts: two busy ones in the snapshots, one parked (connection
    refused) that only the Backoff tab and the host query name."""

    ROWS = (*HOSTS[:2], PARKED)

    def query_hosts(self, text: str = "", limit: int = 50) -> tuple[HostRow, ...]:
        self.queries.append((text, limit))
        return tuple(row for row in self.ROWS if text in row.host)[:limit]

    def host_detail(self, host: str, queue_head: int = 20) -> HostDetail | None:
        row = next((r for r in self.ROWS if r.host == host), None)
        return None if row is None else detail_of(row)


def three_hosts(step: int) -> CrawlSnapshot:
    snap = snapshot_at(step)
    counters = replace(snap.counters, hosts_known=3, hosts_active=2, hosts_backoff=1)
    parked = replace(BACKOFF[1], host=PARKED.host, last_status=None, parked=True)
    return replace(snap, hosts=HOSTS[:2], counters=counters, backoff=(parked,))


async def test_a_parked_host_is_in_a_hosts_table_with_room() -> None:
    engine = ThreeHosts([three_hosts(i) for i in range(3)])
    app = CrawlApp(engine, Path("crawl.db"))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.query_one("#hosts-table", LineTable)
        assert table.row_keys == [HOSTS[0].host, HOSTS[1].host, PARKED.host]
        assert next_cells(app)[PARKED.host] == "parked"
        info = app.query_one("#hosts-info", Static).content
        assert isinstance(info, Text)
        assert info.plain.startswith("3 known · 2 active · 1 in backoff — all shown, busiest"), (
            info.plain
        )
        # asked for once per change of the hosts, not at every snapshot
        asks = len(engine.queries)
        app.draw(replace(three_hosts(2), at=three_hosts(2).at + 0.5))
        assert len(engine.queries) == asks


# ------------------------------------------------------------------ 3. robots.txt once


async def test_the_detail_view_shows_the_robots_line() -> None:
    row = replace(HOSTS[3], robots_status="missing")
    detail = replace(detail_of(row), robots_why="404", robots_http=404, robots_expires_in_s=3480.0)
    engine = FakeEngine([snapshot_at(i) for i in range(3)])
    engine.host_detail = lambda host, queue_head=20: detail  # type: ignore[method-assign]
    app = CrawlApp(engine, Path("crawl.db"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, HostDetailScreen)
        console = Console(width=120, record=True, file=io.StringIO())
        console.print(app.screen.query_one("#detail-summary", Static).content)
        text = console.export_text()
    line = next(x for x in text.splitlines() if x.startswith("robots.txt"))
    assert line.split(maxsplit=1)[1].rstrip() == "missing (HTTP 404), allow all · expires in 3480 s"
    assert line.count("404") == 1


# ------------------------------------------------------------------ 4. no countdown


async def test_the_next_countdown_stops_with_the_crawl() -> None:
    """STOPPED (a budget): every host's ``next`` is ``-`` (``parked`` stays), in the
    table and the host detail; running, they count down."""
    app = fake_app(finish="max_time", steps=5)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        while app.result is None:
            await pilot.pause(0.01)
        await settle(pilot)
        assert "STOPPED" in app.display_state()
        cells = next_cells(app)
        assert cells and set(cells.values()) == {"-"}, cells
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, HostDetailScreen)
        console = Console(width=120, record=True, file=io.StringIO())
        console.print(app.screen.query_one("#detail-summary", Static).content)
        assert "next fetch -" in console.export_text()


async def test_the_next_countdown_waits_while_paused() -> None:
    running = [snapshot_at(i) for i in range(3)]
    paused = [*running, replace(snapshot_at(3), state="paused")]
    app = CrawlApp(FakeEngine(running), Path("crawl.db"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        counting = next_cells(app)
        assert counting[HOSTS[0].host] == "0.4s"  # its next_fetch_in_s
    app = CrawlApp(FakeEngine(paused), Path("crawl.db"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert set(next_cells(app).values()) == {"-"}


# ------------------------------------------------------------------ 5. the help


async def test_the_help_places_the_overview_and_lists_only_crawldecks_keys() -> None:
    app = fake_app(steps=5)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        text = "".join(str(s.content) for s in screen.query(Static))
        assert "between the throughput panel and the tables" in text
        assert "below the tables" not in text
        keys = {key for keys, _ in screen.rows for key in keys.split(", ")}
        assert {"p", "q", "?", "/", "1"} <= keys
        assert not {"tab", "shift+tab", "super+c"} & keys, keys
