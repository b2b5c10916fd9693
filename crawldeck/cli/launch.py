"""The ``crawldeck`` console script: ``cli.main.main``, with Ctrl-C quiet while starting.

Importing ``cli.main`` (the config, the store, the argument parser) takes a moment; a
Ctrl-C then would print a traceback of whatever module was being imported. Until
``cli.main`` is loaded, SIGINT ends the process at once with exit 130 and one line
(nothing has been opened, so nothing is lost); then Python's usual handler is back
and ``cli.main.main`` handles stops itself, the import of the engine and aiohttp
(by the commands that crawl, not by ``--help`` or ``--version``) included.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

#: The exit code of a stopped run (as ``cli.output.EXIT_STOPPED``).
EXIT_STOPPED = 130


def _stop_while_starting(signum: int, frame: FrameType | None) -> None:
    """SIGINT before the crawler is loaded: one line, exit 130."""
    os.write(2, b"\ncrawldeck: stopped\n")
    os._exit(EXIT_STOPPED)


def main() -> int:
    """Load ``cli.main`` with a quiet SIGINT, then run its ``main``; the exit code."""
    previous = signal.signal(signal.SIGINT, _stop_while_starting)
    from crawldeck.cli.main import main as cli_main

    signal.signal(signal.SIGINT, previous)
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
