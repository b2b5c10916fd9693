"""A recrawl end to end: a crawl of a small static site on loopback, then recrawls of the
crawl file through the same ``Engine`` (``core.crawl.recrawl.prepare``): unchanged pages are
asked for conditionally and answered 304 with no body, a changed page is a new version
with its new link followed, ``page_versions`` keeps every visit, and the order of the
next recrawl follows the change-rate estimate. With WARC on, each 304 is a
server-not-modified revisit record naming the first crawl's response, and a server
that ignores the validators (a 200 with the same bytes) gives full responses that are
no duplicate of themselves. The CLI's one-line refusals last."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crawlkit import html, rows, run_crawl
from httpserver import HTTPTestServer, Response
from warcio.archiveiterator import ArchiveIterator

from crawldeck.cli.main import main
from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.crawl.recrawl import histories, prepare, summarize
from crawldeck.core.storage.store import Store
from crawldeck.core.storage.warc_reader import record_head, warc_files
from crawldeck.core.storage.warc_records import SERVER_NOT_MODIFIED
from crawldeck.localweb.static import StaticSite

WARCIO = str(Path(sys.executable).parent / "warcio")

PAGES = ("index.html", "a.html", "b.html", "c.html")


def write_site(root: Path) -> None:
    root.mkdir()
    (root / "index.html").write_text(
        "<title>Home</title>" + "".join(f'<a href="{p}">{p}</a>' for p in PAGES[1:])
    )
    for name in PAGES[1:]:
        (root / name).write_text(f"<title>{name}</title><p>{name} text</p>")
    (root / "robots.txt").write_text("User-agent: *\nDisallow:\n")


def recrawl(db: Path, older_than_s: float = 0.0) -> list[str]:
    """One recrawl of ``db`` as ``crawldeck recrawl`` runs it; the URLs in the order
    ``prepare`` queued them."""
    store = Store(db, flush_interval_ms=50)
    try:
        saved = store.last_config()
        assert saved is not None
        config = build_config({**saved, "max_pages": None})
        plan = prepare(store, older_than_s=older_than_s, now=time.time())
        engine = Engine(config, store)
        assert engine.add_seeds(store.seed_urls()) == []
        asyncio.run(asyncio.wait_for(engine.run(), timeout=30))
    finally:
        store.close()
    return [c.url for c in plan.order]


@pytest.fixture
def site(tmp_path: Path) -> StaticSite:
    write_site(tmp_path / "site")
    return StaticSite(tmp_path / "site", "127.79.4.1")


def test_a_recrawl_of_an_unchanged_site_is_all_304_and_a_change_is_a_new_version(
    site: StaticSite, tmp_path: Path
) -> None:
    db = tmp_path / "c.db"
    with site:
        base = site.base_url
        run_crawl([base + "/index.html"], db, warc=False, sitemaps=False)
        first = [a for a in site.access_log() if a.path != "/robots.txt"]
        assert sorted(a.path for a in first) == sorted(f"/{p}" for p in PAGES)
        assert {a.status for a in first} == {200}
        sent_before = site.body_bytes
        log_before = len(site.access_log())

        recrawl(db)
        second = site.access_log()[log_before:]
        pages = [a for a in second if a.path != "/robots.txt"]
        # every page asked for again, each conditionally: all answered 304, no body sent
        assert sorted(a.path for a in pages) == sorted(f"/{p}" for p in PAGES)
        assert [a.status for a in pages] == [304] * len(PAGES)
        robots = len((site.root / "robots.txt").read_bytes())
        assert site.body_bytes - sent_before == robots  # robots.txt's, asked again
        assert [a.path for a in second if a.path == "/robots.txt"] == ["/robots.txt"]
        # the page rows are the 200s as they were; each page has two versions
        assert rows(db, "SELECT DISTINCT status FROM pages") == [(200,)]
        versions = rows(db, "SELECT url, status FROM page_versions ORDER BY url, fetched_at")
        assert versions == [(f"{base}/{p}", status) for p in sorted(PAGES) for status in (200, 304)]

        # a.html changes (and links to a new page): a 200, re-parsed, the new link crawled
        changed = site.root / "a.html"
        changed.write_text('<title>a.html</title><p>new text</p><a href="d.html">d</a>')
        (site.root / "d.html").write_text("<title>d</title>")
        log_before = len(site.access_log())
        recrawl(db)
        third = {a.path: a.status for a in site.access_log()[log_before:]}
        assert third.pop("/a.html") == 200
        assert third.pop("/d.html") == 200  # the new link, fetched unconditionally
        assert third.pop("/robots.txt") == 200
        assert set(third.values()) == {304} and len(third) == len(PAGES) - 1
        a_versions = rows(
            db, "SELECT status FROM page_versions WHERE url = ? ORDER BY fetched_at",
            f"{base}/a.html",
        )  # fmt: skip
        assert a_versions == [(200,), (304,), (200,)]
        assert rows(db, "SELECT count(*) FROM links WHERE from_url = ? AND to_url = ?",
                    f"{base}/a.html", f"{base}/d.html") == [(1,)]  # fmt: skip

        # the next recrawl's order: a.html (it changed at a visit) first, then the
        # pages that never changed, oldest visit first; d.html, seen once, gets the
        # pooled prior, between them
        order = recrawl(db)
        assert order[0] == f"{base}/a.html"
        assert order.index(f"{base}/d.html") == 1
        assert set(order[2:]) == {f"{base}/{p}" for p in PAGES if p != "a.html"}
    store = Store(db)
    try:
        found = summarize(store, 0.0)
    finally:
        store.close()
    # 4 + 1 first fetches (new) and one change, as 200s; 3 + 3 + 5 revisits answered 304
    assert (found.new, found.changed, found.not_modified, found.other) == (
        len(PAGES) + 1, 1, 4 + 3 + 5, 0,
    )  # fmt: skip


def test_older_than_leaves_recent_pages_alone(site: StaticSite, tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    with site:
        run_crawl([site.base_url + "/index.html"], db, warc=False, sitemaps=False)
        stamp = time.time() - 7200
        os.utime(site.root / "b.html", (stamp, stamp))
        # make b.html's only visit two hours old
        conn = sqlite3.connect(db)
        with conn:
            old = "2000-01-01T00:00:00.000000Z"
            conn.execute("UPDATE pages SET fetched_at = ? WHERE url LIKE '%/b.html'", (old,))
            conn.execute(
                "UPDATE page_versions SET fetched_at = ? WHERE url LIKE '%/b.html'", (old,)
            )
        conn.close()
        log_before = len(site.access_log())
        assert recrawl(db, older_than_s=3600) == [site.base_url + "/b.html"]
        again = [a.path for a in site.access_log()[log_before:] if a.path != "/robots.txt"]
        assert again == ["/b.html"]


def test_a_page_whose_links_were_cut_is_revisited(site: StaticSite, tmp_path: Path) -> None:
    """A 200 whose links were cut (``parse_cut``, ``links_cut``: the page itself is whole)
    is revisited as any other (a new user's trial, issue #25: the table of contents of
    the Python docs, cut at ``parse_max_bytes``, was never revisited); a page read in
    part (``body_too_large``) is not."""
    db = tmp_path / "c.db"
    with site:
        run_crawl([site.base_url + "/index.html"], db, warc=False, sitemaps=False)
        conn = sqlite3.connect(db)
        with conn:
            for name, error in (
                ("index.html", "parse_cut: links from the first 262144 of 2565599 bytes"),
                ("a.html", "links_cut: the first 10000 links of 12000"),
                ("b.html", "body_too_large: cut at 10485760 bytes"),
            ):
                conn.execute("UPDATE pages SET error = ? WHERE url LIKE ?", (error, f"%/{name}"))
        conn.close()
        revisited = {url.rsplit("/", 1)[1] for url in recrawl(db)}
    assert {"index.html", "a.html"} <= revisited
    assert "b.html" not in revisited


def warc_records(db: Path) -> list[list[dict[str, str]]]:
    """The WARC head fields of every record, per WARC file of ``db`` (in file order),
    each file checked by ``warcio check`` (digests verified) first."""
    out = []
    for path in warc_files(db.parent, db.stem):
        checked = subprocess.run([WARCIO, "check", str(path)], capture_output=True)
        assert checked.returncode == 0, checked.stdout.decode()[-2000:]
        with path.open("rb") as f:
            out.append([dict(r.rec_headers.headers) for r in ArchiveIterator(f)])
    return out


def test_with_warc_each_304_is_a_server_not_modified_revisit_of_the_first_response(
    site: StaticSite, tmp_path: Path
) -> None:
    db = tmp_path / "c.db"
    with site:
        base = site.base_url
        run_crawl([base + "/index.html"], db, sitemaps=False)
        recrawl(db)
        assert [a.status for a in site.access_log() if a.path != "/robots.txt"][-4:] == [304] * 4
    first, second = warc_records(db)
    located = rows(db, "SELECT url, warc_file, warc_offset FROM pages")
    assert {f for _, f, _ in located} == {"c-00001.warc.gz"}  # the rows are the 200s'
    originals = {url: record_head(tmp_path / f, offset) for url, f, offset in located}
    assert all(h["WARC-Type"] == "response" for h in originals.values())
    revisits = [h for h in second if h.get("WARC-Profile") == SERVER_NOT_MODIFIED]
    assert sorted(h["WARC-Target-URI"] for h in revisits) == sorted(f"{base}/{p}" for p in PAGES)
    for h in revisits:
        original = originals[h["WARC-Target-URI"]]
        assert h["WARC-Type"] == "revisit"
        assert h["WARC-Refers-To-Target-URI"] == original["WARC-Target-URI"]
        assert h["WARC-Refers-To-Date"] == original["WARC-Date"]
        assert h["WARC-Refers-To"] == original["WARC-Record-ID"]
        assert h["WARC-Payload-Digest"] == original["WARC-Payload-Digest"]
    responses = [h["WARC-Target-URI"] for h in second if h["WARC-Type"] == "response"]
    assert responses == [f"{base}/robots.txt"]  # the only body fetched again
    assert len([h for h in first if h["WARC-Type"] == "response"]) == len(PAGES) + 1


def test_show_says_a_page_was_found_not_modified_since_its_record(
    site: StaticSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 304 keeps the page's record: ``show`` says the recrawls checked the page
    since, as wget ``-N`` users expect to see (issue #25 trial 17: it showed the old
    record with no word of the checks)."""
    db = tmp_path / "c.db"
    with site:
        url = site.base_url + "/a.html"
        run_crawl([site.base_url + "/index.html"], db, sitemaps=False)
        assert main(["show", str(db), url]) == 0
        assert "checked since" not in capsys.readouterr().out
        recrawl(db)
        recrawl(db)
    ((fetched_at,), (last,)) = rows(
        db, "SELECT fetched_at FROM page_versions WHERE url = ? ORDER BY fetched_at", url
    )[::2]
    assert main(["show", str(db), url]) == 0
    out = capsys.readouterr().out
    date = next(line for line in out.splitlines() if line.startswith("WARC-Date: "))[11:]
    assert date[:19] == fetched_at[:19]  # the record is the first fetch's
    assert (
        f"\n(checked since: 304 Not Modified 2 times, the last at {last}; the record is "
        f"the fetch of {date})\n" in out
    )


def test_a_200_with_the_same_bytes_is_no_duplicate_of_its_own_page(tmp_path: Path) -> None:
    """A server that ignores If-None-Match answers the recrawl with 200 and the same
    bytes: each page is a full response again, ``duplicate_of`` stays NULL (and
    ``near_duplicate_of`` names no page itself), and its versions carry the same digest
    (``summarize``: unchanged)."""
    db = tmp_path / "c.db"
    with HTTPTestServer() as srv:
        srv.set("/", html('<a href="/a">a</a><a href="/b">b</a>', ETag='"r"'))
        srv.set("/a", html("<p>a</p>", ETag='"a"'))
        srv.set("/b", html("<p>b</p>", ETag='"b"'))
        run_crawl([srv.url("/")], db, sitemaps=False)
        since = time.time()
        recrawl(db)
        asked = [r for r in srv.requests if r.path != "/robots.txt"]
        assert sorted(r.headers.get("if-none-match", "") for r in asked[3:]) == [
            '"a"',
            '"b"',
            '"r"',
        ]
    assert rows(db, "SELECT count(*), count(duplicate_of) FROM pages") == [(3, 0)]
    # nor a near duplicate of itself (issue #25 trial 7: every unchanged page was)
    assert rows(db, "SELECT count(*) FROM pages WHERE near_duplicate_of = url") == [(0,)]
    versions = rows(db, "SELECT url, status, payload_digest FROM page_versions ORDER BY url")
    assert [v[1] for v in versions] == [200] * 6
    assert all(versions[i][2] == versions[i + 1][2] is not None for i in range(0, 6, 2))
    store = Store(db)
    try:
        found = summarize(store, since)
    finally:
        store.close()
    assert (found.unchanged, found.changed, found.not_modified) == (3, 0, 0)
    _, second = warc_records(db)
    kinds = {h["WARC-Target-URI"]: h["WARC-Type"] for h in second if "WARC-Target-URI" in h
             and h["WARC-Type"] in ("response", "revisit")}  # fmt: skip
    assert {srv.url(p): "response" for p in ("/", "/a", "/b")}.items() <= kinds.items()


def test_a_body_not_read_is_not_compared_at_each_recrawl(tmp_path: Path) -> None:
    """An image and a PDF the crawl does not read, answered 200 at every visit (a
    server without validators): a recrawl counts them apart, "not compared", never
    "changed", and their change rate is the crawl's prior, not one change per visit
    (issue #25 trial 10: every recrawl said 3 changed)."""
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="/i.png">i</a> <a href="/d.pdf">d</a>'))
        server.set("/i.png", Response(200, {"Content-Type": "image/png"}, b"\x89PNG" + b"\0" * 99))
        server.set("/d.pdf", Response(200, {"Content-Type": "application/pdf"}, b"%PDF-1.4"))
        db = tmp_path / "c.db"
        run_crawl([server.url("/")], db, sitemaps=False)
        for _ in range(2):
            recrawl(db)
    store = Store(db)
    try:
        found = summarize(store, 0.0)
        seen = dict(histories(store))
    finally:
        store.close()
    # each page fetched 3 times: 3 new, then 2 x (1 HTML unchanged + 2 not compared)
    assert (found.new, found.unchanged, found.not_compared, found.changed) == (3, 2, 4, 0)
    assert seen[server.url("/i.png")].changes == 0
