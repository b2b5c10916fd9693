"""The helpers that ``tests/loopback/test_export_atomic.py`` and
``tests/unit/test_export_atomic.py`` share: one subject's tests, split by tier (issue
#24 item 8)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from crawldeck.core.storage.store import Store

ROWS = 200_000


HEADER = (
    "url,final_url,host,depth,status,content_type,bytes,elapsed_ms,fetched_at,rendered,"
    "error,noindex,warc_file,warc_offset,warc_length,payload_digest,title,etag,"
    "last_modified,content_length,canonical_url,duplicate_of,simhash,near_duplicate_of,run_id"
)


@pytest.fixture(scope="module")
def big_crawl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A crawl file of ``ROWS`` pages (35 MB; its csv export takes about 2.5 s)."""
    db = tmp_path_factory.mktemp("big") / "c.db"
    Store(db).close()
    with closing(sqlite3.connect(db)) as conn:
        conn.executemany(
            "INSERT INTO pages (url, final_url, host, depth, status, content_type, bytes,"
            " elapsed_ms, fetched_at, rendered, error, noindex)"
            " VALUES (?, ?, 'a.test', 1, 200, 'text/html', 1234, 12.5,"
            " '2024-05-01T12:00:00.250000Z', 0, NULL, 0)",
            ((f"http://a.test/page/{i:09d}",) * 2 for i in range(ROWS)),
        )
        conn.commit()
    return db
