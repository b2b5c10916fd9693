"""A resumed crawl checks the URLs an earlier run queued against this run's include and
exclude patterns (issue #14's loose ends, a new user's trial: URLs queued before an
``--exclude`` was added were still fetched): both those queued in memory and those
spilled to SQLite (``frontier_window = 10``: one URL of a host in memory) go to
``blocked`` as ``excluded`` and are not fetched. A real crawl of a loopback server,
resumed through the command's ``main``."""

from __future__ import annotations

from pathlib import Path

import pytest
from clikit import main_in
from crawlkit import html, rows, run_crawl
from httpserver import HTTPTestServer

from crawldeck.core.crawl.resume import patterns_changed
from crawldeck.core.policy.traps import UrlPatterns
from crawldeck.core.storage.store import Store

KEEP = [f"/keep/{i}" for i in range(10)]
DROP = [f"/drop/{i}" for i in range(10)]


def _first_page_crawled(srv: HTTPTestServer, db: Path) -> None:
    """Serve ``/`` linking ``KEEP`` and ``DROP`` (leaves) and crawl ``/`` alone into
    ``db`` (``max_pages`` 1, one URL of a host in memory: the rest spilled)."""
    srv.set("/", html("".join(f'<a href="{p}">{p}</a>' for p in KEEP + DROP)))
    for path in KEEP + DROP:
        srv.set(path, html("<p>leaf</p>"))
    run_crawl([srv.url("/")], db, max_pages=1, sitemaps=False, frontier_window=10)


@pytest.mark.parametrize(
    ("flag", "detail"),
    [("--exclude", "matches exclude '/drop/'"), ("--include", "matches no include ('/keep/')")],
)
def test_a_resume_refuses_queued_urls_its_new_patterns_refuse(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    detail: str,
) -> None:
    db = tmp_path / "c.db"
    with HTTPTestServer() as srv:
        _first_page_crawled(srv, db)
        assert rows(db, "SELECT state, count(*) FROM frontier GROUP BY state ORDER BY 1") == [
            ("done", 1), ("queued", 1), ("spilled", 19),
        ]  # fmt: skip
        pattern = "/drop/" if flag == "--exclude" else "/keep/"
        code, out, err = main_in(tmp_path, monkeypatch, capsys, "crawl", srv.url("/"), "--no-ui",
                                 "--db", str(db), flag, pattern, "--delay-ms", "0",
                                 "-s", "frontier_window=10", "-s", "sitemaps=false")  # fmt: skip
        assert code == 0, err
        fetched = {r.path for r in srv.requests}
    assert "10 queued URLs refused by this run's include/exclude" in out
    assert fetched == {"/", "/robots.txt", *KEEP}
    refused = rows(db, "SELECT url, reason, detail FROM blocked ORDER BY url")
    assert refused == [(srv.url(p), "excluded", detail) for p in sorted(DROP)]
    assert rows(db, "SELECT state, count(*) FROM frontier GROUP BY state ORDER BY 1") == [
        ("blocked", 10), ("done", 11),
    ]  # fmt: skip


def test_the_crawls_own_command_after_a_narrower_rerun_queues_its_refusals_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #25 trial 18: a rerun with ``--include`` refused the crawl's queue for good;
    the crawl's own command, run again, found nothing left. It queues them again."""
    db = tmp_path / "c.db"
    with HTTPTestServer() as srv:
        _first_page_crawled(srv, db)
        common = ["crawl", srv.url("/"), "--no-ui", "--db", str(db), "--delay-ms", "0",
                  "-s", "frontier_window=10", "-s", "sitemaps=false"]  # fmt: skip
        code, _, err = main_in(tmp_path, monkeypatch, capsys, *common, "--include", "/keep/")
        assert code == 0, err
        srv.clear()
        code, out, err = main_in(tmp_path, monkeypatch, capsys, *common)
        assert code == 0, err
        fetched = {r.path for r in srv.requests}
    assert "10 URLs an earlier run's include/exclude refused queued again" in out
    assert fetched == {"/robots.txt", *DROP}
    assert rows(db, "SELECT count(*) FROM blocked") == [(0,)]
    assert rows(db, "SELECT state, count(*) FROM frontier GROUP BY state ORDER BY 1") == [
        ("done", 21),
    ]  # fmt: skip


def test_the_queue_is_read_again_only_when_thepatterns_changed(tmp_path: Path) -> None:
    with HTTPTestServer() as srv:
        srv.set("/", html("<p>one page</p>"))
        run_crawl([srv.url("/")], tmp_path / "c.db", sitemaps=False, exclude=["/a", "/b"])
    store = Store(tmp_path / "c.db")
    try:
        assert not patterns_changed(store, UrlPatterns((), ("/a", "/b")))
        assert patterns_changed(store, UrlPatterns((), ("/a",)))
        assert patterns_changed(store, UrlPatterns((), ("/b", "/a")))
        assert patterns_changed(store, UrlPatterns(("/a",), ("/a", "/b")))
    finally:
        store.close()
