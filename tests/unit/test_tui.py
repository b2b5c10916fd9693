"""The console through Textual's Pilot: every key, the host detail, the refresh rate,: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/console/test_tui.py``, ``tests/loopback/test_tui.py``."""

from __future__ import annotations

from dataclasses import replace

import pytest
from console.test_tui_snapshots import HOSTS, detail_of, snapshot_at
from rich.console import Console

from crawldeck.tui.widgets import fmt_countdown, fmt_duration


def test_formatting() -> None:
    assert fmt_duration(3725.9) == "1:02:05"
    assert [fmt_countdown(s) for s in (None, 0.0, 1.25, 42.0, 185.0)] == [
        "-", "now", "1.2s", "42s", "3m05s"]  # fmt: skip


def test_summary_shows_the_render_pool() -> None:
    from crawldeck.core.render_types import RenderStats
    from crawldeck.tui.screens import summary_text

    snap = snapshot_at(0)
    assert "render   off" in summary_text(replace(snap, render=None)).plain
    stats = RenderStats(
        available=True, reason="", size=2, busy=1, idle=1, queued=3, browsers=2,
        rendered=42, timed_out=2, failed=1, blocked=5, skipped=9, launches=2, recycles=0,
        rss_bytes=900_000_000, pss_bytes=550_000_000, memory_age_s=0.4,
    )  # fmt: skip
    line = summary_text(replace(snap, render=stats)).plain.splitlines()[-1]
    assert line == "render   1/2 busy · 3 queued · 42 done · 2 cut · 1 failed · mem 550.0 MB"


def test_summary_shows_duplicates_once_there_are_some() -> None:
    from crawldeck.tui.screens import summary_text

    snap = snapshot_at(0)
    assert "dupes" not in summary_text(snap).plain
    counters = replace(snap.counters, duplicates=7, near_duplicates=2)
    lines = summary_text(replace(snap, counters=counters)).plain.splitlines()
    assert lines[2] == "dupes    7 exact · 2 near"


def test_eta_says_paused_while_the_crawl_is_paused() -> None:
    """issue #25 item 7: the rates fall while a paused crawl fetches nothing, so the
    ETA grew with the pause; the header and the summary now say ``ETA paused``."""
    from crawldeck.tui.screens import status_text as header_text
    from crawldeck.tui.screens import summary_text

    running = snapshot_at(10)
    assert "ETA 0:" in header_text("RUNNING", "crawl.db", running, 80).plain
    paused = snapshot_at(10, state="paused")
    assert " · ETA paused" in header_text("PAUSED", "crawl.db", paused, 80).plain
    assert summary_text(paused).plain.splitlines()[1].endswith("% ETA paused")


def test_hosts_table_counts_fetches_in_flight_as_the_header_does() -> None:
    """issue #25 item 7: ``infl`` counts a host's fetches, not its pages rendering
    (``HostRow.rendering``), as the header does; the host detail says both."""
    from crawldeck.tui.host_detail import _detail_summary
    from crawldeck.tui.widgets import HOST_COLUMNS, host_cells

    row = replace(HOSTS[0], in_flight=1, rendering=2)
    cells = dict(zip((c.key for c in HOST_COLUMNS), host_cells(row, False), strict=True))
    assert str(cells["in_flight"]) == "1"
    detail = detail_of(row)
    console = Console(width=120, record=True)
    console.print(_detail_summary(detail, False))
    assert "412 queued · 1 in flight · 2 rendering · 830 fetched" in console.export_text()


@pytest.mark.parametrize("width", [60, 80, 86, 95, 120, 160])
def test_the_header_leaves_out_whole_figures_where_it_is_narrow(width: int) -> None:
    """issue #25 item 7 (trial 14): at 80x24 the header ended ``· q…``, ``queued`` cut in
    the middle. After the fetches in flight, a figure is shown whole or not at all, the
    ETA first, then the queue, then the bytes a second; the fetches in flight always."""
    from crawldeck.tui.screens import fetches_in_flight
    from crawldeck.tui.screens import status_text as header_text

    snap = snapshot_at(10)
    header = header_text("RUNNING", "crawl.db", snap, width).plain
    whole = header_text("RUNNING", "crawl.db", snap, 1000).plain
    assert f"in flight {fetches_in_flight(snap)}" in header
    assert len(header) <= width or header.endswith(f"in flight {fetches_in_flight(snap)}")
    figures = whole.removeprefix(" crawldeck ").split(" · ")
    shown = header.removeprefix(" crawldeck ").split(" · ")
    assert shown == figures[: len(shown)]  # whole figures, in order, none cut
    assert len(shown) == len(figures) or len(header) + len(f" · {figures[len(shown)]}") > width
