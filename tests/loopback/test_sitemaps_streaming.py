"""Sitemaps read streaming (issue #22 item 1) on real loopback servers: the fetcher hands
a body to its reader in bounded decoded steps, and a crawl beside hostile sitemaps
(``hostile_sitemaps``: bombs, a gzip inside a gzip, an endless body, a drip, a huge
``<loc>``, a huge attribute, deep nesting, 50 001 entries) ends each with its reason
while the parse holds a bounded number of bytes and entries and the other host's pages
are all fetched."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import ClassVar

import brotli
import pytest
from crawlkit import html, rows, run_crawl
from hostile_sitemaps import MANY, install, robots_txt
from httpserver import HTTPTestServer, Response

from crawldeck.core.config import build_config
from crawldeck.core.crawl import sitemaps as sitemap_reader
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.crawl.sitemaps import ADMIT_BATCH, READING
from crawldeck.core.net.fetcher import STREAM_KEEP_BYTES, AiohttpFetcher
from crawldeck.core.policy.sitemaps import (
    MAX_BYTES,
    MAX_MARKUP_BYTES,
    MAX_NESTING,
    MAX_URLS,
    STEP_BYTES,
    SitemapEntry,
    SitemapStream,
)
from crawldeck.core.records import FetchResult
from loopback.test_sitemaps_crawl import NS, StopAtExactCheck

#: The largest decoded chunk the fetcher hands on (one network read, 64 KiB).
CHUNK = 64 * 1024
#: The fewest bytes an entry takes (``<url><loc>h</loc></url>``): one step's entries.
SMALLEST_ENTRY = len("<url><loc>h</loc></url>")


class RecordingStream(SitemapStream):
    """A ``SitemapStream`` that keeps, per reading, the largest chunk fed, the bytes fed
    and the most entries handed over at once."""

    made: ClassVar[list[RecordingStream]] = []

    def __init__(self, **caps: int) -> None:
        super().__init__(**caps)
        self.largest_chunk = 0
        self.fed = 0
        self.largest_batch = 0
        RecordingStream.made.append(self)

    def feed(self, data: bytes) -> None:
        self.largest_chunk = max(self.largest_chunk, len(data))
        self.fed += len(data)
        super().feed(data)

    def take(self) -> list[SitemapEntry]:
        entries = super().take()
        self.largest_batch = max(self.largest_batch, len(entries))
        return entries


def _good_host(good: HTTPTestServer) -> set[str]:
    """Ten pages listed by the host's text sitemap; their URLs."""
    good.set("/robots.txt", Response(200, {"Content-Type": "text/plain"}, b"User-agent: *\n"))
    good.set("/", html("<p>no links</p>"))
    pages = {good.url(f"/p{i}") for i in range(10)}
    for i in range(10):
        good.set(f"/p{i}", html(f"<p>page {i}</p>"))
    text = "".join(f"{p}\n" for p in sorted(pages)).encode()
    good.set("/sitemap.xml", Response(200, {"Content-Type": "text/plain"}, text))
    return pages


def test_hostile_sitemaps_are_cut_with_their_reason_by_a_bounded_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sitemap_reader, "SitemapStream", RecordingStream)
    RecordingStream.made = []
    db = tmp_path / "c.db"
    with HTTPTestServer() as bad, HTTPTestServer("127.0.0.2") as good:
        paths = install(bad)
        del paths["drip"]  # its own test: a short time cap
        bad.set("/robots.txt", robots_txt(bad, paths.values()))
        bad.set("/", html("<p>no links</p>"))
        pages = _good_host(good)

        # a time cap no slow machine reaches: each file is cut by its own bound
        budget = {"total_timeout_ms": 300_000}
        run_crawl([bad.url("/"), good.url("/")], db, timeout=900, scope="host", **budget)

        errors = dict(rows(db, "SELECT url, error FROM sitemaps"))
        decoded = f"too_large: over {MAX_BYTES} bytes decoded, the rest ignored"
        assert errors[bad.url(paths["gzip_bomb"])] == decoded
        assert errors[bad.url(paths["deflate_bomb"])] == decoded
        assert errors[bad.url(paths["endless"])] == decoded
        assert errors[bad.url(paths["gzip_in_gzip"])] == (
            "nested_gzip: a gzip file inside the gzip file, refused"
        )
        assert errors[bad.url(paths["endless_line"])] == (
            f"too_large: over {MAX_BYTES} bytes uncompressed, the rest ignored;"
            " skipped: 1 entries without a usable URL"
        )
        assert errors[bad.url(paths["huge_loc"])] == "skipped: 1 entries without a usable URL"
        assert errors[bad.url(paths["huge_attribute"])] == (
            f"huge_markup: over {MAX_MARKUP_BYTES} bytes in one tag, comment or declaration,"
            " the rest ignored"
        )
        assert errors[bad.url(paths["deep_nesting"])] == (
            f"too_deep: elements nested over {MAX_NESTING} levels, the rest ignored"
        )
        assert errors[bad.url(paths["many_urls"])] == (
            f"too_many_urls: more than {MAX_URLS} entries, the rest ignored"
        )
        counts = dict(rows(db, "SELECT url, urls FROM sitemaps"))
        assert counts[bad.url(paths["many_urls"])] == 50  # distinct URLs of 50 000 entries
        fetched = {url for (url,) in rows(db, "SELECT url FROM pages WHERE status = 200")}
        assert pages <= fetched  # the other host's pages, all of them
        assert {bad.url("/good"), bad.url("/u0"), bad.url("/u49")} <= fetched

        made = RecordingStream.made
        assert len(made) == len(paths) + 1  # each hostile file, and the good host's
        many = next(s for s in made if s.count == MAX_URLS)
        assert MANY > MAX_URLS and many.error is not None
        for stream in made:
            assert stream.largest_chunk <= CHUNK  # the fetcher's steps
            assert stream.fed <= MAX_BYTES  # what is read stops at the cap
            # one fed chunk and one step, or expat's unfinished markup past its cap
            assert stream.held <= max(CHUNK + 2 * STEP_BYTES, MAX_MARKUP_BYTES + STEP_BYTES)
            # a batch, and what the step that filled it read
            assert stream.largest_batch < ADMIT_BATCH + STEP_BYTES // SMALLEST_ENTRY


def test_a_dripping_sitemap_is_cut_at_the_time_cap_keeping_what_came(
    tmp_path: Path,
) -> None:
    """One ``<url>`` at once, then a byte a second: cut at ``total_timeout_ms`` with its
    reason, the URL that came before the cut queued and crawled (read as it came)."""
    db = tmp_path / "c.db"
    with HTTPTestServer() as bad, HTTPTestServer("127.0.0.2") as good:
        paths = install(bad)
        bad.set("/robots.txt", robots_txt(bad, [paths["drip"]]))
        bad.set("/", html("<p>no links</p>"))
        pages = _good_host(good)

        run_crawl(
            [bad.url("/"), good.url("/")], db, timeout=120, total_timeout_ms=1500, scope="host"
        )

        ((url, status, kind, count, error),) = rows(
            db, "SELECT url, status, kind, urls, error FROM sitemaps WHERE url LIKE '%drip%'"
        )
        assert url == bad.url(paths["drip"])
        assert error.startswith("timeout: total time budget of 1500 ms exceeded")
        assert (status, kind, count) == (None, "urlset", 1)  # read again on resume
        fetched = {url for (url,) in rows(db, "SELECT url FROM pages WHERE status = 200")}
        assert bad.url("/dripped") in fetched
        assert pages <= fetched


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
def test_a_streamed_fetch_hands_on_a_bomb_in_bounded_steps_and_keeps_a_prefix(
    coding: str,
) -> None:
    """``fetch(on_body=...)`` of a ``Content-Encoding`` bomb: decoded chunks of at most
    64 KiB (a brotli block past them at most), cut at the cap (``truncated``), the first
    ``STREAM_KEEP_BYTES`` as transferred kept; a 404's body is not streamed."""
    cap = 5 * 1024 * 1024
    with HTTPTestServer() as srv:
        paths = install(srv)
        path = paths[f"{coding}_bomb"] if coding != "br" else "/br-bomb.xml"
        if coding == "br":
            bomb = brotli.compress(b" " * 4 * cap, quality=1)
            srv.set(path, Response(200, {"Content-Encoding": "br"}, bomb))
        chunks: list[int] = []
        of_404: list[int] = []

        async def sink(data: bytes) -> bool:
            chunks.append(len(data))
            return True

        async def sink_404(data: bytes) -> bool:
            of_404.append(len(data))
            return True

        async def go() -> tuple[FetchResult, FetchResult]:
            async with AiohttpFetcher(build_config({})) as fetcher:
                bomb = await fetcher.fetch(srv.url(path), max_bytes=cap, on_body=sink)
                missing = await fetcher.fetch(srv.url("/nothing"), on_body=sink_404)
                return bomb, missing

        bomb, missing = asyncio.run(go())
        block = 32 * 1024 if coding == "br" else 0
        assert max(chunks) <= CHUNK + block and sum(chunks) == cap
        assert bomb.truncated and bomb.body == b""
        assert 0 < len(bomb.payload) <= STREAM_KEEP_BYTES
        assert missing.status == 404 and missing.skipped and of_404 == []


def test_a_streamed_fetch_stops_when_its_reader_says_so() -> None:
    with HTTPTestServer() as srv:
        paths = install(srv)
        chunks: list[int] = []

        async def sink(data: bytes) -> bool:
            chunks.append(len(data))
            return len(chunks) < 3

        async def go() -> FetchResult:
            async with AiohttpFetcher(build_config({})) as fetcher:
                return await fetcher.fetch(srv.url(paths["endless"]), on_body=sink)

        result = asyncio.run(go())
        assert len(chunks) == 3 and result.truncated and result.status == 200


def test_a_stop_between_two_batches_leaves_the_file_to_be_read_again(tmp_path: Path) -> None:
    """A urlset's first batch is queued with a ``sitemaps`` row without status; a stop
    in the last batch leaves that row, and the resumed run reads the file again and
    crawls every URL it lists."""
    db = tmp_path / "c.db"
    with HTTPTestServer() as srv:
        srv.set("/robots.txt", Response(200, {"Content-Type": "text/plain"}, b"User-agent: *\n"))
        srv.set("/", html("<p>no links</p>"))
        page = html("<p>only in the sitemap</p>")
        listed = [srv.url(f"/p{i}") for i in range(2 * ADMIT_BATCH)]
        for url in listed:
            srv.set(url.removeprefix(srv.url("")), page)
        listed.append(srv.url("/"))  # the seed, last: an exact check in the last batch
        body = "".join(f"<url><loc>{url}</loc></url>" for url in listed)
        urlset = f'<urlset xmlns="{NS}">{body}</urlset>'.encode()
        srv.set("/sitemap.xml", Response(200, {"Content-Type": "application/xml"}, urlset))
        store = StopAtExactCheck(db)
        engine = Engine(build_config({"delay_ms": 0, "render": "never", "scope": "host"}), store)
        assert engine.add_seeds([srv.url("/")]) == []

        async def crawl() -> None:
            loop = asyncio.get_running_loop()
            store.stop = partial(loop.call_soon_threadsafe, engine.request_stop)
            await engine.run()

        try:
            asyncio.run(asyncio.wait_for(crawl(), timeout=60))
        finally:
            store.close()
        assert store.stopped_a_check
        ((status, kind, first, error),) = rows(db, "SELECT status, kind, urls, error FROM sitemaps")
        assert (status, kind, error) == (None, "urlset", READING)
        assert ADMIT_BATCH <= first < len(listed)
        assert rows(db, "SELECT count(*) FROM sitemap_urls") == [(first,)]

        run_crawl([srv.url("/")], db, timeout=300, scope="host")
        assert srv.count("/sitemap.xml") == 2
        assert rows(db, "SELECT status, urls, error FROM sitemaps") == [(200, len(listed), None)]
        assert rows(db, "SELECT count(*) FROM sitemap_urls") == [(len(listed),)]
        fetched = {url for (url,) in rows(db, "SELECT url FROM pages WHERE status = 200")}
        assert fetched == set(listed)
