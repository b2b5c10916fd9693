"""Broken links as a link checker shows them (issue #25 item 4): the ``broken_links``: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_links_broken.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from clikit import main_in
from crawlkit import rows
from fakesite import FakeSite, crawl, links_page, redirect, status

from crawldeck.cli.output import broken_lines
from crawldeck.core.records import PageRecord
from crawldeck.core.storage.link_report import blocked_links, link_report, unchecked_links
from crawldeck.core.storage.store import Store


def test_links_refuses_a_missing_file_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "links", "nope.db", "--broken")
    assert (code, out) == (2, "")
    assert err == "crawldeck links: error: nope.db does not exist or is not a file\n"


def test_a_redirect_loop_has_one_verdict_in_every_view(tmp_path: Path) -> None:
    """A loop's first hop is fetched (302, ``redirect_loop``) and refused when the chain
    comes back to it (a ``blocked`` row of the same URL): every view calls its links
    broken, the same ``final_url`` (the target: the error tells the chain; the row's own
    ``final_url``, its next hop, read as the chain's end: trial 8), and none counts them
    refused untried (issue #25 trial 6: ``links`` said blocked, ``--broken`` said broken,
    and the footer said "not broken, never fetched")."""
    a = "http://127.0.0.1"
    site = FakeSite()
    site.add(f"{a}/robots.txt", status(404))
    site.add(f"{a}/", links_page(f"{a}/loop-a", f"{a}/missing"))
    site.add(f"{a}/loop-a", redirect("/loop-b", 302))
    site.add(f"{a}/loop-b", redirect("/loop-a", 302))
    site.add(f"{a}/missing", status(404))
    db = tmp_path / "c.db"
    crawl(site, [f"{a}/"], db)
    assert rows(db, "SELECT reason FROM blocked WHERE url = ?", f"{a}/loop-a") == [
        ("redirect_loop",)
    ]
    checks = list(link_report(db, broken=False))
    every = {(c.to_url, c.status, c.final_url, c.blocked) for c in checks}
    assert (f"{a}/loop-a", 302, f"{a}/loop-a", None) in every
    (loop,) = [c for c in checks if c.to_url == f"{a}/loop-a" and c.from_url == f"{a}/"]
    assert loop.why().startswith("HTTP 302: redirect_loop: loop after 2 hops")
    assert "(redirected to" not in loop.why()
    broken = {(c.to_url, c.status, c.final_url, c.blocked) for c in link_report(db, broken=True)}
    assert broken == {
        (f"{a}/loop-a", 302, f"{a}/loop-a", None),
        (f"{a}/missing", 404, f"{a}/missing", None),
    }
    assert blocked_links(db) == {}
    assert rows(db, "SELECT to_url, final_url FROM broken_links ORDER BY to_url") == [
        (f"{a}/loop-a", f"{a}/loop-a"),
        (f"{a}/missing", f"{a}/missing"),
    ]


def test_a_link_spelled_as_a_fetched_page_is_that_page_not_unchecked(tmp_path: Path) -> None:
    """Links that differ from a fetched URL only by a parameter the dedupe key drops
    (``sid``, ``strip_params``) are that page: a finished crawl said "34 links not
    checked: the crawl stopped before fetching them" (issue #25 trial 6)."""
    a = "http://127.0.0.1"
    site = FakeSite()
    site.add(f"{a}/robots.txt", status(404))
    site.add(f"{a}/", links_page(f"{a}/shop?sid=1", f"{a}/shop?sid=2", f"{a}/gone"))
    site.add(f"{a}/shop?sid=1", links_page(f"{a}/shop?sid=3"))
    site.add(f"{a}/gone", status(404))
    db = tmp_path / "c.db"
    crawl(site, [f"{a}/"], db)
    assert site.count(f"{a}/shop?sid=2") == site.count(f"{a}/shop?sid=3") == 0
    checks = {(c.from_url, c.to_url): c for c in link_report(db, broken=False)}
    for link in ((f"{a}/", f"{a}/shop?sid=2"), (f"{a}/shop?sid=1", f"{a}/shop?sid=3")):
        found = checks[link]
        assert (found.status, found.final_url, found.tried) == (200, f"{a}/shop?sid=1", True)
        assert found.why() == f"HTTP 200 (fetched as {a}/shop?sid=1)"
    assert checks[(f"{a}/", f"{a}/gone")].status == 404
    assert unchecked_links(db) == 0


def test_links_not_checked_are_not_yet_while_a_crawl_holds_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A link still queued is "not fetched yet" while a crawl holds the file, and "the
    crawl stopped before fetching" once none does (issue #25 trial 7)."""
    db = tmp_path / "c.db"
    page = PageRecord(
        "http://a.test/", "http://a.test/", "a.test", 0, 200, "text/html", 10, 1.0, 1.7e9,
        False, None, False,
    )  # fmt: skip
    with Store(db) as store:
        store.begin_run({})
        store.record_page(page, key=page.url, links=[(page.url, "http://a.test/next")], new_rows=(),
                          state="done")  # fmt: skip
        store.flush()
        code, _, err = main_in(tmp_path, monkeypatch, capsys, "links", "c.db")
        assert (code, err.splitlines()[-1]) == (
            0, "crawldeck: 1 link to 1 URL; 1 link not checked: the crawl has not fetched them yet"
        )  # fmt: skip
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "links", "c.db")
    assert err.splitlines()[-1].endswith(
        "1 link not checked: the crawl stopped before fetching them"
    )


def test_the_summary_names_the_groups_past_the_fifth_with_their_counts_apart(
    tmp_path: Path,
) -> None:
    """``and N more: HTTP 503: gave up after 6 tries (1); ...``: a group's count apart
    from its label (issue #25 trial 8: "... after 6 tries 1" read as one figure)."""
    db = tmp_path / "c.db"
    home = "http://a.test/"
    answers = [(404, None), (410, None), (500, None), (502, None), (401, None),
               (403, None), (503, "gave up after 6 tries")]  # fmt: skip
    with Store(db) as store:
        store.begin_run({})
        targets = [f"{home}t{i}" for i in range(len(answers))]
        page = PageRecord(
            home, home, "a.test", 0, 200, "text/html", 10, 1.0, 1.7e9, False, None, False
        )
        store.record_page(page, key=home, links=[(home, t) for t in targets], new_rows=(),
                          state="done")  # fmt: skip
        for target, (code, error) in zip(targets, answers, strict=True):
            bad = PageRecord(target, target, "a.test", 1, code, "text/html", 0, 1.0, 1.7e9,
                             False, error, False)  # fmt: skip
            store.record_page(bad, key=target, links=(), new_rows=(), state="done")
        lines = broken_lines(store, db)
    assert lines[0].startswith("broken links: 7 (all of them: ")
    assert lines[-1].startswith("  and 2 more: HTTP ")
    assert lines[-1].endswith(" (1); HTTP 503: gave up after 6 tries (1)")


def test_a_link_to_a_url_still_retrying_says_its_tries(tmp_path: Path) -> None:
    """A run that ends (here its --max-time) while a link's target is queued for another
    try after three 503s: ``links`` says so, not a bare "not fetched" (issue #25 trial 20)."""
    a = "http://127.0.0.1"
    site = FakeSite()
    site.add(f"{a}/robots.txt", status(404))
    site.add(f"{a}/", links_page(f"{a}/busy"))
    site.add(f"{a}/busy", status(503))
    db = tmp_path / "c.db"
    crawl(site, [f"{a}/"], db, max_time_s=3, backoff_base_ms=1000, backoff_max_ms=1000)
    assert rows(db, "SELECT state, attempts FROM frontier WHERE url = ?", f"{a}/busy") == [
        ("queued", 3)
    ]
    (check,) = [c for c in link_report(db, broken=False) if c.to_url == f"{a}/busy"]
    assert check.why() == "not fetched yet: queued after 3 tries, its host in backoff"
