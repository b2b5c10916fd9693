"""Export one table of a crawl file as JSON Lines, JSON or CSV, streaming in constant
memory.

The file is opened to read only (``core.storage.store.connect_reader``: ``query_only``,
and no ``-wal``/``-shm`` left behind), so an export can run while the crawl is still
writing: it sees the last committed state when it starts. Rows come out
in insertion (rowid) order, ``fetchmany`` batches of ``EXPORT_BATCH_ROWS``.

Formats:
    ``jsonl``: one JSON object per line, keys in column order, SQL NULL as ``null``,
    non-ASCII characters kept as they are (UTF-8 text), ``\\n`` line ends; the
    columns of JSON text (``runs.config``, ``runs.stats``, ``frontier.redirects``:
    ``JSON_COLUMNS``) as their JSON value, the 0/1 flags (``rendered``, ``noindex``)
    as ``false``/``true``.
    ``json``: the same objects as one JSON array, one object a line (``[``, the
    objects separated by ``,``, ``]``), as Scrapy's ``-o items.json`` writes one.
    ``csv``: a header row of column names, then one row per record (Python's ``csv``
    ``excel`` dialect with ``\\n`` line ends); SQL NULL is an empty field.

Column values are as stored (see ``core.storage.store``, schema version 3): ``*_at`` times are
UTC ISO 8601 text, ``*_epoch_s`` times are epoch seconds, ``redirects`` and ``config``
are JSON text. A file of an older schema version is upgraded first, as a crawl's open
upgrades it (``core.storage.store.Store``: one transaction), so the columns are always version
3's (``blocked_at``, not ``at``); that write needs the file not in use.

``export_file`` writes a file atomically: into a hidden temporary file in the same
directory (``.NAME.RANDOM.tmp``), flushed to disk (fsync) and then renamed over the
target (rename(2) replaces it in one step), so the target is at any moment either
what it was or the whole new export, never a partial one. A failed or stopped export
removes its temporary file; only a SIGKILL or a crash can leave one behind, hidden,
and never under the target's name.

Bodies (issue #13): ``export(..., with_body=True)`` (``pages``, jsonl only) adds a
``body`` field to each row, read from the page's WARC record one row at a time (never
all bodies at once): the payload with its HTTP content coding (gzip, deflate) undone,
decoded as text by the charset of its ``Content-Type`` (else a ``<meta charset>`` in
its first 1024 bytes, else UTF-8; invalid bytes replaced). A binary body (a media type
that is not text, HTML, XML or JSON), a revisit (the body is the ``duplicate_of``
page's), a row without a record or a missing WARC file gives ``"body": null`` and a
``body_note`` saying which. ``read_record`` and ``page_record`` serve ``crawldeck show``.

The link checker's reads (``crawldeck links``) are ``core.storage.link_report``'s;
it and ``core.storage.mirror`` read the file through ``open_crawl``, ``same_page`` and
``read_record``.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import json
import os
import re
import secrets
import sqlite3
import stat
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TextIO

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from crawldeck.core.config import DEFAULT_STRIP_PARAMS
from crawldeck.core.errors import CrawldeckError, StoreError, UrlError
from crawldeck.core.policy import urls
from crawldeck.core.storage.archive import decode_content
from crawldeck.core.storage.store import (
    SCHEMA_VERSION,
    Store,
    check_header,
    check_schema,
    connect_reader,
    is_sqlite_file,
)
from crawldeck.core.words import plural

#: The tables ``export`` accepts: every table of the schema but ``meta``.
TABLES: Final = (
    "pages", "blocked", "hosts", "links", "frontier", "runs", "page_versions", "sitemaps",
    "sitemap_urls", "page_summary", "host_summary", "broken_links",
)  # fmt: skip
#: The views among ``TABLES`` (``core.storage.store.schema``): no rowid, their own order.
VIEWS: Final = frozenset({"page_summary", "host_summary", "broken_links"})
#: The formats ``export`` accepts.
FORMATS: Final = ("jsonl", "json", "csv")
#: Rows read per ``fetchmany``: bounds the memory of an export.
EXPORT_BATCH_ROWS: Final = 500

Table = Literal[
    "pages", "blocked", "hosts", "links", "frontier", "runs", "page_versions", "sitemaps",
    "sitemap_urls", "page_summary", "host_summary", "broken_links",
]  # fmt: skip
Format = Literal["jsonl", "json", "csv"]


@dataclass(frozen=True, slots=True)
class ArchivedRecord:
    """One WARC record read back (``read_record``).

    Attributes:
        warc_headers: the record's WARC header fields, ``(name, value)`` in order.
        rec_type: ``response``, ``revisit``, ...
        http_head: the HTTP status line and header lines, as text (Latin-1 for bytes
            that are not UTF-8), ``""`` for a record without HTTP.
        content_type: the HTTP ``Content-Type`` value (``""`` when absent).
        payload: the payload as stored (content coding kept).
        body: the payload with its ``Content-Encoding`` (gzip, deflate, br) undone,
            at most ``read_record``'s ``max_bytes`` (``core.storage.archive.decode_content``).
    """

    warc_headers: list[tuple[str, str]]
    rec_type: str
    http_head: str
    content_type: str
    payload: bytes
    body: bytes


_TEXT_TYPES: Final = re.compile(r"text/|application/(?:[\w.+-]*\+)?(?:xml|json|xhtml\+xml)\b")
_META_CHARSET: Final = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([\w.:-]+)""", re.IGNORECASE)


def read_record(path: Path, offset: int, max_bytes: int) -> ArchivedRecord:
    """The WARC record at byte ``offset`` of ``path`` (a gzip member start), read whole,
    its body decoded to at most ``max_bytes`` bytes (the page's ``pages.bytes``: what
    the fetcher kept; a bomb is cut there, not expanded).

    Raises:
        StoreError: the file is missing or unreadable, no WARC record starts there, or
            its body does not decode as its ``Content-Encoding`` says.
    """
    try:
        with path.open("rb") as f:
            f.seek(offset)
            record = next(iter(ArchiveIterator(f)), None)
            if record is None:
                raise StoreError(f"{path.name}: no WARC record at offset {offset}")
            payload = record.raw_stream.read()
            http = record.http_headers
            head = ""
            content_type = ""
            coding = ""
            if http is not None:
                lines = [f"{http.protocol} {http.statusline}".strip()]
                lines += [f"{name}: {value}" for name, value in http.headers]
                head = "\r\n".join(lines)
                content_type = http.get_header("Content-Type") or ""
                coding = http.get_header("Content-Encoding") or ""
            warc = [(n, v) for n, v in record.rec_headers.headers]
            rec_type = record.rec_type
    except FileNotFoundError:
        raise StoreError(f"{path.name}: WARC file not found (in {path.parent})") from None
    except ArchiveLoadFailed:  # its message quotes the bytes found there: binary
        raise StoreError(
            f"{path.name}: no WARC record starts at byte {offset}: it is not the file this "
            "crawl wrote (replaced or rewritten since?)"
        ) from None
    except (OSError, zlib.error, EOFError) as exc:
        detail = getattr(exc, "strerror", None) or " ".join(str(exc).split())
        raise StoreError(f"{path.name}: cannot read the record at {offset}: {detail}") from None
    try:
        body, _ = decode_content(payload, coding, max_bytes)
    except ValueError as exc:
        raise StoreError(f"{path.name}: the record at {offset}: {exc}") from None
    return ArchivedRecord(warc, rec_type, head, content_type, payload, body)


def body_charset(record: ArchivedRecord) -> str:
    """The charset ``record``'s body is decoded by: its ``Content-Type``'s, else a
    ``<meta charset>`` in its first 1024 bytes, else UTF-8 when the body is valid
    UTF-8 and windows-1252 when not, as browsers read an undeclared page (the WHATWG
    Encoding Standard's default for HTML; issue #25 trial 10: a Latin-1 page showed
    U+FFFD); UTF-8 for a name Python has no codec for."""
    charset = None
    for param in record.content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip('"')
    if charset is None:
        found = _META_CHARSET.search(record.body[:1024])
        if found:
            charset = found.group(1).decode("ascii")
        else:
            try:
                record.body.decode("utf-8")
                charset = "utf-8"
            except UnicodeDecodeError:
                charset = "windows-1252"
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return "utf-8"


def body_text(record: ArchivedRecord) -> str | None:
    """``record``'s body as text (module docstring: charset, meta, UTF-8), ``None``
    for a binary media type."""
    media = record.content_type.split(";", 1)[0].strip().lower()
    if media and not _TEXT_TYPES.match(media):
        return None
    return record.body.decode(body_charset(record), "replace")


def export(db: Path, table: Table, fmt: Format, out: TextIO, *, with_body: bool = False) -> int:
    """Write every row of ``table`` of the crawl file ``db`` to ``out`` as ``fmt``.

    Args:
        db: a crawl file written by ``core.storage.store.Store``.
        table: one of ``TABLES``.
        fmt: ``jsonl`` or ``csv`` (see the module docstring for the exact output).
        out: a text stream; for csv, open files with ``newline=""``.
        with_body: add each page's ``body`` (``pages`` as ``jsonl`` only; module
            docstring).

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
    if with_body and (table != "pages" or fmt != "jsonl"):
        raise StoreError("--with-body exports the pages table as jsonl only")
    path = Path(db)
    conn = _connect(path)
    try:
        # a view (issue #25 trial 21: the docs' views were refused) in its own order
        order = "" if table in VIEWS else " ORDER BY rowid"
        cur = conn.execute(f'SELECT * FROM "{table}"{order}')
        try:
            columns = [d[0] for d in cur.description]
            if fmt == "csv":
                return _write_csv(cur, columns, out)
            if with_body:
                return _write_bodies(cur, columns, out, path.parent)
            if fmt == "json":
                return _write_json(cur, columns, out)
            return _write_jsonl(cur, columns, out)
        finally:
            cur.close()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path}: {' '.join(str(exc).split())}") from None
    finally:
        conn.close()


def open_crawl(db: Path) -> sqlite3.Connection:
    """A read-only connection to the crawl file ``db`` (``export``'s: an older schema
    version upgraded first); the caller closes it.

    Raises:
        StoreError: as ``export``.
    """
    return _connect(Path(db))


@contextlib.contextmanager
def reading(db: Path) -> Iterator[sqlite3.Connection]:
    """``open_crawl(db)`` for a ``with`` block, closed at its end; an SQLite error in
    the block is raised as one line.

    Raises:
        StoreError: as ``export``, and ``cannot read DB: REASON`` for an SQLite error.
    """
    path = Path(db)
    try:
        with contextlib.closing(_connect(path)) as conn:
            yield conn
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path}: {' '.join(str(exc).split())}") from None


def holds_crawl(db: Path) -> bool:
    """Whether ``db`` is a crawl file with a crawl in it (a frontier row) to resume;
    read-only, so nothing is made or upgraded when it is not. Never raises."""
    if not is_sqlite_file(Path(db)):
        return False
    try:
        with reading(db) as conn:
            return conn.execute("SELECT 1 FROM frontier LIMIT 1").fetchone() is not None
    except CrawldeckError:
        return False


def last_run_config(db: Path) -> dict[str, Any] | None:
    """The config of the last run of the crawl file ``db`` (``runs.config``, as
    ``Store.last_config``), read-only; ``None`` without a run or when it is not a JSON
    object.

    Raises:
        StoreError: as ``export``.
    """
    with reading(db) as conn:
        row = conn.execute("SELECT config FROM runs ORDER BY id DESC LIMIT 1").fetchone()
    try:
        value = json.loads(row[0]) if row is not None and row[0] else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _connect(path: Path) -> sqlite3.Connection:
    """A read-only connection to the crawl file ``path``, of ``SCHEMA_VERSION``: a file
    of an older version is upgraded first (module docstring).

    Raises:
        StoreError: ``path`` is missing, not SQLite, empty, not a crawl file, of another
            schema version, in use while it needs the upgrade, or cannot be read.
    """
    if not path.is_file():
        raise StoreError(f"{path} does not exist or is not a file")
    check_header(path)
    conn, version = _open_read_only(path)
    if version != str(SCHEMA_VERSION):
        conn.close()
        Store(path).close()  # the upgrade, in one transaction
        conn, version = _open_read_only(path)
    return conn


def _open_read_only(path: Path) -> tuple[sqlite3.Connection, str]:
    """``(connection, schema version)`` of the crawl file ``path``, opened read-only.

    Raises:
        StoreError: as ``_connect``.
    """
    try:
        conn = connect_reader(path)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}") from None
    try:
        version = check_schema(conn, str(path))
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot read {path}: {' '.join(str(exc).split())}") from None
    except BaseException:
        conn.close()
        raise
    if version is None:
        conn.close()
        raise StoreError(f"{path} is an empty SQLite file, not a crawl file")
    return conn, version


def export_file(db: Path, table: Table, fmt: Format, path: Path, *, with_body: bool = False) -> int:
    """Write ``table`` of ``db`` as ``fmt`` into the file ``path``, atomically.

    A regular file (or a missing one) is replaced in one rename at the end, after an
    fsync of the new content (and of the directory after the rename); it keeps the mode
    (and, for root, the owner) of the file it replaces. A symlink is followed: the file
    it points to is replaced, the link stays. Something that cannot be renamed over (a
    device such as ``/dev/null``, a FIFO) is written in place.

    Returns:
        the number of data rows written (as ``export``; ``with_body`` as there).

    Raises:
        StoreError: as ``export``, or ``path`` is ``db`` itself (under any name) or one
            of its ``-wal``/``-shm``/``-journal`` files.
        OSError: the file cannot be written (no such directory, permission, disk full);
            the target is then as it was and the temporary file is gone.
    """
    target = Path(os.path.realpath(path))
    _refuse_crawl_file(Path(db), target, path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(target, "w", encoding="utf-8", newline="") as out:
            return export(db, table, fmt, out, with_body=with_body)
    temp = target.with_name(f".{target.name[:200]}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with open(fd, "w", encoding="utf-8", newline="") as out:
            if st is not None:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
                with contextlib.suppress(OSError):  # only root may give a file away
                    os.fchown(fd, st.st_uid, st.st_gid)
            count = export(db, table, fmt, out, with_body=with_body)
            out.flush()
            os.fsync(fd)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    _fsync_directory(target.parent)
    return count


def _refuse_crawl_file(db: Path, target: Path, given: Path) -> None:
    """Refuse an output that would replace the crawl file or one of its side files."""
    try:
        same = os.path.samefile(db, target)
    except OSError:  # one of them does not exist (yet)
        same = False
    if same:
        raise StoreError(f"{str(given)!r} is the crawl file itself; choose another output file")
    real_db = Path(os.path.realpath(db))
    if target.parent == real_db.parent and target.name in {
        f"{real_db.name}{suffix}" for suffix in ("-wal", "-shm", "-journal")
    }:
        raise StoreError(f"{str(given)!r} is a file of the crawl {real_db.name}; choose another")


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (fsync(2) of the directory; file systems
    that cannot sync a directory are left alone)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _write_csv(cur: sqlite3.Cursor, columns: list[str], out: TextIO) -> int:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    count = 0
    while rows := cur.fetchmany(EXPORT_BATCH_ROWS):
        writer.writerows(rows)
        count += len(rows)
    return count


#: Columns that hold JSON text, written by the JSON formats as the JSON value itself
#: (an object or a list, not a string of JSON inside JSON: issue #25).
JSON_COLUMNS: Final = frozenset({"config", "stats", "redirects"})
#: Columns that hold a flag (0/1), written by the JSON formats as ``false``/``true``.
FLAG_COLUMNS: Final = frozenset({"rendered", "noindex"})


def _json_row(columns: list[str]) -> Callable[[Sequence[object]], dict[str, object]]:
    """A row of ``columns`` as the JSON formats write it: ``JSON_COLUMNS`` parsed (text
    that is not JSON kept as text), ``FLAG_COLUMNS`` as booleans; the others as stored."""
    parsed = [i for i, name in enumerate(columns) if name in JSON_COLUMNS]
    flags = [i for i, name in enumerate(columns) if name in FLAG_COLUMNS]
    if not parsed and not flags:
        return lambda row: dict(zip(columns, row, strict=True))

    def convert(row: Sequence[object]) -> dict[str, object]:
        values = list(row)
        for i in parsed:
            if isinstance(values[i], str):
                with contextlib.suppress(ValueError):
                    values[i] = json.loads(values[i])  # type: ignore[arg-type]
        for i in flags:
            if isinstance(values[i], int):
                values[i] = bool(values[i])
        return dict(zip(columns, values, strict=True))

    return convert


def _write_jsonl(cur: sqlite3.Cursor, columns: list[str], out: TextIO) -> int:
    encode = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
    as_json = _json_row(columns)
    count = 0
    while rows := cur.fetchmany(EXPORT_BATCH_ROWS):
        out.write("".join([encode(as_json(row)) + "\n" for row in rows]))
        count += len(rows)
    return count


def _write_json(cur: sqlite3.Cursor, columns: list[str], out: TextIO) -> int:
    """One JSON array of the rows as ``_write_jsonl`` writes them, one a line."""
    encode = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
    as_json = _json_row(columns)
    count = 0
    out.write("[")
    while rows := cur.fetchmany(EXPORT_BATCH_ROWS):
        lead = ",\n" if count else "\n"
        out.write(lead + ",\n".join(encode(as_json(row)) for row in rows))
        count += len(rows)
    out.write("\n]\n" if count else "]\n")
    return count


def _write_bodies(cur: sqlite3.Cursor, columns: list[str], out: TextIO, where: Path) -> int:
    """JSON Lines of pages with ``body`` and ``body_note`` (why ``body`` is null; null
    when there is a body): every row has the same keys."""
    encode = json.JSONEncoder(ensure_ascii=False).encode
    as_json = _json_row(columns)
    count = 0
    while batch := cur.fetchmany(EXPORT_BATCH_ROWS):
        for values in batch:
            row = as_json(values)
            text, note = _page_body(row, where, cur.connection)
            row["body"] = text
            row["body_note"] = note
            out.write(encode(row) + "\n")
            count += 1
    return count


def _page_body(
    row: dict[str, object], where: Path, conn: sqlite3.Connection
) -> tuple[str | None, str | None]:
    """``(body text, None)`` of a pages row, or ``(None, why not)``; an exact duplicate
    (a revisit record) has the body of the page it repeats (``duplicate_of``), as
    ``show --raw`` and the mirror give it (issue #25 trial 8)."""
    file, offset, size = row.get("warc_file"), row.get("warc_offset"), row.get("bytes")
    if not isinstance(file, str) or not isinstance(offset, int) or not isinstance(size, int):
        return None, "no WARC record"
    try:
        record = read_record(where / file, offset, size)
        original = row.get("duplicate_of")
        if record.rec_type == "revisit" and isinstance(original, str):
            found = conn.execute(
                "SELECT warc_file, warc_offset, bytes FROM pages WHERE url = ?", (original,)
            ).fetchone()
            if found is None or found[0] is None:
                return None, f"revisit: the body is that of {original}, which has no record"
            record = read_record(where / found[0], found[1], found[2])
    except StoreError as exc:
        return None, str(exc)
    if record.rec_type == "revisit":
        return None, f"revisit: the body is that of {row.get('duplicate_of')}"
    status = row.get("status")
    if not record.body and isinstance(status, int) and 300 <= status < 400:
        return None, f"a redirect (HTTP {status}): its body is not kept"
    if not record.body and dict(record.warc_headers).get("WARC-Truncated") == "unspecified":
        return None, f"not downloaded ({record.content_type or 'no Content-Type'}: not HTML)"
    text = body_text(record)
    if text is None:
        return (
            None,
            f"binary ({record.content_type or 'no Content-Type'}, {len(record.body)} bytes)",
        )
    return text, None


#: Where a page's WARC record is (``page_record``), and the error of a fetch that got no
#: response (a timeout, a refused connection: ``show`` says it, as ``links --broken``
#: does; issue #25 trial 16).
_SQL_RECORD_AT: Final = (
    "SELECT warc_file, warc_offset, bytes, error, status FROM pages WHERE url = ?"
)


def page_record(db: Path, url: str) -> ArchivedRecord:
    """The WARC record of page ``url`` of crawl file ``db`` (``crawldeck show``):
    ``url`` as given, else as the crawl wrote it (``urls.clean``: ``HTTP://h`` is
    ``http://h/``), else, without a scheme, as ``http://`` + it (``h:8080/x``, as
    ``crawl`` takes such a seed): as a browser's address bar takes what is typed.

    Raises:
        StoreError: ``db`` is not a crawl file, ``url`` is not one of its pages (a URL
            the crawl refused says why: its ``blocked`` row), the page has no WARC
            record, or its WARC file is missing or unreadable.
    """
    path = Path(db)
    candidates = [url]
    # as given, cleaned, and without a scheme as http:// + it (as crawl takes a seed)
    for spelling in (url, f"http://{url}"):
        with contextlib.suppress(UrlError):
            candidates.append(urls.clean(spelling))
    try:
        with contextlib.closing(_connect(path)) as conn:
            found = refused = None
            for candidate in dict.fromkeys(candidates):
                found = conn.execute(_SQL_RECORD_AT, (candidate,)).fetchone()
                if found is not None:
                    break
                refused = (
                    refused
                    or conn.execute(
                        "SELECT reason, detail FROM blocked WHERE url = ?", (candidate,)
                    ).fetchone()
                )
            if found is None and refused is None:
                # another spelling of a page fetched (its dedupe key): that page's record
                strip = strip_params_of(conn)
                for candidate in dict.fromkeys(candidates):
                    same = same_page(conn, strip, candidate)
                    if same is not None:
                        found = conn.execute(_SQL_RECORD_AT, (same[3],)).fetchone()
                        break
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path}: {' '.join(str(exc).split())}") from None
    if found is None and refused is not None:
        # never fetched: say why, as the blocked table does (issue #25 trial 6)
        why = f"{refused[0]}: {refused[1]}" if refused[1] else refused[0]
        raise StoreError(f"{url} was refused, never fetched ({why}): no page in {path.name}")
    if found is None:
        raise StoreError(f"{url} is not a page of {path.name}")
    if found[0] is None and found[4] is None and found[3]:  # no response: say what happened
        raise StoreError(f"{url} has no WARC record: no response ({found[3]})")
    if found[0] is None:
        raise StoreError(f"{url} has no WARC record (fetched with warc off)")
    return read_record(path.parent / found[0], found[1], found[2])


#: The page fetched under a dedupe key (``frontier.key``: ``urls.normalize`` with the
#: crawl's ``strip_params``): a link spelled otherwise (``/shop/?sid=2`` beside the
#: ``/shop/?sid=1`` fetched) is that page, not a URL never checked (issue #25).
_SQL_SAME_PAGE: Final = (
    "SELECT p.status, p.error, p.final_url, p.url FROM frontier f CROSS JOIN pages p"
    " ON p.url = f.url WHERE f.key = ?"
)


#: The 304 answers a page got after the fetch its ``pages`` row (and WARC record)
#: holds: a recrawl's 304 keeps the row and adds a ``page_versions`` row only.
_SQL_REVALIDATIONS: Final = (
    "SELECT count(*), max(v.fetched_at) FROM pages p CROSS JOIN page_versions v"
    " ON v.url = p.url WHERE p.url = ? AND v.status = 304 AND v.fetched_at > p.fetched_at"
)


def page_revalidations(db: Path, url: str) -> tuple[int, str | None]:
    """How many times page ``url`` (as fetched: its record's ``WARC-Target-URI``) was
    answered 304 Not Modified after the fetch its record holds, and the last time
    (UTC ISO 8601 text; ``None`` when never): a recrawl's 304 keeps the page's row
    and record as they were (``core.crawl.recrawl``), so ``crawldeck show`` says the
    page was checked since, as wget ``-N`` users expect to see (issue #25 trial 17).

    Raises:
        StoreError: as ``export``.
    """
    with reading(db) as conn:
        count, last = conn.execute(_SQL_REVALIDATIONS, (url,)).fetchone()
    return int(count), last


def strip_params_of(conn: sqlite3.Connection) -> tuple[str, ...]:
    """The ``strip_params`` of the crawl file's last run (``runs.config``), else the
    default: what its dedupe keys (``urls.normalize``) were made with."""
    row = conn.execute("SELECT config FROM runs ORDER BY id DESC LIMIT 1").fetchone()
    try:
        value = json.loads(row[0]).get("strip_params") if row and row[0] else None
    except (ValueError, AttributeError):
        value = None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return DEFAULT_STRIP_PARAMS


def same_page(
    conn: sqlite3.Connection, strip: tuple[str, ...], url: str
) -> tuple[int | None, str | None, str | None, str] | None:
    """``(status, error, final_url, url fetched)`` of the page fetched under ``url``'s
    dedupe key (``urls.normalize`` with ``strip``, the crawl's ``strip_params_of``),
    or ``None``: a link spelled otherwise than the page fetched is that page."""
    try:
        key = urls.normalize(url, strip)
    except CrawldeckError:
        return None
    row = conn.execute(_SQL_SAME_PAGE, (key,)).fetchone()
    return None if row is None else (row[0], row[1], row[2], row[3])


def foreign_crawl(db: Path, host_prefix: str, network: str | None = None) -> str | None:
    """Why the crawl file ``db`` holds more than a crawl of the hosts whose key starts
    with ``host_prefix`` + ``.`` (the demo's own addresses), read-only; ``None`` when it
    does not exist or holds only those (the demo may then erase it), or when every run
    of it allowed only ``network`` (``allow_networks``, as the demo's runs do: the
    demo's own file, with the seeds its console's ``a`` added).

    Returns:
        a reason that fits "``db`` ...": ``cannot be read as SQLite``, ``is not a crawl
        file of the demo`` (no ``hosts`` table), ``holds a crawl of N hosts outside the
        local web``; or ``None``.
    """
    if not db.exists():
        return None
    try:
        conn = connect_reader(db)
    except sqlite3.Error:
        return "cannot be read as SQLite"
    try:
        (other,) = conn.execute(
            "SELECT count(*) FROM hosts WHERE host NOT LIKE ?", (f"{host_prefix}.%",)
        ).fetchone()
        if other and network is not None:
            demo, runs = conn.execute(
                "SELECT count(*) FILTER (WHERE json_extract(config, '$.allow_networks') = ?),"
                " count(*) FROM runs",
                (json.dumps([network]),),
            ).fetchone()
            other = 0 if runs and demo == runs else other
    except sqlite3.Error:
        return "is not a crawl file of the demo"
    finally:
        conn.close()
    return f"holds a crawl of {plural(other, 'host')} outside the local web" if other else None


__all__ = [
    "EXPORT_BATCH_ROWS",
    "FORMATS",
    "TABLES",
    "ArchivedRecord",
    "Format",
    "Table",
    "body_text",
    "export",
    "export_file",
    "foreign_crawl",
    "holds_crawl",
    "last_run_config",
    "page_record",
    "page_revalidations",
    "read_record",
    "reading",
    "same_page",
    "strip_params_of",
]
