"""``crawldeck.core.cluster.server`` and the Redis fixtures of ``tests/redisfix.py``,: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_cluster_server.py``."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
from redisserverkit import assert_unreachable

from crawldeck.core.cluster.server import acheck_redis, check_redis, find_redis_server
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
    ("url", "message"),
    [
        (
            "http://127.0.0.1:6379/0",
            "bad Redis URL 'http://127.0.0.1:6379/0': it must start with redis://, "
            "rediss:// or unix://",
        ),
        (
            "redis://:secret@127.0.0.1:port/0",
            "bad Redis URL 'redis://:***@127.0.0.1:port/0': Port could not be cast to "
            "integer value as 'port'",
        ),
        ("redis://[::1/0", "bad Redis URL 'redis://[::1/0': Invalid IPv6 URL"),
        ("", "bad Redis URL '': it must start with redis://, rediss:// or unix://"),
    ],
)
def test_check_redis_on_a_garbage_url_says_the_url_is_bad(url: str, message: str) -> None:
    """Not "cannot reach Redis at ...": no server was tried (issue #25 trial 17)."""
    with pytest.raises(ClusterError) as caught:
        check_redis(url, 1.0)
    assert str(caught.value) == message
    with pytest.raises(ClusterError) as caught:
        asyncio.run(acheck_redis(url, 1.0))
    assert str(caught.value) == message
