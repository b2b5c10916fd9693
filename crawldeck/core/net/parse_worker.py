"""The loop of one parse worker process (``core.net.parse.ParsePool``), in a module of its
own so that a worker imports what parsing needs and no more.

A worker is a fresh interpreter that runs ``serve`` on the two pipe ends it was given
(``core.net.parse._BOOT``). Importing ``core.net.parse`` there cost 36 MB before the first
page (its import of the crawl's configuration brought tldextract and requests; 27 MB
without it, with asyncio, the thread pool, subprocess and logging); importing this
module and ``core.policy.links`` cost 23 MB, and 20.8 MB (19.8 MiB, ``/proc/self/statm``
after the imports) since ``core.policy.simhash`` takes BLAKE2 from ``_blake2``, not through
``hashlib``, whose import maps OpenSSL's libcrypto. Two
workers run beside every crawl (``parse_workers``), so this is memory every crawl pays
(issue #22 item 1, ``benchmarks/hostile_memory.py``). The pipes carry ``Pipe``'s frames,
not ``multiprocessing.connection``'s, whose import (with ``multiprocessing``, ``socket``,
``tempfile`` and ``subprocess``) cost each worker 1.6 MiB more: 16.9 MiB after the
imports now.
"""

from __future__ import annotations

import math
import os
import pickle
import select
import signal
from typing import Any

from multidict import CIMultiDict

from crawldeck.core.policy.heap import GIVE_BACK_AFTER_BYTES, give_back
from crawldeck.core.policy.links import extract_links

#: A frame whose pickle is at most this long goes out in one ``write`` (as
#: ``multiprocessing.connection`` does): one system call per small job or answer.
_JOIN_BYTES = 16 * 1024


class Pipe:
    """One end of a pipe that carries pickled messages, each a frame: the pickle's length
    in 4 bytes, big-endian, then the pickle (protocol 5), as ``core.storage.warc.frame``.

    Used by the parse pool (``core.net.parse``) on its side of a worker's pipes and by the
    worker on its own. Blocking; ``recv`` and ``poll`` from one thread at a time, as
    ``send``. Reads and writes retry after a signal (PEP 475).

    Args:
        fd: the pipe end (a file descriptor this object owns and closes).
    """

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def _open_fd(self) -> int:
        """The file descriptor. Raises ``OSError`` when closed."""
        if self._fd < 0:
            raise OSError("the pipe is closed")
        return self._fd

    def send(self, message: object) -> None:
        """Write ``message`` as one frame. Raises ``OSError`` (``BrokenPipeError``
        when the other end is closed) and pickling's errors."""
        fd = self._open_fd()
        data = pickle.dumps(message, protocol=5)
        head = len(data).to_bytes(4, "big")
        # one write for a small frame; a big one is not copied to prepend its length
        parts = (head + data,) if len(data) <= _JOIN_BYTES else (head, data)
        for part in parts:
            view = memoryview(part)
            while view:
                view = view[os.write(fd, view) :]

    def _read(self, size: int) -> bytearray:
        """Exactly ``size`` bytes. Raises ``EOFError`` when the other end closes first."""
        fd = self._open_fd()
        buffer = bytearray(size)
        view = memoryview(buffer)
        got = 0
        while got < size:
            n = os.readv(fd, [view[got:]])
            if n == 0:
                raise EOFError("the pipe was closed")
            got += n
        return buffer

    def recv(self) -> Any:
        """The next message. Raises ``EOFError`` (the other end closed), ``OSError``
        and unpickling's errors."""
        size = int.from_bytes(self._read(4), "big")
        return pickle.loads(self._read(size))

    def poll(self, timeout_s: float) -> bool:
        """Whether a frame (or the end of the pipe) can be read within ``timeout_s``
        seconds. Raises ``OSError`` when closed."""
        waiter = select.poll()
        waiter.register(self._open_fd(), select.POLLIN)
        return bool(waiter.poll(max(0, math.ceil(timeout_s * 1000))))

    def close(self) -> None:
        """Close the pipe end (again: nothing)."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)


def serve(jobs_fd: int, answers_fd: int) -> None:
    """A worker's main loop: say ``("ready", pid)``, then answer each job
    ``(body, url, header pairs, token, obey_nofollow, max_links)`` with ``("ok", Extracted)`` or
    ``("error", message)`` until ``None`` or the parent's end closes.

    Args:
        jobs_fd: the read end of the jobs pipe (``Pipe`` frames).
        answers_fd: the write end of the answers pipe.

    The worker runs in its own session (``start_new_session``): the signals a terminal
    or a shell sends to the crawl's process group (Ctrl-C, SIGHUP of a closed terminal,
    the shell's SIGHUP and SIGTERM to its job) never reach it, and the crawler, not its
    workers, decides how to stop (it closes the pool). SIGINT and SIGHUP sent to the
    worker itself are ignored too. A worker whose parent is gone (pipe closed) exits.
    Never raises: a failed parse (``MemoryError`` and the like) is answered as
    ``("error", line)``. After a job of at least ``core.policy.heap.GIVE_BACK_AFTER_BYTES`` the
    worker gives the heap's free memory back (``core.policy.heap.give_back``).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    jobs = Pipe(jobs_fd)
    conn = Pipe(answers_fd)
    try:
        conn.send(("ready", os.getpid()))
    except (OSError, ValueError):
        return
    while True:
        try:
            job = jobs.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        big = len(job[0]) >= GIVE_BACK_AFTER_BYTES
        answer = _answer(job)
        del job
        try:
            conn.send(answer)
        except (OSError, ValueError):
            return
        del answer  # the links; lexbor's tree went with _answer's frame
        if big:
            give_back()


def _answer(job: tuple[Any, ...]) -> tuple[str, object]:
    """``("ok", Extracted)`` for one job, or ``("error", line)``; never raises."""
    body, url, pairs, token, obey, max_links = job
    try:
        extracted = extract_links(
            body, url, CIMultiDict(pairs), token, obey_nofollow=obey, max_links=max_links
        )
    except Exception as exc:  # MemoryError and the like: the parent records it
        return ("error", f"{type(exc).__name__}: {exc}")
    return ("ok", extracted)


__all__ = ["Pipe", "serve"]
