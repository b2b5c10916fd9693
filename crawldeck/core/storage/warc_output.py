"""The WARC/1.1 files a writer appends to: ``WarcFiles``, what the writer process does.

``WarcFiles`` appends records to ``<stem>-NNNNN.warc.gz`` in a directory (the crawl
file's: ``crawl.db`` gives ``crawl-00001.warc.gz``), every record its own gzip member
(the "record at a time compression" of WARC/1.1 annex D.2, which lets a reader seek to
one record by its offset), a ``warcinfo`` record first in each file, the next file
begun once a file holds ``max_bytes``. Digests are ``sha1:`` in base 32, as warcio and
Heritrix write them; ``WARC-Date`` has microseconds (WARC/1.1 §5.4).

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
about 30; ``tests/loopback/test_warc.py`` measures it).

Not modified (WARC/1.1 §6.7.3, profile server-not-modified): a 304 (the answer to a
recrawl's conditional GET, ``core.crawl.recrawl``) is a ``revisit`` record holding the 304's
head; its ``WARC-Refers-To-Target-URI``, ``-Date``, ``WARC-Refers-To`` and
``WARC-Payload-Digest`` are those of the full response the page's row points to (the
crawl's ``locate`` finds the row; the record's head is read back from its file,
``core.storage.warc_reader.record_head``), when there is one.

Separate from the process around it (``core.storage.warc``: its socket, frames and batches)
and from how one record is made (``core.storage.warc_records``); the files' names and reading
them back are ``core.storage.warc_reader``'s.
"""

from __future__ import annotations

import contextlib
import io
import os
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from fastwarc.warc import WarcRecord, WarcRecordType

from crawldeck.core.errors import DISK_FULL
from crawldeck.core.policy.heap import give_back
from crawldeck.core.storage.warc_reader import (
    FILE_DIGITS,
    complete_length,
    file_number,
    record_head,
    warc_files,
)
from crawldeck.core.storage.warc_records import (
    HTML_UTF8,
    HTTP_REQUEST,
    HTTP_RESPONSE,
    IDENTICAL_PAYLOAD,
    SERVER_NOT_MODIFIED,
    WARC_FIELDS,
    file_digests,
    gzip_file_member,
    gzip_member,
    http_head,
    new_record,
    request_target,
    text_fields,
)

#: Staged members are written once they hold this many bytes (else at the batch's end).
FLUSH_BYTES: Final = 1 << 22
#: The HTTP version of every request record's request line: the fetcher's session
#: (``core.net.fetcher``, aiohttp's default ``HttpVersion11``) sends each request so.
REQUEST_VERSION: Final = "1.1"


class WarcFiles:
    """The WARC files of ``stem`` in ``directory`` and the duplicate map: what the
    writer process (``core.storage.warc``) does with each job (the module docstring says how).
    Used by one thread.

    Args:
        directory: where the files go (the crawl file's directory).
        stem: the files' name stem (``warc_stem`` of the crawl file).
        max_bytes: a file is closed and the next begun once it holds this many bytes
            (a record is never split: a file may exceed it by one job).
        info: the ``warcinfo`` fields of each file (software, format, robots, the
            user agent...), in order.
        after: the highest file number the crawl file records (``pages.warc_file``):
            the first file opened is numbered past it and past every file in
            ``directory``, so that files an earlier run wrote and the user moved away
            (to archive them) are never named again (issue #25 trial 19: a resumed run
            began a second ``crawl-00001.warc.gz``, and the rows pointing into the
            first were read from the second).

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
        self,
        directory: Path,
        stem: str,
        max_bytes: int,
        info: Sequence[tuple[str, str]],
        after: int = 0,
    ) -> None:
        self.directory = Path(directory)
        self.stem = stem
        self._max_bytes = max_bytes
        self._info = dict(info)
        self._file: Any = None  # the open file (unbuffered), or None before the first job
        self._name = ""
        self._size = 0
        self._number = after
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
                self.error = f"{name}: {DISK_FULL} ({exc.strerror})"
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
        url, fetched_at, canonical_url)``, oldest first
        (``core.storage.archive.first_payloads``)."""
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
                self._number = max(self._number, file_number(last.name, self.stem) or 0)
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
        info = new_record(WarcRecordType.warcinfo, date, WARC_FIELDS, block.encode(), filename)
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
        """Stage the serialized record ``data`` as one gzip member (``gzip_member``) for the
        batch's write (``_flush``, at once past ``FLUSH_BYTES``); ``(offset in the
        file, length)`` of the member."""
        return self._stage(gzip_member(data))

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
            response (or revisit) record: a ``WarcRef``'s fields; ``payload_digest`` is
            ``None`` for a body not read (``skipped``: the record's is of no bytes).

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
                give_back()  # its chunks and its gzip member (core.policy.heap)

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
        head = http_head(statusline.encode("latin-1", "replace"), fields or text_fields(text))
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
            record = new_record(WarcRecordType.revisit, date, HTTP_RESPONSE, head, *common)
            data = self._serialize(record)
        elif isinstance(payload, Path):
            described = [*common, ("WARC-Truncated", "length")] if truncated else common
            digest, block_digest = file_digests(payload, head)
            size = payload.stat().st_size
            first = None
            if size and not (truncated or skipped) and 200 <= status < 300:
                first = self._first(digest, url, date)
            if first is None:
                new_id = f"<urn:uuid:{uuid.uuid4()}>"
                warc_head = http_head(
                    b"WARC/1.1",
                    text_fields(
                        [
                            ("WARC-Type", "response"),
                            ("WARC-Date", date),
                            ("WARC-Record-ID", new_id),
                            ("Content-Length", str(len(head) + size)),
                            *described,
                            ("Content-Type", HTTP_RESPONSE),
                            ("WARC-Payload-Digest", digest),
                            ("WARC-Block-Digest", block_digest),
                        ]
                    ),
                )
                where = self._stage(gzip_file_member(warc_head, head, payload))
                return self._request(url, date, request_headers, new_id, where,
                                     None if skipped else digest, None)  # fmt: skip
            duplicate_of = first[0]
            common += [
                ("WARC-Profile", IDENTICAL_PAYLOAD),
                ("WARC-Refers-To-Target-URI", first[0]),
                ("WARC-Refers-To-Date", first[1]),
                ("WARC-Payload-Digest", digest),
            ]
            record = new_record(WarcRecordType.revisit, date, HTTP_RESPONSE, head, *common)
            data = self._serialize(record)
        else:
            described = common
            if truncated:
                described = [*common, ("WARC-Truncated", "length")]
            elif skipped:  # not HTML: body not read
                described = [*common, ("WARC-Truncated", "unspecified")]
            record = new_record(
                WarcRecordType.response, date, HTTP_RESPONSE, head + payload, *described
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
                record = new_record(WarcRecordType.revisit, date, HTTP_RESPONSE, head, *common)
                data = self._serialize(record)
        record_id = record.record_id
        assert record_id is not None  # init_headers gave it one
        if skipped:  # the record's digest is of no bytes, not of the body (issue #25 trial 9)
            digest = None
        return self._request(
            url, date, request_headers, record_id, self._append(data), digest, duplicate_of
        )  # fmt: skip

    def _request(
        self,
        url: str,
        date: str,
        request_headers: Sequence[tuple[str, str]],
        record_id: str,
        where: tuple[int, int],
        digest: str | None,
        duplicate_of: str | None,
    ) -> tuple[str, int, int, str, str | None, str | None]:
        """Append the ``request`` record of the response ``record_id`` (at ``where``,
        ``(offset, length)``); ``exchange``'s answer. Its request line says HTTP/1.1,
        what the fetcher sends, whatever version the server answered in (issue #25
        trial 19: an HTTP/1.0 server's answer made the request record say 1.0)."""
        offset, length = where
        target, host = request_target(url)
        request_line = f"GET {target} HTTP/{REQUEST_VERSION}".encode("latin-1", "replace")
        request_fields = text_fields(request_headers or (("Host", host),))
        request = new_record(
            WarcRecordType.request,
            date,
            HTTP_REQUEST,
            http_head(request_line, request_fields),
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
        record = new_record(WarcRecordType.metadata, date, WARC_FIELDS, block, *fields)
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
        record = new_record(WarcRecordType.conversion, date, HTML_UTF8, block, *fields)
        self._append(self._serialize(record))

    def alias(self, digest: str, page_url: str, canonical_url: str) -> None:
        """Hand payload ``digest`` to ``canonical_url`` when ``page_url`` is its first
        URL (``core.storage.archive``'s canonical rule)."""
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


__all__ = ["FLUSH_BYTES", "WarcFiles"]
