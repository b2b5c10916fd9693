"""The WARC files on disk: their names, and what is read back from them.

A crawl file ``crawl.db`` has its WARC files beside it, ``crawl-00001.warc.gz``,
``crawl-00002.warc.gz``, ... (``warc_stem``, ``warc_files``), each record its own gzip
member (``core.storage.warc_output``). Read back here: how much of a file is whole members
(``complete_length``: before it begins a new file, a writer cuts the last one back to
that, should a crash have left it mid-member), and the WARC head of the record at an
offset (``record_head``: a 304's revisit names the full response its page row points
to).

Separate from the writing (``core.storage.warc_output``, ``core.storage.warc_records``): finding the
files and reading a head needs neither fastwarc nor the writer process, and the crawl's
side (``core.storage.archive``), the cluster and the tests read them too. Standard library only.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Final

#: The digits of a file's number: ``crawl-00001.warc.gz``.
FILE_DIGITS: Final = 5
#: Bytes of a record's WARC head read back at most (``record_head``).
MAX_HEAD_BYTES: Final = 1 << 16
#: The blank line that ends a head.
_END: Final = b"\r\n\r\n"


def warc_stem(db: Path) -> str:
    """The WARC files' stem of crawl file ``db``: its name without a ``.db``,
    ``.sqlite`` or ``.sqlite3`` suffix (``crawl.db`` -> ``crawl``)."""
    name = db.name
    for suffix in (".db", ".sqlite", ".sqlite3"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def file_number(name: str, stem: str) -> int | None:
    """The number of WARC file ``name`` of ``stem`` (``crawl-00012.warc.gz`` -> 12), or
    ``None`` when ``name`` is not ``<stem>-NNNNN.warc.gz`` (at least ``FILE_DIGITS``
    digits)."""
    match = re.fullmatch(re.escape(stem) + r"-(\d{" + str(FILE_DIGITS) + r",})\.warc\.gz", name)
    return int(match.group(1)) if match else None


def warc_files(directory: Path, stem: str) -> list[Path]:
    """The WARC files of ``stem`` in ``directory`` (``<stem>-NNNNN.warc.gz``), by number."""
    found = []
    for path in directory.iterdir() if directory.is_dir() else ():
        number = file_number(path.name, stem)
        if number is not None:
            found.append((number, path))
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


__all__ = [
    "FILE_DIGITS",
    "MAX_HEAD_BYTES",
    "complete_length",
    "file_number",
    "record_head",
    "warc_files",
    "warc_stem",
]
