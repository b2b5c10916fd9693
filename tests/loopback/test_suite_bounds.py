"""The suite's own bounds (issue #22 item 2): the tests that start a real server on
loopback or a process; the others are in ``tests/unit/test_suite_bounds.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

HUNG = """
import asyncio
import threading


async def test_hung() -> None:
    threading.Thread(target=threading.Event().wait, name="helper", daemon=True).start()
    await asyncio.Event().wait()
"""


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
