"""The loop of one parse worker process (``core.parse.ParsePool``), in a module of its
own so that a worker imports what parsing needs and no more.

A worker is a fresh interpreter that runs ``serve`` on the two pipe ends it was given
(``core.parse._BOOT``). Importing ``core.parse`` there cost 36 MB before the first
page (its import of the crawl's configuration brought tldextract and requests; 27 MB
without it, with asyncio, the thread pool, subprocess and logging); importing this
module and ``core.links`` cost 23 MB, and 20.8 MB (19.8 MiB, ``/proc/self/statm``
after the imports) since ``core.simhash`` takes BLAKE2 from ``_blake2``, not through
``hashlib``, whose import maps OpenSSL's libcrypto. Two
workers run beside every crawl (``parse_workers``), so this is memory every crawl pays
(issue #22 item 1, ``benchmarks/hostile_memory.py``).
"""

from __future__ import annotations

import os
import signal
from multiprocessing.connection import Connection

from multidict import CIMultiDict

from crawldeck.core.links import extract_links


def serve(jobs_fd: int, answers_fd: int) -> None:
    """A worker's main loop: say ``("ready", pid)``, then answer each job
    ``(body, url, header pairs, token, obey_nofollow, max_links)`` with ``("ok", Extracted)`` or
    ``("error", message)`` until ``None`` or the parent's end closes.

    Args:
        jobs_fd: the read end of the jobs pipe (pickled frames of
            ``multiprocessing.connection.Connection``).
        answers_fd: the write end of the answers pipe.

    The worker runs in its own session (``start_new_session``): the signals a terminal
    or a shell sends to the crawl's process group (Ctrl-C, SIGHUP of a closed terminal,
    the shell's SIGHUP and SIGTERM to its job) never reach it, and the crawler, not its
    workers, decides how to stop (it closes the pool). SIGINT and SIGHUP sent to the
    worker itself are ignored too. A worker whose parent is gone (pipe closed) exits.
    Never raises: a failed parse (``MemoryError`` and the like) is answered as
    ``("error", line)``.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    jobs = Connection(jobs_fd, writable=False)
    conn = Connection(answers_fd, readable=False)
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
        body, url, pairs, token, obey, max_links = job
        try:
            extracted = extract_links(
                body, url, CIMultiDict(pairs), token, obey_nofollow=obey, max_links=max_links
            )
            answer: tuple[str, object] = ("ok", extracted)
        except Exception as exc:  # MemoryError and the like: the parent records it
            answer = ("error", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(answer)
        except (OSError, ValueError):
            return


__all__ = ["serve"]
