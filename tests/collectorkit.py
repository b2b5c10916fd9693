"""The helpers that ``tests/loopback/test_cluster_collector.py`` and
``tests/unit/test_cluster_collector.py`` share: one subject's tests, split by tier
(issue #24 item 8)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from crawldeck.core.records import FrontierRow
from crawldeck.core.storage.store import Store

#: Three hosts on three shards.
A, B, C = "a.test", "b.test", "c.test"


def url(host: str, path: str = "") -> str:
    return f"http://{host}/{path}"


def row(u: str, host: str, depth: int = 1, via: str | None = None) -> FrontierRow:
    return FrontierRow(key=u, url=u, host=host, depth=depth, priority=1, via=via)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "crawl.db", flush_interval_ms=5) as s:
        yield s
