"""The attach socket of a crawl (issue #25 item 8): the tests that run the Textual console
in process; the others are in ``tests/loopback/test_attach.py``,
``tests/unit/test_attach.py``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from attachkit import CAP_S, headless_demo, until
from textual.widgets import Footer, Static
from textual.widgets._footer import FooterKey

from console.test_tui_snapshots import FakeEngine, settle, snapshot_at
from crawldeck.tui.app import CrawlApp
from crawldeck.tui.attach import DETACH_TIP, STOP_TIP, AttachedApp, SocketSource
from crawldeck.tui.screens import key_rows
from crawldeck.tui.stops import go_on_line


async def test_the_attached_console_is_the_console_and_q_detaches(tmp_path: Path) -> None:
    with headless_demo(tmp_path) as (proc, db):
        source = await SocketSource.connect(db)
        app = AttachedApp(source, db)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(lambda: app.snapshot is not None, "the first picture")
            header = str(app.screen.query_one("#status").render())
            assert header.startswith(" crawldeck attach  RUNNING   "), header
            await pilot.press("p")
            assert app.display_state() == "PAUSED"
            await until(lambda: source.snapshot().state == "paused", "the crawl paused")
            keys = dict(key_rows(app.screen.active_bindings.values(), app.get_key_display))
            what = {k: v for k, v in keys.items() if "q" in k.split(", ") or k == "S"}
            assert what == {"q, d, ^c, ^q": DETACH_TIP, "S": STOP_TIP}, keys
            await pilot.press("q")
            await until(lambda: not app.is_running, "the console closed")
        source.close()
        assert app.result is None and app.error is None  # detached, not ended
        assert proc.poll() is None
        again = await SocketSource.connect(db)
        assert again.snapshot().state == "paused"  # the crawl as the console left it
        await asyncio.to_thread(again.resume)
        again.close()


class FakeSource(FakeEngine):
    """The fake crawl of the console's tests, as ``AttachedApp`` reads a source."""

    strict_robots = False
    resume_hint: str | None = None
    seed_command: tuple[str, tuple[str, ...]] | None = None
    on_error: Callable[[str], None] | None = None


async def test_the_attached_header_fits_80_columns_as_the_consoles_does() -> None:
    """issue #25 item 7: ``crawl.db (attached)`` pushed the header's figures past 80
    columns; the attached console's title now leads the header from ``WIDE_HEADER``
    columns on, and is left out below, as the console's name is."""
    snaps = [snapshot_at(i) for i in range(31)]
    headers = []
    for app in (AttachedApp(FakeSource(snaps), Path("crawl.db")),  # type: ignore[arg-type]
                CrawlApp(FakeEngine(snaps), Path("crawl.db"))):  # fmt: skip
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            headers.append(str(app.screen.query_one("#status").render()))
    assert headers[0] == headers[1]
    assert headers[0].startswith(
        " RUNNING   crawl.db  fetched 970/6000 · 28.4/s · in flight 3 · ETA"
    )


async def test_the_attached_footer_shows_every_key_whole_at_80_columns() -> None:
    """issue #25 item 7: at 80 columns the attached console's footer cut ``S Stop crawl``
    to ``S S``; below 100 columns the footer is compact and every key is whole."""
    snaps = [snapshot_at(i) for i in range(31)]
    app = AttachedApp(FakeSource(snaps), Path("crawl.db"))  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        keys = list(app.screen.query(FooterKey))
        shown = [(k.key_display, k.description) for k in keys]
        assert shown[-2:] == [("?", "Help"), ("S", "Stop")]
        assert ("q", "Detach") in shown
        assert max(k.region.right for k in keys) <= 80
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert not app.screen.query_one(Footer).compact


async def test_shift_s_twice_in_the_attached_console_stops_the_crawl(tmp_path: Path) -> None:
    with headless_demo(tmp_path) as (proc, db):
        source = await SocketSource.connect(db)
        app = AttachedApp(source, db)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("S")  # one S only asks
            await pilot.pause()
            assert app.result is None and app.display_state() == "RUNNING"
            assert any("Press S again" in n.message for n in app._notifications)
            await pilot.press("S")
            await until(lambda: app.result is not None, "the run's end")
            assert not any("Press S again" in n.message for n in app._notifications)
            assert app.result is not None and app.result.outcome == "stopped"
            assert app.display_state() == "STOPPED"
            # what the console shows and ``crawldeck attach`` prints once it is closed
            assert app.resume_hint is not None  # the demo's: it starts anew each run
            assert app.resume_hint.startswith("the demo starts anew each run: cd ")
            assert go_on_line(app.result.outcome, app.resume_hint) == app.resume_hint
            shown = str(app.query_one("#resume", Static).render())
            assert shown.startswith("Stopped: ") and shown.endswith(app.resume_hint)
            await pilot.press("q")
        source.close()
        await asyncio.to_thread(proc.wait, CAP_S)
    assert proc.returncode == 130
