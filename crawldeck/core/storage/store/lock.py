"""The lock of a crawl file: one ``Store`` per file, whatever its names.

Only one crawldeck may use a file at a time, whatever name it is opened by (a symlink,
a hard link, ``./x/../c.db``, a bind mount): ``Store`` takes an exclusive ``fcntl.flock``
(BSD lock) on the database file itself, so the lock belongs to the file's inode, not to
a spelling of its path. Two names of one file must never be open together: SQLite
derives the ``-wal`` and ``-shm`` names from the name it is given, so two names mean two
WALs and a corrupt file (sqlite.org/howtocorrupt.html, "Multiple links to the same
file"). The kernel drops the lock when the process dies, so a SIGKILL never leaves a
stale lock, and taking it writes nothing (no side file, so a full disk cannot break it).
flock and SQLite's POSIX ``fcntl`` record locks are independent on local file systems
(Linux flock(2)); on NFS the kernel emulates flock with POSIX locks, but WAL mode does
not work there anyway (sqlite.org/wal.html: "WAL does not work over a network
filesystem"). The holder's pid in the "in use" message is read from ``/proc/locks``;
where it cannot be, the message has no pid.

The descriptor is handled with care because closing ANY descriptor of a file drops
every POSIX lock the process holds on that file (POSIX close(2); sqlite.org/
howtocorrupt.html, "Posix advisory locks canceled by a separate thread doing close()"),
SQLite's locks included: SQLite guards its own descriptors against that, not ours. So
(1) a process-wide registry of the ``(st_dev, st_ino)`` of every file a ``Store`` holds
refuses a second ``Store`` of this process on the same file from a ``stat`` alone,
without opening the file; (2) a ``Store`` closes its descriptor only after its own
SQLite connections are closed; (3) when another descriptor of this process is still
open on the file at that moment (an export reading it, say), the flock is released at
once but the descriptor is parked, and closed by a later ``Store`` open or close once
no other descriptor of this process is open on that file (``/proc/self/fd``).

Also the one-line messages of a full disk (``_is_disk_full``, ``_disk_full``), which
the lock and the store share.
"""

from __future__ import annotations

import errno
import fcntl
import os
import sqlite3
import stat
import threading
from pathlib import Path
from typing import Final

from crawldeck.core.errors import DISK_FULL, StoreError

_FileId = tuple[int, int]  # (st_dev, st_ino): one file, whatever its names

#: Files a ``Store`` of this process holds (see the module docstring, "with care").
_held: set[_FileId] = set()

#: Lock descriptors (no lock left on them) whose close waits until no other descriptor
#: of this process is open on their file, so the close cannot drop SQLite's locks.
_parked: dict[int, _FileId] = {}

_registry_lock: Final = threading.Lock()


def _file_id(st: os.stat_result) -> _FileId:
    return (st.st_dev, st.st_ino)


#: An I/O error on a file system with less free space than this is a full disk.
_NEARLY_FULL_BYTES: Final = 1 << 20


def _is_disk_full(exc: BaseException, path: Path) -> bool:
    """Whether ``exc``, raised while using the crawl file ``path``, means the disk is full.

    ``OSError`` ENOSPC or EDQUOT; SQLite's ``SQLITE_FULL`` (its unix VFS turns ENOSPC on
    a write into it); or any ``SQLITE_IOERR`` while the file system of ``path`` has under
    ``_NEARLY_FULL_BYTES`` free (for this user; root may use reserved blocks) or no free
    inode left (file systems that count inodes): SQLite reports ENOSPC while growing the
    ``-shm`` file as ``SQLITE_IOERR_SHMSIZE`` (sqlite.org/rescode.html; seen on a full
    tmpfs). A quota (EDQUOT) that SQLite meets stays an I/O error: it says no errno.
    """
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if not isinstance(exc, sqlite3.Error):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_FULL:
        return True
    if code is None or code & 0xFF != sqlite3.SQLITE_IOERR:
        return False
    try:
        fs = os.statvfs(path if path.exists() else path.parent)
    except OSError:
        return False
    blocks = fs.f_bfree if os.geteuid() == 0 else fs.f_bavail
    return blocks * fs.f_frsize < _NEARLY_FULL_BYTES or (fs.f_files > 0 and fs.f_favail == 0)


def _disk_full(name: str, exc: BaseException) -> str:
    """The one-line message of a full disk: ``c.db: disk full (No space left on device)``."""
    code = exc.errno if isinstance(exc, OSError) and exc.errno else errno.ENOSPC
    return f"{name}: {DISK_FULL} ({os.strerror(code)})"


def _in_use(name: str, pid: int | None) -> str:
    holder = f" (pid {pid})" if pid else ""
    return f"{name} is in use by another crawldeck{holder}"


def _flock_holder(st: os.stat_result) -> int | None:
    """The pid that holds a flock on the file of ``st``, or ``None`` when unknown.

    Read from ``/proc/locks`` (Linux proc(5)), lines such as
    ``1: FLOCK  ADVISORY  WRITE 1234 fe:00:2148180 0 EOF`` (the device as hex
    ``major:minor``, then the inode number; a pid outside this pid namespace is 0 or -1).
    """
    needle = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == needle:
                    pid = int(fields[4])
                    return pid if pid > 0 else None
    except (OSError, ValueError):
        return None
    return None


def lock_holder(path: Path) -> int | None:
    """Whether a crawldeck holds the crawl file ``path`` now (its ``Store``'s flock),
    read from ``/proc/locks`` without opening the file (an open and close here could
    drop this process's SQLite locks on it: the module docstring).

    Returns:
        the holder's pid, 0 when it holds it from another pid namespace, ``None`` when
        no process holds it (a run the file says is running was killed).

    Raises:
        OSError: ``path`` or ``/proc/locks`` cannot be read (not Linux): unknown.
    """
    st = os.stat(path)
    needle = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with open("/proc/locks", encoding="ascii", errors="replace") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == needle:
                try:
                    return max(0, int(fields[4]))
                except ValueError:
                    return 0
    return None


def _other_descriptor_open(ident: _FileId) -> bool:
    """Whether a descriptor of this process, not a parked one, is open on ``ident``.

    Without ``/proc/self/fd`` (not Linux) this cannot be known: ``False``, and the
    descriptor is closed at once.
    """
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return False
    for name in names:
        fd = int(name)
        if fd in _parked:
            continue
        try:
            st = os.fstat(fd)
        except OSError:  # closed since the listing (the listing's own descriptor too)
            continue
        if _file_id(st) == ident:
            return True
    return False


def _park(fd: int, ident: _FileId) -> None:
    """Close ``fd`` (holding no lock) when that is safe, else keep it for later.
    Call with ``_registry_lock`` held."""
    _parked[fd] = ident
    _close_parked()


def _close_parked() -> None:
    """Close the parked descriptors of files no other descriptor of this process has open.
    Call with ``_registry_lock`` held."""
    for fd, ident in list(_parked.items()):
        if not _other_descriptor_open(ident):
            del _parked[fd]
            os.close(fd)


def _lock_file(path: Path, name: str) -> tuple[int, _FileId]:
    """Open (create if missing) the crawl file ``path`` and flock it; see the module
    docstring for the rule. ``name`` is the file name used in messages.

    Returns:
        ``(descriptor, (st_dev, st_ino))``; hand both to ``_unlock_file``.

    Raises:
        StoreError: in use (by this process or another: ``... is in use by another
            crawldeck (pid N)``), not a regular file, the disk is full, or the file
            cannot be opened or locked (one line each).
    """
    with _registry_lock:
        _close_parked()
        try:
            st = os.stat(path)  # follows symlinks, like open()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StoreError(f"cannot open {path}: {exc.strerror}") from None
        else:
            if _file_id(st) in _held:  # refused without opening: no close, no lost lock
                raise StoreError(_in_use(name, os.getpid()))
        flags = os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK  # flock needs no write
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            if _is_disk_full(exc, path):
                raise StoreError(_disk_full(name, exc)) from None
            raise StoreError(f"cannot open {path}: {exc.strerror}") from None
        st = os.fstat(fd)
        ident = _file_id(st)
        if ident in _held:  # a held file was renamed to ``path`` since the stat
            _parked[fd] = ident
            raise StoreError(_in_use(name, os.getpid()))
        if not stat.S_ISREG(st.st_mode):
            _park(fd, ident)
            raise StoreError(f"{name} is not a regular file")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            _park(fd, ident)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise StoreError(_in_use(name, _flock_holder(st))) from None
            raise StoreError(f"cannot lock {path}: {exc.strerror}") from None
        _held.add(ident)
        return fd, ident


def _erase(path: Path) -> None:
    """Empty the locked crawl file ``path`` and remove its ``-wal``/``-shm`` files (an
    empty file is a new SQLite database). Raises ``OSError``."""
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    os.truncate(path, 0)


def _unlock_file(fd: int, ident: _FileId) -> None:
    """Drop the flock of ``_lock_file`` at once and close (or park) its descriptor."""
    with _registry_lock:
        fcntl.flock(fd, fcntl.LOCK_UN)
        _held.discard(ident)
        _park(fd, ident)
