"""``core.policy.sitemaps.SitemapStream``, the streaming sitemap parser, as pure logic: fed in
network-sized chunks, it holds a bounded number of bytes and of entries whatever the
file, and cuts hostile shapes with their reason (a gzip file inside the gzip file, deep
nesting, markup expat would hold whole, a text line with no end)."""

from __future__ import annotations

import functools
import gzip
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from crawldeck.core.policy.sitemaps import (
    MAX_MARKUP_BYTES,
    MAX_NESTING,
    STEP_BYTES,
    SitemapEntry,
    SitemapStream,
    parse_sitemap,
)

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
CHUNK = 64 * 1024
MIB = 1024 * 1024


def _bomb(inflated: int) -> bytes:
    """gzip of a ``<urlset>`` and ``inflated`` bytes of spaces (one member)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [z.compress(f'<urlset xmlns="{NS}">'.encode())]
    parts += [z.compress(b" " * MIB) for _ in range(inflated // MIB)]
    return b"".join([*parts, z.flush()])


def _read(body: bytes, chunk: int = CHUNK, batch: int = 500) -> tuple[SitemapStream, int, int]:
    """Feed ``body`` in ``chunk``-byte pieces, taking entries ``batch`` at a time; the
    stream, the entries taken and the most taken at once."""
    stream = SitemapStream(max_bytes=20 * MIB)
    taken = most = 0
    for start in range(0, len(body), chunk):
        stream.feed(body[start : start + chunk])
        while True:
            more = stream.pump(batch)
            got = stream.take()
            taken, most = taken + len(got), max(most, len(got))
            if not more:
                break
        if stream.done:
            break
    stream.close()
    got = stream.take()
    return stream, taken + len(got), max(most, len(got))


def test_a_gzip_bomb_fed_in_chunks_is_cut_at_the_cap_holding_a_chunk_and_a_step() -> None:
    stream, taken, _ = _read(_bomb(40 * MIB))
    assert stream.error == f"too_large: over {20 * MIB} bytes uncompressed, the rest ignored"
    assert stream.kind == "urlset" and taken == 0
    assert stream.bytes == 20 * MIB + 1  # one byte past the cap tells it
    assert stream.held <= CHUNK + 2 * STEP_BYTES


def test_a_gzip_file_inside_the_gzip_file_is_refused_at_once() -> None:
    inner = gzip.compress(f'<urlset xmlns="{NS}"><url><loc>http://a.test/</loc></url>'.encode())
    stream, taken, _ = _read(gzip.compress(inner))
    assert stream.error == "nested_gzip: a gzip file inside the gzip file, refused"
    assert taken == 0 and stream.bytes <= STEP_BYTES


def test_one_gzip_layer_and_several_members_are_read() -> None:
    first = f'<urlset xmlns="{NS}"><url><loc>http://a.test/1</loc></url>'.encode()
    second = b"<url><loc>http://a.test/2</loc></url></urlset>"
    stream, taken, _ = _read(gzip.compress(first) + gzip.compress(second), chunk=7)
    assert (stream.error, stream.kind, taken) == (None, "urlset", 2)


def test_deep_nesting_is_cut_keeping_the_entries_before() -> None:
    body = f'<urlset xmlns="{NS}"><url><loc>http://a.test/</loc></url>'
    body += "<a>" * 100_000 + "</a>" * 100_000 + "</urlset>"
    stream, taken, _ = _read(body.encode())
    assert stream.error == f"too_deep: elements nested over {MAX_NESTING} levels, the rest ignored"
    assert taken == 1


def test_markup_expat_would_hold_whole_is_cut_past_its_cap() -> None:
    body = f'<urlset xmlns="{NS}" x="{"a" * 4 * MIB}"></urlset>'.encode()
    stream, _, _ = _read(body)
    assert stream.error is not None and stream.error.startswith("huge_markup: ")
    assert MAX_MARKUP_BYTES < stream.held <= MAX_MARKUP_BYTES + CHUNK + STEP_BYTES
    assert stream.bytes < 2 * MAX_MARKUP_BYTES


def test_open_elements_whose_start_tags_pass_the_markup_cap_are_cut() -> None:
    """expat keeps each open element's name and namespaces: 40 nested elements (under
    ``MAX_NESTING``) of a 64 KiB start tag each pass the cap together."""
    tag = f'<a x="{"a" * 64 * 1024}">'
    body = f'<urlset xmlns="{NS}"><url><loc>http://a.test/</loc></url>' + tag * 40
    stream, taken, _ = _read(body.encode())
    assert stream.error == (
        f"huge_markup: over {MAX_MARKUP_BYTES} bytes in the start tags of the open"
        " elements, the rest ignored"
    )
    assert taken == 1 and MAX_NESTING > 40
    assert stream.held <= 64 * 1024 + CHUNK + STEP_BYTES  # a tag, a chunk and a step


def test_a_huge_loc_is_text_passed_on_in_pieces_and_skipped() -> None:
    huge = "http://a.test/" + "a" * 4 * MIB
    body = f'<urlset xmlns="{NS}"><url><loc>{huge}</loc></url>'
    body += "<url><loc>http://a.test/ok</loc></url></urlset>"
    stream, taken, _ = _read(body.encode())
    assert (stream.error, stream.skipped, taken) == (None, 1, 1)
    assert stream.held <= CHUNK + 2 * STEP_BYTES


def test_a_text_line_with_no_end_is_dropped_not_held() -> None:
    body = b"http://a.test/1\nhttp://a.test/" + b"x" * 4 * MIB + b"\nhttp://a.test/2\n"
    stream, taken, _ = _read(body)
    assert (stream.error, stream.kind, stream.skipped, taken) == (None, "text", 1, 2)
    assert stream.held <= CHUNK + 2 * STEP_BYTES


def test_entries_wait_a_batch_and_a_step_at_most() -> None:
    """One chunk of a gzip file can inflate to the whole file: ``pump`` stops once a
    batch waits, so the entries held are a batch and what one step read."""
    rows = "".join(f"<url><loc>http://a.test/{i}</loc></url>" for i in range(20_000))
    body = gzip.compress(f'<urlset xmlns="{NS}">{rows}</urlset>'.encode())
    stream, taken, most = _read(body, chunk=len(body), batch=100)
    assert (stream.error, taken) == (None, 20_000)
    assert 100 <= most < 100 + STEP_BYTES // len("<url><loc>http://a.test/1</loc></url>")


@functools.cache
def _cut_file() -> tuple[bytes, list[SitemapEntry]]:
    """A gzip sitemap of 300 URLs and its entries as ``parse_sitemap`` reads it whole:
    the same for every example below (made and parsed once, not at each of 100)."""
    rows = "".join(f"<url><loc>http://a.test/{i}</loc><priority>0.{i % 10}</priority></url>"
                   for i in range(300))  # fmt: skip
    body = gzip.compress(f'\ufeff<urlset xmlns="{NS}">{rows}</urlset>'.encode())
    return body, list(parse_sitemap(body).entries)


@settings(max_examples=100)
@given(st.lists(st.integers(1, 3000), min_size=1, max_size=40))
def test_the_entries_do_not_depend_on_how_the_bytes_are_cut(cuts: list[int]) -> None:
    body, whole = _cut_file()
    stream = SitemapStream()
    entries: list[SitemapEntry] = []
    start = 0
    for size in cuts * (len(body) // sum(cuts) + 1):
        stream.feed(body[start : start + size])
        start += size
        while stream.pump(7):
            entries += stream.take()
        entries += stream.take()
        if start >= len(body):
            break
    stream.close()
    entries += stream.take()
    assert stream.error is None
    assert entries == whole and len(entries) == 300
