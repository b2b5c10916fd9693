"""The helpers that ``tests/unit/test_dns.py`` and ``tests/loopback/test_dns.py`` share:
one subject's tests, split by tier (issue #24 item 8)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aiohttp.abc import ResolveResult

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.policy.address_policy import (
    AddressPolicy,
)

ALLOWED_NET = "127.0.5.0/24"


def make_config(**overrides: Any) -> CrawlConfig:
    values: dict[str, Any] = {
        "user_agent": "crawldeck-test/1.0",
        "connect_timeout_ms": 1000,
        "read_timeout_ms": 2000,
        "total_timeout_ms": 5000,
        "dns_timeout_ms": 500,
        "dns_retries": 0,
        "allow_networks": [ALLOWED_NET],
    }
    values.update(overrides)
    return build_config(values)


# ------------------------------------------- pinning: one choice per new connection


class CountingPolicy(AddressPolicy):
    """An ``AddressPolicy`` that counts its ``select`` calls."""

    selects = 0

    def select(self, host: str, addresses: Iterable[str]) -> list[str]:
        self.selects += 1
        return super().select(host, addresses)


def addresses(results: list[ResolveResult]) -> list[str]:
    return [result["host"] for result in results]
