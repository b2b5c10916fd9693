"""The helpers that ``tests/loopback/test_failure_kinds.py`` and
``tests/unit/test_failure_kinds.py`` share: one subject's tests, split by tier (issue
#24 item 8)."""

from __future__ import annotations

import asyncio

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.errors import (
    FetchError,
)
from crawldeck.core.net.fetcher import AiohttpFetcher


def config(**overrides: object) -> CrawlConfig:
    values: dict[str, object] = {
        "connect_timeout_ms": 1000,
        "read_timeout_ms": 1000,
        "total_timeout_ms": 3000,
    }
    values.update(overrides)
    return build_config(values)


def fetch_error(url: str, cfg: CrawlConfig | None = None) -> FetchError:
    """The ``FetchError`` that fetching ``url`` raises (the test fails if none)."""

    async def go() -> FetchError:
        async with AiohttpFetcher(cfg or config()) as fetcher:
            try:
                result = await fetcher.fetch(url)
            except FetchError as exc:
                return exc
        raise AssertionError(f"no error: {result.status} {result.body[:60]!r}")

    return asyncio.run(go())


def assert_kind(exc: FetchError, kind: type[FetchError], retryable: bool, start: str) -> None:
    assert type(exc) is kind, repr(exc)
    assert exc.retryable is retryable
    assert type(exc).retryable is retryable  # a class attribute
    message = str(exc)
    assert message.startswith(start), message
    assert len(message.splitlines()) == 1 and message.isprintable(), repr(message)
    assert len(message) < 500
    assert "^" not in message  # aiohttp's caret lines are dropped
