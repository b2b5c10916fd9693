"""The helpers that ``tests/loopback/test_fetcher.py`` and ``tests/unit/test_fetcher.py``
share: one subject's tests, split by tier (issue #24 item 8)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.net.fetcher import AiohttpFetcher

UA = "crawldeck-test/9.9 (+http://127.0.0.1/bot)"


def make_config(**overrides: object) -> CrawlConfig:
    values: dict[str, object] = {
        "user_agent": UA,
        "connect_timeout_ms": 1000,
        "read_timeout_ms": 1000,
        "total_timeout_ms": 3000,
    }
    values.update(overrides)
    return build_config(values)


@pytest.fixture
async def fetcher() -> AsyncIterator[AiohttpFetcher]:
    async with AiohttpFetcher(make_config()) as f:
        yield f
