"""Export one table of a crawl file as JSON Lines or CSV, streaming in constant memory.

The file is opened read-only (``file:...?mode=ro``), so an export can run while the
crawl is still writing: it sees the last committed state when it starts. Rows come out
in insertion (rowid) order, ``fetchmany`` batches of ``EXPORT_BATCH_ROWS``.

Formats:
    ``jsonl``: one JSON object per line, keys in column order, SQL NULL as ``null``,
    non-ASCII characters kept as they are (UTF-8 text), ``\\n`` line ends.
    ``csv``: a header row of column names, then one row per record (Python's ``csv``
    ``excel`` dialect with ``\\n`` line ends); SQL NULL is an empty field.

Column values are as stored (see ``core.store``): times for people are UTC ISO 8601
text, resume times are epoch seconds, ``redirects`` and ``config`` are JSON text.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path
from typing import Final, Literal, TextIO
from urllib.parse import quote

from core.errors import StoreError
from core.store import check_header, check_schema

#: The tables ``export`` accepts.
TABLES: Final = ("pages", "blocked", "hosts", "links", "frontier", "runs")
#: The formats ``export`` accepts.
FORMATS: Final = ("jsonl", "csv")
#: Rows read per ``fetchmany``: bounds the memory of an export.
EXPORT_BATCH_ROWS: Final = 500

Table = Literal["pages", "blocked", "hosts", "links", "frontier", "runs"]
Format = Literal["jsonl", "csv"]


def export(db: Path, table: Table, fmt: Format, out: TextIO) -> int:
    """Write every row of ``table`` of the crawl file ``db`` to ``out`` as ``fmt``.

    Args:
        db: a crawl file written by ``core.store.Store``.
        table: one of ``TABLES``.
        fmt: ``jsonl`` or ``csv`` (see the module docstring for the exact output).
        out: a text stream; for csv, open files with ``newline=""``.

    Returns:
        the number of data rows written (the csv header is not counted).

    Raises:
        StoreError: ``db`` is missing, not SQLite, not a crawl file of this schema
            version, cannot be read, or ``table``/``fmt`` is not one of the above.
    """
    if table not in TABLES:
        raise StoreError(f"unknown table {table!r}; expected one of {', '.join(TABLES)}")
    if fmt not in FORMATS:
        raise StoreError(f"unknown export format {fmt!r}; expected one of {', '.join(FORMATS)}")
    path = Path(db)
    if not path.is_file():
        raise StoreError(f"{path} does not exist or is not a file")
    check_header(path)
    uri = f"file:{quote(str(path.resolve()), safe='/')}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}") from None
    try:
        if not check_schema(conn, path.name):
            raise StoreError(f"{path.name} is an empty SQLite file, not a crawl file")
        cur = conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid')
        try:
            columns = [d[0] for d in cur.description]
            if fmt == "csv":
                return _write_csv(cur, columns, out)
            return _write_jsonl(cur, columns, out)
        finally:
            cur.close()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path.name}: {' '.join(str(exc).split())}") from None
    finally:
        conn.close()


def _write_csv(cur: sqlite3.Cursor, columns: list[str], out: TextIO) -> int:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    count = 0
    while rows := cur.fetchmany(EXPORT_BATCH_ROWS):
        writer.writerows(rows)
        count += len(rows)
    return count


def _write_jsonl(cur: sqlite3.Cursor, columns: list[str], out: TextIO) -> int:
    encode = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
    count = 0
    while rows := cur.fetchmany(EXPORT_BATCH_ROWS):
        out.write("".join([encode(dict(zip(columns, row, strict=True))) + "\n" for row in rows]))
        count += len(rows)
    return count


__all__ = ["EXPORT_BATCH_ROWS", "FORMATS", "TABLES", "Format", "Table", "export"]
