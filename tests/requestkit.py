"""The helpers that ``tests/loopback/test_requests_fetch.py`` and
``tests/unit/test_requests_fetch.py`` share: one subject's tests, split by tier (issue
#24 item 8)."""

from __future__ import annotations

import pytest

from crawldeck.core.config import CrawlConfig, build_config

UA = "crawldeck-test/9.9 (+http://127.0.0.1/bot)"


def make_config(**overrides: object) -> CrawlConfig:
    values: dict[str, object] = {
        "user_agent": UA,
        "connect_timeout_ms": 1000,
        "read_timeout_ms": 1000,
        "total_timeout_ms": 3000,
        "render": "never",  # a proxy is refused while pages may be rendered
    }
    values.update(overrides)
    return build_config(values)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy or netrc from the machine's environment."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "NETRC"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
