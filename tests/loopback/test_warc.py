"""WARC output (issue #13): the writer on its own, crawls of real loopback servers, and
the files checked by tools we did not write (``warcio check``, ``warcio index``)."""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from crawlkit import html, rows, run_crawl
from httpserver import HTTPTestServer, Response
from multidict import CIMultiDict, CIMultiDictProxy
from warcio.archiveiterator import ArchiveIterator

from crawldeck.core.errors import StoreError
from crawldeck.core.records import FetchResult
from crawldeck.core.storage.warc_reader import complete_length, record_head, warc_files
from crawldeck.core.storage.warc_records import IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED
from crawldeck.core.storage.warc_writer import Exchange, WarcWriter
from crawldeck.localweb import LocalWeb

WARCIO = str(Path(sys.executable).parent / "warcio")
CRAWLDECK = str(Path(sys.executable).parent / "crawldeck")
DATE = "2024-05-01T12:00:00.250000Z"


def payload_digest(data: bytes) -> str:
    """The WARC digest of ``data`` computed here, not by the writer (its fastwarc):
    ``sha1:`` and the base 32 of its SHA-1 (WARC/1.1 §5.9, as warcio checks it)."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def check_with_warcio(directory: Path, stem: str) -> list[Path]:
    """Every WARC file of ``stem`` passes ``warcio check`` (digests verified) and
    ``warcio index``; the files."""
    files = warc_files(directory, stem)
    assert files
    for path in files:
        checked = subprocess.run([WARCIO, "check", "-v", str(path)], capture_output=True)
        assert checked.returncode == 0, checked.stdout.decode()[-2000:]
        assert b"digest fail" not in checked.stdout
        indexed = subprocess.run([WARCIO, "index", str(path)], capture_output=True)
        assert indexed.returncode == 0, indexed.stderr.decode()
    return files


def record_at(path: Path, offset: int) -> Any:
    """The record whose gzip member starts at ``offset`` of ``path``, read whole."""
    with path.open("rb") as f:
        f.seek(offset)
        record = next(iter(ArchiveIterator(f)))
        record.raw = record.raw_stream.read()
        return record


def member(path: Path, offset: int, length: int) -> bytes:
    """The record at ``offset`` as stored: its gzip member, decompressed."""
    with path.open("rb") as f:
        f.seek(offset)
        return gzip.decompress(f.read(length))


def result(
    url: str, body: bytes, status: int = 200, *, truncated: bool = False, **kw: Any
) -> FetchResult:
    headers = CIMultiDictProxy(CIMultiDict({"Content-Type": "text/html"}))
    return FetchResult(url, status, headers, body, "text/html", 1.0, truncated, **kw)


def write_all(
    writer: WarcWriter, results: list[FetchResult], dates: list[str] | None = None
) -> list[Any]:
    async def main() -> list[Any]:
        refs = []
        for r, date in zip(results, dates or [DATE] * len(results), strict=True):
            refs.append(await (await writer.exchange(Exchange(r, date))))
        await writer.aclose()
        return refs

    return asyncio.run(main())


def dated(n: int) -> list[str]:
    """``n`` WARC-Dates one second apart."""
    return [f"2024-05-01T12:00:{i:02d}.250000Z" for i in range(n)]


def revisit_of(path: Path, offset: int) -> tuple[str, str, str]:
    """``(WARC-Profile, WARC-Refers-To-Target-URI, WARC-Refers-To-Date)`` of the
    revisit record at ``offset``."""
    record = record_at(path, offset)
    assert record.rec_type == "revisit"
    get = record.rec_headers.get_header
    return get("WARC-Profile"), get("WARC-Refers-To-Target-URI"), get("WARC-Refers-To-Date")


def test_a_head_past_fastwarcs_default_limit_is_written_whole(tmp_path: Path) -> None:
    """fastwarc parses a response's HTTP head to digest its payload, refusing by
    default a head of over 32 kB (``Maximum header length exceeded``); 40 kB of
    cookies (aiohttp passes fields of up to 8 kB each) are written byte for byte."""
    raw = tuple((b"Set-Cookie", b"c%d=" % i + b"v" * 7990) for i in range(5))
    writer = WarcWriter(tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")])
    (ref,) = write_all(writer, [result("http://a.test/", b"<p>big head</p>", raw_headers=raw)])
    check_with_warcio(tmp_path, "c")
    head = b"".join(name + b": " + value + b"\r\n" for name, value in raw)
    stored = member(tmp_path / ref.file, ref.offset, ref.length)
    assert stored.endswith(b"HTTP/1.1 200\r\n" + head + b"\r\n<p>big head</p>\r\n\r\n")
    assert ref.payload_digest == payload_digest(b"<p>big head</p>")


def test_aclose_ends_the_writer_process(tmp_path: Path) -> None:
    """``aclose`` returns once the process has written the queued records and closed
    the file, and has exited (awaited on the loop, not joined)."""
    writer = WarcWriter(tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")])

    async def main() -> None:
        ref = await (await writer.exchange(Exchange(result("http://a.test/", b"<p>a</p>"), DATE)))
        writer.metadata("http://a.test/", ref.record_id, DATE, via=None, outlinks=["http://b/"])
        await writer.aclose()

    asyncio.run(main())
    process = writer._process
    assert process is not None and process.returncode == 0
    assert writer.statistics()[0] == 4  # warcinfo, response, request, metadata: all written
    check_with_warcio(tmp_path, "c")
    with pytest.raises(StoreError, match="closed"):
        asyncio.run(writer.exchange(Exchange(result("http://a.test/2", b"x"), DATE)))


def test_a_writer_process_that_dies_is_one_line_and_no_hang(tmp_path: Path) -> None:
    """A writer process killed mid-crawl (an OOM kill): the exchange waiting for it and
    every call after it fail with one line, and ``aclose`` does not wait for it."""
    writer = WarcWriter(tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")])

    async def main() -> None:
        await (await writer.exchange(Exchange(result("http://a.test/", b"<p>a</p>"), DATE)))
        process = writer._process
        assert process is not None
        process.kill()
        await process.wait()
        with pytest.raises(StoreError, match=r"WARC writer process ended \(exit -9\)") as raised:
            await (await writer.exchange(Exchange(result("http://a.test/b", b"<p>b</p>"), DATE)))
        assert "\n" not in str(raised.value)
        with pytest.raises(StoreError, match="process ended"):
            writer.metadata("http://a.test/b", "<urn:uuid:x>", DATE, via=None, outlinks=[])
        with pytest.raises(StoreError, match="process ended"):
            await asyncio.wait_for(writer.aclose(), 10)

    asyncio.run(main())
    check_with_warcio(tmp_path, "c")  # what it wrote stays readable


def test_duplicates_revisits_raw_headers_and_truncation(tmp_path: Path) -> None:
    raw = ((b"Content-Type", b"text/html"), (b"X-Odd", b"caf\xe9"))
    writer = WarcWriter(tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")])
    refs = write_all(
        writer,
        [
            result("http://a.test/1", b"<p>same</p>", raw_headers=raw, reason="OK"),
            result("http://a.test/2", b"<p>same</p>", reason="OK"),
            result("http://a.test/3", b"<p>cut", truncated=True),
            result("http://a.test/4", b"<p>cut"),  # a truncated payload is no first
            result("http://a.test/5", b"", status=204),
            result("http://a.test/6", b"", status=204),  # empty payloads never repeat
        ],
    )
    check_with_warcio(tmp_path, "c")
    path = tmp_path / refs[0].file
    assert [r.duplicate_of for r in refs] == [None, "http://a.test/1", None, None, None, None]
    first = record_at(path, refs[0].offset)
    assert first.rec_type == "response"
    assert first.rec_headers.get_header("WARC-Payload-Digest") == payload_digest(b"<p>same</p>")
    assert refs[0].payload_digest == payload_digest(b"<p>same</p>")
    assert member(path, refs[0].offset, refs[0].length).endswith(
        b"\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Odd: caf\xe9\r\n\r\n"
        b"<p>same</p>\r\n\r\n"
    )  # the head as received, byte for byte
    assert first.raw == b"<p>same</p>"
    second = record_at(path, refs[1].offset)
    assert second.rec_type == "revisit"
    assert second.rec_headers.get_header("WARC-Profile") == IDENTICAL_PAYLOAD
    assert second.rec_headers.get_header("WARC-Refers-To-Target-URI") == "http://a.test/1"
    assert second.rec_headers.get_header("WARC-Refers-To-Date") == DATE
    assert second.raw == b""
    cut = record_at(path, refs[2].offset)
    assert cut.rec_headers.get_header("WARC-Truncated") == "length"
    assert record_at(path, refs[3].offset).rec_type == "response"
    assert record_at(path, refs[5].offset).rec_type == "response"
    with path.open("rb") as f:
        kinds = [r.rec_type for r in ArchiveIterator(f)]
    assert kinds[0] == "warcinfo" and kinds.count("request") == 6
    assert all(ref.length > 0 for ref in refs)


def test_a_url_fetched_again_unchanged_is_a_full_response_not_its_own_duplicate(
    tmp_path: Path,
) -> None:
    """The recrawl engineer's worry: a page refetched with a 200 and the same bytes is
    a response record of its own (``duplicate_of`` stays ``None``), live and after a
    resume; other copies then refer to its newest full record."""
    same = b"<p>same</p>"
    urls = ["http://a.test/x", "http://a.test/y", "http://a.test/x", "http://a.test/z"]
    dates = dated(4)
    writer = WarcWriter(tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")])
    refs = write_all(writer, [result(u, same) for u in urls], dates)
    assert [r.duplicate_of for r in refs] == [None, urls[0], None, urls[0]]
    path = tmp_path / refs[0].file
    assert record_at(path, refs[2].offset).rec_type == "response"
    assert revisit_of(path, refs[1].offset) == (IDENTICAL_PAYLOAD, urls[0], dates[0])
    assert revisit_of(path, refs[3].offset) == (IDENTICAL_PAYLOAD, urls[0], dates[2])
    resumed = WarcWriter(
        tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")],
        first_payloads=lambda: [(payload_digest(same), urls[0], dates[2], None)],
    )  # fmt: skip
    again = write_all(resumed, [result(urls[0], same), result(urls[1], same)])
    assert [r.duplicate_of for r in again] == [None, urls[0]]
    assert record_at(tmp_path / again[0].file, again[0].offset).rec_type == "response"
    check_with_warcio(tmp_path, "c")


def test_a_canonical_alias_takes_the_payload_at_its_own_fetch(tmp_path: Path) -> None:
    """``/a`` (first of its payload) names ``/c`` canonical: a copy fetched before
    ``/c`` repeats ``/a`` (the record that exists), ``/c``'s own fetch is a full
    response, the copies after it repeat ``/c`` at its date; a resume rebuilds the same."""
    same = b"<p>one page</p>"
    a, b, c, d = (f"http://a.test/{n}" for n in "abcd")
    dates = dated(4)

    async def main(writer: WarcWriter) -> list[Any]:
        first = await (await writer.exchange(Exchange(result(a, same), dates[0])))
        writer.alias(payload_digest(same), a, c)
        rest = [await (await writer.exchange(Exchange(result(u, same), t)))
                for u, t in zip((b, c, d), dates[1:], strict=True)]  # fmt: skip
        await writer.aclose()
        return [first, *rest]

    writer = WarcWriter(tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")])
    refs = asyncio.run(main(writer))
    assert [r.duplicate_of for r in refs] == [None, a, None, c]
    path = tmp_path / refs[0].file
    assert revisit_of(path, refs[3].offset) == (IDENTICAL_PAYLOAD, c, dates[2])
    digest = payload_digest(same)
    resumed = WarcWriter(
        tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")],
        first_payloads=lambda: [(digest, a, dates[0], c)],
    )  # fmt: skip
    copies = [result(u, same) for u in (b, c, d)]
    assert [r.duplicate_of for r in write_all(resumed, copies)] == [a, None, c]


class Located:
    """A ``Locator`` over a dict: URL -> (file, offset)."""

    def __init__(self, where: dict[str, tuple[str, int]]) -> None:
        self.where = where
        self.closed = 0

    def __call__(self, url: str) -> tuple[str, int] | None:
        return self.where.get(url)

    def close(self) -> None:
        self.closed += 1


def test_a_304_is_a_server_not_modified_revisit_of_the_page_record(tmp_path: Path) -> None:
    body = b"<p>kept</p>"
    x, y = "http://a.test/x", "http://a.test/y"
    writer = WarcWriter(tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")])
    first = write_all(writer, [result(x, body), result(y, body)], dated(2))
    path = tmp_path / first[0].file
    original = record_at(path, first[0].offset).rec_headers
    not_modified = [
        result(u, b"", status=304, reason="Not Modified") for u in (x, y, "http://a.test/unknown")
    ]
    located = Located({x: (first[0].file, first[0].offset), y: (first[1].file, first[1].offset)})
    again = WarcWriter(tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")],
                       locate=located)  # fmt: skip
    refs = write_all(again, not_modified, ["2024-06-01T00:00:00.000000Z"] * 3)
    assert located.closed == 1
    files = check_with_warcio(tmp_path, "c")
    assert [p.name for p in files] == ["c-00001.warc.gz", "c-00002.warc.gz"]
    second = tmp_path / refs[0].file
    for ref in refs[:2]:  # x's own record; y's (a revisit of x) leads to x's too
        record = record_at(second, ref.offset)
        get = record.rec_headers.get_header
        assert (get("WARC-Type"), get("WARC-Profile")) == ("revisit", SERVER_NOT_MODIFIED)
        assert get("WARC-Refers-To-Target-URI") == x
        assert get("WARC-Refers-To-Date") == original.get_header("WARC-Date")
        assert get("WARC-Payload-Digest") == payload_digest(body) == ref.payload_digest
        assert record.http_headers.get_statuscode() == "304"
        assert record.raw == b"" and ref.duplicate_of is None
    assert record_at(second, refs[0].offset).rec_headers.get_header(
        "WARC-Refers-To"
    ) == original.get_header("WARC-Record-ID")
    unknown = record_at(second, refs[2].offset).rec_headers
    assert unknown.get_header("WARC-Profile") == SERVER_NOT_MODIFIED
    assert unknown.get_header("WARC-Refers-To-Target-URI") is None
    assert refs[2].payload_digest is None
    assert record_head(path, first[0].offset)["WARC-Target-URI"] == x
    with pytest.raises(ValueError, match="no gzip member at"):
        record_head(path, first[0].offset + 1)


def test_metadata_and_conversion_records_name_their_response(tmp_path: Path) -> None:
    writer = WarcWriter(tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")])

    async def main() -> Any:
        ref = await (await writer.exchange(Exchange(result("http://a.test/", b"<p>a</p>"), DATE)))
        links = ["http://a.test/b", "http://a.test/caf%C3%A9"]
        writer.metadata("http://a.test/", ref.record_id, DATE, via="http://r.test/",
                        outlinks=links)  # fmt: skip
        writer.metadata("http://a.test/", ref.record_id, DATE, via=None, outlinks=[])
        writer.conversion("http://a.test/", ref.record_id, "<p>rendered \u00e9</p>", DATE)
        await writer.aclose()
        return ref

    ref = asyncio.run(main())
    check_with_warcio(tmp_path, "c")
    with (tmp_path / ref.file).open("rb") as f:
        records = [
            (r.rec_type, r.rec_headers, r.content_stream().read()) for r in ArchiveIterator(f)
        ]
    kinds = [kind for kind, _, _ in records]
    assert kinds == ["warcinfo", "response", "request", "metadata", "metadata", "conversion"]
    _, first, block = records[3]
    assert first.get_header("WARC-Concurrent-To") == ref.record_id
    assert first.get_header("Content-Type") == "application/warc-fields"
    assert block == (
        b"via: http://r.test/\r\noutlink: http://a.test/b\r\noutlink: http://a.test/caf%C3%A9\r\n"
    )
    assert records[4][2] == b""
    _, converted, dom = records[5]
    assert converted.get_header("WARC-Refers-To") == ref.record_id
    assert dom == "<p>rendered \u00e9</p>".encode()


def test_a_failed_queued_record_is_raised_by_the_next_call(tmp_path: Path) -> None:
    """Nobody awaits a ``metadata`` record: its write error (here: no directory to
    write in) is raised by the next exchange, one line, and by ``aclose``."""
    writer = WarcWriter(tmp_path / "gone", "c", max_bytes=1 << 20, info=[("software", "t")])

    async def main() -> None:
        writer.metadata(
            "http://a.test/", "<urn:uuid:x>", DATE, via=None, outlinks=["http://a.test/b"]
        )
        with pytest.raises(StoreError, match="cannot write the WARC file") as raised:
            await (await writer.exchange(Exchange(result("http://a.test/b", b"<p>b</p>"), DATE)))
        assert "\n" not in str(raised.value)
        with pytest.raises(StoreError, match="cannot write the WARC file"):
            await writer.aclose()

    asyncio.run(main())


def test_rotation_and_resume_after_a_partial_member(tmp_path: Path) -> None:
    body = os.urandom(300_000)  # incompressible: each exchange about 300 kB
    writer = WarcWriter(tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")])
    refs = write_all(writer, [result(f"http://a.test/{i}", body + bytes([i])) for i in range(8)])
    files = check_with_warcio(tmp_path, "c")
    assert len(files) == 2  # a file past 1 MiB (4 exchanges) takes no more
    assert {r.file for r in refs} == {p.name for p in files}
    last = files[-1]
    whole = last.stat().st_size
    with last.open("ab") as f:  # a power loss in the middle of an append
        f.write(gzip.compress(b"WARC/1.1\r\n" + body)[:5000])
    assert complete_length(last) == whole
    again = WarcWriter(tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")])
    ref = write_all(again, [result("http://a.test/new", b"<p>new</p>")])[0]
    assert last.stat().st_size == whole  # cut back to its last complete member
    assert ref.file == "c-00003.warc.gz"
    check_with_warcio(tmp_path, "c")


def test_the_first_file_is_numbered_past_every_one_the_crawl_file_names(tmp_path: Path) -> None:
    """Issue #25 trial 19: the files moved away to be archived, a resumed run began a
    second ``c-00001.warc.gz``; the number comes from the rows too, not the disk only."""
    (tmp_path / "c-00002.warc.gz").write_bytes(b"")  # on disk, below what the rows name
    names = ["c-00005.warc.gz", "c-00003.warc.gz", "sub/c-00009.warc.gz", "x-00012.warc.gz"]
    writer = WarcWriter(
        tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")], recorded_files=lambda: names
    )
    assert write_all(writer, [result("http://a.test/", b"<p>a</p>")])[0].file == "c-00006.warc.gz"
    (tmp_path / "sub").mkdir()  # warc_dir below the crawl file's: the rows say "sub/..."
    below = WarcWriter(
        tmp_path / "sub",
        "c",
        max_bytes=1 << 20,
        info=[("software", "t")],
        recorded_prefix="sub/",
        recorded_files=lambda: names,
    )
    assert write_all(below, [result("http://a.test/", b"<p>b</p>")])[0].file == "c-00010.warc.gz"


def test_a_request_record_says_http_1_1_whatever_the_server_answered_in(tmp_path: Path) -> None:
    """The fetcher sends HTTP/1.1; an HTTP/1.0 server's answer made the request record
    say 1.0 (issue #25 trial 19)."""
    writer = WarcWriter(tmp_path, "c", max_bytes=1 << 20, info=[("software", "t")])
    old = result("http://a.test/p?q=1", b"<p>a</p>", http_version="1.0")
    ref = write_all(writer, [old])[0]
    path = tmp_path / ref.file
    response = record_at(path, ref.offset)
    assert response.http_headers.protocol == "HTTP/1.0"  # the answer as it came
    with path.open("rb") as f:
        records = [(r.rec_type, r.http_headers) for r in ArchiveIterator(f)]
    (request,) = [head for kind, head in records if kind == "request"]
    assert (request.protocol, request.statusline) == ("GET", "/p?q=1 HTTP/1.1")


def test_a_crawl_resumed_after_its_files_were_archived_writes_the_next_number(
    tmp_path: Path,
) -> None:
    db = tmp_path / "c.db"
    archive = tmp_path / "archive"
    archive.mkdir()
    with HTTPTestServer() as srv:
        srv.set("/", html('<a href="/a">a</a>'))
        srv.set("/a", html("<p>a</p>"))
        srv.set("/b", html("<p>b</p>"))
        run_crawl([srv.url("/")], db)
        (tmp_path / "c-00001.warc.gz").rename(archive / "c-00001.warc.gz")
        run_crawl([srv.url("/b")], db)  # the same crawl file, one more seed
        url_b = srv.url("/b")
    assert [p.name for p in warc_files(tmp_path, "c")] == ["c-00002.warc.gz"]
    assert rows(db, "SELECT warc_file FROM pages WHERE url = ?", url_b) == [("c-00002.warc.gz",)]
    assert {f for (f,) in rows(db, "SELECT warc_file FROM pages")} == {
        "c-00001.warc.gz",
        "c-00002.warc.gz",
    }
    (archive / "c-00001.warc.gz").rename(tmp_path / "c-00001.warc.gz")  # back: no clash
    for file, offset in rows(db, "SELECT warc_file, warc_offset FROM pages"):
        assert record_at(tmp_path / file, offset).rec_type in ("response", "revisit")


# ---------------------------------------------------------------- crawls


def test_a_crawl_archives_every_fetch_hostile_answers_included(tmp_path: Path) -> None:
    page = b"<html><head><title>Home</title></head><body>" + b"x" * 50 + b"</body></html>"
    zipped = gzip.compress(b"<html><body><p>zipped</p></body></html>")
    big = b"<html><body>" + b"y" * 5000 + b"</body></html>"
    with HTTPTestServer() as srv:
        srv.set("/robots.txt", Response(200, {"Content-Type": "text/plain"}, b"User-agent: *\n"))
        srv.set(
            "/",
            html(
                '<a href="/copy">c</a><a href="/gz">g</a><a href="/big">b</a>'
                '<a href="/odd">o</a><a href="/named">n</a>',
                ETag='"v1"',
            ),
        )
        srv.set("/copy", Response(200, {"Content-Type": "text/html"}, page))
        srv.set("/named", Response(200, {"Content-Type": "text/html"}, page))
        srv.set("/gz", Response(200, {"Content-Type": "text/html", "Content-Encoding": "gzip"},
                                zipped))  # fmt: skip
        srv.set("/big", Response(200, {"Content-Type": "text/html"}, big))
        srv.set_raw(
            "/odd",
            lambda req, out: out.write(
                b"HTTP/1.1 200 Fine\r\nContent-Type: text/html\r\nX-Bytes: \xff\xfeok\r\n"
                b"Content-Length: 11\r\n\r\n<p>odd</p>\n"
            ),
        )
        db = tmp_path / "c.db"
        run_crawl([srv.url("/")], db, max_body_bytes=1024, flush_interval_ms=50)
    check_with_warcio(tmp_path, "c")
    pages = {
        url.rsplit("/", 1)[1]: rest
        for url, *rest in rows(
            db,
            "SELECT url, warc_file, warc_offset, payload_digest, duplicate_of, etag,"
            " content_length, title, error FROM pages",
        )
    }
    assert set(pages) == {"", "copy", "gz", "big", "odd", "named"}
    assert pages[""][4] == '"v1"'
    assert pages["copy"][2] == payload_digest(page) == pages["named"][2]
    # one of the two copies is the first; the other a revisit of it
    dupes = {pages["copy"][3], pages["named"][3]}
    assert len([d for d in dupes if d]) == 1 and None in dupes
    assert pages["copy"][6] == "Home"
    for name, (file, offset, digest, dup, *_rest) in pages.items():
        record = record_at(tmp_path / file, offset)
        assert record.rec_type == ("revisit" if dup else "response"), name
        assert record.rec_headers.get_header("WARC-Payload-Digest") == digest
    gz = record_at(tmp_path / pages["gz"][0], pages["gz"][1])
    assert gz.http_headers.get_header("Content-Encoding") == "gzip"
    assert gz.raw == zipped  # the payload as transferred, still coded
    cut = record_at(tmp_path / pages["big"][0], pages["big"][1])
    assert cut.rec_headers.get_header("WARC-Truncated") == "length"
    assert cut.raw == big[:1024]
    assert pages["big"][5] == len(big)
    (length,) = rows(db, "SELECT warc_length FROM pages WHERE url = ?", srv.url("/odd"))[0]
    odd = member(tmp_path / pages["odd"][0], pages["odd"][1], length)
    assert b"\r\n\r\nHTTP/1.1 200 Fine\r\nContent-Type: text/html\r\nX-Bytes: \xff\xfeok\r\n" in odd
    with (tmp_path / pages[""][0]).open("rb") as f:
        records = list(ArchiveIterator(f))
    types = [r.rec_type for r in records]
    uris = [r.rec_headers.get_header("WARC-Target-URI") for r in records]
    assert types[0] == "warcinfo"
    assert srv.url("/robots.txt") in uris  # robots.txt is archived too
    assert types.count("request") == types.count("response") + types.count("revisit")
    assert types.count("metadata") == 6


def test_a_body_not_read_has_no_digest_and_an_empty_one_is_whole(tmp_path: Path) -> None:
    """An image's body is not read: its record says ``WARC-Truncated: unspecified`` and
    its page row has no payload digest (not the digest of no bytes). A 301 with
    ``Content-Length: 0`` and no Content-Type has nothing left out: no truncation, the
    empty body's digest (issue #25 trial 9)."""
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 500
    with HTTPTestServer() as srv:
        srv.set("/robots.txt", Response(404))
        srv.set("/", html('<a href="/i.png">i</a><a href="/dir">d</a>'))
        srv.set("/i.png", Response(200, {"Content-Type": "image/png"}, png))
        srv.set("/dir", Response(301, {"Location": "/dir/"}, b""))
        srv.set("/dir/", html("the directory"))
        db = tmp_path / "c.db"
        run_crawl([srv.url("/")], db)
    check_with_warcio(tmp_path, "c")
    got = {
        url.rsplit("/", 1)[1] or url.rsplit("/", 2)[1] + "/": (status, file, offset, digest)
        for url, status, file, offset, digest in rows(
            db, "SELECT url, status, warc_file, warc_offset, payload_digest FROM pages"
        )
    }
    status, file, offset, digest = got["i.png"]
    assert (status, digest) == (200, None)
    image = record_at(tmp_path / file, offset)
    assert image.rec_headers.get_header("WARC-Truncated") == "unspecified"
    status, file, offset, digest = got["dir"]
    assert (status, digest) == (301, payload_digest(b""))
    moved = record_at(tmp_path / file, offset)
    assert moved.rec_headers.get_header("WARC-Truncated") is None
    assert moved.rec_headers.get_header("WARC-Payload-Digest") == digest
    assert got["dir/"][0] == 200


def test_canonical_counts_as_one_page_with_its_page(tmp_path: Path) -> None:
    """``/a`` names ``/b`` canonical and has ``/b``'s payload: ``/b`` is admitted like a
    link and fetched as a full response, ``/c`` (the same payload again) is a revisit
    of ``/b``."""
    same = b'<html><head><link rel="canonical" href="/b"></head><body>t</body></html>'
    with HTTPTestServer() as srv:
        srv.set("/", html('<a href="/a">a</a>'))
        srv.set("/a", Response(200, {"Content-Type": "text/html"}, same))
        srv.set("/b", Response(200, {"Content-Type": "text/html"},
                               same + b'<a href="/c">c</a>'[:0]))  # fmt: skip
        srv.set("/c", Response(200, {"Content-Type": "text/html"}, same))
        db = tmp_path / "c.db"
        srv.set("/b", Response(200, {"Content-Type": "text/html"}, same))
        run_crawl([srv.url("/"), srv.url("/a")], db, max_depth=3, concurrency=1)
        found = dict(rows(db, "SELECT url, canonical_url FROM pages"))
        assert found[srv.url("/a")] == srv.url("/b")
        dups = dict(rows(db, "SELECT url, duplicate_of FROM pages"))
    assert dups[srv.url("/b")] is None  # not a duplicate of the page that named it


def test_localweb_records_match_what_the_servers_send(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    with LocalWeb(delay_scale=0.05) as web:
        run_crawl(web.seeds(), db, concurrency=8, max_pages=80, allow_networks=["127.77.0.0/24"])
        check_with_warcio(tmp_path, "crawl")
        got = rows(
            db,
            "SELECT url, warc_file, warc_offset, warc_length, payload_digest FROM pages"
            " WHERE status = 200 AND content_type = 'text/html' AND duplicate_of IS NULL",
        )
        assert len(got) > 40
        compared = 0
        for url, file, offset, length, digest in got[:40]:
            record = record_at(tmp_path / file, offset)
            assert record.rec_headers.get_header("WARC-Target-URI") == url
            assert record.rec_headers.get_header("WARC-Payload-Digest") == digest
            with open(tmp_path / file, "rb") as f:
                f.seek(offset)
                member = f.read(length)
            assert gzip.decompress(member).startswith(b"WARC/1.1\r\n")  # one whole member
            request = urllib.request.Request(url, headers={"Accept-Encoding": "identity"})
            with urllib.request.urlopen(request, timeout=10) as answer:
                sent = answer.read()
            coded = record.http_headers.get_header("Content-Encoding")
            payload = gzip.decompress(record.raw) if coded == "gzip" else record.raw
            compared += payload == sent
        assert compared >= 25  # some local pages are built anew per request


def committed_pages(db: Path) -> int:
    """Pages with a WARC record committed in ``db`` (0 before the file exists)."""
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            return int(
                conn.execute("SELECT count(*) FROM pages WHERE warc_file IS NOT NULL").fetchone()[0]
            )
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_kill_9_leaves_readable_files_and_the_resume_writes_a_new_one(tmp_path: Path) -> None:
    with LocalWeb(delay_scale=0.05) as web:
        (tmp_path / "seeds.txt").write_text("\n".join(web.seeds()) + "\n")
        # commits every 20 ms, so the kill comes a few pages after the 15th and never
        # after the cap (with the default 500 ms, one commit held 58 of 60 pages and the
        # resume had nothing left to write)
        args = [CRAWLDECK, "crawl", "seeds.txt", "--no-ui", "--db", "c.db", "--delay-ms", "0",
                "--max-pages", "80", "-s", "flush_interval_ms=20"]  # fmt: skip
        proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while committed_pages(tmp_path / "c.db") < 15:  # rows pointing into file 1
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
        check_with_warcio(tmp_path, "c")
        again = subprocess.run(args, cwd=tmp_path, capture_output=True, timeout=120)
        assert again.returncode == 0, again.stderr
    files = check_with_warcio(tmp_path, "c")
    assert [p.name for p in files] == ["c-00001.warc.gz", "c-00002.warc.gz"]
    with closing(sqlite3.connect(tmp_path / "c.db")) as conn:
        located = conn.execute(
            "SELECT warc_file, warc_offset FROM pages WHERE warc_file IS NOT NULL"
        ).fetchall()
    assert {f for f, _ in located} == {"c-00001.warc.gz", "c-00002.warc.gz"}
    for file, offset in located:
        assert record_at(tmp_path / file, offset).rec_type in ("response", "revisit")
