"""Calendar traps in both directions, on a real loopback server (issue #10, item 4).

An endless "previous month" calendar is cut at the host's date budget
(``calendar_max_dates``) whatever the depth limit; so is an endless query calendar;
a resumed crawl does not hand the budget out again. With the default budget it is cut
``calendar_max_years`` (10) before the newest date of its host, while a blog whose home
page links 15 years of monthly archives is crawled whole (issue #22, item 10).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from crawlkit import html, rows, run_crawl
from httpserver import HTTPTestServer, Request, Response

BUDGET = 30


def previous(year: int, month: int) -> tuple[int, int]:
    return (year - 1, 12) if month == 1 else (year, month - 1)


def path_calendar(request: Request) -> Response:
    _, _, year, month, _ = request.path.split("/")
    y, m = previous(int(year), int(month))
    return html(f'<a href="/cal/{y}/{m:02d}/">previous month</a>')


def query_calendar(request: Request) -> Response:
    year, month = (int(x) for x in request.path.partition("month=")[2].split("-"))
    y, m = previous(year, month)
    return html(f'<a href="/events?view=month&amp;month={y}-{m:02d}">previous</a>')


def crawl(server: HTTPTestServer, db: Path, seeds: list[str], **config: Any) -> None:
    run_crawl(seeds, db, **{"max_depth": 100_000, "calendar_max_dates": BUDGET, **config})


def test_an_endless_past_calendar_is_cut_at_the_date_budget(tmp_path: Path) -> None:
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        home = '<a href="/cal/2026/11/">c</a> <a href="/events?view=month&amp;month=2026-11">e</a>'
        server.set("/", html(home))
        for year in range(1800, 2030):
            for month in range(1, 13):
                server.set(f"/cal/{year}/{month:02d}/", path_calendar)
        server.set("/events", query_calendar)
        db = tmp_path / "c.db"
        crawl(server, db, [server.url("/")])
        cal = [r.path for r in server.requests if r.path.startswith("/cal/")]
        events = [r.path for r in server.requests if r.path.startswith("/events")]
    assert len(cal) == BUDGET
    assert len(events) == BUDGET
    conn = sqlite3.connect(db)
    try:
        reasons = dict(conn.execute("SELECT reason, count(*) FROM blocked GROUP BY reason"))
    finally:
        conn.close()
    assert reasons == {"calendar": 2}


def test_a_resume_does_not_hand_the_budget_out_again(tmp_path: Path) -> None:
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        for year in range(1800, 2030):
            for month in range(1, 13):
                server.set(f"/cal/{year}/{month:02d}/", path_calendar)
        db = tmp_path / "c.db"
        crawl(server, db, [server.url("/cal/2026/11/")], max_pages=BUDGET // 2)
        crawl(server, db, [server.url("/cal/2026/11/")])
        cal = [r.path for r in server.requests if r.path.startswith("/cal/")]
    assert len(cal) == BUDGET
    assert len(set(cal)) == BUDGET


def test_a_walked_calendar_is_cut_ten_years_before_the_newest_date(tmp_path: Path) -> None:
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="/cal/2026/11/">calendar</a>'))
        for year in range(1800, 2030):
            for month in range(1, 13):
                server.set(f"/cal/{year}/{month:02d}/", path_calendar)
        db = tmp_path / "c.db"
        run_crawl([server.url("/")], db, timeout=120, max_depth=100_000)
        cal = [r.path for r in server.requests if r.path.startswith("/cal/")]
    # 2026-11 back to 2016-01 (the old code went on to the 1000-date budget: 1943-08)
    assert len(cal) == len(set(cal)) == 11 + 10 * 12
    assert cal[-1] == "/cal/2016/01/"
    assert rows(db, "SELECT url, reason, detail FROM blocked") == [
        (
            server.url("/cal/2015/12/"),
            "calendar",
            f"2015 is more than 10 years before 2026, the newest date on host "
            f"'{server.url('/')[7:-1]}', walking template '/cal/{{y}}/{{m}}/' "
            "(calendar_max_years 10)",
        )
    ]


def archive(request: Request) -> Response:
    """A blog's monthly archive page: a post, the previous month (but the first), home."""
    _, _, year, month, _ = request.path.split("/")
    y, m = previous(int(year), int(month))
    back = f'<a href="/archive/{y}/{m:02d}/">older</a>' if y >= 2012 else ""
    return html(f'<a href="/">home</a> <a href="/post/{year}-{month}.html">post</a> {back}')


def test_a_blog_archive_linked_from_its_home_page_is_crawled_whole(tmp_path: Path) -> None:
    """15 years of monthly archives, each linked from the home page: none is refused,
    though each links the month before it (the walk the calendar above was cut on)."""
    months = [(y, m) for y in range(2012, 2027) for m in range(1, 13)]
    links = " ".join(f'<a href="/archive/{y}/{m:02d}/">{y}-{m}</a>' for y, m in months)
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html(links))
        for y, m in months:
            server.set(f"/archive/{y}/{m:02d}/", archive)
            server.set(f"/post/{y}-{m:02d}.html", html('<a href="/">home</a>'))
        db = tmp_path / "c.db"
        run_crawl([server.url("/")], db, timeout=120)
        fetched = {r.path for r in server.requests if r.path.startswith("/archive/")}
    assert fetched == {f"/archive/{y}/{m:02d}/" for y, m in months}
    assert len(fetched) == 15 * 12
    assert rows(db, "SELECT count(*) FROM pages WHERE url LIKE '%/post/%'") == [(15 * 12,)]
    assert rows(db, "SELECT reason, count(*) FROM blocked GROUP BY reason") == []
