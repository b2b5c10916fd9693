"""A hung test fails with the stacks of its asyncio tasks too (issue #22 item 2): a
pytest plugin (``tests/conftest.py`` loads it) for pytest-timeout's ``thread`` method.

pyproject.toml gives every test ``timeout`` seconds; then pytest-timeout prints the
stack of every thread and ends the run (exit 1). A test hung in an ``await`` shows its
loop's thread in ``select()`` only, so this plugin's timer prints the stack of every
asyncio task still pending first, the ``await`` that waits among them, and then hands
over to pytest-timeout's own (``pytest_timeout.timeout_timer``).
"""

from __future__ import annotations

import asyncio
import gc
import io
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import pytest_timeout


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # pytest -p no:timeout: unused
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    """pytest-timeout's ``thread`` method (pyproject.toml: ``timeout``), which first
    prints the stack of every asyncio task still pending: a test hung in an ``await``
    shows its loop's thread in ``select()`` only, not the ``await`` that waits (issue
    #22 item 2). Other methods are left to pytest-timeout (``None``).

    One watchdog thread serves the whole run, armed at each test's start and disarmed
    at its end, where pytest-timeout starts and joins a ``threading.Timer`` thread a
    test: 1-3 ms a test on the 2-core machine, 4-8 s of the fast tier's 2800 tests
    (issue #24 item 8)."""
    if settings.method != "thread":
        return None

    def on_timeout() -> None:
        threading.current_thread().name = f"pytest-timeout {item.nodeid}"
        capture = item.config.pluginmanager.getplugin("capturemanager")
        if capture is not None:
            capture.suspend_global_capture(item)
        terminal = item.config.get_terminal_writer()
        for task in _pending_tasks():
            stack = io.StringIO()
            task.print_stack(file=stack)
            terminal.sep("~", title=f"asyncio task {task.get_name()}")
            terminal.write(stack.getvalue())
        pytest_timeout.timeout_timer(item, settings)  # the threads' stacks, then exit 1

    armed = _WATCHDOG.arm(settings.timeout, on_timeout)
    item.cancel_timeout = lambda: _WATCHDOG.disarm(armed)  # type: ignore[attr-defined]  # read by pytest-timeout's hook
    return True


class _Watchdog:
    """Calls the armed function in its own thread once its seconds have passed, unless
    disarmed before (one arming at a time: a test's). The thread is woken only when an
    arming ends before the deadline it sleeps to; a disarmed one it finds gone when it
    wakes."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        #: The arming: its number, its deadline (``time.monotonic``), what it calls.
        self._armed: tuple[int, float, Callable[[], None]] | None = None
        self._count = 0
        #: The deadline the thread sleeps to (infinite: until woken).
        self._sleeps_to = math.inf
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, call: Callable[[], None]) -> int:
        """Call ``call`` in ``seconds`` unless ``disarm`` is given the number returned."""
        with self._changed:
            self._count += 1
            deadline = time.monotonic() + seconds
            self._armed = (self._count, deadline, call)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="pytest-timeout watchdog", daemon=True
                )
                self._thread.start()
            elif deadline < self._sleeps_to:
                self._changed.notify()
            return self._count

    def disarm(self, number: int) -> None:
        """Cancel arming ``number`` if it is still the one armed."""
        with self._changed:
            if self._armed is not None and self._armed[0] == number:
                self._armed = None

    def _watch(self) -> None:
        while True:
            with self._changed:
                while True:
                    if self._armed is None:
                        self._sleeps_to = math.inf
                        self._changed.wait()
                        continue
                    _, deadline, call = self._armed
                    left = deadline - time.monotonic()
                    if left <= 0:
                        self._armed = None
                        break
                    self._sleeps_to = deadline
                    self._changed.wait(left)
            call()


_WATCHDOG = _Watchdog()


def _pending_tasks() -> list[asyncio.Task[Any]]:
    """Every asyncio task not done, of any loop (found through the garbage collector:
    asyncio lists a loop's tasks only to code on that loop's thread)."""
    return [t for t in gc.get_objects() if isinstance(t, asyncio.Task) and not t.done()]
