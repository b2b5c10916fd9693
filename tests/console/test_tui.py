"""The console through Textual's Pilot: every key, the host detail, the refresh rate,
and one end-to-end crawl of the local web in a headless terminal."""

from __future__ import annotations

import asyncio
import csv
import os
import signal
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from rich.text import Text
from textual import events
from textual.keys import _character_to_key
from textual.notifications import SeverityLevel
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Input, Static, TabbedContent

from console.test_tui_snapshots import HOSTS, FakeEngine, settle, snapshot_at
from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.crawl.snapshot import CrawlSnapshot, CrawlState, HostDetail
from crawldeck.core.storage.store import Store
from crawldeck.localweb import LocalWeb
from crawldeck.tui import app as app_module
from crawldeck.tui.app import CrawlApp, CrawlSource, run_console
from crawldeck.tui.host_detail import HostDetailScreen, ResponsesTable
from crawldeck.tui.screens import AddSeedScreen, HelpScreen
from crawldeck.tui.table import LineTable
from crawldeck.tui.widgets import EVERY_HOST_UP_TO, EXPORT_TABLES, BlockedPanel

SIZE = (120, 36)


class RecordingApp(CrawlApp):
    """The console, recording what it drew and told the operator."""

    def __init__(
        self, engine: CrawlSource, db: Path, seed_command: tuple[str, tuple[str, ...]] | None = None
    ) -> None:
        super().__init__(engine, db, seed_command=seed_command)
        self.draws = 0
        self.messages: list[str] = []
        self.hosts_seen: set[str] = set()
        self.states: list[str] = []
        self.backoff_seen: set[str] = set()
        self.most_by_priority: tuple[int, ...] = ()  # the most seen at each priority

    def draw(self, snap: CrawlSnapshot) -> None:
        super().draw(snap)
        self.draws += 1
        self.hosts_seen |= {row.host for row in self.hosts_panel.rows()}
        self.states.append(self.display_state())
        self.backoff_seen |= {row.host for row in snap.backoff}
        c = snap.counters
        # the frontier's depth per priority and the spilled URLs add up to the queue
        assert sum(c.queued_by_priority) + c.spilled == c.queued
        most = self.most_by_priority or (0,) * len(c.queued_by_priority)
        self.most_by_priority = tuple(map(max, most, c.queued_by_priority))

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        self.messages.append(message)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)


def recording_app(
    *,
    finish: bool = False,
    db: Path = Path("crawl.db"),
    seed_command: tuple[str, tuple[str, ...]] | None = None,
) -> RecordingApp:
    snaps = [snapshot_at(i) for i in range(31)]
    if finish:
        snaps[-1] = replace(snaps[-1], state="finished", hosts=())
    return RecordingApp(FakeEngine(snaps, finish=finish), db, seed_command)


def footer_actions(app: CrawlApp) -> set[str]:
    """The actions of the keys the footer offers now."""
    return {b.binding.action for b in app.active_bindings.values() if b.binding.show}


def status_text(app: CrawlApp) -> str:
    content = app.query_one("#status", Static).content
    return content.plain if isinstance(content, Text) else str(content)


def fake(app: CrawlApp) -> FakeEngine:
    assert isinstance(app.engine, FakeEngine)
    return app.engine


def focused(app: CrawlApp) -> Widget | None:
    """The focused widget now: a call, as the focus moves between awaits (mypy would keep
    ``app.focused`` narrowed to the first widget compared with it)."""
    return app.focused


def table_hosts(app: CrawlApp, table_id: str = "#hosts-table") -> list[str]:
    return list(app.query_one(table_id, LineTable).row_keys)


async def wait_until(pilot: Pilot[None], cond: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.05)


# ------------------------------------------------------------------ keys


async def test_p_pauses_and_resumes() -> None:
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "RUNNING" in status_text(app)
        await pilot.press("p")
        assert fake(app).paused and "PAUSED" in status_text(app)
        assert app.sub_title == "PAUSED"
        await pilot.press("p")
        assert not fake(app).paused and "RUNNING" in status_text(app)


async def test_a_adds_a_valid_seed() -> None:
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("a")
        assert isinstance(app.screen, AddSeedScreen)
        await pilot.press(*"https://new.example/", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, AddSeedScreen)
        assert fake(app).seeds == ["https://new.example/"]
        assert fake(app).live_adds == 1  # the live path: its seen checks off the loop
        assert "Seed added: https://new.example/" in app.messages
        # a host without a scheme, as the command line takes it (issue #25 trial 10)
        await pilot.press("a", *"127.0.0.3:8713", "enter")
        await pilot.pause()
        assert fake(app).seeds[-1] == "http://127.0.0.3:8713/"  # as the crawl writes it
        assert "Seed added: http://127.0.0.3:8713/" in app.messages


async def test_a_shows_a_clear_error_and_esc_cancels() -> None:
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("a", "enter")
        error = app.screen.query_one("#seed-error", Static)
        assert "Enter a URL" in str(error.content)
        await pilot.press(*"mailto:x@y", "enter")
        assert isinstance(app.screen, AddSeedScreen)
        assert "Refused: not an http(s) URL" in str(error.content)
        await pilot.press("escape")
        assert not isinstance(app.screen, AddSeedScreen)
        assert fake(app).seeds == []


def type_fast(app: CrawlApp, keys: list[str]) -> None:
    """Post ``keys`` to ``app`` at once, as the terminal driver does with the keys of
    one read (``pilot.press`` waits for the app to be idle after each key)."""
    for key in keys:
        if len(key) == 1:
            app.post_message(events.Key(_character_to_key(key), key))
        else:
            app.post_message(events.Key(key, None))


async def test_keys_typed_fast_after_a_refusal_apply_in_order() -> None:
    # issue #25: 8 Backspaces and a URL typed fast after a refused seed read
    # "fohttp://localhost:8765/howt": the Backspaces bubbled to the app behind the
    # characters typed after them
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("a", *"foo bar", "enter")
        box = app.screen.query_one("#seed-input", Input)
        assert "Refused" in str(app.screen.query_one("#seed-error", Static).content)
        type_fast(app, ["backspace"] * 8 + list("http://localhost:8765/howto/"))
        await pilot.pause(0.5)
        assert box.value == "http://localhost:8765/howto/"
        type_fast(app, ["backspace"] * 6 + list("tutorial/") + ["enter"])
        await pilot.pause(0.5)
        assert fake(app).seeds == ["http://localhost:8765/tutorial/"]


async def test_keys_typed_fast_after_the_slash_go_to_the_filter() -> None:
    """``/`` and a filter typed in one write (a paste, tmux send-keys): every key goes
    to the filter box (issue #25 trial 9: "2" switched to the backoff tab and Enter
    opened a host's detail, the box's focus coming after them)."""
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        type_fast(app, [*"/8702", "enter"])
        await pilot.pause(0.5)
        assert app.query_one("#hosts-filter", Input).value == "8702"
        assert app.query_one(TabbedContent).active == "tab-hosts"
        assert not isinstance(app.screen, HostDetailScreen)
        # from another tab, and on the blocked tab its own filter; a / in a box is text
        await pilot.press("escape", "2")
        type_fast(app, [*"/shop"])
        await pilot.pause(0.5)
        assert app.query_one("#hosts-filter", Input).value == "shop"
        await pilot.press("escape", "3")
        type_fast(app, [*"/reason:robots/"])
        await pilot.pause(0.5)
        assert app.query_one("#blocked-filter", Input).value == "reason:robots/"


async def test_slash_filters_hosts_through_one_query(monkeypatch: pytest.MonkeyPatch) -> None:
    # a debounce no loaded machine's key gaps pass (0.3 s did: "sh" was asked first)
    monkeypatch.setattr(app_module, "FILTER_DEBOUNCE_S", 2.0)
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        fake(app).queries.clear()
        await pilot.press("slash")
        assert focused(app) is app.query_one("#hosts-filter", Input)
        await pilot.press(*"shop")
        await wait_until(pilot, lambda: table_hosts(app) == ["shop.example.net"], 30.0)
        assert fake(app).queries == [("shop", 100)]  # debounced: one query, not four
        await pilot.press("enter")
        assert focused(app) is app.query_one("#hosts-table", LineTable)
        # refreshes do not ask again
        app.draw(snapshot_at(30))
        assert fake(app).queries == [("shop", 100)]
        await pilot.press("slash", "ctrl+a", "ctrl+k", "escape")
        # every known host again: the snapshot's 11 and the one it leaves out
        await wait_until(pilot, lambda: len(table_hosts(app)) == 12)
        assert focused(app) is app.query_one("#hosts-table", LineTable)


async def test_hosts_info_says_the_busiest_host_of_one() -> None:
    """issue #25 item 7: one host shown read ``showing the 1 busiest`` (of more known
    hosts than the table shows every one of)."""
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        info = app.query_one("#hosts-info", Static)
        assert "12 known · 11 active · 3 in backoff — all shown, busiest first" in str(info.content)
        many = replace(snapshot_at(30).counters, hosts_known=EVERY_HOST_UP_TO + 1)
        one = replace(snapshot_at(30), hosts=HOSTS[:1], counters=many)
        for callback in fake(app).subscribers:  # the latest: a relabel draws it again
            callback(one)
        app.draw(one)
        await pilot.pause()
        assert "showing the busiest host, busiest first" in str(info.content)


async def test_slash_filters_blocked_by_reason_and_host() -> None:
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3", "slash")
        assert focused(app) is app.query_one("#blocked-filter", Input)
        await pilot.press(*"reason:robots")
        panel = app.query_one(BlockedPanel)
        assert panel.shown and {r.reason for r in panel.shown} == {"robots"}
        await pilot.press("ctrl+a", "ctrl+k", *"host:cdn")
        assert panel.shown and {r.host for r in panel.shown} == {"cdn.example.net"}
        await pilot.press("enter")
        assert focused(app) is app.query_one("#blocked-table", LineTable)
        assert app.query_one("#blocked-table", LineTable).row_count == len(panel.shown)


async def test_escape_cancels_a_filter_and_empties_its_box() -> None:
    """Esc in a filter box empties it and shows every row again (Enter keeps a filter),
    on both tabs that have one."""
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"shop")
        await wait_until(pilot, lambda: table_hosts(app) == ["shop.example.net"])
        await pilot.press("escape")
        assert app.query_one("#hosts-filter", Input).value == ""
        assert focused(app) is app.query_one("#hosts-table", LineTable)
        await wait_until(pilot, lambda: len(table_hosts(app)) == 12)
        await pilot.press("3", "slash", *"reason:robots")
        panel = app.query_one(BlockedPanel)
        assert {r.reason for r in panel.shown} == {"robots"}
        await pilot.press("escape")
        assert app.query_one("#blocked-filter", Input).value == ""
        assert panel.filter_text == ""
        assert len(panel.shown) == len(app.snapshot.blocked)
        assert len({r.reason for r in panel.shown}) > 1
        assert focused(app) is app.query_one("#blocked-table", LineTable)


async def test_enter_opens_the_host_detail_of_each_table() -> None:
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down", "enter")
        screen = app.screen
        assert isinstance(screen, HostDetailScreen) and screen.host == HOSTS[1].host
        text = " ".join(str(s.content) for s in screen.query(Static))
        assert "/private/press/" in text and "docs/page-0.html" in text
        responses = screen.query_one("#detail-responses", Static).content
        assert isinstance(responses, ResponsesTable) and len(responses.rows) == 4
        await pilot.press("escape")
        assert not isinstance(app.screen, HostDetailScreen)
        await pilot.press("2", "enter")
        assert isinstance(app.screen, HostDetailScreen)
        assert app.screen.host == "shop.example.net"
        await pilot.press("escape", "3", "enter")
        assert isinstance(app.screen, HostDetailScreen)
        assert app.screen.host == app.query_one(BlockedPanel).shown[0].host


async def test_detail_follows_the_snapshots() -> None:
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, HostDetailScreen)
        calls: list[str] = []
        engine = fake(app)
        original = engine.host_detail

        def spy(host: str, queue_head: int = 20) -> HostDetail | None:
            calls.append(host)
            return original(host, queue_head)

        # a spy in place of the method: mypy refuses assigning to a method
        engine.host_detail = spy  # type: ignore[method-assign]
        app.draw(snapshot_at(30))
        assert calls == [HOSTS[0].host]


async def test_s_and_r_sort_the_hosts() -> None:
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        hosts = table_hosts(app)
        assert hosts == sorted(hosts)
        await pilot.press("r")
        assert table_hosts(app) == sorted(hosts, reverse=True)
        await pilot.press(*"sss")  # queued, in_flight, fetched
        fetched = {row.host: row.fetched for row in HOSTS}
        shown = [fetched[h] for h in table_hosts(app)]
        assert shown == sorted(shown, reverse=True)
        assert app.hosts_panel.sort_column == "fetched"


async def test_digits_switch_tabs() -> None:
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tabs = app.query_one(TabbedContent)
        for key, tab in zip("2341", ("tab-backoff", "tab-blocked", "tab-log", "tab-hosts"),
                            strict=True):  # fmt: skip
            await pilot.press(key)
            assert tabs.active == tab


async def test_question_mark_shows_help() -> None:
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_e_exports_the_tables_next_to_the_db(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    Store(db).close()
    app = recording_app(db=db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await wait_until(pilot, lambda: app.last_export is not None)
        assert app.last_export is not None and app.last_export.parent == tmp_path
        assert app.last_export.name.startswith("crawl-export-")
        for table in EXPORT_TABLES:
            assert (app.last_export / f"{table}.csv").read_text().count("\n") == 1  # header
        await wait_until(pilot, lambda: any("Exported" in m for m in app.messages))


async def test_e_reports_a_failed_export(tmp_path: Path) -> None:
    app = recording_app(db=tmp_path / "missing.db")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await wait_until(pilot, lambda: any("Export failed" in m for m in app.messages))
        assert app.last_export is None


@pytest.mark.parametrize("key", ["q", "ctrl+c"])
async def test_q_and_ctrl_c_stop_the_crawl_then_quit(key: str) -> None:
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await pilot.pause()
        assert fake(app).stop_requested
    assert app.result is not None and app.result.outcome == "stopped"
    assert not app.is_running


async def test_finished_crawl_stays_open_until_q() -> None:
    app = recording_app(finish=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.result is not None)
        await pilot.pause(0.1)
        assert app.is_running and "FINISHED" in status_text(app)
        assert any("finished" in m for m in app.messages)
        assert len(table_hosts(app)) == len(HOSTS)  # every host's final row
        # issue #25 trial 15: the footer no longer offers p once the run has ended
        assert "toggle_pause" not in footer_actions(app)
        assert {"add_seed", "export", "quit"} <= footer_actions(app)
        await pilot.press("p")
        assert not fake(app).paused and "PAUSED" not in status_text(app)
        # issue #25: without the crawl's command (the demo), a answers at once, not
        # with a dialog that refuses later
        await pilot.press("a")
        assert not isinstance(app.screen, AddSeedScreen)
        assert app.messages[-1] == "The crawl is over: start a new crawl to add seeds."
        await pilot.press("q")
        await pilot.pause()
        assert not fake(app).stop_requested
    assert app.result is not None and app.result.outcome == "finished"


async def test_a_after_the_end_answers_a_url_with_the_command_that_adds_it() -> None:
    """Issue #25 trial 15: ``a`` after the end said so in a notice and opened no box, so
    the rest of a pasted URL went to the console's keys (``/`` opened the filter). The
    box opens, says at once the crawl is over, and gives the rerun with the URL."""
    command = ("crawldeck crawl", ("--db", "c.db", "seeds.txt"))
    app = recording_app(finish=True, seed_command=command)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.result is not None)
        assert "toggle_pause" not in footer_actions(app)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, AddSeedScreen))
        title = app.screen.query_one("#add-seed Static", Static).content
        assert str(title).startswith("The crawl is over")
        await pilot.press(*"127.0.0.3:8713/a?b=1&c", "enter")
        error = app.screen.query_one("#seed-error", Static)
        await wait_until(pilot, lambda: "run:" in str(error.content))
        assert str(error.content) == (
            "To add it, run: crawldeck crawl 'http://127.0.0.3:8713/a?b=1&c' --db c.db seeds.txt"
        )
        assert isinstance(app.screen, AddSeedScreen)  # the box stays: Esc closes it
        keys = app.screen.query_one("#seed-keys", Static).content
        assert str(keys) == "Enter shows the command, Esc closes."  # it adds nothing
        assert not app.query("#hosts-filter:focus")  # the keys went to the box
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, AddSeedScreen))
    assert fake(app).live_adds == 0


async def test_a_after_a_page_budget_gives_the_command_with_the_cap_raised() -> None:
    """Issue #25 trial 16: after ``--max-pages 400`` stopped the crawl, ``a`` gave the
    same command with ``--max-pages 400``, which fetched nothing: the cap is raised as
    the end's own line raises it (twice the cap, or what the file holds plus it)."""
    snaps = [snapshot_at(i) for i in range(31)]
    snaps[-1] = replace(snaps[-1], state="stopped", hosts=(), ended_at=snaps[-1].at)
    command = ("crawldeck crawl", ("--max-pages", "6000", "--db", "c.db"))
    app = RecordingApp(FakeEngine(snaps, finish="max_pages"), Path("c.db"), command)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.result is not None)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, AddSeedScreen))
        await pilot.press(*"http://127.0.0.3:8713/", "enter")
        error = app.screen.query_one("#seed-error", Static)
        await wait_until(pilot, lambda: "run:" in str(error.content))
        assert str(error.content) == (
            "To add it, run: crawldeck crawl http://127.0.0.3:8713/ --db c.db --max-pages 12000"
        )


# ------------------------------------------------------------------ refresh rate


async def test_a_burst_of_snapshots_is_drawn_once() -> None:
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.draws
        for step in range(200):
            fake(app)._publish(snapshot_at(step % 31))
        last = snapshot_at(199 % 31).at
        await wait_until(pilot, lambda: app.snapshot is not None and app.snapshot.at == last)
        await pilot.pause(0.3)
        assert 1 <= app.draws - before <= 2


async def test_at_most_four_draws_a_second() -> None:
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.draws
        start = time.monotonic()
        for step in range(40):  # 20 snapshots a second for 2 s
            fake(app)._publish(snapshot_at(step % 31))
            await asyncio.sleep(0.05)
        await pilot.pause(0.3)
        elapsed = time.monotonic() - start
        assert app.draws - before <= 4 * elapsed + 1


async def test_a_hundred_thousand_hosts_cost_no_walk() -> None:
    """100 000 known hosts: a refresh reads the snapshot's top rows only, no query."""
    big = [
        replace(
            snapshot_at(i),
            hosts=tuple(
                replace(HOSTS[j % len(HOSTS)], host=f"h{j}.example.com", queued=50 - j)
                for j in range(50)
            ),
            counters=replace(snapshot_at(i).counters, hosts_known=100_000, hosts_active=60_000),
        )
        for i in range(31)
    ]
    engine = FakeEngine(big)
    app = RecordingApp(engine, Path("crawl.db"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for snap in big:
            app.draw(snap)
        await pilot.pause()
        assert engine.queries == []
        assert len(table_hosts(app)) == 50
        assert "100000 known" in str(app.query_one("#hosts-info", Static).content)


async def test_line_table_keys_and_header_click() -> None:
    app = recording_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.query_one("#hosts-table", LineTable)
        await pilot.press("end")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("home", "down", "down")
        assert table.cursor_key == HOSTS[2].host
        await pilot.press("pagedown")
        assert table.cursor_row == table.row_count - 1
        await pilot.click("#hosts-table", offset=(4, 0))  # the "host" header
        assert app.hosts_panel.sort_column == "host"
        assert table_hosts(app) == sorted(table_hosts(app))
        await pilot.click("#hosts-table", offset=(4, 0))  # again: reversed
        assert table_hosts(app) == sorted(table_hosts(app), reverse=True)


# ------------------------------------------------------------------ run_console


async def test_run_console_sigterm_stops_like_q() -> None:
    engine = FakeEngine([snapshot_at(i) for i in range(5)])
    loop = asyncio.get_running_loop()
    loop.call_later(0.8, os.kill, os.getpid(), signal.SIGTERM)
    result = await asyncio.wait_for(
        run_console(engine, Path("crawl.db"), headless=True, size=SIZE), timeout=20
    )
    assert engine.stop_requested
    assert result is not None and result.outcome == "stopped"


# ------------------------------------------------------------------ end to end


def _blocked_counts(app: CrawlApp) -> dict[str, int]:
    content = app.query_one("#blocked-counts", Static).content
    assert isinstance(content, Text)
    words = content.plain.split()
    assert words[1] == "blocked"
    return {words[i]: int(words[i + 1]) for i in range(2, len(words) - 1, 2)}


async def test_console_crawls_the_local_web_to_the_end(tmp_path: Path) -> None:
    """The console over a real crawl of the local web until FINISHED, then e and q."""
    db = tmp_path / "crawl.db"
    with LocalWeb(delay_scale=0.2, busy_429_count=3, retry_after_s=1) as web:
        config = build_config(
            {
                "delay_ms": 20,
                "backoff_base_ms": 100,
                "concurrency": 8,
                "flush_interval_ms": 50,
                "snapshot_interval_ms": 250,
                # spa's /app/never never settles: its render is cut at this budget
                "render_timeout_ms": 3000,
                # busy's 429s teach a 1 s delay; 300 ms is enough to see it backed off
                "max_delay_ms": 300,
            }
        )
        store = Store(db, flush_interval_ms=config.flush_interval_ms)
        try:
            engine = Engine(config, store)
            assert engine.add_seeds(web.seeds()) == []
            app = RecordingApp(engine, db)
            async with app.run_test(size=(130, 40)) as pilot:
                await wait_until(pilot, lambda: app.result is not None, timeout_s=120)
                await pilot.pause(0.3)
                assert app.result is not None and app.result.outcome == "finished"
                assert app.is_running and "FINISHED" in status_text(app)
                seen_running = app.hosts_seen
                # every local host was on the hosts table while it was crawled
                assert set(web.host_keys.values()) <= seen_running
                assert "RUNNING" in app.states and app.states[-1] == "FINISHED"
                conn = sqlite3.connect(db)
                try:
                    sql_blocked = dict(
                        conn.execute("SELECT reason, count(*) FROM blocked GROUP BY reason")
                    )
                    sql_pages = dict(conn.execute("SELECT host, count(*) FROM pages GROUP BY host"))
                    (broken,) = conn.execute("SELECT count(*) FROM broken_links").fetchone()
                finally:
                    conn.close()
                final = {row.host: row.fetched for row in app.hosts_panel.rows()}
                assert final == sql_pages
                # the end says how many links are broken (its redirect loop's, at least)
                assert broken > 0
                said = f"The crawl has finished; {broken} broken links (listed when you quit)."
                assert any(m.startswith(said) for m in app.messages), app.messages
                await pilot.press("3")  # the blocked tab is drawn when shown
                assert _blocked_counts(app) == sql_blocked
                assert {"calendar", "robots", "redirect_loop"} <= sql_blocked.keys()
                assert sum(app.history.pages) > 0  # the chart moved
                # the run's chart holds every page of the run (a new file: from 0)
                assert round(sum(app.run_history.pages), 6) == app.result.counters.pages
                # the default ordering (opic-inlinks): seeds queued at priority 0,
                # links in the importance bands below it (the last queue is the demoted)
                most = app.most_by_priority
                assert len(most) == 32 and most[0] > 0 and sum(most[1:-1]) > 0
                assert web.host_keys["busy"] in app.backoff_seen  # its 429s showed
                await pilot.press("e")
                await wait_until(pilot, lambda: app.last_export is not None, timeout_s=20)
                assert app.last_export is not None
                with (app.last_export / "blocked.csv").open(newline="") as f:
                    exported = Counter(row["reason"] for row in csv.DictReader(f))
                assert dict(exported) == sql_blocked
                await pilot.press("q")
                await pilot.pause()
            assert not app.is_running
        finally:
            store.close()


async def test_an_ended_crawl_calls_no_host_active() -> None:
    """issue #25 item 7: after the end the summary and the hosts line said ``2 known ·
    2 active``; they now count the hosts with URLs left, and no backoff."""
    from crawldeck.tui.screens import summary_text

    running = summary_text(snapshot_at(10)).plain
    assert "hosts    12 known · 11 active · 3 backoff" in running
    ended: tuple[CrawlState, ...] = ("finished", "stopped")
    for state in ended:
        over = summary_text(snapshot_at(10, state=state)).plain
        assert "hosts    12 known · 11 with URLs left\n" in over
    app = recording_app(finish=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.result is not None)
        await pilot.pause()
        info = str(app.query_one("#hosts-info", Static).content)
        assert info.startswith("12 known · 11 with URLs left — final rows of "), info
        # a filter that finds nothing says so (issue #25 trial 10: "final rows of 0 hosts")
        await pilot.press("slash", *"nosuchhost")
        # the whole filter typed: "no host" shows from "nosuc" on, before the last keys
        # are read (a run on four test workers read 'nosuchhos')
        await wait_until(
            pilot, lambda: "'nosuchhost'" in str(app.query_one("#hosts-info", Static).content)
        )
        info = str(app.query_one("#hosts-info", Static).content)
        assert "— no host matches 'nosuchhost'," in info, info
