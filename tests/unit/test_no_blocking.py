"""Nothing blocks the event loop during a crawl (issue #11 item 4): the tests that need no
server, process or console (pure logic, the store, virtual time); the others are in
``tests/loopback/test_no_blocking.py``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from blockingkit import SlowStore, detecting

from crawldeck.core.storage.store import Store


def test_the_detector_catches_a_blocking_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The detector is not blind: a store read and a flush on the loop are caught, the
    same calls in a thread are not."""
    store = Store(tmp_path / "d.db")
    try:
        with detecting(store, monkeypatch) as detector:

            async def go() -> None:
                await asyncio.to_thread(store.contains, "k")
                await asyncio.to_thread(store.flush)
                assert detector.calls == []
                store.contains("k")
                store.flush()

            asyncio.run(go())
    finally:
        store.close()
    assert [call.rsplit(" (", 1)[0] for call in detector.calls] == [
        "sql: SELECT 1 FROM frontier WHERE key = ?",
        "Store._wait (the writer thread)",
    ]


async def test_room_waits_on_the_loop_until_the_writer_is_down_to_half(tmp_path: Path) -> None:
    store = SlowStore(tmp_path / "r.db", flush_interval_ms=0, max_backlog=8)
    try:
        assert await store.room() is False  # empty: no wait
        for i in range(20):
            store.mark(f"k{i}", "done")  # an unknown key: a no-op, 4 ms of writer time
        assert store.backlog >= 8
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        ticker = asyncio.create_task(tick())
        assert await store.room() is True
        ticker.cancel()
        assert store.backlog <= 4
        assert ticks > 0  # the loop ran while room() waited
    finally:
        store.close()
