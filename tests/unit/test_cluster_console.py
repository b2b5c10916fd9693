"""The cluster console (``tui/cluster_app.py``) through Textual's Pilot, over a fake: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/console/test_cluster_console.py``."""

from __future__ import annotations

from rich.text import Text

from crawldeck.core.cluster.coordinator import WorkerRow
from crawldeck.tui.cluster_app import (
    worker_cells,
)

WORKERS = (
    WorkerRow("alpha:4242:a1b2c3", "alpha", 4242, 12, 1834, 14.2, 0.4, "running"),
    WorkerRow("alpha:4243:d4e5f6", "alpha", 4243, 11, 1790, 13.8, 0.9, "running"),
    WorkerRow("alpha:4244:0a9b8c", "alpha", 4244, 3, 402, 0.0, 9.7, "late"),
    WorkerRow("beta:311:7f3e21", "beta", 311, 9, 1204, 9.6, 1.6, "running"),
)


def test_a_late_worker_is_marked_red() -> None:
    late = worker_cells(WORKERS[2])
    assert all(isinstance(c, Text) and c.style == "bold red" for c in late[:-1])
    assert isinstance(late[-1], Text) and late[-1].plain == "late"
    assert late[-1].style == "bold white on red"
    running = worker_cells(WORKERS[0])
    assert running[:-1] == ["alpha:4242:a1b2c3", "alpha", "12", "1834", "14.2", "0.4"]
    assert isinstance(running[-1], Text) and running[-1].style == "green"
