"""The attach socket of a running crawl (issue #25 item 8): its snapshots out, the
console's commands in, on a Unix socket only its user can open.

A headless crawl (``--no-ui``, under systemd or ``nohup``) starts an ``AttachServer``
beside its file; ``crawldeck attach DB`` (``tui.attach``) opens the same console on it,
and closing that console leaves the crawl running, as detaching from tmux does.

**Where**: ``DB.sock`` beside the crawl file (``socket_path``). A Unix socket's name
holds at most 107 bytes (``sun_path`` is 108 with its NUL, unix(7)); a longer one is
made as ``crawldeck-<hash>.sock`` in ``$XDG_RUNTIME_DIR`` (the per-user runtime
directory of the XDG Base Directory spec), else in ``/tmp/crawldeck-<uid>/`` (made
0700 and refused unless it is ours), and ``DB.sock`` is then a regular file holding
that path (``find_socket`` follows it).

**Who**: the socket is made under umask 0o177 (mode 0600: only its user may connect,
unix(7): connecting needs write permission), and every connection's peer is checked
with ``SO_PEERCRED`` (socket(7)): another uid gets one ``refused`` frame and is closed,
whatever the mode has been loosened to.

**Frames**: newline-delimited JSON objects (msgspec; a string's newlines are escaped),
each with its type in ``t``. The server sends ``hello`` (protocol version, the crawl
file, its pid, how to show robots.txt and the resume hint) on connect; a client that
sends ``{"op": "watch"}`` then gets a ``snap`` (a ``core.crawl.snapshot.CrawlSnapshot``) at
once, after every command and at each of the engine's snapshots, and ``end`` (the
outcome and the hosts' final rows) when the run ends. Requests ``{"op": ..., "id": N}``
(``pause``, ``resume``, ``stop``, ``add_seeds``, ``query_hosts``, ``host_detail``: the
console's commands and reads, ``Request``) get a ``reply`` with the same ``id`` and
``ok`` (the answer) or ``error`` (one line). A request line is at most
``MAX_REQUEST_BYTES``.

**Cost and bounds**: the server is one more snapshot subscriber; with no watcher it
returns at once (no encoding). With watchers each snapshot is encoded once (about
0.1 ms for 80 KB) and offered to every watcher, whose slot keeps only the newest
(drop-oldest); a client's replies wait in a queue of at most ``MAX_PENDING_REPLIES``.
A client that takes nothing for ``DRAIN_TIMEOUT_S`` (its socket buffer full), sends an
overlong line or lets its replies pile up is dropped. The crawl never waits for a
client.

**Life**: ``start`` replaces a stale socket (a killed crawl's: connecting is refused)
and refuses to take over one a live process answers on; ``close`` sends ``end`` to
the watchers, waits at most ``END_WAIT_S`` for them, and removes the socket (and the
pointer file) if it is still the one it made.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import socket
import stat
import struct
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, Protocol

import msgspec

from crawldeck.core.crawl.snapshot import CrawlSnapshot, HostDetail, HostRow
from crawldeck.core.errors import AttachError
from crawldeck.core.storage.store import check_header

#: The version of the frames; a client refuses a ``hello`` of another one.
PROTOCOL: Final = 1
#: The longest path a Unix socket can be bound to, in bytes (``sun_path`` is 108 bytes
#: with its terminating NUL on Linux, unix(7)).
SUN_PATH_MAX: Final = 107
#: The longest request line a client may send (bytes, its newline included).
MAX_REQUEST_BYTES: Final = 64 * 1024
#: The longest frame a client reads (bytes): a snapshot is 10-100 KB (200 blocked
#: URLs and 200 log lines at most), a host's detail less.
MAX_FRAME_BYTES: Final = 16 * 1024 * 1024
#: Seconds a client may take nothing (its socket buffer full) before it is dropped.
DRAIN_TIMEOUT_S: Final = 10.0
#: Replies a client may leave unread before it is dropped.
MAX_PENDING_REPLIES: Final = 64
#: Connections served at once; one more is refused.
MAX_CLIENTS: Final = 64
#: Seconds ``close`` waits for the watchers to take their ``end`` frame.
END_WAIT_S: Final = 2.0
#: Seconds a connect (``start``'s probe of an old socket, a client's) may take.
CONNECT_TIMEOUT_S: Final = 5.0
#: The most seeds one ``add_seeds`` request may carry.
MAX_SEEDS: Final = 100
#: The most host rows a ``query_hosts`` request or the ``end`` frame carries (the
#: console's ``FINAL_LIMIT``).
MAX_HOST_ROWS: Final = 500
#: The most queued URLs a ``host_detail`` request may ask for.
MAX_QUEUE_HEAD: Final = 100

#: The crawl's log line for a stop asked through the socket.
STOP_ASKED: Final = "stop asked from an attached console (crawldeck attach); state saved"

#: Who paused, resumed or stopped the crawl when an attached console did
#: (``Engine.pause``'s, ``resume``'s and ``request_stop``'s ``by``, as the crawl's log
#: and the end-of-run summary name it: issue #25).
STOPPED_BY: Final = "from an attached console (crawldeck attach)"

Op = Literal["watch", "pause", "resume", "stop", "add_seeds", "query_hosts", "host_detail"]
FrameType = Literal["hello", "snap", "end", "reply", "refused"]

_ENCODER: Final = msgspec.json.Encoder()
_FRAME_DECODER: Final = msgspec.json.Decoder()


@dataclass(frozen=True, slots=True)
class Request:
    """One request line of a client.

    Attributes:
        op: what to do: ``watch`` (send snapshots from now on), ``pause``, ``resume``,
            ``stop`` (as the console's ``q``: state saved), ``add_seeds`` (``urls``),
            ``query_hosts`` (``text``, ``limit``), ``host_detail`` (``host``,
            ``queue_head``).
        id: echoed in the reply (0: the client expects none, as after ``watch``).
        urls: the seeds of ``add_seeds``, at most ``MAX_SEEDS``.
        text: the host filter of ``query_hosts`` (part of a host key).
        limit: the most rows ``query_hosts`` returns, at most ``MAX_HOST_ROWS``.
        host: the host key of ``host_detail``.
        queue_head: the queued URLs ``host_detail`` lists, at most ``MAX_QUEUE_HEAD``.
    """

    op: Op
    id: int = 0
    urls: tuple[str, ...] = ()
    text: str = ""
    limit: int = 50
    host: str = ""
    queue_head: int = 20


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame from the server, as a client reads it (``decode_frame``).

    Attributes:
        t: its type: ``hello``, ``snap``, ``end``, ``reply`` or ``refused``.
        protocol, db, pid, strict_robots, resume_hint, seed_command: the ``hello``'s:
            ``PROTOCOL``, the crawl file (absolute), the crawl's process id, whether
            robots.txt failures disallow (``robots_on_failure = "disallow"``), the line
            that tells how to resume the crawl once stopped (``None``: none), its
            command split where one more seed goes (``tui.app.CrawlApp``'s; ``None``:
            none), and the directory both are run in (the crawl's working directory:
            their paths are relative to it).
        snap: the ``snap``'s snapshot.
        outcome, hosts: the ``end``'s: how the run ended (``core.crawl.engine.Outcome``) and
            the hosts' final rows (at most ``MAX_HOST_ROWS``).
        id, error: the ``reply``'s: the request's ``id`` and, when it failed, one line
            saying why (its answer, ``ok``, is read by ``decode_answer``).
        why: the ``refused``'s reason.
    """

    t: FrameType
    protocol: int = 0
    db: str = ""
    pid: int = 0
    strict_robots: bool = False
    resume_hint: str | None = None
    seed_command: tuple[str, tuple[str, ...]] | None = None
    cwd: str = ""
    snap: CrawlSnapshot | None = None
    outcome: str = ""
    hosts: tuple[HostRow, ...] = ()
    id: int = 0
    error: str | None = None
    why: str = ""


def encode(value: object) -> bytes:
    """``value`` (a frame or request as a dict; dataclasses inside) as one JSON line."""
    return _ENCODER.encode(value) + b"\n"


def decode_frame(line: bytes) -> Frame:
    """A server's frame from one line.

    Raises:
        AttachError: not a frame of this protocol (one line naming what is wrong).
    """
    try:
        return msgspec.json.decode(line, type=Frame)
    except msgspec.MsgspecError as exc:
        raise AttachError(f"a frame of the crawl's socket is not understood: {exc}") from None


def decode_answer(line: bytes, frame: Frame, kind: Any) -> Any:
    """The answer (``ok``) of the ``reply`` frame ``frame``, read from ``line``, as
    ``kind`` (``HostDetail | None``, ``tuple[HostRow, ...]`` ...).

    Raises:
        AttachError: the reply is an error (its line), or its answer is not a ``kind``.
    """
    if frame.error is not None:
        raise AttachError(frame.error)
    try:
        return msgspec.convert(_FRAME_DECODER.decode(line).get("ok"), type=kind)
    except msgspec.MsgspecError as exc:
        raise AttachError(f"a reply of the crawl's socket is not understood: {exc}") from None


def socket_path(db: Path) -> Path:
    """The name of the attach socket of crawl file ``db``: ``DB.sock`` beside it (the
    socket, or a pointer file naming it when the path is too long; ``find_socket``)."""
    real = Path(db).resolve()
    return real.with_name(real.name + ".sock")


def _fits(path: Path) -> bool:
    return len(os.fsencode(path)) <= SUN_PATH_MAX


def _staging(path: Path) -> Path:
    """The name the socket ``path`` is bound under before it listens (``AttachServer.start``
    renames it then): ``path`` and ``.<pid>``."""
    return path.with_name(f"{path.name}.{os.getpid()}")


def _own_dir(path: Path) -> bool:
    """Whether ``path`` is a real directory (no symlink) of ours that nobody else may
    write to or list."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def short_path(db: Path) -> Path:
    """Where the socket of ``db`` goes when ``DB.sock`` (or the name it is bound under
    first, ``_staging``) is over ``SUN_PATH_MAX`` bytes:
    ``crawldeck-<16 hex digits of the file's SHA-256>.sock`` in ``$XDG_RUNTIME_DIR``
    when it is ours, else in ``/tmp/crawldeck-<uid>/`` (made with mode 0700).

    Raises:
        AttachError: ``/tmp/crawldeck-<uid>`` is not a directory of ours with mode
            0700 (someone else made it), or even this path is too long.
    """
    name = f"crawldeck-{hashlib.sha256(os.fsencode(Path(db).resolve())).hexdigest()[:16]}.sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and _own_dir(Path(runtime)) and _fits(_staging(Path(runtime) / name)):
        return Path(runtime) / name
    private = Path("/tmp") / f"crawldeck-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        private.mkdir(mode=0o700)
    if not _own_dir(private):
        raise AttachError(f"{private} is not a directory of ours with mode 0700: no attach socket")
    return private / name


def find_socket(db: Path) -> Path:
    """The socket a client connects to for crawl file ``db``: ``DB.sock``, or the
    path its pointer file names.

    Raises:
        AttachError: no file ``db``; no ``DB.sock`` (no crawl runs on the file, or not
            headless); or it is neither a socket nor a pointer file.
        StoreError: no ``DB.sock``, and ``db`` is a file but not SQLite (as every
            other command says it).
    """
    named = socket_path(db)
    try:
        st = os.lstat(named)
    except FileNotFoundError:
        if not os.path.exists(db):
            raise AttachError(f"no crawl file {db}: no such file") from None
        check_header(db)  # not a crawl file: say that, not "no running crawl"
        raise AttachError(f"no running crawl on {db} (no socket {named})") from None
    except OSError as exc:
        raise AttachError(f"cannot read {named}: {exc.strerror}") from None
    if stat.S_ISSOCK(st.st_mode):
        return named
    if not stat.S_ISREG(st.st_mode) or st.st_size > 4096:
        raise AttachError(f"{named} is neither a socket nor a pointer to one")
    try:
        target = Path(named.read_text(encoding="utf-8").strip())
    except (OSError, UnicodeDecodeError) as exc:
        raise AttachError(f"cannot read {named}: {exc}") from None
    if not target.is_absolute() or not _fits(target):
        raise AttachError(f"{named} names no socket path")
    return target


def peer_uid(sock: Any) -> int:
    """The user id of the process at the other end of Unix socket ``sock``
    (``SO_PEERCRED``, socket(7): the credentials it had when it connected)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def connect_error(db: Path, path: Path, exc: OSError) -> AttachError:
    """The one line for a failed connect to ``path``, the socket of ``db``."""
    if isinstance(exc, ConnectionRefusedError | FileNotFoundError):
        return AttachError(
            f"no running crawl on {db} (its socket {path} is stale: the crawl that made it is gone)"
        )
    if isinstance(exc, PermissionError):
        return AttachError(f"{path} is not yours to open (permission denied)")
    return AttachError(f"cannot connect to {path}: {exc.strerror or exc}")


def _remove_stale(path: Path) -> None:
    """Remove a stale socket or pointer file.

    Raises:
        AttachError: it cannot be removed (one line).
    """
    try:
        path.unlink()
    except OSError as exc:
        raise AttachError(f"cannot remove the stale {path}: {exc.strerror}") from None


def recv_line(sock: socket.socket, buffer: bytearray) -> bytes:
    """The next line from blocking socket ``sock`` (``buffer`` keeps what follows it).

    Raises:
        AttachError: the socket closed, or the line is over ``MAX_FRAME_BYTES``.
        OSError: the socket failed (``TimeoutError`` after its timeout).
    """
    while (end := buffer.find(b"\n")) < 0:
        if len(buffer) > MAX_FRAME_BYTES:
            raise AttachError("a frame of the crawl's socket is too long")
        data = sock.recv(1 << 16)
        if not data:
            raise AttachError("lost the crawl: its socket closed")
        buffer += data
    line = bytes(buffer[:end])
    del buffer[: end + 1]
    return line


def open_blocking(db: Path, timeout_s: float = CONNECT_TIMEOUT_S) -> tuple[socket.socket, Frame]:
    """A blocking connection to the crawl running on ``db`` (reads and writes give up
    after ``timeout_s``) and its ``hello``.

    Raises:
        AttachError: no crawl runs on ``db`` (no socket, a stale one), the socket is
            another user's or refused us (its reason), or it speaks another protocol.
    """
    path = find_socket(db)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    try:
        sock.connect(str(path))
        hello = check_hello(decode_frame(recv_line(sock, bytearray())), path)
    except OSError as exc:
        sock.close()
        raise connect_error(db, path, exc) from None
    except AttachError:
        sock.close()
        raise
    return sock, hello


def check_hello(frame: Frame, path: Path) -> Frame:
    """``frame`` if it is a ``hello`` of this protocol.

    Raises:
        AttachError: it is a ``refused`` frame (its reason), or not such a hello.
    """
    if frame.t == "refused":
        raise AttachError(frame.why)
    if frame.t != "hello" or frame.protocol != PROTOCOL:
        raise AttachError(
            f"{path} speaks another protocol (version {frame.protocol}, this crawldeck "
            f"{PROTOCOL}): attach with the crawldeck that runs the crawl"
        )
    return frame


class AttachTarget(Protocol):
    """What the server needs of a crawl; ``core.crawl.engine.Engine`` provides it (see there)."""

    def subscribe(self, callback: Callable[[CrawlSnapshot], None]) -> None: ...
    def snapshot(self) -> CrawlSnapshot: ...
    def pause(self, by: str = "") -> None: ...
    def resume(self, by: str = "") -> None: ...
    @property
    def paused(self) -> bool: ...
    def request_stop(self, by: str | None = None) -> None: ...
    def log(self, line: str) -> None: ...
    def add_seeds_live(self, seed_urls: Iterable[str]) -> Awaitable[list[tuple[str, str]]]: ...
    def query_hosts(self, text: str = "", limit: int = 50) -> tuple[HostRow, ...]: ...
    def host_detail(self, host: str, queue_head: int = 20) -> HostDetail | None: ...


@dataclass(frozen=True, slots=True)
class AttachStatistics:
    """The server's figures: ``clients`` connected now, ``watching`` among them,
    ``refused`` connections (another user, too many), ``dropped`` clients (too slow, an
    overlong line, unread replies), ``snapshots`` encoded (once each, whatever the
    watchers)."""

    clients: int
    watching: int
    refused: int
    dropped: int
    snapshots: int


class _Client:
    """One connection: its writer, its pending replies and the newest frame for it."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.watching = False
        self.latest: bytes | None = None
        self.replies: deque[bytes] = deque()
        self.end: bytes | None = None
        self.wake = asyncio.Event()

    def offer(self, frame: bytes) -> None:
        """The newest snapshot frame: replaces one not sent yet (drop-oldest)."""
        self.latest = frame
        self.wake.set()

    def reply(self, frame: bytes) -> bool:
        """Queue a reply; ``False`` when ``MAX_PENDING_REPLIES`` wait already."""
        if len(self.replies) >= MAX_PENDING_REPLIES:
            return False
        self.replies.append(frame)
        self.wake.set()
        return True


class AttachServer:
    """The attach socket of one crawl (see the module docstring).

    Args:
        engine: the crawl (``core.crawl.engine.Engine``).
        db: its crawl file; the socket is ``socket_path(db)`` (or ``short_path``).
        strict_robots: ``robots_on_failure`` is ``disallow`` (told in ``hello``).
        resume_hint: the line that tells how to resume the crawl (told in ``hello``).
        seed_command: the crawl's command split where one more seed goes (told in
            ``hello``; see ``tui.app.CrawlApp``).
        drain_timeout_s: seconds a client may take nothing before it is dropped.
    """

    def __init__(
        self,
        engine: AttachTarget,
        db: Path,
        *,
        strict_robots: bool = False,
        resume_hint: str | None = None,
        seed_command: tuple[str, tuple[str, ...]] | None = None,
        drain_timeout_s: float = DRAIN_TIMEOUT_S,
    ) -> None:
        self._engine = engine
        self._drain_timeout_s = drain_timeout_s
        self.db = Path(db).resolve()
        self._hello = encode(
            {"t": "hello", "protocol": PROTOCOL, "db": str(self.db), "pid": os.getpid(),
             "strict_robots": strict_robots, "resume_hint": resume_hint,
             "seed_command": seed_command, "cwd": os.getcwd()}
        )  # fmt: skip
        self._uid = os.getuid()
        self._clients: dict[_Client, asyncio.Task[None]] = {}
        #: Each connection's task, until it ends: ``close`` waits for them, so none is
        #: left for the loop's end to cancel.
        self._connections: set[asyncio.Task[None]] = set()
        self._watching = 0
        self._refused = 0
        self._dropped = 0
        self._snapshots = 0
        self._server: asyncio.AbstractServer | None = None
        self._ended = False
        #: The socket bound (``None`` before ``start``) and the pointer file, if any.
        self.path: Path | None = None
        self._pointer: Path | None = None
        self._inode = 0

    def statistics(self) -> AttachStatistics:
        """The server's figures now."""
        return AttachStatistics(
            len(self._clients), self._watching, self._refused, self._dropped, self._snapshots
        )

    async def start(self) -> Path:
        """Bind the socket (mode 0600), replacing a stale one, and subscribe to the
        engine's snapshots; returns the socket's path.

        Raises:
            AttachError: a live process answers on the socket already, an old socket
                or pointer cannot be replaced, or the socket cannot be bound.
        """
        named = socket_path(self.db)
        real = named if _fits(_staging(named)) else short_path(self.db)
        await self._clear(named)
        if real != named:
            await self._clear(real)
        # bound under a name of its own, listening, then renamed into place: a client
        # finds the socket only once it accepts (binding makes the file, and a connect
        # before the listen was refused and read as a stale socket: under load,
        # tests/console/test_attach.py; issue #24 item 8)
        staging = _staging(real)
        with contextlib.suppress(FileNotFoundError):
            staging.unlink()
        old = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(
                self._accept, path=str(staging), limit=MAX_REQUEST_BYTES
            )
            os.rename(staging, real)
        except OSError as exc:
            if self._server is not None:
                self._server.close()
                self._server = None
            with contextlib.suppress(OSError):
                staging.unlink()
            raise AttachError(f"cannot make the attach socket {real}: {exc.strerror}") from None
        finally:
            os.umask(old)
        self.path = real
        self._inode = os.stat(real).st_ino
        if real != named:
            try:
                fd = os.open(named, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w", encoding="utf-8") as pointer:
                    pointer.write(f"{real}\n")
            except OSError as exc:
                await self.close("stopped")
                raise AttachError(f"cannot write {named}: {exc.strerror}") from None
            self._pointer = named
        self._engine.subscribe(self._on_snapshot)
        return real

    async def _clear(self, path: Path) -> None:
        """Remove ``path`` if it is a stale socket or pointer (nothing answers on it).

        Raises:
            AttachError: a live process answers on it, or it cannot be removed.
        """
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        if stat.S_ISSOCK(st.st_mode):
            try:
                _, writer = await asyncio.wait_for(
                    asyncio.open_unix_connection(str(path)), CONNECT_TIMEOUT_S
                )
            except (OSError, TimeoutError):
                pass  # refused: a killed crawl's socket
            else:
                writer.close()
                raise AttachError(f"another process answers on {path}: attach is off for this run")
        elif not stat.S_ISREG(st.st_mode):
            raise AttachError(f"{path} is in the way of the attach socket")
        _remove_stale(path)

    def _on_snapshot(self, snap: CrawlSnapshot) -> None:
        """The engine's subscriber: nothing without a watcher, else one encoding offered
        to every watcher."""
        if not self._watching:
            return
        self._push(snap)

    def _push(self, snap: CrawlSnapshot) -> None:
        frame = encode({"t": "snap", "snap": snap})
        self._snapshots += 1
        for client in self._clients:
            if client.watching:
                client.offer(frame)

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A new connection: served in a task of the server's own. (Given a coroutine,
        asyncio's stream protocol makes the task itself, and on Python 3.11 a cancel of
        it at the loop's end prints a traceback: "Exception in callback
        StreamReaderProtocol.connection_made".)"""
        task = asyncio.create_task(self._serve(reader, writer))
        self._connections.add(task)
        task.add_done_callback(self._connections.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection: the peer's uid checked, ``hello``, then its requests."""
        why = None
        if peer_uid(writer.get_extra_info("socket")) != self._uid:
            why = "refused: this crawl's socket is for its own user only"
        elif len(self._clients) >= MAX_CLIENTS or self._ended:
            why = "refused: too many clients" if not self._ended else "refused: the crawl ended"
        if why is not None:
            self._refused += 1
            writer.write(encode({"t": "refused", "why": why}))
            with contextlib.suppress(OSError, TimeoutError):
                await asyncio.wait_for(writer.drain(), 1.0)
            writer.transport.abort()
            return
        client = _Client(writer)
        self._clients[client] = asyncio.create_task(self._pump(client))
        client.reply(self._hello)
        try:
            while True:
                line = await reader.readline()
                if not line.endswith(b"\n"):
                    break  # the client went away
                answer = await self._answer(client, line)
                if answer is not None and not client.reply(answer):
                    self._dropped += 1
                    break
        except ValueError:  # a line over MAX_REQUEST_BYTES
            self._dropped += 1
        except ConnectionError:
            pass
        finally:
            self._forget(client)

    def _forget(self, client: _Client) -> None:
        pump = self._clients.pop(client, None)
        if pump is None:
            return
        if client.watching:
            self._watching -= 1
        if client.end is None:
            pump.cancel()
            client.writer.transport.abort()

    async def _pump(self, client: _Client) -> None:
        """Write a client's frames as they come; drop it when it takes none for
        ``drain_timeout_s``."""
        writer = client.writer
        try:
            while True:
                await client.wake.wait()
                client.wake.clear()
                while client.replies:
                    writer.write(client.replies.popleft())
                if client.latest is not None:
                    frame, client.latest = client.latest, None
                    writer.write(frame)
                if client.end is not None:
                    writer.write(client.end)
                await asyncio.wait_for(writer.drain(), self._drain_timeout_s)
                if client.end is not None:
                    break
        except TimeoutError:
            self._dropped += 1
        except ConnectionError:
            pass
        finally:
            writer.transport.abort()

    async def _answer(self, client: _Client, line: bytes) -> bytes | None:
        """The reply frame to one request line (``None``: no reply wanted)."""
        try:
            req = msgspec.json.decode(line, type=Request)
        except msgspec.MsgspecError as exc:
            return encode({"t": "reply", "id": 0, "error": f"bad request: {exc}"})
        try:
            ok = await self._do(client, req)
        except AttachError as exc:
            return encode({"t": "reply", "id": req.id, "error": str(exc)})
        if req.op == "watch" and not req.id:
            return None
        return encode({"t": "reply", "id": req.id, "ok": ok})

    async def _do(self, client: _Client, req: Request) -> object:
        """Carry out one request; its answer.

        Raises:
            AttachError: the request cannot be carried out (the crawl is over, too many
                seeds).
        """
        engine = self._engine
        if req.op == "watch":
            if not client.watching:
                client.watching = True
                self._watching += 1
            client.offer(encode({"t": "snap", "snap": engine.snapshot()}))
            return None
        if req.op == "query_hosts":
            return engine.query_hosts(req.text, max(1, min(req.limit, MAX_HOST_ROWS)))
        if req.op == "host_detail":
            return engine.host_detail(req.host, max(0, min(req.queue_head, MAX_QUEUE_HEAD)))
        if self._ended:
            raise AttachError("the crawl is over")
        if req.op == "add_seeds":
            if len(req.urls) > MAX_SEEDS:
                raise AttachError(f"at most {MAX_SEEDS} seeds at once")
            refused = await engine.add_seeds_live(req.urls)
            return [list(pair) for pair in refused]
        # the crawl's log says who paused, resumed or stopped it (issue #25)
        if req.op == "pause":
            engine.pause(by=STOPPED_BY)
        elif req.op == "resume":
            engine.resume(by=STOPPED_BY)
        else:
            engine.request_stop(by=STOPPED_BY)
            engine.log(STOP_ASKED)
        if self._watching:
            self._push(engine.snapshot())  # every console shows the new state at once
        return {"paused": engine.paused}

    async def close(self, outcome: str) -> None:
        """Stop serving: ``end`` (``outcome`` and the hosts' final rows) to every watcher,
        at most ``END_WAIT_S`` for them to take it, at most as long again for every
        connection's task to end (an idle client's included), then the socket (and its pointer
        file) removed if they are still the ones ``start`` made. Never raises."""
        if self._ended:
            return
        self._ended = True
        if self._server is not None:
            self._server.close()
        end = None
        pumps = []
        for client in list(self._clients):
            if client.watching:
                if end is None:
                    hosts = self._engine.query_hosts("", MAX_HOST_ROWS)
                    end = encode({"t": "end", "outcome": outcome, "hosts": hosts})
                client.end = end
                client.wake.set()
                pumps.append(self._clients[client])
            else:
                self._forget(client)
        if pumps:
            await asyncio.wait(pumps, timeout=END_WAIT_S)
        for client in list(self._clients):
            client.end = None
            self._forget(client)
        if self._connections:  # each reads its end of file now, or its refusal ends
            await asyncio.wait(self._connections, timeout=END_WAIT_S)
        if self.path is not None:
            with contextlib.suppress(OSError):
                if os.stat(self.path).st_ino == self._inode:
                    self.path.unlink()
        if self._pointer is not None:
            with contextlib.suppress(OSError):
                if self._pointer.read_text(encoding="utf-8").strip() == str(self.path):
                    self._pointer.unlink()
