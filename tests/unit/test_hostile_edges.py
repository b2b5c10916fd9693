"""Edge cases found by a hostile review of the aiohttp fetcher, the href memo and the: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_hostile_edges.py``."""

from __future__ import annotations

import resource

from crawldeck.core.net.fetcher import idle_connections


def test_the_idle_cap_is_half_the_open_files_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        for limit, cap in ((100, 64), (1024, 512), (30_000, 8192)):
            if limit <= hard:
                resource.setrlimit(resource.RLIMIT_NOFILE, (max(limit, 64), hard))
                assert idle_connections() == cap
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
