"""What one hostile page may cost the crawl (issue #22 item 1): the tests that start a real
server on loopback or a process; the others are in ``tests/unit/test_memory_caps.py``."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

from crawlkit import html, rows, run_crawl
from httpserver import HTTPTestServer, Response
from multidict import CIMultiDict, CIMultiDictProxy
from warcio.archiveiterator import ArchiveIterator

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.net.parse import THREAD_PARSE_MAX_BYTES, ParsePool
from crawldeck.core.policy.links import extract_links
from crawldeck.core.records import FetchResult, WarcRef
from crawldeck.core.render.procmem import (
    proc_parents,
    process_tree,
)
from crawldeck.core.storage.warc import PAYLOAD_FILE_BYTES, payload_files
from crawldeck.core.storage.warc_reader import warc_files
from crawldeck.core.storage.warc_writer import Exchange, WarcWriter

URL = "http://hostile.test/"
TOKEN = "crawldeck"
HEADERS = {"Content-Type": "text/html"}
FILLER = b"<p>" + b"lorem ipsum " * 20 + b"</p>\n"


def page_with_links(n: int, prefix: str = "/l/") -> bytes:
    """An HTML page of ``n`` distinct links ``PREFIX0`` .. ``PREFIX(n-1)``."""
    links = "".join(f'<a href="{prefix}{i}">{i}</a>\n' for i in range(n))
    return f"<html><body>{links}</body></html>".encode()


async def test_the_parse_worker_is_given_only_the_first_parse_max_bytes() -> None:
    cap = 64 * 1024
    body = b'<html><body><a href="/first">1</a>' + FILLER * (4 * cap // len(FILLER))
    body += b'<a href="/last">2</a></body></html>'
    links = page_with_links(3000)
    # What the first ``cap`` bytes of ``links`` hold, parsed here without caps.
    in_cap = len(extract_links(links[:cap], URL, HEADERS, TOKEN).links)
    assert in_cap < 3000
    pool = ParsePool(build_config({"parse_max_bytes": cap, "max_links_per_page": 10}))
    try:
        got = await pool.extract(body, URL, HEADERS, TOKEN)
        many = await pool.extract(links, URL, HEADERS, TOKEN)
        stats = pool.statistics()
    finally:
        await pool.aclose()
    assert cap > THREAD_PARSE_MAX_BYTES  # so the cut page went to a worker process
    assert got.links == ["/first"]  # "/last" lies past the cap: never sent
    assert got.cut == (
        f"parse_cut: links read from the first {cap} of {len(body)} bytes (parse_max_bytes)"
    )
    # The link cap is applied in the worker, before the answer is sent back.
    assert many.links == [f"/l/{i}" for i in range(10)]
    assert many.cut == (
        f"parse_cut: links read from the first {cap} of {len(links)} bytes (parse_max_bytes); "
        f"links_cut: kept 10 of {in_cap} links (max_links_per_page)"
    )
    assert (stats.pages, stats.threaded, stats.mode) == (2, 0, "process")


def test_a_crawl_records_the_cuts_and_follows_only_the_links_kept(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    with HTTPTestServer() as srv:
        srv.set("/robots.txt", Response(200, {"Content-Type": "text/plain"}, b"User-agent: *\n"))
        srv.set("/", html('<a href="/many">many</a><a href="/big">big</a>'))
        srv.set("/many", Response(200, HEADERS, page_with_links(7000)))
        big = b'<html><body><a href="/early">e</a>' + FILLER * (1_000_000 // len(FILLER))
        srv.set("/big", Response(200, HEADERS, big + b'<a href="/late">l</a></body></html>'))
        srv.set("/early", html("early"))
        srv.set("/late", html("late"))
        for i in range(7000):
            srv.set(f"/l/{i}", html(str(i)))
        run_crawl([srv.url("/")], db, max_depth=1, max_pages=3)
        fetched = {r.path for r in srv.requests}
    errors = dict(rows(db, "SELECT url, error FROM pages"))
    assert errors[srv.url("/many")] == "links_cut: kept 6000 of 7000 links (max_links_per_page)"
    size = len(big) + len('<a href="/late">l</a></body></html>')
    assert errors[srv.url("/big")] == (
        f"parse_cut: links read from the first 262144 of {size} bytes (parse_max_bytes)"
    )
    out = rows(db, "SELECT count(*) FROM links WHERE from_url = ?", srv.url("/many"))
    assert out == [(6000,)]
    big_links = rows(db, "SELECT to_url FROM links WHERE from_url = ?", srv.url("/big"))
    assert big_links == [(srv.url("/early"),)]
    assert "/late" not in fetched


def test_large_payloads_reach_the_warc_writer_by_file_and_are_written_byte_for_byte(
    tmp_path: Path,
) -> None:
    """A payload over ``PAYLOAD_FILE_BYTES`` is not pickled into the writer's socket: it
    goes by a payload file, read a chunk at a time, removed once read; the records are
    the same as fastwarc's (warcio checks both digests), duplicates and cuts included."""
    big = random.Random(22).randbytes(3 * PAYLOAD_FILE_BYTES)  # incompressible
    text = b"<p>" + b"words " * (PAYLOAD_FILE_BYTES // 3)
    headers = CIMultiDictProxy(CIMultiDict({"Content-Type": "text/html"}))
    raw = ((b"Content-Type", b"text/html"), (b"X-Odd", b"caf\xe9"))

    def fetched(url: str, body: bytes, *, truncated: bool = False) -> FetchResult:
        return FetchResult(url, 200, headers, body, "text/html", 1.0, truncated, raw_headers=raw)

    writer = WarcWriter(tmp_path, "c", max_bytes=1 << 30, info=[("software", "t")])
    results = [
        fetched("http://a.test/1", big),
        fetched("http://a.test/2", big),  # a duplicate: a revisit
        fetched("http://a.test/3", text, truncated=True),
        fetched("http://a.test/4", b"<p>small</p>"),  # through the socket
    ]

    async def main() -> list[WarcRef]:
        refs = [await (await writer.exchange(Exchange(r, "2024-05-01T12:00:00Z"))) for r in results]
        await writer.aclose()
        return refs

    refs = asyncio.run(main())
    assert writer.payload_files == 3
    assert payload_files(tmp_path, "c") == []  # each removed once read
    (path,) = warc_files(tmp_path, "c")
    check = subprocess.run(
        [str(Path(sys.executable).parent / "warcio"), "check", "-v", str(path)],
        capture_output=True,
    )
    assert check.returncode == 0 and b"digest fail" not in check.stdout, check.stdout[-2000:]
    records = []
    with path.open("rb") as f:
        for record in ArchiveIterator(f):
            records.append((record.rec_type, record.rec_headers, record.content_stream().read()))
    responses = [(kind, h, body) for kind, h, body in records if kind != "request"][1:]
    assert [kind for kind, _, _ in responses] == ["response", "revisit", "response", "response"]
    assert responses[0][2] == big
    assert responses[2][2] == text
    assert responses[2][1].get_header("WARC-Truncated") == "length"
    digest = "sha1:" + base64.b32encode(hashlib.sha1(big).digest()).decode("ascii")
    assert responses[0][1].get_header("WARC-Payload-Digest") == digest == refs[0].payload_digest
    assert refs[1].duplicate_of == "http://a.test/1"
    assert responses[0][1].get_header("WARC-Record-ID") == refs[0].record_id
    assert [name for name, _ in responses[0][1].headers] == [
        "WARC-Type", "WARC-Date", "WARC-Record-ID", "Content-Length", "WARC-Target-URI",
        "Content-Type", "WARC-Payload-Digest", "WARC-Block-Digest",
    ]  # fmt: skip
    assert [name for name, _ in responses[3][1].headers] == [
        "WARC-Type", "WARC-Date", "WARC-Record-ID", "Content-Length", "WARC-Target-URI",
        "Content-Type", "WARC-Payload-Digest", "WARC-Block-Digest",
    ]  # fmt: skip  # fastwarc's order, which the payload file's records keep


def test_a_parse_worker_imports_links_and_nothing_else_of_the_crawl() -> None:
    """A worker runs ``core.net.parse_worker``, whose imports are ``core.policy.links`` and what it
    needs: not the configuration (tldextract, requests), not asyncio (about 13 MB less
    per worker, two per crawl; ``core.net.parse_worker``), not ``hashlib``, whose import
    maps OpenSSL's libcrypto (3.6 MiB per worker; ``core.policy.simhash`` takes BLAKE2 from
    ``_blake2``): the live worker has no libcrypto in its memory map. Nor the CJK
    codecs (``_codecs_cn`` and the like, 1.3 MiB), loaded by the first page in one, nor
    ``multiprocessing`` (1.6 MiB): the pipes carry ``core.net.parse_worker.Pipe``'s frames."""

    async def worker_command_line_and_maps() -> tuple[bytes, bytes]:
        pool = ParsePool(CrawlConfig())
        try:
            await pool.start()
            proc = Path(f"/proc/{pool.pids[0]}")
            cmdline = await asyncio.to_thread((proc / "cmdline").read_bytes)
            return cmdline, await asyncio.to_thread((proc / "maps").read_bytes)
        finally:
            await pool.aclose()

    cmdline, maps = asyncio.run(worker_command_line_and_maps())
    boot = cmdline.split(b"\0")[2].decode()
    assert "from crawldeck.core.net.parse_worker import serve" in boot
    assert b"/libpython" in maps or b"python3" in maps  # the map is the interpreter's
    assert b"libcrypto" not in maps
    probe = (
        "import sys; import crawldeck.core.net.parse_worker; "
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('crawldeck', 'tldextract', 'requests', 'asyncio', 'hashlib', '_hashlib',"
        " 'multiprocessing')"
        " or m.startswith('_codecs_'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [  # the folders' packages are their docstrings only
        "crawldeck",
        "crawldeck.core",
        "crawldeck.core.net",
        "crawldeck.core.net.parse_worker",
        "crawldeck.core.policy",
        "crawldeck.core.policy.heap",
        "crawldeck.core.policy.links",
        "crawldeck.core.policy.simhash",
    ]


#: Packages a ``--no-ui`` crawl of a plain web must not load (issue #22 item 1): the
#: crawl file's schema is plain SQL, not sqlite-utils (2.6 MiB with click, dateutil and
#: pluggy); the console, the browser, the metrics server and the cluster's Redis client
#: are loaded only when used; the registered-domain lookup reads the Public Suffix List
#: itself (``core.policy.urls``), without tldextract and the requests stack it brought (3.8 MiB).
NOT_IN_A_PLAIN_CRAWL = (
    "sqlite_utils", "textual", "playwright", "prometheus_client", "redis",
    "tldextract", "requests", "urllib3", "filelock",
)  # fmt: skip


def test_a_no_ui_crawl_process_loads_no_package_it_does_not_use(tmp_path: Path) -> None:
    """The real console script's ``main`` crawls a loopback page with ``--no-ui`` in a
    fresh interpreter, which then prints the top-level packages it holds."""
    (tmp_path / "crawl.toml").write_text('allow_networks = ["127.0.0.0/8"]\ndelay_ms = 0\n')
    probe = (
        "import sys\n"
        "from crawldeck.cli.launch import main\n"
        "sys.argv = ['crawldeck', 'crawl', sys.argv[1], '--no-ui', '--config', 'crawl.toml',"
        " '--db', 'crawl.db']\n"
        "code = main()\n"
        "print(code, ' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    with HTTPTestServer() as srv:
        srv.set("/", html("<p>a page</p>"))
        out = subprocess.run(
            [sys.executable, "-c", probe, srv.url("/")],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
    assert out.returncode == 0, out.stderr
    code, _, packages = out.stdout.strip().splitlines()[-1].partition(" ")
    assert code == "0"
    loaded = packages.split()
    assert "aiohttp" in loaded and "crawldeck" in loaded  # it did crawl
    assert [p for p in NOT_IN_A_PLAIN_CRAWL if p in loaded] == []
    assert rows(tmp_path / "crawl.db", "SELECT url, status FROM pages") == [(srv.url("/"), 200)]


def test_the_warc_writer_never_maps_openssl(tmp_path: Path) -> None:
    """The writer process digests records with fastwarc, and a payload over
    ``PAYLOAD_FILE_BYTES`` with CPython's ``_sha1``
    (``core.storage.warc_records.file_digests``), never
    ``hashlib``, whose import maps OpenSSL's libcrypto (3.6 MiB). Read in the live
    process's memory map after a small payload and a payload by file."""
    headers = CIMultiDictProxy(CIMultiDict({"Content-Type": "text/html"}))

    def fetched(url: str, body: bytes) -> FetchResult:
        return FetchResult(url, 200, headers, body, "text/html", 1.0, False)

    writer = WarcWriter(tmp_path, "c", max_bytes=1 << 30, info=[("software", "t")])

    def writer_maps() -> bytes:
        """``/proc/PID/maps`` of this process's one WARC writer child."""
        (pid,) = [
            p
            for p in process_tree(os.getpid(), proc_parents())
            if b"crawldeck.core.storage.warc" in Path(f"/proc/{p}/cmdline").read_bytes()
        ]
        return Path(f"/proc/{pid}/maps").read_bytes()

    async def archive(body: bytes) -> bytes:
        result = fetched(f"http://a.test/{len(body)}", body)
        await (await writer.exchange(Exchange(result, "2024-05-01T12:00:00Z")))
        return await asyncio.to_thread(writer_maps)

    async def main() -> tuple[bytes, bytes]:
        try:
            small = await archive(b"<p>small</p>")
            return small, await archive(b"<p>" + b"words " * PAYLOAD_FILE_BYTES)
        finally:
            await writer.aclose()

    small, large = asyncio.run(main())
    assert b"fastwarc" in small
    assert b"libcrypto" not in small
    assert b"fastwarc" in large and b"libcrypto" not in large
