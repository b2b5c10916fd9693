"""``crawldeck attach DB``: the console of a crawl running headless, over its attach
socket (``core.crawl.attach``), in a terminal or, with ``--web PORT``, in browsers.

The attached console is the console (``tui.app.CrawlApp``) fed from another
``CrawlSource``: ``SocketSource`` reads the snapshots the crawl publishes on its socket
and sends the console's commands there. Only its keys differ (``AttachedApp``): ``q``,
``d``, Ctrl-C and a closed terminal detach (the crawl goes on, as after tmux's
detach); ``S`` stops the crawl cleanly, as ``q`` does in the crawl's own console.

``SocketSource`` holds two connections: the *watch* one, read by ``run`` on the
console's loop (hello, snapshots, the run's end), and the *ask* one, a blocking
socket for the console's reads and commands (``query_hosts``, ``host_detail``,
``pause`` ...), which the console calls synchronously: each is one round trip on the
local socket, answered by the crawl's loop between two of its tasks, given up after
``ASK_TIMEOUT_S``. Its failures are shown in the console (``on_error``), never raised
into it.

``--web PORT`` serves this console to browsers: ``cli.attach``.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import socket
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar, Final, get_args

from textual.binding import Binding, BindingType

from crawldeck.core.crawl.attach import (
    CONNECT_TIMEOUT_S,
    MAX_FRAME_BYTES,
    Frame,
    check_hello,
    connect_error,
    decode_answer,
    decode_frame,
    encode,
    find_socket,
    open_blocking,
    recv_line,
)
from crawldeck.core.crawl.engine import CrawlResult, Outcome
from crawldeck.core.crawl.snapshot import CrawlSnapshot, HostDetail, HostRow
from crawldeck.core.errors import AttachError
from crawldeck.tui.app import CrawlApp, run_app
from crawldeck.tui.stops import go_on_line
from crawldeck.tui.terminal import HangupTolerantDriver

#: Seconds a read or command of the console may wait for the crawl's answer.
ASK_TIMEOUT_S: Final = 5.0
#: What the attached console's detach keys do (the help's line).
DETACH_TIP: Final = "detach: close this console, the crawl goes on (crawldeck attach DB again)"
#: What the attached console's ``S`` does (the help's line).
STOP_TIP: Final = (
    "stop the crawl cleanly (state saved), as q does in its own console: press it twice"
)
#: How long (s) after a first ``S`` a second one stops the crawl: the other console's
#: crawl is not stopped by one stray key (issue #25).
STOP_CONFIRM_S: Final = 5.0
#: The environment variable textual-serve sets for the processes it runs.
WEB_DRIVER_ENV: Final = "TEXTUAL_DRIVER"
#: How often a console served to a browser checks that its server still runs (s).
SERVER_CHECK_S: Final = 1.0


class CrawlLost(AttachError):
    """The crawl went away while attached: its socket closed without the run's end."""


def _outcome(text: str) -> Outcome:
    """``text`` as an ``Outcome`` (an unknown one from a newer crawl: ``stopped``)."""
    for known in get_args(Outcome):
        if text == known:
            return known  # type: ignore[no-any-return]
    return "stopped"


def in_directory(
    cwd: str, hint: str | None, seed_command: tuple[str, tuple[str, ...]] | None
) -> tuple[str | None, tuple[str, tuple[str, ...]] | None]:
    """The crawl's resume line (``LABEL: COMMAND``) and seed command made to run from
    any directory: each command preceded by ``cd CWD &&`` (``cwd``: where the crawl
    runs; its ``--db`` and seeds files may be relative to it). An attached console in
    another directory printed ``--db att.db``, and running that there started a new
    crawl (issue #25 trial 16)."""
    go = f"cd {shlex.quote(cwd)} && "
    if hint is not None and ": " in hint:
        label, command = hint.split(": ", 1)
        hint = f"{label}: {go}{command}"
    if seed_command is not None:
        seed_command = (go + seed_command[0], seed_command[1])
    return hint, seed_command


class SocketSource:
    """A running crawl seen through its attach socket: the ``tui.app.CrawlSource`` of
    the attached console (make it with ``connect``).

    Attributes:
        db: the crawl file as the crawl names it (absolute).
        pid: the crawl's process id.
        strict_robots: the crawl's ``robots_on_failure`` is ``disallow``.
        resume_hint: how to resume the crawl once stopped, as the crawl says it.
        seed_command: the crawl's command split where one more seed goes (``CrawlApp``'s).
        on_error: called with one line when a read or command fails (the console
            shows it); by default nothing.
    """

    def __init__(
        self,
        hello: Frame,
        first: CrawlSnapshot,
        watch: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        ask: socket.socket,
    ) -> None:
        self.db = Path(hello.db)
        self.pid = hello.pid
        self.strict_robots = hello.strict_robots
        self.resume_hint, self.seed_command = hello.resume_hint, hello.seed_command
        here = os.getcwd()
        if hello.cwd and hello.cwd != here:  # the commands are run where the crawl was
            self.resume_hint, self.seed_command = in_directory(
                hello.cwd, self.resume_hint, self.seed_command
            )
        self.on_error: Callable[[str], None] = lambda _: None
        self._reader, self._writer = watch
        self._ask_sock = ask
        self._ask_buffer = bytearray()
        self._ask_lock = threading.Lock()
        self._ask_id = 0
        self._latest = first
        self._paused = first.state == "paused"
        self._subscribers: list[Callable[[CrawlSnapshot], None]] = []
        self._final: tuple[HostRow, ...] | None = None

    @classmethod
    async def connect(cls, db: Path) -> SocketSource:
        """Connect to the crawl running on ``db``: the watch connection (its ``hello``
        and first snapshot read) and the ask connection.

        Raises:
            AttachError: no crawl runs on ``db`` (no socket, a stale one), the socket
                is another user's or refused us, or it speaks another protocol.
        """
        path = find_socket(db)
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(str(path), limit=MAX_FRAME_BYTES), CONNECT_TIMEOUT_S
            )
        except OSError as exc:
            raise connect_error(db, path, exc) from None
        except TimeoutError:
            raise AttachError(f"{path} does not answer") from None
        try:
            hello = check_hello(await _read_frame(reader), path)
            writer.write(encode({"op": "watch"}))
            first = await _read_frame(reader)
            if first.snap is None:
                raise AttachError(f"{path} sent no snapshot")
            ask, _ = await asyncio.to_thread(open_blocking, db, ASK_TIMEOUT_S)
        except BaseException:
            writer.close()
            raise
        return cls(hello, first.snap, (reader, writer), ask)

    def close(self) -> None:
        """Close both connections (the crawl goes on)."""
        self._writer.close()
        self._ask_sock.close()

    # ------------------------------------------------------------- CrawlSource

    def subscribe(self, callback: Callable[[CrawlSnapshot], None]) -> None:
        """Call ``callback`` with every snapshot the crawl publishes (from ``run``)."""
        self._subscribers.append(callback)

    async def run(self) -> CrawlResult:
        """Read the crawl's frames until its run ends; its outcome and last totals.

        Raises:
            AttachError: the socket closed without the run's end (the crawl was
                killed), or a frame is not understood.
        """
        while True:
            try:
                line = await self._reader.readline()
            except (ValueError, ConnectionError) as exc:
                raise AttachError(f"lost the crawl: {exc}") from None
            if not line.endswith(b"\n"):
                raise AttachError("lost the crawl: its socket closed without the run's end")
            frame = decode_frame(line)
            if frame.t == "snap" and frame.snap is not None:
                self._take(frame.snap)
            elif frame.t == "end":
                self._final = frame.hosts
                return CrawlResult(_outcome(frame.outcome), self._latest.counters)

    def _take(self, snap: CrawlSnapshot) -> None:
        self._latest = snap
        self._paused = snap.state == "paused"
        for callback in self._subscribers:
            callback(snap)

    def snapshot(self) -> CrawlSnapshot:
        """The newest snapshot received."""
        return self._latest

    @property
    def paused(self) -> bool:
        """Whether the crawl is paused (its newest snapshot, or the answer to ``p``)."""
        return self._paused

    def pause(self) -> None:
        """Pause the crawl (in-flight fetches finish)."""
        self._command("pause")

    def resume(self) -> None:
        """Resume the crawl."""
        self._command("resume")

    def request_stop(self) -> None:
        """Stop the crawl cleanly (its state saved), as ``q`` in its own console."""
        self._command("stop")

    def _command(self, op: str) -> None:
        answer: dict[str, bool] | None = self._try(op, dict[str, bool], None)
        if answer is not None:
            self._paused = answer.get("paused", self._paused)

    def add_seeds(self, seed_urls: Iterable[str]) -> list[tuple[str, str]]:
        """Add seeds; ``(url, reason)`` per refused one (all of them when the crawl
        cannot be asked: the reason says why)."""
        urls = list(seed_urls)
        try:
            refused: list[tuple[str, str]]
            refused = self._ask("add_seeds", list[tuple[str, str]], urls=urls)
            return refused
        except AttachError as exc:
            return [(url, str(exc)) for url in urls]

    async def add_seeds_live(self, seed_urls: Iterable[str]) -> list[tuple[str, str]]:
        """``add_seeds`` in a thread (the crawl checks its seen set first)."""
        return await asyncio.to_thread(self.add_seeds, seed_urls)

    def query_hosts(self, text: str = "", limit: int = 50) -> tuple[HostRow, ...]:
        """The rows of the hosts whose key holds ``text`` (after the run's end: of its
        final rows); none when the crawl cannot be asked."""
        if self._final is not None:
            return tuple(row for row in self._final if text in row.host)[:limit]
        rows: tuple[HostRow, ...] = self._try(
            "query_hosts", tuple[HostRow, ...], (), text=text, limit=limit
        )
        return rows

    def host_detail(self, host: str, queue_head: int = 20) -> HostDetail | None:
        """The detail view of ``host``; ``None`` if unknown or the crawl is gone."""
        if self._final is not None:
            return None
        detail: HostDetail | None = self._try(
            "host_detail", HostDetail | None, None, host=host, queue_head=queue_head
        )
        return detail

    # ------------------------------------------------------------- the ask socket

    def _try(self, op: str, kind: Any, default: Any, **fields: Any) -> Any:
        """``_ask``, or ``default`` after telling ``on_error`` why not."""
        try:
            return self._ask(op, kind, **fields)
        except AttachError as exc:
            self.on_error(str(exc))
            return default

    def _ask(self, op: str, kind: Any, **fields: Any) -> Any:
        """One request on the ask socket and its answer as ``kind``.

        Raises:
            AttachError: no answer within ``ASK_TIMEOUT_S``, the socket closed, or the
                crawl refused the request (its line).
        """
        with self._ask_lock:
            self._ask_id += 1
            ask_id = self._ask_id
            try:
                self._ask_sock.sendall(encode({"op": op, "id": ask_id, **fields}))
                while True:
                    line = recv_line(self._ask_sock, self._ask_buffer)
                    frame = decode_frame(line)
                    if frame.t == "reply" and frame.id in (ask_id, 0):
                        return decode_answer(line, frame, kind)
            except TimeoutError:
                raise AttachError(f"the crawl did not answer within {ASK_TIMEOUT_S:g} s") from None
            except OSError as exc:
                raise AttachError(f"lost the crawl: {exc.strerror or exc}") from None


async def _read_frame(reader: asyncio.StreamReader) -> Frame:
    """The next frame of a watch connection, within ``CONNECT_TIMEOUT_S``.

    Raises:
        AttachError: the socket closed or said nothing in time, or the frame is a
            ``refused`` one (its reason) or not understood.
    """
    try:
        line = await asyncio.wait_for(reader.readline(), CONNECT_TIMEOUT_S)
    except TimeoutError:
        raise AttachError("the crawl's socket said nothing") from None
    except (ValueError, ConnectionError) as exc:
        raise AttachError(f"lost the crawl: {exc}") from None
    if not line.endswith(b"\n"):
        raise AttachError("the crawl's socket closed at once")
    frame = decode_frame(line)
    if frame.t == "refused":
        raise AttachError(frame.why)
    return frame


class AttachedApp(CrawlApp):
    """The console over a ``SocketSource``: the crawl's own console, but ``q``, ``d``,
    Ctrl-C and a closed terminal detach, and ``S`` twice stops the crawl.

    Args:
        source: the connected crawl.
        db: the crawl file as the operator named it (``e`` exports beside it).

    Its header starts with its title, ``crawldeck attach``, from ``screens.WIDE_HEADER``
    cells on and is the console's below (``StatusBar``: 80 columns keep the figures).

    After the app exits, ``result`` holds the crawl's ``CrawlResult`` when its run
    ended while attached (``None``: detached before), ``error`` what ``run`` raised (an
    ``AttachError``: the crawl went away).
    """

    TITLE = "crawldeck attach"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "detach", "Detach", tooltip=DETACH_TIP),
        Binding("d", "detach", "Detach", show=False, tooltip=DETACH_TIP),
        Binding("ctrl+c,ctrl+q", "detach", "Detach", show=False, priority=True,
                tooltip=DETACH_TIP),
        Binding("S", "stop_crawl", "Stop", tooltip=STOP_TIP),
    ]  # fmt: skip

    def __init__(self, source: SocketSource, db: Path) -> None:
        web = bool(os.environ.get(WEB_DRIVER_ENV))
        super().__init__(
            source, db, strict_robots=source.strict_robots, resume_hint=source.resume_hint,
            seed_command=source.seed_command, driver_class=None if web else HangupTolerantDriver,
        )  # fmt: skip
        source.on_error = self._source_error
        self._stop_asked_at: float | None = None  # a first S's time (time.monotonic)
        #: Served to a browser: the pid of textual-serve's process, this one's parent.
        self._server_pid = os.getppid() if web else None

    def on_mount(self) -> None:
        """Served to a browser, look for the server every ``SERVER_CHECK_S``."""
        if self._server_pid is not None:
            self.set_interval(SERVER_CHECK_S, self._check_server)

    def _check_server(self) -> None:
        """Detach once the textual-serve process that started this one is gone (killed):
        Textual's web driver ends its input at the pipe's end of file but not the app,
        which would otherwise stay, an orphan, on the crawl's socket for good."""
        if os.getppid() != self._server_pid:
            self.exit()

    def _source_error(self, message: str) -> None:
        self.notify(message, severity="error", timeout=6)

    def request_quit(self) -> None:
        """Detach: close this console; the crawl goes on."""
        self.exit()

    def action_detach(self) -> None:
        """q, d, Ctrl-C: detach."""
        self.request_quit()

    def action_stop_crawl(self) -> None:
        """S, then S again within ``STOP_CONFIRM_S``: stop the crawl cleanly; the
        console stays until ``q`` (STOPPED). A first S only says so. Once the run has
        ended the key is off (``CrawlApp.check_action``)."""
        now = time.monotonic()
        if self._stop_asked_at is None or now - self._stop_asked_at > STOP_CONFIRM_S:
            self._stop_asked_at = now
            self.notify(
                "Press S again to stop the crawl (state saved, resumable); q detaches "
                "and leaves it running.",
                severity="warning", timeout=STOP_CONFIRM_S,
            )  # fmt: skip
            return
        self._stop_asked_at = None
        self.clear_notifications()  # the "press S again" prompt is answered
        self.engine.request_stop()
        self._draw_status()
        self._show_resume("Stopping: in-flight fetches finish, state is saved.")


async def run_attached(
    db: Path, *, headless: bool = False, size: tuple[int, int] | None = None
) -> tuple[CrawlResult | None, str | None]:
    """Attach the console to the crawl running on ``db`` until the operator detaches
    (``headless``/``size``: as ``tui.app.run_console``, for tests).

    Returns:
        the crawl's result when its run ended while attached, else ``None`` (detached);
        and how to continue it, as the console said it (``tui.stops.go_on_line``:
        ``resume with: ...``, in the crawl's directory), ``None`` when detached or
        finished (issue #25 trial 19: after ``S S`` and ``q`` the terminal did not say).

    Raises:
        AttachError: no crawl to attach to (one line).
        CrawlLost: the crawl went away while attached.
    """
    source = await SocketSource.connect(db)
    try:
        app = AttachedApp(source, db)
        await run_app(app, headless=headless, size=size)
    finally:
        source.close()
    if isinstance(app.error, AttachError):
        raise CrawlLost(str(app.error)) from app.error
    if app.error is not None:
        raise app.error
    if app.result is None:
        return None, None
    return app.result, go_on_line(app.result.outcome, app.resume_hint)
