"""The ``crawldeck`` command: the tests that need no server, process or
console (pure logic, the store, virtual time); the others are in
``tests/loopback/test_cli.py``."""

from __future__ import annotations


def test_open_files_limit_is_raised_never_lowered() -> None:
    import resource

    from crawldeck.cli.runner import raise_open_files_limit

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
        assert raise_open_files_limit(512) == min(512, hard)
        assert raise_open_files_limit(300) == min(512, hard)  # never lowered
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
