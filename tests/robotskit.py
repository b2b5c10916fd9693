"""The helpers that ``tests/loopback/test_robots.py`` and ``tests/unit/test_robots.py``
share: one subject's tests, split by tier (issue #24 item 8)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from fakeclock import FakeClock

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.net.robots import RobotsCache
from crawldeck.core.policy.robots import RobotsSettings

T0 = 1_700_000_000.0


DAY = 86_400


def make_config(**overrides: Any) -> CrawlConfig:
    values: dict[str, Any] = {
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


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def audit() -> list[str]:
    return []


@pytest.fixture
async def cache(
    fetcher: AiohttpFetcher, clock: FakeClock, audit: list[str]
) -> AsyncIterator[RobotsCache]:
    robots = RobotsCache(fetcher, RobotsSettings.from_config(make_config()), clock, audit.append)
    yield robots
    await robots.aclose()


ONLY_US = """\
User-agent: crawldeck
Disallow:

User-agent: *
Disallow: /
"""
