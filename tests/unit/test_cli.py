"""The ``crawldeck`` command: the tests that need no server, process or
console (pure logic, the store, virtual time); the others are in
``tests/loopback/test_cli.py``."""

from __future__ import annotations

import os


def test_open_files_limit_is_raised_never_lowered() -> None:
    import resource

    from crawldeck.cli.runner import raise_open_files_limit

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # never under what this test worker has open: a file opened meanwhile (by a thread,
    # a lazy import) would fail
    low = min(hard, max(256, len(os.listdir("/proc/self/fd")) + 64))
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
        assert raise_open_files_limit(low + 256) == min(low + 256, hard)
        assert raise_open_files_limit(low + 44) == min(low + 256, hard)  # never lowered
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
