"""``core.crawl.gcpolicy.fewer_gc_passes``: the generation-0 threshold is raised inside, and
the process's thresholds come back however the block ends (issue #23)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from crawldeck.core.crawl.gcpolicy import GC_GEN0_THRESHOLD, fewer_gc_passes


@pytest.fixture(autouse=True)
def own_thresholds() -> Iterator[None]:
    """Thresholds unlike CPython's defaults, put back after the test."""
    before = gc.get_threshold()
    gc.set_threshold(600, 9, 8)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def test_raised_inside_restored_after() -> None:
    with fewer_gc_passes():
        assert gc.get_threshold() == (GC_GEN0_THRESHOLD, 9, 8)
    assert gc.get_threshold() == (600, 9, 8)


def test_a_higher_threshold_is_kept() -> None:
    gc.set_threshold(GC_GEN0_THRESHOLD * 2, 9, 8)
    with fewer_gc_passes():
        assert gc.get_threshold() == (GC_GEN0_THRESHOLD * 2, 9, 8)
    assert gc.get_threshold() == (GC_GEN0_THRESHOLD * 2, 9, 8)


def test_restored_after_an_exception() -> None:
    with pytest.raises(ZeroDivisionError), fewer_gc_passes():
        _ = 1 / 0
    assert gc.get_threshold() == (600, 9, 8)


def test_restored_when_the_task_is_cancelled() -> None:
    async def main() -> None:
        started = asyncio.Event()

        async def crawl() -> None:
            with fewer_gc_passes():
                started.set()
                await asyncio.Event().wait()

        task = asyncio.create_task(crawl())
        await started.wait()
        assert gc.get_threshold()[0] == GC_GEN0_THRESHOLD
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert gc.get_threshold() == (600, 9, 8)


def test_overlapping_users_restore_once_the_last_leaves() -> None:
    first = fewer_gc_passes()
    second = fewer_gc_passes()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # not LIFO: two engines ending in either order
    assert gc.get_threshold() == (GC_GEN0_THRESHOLD, 9, 8)
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (600, 9, 8)
