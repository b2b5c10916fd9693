"""WARC/1.1 files beside the crawl file, written by one thread off the event loop.

``WarcWriter`` appends records to ``<stem>-NNNNN.warc.gz`` in a directory (the crawl
file's: ``crawl.db`` gives ``crawl-00001.warc.gz``), every record its own gzip member
(the "record at a time compression" of WARC/1.1 annex D.2, which lets a reader seek to
one record by its offset), a ``warcinfo`` record first in each file, the next file
begun once a file holds ``max_bytes``. Digests are ``sha1:`` in base 32, as warcio and
Heritrix write them; ``WARC-Date`` has microseconds (WARC/1.1 §5.4).

The records are built and serialized by fastwarc (``fastwarc.warc.WarcRecord``: its
``WARC-Record-ID``, a random UUID 4, its ``Content-Length``, and from
``write(checksum_data=True)`` its ``WARC-Block-Digest`` and, for a response whose HTTP
head it parsed, its ``WARC-Payload-Digest``), chosen over warcio's builder by the
measurement in ``benchmarks/RESULTS.md`` ("WARC output": 70 against 126 us of Python
per page). The block is the HTTP head as received (``_head``: the status line and the
raw header fields, in order; fastwarc's parse of it writes the same bytes back) and
the payload as transferred. A response is serialized before the duplicate map is asked
(the map needs fastwarc's payload digest); an exact duplicate is then serialized again
as its revisit. One part is not fastwarc's: each record is compressed as its gzip
member by one ``zlib`` call (``_gzip``), not through fastwarc's ``GzipWriter``, which
costs ten times more per small member. The files are checked by warcio (``warcio
check``, ``warcio index``, its ``ArchiveIterator`` at each offset) in
``tests/test_warc.py``; ``crawldeck show`` and ``export --with-body`` read them with
warcio.

Threading: every record is digested, compressed (zlib level 3: on the local Python
and Django docs it costs 7.8 ms per MB against 16.9 at level 6, for 15 % more bytes,
0.159 against 0.138 of the HTML) and appended in ONE thread of the writer's own, which
takes jobs from a ``queue.SimpleQueue`` in the order the calls were made (a put is one
C call on the loop) and runs every job queued when it wakes as one batch: one
``write`` and one ``call_soon_threadsafe`` for all of them. A fetch's request and
response records are one job (``exchange``), whose result, the page row's WARC
location, is awaited when the page is recorded, after its parse (``core.archive``);
the records written after a page's fetch (``metadata``, ``conversion``) and ``alias``
are queued and not awaited: the loop is not woken for them, and their error, if any,
is raised by the next call. The thread's cost in a crawl is less its CPU than its
releases of the GIL: each one (a compression, a hash of 2 kB or more, a write) is a
wait to take the GIL back from the busy loop, so each record is compressed in one call
and a batch is written with one ``write``. ``aclose`` awaits the thread's last wake-up
of the loop (a future it sets as it returns), not ``Thread.join`` on the loop.

Back-pressure: at most ``max_pending`` exchanges wait for the thread (a caller past
that awaits a free place, freed when the exchange is written); a page's queued records
come after its own exchange was awaited, so about one per crawl worker waits, and the
bodies held waiting are bounded by ``max_pending`` x the body cap.

Crash safety: a batch's members are compressed first and appended with one ``write``
on an unbuffered file (or several of whole members, past ``FLUSH_BYTES``), so a
``kill -9`` leaves every file ending at a member boundary (a power loss may leave a
partial member: the page cache is not fsynced, as SQLite's ``synchronous=NORMAL``); an
exchange's future is set after its write, so no page row names a record not yet
written. A writer never appends to an old file: on its first job it truncates the
highest-numbered existing file to its last complete gzip member (so ``warcio check``
passes on every file) and starts the next number.

Exact duplicates (WARC/1.1 §6.7.2, profile identical-payload-digest): the thread keeps
a map payload digest -> (URL, WARC-Date) of the latest full response of the first URL
of each payload in this crawl (rebuilt on resume from ``first_payloads``); a later 2xx
response with a complete, non-empty payload of a digest in the map is written as a
``revisit`` record (its HTTP head only) naming that URL and date, unless it is that
URL again (a page refetched unchanged is a full response of itself, never a
duplicate of itself) or the same-host canonical URL it was handed to (``alias``). The
map costs about 300 bytes per distinct payload (the digest string 86, the URL string
50 + its length, the date 76, the tuple 56, the dict slot about 30;
``tests/test_warc.py`` measures it).

Not modified (WARC/1.1 §6.7.3, profile server-not-modified): a 304 (the answer to a
recrawl's conditional GET, ``core.recrawl``) is a ``revisit`` record holding the 304's
head; its ``WARC-Refers-To-Target-URI``, ``-Date``, ``WARC-Refers-To`` and
``WARC-Payload-Digest`` are those of the full response the page's row points to
(``locate``: the record read back from its file), when there is one.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import queue
import re
import threading
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from fastwarc.warc import WarcRecord, WarcRecordType

from crawldeck.core.errors import StoreError
from crawldeck.core.fetcher import FetchResult, WarcRef

#: Exchanges (records with their bodies) waiting for the writer thread before a caller waits.
MAX_PENDING: Final = 64
#: zlib level of each member (see the module docstring).
GZIP_LEVEL: Final = 3
#: The revisit profile of an exact duplicate (WARC/1.1 §6.7.2).
IDENTICAL_PAYLOAD: Final = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
#: The revisit profile of a 304 Not Modified (WARC/1.1 §6.7.3).
SERVER_NOT_MODIFIED: Final = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
#: The digits of a file's number: ``crawl-00001.warc.gz``.
FILE_DIGITS: Final = 5
#: Staged members are written once they hold this many bytes (else at the batch's end).
FLUSH_BYTES: Final = 1 << 22
#: Bytes of a record's WARC head read back at most (``record_head``).
MAX_HEAD_BYTES: Final = 1 << 16

_HTTP_RESPONSE: Final = "application/http; msgtype=response"
_HTTP_REQUEST: Final = "application/http; msgtype=request"
_WARC_FIELDS: Final = "application/warc-fields"
_HTML: Final = "text/html; charset=utf-8"
_END: Final = b"\r\n\r\n"


def warc_stem(db: Path) -> str:
    """The WARC files' stem of crawl file ``db``: its name without a ``.db``,
    ``.sqlite`` or ``.sqlite3`` suffix (``crawl.db`` -> ``crawl``)."""
    name = db.name
    for suffix in (".db", ".sqlite", ".sqlite3"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def warc_files(directory: Path, stem: str) -> list[Path]:
    """The WARC files of ``stem`` in ``directory`` (``<stem>-NNNNN.warc.gz``), by number."""
    pattern = re.compile(re.escape(stem) + r"-(\d{" + str(FILE_DIGITS) + r",})\.warc\.gz")
    found = []
    for path in directory.iterdir() if directory.is_dir() else ():
        match = pattern.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return [path for _, path in sorted(found)]


def complete_length(path: Path) -> int:
    """The length in bytes of the complete gzip members at the start of ``path`` (the
    whole file when it ends at a member boundary). Reads the file once, decompressing
    it (about 1-2 s per GB); never raises for bad data, which ends the count."""
    good = 0
    offset = 0
    inflater = zlib.decompressobj(31)
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            data = chunk
            while data:
                try:
                    inflater.decompress(data, 1 << 16)
                    while inflater.unconsumed_tail and not inflater.eof:
                        inflater.decompress(inflater.unconsumed_tail, 1 << 16)
                except zlib.error:
                    return good
                if inflater.eof:
                    used = len(data) - len(inflater.unused_data)
                    offset += used
                    good = offset
                    data = inflater.unused_data
                    inflater = zlib.decompressobj(31)
                else:
                    offset += len(data)
                    data = b""
    return good


def record_head(path: Path, offset: int) -> dict[str, str]:
    """The WARC head fields of the record whose gzip member starts at byte ``offset``
    of ``path`` (``{"WARC-Type": "response", ...}``; the first value of a repeated
    name), decompressing only the member's first bytes (up to ``MAX_HEAD_BYTES``).

    Raises:
        OSError: the file cannot be read.
        ValueError: no WARC/1.x head starts there (bad gzip data, or no blank line
            within ``MAX_HEAD_BYTES``).
    """
    inflater = zlib.decompressobj(31)
    text = b""
    with path.open("rb") as f:
        f.seek(offset)
        while _END not in text and len(text) < MAX_HEAD_BYTES:
            chunk = f.read(4096)
            if not chunk:
                break
            try:
                text += inflater.decompress(chunk, MAX_HEAD_BYTES)
            except zlib.error as exc:
                raise ValueError(f"{path.name}: no gzip member at {offset}: {exc}") from None
            if inflater.eof:
                break
    head, found, _ = text.partition(_END)
    lines = head.decode("utf-8", "replace").split("\r\n")
    if not found or not lines[0].startswith("WARC/1."):
        raise ValueError(f"{path.name}: no WARC record at {offset}")
    fields: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields.setdefault(name.strip(), value.strip())
    return fields


def _head(first_line: bytes, fields: Iterable[tuple[bytes, bytes]]) -> bytes:
    """An HTTP message head: the first line, ``name: value`` lines, a blank line."""
    lines = [first_line]
    lines += [name + b": " + value for name, value in fields]
    return b"\r\n".join(lines) + _END


def _text_fields(pairs: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """Header pairs as str (a fake fetcher's, or aiohttp's request headers) as bytes:
    Latin-1 where it fits (HTTP's own octets, RFC 9110 §5.5), else UTF-8."""
    out = []
    for name, value in pairs:
        try:
            encoded = value.encode("latin-1")
        except UnicodeEncodeError:
            encoded = value.encode("utf-8", "surrogateescape")
        out.append((name.encode("latin-1", "replace"), encoded))
    return out


def _request_target(url: str) -> tuple[str, str]:
    """``(origin-form target, Host)`` of an absolute URL (RFC 9112 §3.2.1)."""
    rest = url.split("://", 1)[1]
    host, sep, path = rest.partition("/")
    return "/" + path if sep else "/", host


def _new_record(
    kind: WarcRecordType, date: str, content_type: str, block: bytes, *fields: tuple[str, str]
) -> WarcRecord:
    """A fastwarc record of type ``kind``: ``WARC-Type``, a random ``WARC-Record-ID``
    (a UUID 4, fastwarc's), ``WARC-Date`` ``date``, ``Content-Length``, then ``fields``
    in order, ``Content-Type``, and the block; fastwarc adds the digests when it
    writes it (``WarcWriter._serialize``)."""
    record = WarcRecord()
    record.init_headers(kind)
    headers = record.headers
    headers["WARC-Date"] = date
    for name, value in fields:
        headers.append(name, value)
    headers.append("Content-Type", content_type)
    record.set_bytes_content(block)
    return record


def _gzip(record: bytes) -> bytes:
    """``record`` as one gzip member (RFC 1952) at ``GZIP_LEVEL``, in one zlib call
    (one release of the GIL), with a window no larger than the record (512 bytes to
    32 kB: a window as long as the data loses nothing, and zlib's setting up of the
    default 32 kB one cost more than compressing a request record, 23 against 8 us
    for 380 bytes). Not fastwarc's ``GzipWriter`` (a member per record by ``finish``):
    it cost 115 us per member of a 400-byte request record against 11 us here, and
    200-350 against 130 us for a 15 kB response, so about 0.3 ms more per page of
    three records."""
    window = max(9, min(15, (len(record) - 1).bit_length()))
    return zlib.compress(record, GZIP_LEVEL, 16 + window)


def _settle_all(settled: Sequence[tuple[asyncio.Future[Any], Any, bool]]) -> None:
    """Give awaited jobs their results, in the loop: ``(future, outcome, failed)``,
    ``outcome`` the job's exception when ``failed`` (nothing for a future whose task
    was cancelled)."""
    for future, outcome, failed in settled:
        if future.cancelled():
            continue
        if failed:
            future.set_exception(outcome)
            future.exception()  # not logged if never awaited (a robots.txt's, a retry's)
        else:
            future.set_result(outcome)


#: A job for the writer thread and the future awaiting it (``None``: not awaited).
_Job = tuple[Callable[[], Any], "asyncio.Future[Any] | None"]


@dataclass(slots=True)
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
    """Where a URL's page row points in the WARC files (``core.archive``'s lookup of
    the crawl file), called in the writer thread only."""

    def __call__(self, url: str) -> tuple[str, int] | None:
        """``(file name, offset)`` of ``url``'s record, ``None`` when it has none.

        Raises:
            StoreError: the crawl file cannot be read.
        """

    def close(self) -> None:
        """Release what the lookups hold (called once, when the writer closes)."""


@dataclass(slots=True)
class _State:
    """The writer thread's own state (touched by that thread only)."""

    file: Any = None  # the open file (unbuffered), or None before the first job
    name: str = ""
    size: int = 0
    number: int = 0
    firsts: dict[str, tuple[str, str]] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # digest -> its canonical URL
    loaded: bool = False
    serialized: io.BytesIO = field(default_factory=io.BytesIO)  # a record, as fastwarc wrote it
    staged: list[bytes] = field(default_factory=list)  # members for the batch's write
    staged_bytes: int = 0


class WarcWriter:
    """Appends WARC/1.1 records to ``<stem>-NNNNN.warc.gz`` files in ``directory``.

    Args:
        directory: where the files go (the crawl file's directory).
        stem: the files' name stem (``warc_stem`` of the crawl file).
        max_bytes: a file is closed and the next begun once it holds this many bytes
            (a record is never split: a file may exceed it by one job).
        info: the ``warcinfo`` fields of each file (software, format, robots, the
            user agent...), in order.
        first_payloads: called once in the writer thread before the first record:
            ``(payload_digest, url, fetched_at, canonical_url)`` of the crawl's earlier
            first responses, oldest first, ``canonical_url`` the same-host canonical
            URL of another page the payload was handed to (``alias``) or ``None``;
            for the duplicate map.
        locate: where a URL's page row points (for a 304's revisit record), or
            ``None``: a 304's revisit then names no earlier record.
        max_pending: exchanges waiting for the thread before a caller waits for room.

    Raises (from the methods that take records):
        StoreError: a file could not be written (``crawl-00002.warc.gz: disk full
            (No space left on device)``, or another OS error), one line; the writer
            takes no more records after it.
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
    ) -> None:
        self.directory = Path(directory)
        self.stem = stem
        self._max_bytes = max_bytes
        self._info = dict(info)
        self._first_payloads = first_payloads
        self._locate = locate
        self._room = asyncio.Semaphore(max(1, max_pending))
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Future[None] | None = None  # set as the thread ends (aclose)
        self._state = _State()
        self._error: str | None = None
        self._closed = False
        self.records = 0  # written so far (thread-side count, read for figures)
        self.bytes_written = 0

    # ------------------------------------------------------------ loop side

    def _check(self) -> None:
        """Raise the writer's error, or refuse records after ``aclose``."""
        if self._error is not None:
            raise StoreError(self._error)
        if self._closed:
            raise StoreError(f"{self.stem}: the WARC writer is closed")

    def _start(self) -> None:
        """Start the writer thread (at the first job)."""
        self._thread = threading.Thread(target=self._serve, name="crawldeck-warc", daemon=True)
        self._thread.start()

    def _queue(self, job: Callable[[], object]) -> None:
        """Queue ``job`` for the writer thread after the jobs before it, not awaited."""
        self._check()
        if self._thread is None:
            self._start()
        self._jobs.put((job, None))

    def _submit(self, job: Callable[[], Any]) -> asyncio.Future[Any]:
        """Queue ``job`` for the writer thread after the jobs before it; the future of
        its result (set in the loop once its records are written)."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        if self._thread is None:
            self._start()
        future = loop.create_future()
        self._jobs.put((job, future))
        return future

    async def exchange(self, exchange: Exchange) -> asyncio.Future[WarcRef]:
        """Queue the archiving of one fetch, once fewer than ``max_pending`` wait: a
        ``response`` record (a ``revisit`` for an exact duplicate or a 304, see the
        module docstring) and its ``request`` record (``WARC-Concurrent-To`` the
        response), in one append.

        Returns:
            the future of where the response (or revisit) record is, its payload
            digest and, for an exact duplicate, the URL it repeats (a ``WarcRef``),
            set once the records are written; awaiting it raises ``StoreError`` when
            they could not be. The caller need not await it at once: the fetch's host
            is free while the thread writes (``core.archive``).
        """
        self._check()
        await self._room.acquire()
        try:
            future: asyncio.Future[WarcRef] = self._submit(lambda: self._write_exchange(exchange))
        except BaseException:
            self._room.release()
            raise
        future.add_done_callback(lambda _: self._room.release())
        return future

    def metadata(
        self, url: str, concurrent_to: str, date: str, *, via: str | None, outlinks: Sequence[str]
    ) -> None:
        """Queue a ``metadata`` record of ``url`` (``application/warc-fields``: a
        ``via: REFERRER`` line when ``via``, then an ``outlink: URL`` line per link, in
        order), ``WARC-Concurrent-To`` the response record ``concurrent_to``."""
        self._queue(lambda: self._write_fields(url, concurrent_to, date, via, outlinks))

    def conversion(self, url: str, refers_to: str, html: str, date: str) -> None:
        """Queue a ``conversion`` record of ``url``: the rendered DOM as UTF-8 HTML,
        ``WARC-Refers-To`` the response record ``refers_to`` (WARC/1.1 §6.8)."""
        self._queue(lambda: self._write_conversion(url, refers_to, html, date))

    def alias(self, digest: str, page_url: str, canonical_url: str) -> None:
        """Hand payload ``digest`` to ``canonical_url`` (``page_url``'s same-host
        canonical URL) when ``page_url`` is its first URL: the canonical's own fetch
        of the payload is then a full response, not a revisit of the page that named
        it, and the copies after that fetch are revisits of the canonical URL (queued
        like ``metadata``)."""
        self._queue(lambda: self._alias(digest, page_url, canonical_url))

    async def aclose(self) -> None:
        """Finish the jobs queued, close the file and stop the thread, awaiting (not
        blocking the loop on) the thread's last wake-up of the loop, after which it
        returns; idempotent.

        Raises:
            StoreError: a queued record could not be written.
        """
        if self._closed:
            return
        self._closed = True
        if self._thread is not None and self._thread.is_alive():  # a dead one sets nothing
            closed = self._submit(self._close_file)
            stopped = self._stopped = asyncio.get_running_loop().create_future()
            self._jobs.put(None)  # the thread's last job: it returns once `stopped` is set
            await stopped  # not Thread.join, which would block the loop until then
            closed.result()  # the close's own error, if any
        if self._error is not None:
            raise StoreError(self._error)

    # ------------------------------------------------------------ thread side

    def _serve(self) -> None:
        """The writer thread: run the jobs in order until the ``None`` after the close;
        an awaited job's result (or exception) is set on its future in the loop, and
        at the ``None``, ``_stopped`` (with the same wake-up; the thread then returns)."""
        while True:
            batch = [self._jobs.get()]
            with contextlib.suppress(queue.Empty):
                while True:  # every job queued by now: one write and one wake-up for all
                    batch.append(self._jobs.get_nowait())
            settled: list[tuple[asyncio.Future[Any], Any, bool]] = []
            for item in batch:
                if item is None:
                    break
                job, future = item
                if future is None:
                    self._detached(job)
                    continue
                try:
                    settled.append((future, self._guarded(job), False))
                except BaseException as exc:  # returned to the awaiting task
                    settled.append((future, exc, True))
            try:
                self._guarded(self._flush)
            except StoreError as exc:  # the batch's records were not all written
                settled = [(future, exc, True) for future, _, _ in settled]
            if batch[-1] is None:
                assert self._stopped is not None
                settled.append((self._stopped, None, False))
            if settled:
                assert self._loop is not None
                self._loop.call_soon_threadsafe(_settle_all, settled)
            if batch[-1] is None:
                return

    def _guarded(self, job: Callable[[], Any]) -> Any:
        """``job()``, its ``OSError`` turned into the writer's one-line ``StoreError``."""
        if self._error is not None:
            raise StoreError(self._error)
        try:
            return job()
        except OSError as exc:
            name = self._state.name or self.stem
            if exc.errno == 28:  # ENOSPC
                self._error = f"{name}: disk full ({exc.strerror})"
            else:
                self._error = f"{name}: cannot write the WARC file ({exc.strerror or exc})"
            raise StoreError(self._error) from None

    def _detached(self, job: Callable[[], object]) -> None:
        """A queued job: its failure becomes the writer's error (raised by the next
        call on the loop side), since nobody awaits it."""
        try:
            self._guarded(job)
        except StoreError:
            pass  # self._error holds it
        except Exception as exc:  # nobody awaits this job: its error is kept
            self._error = f"{self._state.name or self.stem}: WARC writer failed: {exc!r}"

    def _load(self) -> None:
        """The duplicate map from the earlier runs (once, before the first record)."""
        state = self._state
        state.loaded = True
        if self._first_payloads is None:
            return
        firsts, aliases = state.firsts, state.aliases
        for digest, url, fetched_at, canonical in self._first_payloads():
            if digest not in firsts:
                firsts[digest] = (url, fetched_at)
                if canonical is not None:
                    aliases[digest] = canonical
            elif aliases.get(digest) == url:  # the canonical's own full response
                firsts[digest] = (url, fetched_at)
                del aliases[digest]

    def _open_next(self, date: str) -> None:
        """Close the current file and begin the next one with its ``warcinfo``."""
        state = self._state
        if state.file is None:
            existing = warc_files(self.directory, self.stem)
            if existing:
                last = existing[-1]
                good = complete_length(last)
                if good != last.stat().st_size:
                    os.truncate(last, good)
                state.number = int(last.name[len(self.stem) + 1 :].split(".", 1)[0])
        else:
            self._flush()
            state.file.close()
        state.number += 1
        state.name = f"{self.stem}-{state.number:0{FILE_DIGITS}d}.warc.gz"
        path = self.directory / state.name
        state.file = open(path, "xb", buffering=0)  # noqa: SIM115 - kept open across jobs
        state.size = 0
        block = "".join(f"{name}: {value}\r\n" for name, value in self._info.items() if value)
        filename = ("WARC-Filename", state.name)
        info = _new_record(WarcRecordType.warcinfo, date, _WARC_FIELDS, block.encode(), filename)
        self._append(self._serialize(info))

    def _serialize(self, record: WarcRecord) -> bytes:
        """``record`` as fastwarc writes it, with the digests it computes
        (``checksum_data``): ``WARC-Block-Digest``, and ``WARC-Payload-Digest`` when
        it parsed the record's HTTP head (``parse_http``)."""
        serialized = self._state.serialized
        serialized.seek(0)
        serialized.truncate()
        record.write(serialized, checksum_data=True)
        return serialized.getvalue()

    def _append(self, data: bytes) -> tuple[int, int]:
        """Stage the serialized record ``data`` as one gzip member (``_gzip``) for the
        batch's write (``_flush``, at once past ``FLUSH_BYTES``); ``(offset in the
        file, length)`` of the member."""
        state = self._state
        member = _gzip(data)
        offset = state.size
        state.size += len(member)
        state.staged.append(member)
        state.staged_bytes += len(member)
        if state.staged_bytes >= FLUSH_BYTES:
            self._flush()
        return offset, len(member)

    def _flush(self) -> None:
        """Write the staged members with one write (whole members: see the module
        docstring, crash safety)."""
        state = self._state
        if not state.staged:
            return
        data = b"".join(state.staged)
        records = len(state.staged)
        state.staged = []
        state.staged_bytes = 0
        view = memoryview(data)
        while view:  # a regular file takes it whole; a short write goes on
            written = state.file.write(view)
            view = view[written:]
        self.bytes_written += len(data)
        self.records += records

    def _ready(self, date: str) -> None:
        """The file is open and has room for another job."""
        state = self._state
        if not state.loaded:
            self._load()
        if state.file is None or state.size >= self._max_bytes:
            self._open_next(date)

    def _write_exchange(self, exchange: Exchange) -> WarcRef:
        date = exchange.date
        self._ready(date)
        result = exchange.result
        url = result.url
        payload = result.payload
        status = result.status
        statusline = f"HTTP/{result.http_version} {status} {result.reason}".rstrip()
        fields = result.raw_headers or tuple(_text_fields(result.headers.items()))
        head = _head(statusline.encode("latin-1", "replace"), fields)
        common = [("WARC-Target-URI", url)]
        if exchange.ip:
            common.append(("WARC-IP-Address", exchange.ip))
        duplicate_of: str | None = None
        digest: str | None
        if status == 304:
            refers, digest = self._not_modified(url)
            common += [("WARC-Profile", SERVER_NOT_MODIFIED), *refers]
            if digest is not None:
                common.append(("WARC-Payload-Digest", digest))
            record = _new_record(WarcRecordType.revisit, date, _HTTP_RESPONSE, head, *common)
            data = self._serialize(record)
        else:
            described = common
            if result.truncated:
                described = [*common, ("WARC-Truncated", "length")]
            elif result.skipped:  # not HTML: body not read
                described = [*common, ("WARC-Truncated", "unspecified")]
            block = head + payload
            record = _new_record(WarcRecordType.response, date, _HTTP_RESPONSE, block, *described)
            record.is_http = True
            record.parse_http(max_header_len=len(head))  # our own head, of any length
            data = self._serialize(record)  # fastwarc digests the payload as it writes
            digest = record.headers["WARC-Payload-Digest"]
            complete = bool(payload) and not (result.truncated or result.skipped)
            first = self._first(digest, url, date) if complete and 200 <= status < 300 else None
            if first is not None:  # a revisit instead, its block the HTTP head
                duplicate_of = first[0]
                common += [
                    ("WARC-Profile", IDENTICAL_PAYLOAD),
                    ("WARC-Refers-To-Target-URI", first[0]),
                    ("WARC-Refers-To-Date", first[1]),
                    ("WARC-Payload-Digest", digest),
                ]
                record = _new_record(WarcRecordType.revisit, date, _HTTP_RESPONSE, head, *common)
                data = self._serialize(record)
        record_id = record.record_id
        assert record_id is not None  # init_headers gave it one
        offset, length = self._append(data)
        self._append(self._serialize(self._request_record(result, date, record_id)))
        return WarcRef(
            file=self._state.name,
            offset=offset,
            length=length,
            record_id=record_id,
            payload_digest=digest,
            duplicate_of=duplicate_of,
        )

    def _first(self, digest: str, url: str, date: str) -> tuple[str, str] | None:
        """The first full response of payload ``digest`` that a complete 2xx response
        of ``url`` at ``date`` repeats, or ``None`` when this response is to be written
        in full (a new payload, or ``url`` is the payload's first URL or its canonical
        alias: the map then points at this newer record)."""
        state = self._state
        first = state.firsts.get(digest)
        if first is not None and first[0] != url and state.aliases.get(digest) != url:
            return first
        state.firsts[digest] = (url, date)
        state.aliases.pop(digest, None)
        return None

    def _not_modified(self, url: str) -> tuple[list[tuple[str, str]], str | None]:
        """The ``WARC-Refers-To-*`` fields of a 304 of ``url`` (the full response its
        page row points to: that record's own fields, or those it refers to when it
        is an exact-duplicate revisit) and that payload's digest; ``([], None)``
        when unknown (no row, no record, or a record that cannot be read)."""
        found = self._locate(url) if self._locate is not None else None
        if found is None:
            return [], None
        try:
            fields = record_head(self.directory / found[0], found[1])
        except (OSError, ValueError):
            return [], None
        digest = fields.get("WARC-Payload-Digest")
        if fields.get("WARC-Type") == "revisit":
            target = fields.get("WARC-Refers-To-Target-URI")
            date = fields.get("WARC-Refers-To-Date")
            record_id = fields.get("WARC-Refers-To")
        else:
            target, date = fields.get("WARC-Target-URI"), fields.get("WARC-Date")
            record_id = fields.get("WARC-Record-ID")
        refers = [("WARC-Refers-To", record_id)] if record_id else []
        if target and date:
            refers += [("WARC-Refers-To-Target-URI", target), ("WARC-Refers-To-Date", date)]
        return refers, digest

    def _request_record(self, result: FetchResult, date: str, concurrent_to: str) -> WarcRecord:
        """The ``request`` record of ``result``: the request line and headers sent."""
        target, host = _request_target(result.url)
        pairs = result.request_headers or (("Host", host),)
        head = _head(
            f"GET {target} HTTP/{result.http_version}".encode("latin-1", "replace"),
            _text_fields(pairs),
        )
        fields = (("WARC-Target-URI", result.url), ("WARC-Concurrent-To", concurrent_to))
        return _new_record(WarcRecordType.request, date, _HTTP_REQUEST, head, *fields)

    def _write_fields(
        self, url: str, concurrent_to: str, date: str, via: str | None, outlinks: Sequence[str]
    ) -> None:
        self._ready(date)
        text = f"via: {via}\r\n" if via else ""
        if outlinks:
            text += "outlink: " + "\r\noutlink: ".join(outlinks) + "\r\n"
        fields = (("WARC-Target-URI", url), ("WARC-Concurrent-To", concurrent_to))
        block = text.encode("utf-8")
        record = _new_record(WarcRecordType.metadata, date, _WARC_FIELDS, block, *fields)
        self._append(self._serialize(record))

    def _write_conversion(self, url: str, refers_to: str, html: str, date: str) -> None:
        self._ready(date)
        block = html.encode("utf-8", "surrogatepass")
        fields = (("WARC-Target-URI", url), ("WARC-Refers-To", refers_to))
        record = _new_record(WarcRecordType.conversion, date, _HTML, block, *fields)
        self._append(self._serialize(record))

    def _alias(self, digest: str, page_url: str, canonical_url: str) -> None:
        state = self._state
        first = state.firsts.get(digest)
        if first is not None and first[0] == page_url:
            state.aliases[digest] = canonical_url

    def _close_file(self) -> None:
        state = self._state
        if state.file is not None:
            self._flush()
            state.file.close()
            state.file = None
        if self._locate is not None:
            self._locate.close()

    def statistics(self) -> tuple[int, int]:
        """``(records, bytes)`` written so far (compressed bytes, warcinfo included)."""
        return self.records, self.bytes_written


__all__ = [
    "FILE_DIGITS",
    "FLUSH_BYTES",
    "GZIP_LEVEL",
    "IDENTICAL_PAYLOAD",
    "MAX_HEAD_BYTES",
    "MAX_PENDING",
    "SERVER_NOT_MODIFIED",
    "Exchange",
    "Locator",
    "WarcWriter",
    "complete_length",
    "record_head",
    "warc_files",
    "warc_stem",
]
