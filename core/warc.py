"""WARC/1.1 files beside the crawl file, written by one thread off the event loop.

``WarcWriter`` appends records to ``<stem>-NNNNN.warc.gz`` in a directory (the crawl
file's: ``crawl.db`` gives ``crawl-00001.warc.gz``), every record its own gzip member
(the "record at a time compression" of WARC/1.1 annex D.2, which lets a reader seek to
one record by its offset), a ``warcinfo`` record first in each file, the next file
begun once a file holds ``max_bytes``. Records are built and serialized by ``warcio``
(``RecordBuilder``, WARC/1.1: ``WARC-Date`` with microseconds); their digests are
``sha1:`` in base 32, as warcio and Heritrix write them.

Threading: every record is built, digested, compressed (zlib level 6: warcio's own
GzippingWrapper uses 9, which costs about twice the CPU for 1-3 % fewer bytes on
HTML) and appended in ONE thread (a one-worker ``ThreadPoolExecutor``, reached through
``loop.run_in_executor``), in the order the calls were made; the loop only awaits the
result. At most ``max_pending`` jobs wait for the thread: a caller past that awaits a
free place (back-pressure, not an unbounded queue), so the bodies held waiting are at
most ``max_pending`` x the body cap.

Crash safety: a job's members are compressed first and appended with one ``write`` on
an unbuffered file, so a ``kill -9`` leaves every file ending at a member boundary (a
power loss may leave a partial member: the page cache is not fsynced, as SQLite's
``synchronous=NORMAL``). A writer never appends to an old file: on its first job it
truncates the highest-numbered existing file to its last complete gzip member (so
``warcio check`` passes on every file) and starts the next number.

Exact duplicates (WARC/1.1 §6.7.2, profile identical-payload-digest): the thread keeps
a map payload digest -> (URL, WARC-Date) of the first full response of each payload in
this crawl (rebuilt on resume from ``first_payloads``); a later 2xx response with a
complete, non-empty payload of a digest in the map is written as a ``revisit`` record
(its HTTP headers only) naming that URL and date. The map costs about 300 bytes per
distinct payload (the digest string 86, the URL string 50 + its length, the date 76,
the tuple 56, the dict slot about 30; ``tests/test_warc.py`` measures it).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import os
import re
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from warcio.recordbuilder import RecordBuilder
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawldeck.core.errors import StoreError
from crawldeck.core.fetcher import FetchResult, WarcRef

#: Jobs (records with their bodies) waiting for the writer thread before a caller waits.
MAX_PENDING: Final = 64
#: zlib level of each member (see the module docstring).
GZIP_LEVEL: Final = 6
#: The revisit profile of an exact duplicate (WARC/1.1 §6.7.2).
IDENTICAL_PAYLOAD: Final = RecordBuilder.REVISIT_PROFILE_1_1
#: The digits of a file's number: ``crawl-00001.warc.gz``.
FILE_DIGITS: Final = 5


def payload_digest(data: bytes) -> str:
    """``sha1:BASE32`` of ``data`` (WARC/1.1 §5.8-5.9, as warcio computes it)."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


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


class _RawHttpHeaders(StatusAndHeaders):  # type: ignore[misc]
    """An HTTP head kept as the bytes received: warcio's writer would re-serialize a
    parsed head (``compute_headers_buffer``), which changes bytes that are not UTF-8."""

    def __init__(self, raw: bytes, statusline: str, protocol: str) -> None:
        super().__init__(statusline, [], protocol=protocol)
        self.headers_buff = raw

    def compute_headers_buffer(self, header_filter: object = None) -> None:
        """Keep ``headers_buff`` as given."""


def _head(first_line: bytes, fields: Iterable[tuple[bytes, bytes]]) -> bytes:
    """An HTTP message head: the first line, ``name: value`` lines, a blank line."""
    lines = [first_line]
    lines += [name + b": " + value for name, value in fields]
    return b"\r\n".join(lines) + b"\r\n\r\n"


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


@dataclass(slots=True)
class _State:
    """The writer thread's own state (touched by that thread only)."""

    file: Any = None  # the open file (unbuffered), or None before the first job
    name: str = ""
    size: int = 0
    number: int = 0
    firsts: dict[str, tuple[str, str]] = field(default_factory=dict)
    loaded: bool = False


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
            first responses (``Store.first_payloads``), for the duplicate map.
        max_pending: jobs waiting for the thread before a caller waits for room.

    Raises (from the ``async`` methods):
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
        max_pending: int = MAX_PENDING,
    ) -> None:
        self.directory = Path(directory)
        self.stem = stem
        self._max_bytes = max_bytes
        self._info = dict(info)
        self._first_payloads = first_payloads
        self._room = asyncio.Semaphore(max(1, max_pending))
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="crawldeck-warc")
        self._state = _State()
        self._builder = WARCWriter(io.BytesIO(), gzip=False, warc_version="1.1")
        self._error: str | None = None
        self._closed = False
        self.records = 0  # written so far (thread-side count, read for figures)
        self.bytes_written = 0

    # ------------------------------------------------------------ loop side

    async def _run(self, job: Callable[[], Any]) -> Any:
        """Run ``job`` in the writer thread after the jobs before it, with room."""
        if self._error is not None:
            raise StoreError(self._error)
        if self._closed:
            raise StoreError(f"{self.stem}: the WARC writer is closed")
        async with self._room:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, self._guarded, job)

    async def exchange(self, exchange: Exchange) -> WarcRef:
        """Archive one fetch: a ``response`` record (or a ``revisit`` for an exact
        duplicate, see the module docstring) and its ``request`` record
        (``WARC-Concurrent-To`` the response), in one append.

        Returns:
            where the response (or revisit) record is, its payload digest and, for a
            revisit, the URL it repeats.
        """
        ref: WarcRef = await self._run(lambda: self._write_exchange(exchange))
        return ref

    async def metadata(
        self, url: str, concurrent_to: str, fields: Sequence[tuple[str, str]], date: str
    ) -> None:
        """A ``metadata`` record of ``url`` (``application/warc-fields``: one
        ``name: value`` line per field, e.g. ``via``, ``outlink``), ``WARC-Concurrent-To``
        the response record ``concurrent_to``."""
        await self._run(lambda: self._write_fields(url, concurrent_to, fields, date))

    async def conversion(self, url: str, refers_to: str, html: str, date: str) -> None:
        """A ``conversion`` record of ``url``: the rendered DOM as UTF-8 HTML,
        ``WARC-Refers-To`` the response record ``refers_to`` (WARC/1.1 §6.8)."""
        await self._run(lambda: self._write_conversion(url, refers_to, html, date))

    async def alias(self, digest: str, page_url: str, canonical_url: str) -> None:
        """Name ``canonical_url`` (``page_url``'s same-host canonical URL) as the first
        URL of payload ``digest`` when ``page_url`` is its first URL: later copies of
        the payload are then revisits of the canonical URL, and the canonical's own
        fetch is not a duplicate of the page that named it."""
        await self._run(lambda: self._alias(digest, page_url, canonical_url))

    async def aclose(self) -> None:
        """Finish the jobs queued, close the file and stop the thread; idempotent."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._close_file)
        self._executor.shutdown(wait=True)

    # ------------------------------------------------------------ thread side

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

    def _load(self) -> None:
        """The duplicate map from the earlier runs (once, before the first record)."""
        state = self._state
        state.loaded = True
        if self._first_payloads is None:
            return
        firsts = state.firsts
        for digest, url, fetched_at, canonical in self._first_payloads():
            if digest not in firsts:
                firsts[digest] = (canonical or url, fetched_at)

    def _open_next(self) -> None:
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
            state.file.close()
        state.number += 1
        state.name = f"{self.stem}-{state.number:0{FILE_DIGITS}d}.warc.gz"
        path = self.directory / state.name
        state.file = open(path, "xb", buffering=0)  # noqa: SIM115 - kept open across jobs
        state.size = 0
        record = self._builder.create_warcinfo_record(state.name, self._info)
        self._append([self._member(record)])

    def _member(self, record: Any) -> bytes:
        """``record`` serialized by warcio and compressed as one gzip member."""
        out = io.BytesIO()
        self._builder.out = out
        self._builder.write_record(record)
        packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
        return packer.compress(out.getvalue()) + packer.flush()

    def _append(self, members: list[bytes]) -> list[int]:
        """Append ``members`` with one write; their offsets in the file."""
        state = self._state
        offsets = []
        at = state.size
        for member in members:
            offsets.append(at)
            at += len(member)
        data = b"".join(members)
        view = memoryview(data)
        while view:  # a regular file takes it whole; a short write goes on
            written = state.file.write(view)
            view = view[written:]
        state.size = at
        self.bytes_written += len(data)
        self.records += len(members)
        return offsets

    def _ready(self) -> None:
        """The file is open and has room for another job."""
        state = self._state
        if not state.loaded:
            self._load()
        if state.file is None or state.size >= self._max_bytes:
            self._open_next()

    def _write_exchange(self, exchange: Exchange) -> WarcRef:
        self._ready()
        result = exchange.result
        url = result.url
        payload = result.payload
        digest = payload_digest(payload)
        protocol = f"HTTP/{result.http_version}"
        statusline = f"{result.status} {result.reason}".rstrip()
        fields = result.raw_headers or tuple(_text_fields(result.headers.items()))
        head = _head(f"{protocol} {statusline}".encode("latin-1", "replace"), fields)
        http = _RawHttpHeaders(head, statusline, protocol)
        warc_headers: dict[str, str] = {"WARC-Date": exchange.date}
        if exchange.ip:
            warc_headers["WARC-IP-Address"] = exchange.ip
        complete = not (result.truncated or result.skipped)
        if result.truncated:
            warc_headers["WARC-Truncated"] = "length"
        elif result.skipped:
            warc_headers["WARC-Truncated"] = "unspecified"  # not HTML: body not read
        firsts = self._state.firsts
        first = firsts.get(digest) if complete and payload and 200 <= result.status < 300 else None
        duplicate_of: str | None = None
        if first is not None and first[0] != url:
            duplicate_of = first[0]
            record = self._builder.create_revisit_record(
                url, digest, first[0], first[1], http_headers=http, warc_headers_dict=warc_headers
            )
            record.rec_headers.add_header(
                "WARC-Block-Digest", payload_digest(head)
            )  # the block of a revisit is its HTTP head
        else:
            if complete and payload and 200 <= result.status < 300 and first is None:
                firsts[digest] = (url, exchange.date)
            warc_headers["WARC-Payload-Digest"] = digest
            warc_headers["WARC-Block-Digest"] = payload_digest(head + payload)
            record = self._builder.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(payload),
                length=len(payload),
                warc_headers_dict=warc_headers,
                http_headers=http,
            )
        record_id = record.rec_headers.get_header("WARC-Record-ID")
        request = self._request_record(result, exchange.date, record_id)
        response_member = self._member(record)
        offsets = self._append([response_member, self._member(request)])
        return WarcRef(
            file=self._state.name,
            offset=offsets[0],
            length=len(response_member),
            record_id=record_id,
            payload_digest=digest,
            duplicate_of=duplicate_of,
        )

    def _request_record(self, result: FetchResult, date: str, concurrent_to: str) -> Any:
        """The ``request`` record of ``result``: the request line and headers sent."""
        target, host = _request_target(result.url)
        pairs = result.request_headers or (("Host", host),)
        head = _head(
            f"GET {target} HTTP/{result.http_version}".encode("latin-1", "replace"),
            _text_fields(pairs),
        )
        http = _RawHttpHeaders(head, f"GET {target}", f"HTTP/{result.http_version}")
        headers = {
            "WARC-Date": date,
            "WARC-Concurrent-To": concurrent_to,
            "WARC-Block-Digest": payload_digest(head),
        }
        return self._builder.create_warc_record(
            result.url, "request", warc_headers_dict=headers, http_headers=http
        )

    def _write_fields(
        self, url: str, concurrent_to: str, fields: Sequence[tuple[str, str]], date: str
    ) -> None:
        self._ready()
        block = "".join(f"{name}: {value}\r\n" for name, value in fields).encode("utf-8")
        headers = {"WARC-Date": date, "WARC-Concurrent-To": concurrent_to}
        record = self._builder.create_warc_record(
            url,
            "metadata",
            payload=io.BytesIO(block),
            length=len(block),
            warc_content_type="application/warc-fields",
            warc_headers_dict=headers,
        )
        self._append([self._member(record)])

    def _write_conversion(self, url: str, refers_to: str, html: str, date: str) -> None:
        self._ready()
        block = html.encode("utf-8", "surrogatepass")
        headers = {"WARC-Date": date, "WARC-Refers-To": refers_to}
        record = self._builder.create_warc_record(
            url,
            "conversion",
            payload=io.BytesIO(block),
            length=len(block),
            warc_content_type="text/html; charset=utf-8",
            warc_headers_dict=headers,
        )
        self._append([self._member(record)])

    def _alias(self, digest: str, page_url: str, canonical_url: str) -> None:
        firsts = self._state.firsts
        first = firsts.get(digest)
        if first is not None and first[0] == page_url:
            firsts[digest] = (canonical_url, first[1])

    def _close_file(self) -> None:
        state = self._state
        if state.file is not None:
            state.file.close()
            state.file = None

    def statistics(self) -> tuple[int, int]:
        """``(records, bytes)`` written so far (compressed bytes, warcinfo included)."""
        return self.records, self.bytes_written


__all__ = [
    "FILE_DIGITS",
    "GZIP_LEVEL",
    "IDENTICAL_PAYLOAD",
    "MAX_PENDING",
    "Exchange",
    "WarcWriter",
    "complete_length",
    "payload_digest",
    "warc_files",
    "warc_stem",
]
