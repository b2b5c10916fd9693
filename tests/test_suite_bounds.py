"""The suite's own bounds (issue #22 item 2): nothing in it hangs CI, and a slow
machine fails nothing.

* Hypothesis runs under ``tests/conftest.py``'s profile: no deadline per example and no
  ``too_slow`` health check, wall-clock bounds both; it is the one profile, and a test's
  own ``@settings`` sets its example count only (issue #24 item 8).
* pytest-timeout (``timeout`` in pyproject.toml) ends a hung run with exit 1 and the
  stacks of its threads and of its pending asyncio tasks (``tests/hangfix.py``): here a
  run of one test hung in an ``await`` beside a thread hung in ``Event.wait``, with a
  timeout of 2 s (the test would wait forever without it).
"""

from __future__ import annotations

import re
from pathlib import Path

import hypothesis
import pytest

TESTS = Path(__file__).resolve().parent

HUNG = """
import asyncio
import threading


async def test_hung() -> None:
    threading.Thread(target=threading.Event().wait, name="helper", daemon=True).start()
    await asyncio.Event().wait()
"""


def test_property_tests_have_no_deadline_and_no_too_slow_check() -> None:
    current = hypothesis.settings()
    assert current.deadline is None
    assert hypothesis.HealthCheck.too_slow in current.suppress_health_check


#: A ``@settings(...)`` or ``settings(...)`` call naming a key the profile owns.
PROFILE_KEY_IN_SETTINGS = re.compile(
    r"\bsettings\([^)]*\b(deadline|suppress_health_check|derandomize)\s*=", re.DOTALL
)


def test_no_test_repeats_or_overrides_the_profile() -> None:
    files = sorted(TESTS.rglob("*.py"))
    assert len(files) > 100  # the walk found the suite
    offenders = [
        f"{path.relative_to(TESTS)}: {match.group(0)[:60]!r}"
        for path in files
        if path.name not in ("conftest.py", Path(__file__).name)  # the profile; the examples
        for match in PROFILE_KEY_IN_SETTINGS.finditer(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_check_sees_a_deadline_in_settings() -> None:
    assert PROFILE_KEY_IN_SETTINGS.search("@settings(max_examples=5, deadline=None)")
    assert PROFILE_KEY_IN_SETTINGS.search("@settings(\n    suppress_health_check=[x],\n)")
    assert not PROFILE_KEY_IN_SETTINGS.search("@settings(max_examples=300)")
    assert not PROFILE_KEY_IN_SETTINGS.search("s.settle(deadline=101.5, idle_s=0.25)")


def test_a_hung_test_fails_with_its_tasks_and_threads_stacks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(TESTS))  # hangfix, as tests/conftest.py loads it
    pytester.makepyfile(test_hung=HUNG)
    result = pytester.runpytest_subprocess(
        "-p", "hangfix", "-o", "asyncio_mode=auto", "--timeout=2", "-o", "timeout_method=thread"
    )
    assert result.ret == 1
    out = result.stdout.str()
    assert "asyncio task Task-1" in out
    assert "await asyncio.Event().wait()" in out  # the await the test hangs in
    assert "Stack of helper" in out  # and every thread's stack
    assert "Stack of MainThread" in out
    assert "+ Timeout +" in out
