"""Prometheus metrics (issue #14 item 8): ``--metrics-port`` serves this run's figures: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_metrics.py``."""

from __future__ import annotations

import pytest

from crawldeck.core.config import build_config
from crawldeck.core.errors import ConfigError


def test_the_metrics_keys_are_checked() -> None:
    config = build_config({"metrics_port": 9464})
    assert (config.metrics_port, config.metrics_address) == (9464, "127.0.0.1")
    with pytest.raises(ConfigError, match="'metrics_port': expected a value <= 65535"):
        build_config({"metrics_port": 70_000})
    with pytest.raises(ConfigError, match="'localhost' is not an IP address"):
        build_config({"metrics_address": "localhost"})
