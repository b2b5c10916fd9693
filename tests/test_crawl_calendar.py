"""Calendar traps in both directions, on a real loopback server (issue #10, item 4).

An endless "previous month" calendar is cut at the host's date budget
(``calendar_max_dates``) whatever the depth limit; so is an endless query calendar;
a resumed crawl does not hand the budget out again.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from crawlkit import html, run_crawl
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
