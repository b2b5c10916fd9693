"""WARC/1.1 files beside the crawl file, written by a process of their own.

``WarcFiles`` appends records to ``<stem>-NNNNN.warc.gz`` in a directory (the crawl
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
as its revisit. A payload the crawl hands over by file (over ``PAYLOAD_FILE_BYTES``,
``core.warc_writer``) is digested and compressed a chunk at a time and its response
record's head written here, in fastwarc's field order and form, so that no copy of it
is whole in this process. One part is not fastwarc's: each record is compressed as its gzip
member by one ``zlib`` call (``_gzip``, zlib level 3: on the local Python and Django
docs 7.8 ms per MB against 16.9 at level 6, for 15 % more bytes), not through
fastwarc's ``GzipWriter``, which costs ten times more per small member. The files are
checked by warcio (``warcio check``, ``warcio index``, its ``ArchiveIterator`` at each
offset) in ``tests/test_warc.py``; ``crawldeck show`` and ``export --with-body`` read
them with warcio.

The process: ``core.warc_writer.WarcWriter``, the crawl's side, starts
``python -P -m crawldeck.core.warc FD PARENT_PID`` at its first record and sends it
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

Crash safety: a batch's members are compressed first and appended with one ``write``
on an unbuffered file (or several of whole members, past ``FLUSH_BYTES``), so a
``kill -9`` leaves every file ending at a member boundary (a power loss may leave a
partial member: the page cache is not fsynced, as SQLite's ``synchronous=NORMAL``); an
exchange's answer is sent after its write, so no page row names a record not yet
written. A writer never appends to an old file: on its first job it truncates the
highest-numbered existing file to its last complete gzip member (so ``warcio check``
passes on every file) and starts the next number.

Exact duplicates (WARC/1.1 §6.7.2, profile identical-payload-digest): the process keeps
a map payload digest -> (URL, WARC-Date) of the latest full response of the first URL
of each payload in this crawl (rebuilt on resume from the rows the crawl sends, its
``first_payloads``); a later 2xx response with a complete, non-empty payload of a
digest in the map is written as a ``revisit`` record (its HTTP head only) naming that
URL and date, unless it is that URL again (a page refetched unchanged is a full
response of itself, never a duplicate of itself) or the same-host canonical URL it was
handed to (``alias``). The map costs about 300 bytes per distinct payload (the digest
string 86, the URL string 50 + its length, the date 76, the tuple 56, the dict slot
about 30; ``tests/test_warc.py`` measures it).

Not modified (WARC/1.1 §6.7.3, profile server-not-modified): a 304 (the answer to a
recrawl's conditional GET, ``core.recrawl``) is a ``revisit`` record holding the 304's
head; its ``WARC-Refers-To-Target-URI``, ``-Date``, ``WARC-Refers-To`` and
``WARC-Payload-Digest`` are those of the full response the page's row points to (the
crawl's ``locate`` finds the row; the record is read back here from its file), when
there is one.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import io
import os
import pickle
import re
import signal
import socket
import sys
import uuid
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from fastwarc.warc import WarcRecord, WarcRecordType

from crawldeck.core.heap import give_back

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
#: Bytes read from the socket at a time by the process.
RECV_BYTES: Final = 1 << 20
#: Payloads longer than this go to the process through a payload file, not the socket.
PAYLOAD_FILE_BYTES: Final = 1 << 20
#: Bytes of a payload file read (and compressed) at a time: 256 KiB, not 1 MiB, as
#: each read and its compressed output are held at once (the writer's peak for a 10 MiB
#: payload 19.1-19.7 -> 17.2-18.1 MiB, ``benchmarks/hostile_memory.py``).
PAYLOAD_CHUNK_BYTES: Final = 256 << 10

_HTTP_RESPONSE: Final = "application/http; msgtype=response"
_HTTP_REQUEST: Final = "application/http; msgtype=request"
_WARC_FIELDS: Final = "application/warc-fields"
_HTML: Final = "text/html; charset=utf-8"
_END: Final = b"\r\n\r\n"
_PR_SET_PDEATHSIG: Final = 1  # prctl(2)


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


def text_fields(pairs: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
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


def request_target(url: str) -> tuple[str, str]:
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


def payload_file(directory: Path, stem: str, number: int) -> Path:
    """Where the crawl puts the ``number``-th payload it hands to the process by file:
    ``DIRECTORY/.STEM-payload-NUMBER`` (a dot file beside the WARC files)."""
    return Path(directory) / f".{stem}-payload-{number}"


def payload_files(directory: Path, stem: str) -> list[Path]:
    """The payload files of ``stem`` left in ``directory`` (a crawl killed before its
    process read them)."""
    return sorted(Path(directory).glob(f".{stem}-payload-*"))


def _sha1_base32(digest: Any) -> str:
    """A SHA-1 object's digest as WARC writes it: ``sha1:`` and base 32 (fastwarc's form)."""
    return "sha1:" + base64.b32encode(digest.digest()).decode("ascii")


def _file_digests(path: Path, head: bytes) -> tuple[str, str]:
    """``(payload digest, block digest)`` of a response whose payload is the file at
    ``path`` and whose HTTP head is ``head``, read ``PAYLOAD_CHUNK_BYTES`` at a time.

    SHA-1 comes from CPython's own ``_sha1``, not ``hashlib``: importing ``hashlib``
    maps OpenSSL's libcrypto, 3.6 MiB of RSS this process needs for no other record
    (fastwarc digests the rest itself; issue #22 item 1), as ``core.simhash`` takes
    BLAKE2 from ``_blake2``. A CPython built without ``_sha1`` falls back to
    ``hashlib``."""
    try:
        from _sha1 import sha1  # type: ignore[import-not-found]  # no stub in typeshed
    except ImportError:  # pragma: no cover - every CPython build this project supports has it
        from hashlib import sha1

    payload = sha1()
    block = sha1(head)
    with open(path, "rb") as f:
        while chunk := f.read(PAYLOAD_CHUNK_BYTES):
            payload.update(chunk)
            block.update(chunk)
    return _sha1_base32(payload), _sha1_base32(block)


def _gzip_file(warc_head: bytes, head: bytes, path: Path) -> bytes:
    """One gzip member (RFC 1952, level ``GZIP_LEVEL``) of a record whose WARC head is
    ``warc_head`` and whose block is ``head`` then the file at ``path``, compressed
    ``PAYLOAD_CHUNK_BYTES`` at a time: only the member (compressed) is ever whole."""
    z = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
    out = [z.compress(warc_head), z.compress(head)]
    with open(path, "rb") as f:
        while chunk := f.read(PAYLOAD_CHUNK_BYTES):
            out.append(z.compress(chunk))
    out.append(z.compress(_END))
    out.append(z.flush())
    return b"".join(out)


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


class WarcFiles:
    """The WARC files of ``stem`` in ``directory`` and the duplicate map: what the
    writer process does with each job (module docstring). Used by one thread.

    Args:
        directory: where the files go (the crawl file's directory).
        stem: the files' name stem (``warc_stem`` of the crawl file).
        max_bytes: a file is closed and the next begun once it holds this many bytes
            (a record is never split: a file may exceed it by one job).
        info: the ``warcinfo`` fields of each file (software, format, robots, the
            user agent...), in order.

    Attributes:
        firsts: payload digest -> ``(url, WARC-Date)`` of its latest full response of
            its first URL (the duplicate map).
        aliases: payload digest -> the same-host canonical URL it was handed to.
        error: the one-line error that stopped the writing, ``None`` while it works;
            every job after it fails with it.
        records: records written so far (``warcinfo`` included).
        bytes_written: bytes written so far (compressed).
    """

    def __init__(
        self, directory: Path, stem: str, max_bytes: int, info: Sequence[tuple[str, str]]
    ) -> None:
        self.directory = Path(directory)
        self.stem = stem
        self._max_bytes = max_bytes
        self._info = dict(info)
        self._file: Any = None  # the open file (unbuffered), or None before the first job
        self._name = ""
        self._size = 0
        self._number = 0
        self.firsts: dict[str, tuple[str, str]] = {}
        self.aliases: dict[str, str] = {}
        self._serialized = io.BytesIO()  # a record, as fastwarc wrote it
        self._staged: list[bytes] = []  # members for the batch's write
        self._staged_bytes = 0
        self.error: str | None = None
        self.records = 0
        self.bytes_written = 0

    def guarded(self, job: Any, *args: Any) -> Any:
        """``job(*args)``, its ``OSError`` turned into the writer's one-line ``error``,
        raised as ``OSError`` with that line; refused once there is an error."""
        if self.error is not None:
            raise OSError(self.error)
        try:
            return job(*args)
        except OSError as exc:
            name = self._name or self.stem
            if exc.errno == 28:  # ENOSPC
                self.error = f"{name}: disk full ({exc.strerror})"
            else:
                self.error = f"{name}: cannot write the WARC file ({exc.strerror or exc})"
            raise OSError(self.error) from None

    def answer(self, job: Any, *args: Any) -> tuple[bool, Any]:
        """``(failed, value)`` of ``job(*args)`` for the crawl: its result, or its
        error line (an unexpected error becomes the writer's ``error`` too)."""
        try:
            return False, self.guarded(job, *args)
        except OSError:
            return True, self.error
        except Exception as exc:  # a defect: reported as one line, the writing stops
            self.error = f"{self._name or self.stem}: WARC writer failed: {exc!r}"
            return True, self.error

    def load(self, rows: Iterable[tuple[str, str, str, str | None]]) -> None:
        """Add the earlier runs' first responses to the duplicate map: ``(payload_digest,
        url, fetched_at, canonical_url)``, oldest first (``core.archive.first_payloads``)."""
        firsts, aliases = self.firsts, self.aliases
        for digest, url, fetched_at, canonical in rows:
            if digest not in firsts:
                firsts[digest] = (url, fetched_at)
                if canonical is not None:
                    aliases[digest] = canonical
            elif aliases.get(digest) == url:  # the canonical's own full response
                firsts[digest] = (url, fetched_at)
                del aliases[digest]

    def _open_next(self, date: str) -> None:
        """Close the current file and begin the next one with its ``warcinfo``."""
        if self._file is None:
            existing = warc_files(self.directory, self.stem)
            if existing:
                last = existing[-1]
                good = complete_length(last)
                if good != last.stat().st_size:
                    os.truncate(last, good)
                self._number = int(last.name[len(self.stem) + 1 :].split(".", 1)[0])
        else:
            self.flush()
            self._file.close()
        self._number += 1
        self._name = f"{self.stem}-{self._number:0{FILE_DIGITS}d}.warc.gz"
        path = self.directory / self._name
        self._file = open(path, "xb", buffering=0)  # noqa: SIM115 - kept open across jobs
        self._size = 0
        block = "".join(f"{name}: {value}\r\n" for name, value in self._info.items() if value)
        filename = ("WARC-Filename", self._name)
        info = _new_record(WarcRecordType.warcinfo, date, _WARC_FIELDS, block.encode(), filename)
        self._append(self._serialize(info))

    def _serialize(self, record: WarcRecord) -> bytes:
        """``record`` as fastwarc writes it, with the digests it computes
        (``checksum_data``): ``WARC-Block-Digest``, and ``WARC-Payload-Digest`` when
        it parsed the record's HTTP head (``parse_http``)."""
        serialized = self._serialized
        serialized.seek(0)
        serialized.truncate()
        record.write(serialized, checksum_data=True)
        return serialized.getvalue()

    def _append(self, data: bytes) -> tuple[int, int]:
        """Stage the serialized record ``data`` as one gzip member (``_gzip``) for the
        batch's write (``_flush``, at once past ``FLUSH_BYTES``); ``(offset in the
        file, length)`` of the member."""
        return self._stage(_gzip(data))

    def _stage(self, member: bytes) -> tuple[int, int]:
        """Stage one gzip ``member`` for the batch's write (``_append``)."""
        offset = self._size
        self._size += len(member)
        self._staged.append(member)
        self._staged_bytes += len(member)
        if self._staged_bytes >= FLUSH_BYTES:
            self.flush()
        return offset, len(member)

    def flush(self) -> None:
        """Write the staged members with one write (whole members: see the module
        docstring, crash safety)."""
        if not self._staged:
            return
        data = b"".join(self._staged)
        records = len(self._staged)
        self._staged = []
        self._staged_bytes = 0
        view = memoryview(data)
        while view:  # a regular file takes it whole; a short write goes on
            written = self._file.write(view)
            view = view[written:]
        self.bytes_written += len(data)
        self.records += records

    def _ready(self, date: str) -> None:
        """The file is open and has room for another job."""
        if self._file is None or self._size >= self._max_bytes:
            self._open_next(date)

    def exchange(
        self,
        url: str,
        date: str,
        ip: str | None,
        status: int,
        http_version: str,
        reason: str,
        fields: Sequence[tuple[bytes, bytes]],
        text: Sequence[tuple[str, str]],
        payload: bytes | tuple[str, int],
        truncated: bool,
        skipped: bool,
        request_headers: Sequence[tuple[str, str]],
        found: tuple[str, int] | None,
    ) -> tuple[str, int, int, str, str | None, str | None]:
        """Append one fetch's ``response`` record (a ``revisit`` for an exact duplicate
        or a 304) and its ``request`` record (``WARC-Concurrent-To`` the response).

        Args:
            url: the URL fetched (``WARC-Target-URI``).
            date: the ``WARC-Date`` (the fetch's start).
            ip: the server's address (``WARC-IP-Address``), ``None`` when unknown.
            status: the HTTP status.
            http_version: the status line's version (``"1.1"``).
            reason: the status line's reason phrase as sent (may be ``""``).
            fields: the response's header fields as received, name and value bytes
                (``FetchResult.raw_headers``), or ``()`` when not known (a fake
                fetcher's): then ``text``, the fields as text pairs, is written.
            payload: the body as transferred, or ``(path, size)`` of a payload file
                the crawl wrote it to (longer than ``PAYLOAD_FILE_BYTES``): read a
                chunk at a time, never whole, and removed once read.
            truncated: the body was cut at the crawl's byte cap.
            skipped: the body was not read (not HTML).
            request_headers: the request's header fields sent (``Host`` alone when
                none are known).
            found: for a 304, ``(file name, offset)`` of the full response the page's
                row points to, or ``None``.

        Returns:
            ``(file, offset, length, record_id, payload_digest, duplicate_of)`` of the
            response (or revisit) record: a ``WarcRef``'s fields.

        Raises:
            OSError: the file could not be written.
        """
        body = Path(payload[0]) if isinstance(payload, tuple) else payload
        try:
            return self._exchange(
                url, date, ip, status, http_version, reason, fields, text, body,
                truncated, skipped, request_headers, found,
            )  # fmt: skip
        finally:
            if isinstance(body, Path):  # read or not, the payload file is done with
                with contextlib.suppress(OSError):
                    body.unlink()
                give_back()  # its chunks and its gzip member (core.heap)

    def _exchange(
        self,
        url: str,
        date: str,
        ip: str | None,
        status: int,
        http_version: str,
        reason: str,
        fields: Sequence[tuple[bytes, bytes]],
        text: Sequence[tuple[str, str]],
        payload: bytes | Path,
        truncated: bool,
        skipped: bool,
        request_headers: Sequence[tuple[str, str]],
        found: tuple[str, int] | None,
    ) -> tuple[str, int, int, str, str | None, str | None]:
        """``exchange`` with the payload as bytes or as the payload file's path."""
        self._ready(date)
        statusline = f"HTTP/{http_version} {status} {reason}".rstrip()
        head = _head(statusline.encode("latin-1", "replace"), fields or text_fields(text))
        common = [("WARC-Target-URI", url)]
        if ip:
            common.append(("WARC-IP-Address", ip))
        duplicate_of: str | None = None
        digest: str | None
        if status == 304:
            refers, digest = self._not_modified(found)
            common += [("WARC-Profile", SERVER_NOT_MODIFIED), *refers]
            if digest is not None:
                common.append(("WARC-Payload-Digest", digest))
            record = _new_record(WarcRecordType.revisit, date, _HTTP_RESPONSE, head, *common)
            data = self._serialize(record)
        elif isinstance(payload, Path):
            described = [*common, ("WARC-Truncated", "length")] if truncated else common
            digest, block_digest = _file_digests(payload, head)
            size = payload.stat().st_size
            first = None
            if size and not (truncated or skipped) and 200 <= status < 300:
                first = self._first(digest, url, date)
            if first is None:
                new_id = f"<urn:uuid:{uuid.uuid4()}>"
                warc_head = _head(
                    b"WARC/1.1",
                    text_fields(
                        [
                            ("WARC-Type", "response"),
                            ("WARC-Date", date),
                            ("WARC-Record-ID", new_id),
                            ("Content-Length", str(len(head) + size)),
                            *described,
                            ("Content-Type", _HTTP_RESPONSE),
                            ("WARC-Payload-Digest", digest),
                            ("WARC-Block-Digest", block_digest),
                        ]
                    ),
                )
                where = self._stage(_gzip_file(warc_head, head, payload))
                return self._request(url, date, http_version, request_headers, new_id, where,
                                     digest, None)  # fmt: skip
            duplicate_of = first[0]
            common += [
                ("WARC-Profile", IDENTICAL_PAYLOAD),
                ("WARC-Refers-To-Target-URI", first[0]),
                ("WARC-Refers-To-Date", first[1]),
                ("WARC-Payload-Digest", digest),
            ]
            record = _new_record(WarcRecordType.revisit, date, _HTTP_RESPONSE, head, *common)
            data = self._serialize(record)
        else:
            described = common
            if truncated:
                described = [*common, ("WARC-Truncated", "length")]
            elif skipped:  # not HTML: body not read
                described = [*common, ("WARC-Truncated", "unspecified")]
            record = _new_record(
                WarcRecordType.response, date, _HTTP_RESPONSE, head + payload, *described
            )
            record.is_http = True
            record.parse_http(max_header_len=len(head))  # our own head, of any length
            data = self._serialize(record)  # fastwarc digests the payload as it writes
            digest = record.headers["WARC-Payload-Digest"]
            complete = bool(payload) and not (truncated or skipped)
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
        return self._request(
            url, date, http_version, request_headers, record_id, self._append(data), digest,
            duplicate_of,
        )  # fmt: skip

    def _request(
        self,
        url: str,
        date: str,
        http_version: str,
        request_headers: Sequence[tuple[str, str]],
        record_id: str,
        where: tuple[int, int],
        digest: str | None,
        duplicate_of: str | None,
    ) -> tuple[str, int, int, str, str | None, str | None]:
        """Append the ``request`` record of the response ``record_id`` (at ``where``,
        ``(offset, length)``); ``exchange``'s answer."""
        offset, length = where
        target, host = request_target(url)
        request_line = f"GET {target} HTTP/{http_version}".encode("latin-1", "replace")
        request_fields = text_fields(request_headers or (("Host", host),))
        request = _new_record(
            WarcRecordType.request,
            date,
            _HTTP_REQUEST,
            _head(request_line, request_fields),
            ("WARC-Target-URI", url),
            ("WARC-Concurrent-To", record_id),
        )
        self._append(self._serialize(request))
        return self._name, offset, length, record_id, digest, duplicate_of

    def _first(self, digest: str, url: str, date: str) -> tuple[str, str] | None:
        """The first full response of payload ``digest`` that a complete 2xx response
        of ``url`` at ``date`` repeats, or ``None`` when this response is to be written
        in full (a new payload, or ``url`` is the payload's first URL or its canonical
        alias: the map then points at this newer record)."""
        first = self.firsts.get(digest)
        if first is not None and first[0] != url and self.aliases.get(digest) != url:
            return first
        self.firsts[digest] = (url, date)
        self.aliases.pop(digest, None)
        return None

    def _not_modified(
        self, found: tuple[str, int] | None
    ) -> tuple[list[tuple[str, str]], str | None]:
        """The ``WARC-Refers-To-*`` fields of a 304 whose page row points at ``found``
        (that record's own fields, or those it refers to when it is an exact-duplicate
        revisit) and that payload's digest; ``([], None)`` when unknown (no row, no
        record, or a record that cannot be read)."""
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

    def metadata(
        self, url: str, concurrent_to: str, date: str, via: str | None, outlinks: Sequence[str]
    ) -> None:
        """Append a ``metadata`` record of ``url`` (``application/warc-fields``: a
        ``via: REFERRER`` line when ``via``, then an ``outlink: URL`` line per link, in
        order), ``WARC-Concurrent-To`` the response record ``concurrent_to``.

        Raises:
            OSError: the file could not be written.
        """
        self._ready(date)
        text = f"via: {via}\r\n" if via else ""
        if outlinks:
            text += "outlink: " + "\r\noutlink: ".join(outlinks) + "\r\n"
        fields = (("WARC-Target-URI", url), ("WARC-Concurrent-To", concurrent_to))
        block = text.encode("utf-8")
        record = _new_record(WarcRecordType.metadata, date, _WARC_FIELDS, block, *fields)
        self._append(self._serialize(record))

    def conversion(self, url: str, refers_to: str, html: str, date: str) -> None:
        """Append a ``conversion`` record of ``url``: the rendered DOM as UTF-8 HTML,
        ``WARC-Refers-To`` the response record ``refers_to`` (WARC/1.1 §6.8).

        Raises:
            OSError: the file could not be written.
        """
        self._ready(date)
        block = html.encode("utf-8", "surrogatepass")
        fields = (("WARC-Target-URI", url), ("WARC-Refers-To", refers_to))
        record = _new_record(WarcRecordType.conversion, date, _HTML, block, *fields)
        self._append(self._serialize(record))

    def alias(self, digest: str, page_url: str, canonical_url: str) -> None:
        """Hand payload ``digest`` to ``canonical_url`` when ``page_url`` is its first
        URL (``core.archive``'s canonical rule)."""
        first = self.firsts.get(digest)
        if first is not None and first[0] == page_url:
            self.aliases[digest] = canonical_url

    def close(self) -> tuple[int, int]:
        """Write what is staged and close the file; ``(records, bytes_written)``.

        Raises:
            OSError: the file could not be written.
        """
        if self._file is not None:
            self.flush()
            self._file.close()
            self._file = None
        return self.records, self.bytes_written


#: Jobs that are not answered: frame kind -> the ``WarcFiles`` method.
_QUEUED: Final = {"m": WarcFiles.metadata, "c": WarcFiles.conversion, "a": WarcFiles.alias}


def serve(sock: socket.socket) -> None:
    """The writer process's loop (module docstring): read the frames ``sock`` has, run
    them as one batch, write the batch's records with one ``write``, answer, until the
    ``close`` job or the end of the socket (the crawl ended: what was read is written)."""
    files: WarcFiles | None = None
    buffer = bytearray()
    reported: str | None = None
    while True:
        chunk = sock.recv(RECV_BYTES)
        if not chunk:
            if files is not None:
                with contextlib.suppress(OSError):
                    files.guarded(files.close)
            return
        buffer += chunk
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
    """``python -P -m crawldeck.core.warc FD PARENT_PID``: serve the crawl on the socket
    ``FD`` until it closes it; killed when the parent dies (``PR_SET_PDEATHSIG``, Linux).
    Started in its own session (``core.warc_writer``), it never gets the signals sent to
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
    "FILE_DIGITS",
    "FLUSH_BYTES",
    "GZIP_LEVEL",
    "IDENTICAL_PAYLOAD",
    "MAX_HEAD_BYTES",
    "PAYLOAD_FILE_BYTES",
    "SERVER_NOT_MODIFIED",
    "WarcFiles",
    "complete_length",
    "frame",
    "payload_file",
    "payload_files",
    "record_head",
    "request_target",
    "serve",
    "split_frames",
    "text_fields",
    "warc_files",
    "warc_stem",
]

if __name__ == "__main__":
    sys.exit(main())
