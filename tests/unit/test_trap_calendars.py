"""Calendar traps in both directions (issue #10 item 4): date templates and their budget.

An endless calendar links the previous (or next) month, day or week forever. Past
dates are real content for an archive, so the guard cannot refuse a year; it counts
the admitted URLs of each host that differ only in their date (their date template,
``core.policy.date_templates.date_template``) and refuses one more once a template has
``calendar_max_dates`` of them (default 1000). ``core.policy.date_templates`` is imported as a
module so that on the old code (no template budget) the tests fail on their assertions.
"""

from __future__ import annotations

import datetime
import functools
import itertools
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scaling import MAX_GROWTH, assert_linear

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.errors import ConfigError
from crawldeck.core.policy import date_templates, urls
from crawldeck.core.policy.traps import BlockReason, ScopePolicy, TrapGuard, TrapSettings, Verdict

TODAY = datetime.date(2026, 5, 15)
BUDGET = 1000  # the default calendar_max_dates


def make_guard(**values: Any) -> TrapGuard:
    """A guard of scope ``any`` whose depth and per-host limits never bind."""
    settings_: dict[str, Any] = {"max_depth": 10_000_000, "max_per_host": 10_000_000}
    settings_.update(values)
    return TrapGuard(TrapSettings.from_config(build_config(settings_)), ScopePolicy("any"), TODAY)


@functools.cache
def _default_settings() -> TrapSettings:
    """``TrapSettings`` of the default config, made once (a ``CrawlConfig`` checks each
    of its fields: about 1 ms, at each of some 7 000 keys)."""
    return TrapSettings.from_config(CrawlConfig())


def key_of(url: str, settings: TrapSettings | None = None) -> str:
    return urls.normalize(url, (settings or _default_settings()).strip_params)


def months_back(start: datetime.date) -> Iterator[tuple[int, int]]:
    """(year, month) from ``start``'s month back to January 1900."""
    year, month = start.year, start.month
    while year >= 1900:
        yield year, month
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)


def days_back(start: datetime.date) -> Iterator[datetime.date]:
    """Every day from ``start`` back to 1900-01-01."""
    day = start
    while day.year >= 1900:
        yield day
        day -= datetime.timedelta(days=1)


def cut_at(guard: TrapGuard, pages: Iterator[str]) -> tuple[int, Verdict | None]:
    """Admit ``pages`` in order (as a crawl following "previous" links would) until the
    first refusal; return how many were admitted and that verdict."""
    admitted = 0
    for url in pages:
        verdict = guard.admit(url, admitted, admitted)
        if verdict is not None:
            return admitted, verdict
        admitted += 1
    return admitted, None


# ------------------------------------------------------------- endless calendars


def test_an_endless_past_month_calendar_is_cut_at_the_budget() -> None:
    pages = (f"http://cal.example/calendar/{y:04d}/{m:02d}/" for y, m in months_back(TODAY))
    admitted, verdict = cut_at(make_guard(), pages)
    assert admitted == BUDGET  # 2026-05 back to 1943-02; the old code went on to 1900
    assert verdict == Verdict(
        BlockReason.CALENDAR,
        "template '/calendar/{y}/{m}/' has 1000 dates (calendar_max_dates 1000)",
    )


def test_an_endless_query_calendar_is_cut_at_the_budget() -> None:
    pages = (
        f"http://cal.example/events?view=month&month={y:04d}-{m:02d}" for y, m in months_back(TODAY)
    )
    admitted, verdict = cut_at(make_guard(), pages)
    assert admitted == BUDGET
    assert verdict == Verdict(
        BlockReason.CALENDAR,
        "template '/events?month={y}-{m}&view=month' has 1000 dates (calendar_max_dates 1000)",
    )


@pytest.mark.parametrize(
    ("shape", "template"),
    [
        ("/events/{d:%Y-%m-%d}.html", "/events/{y}-{m}-{d}.html"),
        ("/events/{d:%Y/%m/%d}/", "/events/{y}/{m}/{d}/"),
        ("/day?date={d:%Y%m%d}", "/day?date={y}{m}{d}"),
        ("/cal?y={d.year}&m={d.month}&d={d.day}", "/cal?d={d}&m={m}&y={y}"),
    ],
)
def test_an_endless_daily_calendar_is_cut_at_the_budget(shape: str, template: str) -> None:
    pages = ("http://cal.example" + shape.format(d=day) for day in days_back(TODAY))
    admitted, verdict = cut_at(make_guard(), pages)
    assert admitted == BUDGET  # 1000 days: back to 2023-08-20
    assert verdict == Verdict(
        BlockReason.CALENDAR, f"template {template!r} has 1000 dates (calendar_max_dates 1000)"
    )


def test_the_budget_follows_the_config() -> None:
    pages = (f"http://cal.example/c/{y:04d}-{m:02d}/" for y, m in months_back(TODAY))
    admitted, verdict = cut_at(make_guard(calendar_max_dates=24), pages)
    assert admitted == 24
    assert verdict == Verdict(
        BlockReason.CALENDAR, "template '/c/{y}-{m}/' has 24 dates (calendar_max_dates 24)"
    )


def crawl_calendar(guard: TrapGuard, max_fetches: int) -> tuple[int, list[Verdict]]:
    """Breadth-first crawl of an endless events calendar with month and day views.

    A month page links the previous and the next month and its days 1-28; a day page
    links the previous and the next day and its month. Returns the pages fetched and
    the verdicts of refused URLs (each URL offered once, as the engine's seen set and
    blocked memo do). Dates before 1900 are not linked (no year to read).
    """

    def month_url(day: datetime.date) -> str:
        return f"http://cal.example/calendar/{day:%Y/%m}/"

    def day_url(day: datetime.date) -> str:
        return f"http://cal.example/calendar/{day:%Y/%m/%d}/"

    def links(page: tuple[str, datetime.date]) -> list[tuple[str, datetime.date]]:
        kind, day = page
        one = datetime.timedelta(days=1)
        if kind == "month":
            out = [("month", day - one), ("month", day + datetime.timedelta(days=31))]
            out += [("day", day.replace(day=number)) for number in range(1, 29)]
        else:
            out = [("day", day - one), ("day", day + one), ("month", day)]
        return [(kind, date.replace(day=1) if kind == "month" else date) for kind, date in out]

    def url_of(page: tuple[str, datetime.date]) -> str:
        return month_url(page[1]) if page[0] == "month" else day_url(page[1])

    seed = ("month", TODAY.replace(day=1))
    offered = {url_of(seed)}
    queue = deque([seed])
    refused: list[Verdict] = []
    fetched = 0
    assert guard.admit(url_of(seed), 0, 0, is_seed=True) is None
    while queue and fetched < max_fetches:
        page = queue.popleft()
        fetched += 1
        for link in links(page):
            url = url_of(link)
            if url in offered or link[1].year < 1900:
                continue
            offered.add(url)
            verdict = guard.admit(url, 0, fetched, key=key_of(url))
            if verdict is None:
                queue.append(link)
            else:
                refused.append(verdict)
    return fetched, refused


def test_an_endless_calendar_with_month_and_day_views_costs_two_budgets() -> None:
    fetched, refused = crawl_calendar(make_guard(), max_fetches=20_000)
    # every month and day page the guard admitted was fetched, then nothing was left:
    # 1000 month pages and 1000 day pages (its two templates), not the 46 000 pages
    # back to 1900
    assert fetched == 2 * BUDGET
    reasons = {verdict.detail.split(" has ")[0] for verdict in refused}
    assert reasons == {
        "template '/calendar/{y}/{m}/'",
        "template '/calendar/{y}/{m}/{d}/'",
        # the future-years rule still cuts the forward direction first
        "year 2029 in path segment '2029' is more than 2 years after 2026",
    }


# ------------------------------------------------------------- spellings of a date

SMALL = 50  # the budget the hostile review used
MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August",
               "September", "October", "November", "December"]  # fmt: skip


def unix(day: datetime.date) -> int:
    """Seconds from 1970-01-01 UTC to midnight UTC of ``day``."""
    return (day - datetime.date(1970, 1, 1)).days * 86_400


def every_day(start: datetime.date) -> Iterator[datetime.date]:
    """Every day from ``start`` back (to year 1, unlike :func:`days_back`)."""
    day = start
    while day > datetime.date.min:
        yield day
        day -= datetime.timedelta(days=1)


def days() -> Iterator[datetime.date]:
    """Every day from ``TODAY`` back."""
    return every_day(TODAY)


def weeks_back(start: datetime.date) -> Iterator[tuple[int, int]]:
    """ISO (year, week) from ``start``'s week back, one per week."""
    for day in itertools.islice(every_day(start), 0, None, 7):
        year, week, _ = day.isocalendar()
        yield year, week


def month_days(year: int, month: int) -> Iterator[datetime.date]:
    """The first day of each month from ``year``-``month`` back (to year 1)."""
    while year >= 1:
        yield datetime.date(year, month, 1)
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)


# (spelling, the pages of an endless calendar from a date back, their one template)
SPELLINGS: list[tuple[str, Callable[[], Iterator[str]], str]] = [
    # US dates in a query, raw and form-encoded; the ISO date with escaped separators
    ("us-query", lambda: (f"/day?date={d:%m/%d/%Y}" for d in days()),
     "/day?date={d}/{m}/{y}"),
    ("us-query-short", lambda: (f"/day?date={d.month}/{d.day}/{d.year}" for d in days()),
     "/day?date={d}/{m}/{y}"),
    ("us-form-encoded", lambda: (f"/day?date={d:%m%%2F%d%%2F%Y}" for d in days()),
     "/day?date={d}%2F{m}%2F{y}"),
    ("iso-%2F", lambda: (f"/day?date={d:%Y%%2F%m%%2F%d}" for d in days()),
     "/day?date={y}%2F{m}%2F{d}"),
    ("iso-%2f", lambda: (f"/day?date={d:%Y%%2f%m%%2f%d}" for d in days()),
     "/day?date={y}%2F{m}%2F{d}"),
    ("iso-%2D", lambda: (f"/day?date={d:%Y%%2D%m%%2D%d}" for d in days()),
     "/day?date={y}-{m}-{d}"),
    ("iso-%2D-path", lambda: (f"/cal/{d:%Y%%2D%m%%2D%d}/" for d in days()),
     "/cal/{y}-{m}-{d}/"),
    ("iso-%2F-path", lambda: (f"/cal/{d:%Y%%2F%m%%2F%d}/" for d in days()),
     "/cal/{y}%2F{m}%2F{d}/"),
    ("iso-time-escaped-space", lambda: (f"/at?when={d:%Y-%m-%d}%2010%3A00" for d in days()),
     "/at?when={y}-{m}-{d}%20{t}"),
    # day or month first in a path segment
    ("dmy-dots", lambda: (f"/cal/{d:%d.%m.%Y}/" for d in days()), "/cal/{d}.{m}.{y}/"),
    ("dmy-dashes", lambda: (f"/cal/{d:%d-%m-%Y}/" for d in days()), "/cal/{d}-{m}-{y}/"),
    ("mdy-segments", lambda: (f"/cal/{d:%m/%d/%Y}/" for d in days()), "/cal/{d}/{m}/{y}/"),
    ("my-dash", lambda: (f"/cal/{d:%m-%Y}/" for d in month_days(2026, 5)), "/cal/{m}-{y}/"),
    ("my-segments", lambda: (f"/cal/{d:%m/%Y}/" for d in month_days(2026, 5)), "/cal/{m}/{y}/"),
    # English month names and abbreviations, any case
    ("y-month-name", lambda: (f"/cal/{d.year}-{MONTH_NAMES[d.month - 1][:3]}/"
                              for d in month_days(2026, 5)), "/cal/{y}-{m}/"),
    ("month-name-y", lambda: (f"/cal/{MONTH_NAMES[d.month - 1]}-{d.year}/"
                              for d in month_days(2026, 5)), "/cal/{m}-{y}/"),
    ("y/month-name", lambda: (f"/cal/{d.year}/{MONTH_NAMES[d.month - 1].lower()}/"
                              for d in month_days(2026, 5)), "/cal/{y}/{m}/"),
    ("y/MON", lambda: (f"/cal/{d.year}/{MONTH_NAMES[d.month - 1][:3].upper()}/"
                       for d in month_days(2026, 5)), "/cal/{y}/{m}/"),
    ("d-mon-y", lambda: (f"/e/{d.day:02d}-{MONTH_NAMES[d.month - 1][:3]}-{d.year}.html"
                         for d in days()), "/e/{d}-{m}-{y}.html"),
    ("split-month-name", lambda: (f"/cal?year={d.year}&month={MONTH_NAMES[d.month - 1]}"
                                  for d in month_days(2026, 5)), "/cal?month={m}&year={y}"),
    # ISO 8601 weeks
    ("week-query", lambda: (f"/agenda?week={y}-W{w:02d}" for y, w in weeks_back(TODAY)),
     "/agenda?week={y}-{w}"),
    ("week-path", lambda: (f"/agenda/{y}/W{w}/" for y, w in weeks_back(TODAY)), "/agenda/{y}/{w}/"),
    ("week-basic", lambda: (f"/agenda/{y}W{w:02d}" for y, w in weeks_back(TODAY)),
     "/agenda/{y}{w}"),
    ("week-split", lambda: (f"/agenda?y={y}&week={w}" for y, w in weeks_back(TODAY)),
     "/agenda?week={w}&y={y}"),
    # Unix timestamps under time names (seconds and milliseconds)
    ("ts", lambda: (f"/feed?ts={unix(d)}" for d in days()), "/feed?ts={ts}"),
    ("time", lambda: (f"/feed?time={unix(d)}" for d in days()), "/feed?time={ts}"),
    ("timestamp", lambda: (f"/feed?timestamp={unix(d)}" for d in days()),
     "/feed?timestamp={ts}"),
    ("t", lambda: (f"/feed?t={unix(d)}" for d in days()), "/feed?t={ts}"),
    ("ms", lambda: (f"/feed?since_time={unix(d)}000" for d in days()),
     "/feed?since_time={ts}"),
    # before 1900: a month or a day beside the year reads years 1000-2199
    ("pre-1900-months", lambda: (f"/cal/{d:%Y/%m}/" for d in month_days(1899, 12)),
     "/cal/{y}/{m}/"),
    ("year-1000-months", lambda: (f"/cal/{d.year}-{d.month:02d}/" for d in month_days(1040, 12)),
     "/cal/{y}-{m}/"),
    ("pre-1900-days", lambda: (f"/day?date={d:%Y-%m-%d}"
                               for d in every_day(datetime.date(1850, 5, 1))),
     "/day?date={y}-{m}-{d}"),
    ("pre-1900-split", lambda: (f"/cal?y={d.year}&m={d.month}" for d in month_days(1899, 12)),
     "/cal?m={m}&y={y}"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pages", "template"),
    [(pages, template) for _, pages, template in SPELLINGS],
    ids=[name for name, _, _ in SPELLINGS],
)
def test_an_endless_calendar_in_any_spelling_is_cut_at_the_budget(
    pages: Callable[[], Iterator[str]], template: str
) -> None:
    """Each spelling made 550+ requests against a budget of 50 before it was read
    (the walk is 600 dates; the old code admitted them all)."""
    walk = [urls.clean("http://cal.example" + page) for page in itertools.islice(pages(), 600)]
    assert len(set(walk)) == 600
    admitted, verdict = cut_at(make_guard(calendar_max_dates=SMALL), iter(walk))
    assert admitted == SMALL
    assert verdict == Verdict(
        BlockReason.CALENDAR, f"template {template!r} has 50 dates (calendar_max_dates 50)"
    )


# ------------------------------------------------------------- real archives


def archive_urls() -> Iterator[str]:
    """A blog's archive over 20 years: year, month and (for two years) day pages,
    five posts a month under dated paths, paged month archives and feeds."""
    site = "https://blog.example.org"
    for year in range(2006, 2026):
        yield f"{site}/{year}/"
        for month in range(1, 13):
            yield f"{site}/{year}/{month:02d}/"
            yield f"{site}/{year}/{month:02d}/page/2/"
            yield f"{site}/{year}/{month:02d}/feed/"
            yield f"{site}/archive?month={year}-{month:02d}"
            for post in range(5):
                yield f"{site}/{year}/{month:02d}/post-{year}-{month}-{post}/"
                yield f"{site}/{year}/{month:02d}/post-{year}-{month}-{post}/amp/"
    for day in days_back(datetime.date(2025, 12, 31)):
        if day.year < 2024:
            break
        yield f"{site}/{day:%Y/%m/%d}/"
        yield f"{site}/news?date={day:%Y%m%d}"


# ------------------------------------------- calendars walked into the past (issue #22)


def walk(guard: TrapGuard, pages: list[str]) -> tuple[int, Verdict | None]:
    """Admit ``pages`` in order, each found on the one before it (the first is a seed),
    as a crawl following "previous month" links does, until the first refusal."""
    found_on: str | None = None
    for admitted, url in enumerate(pages):
        verdict = guard.admit(url, admitted, admitted, found_on=found_on)
        if verdict is not None:
            return admitted, verdict
        found_on = url
    return len(pages), None


def test_a_walked_calendar_stops_ten_years_before_the_newest_date() -> None:
    pages = [f"http://cal.example/cal/{y:04d}-{m:02d}/" for y, m in months_back(TODAY)]
    admitted, verdict = walk(make_guard(), pages)
    assert admitted == 5 + 10 * 12  # 2026-05 back to 2016-01; the old code went on to 1943
    assert pages[admitted] == "http://cal.example/cal/2015-12/"
    assert verdict == Verdict(
        BlockReason.CALENDAR,
        "2015 is more than 10 years before 2026, the newest date on host 'cal.example', "
        "walking template '/cal/{y}-{m}/' (calendar_max_years 10)",
    )


@pytest.mark.parametrize("years", [0, 3, 25])
def test_the_walk_follows_calendar_max_years(years: int) -> None:
    pages = [f"http://a.example/e?month={y:04d}-{m:02d}" for y, m in months_back(TODAY)]
    assert walk(make_guard(calendar_max_years=years), pages)[0] == 5 + years * 12


def test_the_walk_counts_back_from_the_newest_date_on_the_host() -> None:
    """The newest date is the host's, from any template; another host's does not count."""
    guard = make_guard()
    assert guard.admit("http://a.example/news/2028-01-05.html", 1, 0) is None  # in the window
    assert guard.admit("http://b.example/news/1990-01-05.html", 1, 0) is None
    pages = [f"http://a.example/cal/{y}/{m}/" for y, m in months_back(TODAY)]
    assert walk(guard, pages)[0] == 5 + 8 * 12  # back to 2018-01: 10 years before 2028


def test_an_archive_linked_from_its_index_is_admitted_however_old() -> None:
    """Fifteen years of monthly archives, each found on the blog's home page (or on a
    post, a page of another template), are all admitted; found only on each other
    they are cut at ten years."""
    months = list(months_back(TODAY))[: 15 * 12]
    archive = [f"http://blog.example/{y}/{m:02d}/" for y, m in months]
    guard = make_guard()
    assert [u for u in archive if guard.admit(u, 1, 0, found_on="http://blog.example/")] == []
    posts = make_guard()
    for y, m in months:
        post = f"http://blog.example/{y}/{m:02d}/a-post.html"
        assert posts.admit(f"http://blog.example/{y}/{m:02d}/", 2, 0, found_on=post) is None
    assert walk(make_guard(), archive)[0] == 5 + 10 * 12


def test_a_year_alone_is_no_walk() -> None:
    """``/p/2029`` is an id as often as a year: ids found on each other are admitted
    (the future window still applies to them)."""
    pages = [f"http://a.example/p/{n}" for n in range(2028, 1899, -1)]
    assert walk(make_guard(), pages) == (len(pages), None)


def test_observe_gives_a_resumed_crawl_its_newest_date_back() -> None:
    guard = make_guard()
    guard.observe(key_of("http://a.example/cal/2026-05/"))
    found_on = "http://a.example/cal/2016-02/"
    assert guard.admit("http://a.example/cal/2016-01/", 1, 0, found_on=found_on) is None
    found_on = "http://a.example/cal/2016-01/"
    verdict = guard.admit("http://a.example/cal/2015-12/", 1, 0, found_on=found_on)
    assert verdict is not None and "calendar_max_years 10" in verdict.detail


@pytest.mark.parametrize(
    ("url", "years"),
    [
        ("http://a.com/cal/2019/05/", [2019]),
        ("http://a.com/cal/2019-05-01.html", [2019]),
        ("http://a.com/05/2019/", [2019]),
        ("http://a.com/May-2019/", [2019]),
        ("http://a.com/2019/W18/", [2019]),
        ("http://a.com/e?from=2019-05&to=2021-01", [2019, 2021]),
        ("http://a.com/2019/", []),
        ("http://a.com/p/2029", []),
        ("http://a.com/news?date=20190501", []),
        ("http://a.com/about", []),
    ],
)
def test_month_years(url: str, years: list[int]) -> None:
    assert date_templates.month_years(key_of(url)) == years


def test_no_newest_year_memory_until_a_date_with_a_month() -> None:
    guard = make_guard()
    assert guard.admit("http://a.example/2019/", 1, 0) is None
    assert guard._newest.nbytes() == 0
    assert guard.admit("http://a.example/2019/05/", 1, 0) is None
    assert guard._newest.nbytes() == 3 * 2**18 * 2


def test_a_real_archive_is_not_refused() -> None:
    guard = make_guard()
    pages = list(archive_urls())
    assert len(pages) == 20 * (1 + 12 * 14) + 2 * 731
    refused = [(url, v) for url in pages if (v := guard.admit(url, 1, 0)) is not None]
    assert refused == []


def test_blog_posts_have_their_own_templates() -> None:
    guard = make_guard(calendar_max_dates=3)
    posts = [f"http://b.example/{y}/{m:02d}/post-{y}-{m}/" for y, m in months_back(TODAY)]
    assert all(guard.admit(url, 1, 0) is None for url in posts[:600])


def test_each_host_and_template_has_its_own_budget() -> None:
    guard = make_guard(calendar_max_dates=5)
    shapes = [
        "http://a.example/cal/{y}/{m:02d}/",
        "http://b.example/cal/{y}/{m:02d}/",
        "http://a.example:8080/cal/{y}/{m:02d}/",
        "http://a.example/cal/{y}/{m:02d}/?view=week",
        "http://a.example/agenda/{y}/{m:02d}/",
    ]
    for shape in shapes:
        pages = (shape.format(y=y, m=m) for y, m in months_back(TODAY))
        assert cut_at(guard, pages)[0] == 5, shape


def test_http_and_https_share_a_template() -> None:
    guard = make_guard(calendar_max_dates=4)
    for index, (y, m) in enumerate(list(months_back(TODAY))[:4]):
        scheme = "https" if index % 2 else "http"
        assert guard.admit(f"{scheme}://a.example/cal/{y}/{m}/", 1, 0) is None
    verdict = guard.admit("http://A.example:80/cal/2020/1/", 1, 0)
    assert verdict is not None and verdict.reason is BlockReason.CALENDAR


def test_only_admitted_urls_count() -> None:
    guard = make_guard(calendar_max_dates=3, max_depth=5, max_page_param=10)
    # refused by an earlier rule: not counted
    assert guard.admit("http://a.example/cal/2020/01/", 6, 0) is not None
    assert guard.admit("http://a.example/cal/2020/02/?page=11", 1, 0) is not None
    assert guard.admit("http://a.example/cal/2020/03/?page=11", 1, 0) is not None
    pages = (f"http://a.example/cal/{y}/{m:02d}/" for y, m in months_back(TODAY))
    assert cut_at(guard, pages)[0] == 3


def test_the_key_argument_gives_the_same_verdicts() -> None:
    with_key, without = make_guard(calendar_max_dates=50), make_guard(calendar_max_dates=50)
    for y, m in list(months_back(TODAY))[:80]:
        for url in (
            f"http://a.example/cal/{y}/{m}/;jsessionid=A{y}{m}",
            f"http://a.example/e?utm_source=x&month={y}-{m:02d}",
            f"http://a.example/e?m={m}&y={y}&sid=S{m}",
        ):
            settings = with_key.settings
            assert with_key.admit(url, 1, 0, key=key_of(url, settings)) == without.admit(url, 1, 0)


def test_session_ids_do_not_split_a_template() -> None:
    # the template is read from the dedupe key: a fresh session id per link is one template
    guard = make_guard(calendar_max_dates=10)
    pages = (
        f"http://a.example/cal/{y}-{m:02d};jsessionid={y * 100 + m:X}?sid={m}"
        for y, m in months_back(TODAY)
    )
    assert cut_at(guard, pages)[0] == 10


# -------------------------------------------------------- many calendars on one host


def venue_months(venues: int) -> Iterator[str]:
    """A site with an endless month calendar per venue, crawled breadth-first: every
    venue's current month, then every venue's previous month, and so on."""
    for year, month in months_back(TODAY):
        for venue in range(venues):
            yield f"http://venues.example/venue/{venue}/cal/{year}/{month:02d}/"


def admitted_of(guard: TrapGuard, pages: Iterator[str]) -> tuple[int, Counter[str]]:
    """Admit every page; how many were admitted and the refusals by their detail's
    first words (``template`` or ``host``)."""
    admitted, refused = 0, Counter[str]()
    for url in pages:
        verdict = guard.admit(url, 1, admitted)
        if verdict is None:
            admitted += 1
        else:
            refused[verdict.detail.split(" ")[0]] += 1
    return admitted, refused


def test_a_host_with_thirty_calendars_is_bounded_as_a_whole() -> None:
    """30 venues, each its own template: per template alone they cost 30 x the budget
    (1500 here, 30 000 at the defaults); the host's total stops them at
    ``calendar_max_dates_per_host`` past the first date of each template."""
    guard = make_guard(calendar_max_dates=50, calendar_max_dates_per_host=200)
    # 60 months a venue: past each template's budget of 50, as an endless calendar goes
    admitted, refused = admitted_of(guard, itertools.islice(venue_months(30), 30 * 60))
    assert admitted == 200 + 30
    assert refused == {"host": 30 * 60 - 230}
    verdict = guard.admit("http://venues.example/venue/7/cal/1901/01/", 1, 0)
    assert verdict == Verdict(
        BlockReason.CALENDAR,
        "host 'venues.example' has 200 dates past the first of their templates "
        "(calendar_max_dates_per_host 200)",
    )


def test_thirty_calendars_at_the_defaults_cost_five_thousand_requests() -> None:
    # 200 months a venue: 5 970 past the first dates, under each template's budget of
    # 1 000 (so that alone would admit all 6 000) and over the host's 5 000
    admitted, refused = admitted_of(make_guard(), itertools.islice(venue_months(30), 30 * 200))
    assert admitted == 5000 + 30  # not 30 x 200, let alone 30 x 1000
    assert refused == {"host": 30 * 200 - 5030}


def test_few_calendars_on_a_host_each_get_their_whole_budget() -> None:
    # 4 templates of 50: 196 past their first dates, below the host's 200
    guard = make_guard(calendar_max_dates=50, calendar_max_dates_per_host=200)
    admitted, refused = admitted_of(guard, itertools.islice(venue_months(4), 4 * 600))
    assert admitted == 4 * 50
    assert refused == {"template": 4 * 550}


def test_a_template_with_one_date_never_counts_towards_its_host() -> None:
    """Blog posts (one date each) pass whatever the host's total; once the total is
    full, a new template still gets its first date, not a second one."""
    guard = make_guard(calendar_max_dates=50, calendar_max_dates_per_host=10)
    posts = [f"http://b.example/{y}/{m:02d}/post-{y}-{m}/" for y, m in months_back(TODAY)]
    assert all(guard.admit(url, 1, 0) is None for url in posts)  # 1517 posts
    calendar = [f"http://b.example/cal/{y}/{m:02d}/" for y, m in months_back(TODAY)]
    assert cut_at(guard, iter(calendar))[0] == 11  # its first date and 10 more
    assert guard.admit("http://b.example/2019/05/another-post/", 1, 0) is None
    assert guard.admit("http://b.example/agenda/2019/05/", 1, 0) is None
    verdict = guard.admit("http://b.example/agenda/2019/04/", 1, 0)
    assert verdict is not None and verdict.detail.startswith("host 'b.example' has 10 dates")
    # another host has its own total
    assert guard.admit("http://c.example/agenda/2019/04/", 1, 0) is None
    assert guard.admit("http://c.example/agenda/2019/03/", 1, 0) is None


def test_the_real_archive_is_well_below_the_host_budget() -> None:
    """The 20-year archive has 2435 URLs past the first date of their templates (its
    year, month, paged-month, feed and query-month pages, and two years of day pages):
    half of the default ``calendar_max_dates_per_host`` (5000)."""
    templates = Counter(
        template
        for url in archive_urls()
        if (template := date_templates.date_template(key_of(url))) is not None
    )
    past_first = sum(count - 1 for count in templates.values())
    assert past_first == 2435
    assert CrawlConfig().calendar_max_dates_per_host == 5000
    guard = make_guard()
    assert all(guard.admit(url, 1, 0) is None for url in archive_urls())
    assert guard._dates.count("//blog.example.org") == past_first


def test_observe_gives_the_host_total_back() -> None:
    pages = list(itertools.islice(venue_months(30), 30 * 60))
    first = make_guard(calendar_max_dates=50, calendar_max_dates_per_host=200)
    assert admitted_of(first, iter(pages[:150])) == (150, Counter())
    resumed = make_guard(calendar_max_dates=50, calendar_max_dates_per_host=200)
    for url in pages[:150]:
        resumed.observe(key_of(url))
    admitted, refused = admitted_of(resumed, iter(pages[150:]))
    assert admitted == 200 + 30 - 150
    assert refused == {"host": 30 * 60 - 230}


@pytest.mark.parametrize("value", [0, 65_536])
def test_the_host_budget_is_checked(value: int) -> None:
    with pytest.raises(ConfigError, match="calendar_max_dates_per_host"):
        build_config({"calendar_max_dates_per_host": value})


# ----------------------------------------------------------------------- resume


def test_observe_gives_a_resumed_crawl_its_counts_back() -> None:
    months = [f"http://cal.example/calendar/{y:04d}/{m:02d}/" for y, m in months_back(TODAY)]
    first = make_guard()
    assert cut_at(first, iter(months[:600])) == (600, None)
    # the next run: the engine observes every frontier key, then crawls on
    resumed = make_guard()
    for url in months[:600]:
        resumed.observe(key_of(url))
    admitted, verdict = cut_at(resumed, iter(months[600:]))
    assert admitted == BUDGET - 600
    assert verdict is not None and verdict.detail.startswith("template '/calendar/{y}/{m}/'")


def test_observe_counts_past_the_budget_without_refusing() -> None:
    guard = make_guard(calendar_max_dates=5)
    for y, m in list(months_back(TODAY))[:8]:
        guard.observe(key_of(f"http://a.example/c/{y}/{m}/"))  # a budget lowered on resume
    verdict = guard.admit("http://a.example/c/1999/1/", 1, 0)
    assert verdict == Verdict(
        BlockReason.CALENDAR, "template '/c/{y}/{m}/' has 8 dates (calendar_max_dates 5)"
    )


# ------------------------------------------------------------------ memory bound


def resident_bytes() -> int:
    """This process's resident memory (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_memory_is_bounded_with_a_million_templates() -> None:
    guard = make_guard()
    guard.observe("http://h0.example/2019/")  # the counters are taken at the first date
    before = resident_bytes()
    started = time.perf_counter()
    for index in range(1_000_000):
        if index == 100_000:
            tenth = time.perf_counter() - started
        guard.observe(f"http://h{index % 997}.example/p{index}/2019/05/")
    took = time.perf_counter() - started
    grown = resident_bytes() - before
    # a dict of a million templates would hold 106 MB; the counters hold 1.5 MiB
    # whatever is counted (the slack is the allocator's)
    assert guard._dates.nbytes() == 3 * 2**18 * 2
    assert grown < 8 * 2**20, grown
    assert took <= MAX_GROWTH * 10 * tenth  # n against 10n: a template costs what the first did
    # the counters still cut a calendar at the budget (a count is never below the
    # true one; a cell shared with the million one-URL templates adds a few at most)
    pages = (f"http://h1.example/cal/{y:04d}/{m:02d}/" for y, m in months_back(TODAY))
    admitted, verdict = cut_at(guard, pages)
    assert BUDGET - 30 <= admitted <= BUDGET
    assert verdict is not None and verdict.reason is BlockReason.CALENDAR


def test_no_memory_until_a_dated_url() -> None:
    guard = make_guard()
    assert guard.admit("http://a.example/products/12345/?id=20190501", 1, 0) is None
    guard.observe("http://a.example/about")
    assert guard._dates.nbytes() == 0
    assert guard.admit("http://a.example/2019/05/", 1, 0) is None
    assert guard._dates.nbytes() == 3 * 2**18 * 2


# --------------------------------------------------------------- date templates

TEMPLATE_CASES: list[tuple[str, str | None]] = [
    # path: split over segments, whole in one segment, with extensions
    ("http://a.com/cal/2019/05/", "//a.com/cal/{y}/{m}/"),
    ("http://a.com/cal/2019/5", "//a.com/cal/{y}/{m}"),
    ("http://a.com/events/2019/05/01.html", "//a.com/events/{y}/{m}/{d}.html"),
    ("http://a.com/cal/2019-05-01/", "//a.com/cal/{y}-{m}-{d}/"),
    ("http://a.com/cal/2019_05/", "//a.com/cal/{y}_{m}/"),
    ("http://a.com/x/2019.05.01.htm", "//a.com/x/{y}.{m}.{d}.htm"),
    ("http://a.com/2019.html", "//a.com/{y}.html"),
    ("http://a.com/2019/", "//a.com/{y}/"),
    ("http://a.com/archive/1999/12/31/index.html", "//a.com/archive/{y}/{m}/{d}/index.html"),
    ("http://a.com/2019/05/my-post", "//a.com/{y}/{m}/my-post"),
    ("http://a.com/2019/13/", "//a.com/{y}/13/"),  # not a month
    ("http://a.com/2019/05/32/", "//a.com/{y}/{m}/32/"),  # not a day
    ("http://a.com/2019-13-01/", None),
    ("http://a.com/2019-05/01/", "//a.com/{y}-{m}/01/"),
    ("http://a.com:8080/2019/01/", "//a.com:8080/{y}/{m}/"),
    ("http://a.com/cal/2019/05/;jsessionid=0A1B", "//a.com/cal/{y}/{m}/"),
    # not dates in a path
    ("http://a.com/page/2019/", None),
    ("http://a.com/Page/2019/2020/", "//a.com/Page/2019/{y}/"),
    ("http://a.com/p/12345/", None),
    ("http://a.com/p/20190501/", None),  # compact dates in a path look like ids
    ("http://a.com/p/1899/", None),
    ("http://a.com/p/2200/", None),
    ("http://a.com/model-2019/", None),
    ("http://a.com/2019x/", None),
    ("http://2019.example/", None),
    # query: whole dates, compact dates under date names, split dates
    ("http://a.com/cal?month=2019-05", "//a.com/cal?month={y}-{m}"),
    ("http://a.com/cal?d=2019/05/01&view=day", "//a.com/cal?d={y}/{m}/{d}&view=day"),
    ("http://a.com/c?start=2019-05-01T10%3A00", "//a.com/c?start={y}-{m}-{d}T{t}"),
    ("http://a.com/cal?date=20190501", "//a.com/cal?date={y}{m}{d}"),
    ("http://a.com/cal?StartDate=201905", "//a.com/cal?StartDate={y}{m}"),
    ("http://a.com/cal?d=20190501&id=20190501", "//a.com/cal?d={y}{m}{d}&id=20190501"),
    ("http://a.com/cal?id=20190501", None),
    ("http://a.com/cal?date=20191301", None),
    ("http://a.com/cal?y=2019&m=5", "//a.com/cal?m={m}&y={y}"),
    ("http://a.com/c?Year=2019&Month=05&day=01&x=", "//a.com/c?Month={m}&Year={y}&day={d}&x="),
    ("http://a.com/cal?year=2019", "//a.com/cal?year={y}"),
    ("http://a.com/cal?m=5&d=1", None),  # a month and a day without a year
    ("http://a.com/cal?year=1899&m=5", "//a.com/cal?m={m}&year={y}"),  # 1000-2199 with a month
    ("http://a.com/cal?year=0999&m=5", None),
    ("http://a.com/cal?year=1899", None),  # a year alone is 1900-2199
    ("http://a.com/cal?x=10&y=2019", "//a.com/cal?x=10&y={y}"),
    ("http://a.com/list?page=2019", None),
    ("http://a.com/cal?d=2019%2F05", "//a.com/cal?d={y}%2F{m}"),  # an escaped separator
    # path and query together
    ("http://a.com/cal/2019/?month=2019-05", "//a.com/cal/{y}/?month={y}-{m}"),
    # day or month before the year, month names, weeks (issue #10 item 4, review)
    ("http://a.com/cal?date=05/01/2019", "//a.com/cal?date={d}/{m}/{y}"),
    ("http://a.com/cal?date=5/1/2019", "//a.com/cal?date={d}/{m}/{y}"),
    ("http://a.com/cal?date=05%2F01%2F2019", "//a.com/cal?date={d}%2F{m}%2F{y}"),
    ("http://a.com/cal?date=05%2f01%2f2019", "//a.com/cal?date={d}%2F{m}%2F{y}"),
    ("http://a.com/cal?date=2019%2f05%2f01", "//a.com/cal?date={y}%2F{m}%2F{d}"),
    ("http://a.com/cal?date=2019%2D05%2D01", "//a.com/cal?date={y}-{m}-{d}"),
    ("http://a.com/cal?date=01.05.2019", "//a.com/cal?date={d}.{m}.{y}"),
    ("http://a.com/cal?m=05-2019", "//a.com/cal?m={m}-{y}"),
    ("http://a.com/cal?m=5/2019", "//a.com/cal?m={m}/{y}"),
    ("http://a.com/cal?d=2019-05-01+10:00", "//a.com/cal?d={y}-{m}-{d}+{t}"),
    ("http://a.com/cal/01.05.2019/", "//a.com/cal/{d}.{m}.{y}/"),
    ("http://a.com/cal/01-05-2019/", "//a.com/cal/{d}-{m}-{y}/"),
    ("http://a.com/cal/05-01-2019.html", "//a.com/cal/{d}-{m}-{y}.html"),
    ("http://a.com/cal/05-2019/", "//a.com/cal/{m}-{y}/"),
    ("http://a.com/cal/05/2019/", "//a.com/cal/{m}/{y}/"),
    ("http://a.com/cal/12/05/2019/", "//a.com/cal/{d}/{m}/{y}/"),
    ("http://a.com/cal/2019-May/", "//a.com/cal/{y}-{m}/"),
    ("http://a.com/cal/May-2019/", "//a.com/cal/{m}-{y}/"),
    ("http://a.com/cal/2019/May/", "//a.com/cal/{y}/{m}/"),
    ("http://a.com/cal/2019/september/01/", "//a.com/cal/{y}/{m}/{d}/"),
    ("http://a.com/cal/SEPT-2019/", "//a.com/cal/{m}-{y}/"),
    ("http://a.com/cal/may/2019/", "//a.com/cal/{m}/{y}/"),
    ("http://a.com/cal/01-May-2019/", "//a.com/cal/{d}-{m}-{y}/"),
    ("http://a.com/cal/May-01-2019/", "//a.com/cal/{m}-{d}-{y}/"),
    ("http://a.com/cal?y=2019&m=Dec", "//a.com/cal?m={m}&y={y}"),
    ("http://a.com/cal?week=2019-W18", "//a.com/cal?week={y}-{w}"),
    ("http://a.com/cal?week=2019W18", "//a.com/cal?week={y}{w}"),
    ("http://a.com/cal/2019/W18/", "//a.com/cal/{y}/{w}/"),
    ("http://a.com/cal/2019-w01/", "//a.com/cal/{y}-{w}/"),
    ("http://a.com/cal?year=2019&wk=18", "//a.com/cal?wk={w}&year={y}"),
    ("http://a.com/cal/2019/W54/", "//a.com/cal/{y}/W54/"),  # no week 54
    # Unix timestamps under time names
    ("http://a.com/e?ts=1556668800", "//a.com/e?ts={ts}"),
    ("http://a.com/e?time=1556668800", "//a.com/e?time={ts}"),
    ("http://a.com/e?timestamp=1556668800", "//a.com/e?timestamp={ts}"),
    ("http://a.com/e?t=1556668800", "//a.com/e?t={ts}"),
    ("http://a.com/e?_=1556668800123", "//a.com/e?_={ts}"),
    ("http://a.com/e?StartTime=1556668800", "//a.com/e?StartTime={ts}"),
    ("http://a.com/e?date=1556668800", "//a.com/e?date={ts}"),
    # years before 1900 beside a month; a year alone stays 1900-2199
    ("http://a.com/cal/1850/05/", "//a.com/cal/{y}/{m}/"),
    ("http://a.com/cal/1000-01-01/", "//a.com/cal/{y}-{m}-{d}/"),
    ("http://a.com/cal?m=1850-05", "//a.com/cal?m={y}-{m}"),
    ("http://a.com/cal/05/1850/", "//a.com/cal/{m}/{y}/"),
    ("http://a.com/cal/1850/", None),
    ("http://a.com/cal/0999/05/", None),
    ("http://a.com/cal/999/05/", None),
    ("http://a.com/cal?date=0999-05-01", None),
    # near misses: ids, versions, pages, phone numbers, prices, words
    ("http://a.com/products/1234/", None),
    ("http://a.com/item/1234-5678/", None),
    ("http://a.com/v1.05.2019", None),
    ("http://a.com/release/1.05.2019/", None),  # a day before the year has two digits
    ("http://a.com/release/4.2.1999/", None),
    ("http://a.com/dl?v=1.2.1234", None),
    ("http://a.com/dl?v=v1.05.2019", None),
    ("http://a.com/cal/5-2019/", None),
    ("http://a.com/page/05/2019/", "//a.com/page/05/{y}/"),  # 05 is a page number
    ("http://a.com/tel/555-1234/", None),
    ("http://a.com/tel/0171-1234567/", None),
    ("http://a.com/call?phone=%2B1-555-123-4567", None),
    ("http://a.com/call?phone=1-800-555-2019", None),
    ("http://a.com/shop?price=1999.99", None),
    ("http://a.com/shop?price=19.99&qty=2019", None),
    ("http://a.com/shop?id=1556668800", None),  # a 10-digit id is no timestamp
    ("http://a.com/e?t=155666880", None),  # 9 digits: 1974, not read
    ("http://a.com/e?t=42", None),
    ("http://a.com/e?ts=3556668800", None),  # after 2065
    ("http://a.com/e?ts=1556668800x", None),
    ("http://a.com/may/", None),
    ("http://a.com/2019-march-madness/", None),
    ("http://a.com/mayday-2019/", None),
    ("http://a.com/cal?m=May", None),  # a month without a year
    ("http://a.com/cal?week=W18", None),
]  # fmt: skip


@pytest.mark.parametrize(("url", "template"), TEMPLATE_CASES)
def test_date_template(url: str, template: str | None) -> None:
    assert date_templates.date_template(key_of(urls.clean(url))) == template


@pytest.mark.parametrize("url", [url for url, template in TEMPLATE_CASES if template])
def test_dated_urls_reach_the_budget_step(url: str) -> None:
    # the cheap pre-check of admit() never skips a URL whose key has a template
    guard = make_guard(calendar_max_dates=1, max_page_param=100_000)
    assert guard.admit(urls.clean(url), 1, 0) is None
    verdict = guard.admit(urls.clean(url), 1, 0)
    assert verdict is not None and verdict.detail.startswith("template "), verdict


SHAPES: list[Callable[[datetime.date], str]] = [
    lambda d: f"/cal/{d.year}/{d.month:02d}/",
    lambda d: f"/cal/{d.year}/{d.month}/{d.day}.html",
    lambda d: f"/e/{d:%Y-%m-%d}/list",
    lambda d: f"/e/{d:%Y_%m}",
    lambda d: f"/e?when={d:%Y-%m-%d}&cat=music",
    lambda d: f"/e?cat=music&date={d:%Y%m%d}",
    lambda d: f"/e?y={d.year}&m={d.month}&d={d.day}&view=day",
    lambda d: f"/e/{d.year}/?month={d:%Y-%m}",
]


@given(
    shape=st.sampled_from(SHAPES),
    first=st.dates(datetime.date(1900, 1, 1), datetime.date(2199, 12, 31)),
    second=st.dates(datetime.date(1900, 1, 1), datetime.date(2199, 12, 31)),
    noise=st.lists(st.sampled_from(["utm_source=x", "sid=1", "ref=a", "PHPSESSID=9"]), max_size=3),
)
def test_urls_that_differ_only_in_their_dates_share_a_template(
    shape: Callable[[datetime.date], str],
    first: datetime.date,
    second: datetime.date,
    noise: list[str],
) -> None:
    one = urls.clean("http://Cal.Example" + shape(first))
    other = urls.clean("http://cal.example:80" + shape(second))
    if noise:  # stripped parameters do not make a new template
        other += ("&" if "?" in other else "?") + "&".join(noise)
    template = date_templates.date_template(key_of(one))
    assert template is not None
    assert template == date_templates.date_template(key_of(other))
    assert not any(str(year) in template for year in (first.year, second.year))


def iso_week(day: datetime.date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


FIRST, LAST = datetime.date(1001, 1, 1), datetime.date(2199, 12, 1)
EPOCHS = datetime.date(2001, 9, 10), datetime.date(2065, 1, 23)
MORE_SHAPES: list[tuple[Callable[[datetime.date], str], tuple[datetime.date, datetime.date]]] = [
    (lambda d: f"/cal/{d.year}/{d.month:02d}/", (FIRST, LAST)),
    (lambda d: f"/cal/{d:%m}/{d.year}/", (FIRST, LAST)),
    (lambda d: f"/cal/{d:%d}/{d:%m}/{d.year}/", (FIRST, LAST)),
    (lambda d: f"/cal/{d:%d}.{d:%m}.{d.year}/", (FIRST, LAST)),
    (lambda d: f"/cal/{d:%d}-{d:%m}-{d.year}.html", (FIRST, LAST)),
    (lambda d: f"/cal/{d:%m}-{d.year}/", (FIRST, LAST)),
    (lambda d: f"/cal/{d.year}-{MONTH_NAMES[d.month - 1]}/", (FIRST, LAST)),
    (lambda d: f"/cal/{MONTH_NAMES[d.month - 1][:3]}-{d.year}/", (FIRST, LAST)),
    (lambda d: f"/cal/{d.year}/{MONTH_NAMES[d.month - 1].lower()}/{d.day}/", (FIRST, LAST)),
    (lambda d: f"/cal/{d.day}-{MONTH_NAMES[d.month - 1].upper()}-{d.year}/", (FIRST, LAST)),
    (lambda d: f"/day?date={d.month}/{d.day}/{d.year}", (FIRST, LAST)),
    (lambda d: f"/day?date={d:%m}%2F{d:%d}%2F{d.year}&view=day", (FIRST, LAST)),
    (lambda d: f"/day?date={d.year}%2f{d:%m}%2f{d:%d}", (FIRST, LAST)),
    (lambda d: f"/day?date={d.year}%2D{d:%m}%2D{d:%d}", (FIRST, LAST)),
    (lambda d: f"/cal?year={d.year}&month={MONTH_NAMES[d.month - 1]}", (FIRST, LAST)),
    (lambda d: f"/w?week={iso_week(d)}", (FIRST, LAST)),
    (lambda d: f"/w/{iso_week(d).replace('-', '/')}/", (FIRST, LAST)),
    (lambda d: f"/feed?ts={unix(d)}", EPOCHS),
    (lambda d: f"/feed?cat=1&_={unix(d)}123", EPOCHS),
]


@st.composite
def shaped_dates(
    draw: st.DrawFn,
) -> tuple[Callable[[datetime.date], str], datetime.date, datetime.date]:
    shape, (low, high) = draw(st.sampled_from(MORE_SHAPES))
    return shape, draw(st.dates(low, high)), draw(st.dates(low, high))


@given(case=shaped_dates())
def test_every_spelling_of_a_calendar_has_one_template(
    case: tuple[Callable[[datetime.date], str], datetime.date, datetime.date],
) -> None:
    shape, first, second = case
    one, other = (date_templates.date_template(key_of(urls.clean("http://a.example" + shape(d))))
                  for d in (first, second))  # fmt: skip
    assert one is not None
    assert one == other
    assert not any(str(year) in one for year in (first.year, second.year))


def test_hostile_dated_urls_are_cheap() -> None:
    guard = make_guard(max_url_length=10_000_000, max_path_depth=10**6, max_segment_repeats=10**6)
    hostile: list[tuple[Callable[[int], str], int]] = [
        (lambda n: "http://a.com/" + "2019/05/" * n, 10_000),
        (lambda n: "http://a.com/" + "x/2019-05-01/" * n, 10_000),
        (lambda n: "http://a.com/?" + "y=2019&m=5&" * n, 10_000),
        (lambda n: "http://a.com/?" + "date=20190501&" * n, 10_000),
        (lambda n: "http://a.com/?" + "when=2019-05-01T" + "9" * n, 50_000),
        (lambda n: "http://a.com/" + "05/2019/" * n, 10_000),
        (lambda n: "http://a.com/" + "1999/" * n, 10_000),
        (lambda n: "http://a.com/" + "01-May-2019/" * n, 6_000),
        (lambda n: "http://a.com/?" + "ts=1556668800&" * n, 5_000),
        (lambda n: "http://a.com/?" + "date=05%2F01%2F2019&" * n, 4_000),
    ]

    def admit(url: str) -> None:
        guard.admit(url, 0, 0)
        guard.observe(key_of(url))

    # Each URL is about 100 KB: linear work takes a few ms, quadratic work (a regex
    # that backtracks over the whole text at each position) minutes: n against 10n
    # tells them apart on any machine (at 1 MB the test took 46 s of the suite).
    for make, n in hostile:
        assert_linear(make, admit, n)


PATH_PIECES = ["cal", "page", "Page", "2019", "05", "5", "31", "13", "2019-05", "2019_05_01",
               "2019.05.01.html", "2019.html", "01.html", "20190501", "1899", "2019;jsessionid=A1",
               "05;sid=2", "x", "%32019", "", "05-2019", "01.05.2019", "May-2019", "2019-May",
               "may", "W18", "1850", "2019%2D05", "2019%2F05", "1.2.1234",
               "%30%35-2019"]  # fmt: skip
QUERY_PIECES = ["month=2019-05", "d=2019/05/01", "date=20190501", "id=20190501", "y=2019",
                "Year=2019", "m=5", "d=1", "start=2019-05-01T10:00", "page=2", "sid=2019-05",
                "utm_source=2019-05", "x=", "v=1.2", "date=05/01/2019", "date=05%2F01%2F2019",
                "date=2019%2D05%2D01", "date=%32019-05", "week=2019-W18", "ts=1556668800",
                "t=1556668800", "id=1556668800", "m=May", "y=1850", "w=18"]  # fmt: skip


@example(path=["page", "", "2019", ""], query=[])
@given(
    path=st.lists(st.sampled_from(PATH_PIECES), max_size=6),
    query=st.lists(st.sampled_from(QUERY_PIECES), max_size=4),
)
def test_admit_counts_every_url_whose_key_has_a_template(path: list[str], query: list[str]) -> None:
    """Every admitted URL whose key has a template is counted, however its date is
    written (escaped digits and separators included): with a budget of one, the same
    template is then full."""
    url = urls.clean(
        "http://a.example/" + "/".join(path) + ("?" + "&".join(query) if query else "")
    )
    key = key_of(url)
    template = date_templates.date_template(key)
    guard = make_guard(calendar_max_dates=1, max_page_param=10**9, max_segment_repeats=10)
    assert guard.admit(url, 1, 0, key=key) is None
    again = guard.admit(url, 1, 0, key=key)
    if template is None:
        assert again is None
    else:
        assert again is not None and again.reason is BlockReason.CALENDAR, (url, template)
