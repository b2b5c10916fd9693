"""One WARC/1.1 record: its fastwarc record, its HTTP head, its gzip member, its digests.

The records are built and serialized by fastwarc (``fastwarc.warc.WarcRecord``: its
``WARC-Record-ID``, a random UUID 4, its ``Content-Length``, and from
``write(checksum_data=True)`` its ``WARC-Block-Digest`` and, for a response whose HTTP
head it parsed, its ``WARC-Payload-Digest``), chosen over warcio's builder by the
measurement in ``benchmarks/RESULTS.md`` ("WARC output": 70 against 126 us of Python
per page). The block is the HTTP head as received (``http_head``: the status line and
the raw header fields, in order; fastwarc's parse of it writes the same bytes back) and
the payload as transferred. A response is serialized before the duplicate map is asked
(the map needs fastwarc's payload digest); an exact duplicate is then serialized again
as its revisit (``core.storage.warc_output``). A payload the crawl hands over by file (over
``core.storage.warc.PAYLOAD_FILE_BYTES``, ``core.storage.warc_writer``) is digested and compressed a
chunk at a time (``file_digests``, ``gzip_file_member``) and its response record's head
written in fastwarc's field order and form, so that no copy of it is whole in the writer
process. One part is not fastwarc's: each record is compressed as its gzip member by
one ``zlib`` call (``gzip_member``, zlib level 3: on the local Python and Django
docs 7.8 ms per MB against 16.9 at level 6, for 15 % more bytes), not through
fastwarc's ``GzipWriter``, which costs ten times more per small member. The files are
checked by warcio (``warcio check``, ``warcio index``, its ``ArchiveIterator`` at each
offset) in ``tests/loopback/test_warc.py``; ``crawldeck show`` and ``export --with-body`` read
them with warcio.

Separate from the files the records go to (``core.storage.warc_output``: rotation, the duplicate
map, crash safety) and from the process that writes them (``core.storage.warc``): how one
record is made, byte for byte, whatever file it goes to.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from fastwarc.warc import WarcRecord, WarcRecordType

#: zlib level of each member (see the module docstring).
GZIP_LEVEL: Final = 3
#: The revisit profile of an exact duplicate (WARC/1.1 §6.7.2).
IDENTICAL_PAYLOAD: Final = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
#: The revisit profile of a 304 Not Modified (WARC/1.1 §6.7.3).
SERVER_NOT_MODIFIED: Final = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
#: Bytes of a payload file read (and compressed) at a time: 256 KiB, not 1 MiB, as
#: each read and its compressed output are held at once (the writer's peak for a 10 MiB
#: payload 19.1-19.7 -> 17.2-18.1 MiB, ``benchmarks/hostile_memory.py``).
PAYLOAD_CHUNK_BYTES: Final = 256 << 10
#: The ``Content-Type`` of each kind of block.
HTTP_RESPONSE: Final = "application/http; msgtype=response"
HTTP_REQUEST: Final = "application/http; msgtype=request"
WARC_FIELDS: Final = "application/warc-fields"
HTML_UTF8: Final = "text/html; charset=utf-8"
_END: Final = b"\r\n\r\n"


def http_head(first_line: bytes, fields: Iterable[tuple[bytes, bytes]]) -> bytes:
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


def new_record(
    kind: WarcRecordType, date: str, content_type: str, block: bytes, *fields: tuple[str, str]
) -> WarcRecord:
    """A fastwarc record of type ``kind``: ``WARC-Type``, a random ``WARC-Record-ID``
    (a UUID 4, fastwarc's), ``WARC-Date`` ``date``, ``Content-Length``, then ``fields``
    in order, ``Content-Type``, and the block; fastwarc adds the digests when it
    writes it (``core.storage.warc_output.WarcFiles._serialize``)."""
    record = WarcRecord()
    record.init_headers(kind)
    headers = record.headers
    headers["WARC-Date"] = date
    for name, value in fields:
        headers.append(name, value)
    headers.append("Content-Type", content_type)
    record.set_bytes_content(block)
    return record


def gzip_member(record: bytes) -> bytes:
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


def _sha1_base32(digest: Any) -> str:
    """A SHA-1 object's digest as WARC writes it: ``sha1:`` and base 32 (fastwarc's form)."""
    return "sha1:" + base64.b32encode(digest.digest()).decode("ascii")


def file_digests(path: Path, head: bytes) -> tuple[str, str]:
    """``(payload digest, block digest)`` of a response whose payload is the file at
    ``path`` and whose HTTP head is ``head``, read ``PAYLOAD_CHUNK_BYTES`` at a time.

    SHA-1 comes from CPython's own ``_sha1``, not ``hashlib``: importing ``hashlib``
    maps OpenSSL's libcrypto, 3.6 MiB of RSS the writer process needs for no other record
    (fastwarc digests the rest itself; issue #22 item 1), as ``core.policy.simhash`` takes
    BLAKE2 from ``_blake2``. A CPython built without ``_sha1`` falls back to
    ``hashlib``.

    Raises:
        OSError: the file cannot be read.
    """
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


def gzip_file_member(warc_head: bytes, head: bytes, path: Path) -> bytes:
    """One gzip member (RFC 1952, level ``GZIP_LEVEL``) of a record whose WARC head is
    ``warc_head`` and whose block is ``head`` then the file at ``path``, compressed
    ``PAYLOAD_CHUNK_BYTES`` at a time: only the member (compressed) is ever whole.

    Raises:
        OSError: the file cannot be read.
    """
    z = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
    out = [z.compress(warc_head), z.compress(head)]
    with open(path, "rb") as f:
        while chunk := f.read(PAYLOAD_CHUNK_BYTES):
            out.append(z.compress(chunk))
    out.append(z.compress(_END))
    out.append(z.flush())
    return b"".join(out)


__all__ = [
    "GZIP_LEVEL",
    "HTML_UTF8",
    "HTTP_REQUEST",
    "HTTP_RESPONSE",
    "IDENTICAL_PAYLOAD",
    "PAYLOAD_CHUNK_BYTES",
    "SERVER_NOT_MODIFIED",
    "WARC_FIELDS",
    "file_digests",
    "gzip_file_member",
    "gzip_member",
    "http_head",
    "new_record",
    "request_target",
    "text_fields",
]
