"""Control of a crawl at the engine level on virtual time (issue #11 item 3): pause and
resume, stop mid-fetch (the URL stays queued), a resume from the same SQLite file that
refetches nothing, a rerun that retries what failed, snapshots on the virtual clock,
seeds added during a run, and bodies nobody needs (issue #10 items 11, 16, 18).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from fakesite import During, FakeSite, Reply, crawl, gaps, links_page, status, text

from crawldeck.core.crawl.engine import Engine
from crawldeck.core.crawl.snapshot import CrawlSnapshot
from crawldeck.core.records import to_iso_utc

A = "http://127.0.0.1"
B = "http://127.0.0.2"
SLACK = 0.005
#: In-flight fetches get this long after ``request_stop`` (README, "Stop").
STOP_GRACE_S = 5.0


def chain(site: FakeSite, origin: str, pages: int, *, after_s: float = 0.0) -> list[str]:
    """``/``, ``/p1`` ... on ``origin``, each linking to the next; their URLs."""
    found = [f"{origin}/"] + [f"{origin}/p{n}" for n in range(1, pages)]
    for here, there in zip(found, [*found[1:], None], strict=True):
        site.add(here, links_page(*([there] if there else []), after_s=after_s))
    return found


def test_nothing_is_dispatched_while_paused(tmp_path: Path) -> None:
    marks: dict[str, float] = {}
    states: list[str] = []

    async def pause_for_ten_seconds(engine: Engine) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(2.5)
        engine.pause()
        marks["paused"] = loop.time()
        await asyncio.sleep(10)
        states.append(engine.snapshot().state)
        assert engine.paused
        engine.resume()
        marks["resumed"] = loop.time()

    site = FakeSite()
    chain(site, A, 5)
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=1000, during=pause_for_ten_seconds)
    starts = [r.start for r in site.of(A)]
    assert not [t for t in starts if marks["paused"] <= t < marks["resumed"]]
    after = [t for t in starts if t >= marks["resumed"]]
    assert after and after[0] - marks["resumed"] <= SLACK  # the host was ready long since
    assert states == ["paused"]
    assert c.result.outcome == "finished" and c.result.counters.pages == 5


def sitemap_index_site(files: int) -> FakeSite:
    """Host A: robots.txt names ``/index.xml``, an index of ``files`` sitemaps
    ``/s0.xml`` ... each listing one page ``/listed0`` ...; ``/`` links nowhere."""
    xml = (("Content-Type", "application/xml"),)
    ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    names = [f"{A}/s{i}.xml" for i in range(files)]
    site = FakeSite()
    site.add(A + "/robots.txt", text(f"User-agent: *\nSitemap: {A}/index.xml\n"))
    index = "".join(f"<sitemap><loc>{f}</loc></sitemap>" for f in names)
    site.add(
        A + "/index.xml", Reply(200, xml, f"<sitemapindex {ns}>{index}</sitemapindex>".encode())
    )
    for i, name in enumerate(names):
        urlset = f"<urlset {ns}><url><loc>{A}/listed{i}</loc></url></urlset>"
        site.add(name, Reply(200, xml, urlset.encode()))
        site.add(f"{A}/listed{i}", links_page())
    site.add(A + "/", links_page())
    return site


def pause_mid_reading(then: Callable[[Engine], object], marks: dict[str, float]) -> During:
    """A ``during`` that pauses the crawl at 2.5 s (the second sitemap file waiting for
    its turn under a 1 s delay), then calls ``then(engine)`` 10 s later; the loop's times
    of both in ``marks`` (``paused``, ``then``)."""

    async def during(engine: Engine) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(2.5)
        engine.pause()
        marks["paused"] = loop.time()
        await asyncio.sleep(10)
        then(engine)
        marks["then"] = loop.time()

    return during


def test_a_pause_stops_sitemap_reading_too(tmp_path: Path) -> None:
    """Sitemaps are read in tasks of their own, beside the workers: a pause holds them
    as it holds the workers (no request of any kind starts while paused; the one in
    flight finishes), and the reading goes on at resume (issue #25 trial 12: a paused
    crawl went on reading a sitemap index, one file a second)."""
    marks: dict[str, float] = {}
    during = pause_mid_reading(Engine.resume, marks)
    site = sitemap_index_site(6)
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=1000, sitemaps=True, during=during)
    log = site.of(A)
    held = [r.target for r in log if marks["paused"] <= r.start < marks["then"]]
    assert held == []
    before = [r.target for r in log if r.start < marks["paused"]]
    assert before == ["/robots.txt", "/index.xml", "/s0.xml"]  # sitemaps take the turns
    assert {f"/s{i}.xml" for i in range(6)} <= set(site.targets(A))  # read on at resume
    assert c.result.outcome == "finished" and c.result.counters.pages == 7


def test_the_log_line_of_an_origins_sitemaps_counts_those_read_with_errors(
    tmp_path: Path,
) -> None:
    """An index of six sitemaps, one truncated, one HTML, one a 404: the log line counts
    the two read with errors by reason, as Scrapy logs each bad one (issue #25 trial 13: "7
    files read", the broken ones among them, and their reasons only in the export)."""
    site = sitemap_index_site(6)
    xml = (("Content-Type", "application/xml"),)
    site.add(f"{A}/s3.xml", Reply(200, xml, b"<urlset><url><loc>http://127.0.0.1/x"))
    site.add(f"{A}/s4.xml", Reply(200, (("Content-Type", "text/html"),), b"<html>hi</html>"))
    site.add(f"{A}/s5.xml", status(404))
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=100, sitemaps=True)
    lines = [line.split(" ", 1)[1] for line in c.engine.snapshot().log if "sitemaps of" in line]
    assert lines == [
        f"sitemaps of {A}: 6 files read (2 with errors: malformed 1, not_a_sitemap 1), "
        "3 URLs queued; 1 file not read (HTTP 404 1)"
    ]


def test_a_stop_while_a_paused_reading_waits_ends_the_run(tmp_path: Path) -> None:
    """A sitemap reading held by a pause does not keep a stopped run alive, and sends
    nothing more."""
    marks: dict[str, float] = {}
    during = pause_mid_reading(Engine.request_stop, marks)
    site = sitemap_index_site(6)
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=1000, sitemaps=True, during=during)
    assert c.result.outcome == "stopped"
    assert c.ended == marks["then"]  # nothing in flight: no grace period waited
    assert [r.target for r in site.of(A)] == ["/robots.txt", "/index.xml", "/s0.xml"]


def test_the_operators_commands_are_in_the_crawls_log(tmp_path: Path) -> None:
    """Pause, resume and a seed added during the run each get a line in the crawl's log
    (the console's Log tab, a headless run's output), as Heritrix logs an operator's
    actions (issue #25 trial 13: the Log tab said nothing of them)."""

    async def operate(engine: Engine) -> None:
        await asyncio.sleep(1.5)
        engine.pause()
        await asyncio.sleep(5)
        engine.resume()
        await engine.add_seeds_live([B + "/", "mailto:x@y"])

    site = FakeSite()
    chain(site, A, 3)
    site.add(B + "/", links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=1000, during=operate)
    lines = [line.split(" ", 1)[1] for line in c.engine.snapshot().log]
    said = [line for line in lines if line.startswith(("paused", "resumed", "seed"))]
    assert said == ["paused: fetches in flight finish", "resumed", f"seed added: {B}/"]


def test_a_pause_lets_the_fetch_in_flight_finish(tmp_path: Path) -> None:
    async def pause_mid_fetch(engine: Engine) -> None:
        await asyncio.sleep(2.0)  # the slow page started at 1 s and takes 3 s
        engine.pause()
        await asyncio.sleep(20)
        engine.resume()

    site = FakeSite()
    site.add(A + "/", links_page("/next", after_s=3.0))
    site.add(A + "/next", links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=1000, during=pause_mid_fetch)
    slow, after = site.of(A)[1:]
    assert slow.outcome == "200" and slow.end == c.started + 1.0 + 3.0 + 0.001
    assert after.start >= c.started + 22.0
    assert c.value("SELECT status FROM pages WHERE url = ?", A + "/") == 200


def test_a_stop_cuts_a_long_fetch_after_the_grace_period_and_keeps_its_url_queued(
    tmp_path: Path,
) -> None:
    stop_at: list[float] = []

    async def stop_during_the_slow_fetch(engine: Engine) -> None:
        await asyncio.sleep(3.0)
        engine.request_stop()
        stop_at.append(asyncio.get_running_loop().time())

    site = FakeSite()
    site.add(A + "/", links_page("/slow", "/after"))
    site.add(A + "/slow", links_page(after_s=60.0), links_page())
    site.add(A + "/after", links_page())
    db = tmp_path / "c.db"
    c = crawl(site, [A + "/"], db, read_timeout_ms=120_000, total_timeout_ms=120_000,
              during=stop_during_the_slow_fetch)  # fmt: skip
    assert c.result.outcome == "stopped"
    cut = site.of(A)[-1]
    assert cut.target == "/slow" and cut.outcome == "cancelled"
    assert cut.end == stop_at[0] + STOP_GRACE_S
    states = dict(c.rows("SELECT url, state FROM frontier"))
    assert states == {A + "/": "done", A + "/slow": "queued", A + "/after": "queued"}
    # the summary's "queued (left)" counts the cut one (issue #25 trial 10: it said 0)
    assert c.result.counters.queued == c.engine.snapshot().counters.queued == 2
    assert c.value("SELECT state FROM hosts") == "queued"
    assert c.value("SELECT status FROM runs") == "stopped"
    # the next run fetches the cut URL again and nothing it had done
    again = crawl(site, [A + "/"], db, start=c.ended + 60)
    assert again.result.outcome == "finished"
    assert Counter(site.targets(A)) == {"/": 1, "/slow": 2, "/after": 1}
    assert {s for (s,) in again.rows("SELECT state FROM frontier")} == {"done"}


def test_a_fetch_that_ends_within_the_grace_period_is_recorded(tmp_path: Path) -> None:
    async def stop_at_two_seconds(engine: Engine) -> None:
        await asyncio.sleep(2.0)
        engine.request_stop()

    site = FakeSite()
    site.add(A + "/", links_page("/x", after_s=3.0))
    c = crawl(site, [A + "/"], tmp_path / "c.db", during=stop_at_two_seconds)
    assert c.result.outcome == "stopped"
    assert site.targets(A) == ["/"]  # nothing new dispatched after the stop
    assert c.rows("SELECT url, status FROM pages") == [(A + "/", 200)]
    assert dict(c.rows("SELECT url, state FROM frontier")) == {A + "/": "done", A + "/x": "queued"}
    assert c.ended - c.started == 3.0  # the fetch ended, the crawl with it


def test_a_page_cap_reached_with_nothing_left_is_finished(tmp_path: Path) -> None:
    """``max_pages`` reached by the last URL there was, and a rerun of that finished
    crawl with the same cap, end ``finished``: nothing was left, there is no cap to
    raise (issue #25: a rerun said its --max-pages was reached, to go on with 600)."""
    site = FakeSite()
    chain(site, A, 3)
    db = tmp_path / "c.db"
    first = crawl(site, [A + "/"], db, max_pages=3)
    assert first.result.outcome == "finished"
    again = crawl(site, [A + "/"], db, start=first.ended + 100, max_pages=3)
    assert again.result.outcome == "finished"
    assert site.targets(A) == ["/", "/p1", "/p2"]  # nothing fetched again
    capped = crawl(FakeSite(), [A + "/"], tmp_path / "d.db", max_pages=1)
    assert capped.result.outcome == "finished"  # the seed alone, answered 404: nothing left
    chain(site, "http://127.0.0.2", 3)
    cut = crawl(site, ["http://127.0.0.2/"], tmp_path / "e.db", max_pages=2)
    assert cut.result.outcome == "max_pages"  # /p2 was left


def test_a_resume_from_the_same_file_continues_without_refetching(tmp_path: Path) -> None:
    site = FakeSite()
    chain(site, A, 8)
    db = tmp_path / "c.db"
    first = crawl(site, [A + "/"], db, delay_ms=500, max_pages=3)
    assert first.result.outcome == "max_pages"
    split = len(site.requests)
    second = crawl(site, [A + "/"], db, start=first.ended + 100, delay_ms=500)
    assert second.result.outcome == "finished"
    pages = [t for t in site.targets(A)]
    assert pages == ["/"] + [f"/p{n}" for n in range(1, 8)]  # each once, in order
    resumed = site.of(A)[split:]
    assert resumed[0].target == "/robots.txt" and resumed[0].start == second.started
    for gap in gaps(resumed):
        assert 0.5 <= gap <= 0.5 + SLACK
    assert second.result.counters.pages == 8
    assert second.rows("SELECT id, status FROM runs") == [(1, "max_pages"), (2, "finished")]


def test_a_resume_after_a_kill_counts_the_fetches_the_hosts_rows_missed(
    tmp_path: Path,
) -> None:
    """A kill between the pages' commit and the hosts rows' write (at intervals) leaves
    ``hosts.pages_fetched`` behind the fetches recorded: a resume counts on from those
    records, per host and in all, so ``max_pages`` stops where it says (issue #25 trial
    21: a recrawl after a kill counted 9 fetches short, and the next crawl's cap went
    over by as many)."""
    site = FakeSite()
    chain(site, A, 8)
    db = tmp_path / "c.db"
    first = crawl(site, [A + "/"], db, delay_ms=500, max_pages=5)
    assert first.value("SELECT count(*) FROM page_versions") == 5
    with sqlite3.connect(db) as conn:  # as a kill leaves it: the hosts row 3 behind
        conn.execute("UPDATE hosts SET pages_fetched = pages_fetched - 3")
    split = len(site.requests)
    second = crawl(site, [A + "/"], db, start=first.ended + 100, delay_ms=500, max_pages=6)
    assert second.result.outcome == "max_pages"
    assert [r.target for r in site.of(A)[split:]] == ["/robots.txt", "/p5"]  # one more
    snap = second.engine.snapshot()
    assert snap.pages_done == 6
    assert second.value("SELECT pages_fetched FROM hosts") == 6


def test_a_rerun_retries_the_urls_that_failed_transiently(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/", links_page("/flaky", "/fine"))
    site.add(A + "/flaky", status(500), links_page())
    site.add(A + "/fine", links_page())
    db = tmp_path / "c.db"
    first = crawl(site, [A + "/"], db)
    assert first.value("SELECT status FROM pages WHERE url = ?", A + "/flaky") == 500
    again = crawl(site, [A + "/"], db, start=first.ended + 10)
    assert again.engine.retried == 1 and again.engine.snapshot().retried == 1
    assert Counter(site.targets(A)) == {"/": 1, "/flaky": 2, "/fine": 1}
    assert again.value("SELECT status FROM pages WHERE url = ?", A + "/flaky") == 200


def test_snapshots_are_published_on_the_virtual_clock(tmp_path: Path) -> None:
    snaps: list[CrawlSnapshot] = []

    async def listen(engine: Engine) -> None:
        engine.subscribe(snaps.append)

    site = FakeSite()
    chain(site, A, 5)
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=1000, snapshot_interval_ms=500,
              during=listen)  # fmt: skip
    periodic, final = snaps[:-1], snaps[-1]
    offsets = [round(s.at - c.started, 6) for s in periodic]
    assert offsets == [0.5 * n for n in range(1, len(periodic) + 1)]
    assert final.state == "finished" and final.at == c.ended
    assert final.counters.pages == 5 and final.counters.queued == 0
    pages_seen = [s.counters.pages for s in periodic]
    assert pages_seen == sorted(pages_seen) and pages_seen[-1] <= 5


def test_a_snapshot_during_a_backoff_shows_the_host_and_its_retry_after(tmp_path: Path) -> None:
    seen: list[CrawlSnapshot] = []

    async def look_at_ten_seconds(engine: Engine) -> None:
        await asyncio.sleep(10)
        seen.append(engine.snapshot())

    site = FakeSite()
    site.add(A + "/", status(429, Retry_After="30"), links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db", during=look_at_ten_seconds)
    (snap,) = seen
    assert snap.counters.hosts_backoff == 1
    (row,) = snap.backoff
    refused = site.of(A)[1]
    assert row.host == "127.0.0.1" and row.attempts == 1 and row.last_status == 429
    assert refused.end is not None and row.retry_after_s == 30.0
    assert row.backoff_until == refused.end + 30.0
    assert c.value("SELECT state FROM hosts") == "done"


def test_a_backoff_after_no_answer_says_what_came_instead(tmp_path: Path) -> None:
    """Trial 14: a page that dripped past the read timeout put its host in backoff
    with "network error" as its last status; the row now names the timeout."""
    seen: list[CrawlSnapshot] = []

    async def look_at_two_seconds(engine: Engine) -> None:
        await asyncio.sleep(2)
        seen.append(engine.snapshot())

    site = FakeSite()
    site.add(A + "/", Reply(200, body=b"<p>late</p>", after_s=30), links_page())
    crawl(site, [A + "/"], tmp_path / "c.db", during=look_at_two_seconds, read_timeout_ms=1000)
    (snap,) = seen
    (row,) = snap.backoff
    assert (row.last_status, row.last_error) == (None, "timeout")


def test_seeds_added_during_a_run_are_crawled(tmp_path: Path) -> None:
    async def add_b_later(engine: Engine) -> None:
        await asyncio.sleep(1.5)
        assert engine.add_seeds([B + "/"]) == []

    site = FakeSite()
    chain(site, A, 4)
    chain(site, B, 2)
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=1000, during=add_b_later)
    assert [r.target for r in site.of(B)] == ["/robots.txt", "/", "/p1"]
    assert site.of(B)[0].start - c.started == 1.5
    assert c.result.counters.pages == 6


def test_seeds_added_live_are_counted_for_the_resume_line(tmp_path: Path) -> None:
    """The console's ``a`` path counts the seeds it added (a refused one not), and the
    resume line says the file keeps them (issue #25 trial 10: the printed command did
    not name them and nothing said they would go on)."""
    from crawldeck.cli.runner import kept_seeds_note

    async def add_live(engine: Engine) -> None:
        await asyncio.sleep(1.5)
        assert await engine.add_seeds_live([B + "/"]) == []
        refused = await engine.add_seeds_live(["mailto:x@y.test"])
        assert len(refused) == 1 and "unsupported scheme" in refused[0][1]

    site = FakeSite()
    chain(site, A, 2)
    chain(site, B, 2)
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=1000, during=add_live)
    assert c.engine.seeds_added_live == 1
    assert kept_seeds_note(1, Path("c.db")) == " (the 1 seed added in the console is kept in c.db)"
    assert kept_seeds_note(0, Path("c.db")) == ""
    assert kept_seeds_note(2, Path("c.db")).startswith(" (the 2 seeds added in the console are")


def test_bodies_that_are_neither_parsed_nor_kept_are_not_downloaded(tmp_path: Path) -> None:
    """A zip whose body would take 10 min costs its head only; a body without
    Content-Type is sniffed as HTML and parsed."""
    site = FakeSite()
    site.add(A + "/", links_page("/big.zip", "/untyped"))
    site.add(A + "/big.zip", Reply(200, (("Content-Type", "application/zip"),), b"PK" * 4096,
                                   body_s=600.0))  # fmt: skip
    site.add(A + "/untyped", Reply(200, (), b"<!DOCTYPE html><a href='/leaf'>leaf</a>"))
    site.add(A + "/leaf", links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db")
    zipped = next(r for r in site.of(A) if r.target == "/big.zip")
    assert zipped.skipped and zipped.end == zipped.start
    got = {u: (t, n) for u, t, n in c.rows("SELECT url, content_type, bytes FROM pages")}
    assert got[A + "/big.zip"] == ("application/zip", 0)
    assert got[A + "/untyped"][0] == "text/html"
    assert site.count(A + "/leaf") == 1


def test_stored_times_are_the_virtual_clocks(tmp_path: Path) -> None:
    site = FakeSite()
    chain(site, A, 3)
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=250)
    fetched = dict(c.rows("SELECT url, fetched_at FROM pages"))
    for request in site.of(A)[1:]:
        assert fetched[request.url] == to_iso_utc(request.start)
    assert fetched[A + "/"].startswith("2023-11-14T22:13:20.25")
    started_at, finished_at = c.rows("SELECT started_at, finished_at FROM runs")[0]
    assert (started_at, finished_at) == (to_iso_utc(c.started), to_iso_utc(c.ended))


def test_a_subscriber_that_fails_stops_the_run_and_its_work_is_saved(tmp_path: Path) -> None:
    """A snapshot subscriber (the console, attach) raising: the run stops as a crashed
    worker stops it, its pages committed and its ``runs`` row ended, then ``run``
    raises the error (a console's bug left the fetcher, the parse pool and the store's
    last commit behind: the reporter's error skipped the run's cleanup)."""
    seen: list[int] = []

    def fails_at_the_third(snap: CrawlSnapshot) -> None:
        seen.append(snap.counters.pages)
        if len(seen) == 3:
            raise RuntimeError("a console bug")

    async def listen(engine: Engine) -> None:
        engine.subscribe(fails_at_the_third)

    site = FakeSite()
    chain(site, A, 50)
    db = tmp_path / "c.db"
    with pytest.raises(RuntimeError, match="a console bug"):
        crawl(site, [A + "/"], db, delay_ms=1000, snapshot_interval_ms=1000, during=listen)
    with sqlite3.connect(db) as conn:
        pages = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
        runs = conn.execute("SELECT status, stats IS NOT NULL FROM runs").fetchall()
        queued = conn.execute("SELECT count(*) FROM frontier WHERE state = 'queued'").fetchone()
    assert 2 <= pages < 10 and runs == [("stopped", 1)] and queued[0] >= 1
    assert len(seen) == 4  # then only the final one, of the stopped run
