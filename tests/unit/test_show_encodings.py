"""``crawldeck show`` and ``export --with-body`` undo a page's ``Content-Encoding``: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_show_encodings.py``."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest

from crawldeck.core.storage.archive import decode_content
from crawldeck.core.storage.export import ArchivedRecord, body_text


def test_decode_content_undoes_each_coding_within_its_bound() -> None:
    body = b"x" * 5000
    assert decode_content(brotli.compress(body), "br", 5000) == (body, False)
    assert decode_content(gzip.compress(body), " GZIP ", 4999) == (body[:4999], True)
    assert decode_content(zlib.compress(body)[2:-4], "deflate", 10_000) == (body, False)  # raw
    chained = brotli.compress(gzip.compress(body))  # gzip first, then br
    assert decode_content(chained, "gzip, br", 5000) == (body, False)
    assert decode_content(b"as sent", "identity", 3) == (b"as sent", False)
    assert decode_content(b"as sent", "zstd", 3) == (b"as sent", False)
    with pytest.raises(ValueError, match="its gzip body does not decode"):
        decode_content(b"not gzip at all", "gzip", 100)


@pytest.mark.parametrize(
    ("content_type", "body", "text"),
    [
        # undeclared: UTF-8 when it is UTF-8, else windows-1252, as a browser reads it
        # (issue #25 trial 10: a Latin-1 page showed "caf\ufffd na\ufffdve")
        ("text/html", "café naïve".encode(), "café naïve"),
        ("text/html", "café naïve €".encode("cp1252"), "café naïve €"),
        ("text/html", b'<meta charset="iso-8859-7">\xe1', '<meta charset="iso-8859-7">\u03b1'),
        ("text/html; charset=utf-8", "é".encode("latin-1"), "\ufffd"),  # declared: kept
    ],
)
def test_an_undeclared_page_is_read_as_a_browser_reads_it(
    content_type: str, body: bytes, text: str
) -> None:
    record = ArchivedRecord([], "response", "HTTP/1.1 200 OK", content_type, body, body)
    assert body_text(record) == text
