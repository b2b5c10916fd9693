"""``crawldeck show`` and ``export --with-body`` undo a page's ``Content-Encoding``: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_show_encodings.py``."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest

from crawldeck.core.storage.archive import decode_content


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
