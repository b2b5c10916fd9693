"""Tests of the local multi-host web (``localweb``): real servers, real HTTP: the tests
that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_localweb.py``."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from crawldeck.localweb.web import TRAP_REASONS

# ---------------------------------------------------------------------------- helpers


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Every test stops what it starts: no server or handler thread outlives it."""
    before = set(threading.enumerate())
    yield
    leaked = set(threading.enumerate()) - before
    assert not leaked, f"threads left running: {leaked}"


def test_trap_reasons() -> None:
    assert dict(TRAP_REASONS) == {
        "calendar": "calendar",
        "session": None,
        "session_phpsessid": None,
        "repeat": "repeating_path",
        "redirect_loop": "redirect_loop",
        "redirect_chain": "too_many_redirects",
        "pagination": "pagination",
        "long_url": "url_length",
    }
