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
import threading
from typing import Any

import pytest
import pytest_timeout


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # pytest -p no:timeout: unused
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    """pytest-timeout's ``thread`` method (pyproject.toml: ``timeout``), which first
    prints the stack of every asyncio task still pending: a test hung in an ``await``
    shows its loop's thread in ``select()`` only, not the ``await`` that waits (issue
    #22 item 2). Other methods are left to pytest-timeout (``None``)."""
    if settings.method != "thread":
        return None

    def on_timeout() -> None:
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

    timer = threading.Timer(settings.timeout, on_timeout)
    timer.name = f"pytest-timeout {item.nodeid}"

    def cancel() -> None:
        timer.cancel()
        timer.join()

    item.cancel_timeout = cancel  # type: ignore[attr-defined]  # pytest-timeout's hook reads it
    timer.start()
    return True


def _pending_tasks() -> list[asyncio.Task[Any]]:
    """Every asyncio task not done, of any loop (found through the garbage collector:
    asyncio lists a loop's tasks only to code on that loop's thread)."""
    return [t for t in gc.get_objects() if isinstance(t, asyncio.Task) and not t.done()]
