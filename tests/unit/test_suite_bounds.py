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

TESTS = Path(__file__).resolve().parents[1]


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
