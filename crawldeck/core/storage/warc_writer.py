"""The crawl's side of the WARC writer process: jobs out, record locations back.

``WarcWriter`` is what the crawl holds (``core.storage.archive``): each call becomes a job for
the writer process (``core.storage.warc``, whose docstring gives the frames and why it is a
process), started at the first job with ``python -P -m crawldeck.core.storage.warc`` and a Unix
socket pair. On the event loop a job costs a pickle and a list append: the frames of
one turn of the loop go out with one ``write`` (``call_soon``), and the answers come
back on the same socket to a reader task, which sets each exchange's future, so no
thread is woken and nothing waits for the GIL. Reading the crawl file is not the
process's: the earlier runs' first payloads (the duplicate map, ``first_payloads``)
are sent to it before the first job, read in a thread of the writer's own, and a 304's
page row (``locate``) is found in that thread before its job is sent.

A payload longer than ``core.storage.warc.PAYLOAD_FILE_BYTES`` (1 MiB) is not pickled into
its frame: it is written (in a thread) to a payload file beside the WARC files, which
the process reads and compresses a chunk at a time and then removes, so neither side
holds a second copy of a 10 MiB body (a 10 MiB page took the writer process from 17 to
56 MB and the crawl's pickle, frame and write added about 30 MB more; issue #22 item 1,
``benchmarks/hostile_memory.py``). Files left by jobs never read are removed by
``aclose``.

Back-pressure: at most ``max_pending`` exchanges wait for the process (a caller past
that awaits a free place, freed when the exchange is answered); a page's queued
records come after its own exchange was awaited, so about one per crawl worker waits,
and the bodies held waiting are bounded by ``max_pending`` x ``PAYLOAD_FILE_BYTES``.

Errors: a file that cannot be written (a full disk) is the process's one-line error,
raised by the exchange it failed, by the next call after a record that is not
awaited, and by ``aclose``; a process that cannot start or that ends early is one
line too (``WARC writer process ended (exit 1)``). Each is a ``StoreError``: the crawl
stops as when its crawl file cannot be written.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import socket
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from crawldeck.core.errors import StoreError
from crawldeck.core.records import FetchResult, WarcRef
from crawldeck.core.storage.warc import PAYLOAD_FILE_BYTES, frame, payload_file, payload_files
from crawldeck.core.storage.warc_reader import file_number

#: Exchanges (records with their bodies) waiting for the writer process before a caller waits.
MAX_PENDING: Final = 64
#: Rows of the duplicate map sent in one frame.
LOAD_ROWS: Final = 10_000
#: Seconds ``aclose`` waits for the process to exit after its last answer.
EXIT_WAIT_S: Final = 30.0


def _remove_payload_files(directory: Path, stem: str) -> None:
    """Remove the payload files of ``stem`` left in ``directory`` (jobs the process
    never read: it failed or was stopped first); a file already gone is no error."""
    for path in payload_files(directory, stem):
        with contextlib.suppress(OSError):
            path.unlink()


@dataclass(frozen=True, slots=True)
class Exchange:
    """One fetch to archive: its result and what the writer needs besides.

    Attributes:
        result: the fetch's result (``FetchResult``: status line, raw headers,
            request headers, the body as transferred).
        date: the WARC-Date, ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (the fetch's start).
        ip: the server's address (``WARC-IP-Address``), ``None`` when unknown.
    """

    result: FetchResult
    date: str
    ip: str | None = None


class Locator(Protocol):
    """Where a URL's page row points in the WARC files (``core.storage.archive``'s lookup of
    the crawl file), called in the writer's lookup thread only."""

    def __call__(self, url: str) -> tuple[str, int] | None:
        """``(file name, offset)`` of ``url``'s record, ``None`` when it has none.

        Raises:
            StoreError: the crawl file cannot be read.
        """

    def close(self) -> None:
        """Release what the lookups hold (called once, when the writer closes)."""


class WarcWriter:
    """Appends WARC/1.1 records to ``<stem>-NNNNN.warc.gz`` files in ``directory``,
    through the writer process (module docstring).

    Args:
        directory: where the files go (the crawl file's directory).
        stem: the files' name stem (``core.storage.warc_reader.warc_stem`` of the crawl file).
        max_bytes: a file is closed and the next begun once it holds this many bytes
            (a record is never split: a file may exceed it by one job).
        info: the ``warcinfo`` fields of each file (software, format, robots, the
            user agent...), in order.
        first_payloads: called once, in the writer's lookup thread, before the first
            record: ``(payload_digest, url, fetched_at, canonical_url)`` of the crawl's
            earlier first responses, oldest first, ``canonical_url`` the same-host
            canonical URL of another page the payload was handed to (``alias``) or
            ``None``; for the duplicate map.
        locate: where a URL's page row points (for a 304's revisit record), or
            ``None``: a 304's revisit then names no earlier record.
        max_pending: exchanges waiting for the process before a caller waits for room.
        recorded_prefix: what a page row's ``warc_file`` puts before the file's name
            (``core.storage.archive.recorded_prefix``): ``""`` for files beside the crawl
            file, else their directory as seen from it, ending in ``/``.
        recorded_files: called once, in the lookup thread, before the first record: the
            ``warc_file`` names the crawl file's rows hold (``Store.warc_file_names``);
            the first file is numbered past the highest of them with this prefix and
            stem, whether or not it is still on disk. ``None``: none recorded.

    Raises (from the methods that take records):
        StoreError: a file could not be written (``crawl-00002.warc.gz: disk full
            (No space left on device)``, or another OS error), or the process could
            not start or ended, one line; the writer takes no more records after it.
    """

    def __init__(
        self,
        directory: Path,
        stem: str,
        *,
        max_bytes: int,
        info: Sequence[tuple[str, str]],
        first_payloads: Callable[[], Iterable[tuple[str, str, str, str | None]]] | None = None,
        locate: Locator | None = None,
        max_pending: int = MAX_PENDING,
        recorded_prefix: str = "",
        recorded_files: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.stem = stem
        self.recorded_prefix = recorded_prefix
        self._init = ("init", str(self.directory), stem, max_bytes, tuple(info))
        self._recorded_files = recorded_files
        self._first_payloads = first_payloads
        self._locate = locate
        self._room = asyncio.Semaphore(max(1, max_pending))
        self._lookups: ThreadPoolExecutor | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._starting: asyncio.Task[None] | None = None
        self._reading: asyncio.Task[None] | None = None
        self._stream: asyncio.StreamWriter | None = None
        self._outbox: list[bytes] = []  # frames of this turn of the loop
        self._flushing = False
        self._answers: dict[
            int, tuple[asyncio.Future[Any], bool]
        ] = {}  # seq -> (its future, a WarcRef?)
        self._seq = 0
        self._error: str | None = None
        self._closed = False
        self.records = 0  # written so far (the process's count, from its last answer)
        self.bytes_written = 0
        #: Payloads handed to the process by file (longer than ``PAYLOAD_FILE_BYTES``).
        self.payload_files = 0

    # ------------------------------------------------------------ calls

    def _check(self) -> None:
        """Raise the writer's error, or refuse records after ``aclose``."""
        if self._error is not None:
            raise StoreError(self._error)
        if self._closed:
            raise StoreError(f"{self.stem}: the WARC writer is closed")

    def _send(self, message: tuple[Any, ...]) -> None:
        """Queue ``message`` for the process after the messages before it (sent at the
        end of this turn of the loop, with the others of the turn)."""
        if self._starting is None:
            self._starting = asyncio.get_running_loop().create_task(self._start())
        self._outbox.append(frame(message))
        if self._stream is not None and not self._flushing:
            self._flushing = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Write the turn's frames with one ``write``."""
        self._flushing = False
        if self._stream is not None and self._outbox:
            data = b"".join(self._outbox)
            self._outbox.clear()
            with contextlib.suppress(ConnectionError, RuntimeError):  # the reader reports it
                self._stream.write(data)

    def _ask(self, message: tuple[Any, ...], *, ref: bool = False) -> asyncio.Future[Any]:
        """Send ``message`` (a sequence number put after its kind) and return the future
        of its answer (a ``WarcRef`` when ``ref``: an exchange, whose place in
        ``max_pending`` is given back when it is answered)."""
        self._seq += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._answers[self._seq] = (future, ref)
        self._send((message[0], self._seq, *message[1:]))
        return future

    async def exchange(self, exchange: Exchange) -> asyncio.Future[WarcRef]:
        """Queue the archiving of one fetch, once fewer than ``max_pending`` wait: a
        ``response`` record (a ``revisit`` for an exact duplicate or a 304, see
        ``core.storage.warc``) and its ``request`` record (``WARC-Concurrent-To`` the
        response), in one append.

        Returns:
            the future of where the response (or revisit) record is, its payload
            digest and, for an exact duplicate, the URL it repeats (a ``WarcRef``),
            set once the records are written; awaiting it raises ``StoreError`` when
            they could not be. The caller need not await it at once: the fetch's host
            is free while the process writes (``core.storage.archive``).

        Raises:
            StoreError: the writer failed earlier or is closed; a 304's page row could
                not be read.
        """
        self._check()
        await self._room.acquire()
        try:
            result = exchange.result
            found = None
            if result.status == 304 and self._locate is not None:
                found = await asyncio.get_running_loop().run_in_executor(
                    self._lookup_thread(), self._locate, result.url
                )
            self._check()
            payload: bytes | tuple[str, int] = result.payload
            if len(result.payload) > PAYLOAD_FILE_BYTES:
                payload = await self._to_file(result.payload)
            job = (
                "x",
                result.url,
                exchange.date,
                exchange.ip,
                result.status,
                result.http_version,
                result.reason,
                result.raw_headers,
                () if result.raw_headers else tuple(result.headers.items()),
                payload,
                result.truncated,
                result.skipped,
                result.request_headers,
                found,
            )
            future = self._ask(job, ref=True)
        except BaseException:
            self._room.release()
            raise
        return future

    async def _to_file(self, payload: bytes) -> tuple[str, int]:
        """Write ``payload`` to the next payload file (``core.storage.warc.payload_file``, in a
        thread) for the process to read a chunk at a time; ``(path, size)``.

        Raises:
            StoreError: the file could not be written (a full disk), one line.
        """
        self.payload_files += 1
        path = payload_file(self.directory, self.stem, self.payload_files)

        def write() -> None:
            with open(path, "wb") as f:
                f.write(payload)

        try:
            await asyncio.to_thread(write)
        except OSError as exc:
            with contextlib.suppress(OSError):
                path.unlink()
            raise StoreError(f"{path.name}: cannot write ({exc.strerror or exc})") from None
        return str(path), len(payload)

    def metadata(
        self, url: str, concurrent_to: str, date: str, *, via: str | None, outlinks: Sequence[str]
    ) -> None:
        """Queue a ``metadata`` record of ``url`` (``application/warc-fields``: a
        ``via: REFERRER`` line when ``via``, then an ``outlink: URL`` line per link, in
        order), ``WARC-Concurrent-To`` the response record ``concurrent_to``.

        Raises:
            StoreError: the writer failed earlier or is closed.
        """
        self._check()
        self._send(("m", url, concurrent_to, date, via, tuple(outlinks)))

    def conversion(self, url: str, refers_to: str, html: str, date: str) -> None:
        """Queue a ``conversion`` record of ``url``: the rendered DOM as UTF-8 HTML,
        ``WARC-Refers-To`` the response record ``refers_to`` (WARC/1.1 §6.8).

        Raises:
            StoreError: the writer failed earlier or is closed.
        """
        self._check()
        self._send(("c", url, refers_to, html, date))

    def alias(self, digest: str, page_url: str, canonical_url: str) -> None:
        """Hand payload ``digest`` to ``canonical_url`` (``page_url``'s same-host
        canonical URL) when ``page_url`` is its first URL: the canonical's own fetch
        of the payload is then a full response, not a revisit of the page that named
        it, and the copies after that fetch are revisits of the canonical URL (queued
        like ``metadata``).

        Raises:
            StoreError: the writer failed earlier or is closed.
        """
        self._check()
        self._send(("a", digest, page_url, canonical_url))

    async def aclose(self) -> None:
        """Finish the jobs sent, close the file and let the process end (awaited, not
        blocking the loop); idempotent.

        Raises:
            StoreError: a record could not be written, or the process failed.
        """
        if self._closed:
            return
        self._closed = True
        try:
            if self._starting is not None:
                await self._starting
                if self._error is None:
                    with contextlib.suppress(StoreError):  # kept in self._error
                        await self._ask(("close",))
                await self._end_process()
        finally:
            await self._close_lookups()
            if self.payload_files:  # of jobs never read; listed off the loop (os.stat)
                await asyncio.to_thread(_remove_payload_files, self.directory, self.stem)
        if self._error is not None:
            raise StoreError(self._error)

    def statistics(self) -> tuple[int, int]:
        """``(records, bytes)`` written so far (compressed bytes, warcinfo included),
        as of the process's last answer."""
        return self.records, self.bytes_written

    # ------------------------------------------------------------ the process

    def _lookup_thread(self) -> ThreadPoolExecutor:
        """The one thread that reads the crawl file for the writer."""
        if self._lookups is None:
            self._lookups = ThreadPoolExecutor(1, thread_name_prefix="crawldeck-warc-lookups")
        return self._lookups

    async def _start(self) -> None:
        """Start the process, send it the ``init`` and ``load`` frames (in the lookup
        thread, which reads the duplicate map), then the frames queued meanwhile; a
        failure is the writer's error."""
        ours, theirs = socket.socketpair()
        try:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable, "-P", "-m", "crawldeck.core.storage.warc",
                str(theirs.fileno()), str(os.getpid()),
                pass_fds=(theirs.fileno(),),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip
            theirs.close()
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._lookup_thread(), self._introduce, ours)
            reader, self._stream = await asyncio.open_connection(sock=ours)
        except (OSError, StoreError) as exc:
            theirs.close()
            ours.close()
            self._fail(f"{self.stem}: cannot start the WARC writer process: {exc}")
            return
        except BaseException:  # cancelled: nothing waits for an answer that cannot come
            theirs.close()
            ours.close()
            self._fail(f"{self.stem}: the WARC writer process was not started")
            raise
        self._reading = asyncio.get_running_loop().create_task(self._read(reader))
        self._flush()

    def _introduce(self, sock: socket.socket) -> None:
        """Send ``init`` and the duplicate map (the lookup thread; blocking sends the
        process reads as they come).

        Raises:
            StoreError: the crawl file cannot be read.
            OSError: the process's socket is gone.
        """
        sock.sendall(frame((*self._init, self._last_recorded())))
        if self._first_payloads is None:
            return
        rows: list[tuple[str, str, str, str | None]] = []
        for row in self._first_payloads():
            rows.append(row)
            if len(rows) == LOAD_ROWS:
                sock.sendall(frame(("load", rows)))
                rows = []
        if rows:
            sock.sendall(frame(("load", rows)))

    def _last_recorded(self) -> int:
        """The highest number of this writer's files that the crawl file's rows name
        (0: none). Raises ``StoreError`` as ``recorded_files`` does."""
        if self._recorded_files is None:
            return 0
        prefix, numbers = self.recorded_prefix, [0]
        for name in self._recorded_files():
            if name.startswith(prefix):
                numbers.append(file_number(name[len(prefix) :], self.stem) or 0)
        return max(numbers)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        """Take the process's answers until its socket ends: the counts, its error,
        and each exchange's ``WarcRef`` (or error) on its future."""
        try:
            while True:
                size = int.from_bytes(await reader.readexactly(4), "big")
                records, written, error, replies = pickle.loads(await reader.readexactly(size))
                self.records, self.bytes_written = records, written
                if error is not None and self._error is None:
                    self._error = error
                for seq, failed, value in replies:
                    future, ref = self._answers.pop(seq)
                    if ref:
                        self._room.release()
                    if future.done():
                        continue
                    if failed:
                        future.set_exception(StoreError(value))
                        future.exception()  # not logged if never awaited (a robots.txt's)
                    else:
                        future.set_result(WarcRef(*value) if ref else value)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        if self._answers or not self._closed:  # it ended before it was told to
            code = self._process.returncode if self._process is not None else None
            if code is None and self._process is not None:
                with contextlib.suppress(TimeoutError):
                    code = await asyncio.wait_for(self._process.wait(), 5)
            self._fail(f"{self.stem}: the WARC writer process ended (exit {code})")

    def _fail(self, error: str) -> None:
        """Make ``error`` the writer's and fail every job waiting for an answer."""
        if self._error is None:
            self._error = error
        answers, self._answers = self._answers, {}
        for future, ref in answers.values():
            if ref:
                self._room.release()
            if not future.done():
                future.set_exception(StoreError(self._error))
                future.exception()

    async def _end_process(self) -> None:
        """Close the socket, let the reader finish and the process exit (killed after
        ``EXIT_WAIT_S``)."""
        if self._stream is not None:
            self._flush()
            self._stream.close()
            with contextlib.suppress(ConnectionError, OSError):
                await self._stream.wait_closed()
        if self._reading is not None:
            await self._reading
        process = self._process
        if process is not None and process.returncode is None:
            try:
                await asyncio.wait_for(process.wait(), EXIT_WAIT_S)
            except TimeoutError:
                process.kill()
                await process.wait()

    async def _close_lookups(self) -> None:
        """Close ``locate`` in the lookup thread (its connection lives there), then the
        thread."""
        lookups = self._lookups
        if lookups is None:
            if self._locate is not None:
                self._locate.close()
            return
        try:
            if self._locate is not None:
                await asyncio.get_running_loop().run_in_executor(lookups, self._locate.close)
        finally:
            lookups.shutdown(wait=False)


__all__ = ["EXIT_WAIT_S", "LOAD_ROWS", "MAX_PENDING", "Exchange", "Locator", "WarcWriter"]
