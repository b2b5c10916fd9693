"""Schema version 3 of the crawl file (issue #14 item 11): keys, names, views, the
upgrade from versions 1 and 2, and the file as Datasette shows it.

The old files are ``tests/data/crawl_2f3a1ea.db`` (version 1),
``tests/data/crawl_4cc1605.db`` (version 2) and ``tests/data/crawl_4990f41.db``
(version 3 before ``links.anchor``, issue #25), crawls of the site of
``tests/data/make_old_crawl.py`` (its docstring says how they were made) stopped at 12
pages; the tests crawl that site too (``OLD.serve``, on 127.83.19.7:8080).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import sqlite_utils
from crawlkit import rows, run_crawl
from redisfix import free_port
from schemakit import DATA, V1, counts, shape

from crawldeck.core.storage.datasette_meta import METADATA_SUFFIX, metadata
from crawldeck.core.storage.link_report import broken_count, link_report
from crawldeck.core.storage.store import Store

V3_NO_ANCHOR = DATA / "crawl_4990f41.db"


def _load_old_crawl() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_old_crawl", DATA / "make_old_crawl.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The site the old files crawled, and its crawl's figures (``make_old_crawl``'s docstring).
OLD = _load_old_crawl()
HOME = OLD.ORIGIN + "/"
#: / and /p1../p31 (/p30 links to /p31, a 404 like /p7).
SITE_PAGES = 32
#: /private/ and /private/N of every 200 page /pN (not /p7): refused by robots.txt.
ROBOTS_BLOCKED = 30
#: / lists 30 pages, /private/ and another site; each 200 /pN its next, / and /private/N.
SITE_LINKS = 32 + 29 * 3


@pytest.fixture(scope="module")
def old_site() -> Iterator[ThreadingHTTPServer]:
    server = OLD.serve()
    assert isinstance(server, ThreadingHTTPServer)  # a real server (conftest marks: slow)
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def crawl(old_site: ThreadingHTTPServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A whole crawl of the site by this crawldeck (one run)."""
    db = tmp_path_factory.mktemp("schema") / "crawl.db"
    run_crawl([HOME], db, warc=False, allow_private=True)
    return db


def test_pages_blocked_and_links_have_keys_and_foreign_keys(crawl: Path) -> None:
    db = sqlite_utils.Database(crawl)
    assert db.table("pages").pks == ["url"]
    assert db.table("blocked").pks == ["url"]
    assert db.table("links").pks == ["from_url", "to_url"]
    fks = {(t, fk.column, fk.other_table, fk.other_column) for t in db.table_names()
           for fk in db.table(t).foreign_keys}  # fmt: skip
    assert {
        ("pages", "host", "hosts", "host"),
        ("pages", "duplicate_of", "pages", "url"),
        ("pages", "near_duplicate_of", "pages", "url"),
        ("pages", "run_id", "runs", "id"),
        ("links", "from_url", "pages", "url"),
        ("links", "to_url", "pages", "url"),
        ("blocked", "run_id", "runs", "id"),
        ("page_versions", "run_id", "runs", "id"),
    } == fks
    assert {(i.name, tuple(i.columns)) for i in db.table("links").indexes} >= {
        ("links_to", ("to_url",)),
        ("sqlite_autoindex_links_1", ("from_url", "to_url")),
    }
    assert ("pages_host", ("host",)) in {
        (i.name, tuple(i.columns)) for i in db.table("pages").indexes
    }
    # every page's host has its hosts row; the only rows whose parent is missing are
    # links to URLs never fetched (refused ones: the private pages, the other site)
    missing = db.execute("PRAGMA foreign_key_check").fetchall()
    assert {(table, parent) for table, _, parent, _ in missing} == {("links", "pages")}
    unfetched = rows(
        crawl, "SELECT count(*) FROM links WHERE to_url NOT IN (SELECT url FROM pages)"
    )
    assert len(missing) == unfetched[0][0] == ROBOTS_BLOCKED + 1
    assert rows(crawl, "SELECT count(*), count(DISTINCT run_id), min(run_id) FROM pages") == [
        (SITE_PAGES, 1, 1)
    ]
    assert rows(crawl, "SELECT count(*), min(run_id) FROM blocked") == [(ROBOTS_BLOCKED + 1, 1)]


def test_the_plans_of_the_views_use_the_indexes(crawl: Path) -> None:
    def plan(sql: str) -> str:
        return " | ".join(str(r[-1]) for r in rows(crawl, "EXPLAIN QUERY PLAN " + sql, HOME))

    page = plan("SELECT * FROM page_summary WHERE url = ?")
    assert "links_to" in page and "sqlite_autoindex_links_1" in page
    assert "SCAN l" not in page
    host = plan("SELECT * FROM host_summary WHERE host = ?")
    assert "pages_host" in host and "blocked_host" in host
    # broken_links: a scan of pages and of blocked, each broken target's links (and the
    # redirects to it) by the links_to index, never a scan of links (the largest table)
    broken = plan("SELECT count(*) FROM broken_links WHERE ? IS NOT NULL")
    assert "SEARCH l USING INDEX links_to (to_url=?)" in broken
    assert "SEARCH h USING INDEX links_to (to_url=?)" in broken
    assert "SCAN p" in broken and "SCAN b" in broken
    assert "SCAN l" not in broken and "SCAN h" not in broken, broken


def test_page_summary_and_host_summary_count_what_the_site_has(crawl: Path) -> None:
    summary = {
        url[len(OLD.ORIGIN) :]: (status, title, inlinks, outlinks)
        for url, status, title, inlinks, outlinks in rows(
            crawl, "SELECT url, status, title, inlinks, outlinks FROM page_summary"
        )
    }
    assert len(summary) == SITE_PAGES
    assert summary["/"] == (200, "Home", 29, 32)  # every 200 /pN links home
    assert summary["/p30"] == (200, "Page 30", 2, 3)  # from / and /p29
    assert summary["/p7"] == (404, None, 2, 0)  # an error page is not parsed
    assert summary["/p31"] == (404, None, 1, 0)  # only /p30 links it
    ((host, pages, ok, redirects, missing, failing, errors, size, blocked, robots),) = rows(
        crawl,
        "SELECT host, pages, status_2xx, status_3xx, status_4xx, status_5xx, errors, bytes,"
        " blocked, robots_status FROM host_summary",
    )
    assert (host, pages, ok, redirects, missing, failing, errors) == (
        f"{OLD.HOST}:{OLD.PORT}",
        SITE_PAGES,
        30,
        0,
        2,
        0,
        0,
    )
    assert size == sum(len(OLD.page(url[len(OLD.ORIGIN) :])[2]) for (url,) in rows(
        crawl, "SELECT url FROM pages"
    ))  # fmt: skip
    assert (blocked, robots) == (ROBOTS_BLOCKED, "ok")
    assert rows(crawl, "SELECT count(*) FROM links") == [(SITE_LINKS,)]


def test_every_time_column_says_its_form_in_its_name(crawl: Path) -> None:
    for table, (columns, _, _) in shape(crawl).items():
        for name, kind, *_ in columns:
            if name.endswith("_at"):
                assert kind == "TEXT", (table, name)
                found = rows(crawl, f"SELECT {name} FROM {table} WHERE {name} IS NOT NULL")
                for (value,) in found:
                    assert len(value) == 27 and value.endswith("Z"), (table, name, value)
            if name.endswith("_epoch_s"):
                assert kind in ("FLOAT", "REAL"), (table, name)
    timeish = ("until", "expires", "started", "available", "lastmod", "at")
    for table, (columns, _, _) in shape(crawl).items():
        for name, *_ in columns:
            if any(word in name.split("_") for word in timeish):
                assert name.endswith(("_at", "_epoch_s")), (table, name)


def test_an_old_file_resumes_and_keeps_its_rows(
    old_site: ThreadingHTTPServer, tmp_path: Path
) -> None:
    db = tmp_path / "crawl.db"
    shutil.copy(V1, db)
    old_pages = set(rows(db, "SELECT url, fetched_at FROM pages"))
    run_crawl([HOME], db, warc=False, allow_private=True)
    after = counts(db)
    assert after["pages"] == SITE_PAGES  # the 12 old ones and the 20 the resume fetched
    assert after["frontier"] == {"done": SITE_PAGES, "blocked": ROBOTS_BLOCKED}
    assert old_pages <= set(rows(db, "SELECT url, fetched_at FROM pages"))
    assert rows(db, "SELECT run_id, count(*) FROM pages GROUP BY 1") == [(1, 12), (2, 20)]
    assert rows(db, "SELECT count(*) FROM links") == [(SITE_LINKS,)]
    assert rows(db, "SELECT id, status FROM runs") == [(1, "max_pages"), (2, "finished")]


def test_a_file_before_anchor_texts_reads_then_gets_the_column_and_resumes(
    old_site: ThreadingHTTPServer, tmp_path: Path
) -> None:
    """A version-3 file made before ``links.anchor``: read-only readers (``crawldeck
    links``) read it, anchors NULL; a ``Store`` open adds the column and makes the
    ``broken_links`` view anew with it, keeping every row; a resumed crawl's new links
    have their anchor text, the old ones none."""
    db = tmp_path / "crawl.db"
    shutil.copy(V3_NO_ANCHOR, db)
    assert "anchor" not in {c for (c,) in rows(db, "SELECT name FROM pragma_table_info('links')")}
    old_links = rows(db, "SELECT from_url, to_url FROM links ORDER BY rowid")
    broken = list(link_report(db, broken=True))
    assert [(b.from_url, b.to_url, b.status, b.anchor) for b in broken] == [
        (HOME, f"{HOME}p7", 404, None),
        (f"{HOME}p6", f"{HOME}p7", 404, None),
    ]
    assert broken_count(db) == 2
    assert {b.anchor for b in link_report(db, broken=False)} == {None}
    with Store(db) as store:
        assert store.broken_links(5) == (2, broken)
    assert rows(db, "SELECT from_url, to_url FROM links ORDER BY rowid") == old_links
    assert rows(db, "SELECT count(*) FROM links WHERE anchor IS NOT NULL") == [(0,)]
    assert rows(db, "SELECT from_url, anchor FROM broken_links ORDER BY from_url") == [
        (HOME, None),
        (f"{HOME}p6", None),
    ]
    run_crawl([HOME], db, warc=False, allow_private=True)
    assert rows(db, "SELECT count(*) FROM pages") == [(SITE_PAGES,)]
    assert rows(db, "SELECT count(*) FROM links") == [(SITE_LINKS,)]
    assert rows(db, "SELECT anchor FROM links WHERE from_url = ? AND to_url = ?",
                f"{HOME}p20", f"{HOME}p21") == [("next",)]  # fmt: skip
    assert rows(db, "SELECT from_url, anchor FROM broken_links WHERE to_url = ?",
                f"{HOME}p31") == [(f"{HOME}p30", "next")]  # fmt: skip


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def test_datasette_serves_the_crawl_with_its_foreign_keys(crawl: Path, tmp_path: Path) -> None:
    meta = crawl.with_name(crawl.name + METADATA_SUFFIX)
    assert json.loads(meta.read_text()) == metadata("crawl")  # written at the run's end
    port = free_port()
    datasette = Path(sys.executable).with_name("datasette")
    proc = subprocess.Popen(
        [str(datasette), "serve", str(crawl), "-h", "127.0.0.1", "-p", str(port), "-m", str(meta)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                served = _get(f"{base}/-/metadata.json")
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
                assert time.monotonic() < deadline, "datasette did not start in 30 s"
                time.sleep(0.1)
        assert served["databases"]["crawl"]["tables"]["pages"]["units"]["bytes"] == "byte"
        links = _get(f"{base}/crawl/links.json?_labels=on&from_url={HOME}&to_url={HOME}p30")
        assert links["rows"] == [
            {
                "from_url": {"value": HOME, "label": "Home"},
                "to_url": {"value": f"{HOME}p30", "label": "Page 30"},
                "anchor": "page 30",
            }
        ]
        pages = _get(f"{base}/crawl/pages.json?_size=1")
        fks = {(fk["column"], fk["other_table"]) for fk, _ in pages["expandable_columns"]}
        assert {("host", "hosts"), ("run_id", "runs"), ("duplicate_of", "pages")} <= fks
        assert pages["primary_keys"] == ["url"]
        hosts = _get(f"{base}/crawl/host_summary.json?_shape=array")
        assert [(h["host"], h["pages"], h["blocked"]) for h in hosts] == [
            (f"{OLD.HOST}:{OLD.PORT}", SITE_PAGES, ROBOTS_BLOCKED)
        ]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()
