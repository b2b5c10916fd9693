"""Politeness at the engine level on virtual time (issue #10 items 7-10, issue #11 item 3).

Every test crawls a ``FakeSite`` (``tests/fakesite.py``) on a ``VirtualTimeLoop``
(``tests/virtualtime.py``) and checks the site's request log, whose times are the
engine's clock: spacing of every pair of requests to a host or an address, robots.txt
counted as a request, the backoff sequence on 429/503 (seeded jitter), Retry-After in
each form, the learnt delay, parking, retries of transient and deterministic failures
and their time bound, and slow hosts beside a good one.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from fakesite import (
    HANG,
    Fail,
    FakeSite,
    Reply,
    Request,
    bad_request,
    bad_status_line,
    crawl,
    drip,
    gaps,
    http_date,
    links_page,
    lost,
    overlaps,
    oversized_header,
    redirect,
    refused,
    short_body,
    stacked_codings,
    status,
    text,
    tls_refused,
)

A = "http://127.0.0.1"
B = "http://127.0.0.2:8080"
#: The most time (s) the engine may add to a wait it was told (its timers' slack).
SLACK = 0.005


def chain(site: FakeSite, origin: str, pages: int, *, after_s: float = 0.0) -> list[str]:
    """``/``, ``/p1`` ... ``/p{pages - 1}`` on ``origin``, each linking to the next;
    their URLs."""
    found = [f"{origin}/"] + [f"{origin}/p{n}" for n in range(1, pages)]
    for here, there in zip(found, [*found[1:], None], strict=True):
        site.add(here, links_page(*([there] if there else []), after_s=after_s))
    return found


def assert_spaced(log: list[Request], delay_s: float) -> None:
    """Every request of ``log`` starts at least ``delay_s`` after the end of every
    request before it (each pair checked), and no later than ``SLACK`` after
    ``delay_s`` from the end of the one just before it."""
    for i, later in enumerate(log):
        for earlier in log[:i]:
            assert earlier.end is not None
            assert later.start >= earlier.end + delay_s, (earlier, later)
    for gap in gaps(log):
        assert delay_s <= gap <= delay_s + SLACK, gaps(log)


def backoff_waits(
    seed: int, attempts: int, base_s: float = 1.0, max_s: float = 60.0
) -> list[float]:
    """The backoff waits ``Politeness`` draws from ``random.Random(seed)``: ``b =
    min(max_s, base_s 2^(n-1))`` plus uniform jitter in ``[0, b/2]``, n = 1..attempts."""
    rng = random.Random(seed)
    waits = []
    for n in range(1, attempts + 1):
        b = min(max_s, base_s * 2 ** (n - 1))
        waits.append(b + rng.uniform(0.0, b / 2))
    return waits


# ------------------------------------------------------------------ spacing


def test_two_fetches_to_one_host_are_never_closer_than_delay_ms(tmp_path: Path) -> None:
    site = FakeSite()
    chain(site, A, 6, after_s=0.25)
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=1000)
    log = site.of(A)
    assert [r.target for r in log] == ["/robots.txt", "/", "/p1", "/p2", "/p3", "/p4", "/p5"]
    assert log[0].start == c.started  # robots.txt first, at once
    assert_spaced(log, 1.0)
    assert c.result.outcome == "finished"


@pytest.mark.parametrize(("delay_ms", "crawl_delay", "spacing_s"), [(1000, 3, 3.0), (2500, 1, 2.5)])
def test_the_spacing_is_the_larger_of_delay_ms_and_crawl_delay(
    tmp_path: Path, delay_ms: int, crawl_delay: int, spacing_s: float
) -> None:
    site = FakeSite()
    site.add(A + "/robots.txt", text(f"User-agent: *\nCrawl-delay: {crawl_delay}\n"))
    chain(site, A, 4, after_s=0.1)
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=delay_ms)
    log = site.of(A)
    assert len(log) == 5
    assert_spaced(log, spacing_s)
    assert c.value("SELECT crawl_delay_ms FROM hosts") == crawl_delay * 1000


def test_the_adaptive_delay_follows_slow_responses(tmp_path: Path) -> None:
    """adaptive_delay_factor 2 and 0.8 s responses: 1.6 s, above delay_ms (0.5 s)."""
    site = FakeSite()
    chain(site, A, 4, after_s=0.8)
    crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=500, adaptive_delay_factor=2.0)
    pages = site.of(A)[1:]  # robots.txt took no time: the first page is 0.5 s after it
    assert site.of(A)[1].start - site.of(A)[0].start == pytest.approx(0.5, abs=SLACK)
    assert_spaced(pages, 1.6)


def test_a_slow_hosts_long_adaptive_delay_is_said_once(tmp_path: Path) -> None:
    """Answers of 3 s at adaptive_delay_factor 2 space A's fetches 6 s apart (over
    SLOW_DELAY_S): the log says so once, with the keys, where a crawl waiting on it
    looked stuck (issue #25 trial 20). B's 0.5 s answers (a 1 s delay) say nothing."""
    site = FakeSite()
    chain(site, A, 4, after_s=3.0)
    chain(site, B, 4, after_s=0.5)
    c = crawl(site, [A + "/", B + "/"], tmp_path / "c.db", delay_ms=500,
              adaptive_delay_factor=2.0)  # fmt: skip
    assert_spaced(site.of(A)[1:], 6.0)
    said = [line.split(" ", 1)[1] for line in c.engine.snapshot().log if "slow answers" in line]
    assert said == [
        "127.0.0.1: slow answers: 6 s between its fetches now (2 x its last fetch's 3.0 s:"
        " adaptive_delay_factor, up to max_delay_ms = 30000)"
    ]


def test_robots_txt_counts_as_a_request(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/robots.txt", Reply(200, (("Content-Type", "text/plain"),), b"", after_s=0.4))
    chain(site, A, 2)
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=1000)
    robots, first, second = site.of(A)
    assert robots.target == "/robots.txt" and robots.end == c.started + 0.4
    assert 1.0 <= gaps([robots, first])[0] <= 1.0 + SLACK
    assert_spaced([robots, first, second], 1.0)


def test_robots_txt_redirect_hops_wait_for_the_host_they_go_to(tmp_path: Path) -> None:
    """robots.txt of A answers 301 twice, the last hop on B: every request to each
    host, hops included, is delay_ms after the one before it."""
    site = FakeSite()
    site.add(A + "/robots.txt", redirect("/robots-1.txt"))
    site.add(A + "/robots-1.txt", redirect(B + "/shared-robots.txt"))
    site.add(B + "/shared-robots.txt", text("User-agent: *\nDisallow: /nothing\n"))
    for origin, leaf in ((A, "/x"), (B, "/y")):
        site.add(origin + "/", links_page(leaf))
        site.add(origin + leaf, links_page())
    c = crawl(site, [A + "/", B + "/"], tmp_path / "c.db", delay_ms=300)
    assert [r.target for r in site.of(A)] == ["/robots.txt", "/robots-1.txt", "/", "/x"]
    assert sorted(r.target for r in site.of(B)) == ["/", "/robots.txt", "/shared-robots.txt", "/y"]
    for origin in (A, B):
        assert_spaced(site.of(origin), 0.3)
    assert dict(c.rows("SELECT host, robots_status FROM hosts")) == {
        "127.0.0.1": "ok",
        "127.0.0.2:8080": "missing",
    }


def test_two_hosts_on_one_address_share_the_per_ip_limit(tmp_path: Path) -> None:
    site = FakeSite()
    for name in ("a.test", "b.test"):
        site.name(name, "127.0.0.9")
        chain(site, f"http://{name}", 3)
    crawl(site, ["http://a.test/", "http://b.test/"], tmp_path / "c.db", ip_delay_ms=500)
    log = site.requests
    assert len(log) == 8 and {r.origin for r in log} == {"http://a.test", "http://b.test"}
    assert_spaced(log, 0.5)  # every pair of requests to 127.0.0.9, across both hosts


def test_without_a_per_ip_limit_two_hosts_on_one_address_go_in_parallel(tmp_path: Path) -> None:
    site = FakeSite()
    for name in ("a.test", "b.test"):
        site.name(name, "127.0.0.9")
        chain(site, f"http://{name}", 3, after_s=0.2)
    c = crawl(site, ["http://a.test/", "http://b.test/"], tmp_path / "c.db",
              delay_ms=500, ip_delay_ms=0)  # fmt: skip
    assert [r.start for r in site.requests[:2]] == [c.started, c.started]  # both robots.txt
    assert overlaps(site.requests)
    for origin in ("http://a.test", "http://b.test"):
        assert_spaced(site.of(origin), 0.5)


def test_a_busy_hosts_sitemap_takes_its_next_turn_not_its_last(tmp_path: Path) -> None:
    """A sitemap (a side request) waits for its host's turn before the host's pages:
    they took every turn, the sitemap came after the last of them (issue #25 trial 6:
    71 s after robots.txt named it), and a capped crawl never read its URLs. It is
    spaced like a page."""
    site = FakeSite()
    pages = [f"{A}/p{i}" for i in range(12)]
    site.add(A + "/robots.txt", text(f"User-agent: *\nAllow: /\nSitemap: {A}/sitemap.xml\n"))
    site.add(A + "/", links_page(*pages))
    for page in pages:
        site.add(page, links_page())
    urlset = (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{A}/listed</loc></url></urlset>"
    )
    site.add(
        A + "/sitemap.xml", Reply(200, (("Content-Type", "application/xml"),), urlset.encode())
    )
    site.add(A + "/listed", links_page())
    crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=500, sitemaps=True)
    log = site.of(A)
    assert [r.target for r in log[:3]] == ["/robots.txt", "/sitemap.xml", "/"]
    assert {r.target for r in log[3:]} == {*(f"/p{i}" for i in range(12)), "/listed"}
    assert_spaced(log, 0.5)


def test_max_depth_0_reads_no_sitemap(tmp_path: Path) -> None:
    """A sitemap's URLs are at depth 1: under ``--max-depth 0`` each would be refused,
    so none is asked for (issue #25 trial 8: three requests, every URL then refused)."""
    site = FakeSite()
    site.add(A + "/robots.txt", text(f"User-agent: *\nSitemap: {A}/sitemap.xml\n"))
    site.add(A + "/", links_page(A + "/a"))
    crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=100, sitemaps=True, max_depth=0)
    assert [r.target for r in site.of(A)] == ["/robots.txt", "/"]


def test_a_sitemap_on_a_host_outside_the_scope_is_not_fetched(tmp_path: Path) -> None:
    """A's robots.txt names a sitemap on B (a cross-submit), outside the crawl's scope:
    no request goes to B, robots.txt or sitemap, as none goes to a link there (issue
    #25 trial 18: with --scope host both went); its ``sitemaps`` row says why."""
    site = FakeSite()
    site.add(A + "/robots.txt", text(f"User-agent: *\nAllow: /\nSitemap: {B}/sitemap.xml\n"))
    site.add(A + "/", links_page(A + "/a"))
    site.add(A + "/a", links_page())
    urlset = (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{A}/listed</loc></url></urlset>"
    )
    site.add(
        B + "/sitemap.xml", Reply(200, (("Content-Type", "application/xml"),), urlset.encode())
    )
    db = tmp_path / "c.db"
    crawl(site, [A + "/"], db, delay_ms=100, sitemaps=True, scope="host")
    assert site.of(B) == []
    assert [r.target for r in site.of(A)] == ["/robots.txt", "/", "/a"]
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT url, status, error FROM sitemaps").fetchall()
    assert rows == [
        (
            B + "/sitemap.xml",
            None,
            "scope: host '127.0.0.2:8080' is outside scope 'host' (seeds: 127.0.0.1)",
        )
    ]


def test_urls_refused_by_robots_txt_use_no_per_ip_slot(tmp_path: Path) -> None:
    """Two hosts on one address (per-IP limit 100 ms): 300 links of host A refused by
    robots.txt cost no request and no slot, so the crawl takes the time of its 10
    requests, not of 310."""
    site = FakeSite()
    site.name("a.test", "127.0.0.9")
    site.name("b.test", "127.0.0.9")
    site.add("http://a.test/robots.txt", text("User-agent: *\nDisallow: /private/\n"))
    private = [f"/private/{i}" for i in range(300)]
    site.add("http://a.test/", links_page(*private, "/ok"))
    site.add("http://a.test/ok", links_page())
    site.add("http://b.test/", links_page(*(f"/b{i}" for i in range(5))))
    for i in range(5):
        site.add(f"http://b.test/b{i}", links_page())
    c = crawl(site, ["http://a.test/", "http://b.test/"], tmp_path / "c.db", delay_ms=100)
    assert len(site.requests) == 10
    assert not [r for r in site.requests if r.target.startswith("/private/")]
    assert_spaced(site.requests, 0.1)
    assert c.ended - c.started <= 10 * (0.1 + SLACK)
    assert c.value("SELECT count(*) FROM blocked WHERE reason = 'robots'") == 300


# ---------------------------------------------------------------- robots.txt


def test_robots_txt_disallow_blocks_without_a_request(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/robots.txt", text("User-agent: crawldeck\nDisallow: /private\n\n"
                                     "User-agent: *\nDisallow: /\n"))  # fmt: skip
    site.add(A + "/", links_page("/private/a", "/public"))
    site.add(A + "/public", links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db")
    assert site.targets(A) == ["/", "/public"]  # our group, not the * group
    assert c.rows("SELECT url, reason FROM blocked") == [(A + "/private/a", "robots")]
    assert dict(c.rows("SELECT url, state FROM frontier"))[A + "/private/a"] == "blocked"


@pytest.mark.parametrize(
    ("robots", "on_failure", "fetched", "robots_status"),
    [
        (status(500), "allow", ["/", "/a"], "unreachable"),
        (lost(), "allow", ["/", "/a"], "unreachable"),
        (status(503), "disallow", [], "unreachable"),
        (status(404), "disallow", ["/", "/a"], "missing"),
        (status(403), "allow", ["/", "/a"], "missing"),
    ],
)
def test_robots_txt_failures_allow_or_block_as_robots_on_failure_says(
    tmp_path: Path, robots: Reply | Fail, on_failure: str, fetched: list[str], robots_status: str
) -> None:
    site = FakeSite()
    site.add(A + "/robots.txt", robots)
    site.add(A + "/", links_page("/a"))
    site.add(A + "/a", links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db", robots_on_failure=on_failure)
    assert site.targets(A) == fetched
    assert c.value("SELECT robots_status FROM hosts") == robots_status
    if not fetched:
        assert c.rows("SELECT reason FROM blocked") == [("robots_unavailable",)]


def test_robots_txt_answering_429_backs_the_host_off_for_its_retry_after(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/robots.txt", status(429, Retry_After="30"))
    chain(site, A, 2)
    crawl(site, [A + "/"], tmp_path / "c.db")
    gap = gaps(site.of(A))[0]
    assert 30.0 <= gap <= 30.0 + SLACK


def test_robots_txt_past_its_redirect_limit_allows_all(tmp_path: Path) -> None:
    site = FakeSite()
    for n in range(8):
        site.add(A + ("/robots.txt" if n == 0 else f"/r{n}.txt"), redirect(f"/r{n + 1}.txt"))
    chain(site, A, 2)
    c = crawl(site, [A + "/"], tmp_path / "c.db", robots_max_redirects=3, delay_ms=200)
    targets = [r.target for r in site.of(A)]
    assert targets == ["/robots.txt", "/r1.txt", "/r2.txt", "/r3.txt", "/", "/p1"]
    assert_spaced(site.of(A), 0.2)
    assert c.value("SELECT robots_status FROM hosts") == "redirect_limit"


# ----------------------------------------------------------------- backoff


@pytest.mark.parametrize("code", [429, 503])
def test_the_backoff_on_429_and_503_doubles_with_seeded_jitter(tmp_path: Path, code: int) -> None:
    site = FakeSite()
    site.add(A + "/", *[status(code)] * 4, links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db", rng_seed=7, delay_ms=100,
              backoff_base_ms=1000, backoff_max_ms=60_000)  # fmt: skip
    tries = [r for r in site.of(A) if r.target == "/"]
    assert [r.status for r in tries] == [code] * 4 + [200]
    expected = backoff_waits(7, 4)
    for gap, wait in zip(gaps(tries), expected, strict=True):
        assert wait <= gap <= wait + SLACK, (gaps(tries), expected)
    assert c.value("SELECT status FROM pages") == 200
    assert c.value("SELECT attempts FROM frontier") == 4


def test_the_backoff_is_capped_at_backoff_max_ms(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/", *[status(503)] * 5, links_page())
    crawl(site, [A + "/"], tmp_path / "c.db", rng_seed=3, backoff_base_ms=1000,
          backoff_max_ms=4000)  # fmt: skip
    tries = [r for r in site.of(A) if r.target == "/"]
    expected = backoff_waits(3, 5, max_s=4.0)  # 1, 2, 4, 4, 4 s before jitter
    for gap, wait in zip(gaps(tries), expected, strict=True):
        assert wait <= gap <= wait + SLACK
    assert max(gaps(tries)) <= 6.0 + SLACK  # 4 s and half of it as jitter at most


def _retry_after(value: str, date: str | None = None) -> Reply:
    """A 429 with ``Retry-After: value`` (and ``Date: date``)."""
    headers = [("Retry-After", value)] + ([("Date", date)] if date is not None else [])
    return Reply(429, tuple(headers))


def test_retry_after_in_seconds_is_honoured(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/", _retry_after("30"), links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db")
    (gap,) = gaps(site.of(A)[1:])
    assert 30.0 <= gap <= 30.0 + SLACK
    assert c.value("SELECT status FROM pages") == 200


def test_retry_after_as_an_http_date_is_measured_against_the_responses_date(
    tmp_path: Path,
) -> None:
    """The server's clock is an hour behind ours: Retry-After = its Date + 60 s means
    60 s (against our clock it would be in the past, so no wait)."""

    def behind(request: Request) -> Reply:
        server_now = request.start - 3600
        return _retry_after(http_date(server_now + 60), http_date(server_now))

    site = FakeSite()
    site.add(A + "/", behind, links_page())
    crawl(site, [A + "/"], tmp_path / "c.db")
    (gap,) = gaps(site.of(A)[1:])
    assert 60.0 <= gap <= 60.0 + SLACK


def test_retry_after_as_an_http_date_without_date_is_measured_against_our_clock(
    tmp_path: Path,
) -> None:
    def ahead(request: Request) -> Reply:
        return _retry_after(http_date(request.start + 45))

    site = FakeSite()
    site.add(A + "/", ahead, links_page())
    crawl(site, [A + "/"], tmp_path / "c.db")
    first, second = site.of(A)[1:]
    until = float(int(first.start + 45))  # an HTTP-date has whole seconds
    assert until <= second.start <= until + SLACK


@pytest.mark.parametrize(
    ("value", "date"),
    [
        ("past", "now"),  # a date before the response's Date: no wait beyond the backoff
        ("soon", None),
        ("-5", None),
        ("1.5", None),
        ("", None),
        ("Mon, 32 Foo 2023 99:99:99 GMT", None),
    ],
)
def test_a_past_or_junk_retry_after_leaves_the_backoff_alone(
    tmp_path: Path, value: str, date: str | None
) -> None:
    def answer(request: Request) -> Reply:
        if value == "past":
            return _retry_after(http_date(request.start - 600), http_date(request.start))
        return _retry_after(value, date)

    site = FakeSite()
    site.add(A + "/", answer, links_page())
    crawl(site, [A + "/"], tmp_path / "c.db", rng_seed=11)
    (gap,) = gaps(site.of(A)[1:])
    (wait,) = backoff_waits(11, 1)
    assert wait <= gap <= wait + SLACK


def test_a_retry_after_is_cut_at_retry_after_max_s(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/", _retry_after("100000"), links_page())
    crawl(site, [A + "/"], tmp_path / "c.db", retry_after_max_s=120)
    (gap,) = gaps(site.of(A)[1:])
    assert 120.0 <= gap <= 120.0 + SLACK


def test_a_retry_after_beyond_demote_after_s_parks_the_host_at_once(tmp_path: Path) -> None:
    """Retry-After: 7200 (honoured up to retry_after_max_s, 1 h): parked after one
    request, the other URL left queued; the rerun waits out the hour it was asked."""
    site = FakeSite()
    site.add(A + "/", _retry_after("7200"), links_page())
    site.add(A + "/other", links_page())
    db = tmp_path / "c.db"
    c = crawl(site, [A + "/", A + "/other"], db, demote_after_s=3600)
    assert site.targets(A) == ["/"]
    assert c.value("SELECT state FROM hosts") == "parked"
    assert dict(c.rows("SELECT url, state FROM frontier")) == {
        A + "/": "failed",  # its answer parked the host: a rerun tries it again
        A + "/other": "queued",
    }
    assert c.ended - c.started < 1.0  # it did not wait the hour out
    parked_at = site.of(A)[-1].end
    assert parked_at is not None
    again = crawl(site, [], db, start=c.ended + 10)
    assert site.targets(A) == ["/", "/", "/other"]
    assert site.of(A)[-2].start >= parked_at + 3600.0  # the backoff_until it left
    assert again.result.outcome == "finished"
    assert {s for (s,) in again.rows("SELECT state FROM frontier")} == {"done"}


# ------------------------------------------------------------ learnt delay


def test_a_success_steps_the_learnt_delay_down_by_a_tenth_of_delay_ms(tmp_path: Path) -> None:
    """One 429 at delay_ms 1 s: the learnt delay is 2 s, then 1.9, 1.8, ... per success
    (AIMD), never below delay_ms, and it is saved in hosts.learnt_delay_ms."""
    site = FakeSite()
    urls = chain(site, A, 6)
    site.add(urls[0], status(429, Retry_After="0"), links_page(urls[1]))
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=1000)
    log = site.of(A)
    assert [r.status for r in log] == [404, 429, 200, 200, 200, 200, 200, 200]
    expected = [1.0, 2.0, 1.9, 1.8, 1.7, 1.6, 1.5]
    for gap, want in zip(gaps(log), expected, strict=True):
        assert want - 1e-6 <= gap <= want + SLACK, gaps(log)
    assert c.value("SELECT learnt_delay_ms FROM hosts") == pytest.approx(1400.0)


def test_a_learnt_rate_limit_keeps_429s_under_ten_percent(tmp_path: Path) -> None:
    """The server answers 429 whenever two requests come closer than 2 s (start to
    start); delay_ms is 500 ms. Once learnt, under 10 % of the answers are 429."""
    answered: list[int] = []
    site = FakeSite()

    def limited(request: Request) -> Reply:
        earlier = [r.start for r in site.requests if r is not request]
        close = bool(earlier) and request.start - earlier[-1] < 2.0
        answered.append(429 if close else 200)
        if close:
            return status(429)
        n = int(request.target.rpartition("/")[2] or 0)
        return links_page(*([f"/p/{n + 1}"] if n < 60 else []))

    site.host(A, limited)
    site.add(A + "/robots.txt", status(404))
    c = crawl(site, [A + "/p/0"], tmp_path / "c.db", delay_ms=500, backoff_base_ms=500,
              backoff_max_ms=4000, max_retries=8, max_depth=100)  # fmt: skip
    steady = answered[10:]
    assert steady.count(429) / len(steady) < 0.10, answered
    assert c.value("SELECT count(*) FROM pages WHERE status = 200") == 61
    learnt = c.value("SELECT learnt_delay_ms FROM hosts")
    assert learnt is not None and learnt >= 1000.0  # it kept a rate limit above delay_ms


def test_a_host_answering_only_429_is_parked_after_park_after_backoffs(tmp_path: Path) -> None:
    site = FakeSite()
    site.host(A, lambda request: status(429, Retry_After="0"))
    chain(site, B, 2)
    c = crawl(site, [A + "/", A + "/other", B + "/"], tmp_path / "c.db", backoff_base_ms=10,
              backoff_max_ms=50, max_retries=100)  # fmt: skip
    # park_after_backoffs (robots.txt's 429 is the first), not max_retries + 1; a retry
    # waits behind its host's other URL
    assert site.targets(A) == ["/", "/other", "/", "/other", "/", "/other", "/"]
    assert dict(c.rows("SELECT host, state FROM hosts")) == {
        "127.0.0.1": "parked",
        "127.0.0.2:8080": "done",
    }
    assert c.rows("SELECT url, state FROM frontier WHERE host = '127.0.0.1' ORDER BY url") == [
        (A + "/", "failed"),
        (A + "/other", "queued"),  # left for the next run
    ]
    assert c.value("SELECT error FROM pages WHERE url = ?", A + "/") == "gave up after 4 tries"
    (row,) = [b for b in c.engine.snapshot().backoff if b.host == "127.0.0.1"]
    assert row.parked and row.attempts == 8 and row.last_status == 429


def test_one_url_always_answering_503_neither_holds_nor_parks_its_host(tmp_path: Path) -> None:
    """A retry waits behind its host's other URLs (issue #25: a trial's one page that
    always answered 503 was retried six times in a row, the host in backoff throughout,
    and a second run parked the host): the other pages' answers end each backoff."""
    site = FakeSite()
    pages = chain(site, A, 20)
    site.add(A + "/broken", status(503))
    c = crawl(site, [A + "/", A + "/broken"], tmp_path / "c.db", delay_ms=1000,
              backoff_base_ms=1000, max_retries=3, max_depth=100)  # fmt: skip
    targets = [t for t in site.targets(A) if t != "/robots.txt"]
    assert targets.count("/broken") == 4  # 1 + max_retries
    first, second = [i for i, t in enumerate(targets) if t == "/broken"][:2]
    assert second - first == len(pages)  # the retry waited behind every other page
    assert c.value("SELECT state FROM hosts") == "done"  # not parked
    assert c.value("SELECT count(*) FROM pages WHERE status = 200") == len(pages)
    assert c.value("SELECT error FROM pages WHERE url = ?", A + "/broken") == (
        "gave up after 4 tries"
    )
    # its first 503 doubled the learnt delay once; its retries' 503s, the URL's own
    # answer, did not double it again (issue #25: 200 ms became 6.4 s in six tries)
    learnt = c.value("SELECT learnt_delay_ms FROM hosts")
    assert learnt is None or learnt <= 2000.0, learnt


# ---------------------------------------------------------- failure kinds


def test_transient_failures_keep_their_retry_budget_and_back_off(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/", lost())
    c = crawl(site, [A + "/"], tmp_path / "c.db", rng_seed=5, max_retries=3)
    tries = site.of(A)[1:]
    assert [r.outcome for r in tries] == ["connection_lost"] * 4  # 1 + max_retries
    for gap, wait in zip(gaps(tries), backoff_waits(5, 3), strict=True):
        assert wait <= gap <= wait + SLACK
    error = c.value("SELECT error FROM pages")
    assert error.startswith("connection_lost: connection closed before the response head")
    assert c.rows("SELECT state, attempts FROM frontier") == [("failed", 3)]


def test_a_refused_host_that_never_answered_is_tried_once_and_parked(tmp_path: Path) -> None:
    """A wrong port or a server not running (robots.txt refused too): one try, the
    failure recorded, the host parked with its other URLs left queued; the other host
    is crawled as usual (curl and wget give up on a refused connection at once)."""
    site = FakeSite()
    site.host(A, refused())
    site.add(B + "/", links_page())
    c = crawl(site, [A + "/", A + "/other", B + "/"], tmp_path / "c.db", max_retries=5)
    assert site.targets(A) == ["/"]  # not 1 + max_retries tries
    assert c.value("SELECT error FROM pages WHERE url = ?", A + "/").startswith("connect: ")
    assert c.rows("SELECT url, state FROM frontier WHERE host = '127.0.0.1' ORDER BY url") == [
        (A + "/", "failed"),
        (A + "/other", "queued"),  # left for the next run
    ]
    assert c.value("SELECT state FROM hosts WHERE host = '127.0.0.1'") == "parked"
    assert site.targets(B) == ["/"]


def test_retry_refused_retries_a_refused_host_as_a_timeout(tmp_path: Path) -> None:
    site = FakeSite()
    site.host(A, refused())
    c = crawl(site, [A + "/"], tmp_path / "c.db", max_retries=3, retry_refused=True,
              backoff_base_ms=10, backoff_max_ms=50)  # fmt: skip
    assert site.targets(A) == ["/"] * 4  # 1 + max_retries
    assert c.rows("SELECT state, attempts FROM frontier") == [("failed", 3)]


def test_a_refused_connection_to_a_host_that_answered_is_retried(tmp_path: Path) -> None:
    """robots.txt answered (404): the host is up, a refusal now is a restart: retried."""
    site = FakeSite()
    site.add(A + "/", refused(), refused(), links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db", max_retries=3, backoff_base_ms=10,
              backoff_max_ms=50)  # fmt: skip
    assert site.targets(A) == ["/"] * 3
    assert c.value("SELECT status FROM pages WHERE url = ?", A + "/") == 200


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (bad_status_line(), "protocol"),
        (oversized_header(), "protocol"),
        (short_body(), "protocol"),
        (stacked_codings(), "protocol"),
        (tls_refused(), "tls"),
        (bad_request(), "bad_request"),
    ],
)
def test_deterministic_failures_are_recorded_after_one_try_without_backoff(
    tmp_path: Path, answer: Reply | Fail, reason: str
) -> None:
    site = FakeSite()
    site.add(A + "/", links_page("/bad", "/next"))
    site.add(A + "/bad", answer)
    site.add(A + "/next", links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=200, max_retries=5)
    assert site.targets(A) == ["/", "/bad", "/next"]
    assert_spaced(site.of(A), 0.2)  # the host was not backed off
    error = c.value("SELECT error FROM pages WHERE url = ?", A + "/bad")
    assert error.startswith(f"{reason}: "), error
    assert c.value("SELECT attempts FROM frontier WHERE url = ?", A + "/bad") == 0
    assert c.value("SELECT backoff_attempts FROM hosts") == 0


def test_a_url_that_times_out_is_retried_until_total_timeout_ms_is_spent(tmp_path: Path) -> None:
    """read_timeout 1 s, total_timeout 3 s: three tries of 1 s each, then failed (not
    1 + max_retries tries)."""
    site = FakeSite()
    site.add(A + "/", HANG)
    c = crawl(site, [A + "/"], tmp_path / "c.db", rng_seed=2, read_timeout_ms=1000,
              total_timeout_ms=3000, max_retries=5)  # fmt: skip
    tries = site.of(A)[1:]
    assert [r.outcome for r in tries] == ["timeout"] * 3
    assert all(r.end is not None and r.end - r.start == pytest.approx(1.0) for r in tries)
    for gap, wait in zip(gaps(tries), backoff_waits(2, 2), strict=True):
        assert wait <= gap <= wait + SLACK
    assert c.value("SELECT error FROM pages").startswith("timeout: read timeout (1000 ms)")


def test_a_dripping_url_holds_its_host_for_total_timeout_ms_once(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/", drip(600.0))
    c = crawl(site, [A + "/"], tmp_path / "c.db", total_timeout_ms=1500, max_retries=5)
    (only,) = site.of(A)[1:]
    assert only.outcome == "timeout" and only.end is not None
    assert only.end - only.start == pytest.approx(1.5)
    assert c.value("SELECT error FROM pages").startswith("timeout: total time budget of 1500 ms")
    assert c.ended - c.started < 2.0


def test_a_name_that_does_not_exist_marks_its_host_dead_without_a_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    site = FakeSite()
    site.name("good.test", "127.0.0.5")
    site.add("http://good.test/", links_page("http://gone.test/x"))
    c = crawl(site, ["http://good.test/"], tmp_path / "c.db", scope="any")
    assert [r.origin for r in site.requests] == ["http://good.test"] * 2
    assert dict(c.rows("SELECT host, state FROM hosts"))["gone.test"] == "dead"
    assert c.rows("SELECT url, reason FROM blocked") == [("http://gone.test/x", "dns")]
    assert ("gone.test", "A") in site.dns_queries
    # the host named once, not "gone.test: gone.test: ..." (issue #25)
    said = [r.getMessage() for r in caplog.records if "marked dead" in r.getMessage()]
    assert said == ["gone.test: no such domain (NXDOMAIN); host marked dead"]


# --------------------------------------------------------------- slow hosts


def test_slow_hosts_do_not_starve_a_good_host(tmp_path: Path) -> None:
    """40 tarpit hosts (they never answer; read timeout 20 s) seeded before one good
    host, concurrency 16: the good host is crawled at its own pace long before any
    tarpit times out."""
    site = FakeSite()
    tarpits = [f"http://127.0.3.{i + 1}" for i in range(40)]
    for origin in tarpits:
        site.host(origin, HANG)
    good = "http://127.0.3.100"
    chain(site, good, 4)
    c = crawl(site, [t + "/" for t in tarpits] + [good + "/"], tmp_path / "c.db",
              concurrency=16, delay_ms=500, read_timeout_ms=20_000,
              total_timeout_ms=20_000, max_retries=0)  # fmt: skip
    log = site.of(good)
    assert [r.target for r in log] == ["/robots.txt", "/", "/p1", "/p2", "/p3"]
    # a fetch running 2 s stops counting against concurrency: 16 tarpits at 0 s, 16 at
    # 2 s, the last 8 and the good host at 4 s
    assert log[0].start - c.started <= 4.0 + SLACK
    assert_spaced(log, 0.5)
    last = log[-1].end
    assert last is not None and last - c.started < 20.0
    assert c.value("SELECT count(*) FROM pages WHERE status = 200") == 4
