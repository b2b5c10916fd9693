"""``crawldeck recrawl`` of an unfinished crawl (issue #14's loose ends, a new user's
trial): its pages are revisited first, then its queue goes on within the recrawl's own
budgets (``--max-pages``, ``--max-time``, ``--max-bytes``: this recrawl's fetches), and
the last line counts the revisits (304, same digest, changed) and the new pages apart.
A real crawl of a static site on loopback (its 304s from its ``ETag``), the recrawl
through the command's ``main``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clikit import main_in
from crawlkit import rows, run_crawl

from crawldeck.localweb.static import StaticSite

#: index.html links these, in this order (the crawl's breadth-first order).
LINKED = ("a.html", "b.html", "c.html", "d.html", "e.html", "f.html")


@pytest.fixture
def site(tmp_path: Path) -> StaticSite:
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text("".join(f'<a href="{p}">{p}</a>' for p in LINKED))
    for name in LINKED:
        (root / name).write_text(f"<title>{name}</title><p>{name}</p>")
    (root / "robots.txt").write_text("User-agent: *\nDisallow:\n")
    return StaticSite(root, "127.79.15.1")


def unfinished_crawl(site: StaticSite, db: Path) -> list[str]:
    """A crawl of ``site`` stopped by ``max_pages = 3`` (index, a, b fetched; c to f
    queued); the paths it fetched."""
    run_crawl([site.base_url + "/index.html"], db, max_pages=3, sitemaps=False)
    assert rows(db, "SELECT count(*) FROM frontier WHERE state IN ('queued', 'spilled')") == [
        (len(LINKED) - 2,)
    ]
    return [a.path for a in site.access_log() if a.path != "/robots.txt"]


def recrawl_answers(site: StaticSite, skip: int) -> list[tuple[str, int]]:
    """``(path, status)`` of the page requests after the first ``skip`` ones."""
    pages = [a for a in site.access_log() if a.path != "/robots.txt"]
    return [(a.path, a.status) for a in pages[skip:]]


def test_a_recrawl_revisits_first_then_goes_on_with_the_queue_within_its_budget(
    site: StaticSite,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "c.db"
    with site:
        first = unfinished_crawl(site, db)
        assert first == ["/index.html", "/a.html", "/b.html"]
        code, out, err = main_in(tmp_path, monkeypatch, capsys, "recrawl", str(db), "--no-ui",
                                 "--max-pages", "5")  # fmt: skip
        assert code == 0, err
        answers = recrawl_answers(site, len(first))
    # the three known pages first, all unchanged (304), then two of the queue, new
    assert sorted(answers[:3]) == [("/a.html", 304), ("/b.html", 304), ("/index.html", 304)]
    assert answers[3:] == [("/c.html", 200), ("/d.html", 200)]
    assert "crawldeck recrawl: 3 pages to revisit, then 4 queued URLs never fetched\n" in out
    assert out.splitlines()[-1] == (
        "recrawl: 3 revisited: 3 not modified (304), 0 unchanged (200, same digest), "
        "0 changed, 0 other; 2 new pages"
    )
    assert rows(db, "SELECT status FROM runs ORDER BY id") == [("max_pages",), ("max_pages",)]
    assert rows(db, "SELECT count(*) FROM frontier WHERE state = 'spilled'") == [(2,)]


def test_without_a_budget_the_queue_is_crawled_and_new_pages_are_not_changes(
    site: StaticSite,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The crawl's own ``max_pages = 3`` is not carried over (it counts the file's
    pages); a changed page's new link is a new page, not a change."""
    db = tmp_path / "c.db"
    with site:
        first = unfinished_crawl(site, db)
        (site.root / "a.html").write_text('<p>a, changed</p><a href="g.html">g</a>')
        (site.root / "g.html").write_text("<p>g</p>")
        code, out, err = main_in(tmp_path, monkeypatch, capsys, "recrawl", str(db), "--no-ui")
        assert code == 0, err
        answers = recrawl_answers(site, len(first))
    assert sorted(answers[:3]) == [("/a.html", 200), ("/b.html", 304), ("/index.html", 304)]
    assert sorted(answers[3:]) == [(f"/{p}", 200) for p in ("c.html", "d.html", "e.html",
                                                            "f.html", "g.html")]  # fmt: skip
    assert out.splitlines()[-1] == (
        "recrawl: 3 revisited: 2 not modified (304), 0 unchanged (200, same digest), "
        "1 changed, 0 other; 5 new pages"
    )
    assert rows(db, "SELECT status FROM runs ORDER BY id") == [("max_pages",), ("finished",)]


def test_older_than_says_how_many_recent_pages_it_leaves(
    site: StaticSite,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--older-than 1h`` right after the crawl leaves its three pages alone and says
    so in the first line; the queue is still crawled (issue #25: the first line)."""
    db = tmp_path / "c.db"
    with site:
        unfinished_crawl(site, db)
        code, out, err = main_in(tmp_path, monkeypatch, capsys, "recrawl", str(db), "--no-ui",
                                 "--older-than", "1h")  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[0] == (
        "crawldeck recrawl: 0 pages to revisit, 3 fetched within 1h left alone, "
        "then 4 queued URLs never fetched"
    )


def test_the_resume_command_of_a_stopped_recrawl_goes_on_with_it(
    site: StaticSite,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A new user's trial (issue #25): the command a recrawl stopped by ``--max-pages``
    prints revisited the same first pages at every run. Now it goes on: the second
    recrawl revisits the next pages, the third the rest and ends; a fourth, after the
    end, starts over."""
    db = tmp_path / "c.db"
    with site:
        run_crawl([site.base_url + "/index.html"], db, sitemaps=False)
        crawled = len(recrawl_answers(site, 0))
        assert crawled == 1 + len(LINKED)
        lines, visits = [], []
        for budget in (["--max-pages", "3"], ["--max-pages", "3"], [], []):
            before = len(recrawl_answers(site, 0))
            code, out, err = main_in(tmp_path, monkeypatch, capsys, "recrawl", str(db),
                                     "--no-ui", *budget)  # fmt: skip
            assert code == 0, err
            lines.append(out.splitlines()[0])
            visits.append(recrawl_answers(site, before))
    assert [len(v) for v in visits] == [3, 3, 1, 7]
    firsts = {path for v in visits[:3] for path, _ in v}
    assert len(firsts) == 7  # each page revisited once over the three runs
    assert all(status == 304 for v in visits for _, status in v)
    assert lines[0] == "crawldeck recrawl: 7 pages to revisit"
    assert lines[1] == (
        "crawldeck recrawl: going on with the recrawl that stopped: 0 pages to revisit "
        "(3 visited since it began left alone), then its 4 revisits left"
    )
    assert lines[2] == (
        "crawldeck recrawl: going on with the recrawl that stopped: 0 pages to revisit "
        "(6 visited since it began left alone), then its 1 revisit left"
    )
    assert lines[3] == "crawldeck recrawl: 7 pages to revisit"


def test_a_recrawl_whose_revisits_are_made_goes_on_with_the_queue_alone(
    site: StaticSite,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A new user's trial (issue #25): a recrawl stopped by ``--max-pages`` after all
    its revisits, in the queue, printed a resume command that revisited every page
    again. Now the same command fetches the queue left and revisits nothing; once the
    queue is empty, the next recrawl starts over."""
    db = tmp_path / "c.db"
    with site:
        first = unfinished_crawl(site, db)
        lines, visits = [], []
        for budget in (["--max-pages", "4"], ["--max-pages", "4"], []):
            before = len(recrawl_answers(site, 0))
            code, out, err = main_in(tmp_path, monkeypatch, capsys, "recrawl", str(db),
                                     "--no-ui", *budget)  # fmt: skip
            assert code == 0, err
            lines.append(out.splitlines()[0])
            visits.append(recrawl_answers(site, before))
    assert len(first) == 3
    # three revisits (304) and c; then d, e, f and nothing revisited; then all seven
    assert sorted(visits[0]) == [("/a.html", 304), ("/b.html", 304), ("/c.html", 200),
                                 ("/index.html", 304)]  # fmt: skip
    assert visits[1] == [("/d.html", 200), ("/e.html", 200), ("/f.html", 200)]
    assert len(visits[2]) == 7 and {s for _, s in visits[2]} == {304}
    assert lines == [
        "crawldeck recrawl: 3 pages to revisit, then 4 queued URLs never fetched",
        "crawldeck recrawl: going on with the recrawl that stopped: 0 pages to revisit "
        "(4 visited since it began left alone), then 3 queued URLs never fetched",
        "crawldeck recrawl: 7 pages to revisit",
    ]


def test_a_recrawl_takes_settings_over_the_last_runs_config(
    site: StaticSite,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``recrawl -s KEY=VALUE`` as crawl's (issue #25 F21); a bad key is one line."""
    db = tmp_path / "c.db"
    with site:
        unfinished_crawl(site, db)
        code, _, err = main_in(tmp_path, monkeypatch, capsys, "recrawl", str(db), "--no-ui",
                               "-s", "DOWNLOAD_DELAY=2")  # fmt: skip
        assert (code, err) == (2, "crawldeck recrawl: error: -s: unknown config key "
                               "'DOWNLOAD_DELAY' (Scrapy's DOWNLOAD_DELAY = 2; in crawldeck: "
                               "delay_ms = 2000)\n")  # fmt: skip
        code, _, err = main_in(tmp_path, monkeypatch, capsys, "recrawl", str(db), "--no-ui",
                               "-s", "delay_ms=7", "--max-pages", "1")  # fmt: skip
        assert code == 0, err
    configs = [json.loads(c) for (c,) in rows(db, "SELECT config FROM runs ORDER BY id")]
    assert [c["delay_ms"] for c in configs] == [configs[0]["delay_ms"], 7]
