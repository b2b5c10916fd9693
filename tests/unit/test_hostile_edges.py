"""Edge cases found by a hostile review of the aiohttp fetcher, the href memo and the: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_hostile_edges.py``."""

from __future__ import annotations

import resource

from crawldeck.core.net.fetcher import idle_connections


def test_the_idle_cap_is_half_the_open_files_limit() -> None:
    # given, not set: a soft limit of 100 under a test worker's open files made every
    # file it or a thread of it opened meanwhile fail (a lazy import among them)
    for limit, cap in ((100, 64), (1024, 512), (30_000, 8192), (resource.RLIM_INFINITY, 8192)):
        assert idle_connections(limit) == cap
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert idle_connections() == idle_connections(soft)  # the process's own by default
