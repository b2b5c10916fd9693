"""The console's figures agree, and a parked host shows (issue #10, items 7 and 18).

The blocked total is on the Blocked tab's label, in the throughput panel and on the
Blocked tab itself: the three show one figure at every draw, although the tab label
changes at most once a second. A parked host shows as ``parked`` in the Hosts and
Backoff panels.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.text import Text
from textual.widgets import Static, TabbedContent

from console.test_tui_snapshots import BACKOFF, HOSTS, FakeEngine, settle, snapshot_at
from crawldeck.core.crawl.snapshot import CrawlSnapshot
from crawldeck.tui.app import CrawlApp, CrawlSource
from crawldeck.tui.screens import LogPanel
from crawldeck.tui.table import LineTable
from crawldeck.tui.widgets import fmt_clock

SIZE = (130, 40)


class Checking(CrawlApp):
    """The console, checking after every draw that its blocked figures agree."""

    def __init__(self, engine: CrawlSource, db: Path) -> None:
        super().__init__(engine, db)
        self.checked = 0
        self.seen: set[int] = set()

    def draw(self, snap: CrawlSnapshot) -> None:
        super().draw(snap)
        label = str(self.query_one(TabbedContent).get_tab("tab-blocked").label)
        in_label = int(label.split()[-1])
        summary = self.query_one("#summary", Static).content
        assert isinstance(summary, Text)
        line = next(x for x in summary.plain.splitlines() if x.startswith("blocked"))
        in_panel = int(line.split()[1])
        counts = self.query_one("#blocked-counts", Static).content
        in_tab = int(counts.plain.split()[0]) if isinstance(counts, Text) else in_label
        assert in_label == in_panel == in_tab, (label, line, counts)
        self.checked += 1
        self.seen.add(in_label)


async def test_the_blocked_figure_is_one_figure_everywhere() -> None:
    # snapshots whose blocked counts change at each one, drawn faster than the label
    # changes (once a second): every draw must still show one figure, and the labels'
    # trailing relabel (a second after the last) shows the last snapshot's
    snaps = [snapshot_at(i) for i in range(3, 90, 3)]
    engine = FakeEngine(snaps[:1])
    app = Checking(engine, Path("crawl.db"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")  # the Blocked tab is drawn while shown
        await settle(pilot)
        for snap in snaps:
            for callback in engine.subscribers:  # the crawl publishes it: the latest
                callback(snap)
            app.draw(snap)
            await pilot.pause(0.05)
        await settle(pilot)
    assert app.checked >= len(snaps)
    assert max(app.seen) == sum(snaps[-1].counters.blocked.values())


async def test_a_parked_host_shows_in_the_hosts_and_backoff_panels() -> None:
    parked_host = replace(HOSTS[2], state="parked", delay_source="rate_limit")
    snap = replace(
        snapshot_at(5),
        hosts=(HOSTS[0], HOSTS[1], parked_host),
        backoff=(replace(BACKOFF[0], parked=True), BACKOFF[1]),
    )
    app = CrawlApp(FakeEngine([snap]), Path("crawl.db"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        hosts = app.query_one("#hosts-table", LineTable)
        row = hosts._cells[hosts.row_keys.index(parked_host.host)]
        assert "parked" in [str(cell) for cell in row]
        assert "rate limit" in [str(cell) for cell in row]
        await pilot.press("2")
        await settle(pilot)
        backoff = app.query_one("#backoff-table", LineTable)
        states = {key: str(cells[-1]) for key, cells in zip(backoff.row_keys, backoff._cells,
                                                             strict=True)}  # fmt: skip
        assert states == {BACKOFF[0].host: "parked", BACKOFF[1].host: "demoted"}


async def test_a_backoff_time_passed_is_not_shown_as_a_clock_in_the_past() -> None:
    """A parked host whose last backoff ended shows neither the time it ended nor a
    countdown (the trial's console showed a 'backoff until' long past); a host still
    waiting shows both, and one whose backoff just ended shows ``now``."""
    snap = snapshot_at(5)
    waiting = replace(BACKOFF[0], backoff_until=snap.at + 42, parked=False)
    parked = replace(BACKOFF[1], backoff_until=snap.at - 600, parked=True)
    ready = replace(BACKOFF[2], backoff_until=snap.at - 1, parked=False)
    app = CrawlApp(FakeEngine([replace(snap, backoff=(waiting, parked, ready))]), Path("c.db"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot)
        table = app.query_one("#backoff-table", LineTable)
        cells = {key: [str(c) for c in row] for key, row in zip(table.row_keys, table._cells,
                                                                 strict=True)}  # fmt: skip
    # columns: host, attempt, last status, Retry-After, until, left, state
    assert cells[waiting.host][4:6] == [fmt_clock(snap.at + 42), "42s"]
    assert cells[parked.host][4:] == ["-", "-", "parked"]
    assert cells[ready.host][4:6] == ["-", "now"]


async def test_a_log_line_wider_than_the_terminal_wraps_whole() -> None:
    """At 80 columns a 190-character log line is all there, wrapped, not cut."""
    line = "12:00:00 www.example.org: retry 1 of http://www.example.org/" + "a/" * 50 + " (x)"
    assert len(line) > 160
    app = CrawlApp(FakeEngine([replace(snapshot_at(5), log=(line,))]), Path("c.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        await settle(pilot)
        log = app.query_one("#log", LogPanel)
        shown = [strip.text.rstrip() for strip in log.lines]
    assert len(shown) >= 3 and max(map(len, shown)) <= 80
    assert "".join(shown).replace(" ", "") == line.replace(" ", "")
