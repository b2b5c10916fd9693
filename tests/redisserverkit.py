"""The helpers that ``tests/loopback/test_cluster_server.py`` and
``tests/unit/test_cluster_server.py`` share: one subject's tests, split by tier (issue
#24 item 8)."""

from __future__ import annotations

import time

import pytest

from crawldeck.core.cluster.server import (
    check_redis,
)
from crawldeck.core.errors import ClusterError

#: The budget given to ``check_redis`` in the hang checks (s). A check ends at it or
#: hangs for good, so ten times it tells a hang from a slow machine (not a speed test).
BUDGET_S = 1.0


HANG_S = 10 * BUDGET_S


def assert_unreachable(url: str, shown: str, reason: str) -> None:
    """``check_redis(url)`` raises a one-line ClusterError naming ``shown`` and
    ``reason`` within the budget (a hang check)."""
    started = time.monotonic()
    with pytest.raises(ClusterError) as caught:
        check_redis(url, BUDGET_S)
    elapsed = time.monotonic() - started
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"cannot reach Redis at {shown}: ")
    assert reason in message
    assert elapsed < HANG_S
