"""The console's terminal, which may go away under it: ``HangupTolerantDriver`` (Textual's
Linux driver, watching the tty for a hangup and surviving failed writes) and the
``TerminalGone`` message it posts, after which the app stops the crawl cleanly as ``q``
does (issue #22 item 3). The crawl's console (``tui.app``), the cluster's
(``tui.cluster_app``) and the attached one (``tui.attach``) all run on it.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable
from typing import Any, TextIO

from textual.app import App
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message


class TerminalGone(Message):
    """The console's terminal is gone (closed, an ssh session dropped): posted by
    ``HangupTolerantDriver`` from its threads; the app stops the crawl as ``q`` does."""


class _HangupTolerantOutput:
    """The terminal output of the console (Textual writes to ``sys.__stderr__`` from
    its writer thread), dropping writes once the terminal is gone.

    After a hangup (the terminal closed, an ssh session dropped) every write fails
    with EIO. Textual's writer thread dies on the first failed write, and every later
    write, the app's shutdown included, then blocks on its full queue: the process
    would hang instead of saving the crawl and exiting 130. Here a failed write marks
    the terminal gone, calls ``on_gone`` (once) and later writes are dropped.
    """

    def __init__(self, file: TextIO, on_gone: Callable[[], None]) -> None:
        self._file = file
        self._on_gone = on_gone
        self.gone = False

    def _lost(self) -> None:
        if not self.gone:
            self.gone = True
            self._on_gone()

    def write(self, text: str) -> int:
        """Write ``text`` unless the terminal is gone (then drop it)."""
        if not self.gone:
            try:
                return self._file.write(text)
            except OSError:
                self._lost()
        return len(text)

    def flush(self) -> None:
        """Flush unless the terminal is gone."""
        if not self.gone:
            try:
                self._file.flush()
            except OSError:
                self._lost()

    def fileno(self) -> int:
        """The terminal's file descriptor."""
        return self._file.fileno()

    def isatty(self) -> bool:
        """Whether the output is a terminal."""
        return self._file.isatty()


class HangupTolerantDriver(LinuxDriver):
    """Textual's Linux driver for a terminal that may go away under a running crawl.

    A terminal that closes (a terminal window, ``tmux kill-session``, a dropped ssh
    session) hangs up the tty: reads return EOF or fail with EIO, writes fail with EIO,
    poll(2) reports POLLHUP (Linux tty hangup, ``tty_vhangup``). SIGHUP may come before
    that, after it, or never (the crawl is not the session's leader and no shell
    passes it on). Whatever comes first, this driver posts ``TerminalGone`` once to the
    app, which stops the crawl as ``q`` does (state saved, run ``stopped``):

    - a hangup watch thread waits in poll(2) on the input and output descriptors for
      POLLHUP, POLLERR or POLLNVAL (it asks for no other event on them, so it sleeps
      until then, or until ``stop_application_mode`` wakes it through a pipe);
    - a failed write (``_HangupTolerantOutput``: Textual's writer thread would die on
      it and hang the shutdown; the output is ``sys.__stderr__``, set as the private
      ``_file`` by Textual, which ``tests/loopback/test_cli_terminal.py`` catches if it changes);
    - a read that raises in Textual's input thread (EIO), which Textual would turn
      into ``App.panic``: the app would close at once and cancel the crawl unsaved.

    Once the terminal is gone the input thread is told to stop (Textual's would read
    EOF in a busy loop) and the output drops what is written.
    """

    def __init__(
        self,
        app: App[Any],
        *,
        debug: bool = False,
        mouse: bool = True,
        size: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self._gone = False
        self._gone_lock = threading.Lock()
        self._watch: threading.Thread | None = None
        self._watch_pipe = (-1, -1)  # the watch's stop pipe: read end, write end
        if self._file is not None:
            # Textual types _file as TextIO; its writer thread, the one user, calls only
            # write, flush and fileno, which _HangupTolerantOutput has.
            self._file = _HangupTolerantOutput(self._file, self.terminal_gone)  # type: ignore[assignment]

    def terminal_gone(self) -> None:
        """The terminal is gone (any thread; once): stop reading it, post ``TerminalGone``."""
        with self._gone_lock:
            if self._gone:
                return
            self._gone = True
        self.exit_event.set()
        self._app.post_message(TerminalGone())

    def start_application_mode(self) -> None:
        """Textual's start, then the hangup watch (unless it runs already)."""
        super().start_application_mode()  # type: ignore[no-untyped-call]
        if self._watch is None and self._file is not None:
            self._watch_pipe = os.pipe()
            fds = {self.fileno, self._file.fileno()}
            self._watch = threading.Thread(
                target=self._watch_hangup, args=(fds,), name="crawldeck-hangup", daemon=True
            )
            self._watch.start()

    def stop_application_mode(self) -> None:
        """Textual's stop (it stops the input thread), then the hangup watch's."""
        super().stop_application_mode()
        if self._watch is not None:
            stop_r, stop_w = self._watch_pipe
            os.write(stop_w, b"\0")
            self._watch.join()
            os.close(stop_r)
            os.close(stop_w)
            self._watch = None

    def _watch_hangup(self, fds: set[int]) -> None:
        """The hangup watch: ``terminal_gone`` on a hangup of ``fds``, or return once
        its stop pipe is readable."""
        stop_r = self._watch_pipe[0]
        poller = select.poll()
        for fd in fds:
            poller.register(fd, 0)  # reports only POLLHUP, POLLERR, POLLNVAL: gone
        poller.register(stop_r, select.POLLIN)
        if all(fd != stop_r for fd, _ in poller.poll()):
            self.terminal_gone()

    def run_input_thread(self) -> None:
        """Textual's input loop; a read that fails (EIO: the terminal is gone) ends it
        with ``terminal_gone`` instead of Textual's ``App.panic``."""
        try:
            super().run_input_thread()
        except OSError:
            self.terminal_gone()
