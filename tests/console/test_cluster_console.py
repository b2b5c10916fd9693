"""The cluster console (``tui/cluster_app.py``) through Textual's Pilot, over a fake
coordinator with canned ``ClusterSnapshot``s (UI logic: no Redis, no worker), and its
SVG pictures at 80x24 and 160x48.

Update the pictures after an intended change with
``pytest tests/console/test_cluster_console.py --snapshot-update`` and look at them
(``__snapshots__/test_cluster_console/*.svg``) before committing.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import Input, Static

from console.test_tui_snapshots import SnapCompare
from crawldeck.core.cluster.coordinator import ClusterSnapshot, Outcome, WorkerRow
from crawldeck.tui.cluster_app import (
    ClusterApp,
    CoordinatorLog,
    run_cluster_console,
)
from crawldeck.tui.screens import AddSeedScreen
from crawldeck.tui.table import LineTable

T0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
SEEDS = ("http://alpha.test/", "http://beta.test/")

WORKERS = (
    WorkerRow("alpha:4242:a1b2c3", "alpha", 4242, 12, 1834, 14.2, 0.4, "running"),
    WorkerRow("alpha:4243:d4e5f6", "alpha", 4243, 11, 1790, 13.8, 0.9, "running"),
    WorkerRow("alpha:4244:0a9b8c", "alpha", 4244, 3, 402, 0.0, 9.7, "late"),
    WorkerRow("beta:311:7f3e21", "beta", 311, 9, 1204, 9.6, 1.6, "running"),
)

LOG = ("worker pid 4244 exited with -9; its hosts go to the others when their leases run out",)


def snapshot(**changes: object) -> ClusterSnapshot:
    """The canned cluster: four workers on two machines, one of them late."""
    snap = ClusterSnapshot(
        at=T0 + 83.4,
        elapsed_s=83.4,
        state="running",
        workers=WORKERS,
        pages=5230,
        pages_per_s=37.6,
        bytes=73_220_000,
        status_mix={"2xx": 4710, "3xx": 402, "4xx": 96, "5xx": 18, "error": 4},
        blocked={"robots": 41, "calendar": 23, "scope": 7},
        claimable_hosts=18,
        owned_hosts=35,
        redis_down=False,
        collector_lag_ms=140.0,
        log=LOG,
    )
    return replace(snap, **changes)  # type: ignore[arg-type]


class FakeCoordinator:
    """The ``ClusterSource`` methods over canned snapshots: ``snapshot()`` returns
    ``shown``; ``run`` records its seeds and returns ``end``'s outcome when the test
    calls it; every command is recorded in ``calls``, added seeds in ``added``."""

    def __init__(self, shown: ClusterSnapshot) -> None:
        self.shown = shown
        self.calls: list[str] = []
        self.added: list[list[str]] = []
        self.run_seeds: list[str] | None = None
        self._paused = False
        self._ended: asyncio.Future[Outcome] | None = None

    async def run(self, seeds: Sequence[str]) -> Outcome:
        self.run_seeds = list(seeds)
        self._ended = asyncio.get_running_loop().create_future()
        return await self._ended

    def end(self, outcome: Outcome) -> None:
        """Let ``run`` return ``outcome``."""
        assert self._ended is not None, "run was not started"
        self._ended.set_result(outcome)

    def snapshot(self) -> ClusterSnapshot:
        return self.shown

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self) -> None:
        self.calls.append("pause")
        self._paused = True

    def resume(self) -> None:
        self.calls.append("resume")
        self._paused = False

    def request_stop(self) -> None:
        self.calls.append("request_stop")

    async def add_seeds(self, seeds: Sequence[str]) -> None:
        self.added.append(list(seeds))


def fake(app: ClusterApp) -> FakeCoordinator:
    assert isinstance(app.coordinator, FakeCoordinator)
    return app.coordinator


def plain(app: ClusterApp, selector: str) -> str:
    content = app.query_one(selector, Static).content
    return content.plain if isinstance(content, Text) else str(content)


def plain_cells(table: LineTable, row: int) -> list[str]:
    return [c.plain if isinstance(c, Text) else c for c in table._cells[row]]


async def wait_until(pilot: Pilot[None], cond: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.05)


async def end_run(app: ClusterApp, pilot: Pilot[None]) -> None:
    """End the fake run (the app exits) so no task outlives the test."""
    fake(app).end("finished")
    await pilot.pause()


# ------------------------------------------------------------------ panels


async def test_workers_panel_shows_each_worker_with_exact_values() -> None:
    app = ClusterApp(FakeCoordinator(snapshot()), Path("crawl.db"), SEEDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert fake(app).run_seeds == list(SEEDS)
        table = app.query_one("#workers-table", LineTable)
        assert table.row_keys == [w.id for w in WORKERS]
        assert [plain_cells(table, i) for i in range(4)] == [
            ["alpha:4242:a1b2c3", "alpha", "12", "1834", "14.2", "0.4", "running"],
            ["alpha:4243:d4e5f6", "alpha", "11", "1790", "13.8", "0.9", "running"],
            ["alpha:4244:0a9b8c", "alpha", "3", "402", "0.0", "9.7", "late"],
            ["beta:311:7f3e21", "beta", "9", "1204", "9.6", "1.6", "running"],
        ]
        assert app.query_one("#workers").border_title == "Workers · 4 · 1 late"
        header = plain(app, "#status")
        assert header == (" crawldeck  RUNNING  Redis ok · 0:01:23 · pages 5230 · 37.6/s"
                          " · 73.2 MB · collector lag 140 ms · crawl.db")  # fmt: skip
        assert plain(app, "#totals").splitlines() == [
            "workers  3 live · 1 late",
            "hosts    35 owned · 18 claimable",
            "status   2xx 4710  3xx 402  4xx 96  5xx 18  error 4  ",
            "blocked  71  robots 41  calendar 23  scope 7",
        ]
        log = app.query_one(CoordinatorLog)
        assert [line.text for line in log.lines] == list(LOG)
        await end_run(app, pilot)


async def test_the_panels_follow_the_snapshots() -> None:
    """A newer snapshot is drawn at the next refresh: pages, Redis DOWN, a worker gone,
    log lines taken once."""
    coordinator = FakeCoordinator(snapshot())
    app = ClusterApp(coordinator, Path("crawl.db"), SEEDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        line = "Redis unreachable: retrying"
        coordinator.shown = snapshot(pages=6000, redis_down=True, workers=WORKERS[:2],
                                     log=(*LOG, line), collector_lag_ms=None)  # fmt: skip
        table = app.query_one("#workers-table", LineTable)
        await wait_until(pilot, lambda: table.row_count == 2)
        header = plain(app, "#status")
        assert "pages 6000" in header and "Redis DOWN" in header and "collector lag -" in header
        log = app.query_one(CoordinatorLog)
        assert [s.text for s in log.lines] == [*LOG, line]
        await end_run(app, pilot)


# ------------------------------------------------------------------ keys


async def test_p_pauses_then_resumes_the_whole_crawl() -> None:
    app = ClusterApp(FakeCoordinator(snapshot()), Path("crawl.db"), SEEDS)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("p")
        assert fake(app).calls == ["pause"]
        assert "PAUSED" in plain(app, "#status") and app.sub_title == "PAUSED"
        await pilot.press("p")
        assert fake(app).calls == ["pause", "resume"]
        assert "RUNNING" in plain(app, "#status")
        await end_run(app, pilot)


async def test_a_adds_a_seed_to_the_whole_crawl() -> None:
    app = ClusterApp(FakeCoordinator(snapshot()), Path("crawl.db"), SEEDS)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("a")
        assert isinstance(app.screen, AddSeedScreen)
        await pilot.press(*"https://new.example/", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, AddSeedScreen)
        assert fake(app).added == [["https://new.example/"]]
        await end_run(app, pilot)


async def test_a_refuses_a_url_that_is_not_http_and_esc_cancels() -> None:
    app = ClusterApp(FakeCoordinator(snapshot()), Path("crawl.db"), SEEDS)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("a", *"ftp://x", "enter")
        error = app.screen.query_one("#seed-error", Static)
        assert "Refused: unsupported scheme 'ftp'" in str(error.content)
        await pilot.press("escape")
        assert not isinstance(app.screen, AddSeedScreen)
        assert fake(app).added == []
        await end_run(app, pilot)


async def test_q_stops_the_crawl_shows_stopping_and_exits_with_the_outcome() -> None:
    app = ClusterApp(FakeCoordinator(snapshot()), Path("crawl.db"), SEEDS)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("q")
        assert fake(app).calls == ["request_stop"]
        assert app.is_running  # it waits for the run to end
        assert "STOPPING" in plain(app, "#status")
        await pilot.press("q")  # again: still waiting, no second stop
        assert fake(app).calls == ["request_stop"] and app.is_running
        await pilot.press("p")  # no pause while stopping
        assert fake(app).calls == ["request_stop"]
        fake(app).end("stopped")
        await wait_until(pilot, lambda: not app.is_running)
    assert app.outcome == "stopped" and app.error is None


async def test_ctrl_c_stops_like_q() -> None:
    app = ClusterApp(FakeCoordinator(snapshot()), Path("crawl.db"), SEEDS)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+c")
        assert fake(app).calls == ["request_stop"] and app.is_running
        fake(app).end("stopped")
        await wait_until(pilot, lambda: not app.is_running)
    assert app.outcome == "stopped"


async def test_run_cluster_console_returns_the_runs_outcome() -> None:
    """The run ends on its own (max_pages): the console exits and returns it."""
    coordinator = FakeCoordinator(snapshot())
    loop = asyncio.get_running_loop()
    loop.call_later(0.5, coordinator.end, "max_pages")
    outcome = await asyncio.wait_for(
        run_cluster_console(coordinator, Path("crawl.db"), SEEDS, headless=True, size=(80, 24)),
        timeout=20,
    )
    assert outcome == "max_pages" and coordinator.calls == []


async def test_run_cluster_console_sigterm_stops_like_q() -> None:
    coordinator = FakeCoordinator(snapshot())
    loop = asyncio.get_running_loop()

    def stopped_then_end() -> None:
        assert coordinator.calls == ["request_stop"]
        coordinator.end("stopped")

    loop.call_later(0.5, os.kill, os.getpid(), signal.SIGTERM)
    loop.call_later(1.0, stopped_then_end)
    outcome = await asyncio.wait_for(
        run_cluster_console(coordinator, Path("crawl.db"), SEEDS, headless=True, size=(80, 24)),
        timeout=20,
    )
    assert outcome == "stopped" and coordinator.calls == ["request_stop"]


async def test_run_cluster_console_raises_what_run_raised() -> None:
    class Failing(FakeCoordinator):
        async def run(self, seeds: Sequence[str]) -> Outcome:
            raise OSError("crawl file gone")

    try:
        await asyncio.wait_for(
            run_cluster_console(Failing(snapshot()), Path("c.db"), SEEDS, headless=True,
                                size=(80, 24)),
            timeout=20,
        )  # fmt: skip
    except OSError as exc:
        assert str(exc) == "crawl file gone"
    else:
        raise AssertionError("run_cluster_console returned")


# ------------------------------------------------------------------ pictures


async def _still(pilot: Pilot[None]) -> None:
    for box in pilot.app.query(Input):
        box.cursor_blink = False
    await pilot.pause()


def test_picture_80x24(snap_compare: SnapCompare) -> None:
    """80 x 24: header, totals, the four workers (the late one in red), the log, keys."""
    app = ClusterApp(FakeCoordinator(snapshot()), Path("crawl.db"), SEEDS)
    assert snap_compare(app, terminal_size=(80, 24), run_before=_still)


def test_picture_160x48(snap_compare: SnapCompare) -> None:
    """160 x 48: the whole header line and room for many workers."""
    app = ClusterApp(FakeCoordinator(snapshot()), Path("crawl.db"), SEEDS)
    assert snap_compare(app, terminal_size=(160, 48), run_before=_still)


def test_picture_stopping_with_redis_down(snap_compare: SnapCompare) -> None:
    """q pressed while Redis is down: STOPPING and Redis DOWN in the header."""
    down = snapshot(redis_down=True, state="stopping")
    app = ClusterApp(FakeCoordinator(down), Path("crawl.db"), SEEDS)

    async def run_before(pilot: Pilot[None]) -> None:
        await pilot.press("q")
        await _still(pilot)

    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)
