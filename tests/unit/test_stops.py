"""The stop signals around a console's run (``tui.app.run_app``, ``tui.stops``)."""

from __future__ import annotations

import signal

from crawldeck.tui.app import run_app


class ClosedAtOnce:
    """A console whose terminal closed as it started: ``run_async`` returns at once."""

    def __init__(self) -> None:
        self.quits = 0

    def request_quit(self) -> None:
        self.quits += 1

    async def run_async(self, headless: bool = False, size: object = None) -> None:
        return None


async def test_after_the_console_a_stop_signal_does_nothing_until_the_loop_closes() -> None:
    """A console closed, then SIGTERM at once (a shell's after the terminal closed): the
    crawl's end (its stats, its summary) is written after ``run_app`` returns, and with
    the handlers removed the signal's default killed the process there (exit -15, a
    two-worker run of the suite at load 6). The handlers stay, doing nothing."""
    app = ClosedAtOnce()
    await run_app(app, headless=True)  # type: ignore[arg-type]
    for sig in (signal.SIGINT, signal.SIGTERM):
        assert signal.getsignal(sig) not in (signal.SIG_DFL, signal.default_int_handler)
    assert app.quits == 0
