"""The WARC writer process: the crawl's WARC/1.1 files are written by a process of its own.

The WARC files go beside the crawl file (``core.storage.warc_output``). The process:
``core.storage.warc_writer.WarcWriter``, the crawl's side, starts
``python -P -m crawldeck.core.storage.warc FD PARENT_PID`` at its first record and sends it
jobs over a Unix socket pair; this module is what runs there (``serve``). Each
message is a frame (``frame``: a 4-byte big-endian length, then a pickle), to the
process: ``("init", directory, stem, max_bytes, info)`` first, ``("load", rows)``
with the duplicate map of the earlier runs, then the jobs in the order the crawl made
them: ``("x", seq, *exchange)`` (a fetch's request and response records, answered),
``("m", ...)`` (``metadata``), ``("c", ...)`` (``conversion``), ``("a", ...)``
(``alias``), none of them answered, and ``("close", seq)``. Every frame the process
finds in its socket when it wakes is one batch: its records are appended with one
``write``, then one answer goes back, ``(records, bytes_written, error, replies)``
with ``replies`` a list of ``(seq, failed, value)``: a ``WarcRef``'s fields as a
tuple, or the error line. Why a process: in a thread, the writer waited for the GIL
at each of its releases (each compression, each write) while the event loop held it,
and a page's record came back 80 ms later at the 90th percentile (a third of the pages
waited, each holding its host that long: 22 % of e2e_bench's pages/s; "WARC output"
in ``benchmarks/RESULTS.md``). The process dies with the crawl (``PR_SET_PDEATHSIG``),
ignores SIGINT and SIGTERM (the crawl's own stop closes it), and ends when its socket
does, after the jobs it read.

What the process does with each job is ``core.storage.warc_output.WarcFiles`` (the files, their
rotation, crash safety and the duplicate map); a record is made by
``core.storage.warc_records``; the files are named and read back by
``core.storage.warc_reader``. This
module is the process around them: its socket, its frames and its batches.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from crawldeck.core.storage.warc_output import WarcFiles

#: Bytes read from the socket at a time by the process.
RECV_BYTES: Final = 1 << 20
#: Payloads longer than this go to the process through a payload file, not the socket.
PAYLOAD_FILE_BYTES: Final = 1 << 20
_PR_SET_PDEATHSIG: Final = 1  # prctl(2)


def payload_file(directory: Path, stem: str, number: int) -> Path:
    """Where the crawl puts the ``number``-th payload it hands to the process by file:
    ``DIRECTORY/.STEM-payload-NUMBER`` (a dot file beside the WARC files)."""
    return Path(directory) / f".{stem}-payload-{number}"


def payload_files(directory: Path, stem: str) -> list[Path]:
    """The payload files of ``stem`` left in ``directory`` (a crawl killed before its
    process read them)."""
    return sorted(Path(directory).glob(f".{stem}-payload-*"))


def frame(message: object) -> bytes:
    """``message`` as one frame between the crawl and its writer process: its pickle's
    length in 4 bytes, big-endian, then the pickle (protocol 5)."""
    data = pickle.dumps(message, protocol=5)
    return len(data).to_bytes(4, "big") + data


def split_frames(buffer: bytes | bytearray) -> tuple[list[Any], int]:
    """The whole frames at the start of ``buffer``, unpickled, and the bytes they used
    (a partial frame at the end is left for the next read)."""
    messages = []
    used = 0
    view = memoryview(buffer)
    while len(view) - used >= 4:
        size = int.from_bytes(view[used : used + 4], "big")
        if len(view) - used - 4 < size:
            break
        messages.append(pickle.loads(view[used + 4 : used + 4 + size]))
        used += 4 + size
    view.release()
    return messages, used


#: Jobs that are not answered: frame kind -> the ``WarcFiles`` method.
_QUEUED: Final = {"m": WarcFiles.metadata, "c": WarcFiles.conversion, "a": WarcFiles.alias}


def serve(sock: socket.socket) -> None:
    """The writer process's loop (module docstring): read the frames ``sock`` has, run
    them as one batch, write the batch's records with one ``write``, answer, until the
    ``close`` job or the end of the socket (the crawl ended: what was read is written)."""
    files: WarcFiles | None = None
    buffer = bytearray()
    # one landing buffer for every read: a ``recv(RECV_BYTES)`` allocates 1 MiB and
    # shrinks it each time, 23 us a read of a 20 kB frame here against 5 us
    landing = memoryview(bytearray(RECV_BYTES))
    reported: str | None = None
    while True:
        got = sock.recv_into(landing)
        if not got:
            if files is not None:
                with contextlib.suppress(OSError):
                    files.guarded(files.close)
            return
        buffer += landing[:got]
        messages, used = split_frames(buffer)
        del buffer[:used]
        replies: list[tuple[int, bool, Any]] = []
        closing: int | None = None
        for message in messages:
            kind = message[0]
            if kind == "init":
                files = WarcFiles(*message[1:])
                continue
            assert files is not None  # "init" comes first
            if kind == "load":
                files.load(message[1])
            elif kind == "x":
                replies.append((message[1], *files.answer(files.exchange, *message[2:])))
            elif kind == "close":
                closing = message[1]
            else:
                files.answer(_QUEUED[kind], files, *message[1:])
        if files is None:
            continue
        failed, _ = files.answer(files.flush)
        if failed:  # the batch's records were not all written
            replies = [(seq, True, files.error) for seq, _, _ in replies]
        if closing is not None:
            replies.append((closing, *files.answer(files.close)))
        if replies or files.error != reported:
            reported = files.error
            sock.sendall(frame((files.records, files.bytes_written, files.error, replies)))
        if closing is not None:
            return


def main(argv: Sequence[str] | None = None) -> int:
    """``python -P -m crawldeck.core.storage.warc FD PARENT_PID``: serve the crawl on the socket
    ``FD`` until it closes it; killed when the parent dies (``PR_SET_PDEATHSIG``, Linux).
    Started in its own session (``core.storage.warc_writer``), it never gets the signals sent to
    the crawl's process group (Ctrl-C, a closed terminal's SIGHUP, a shell's SIGHUP and
    SIGTERM to its job): the crawl stops first and then closes this process; SIGINT and
    SIGTERM sent to it alone are ignored too. Returns 0."""
    args = sys.argv[1:] if argv is None else list(argv)
    fd, parent = int(args[0]), int(args[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the crawl died before the prctl
        return 0
    with socket.socket(fileno=fd) as sock:
        serve(sock)
    return 0


__all__ = [
    "PAYLOAD_FILE_BYTES",
    "RECV_BYTES",
    "frame",
    "payload_file",
    "payload_files",
    "serve",
    "split_frames",
]

if __name__ == "__main__":
    sys.exit(main())
