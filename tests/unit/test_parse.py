"""core.net.parse: the tests that need no server, process or console (pure logic, the
store, virtual time); the others are in ``tests/loopback/test_parse.py``."""

from __future__ import annotations

import pytest

from crawldeck.core.config import build_config
from crawldeck.core.errors import ConfigError


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("parse_workers", 0, "config key 'parse_workers': expected a value >= 1, got 0"),
        ("parse_workers", 65, "config key 'parse_workers': expected a value <= 64, got 65"),
        ("parse_timeout_ms", 5, "config key 'parse_timeout_ms': expected a value >= 10, got 5"),
    ],
)
def test_config_ranges(key: str, value: int, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_config({key: value})
    assert str(caught.value) == message
    defaults = build_config({})
    assert (defaults.parse_workers, defaults.parse_timeout_ms) == (2, 5000)
