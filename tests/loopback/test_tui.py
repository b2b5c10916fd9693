"""The console through Textual's Pilot: the tests that start a real server on loopback or a
process; the others are in ``tests/console/test_tui.py``, ``tests/unit/test_tui.py``."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.crawl.snapshot import CrawlSnapshot
from crawldeck.core.storage.store import Store
from crawldeck.localweb import LocalWeb
from crawldeck.tui.app import CrawlApp


def status_text(app: CrawlApp) -> str:
    content = app.query_one("#status", Static).content
    return content.plain if isinstance(content, Text) else str(content)


async def test_header_pages_agree_with_the_hosts_fetched(tmp_path: Path) -> None:
    """issue #25: the header said ``pages 37/100`` while the hosts table summed 48
    fetched (pages were counted at the store's commit); now every frame's header
    counts the pages fetched, as the hosts table and ``--max-pages`` do."""
    from crawldeck.tui.screens import status_text

    db = tmp_path / "crawl.db"
    with LocalWeb(delay_scale=0.2) as web:
        config = build_config(
            {"delay_ms": 20, "concurrency": 8, "flush_interval_ms": 5000,
             "snapshot_interval_ms": 100, "max_pages": 40, "render": "never"}
        )  # fmt: skip
        store = Store(db, flush_interval_ms=config.flush_interval_ms)
        try:
            engine = Engine(config, store)
            assert engine.add_seeds(web.seeds()) == []
            frames: list[tuple[str, int, int, int]] = []

            def check(snap: CrawlSnapshot) -> None:
                header = status_text("RUNNING", db.name, snap, 80).plain
                shown = int(header.split("fetched ")[1].split("/")[0])
                fetched = sum(row.fetched for row in engine.query_hosts("", 500))
                frames.append((header, shown, fetched, snap.counters.pages))

            engine.subscribe(check)
            result = await engine.run()
        finally:
            store.close()
    assert result.outcome == "max_pages"
    assert frames and all(shown == fetched for _, shown, fetched, _ in frames), frames
    # the commits lagged (flush_interval_ms 5 s): the file's count trailed the hosts'
    assert any(committed < fetched for _, _, fetched, committed in frames)
