"""``crawldeck.core.cluster.server`` and the Redis fixtures of ``tests/redisfix.py``,: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_cluster_server.py``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from redisserverkit import assert_unreachable

from crawldeck.core.cluster.server import (
    find_redis_server,
)
from crawldeck.core.errors import ClusterError


def test_find_redis_server_without_it_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    assert find_redis_server() == shutil.which("redis-server")
    assert os.access(find_redis_server(), os.X_OK)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(ClusterError) as caught:
        find_redis_server()
    assert str(caught.value) == (
        "redis-server not found: install Debian's redis-server package or pass --redis URL"
    )


def test_check_redis_on_a_missing_socket(tmp_path: Path) -> None:
    url = f"unix://{tmp_path}/no.sock"
    assert_unreachable(url, url, "No such file or directory")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:6379/0", "Redis URL must specify one of the following schemes"),
        ("redis://127.0.0.1:port/0", "Port could not be cast to integer value"),
        ("redis://[::1/0", "Invalid IPv6 URL"),
        ("", "Redis URL must specify one of the following schemes"),
    ],
)
def test_check_redis_on_a_garbage_url(url: str, reason: str) -> None:
    assert_unreachable(url, url, reason)
