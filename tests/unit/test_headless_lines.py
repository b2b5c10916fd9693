"""The headless reporter's lines as a terminal shows them (issue #25): no trailing
spaces, a progress line within 80 columns, counts in words ("1 page", "2 pages")."""

from __future__ import annotations

import io
import os
import re
import shutil
from dataclasses import replace

import pytest
from console.test_cluster_console import snapshot as cluster_snapshot

from crawldeck.cli.cluster import progress_line as cluster_progress_line
from crawldeck.cli.headless import HeadlessReporter, outcome_heading, progress_line
from crawldeck.core.crawl.snapshot import Counters, CrawlSnapshot
from crawldeck.core.words import plural


def snap(**counters: object) -> CrawlSnapshot:
    """A snapshot 12.5 s into a file's first run with ``counters`` (defaults: a small
    crawl)."""
    return CrawlSnapshot(
        at=1012.5,
        started_at=1000.0,
        state="running",
        counters=Counters(**counters),  # type: ignore[arg-type]
        pages_per_s=3.2,
        bytes_per_s=40_000.0,
        window_s=10.0,
        max_pages=None,
        hosts=(),
        backoff=(),
        blocked=(),
        log=(),
        pages_this_run=Counters(**counters).pages,  # type: ignore[arg-type]
    )


def summary(snapshot: CrawlSnapshot, heading: str) -> list[str]:
    out = io.StringIO()
    HeadlessReporter(out).summary(snapshot, heading, responses={"200": 5, "404": 2})
    return out.getvalue().splitlines()


def test_the_summary_has_no_trailing_spaces() -> None:
    heading = outcome_heading("max_pages", {"max_pages": "50"})
    lines = summary(snap(pages=7, bytes=9000, blocked={"robots": 2}), heading)
    assert lines[0] == "stopped: --max-pages 50 reached"
    assert [line for line in lines if line != line.rstrip()] == []


def test_the_progress_line_fits_80_columns_even_with_big_figures() -> None:
    small = snap(pages=58, queued=74, in_flight=2, hosts_active=8,
                 blocked={"robots": 2, "redirect_loop": 1, "url_length": 1})  # fmt: skip
    line = progress_line(small)
    assert line == "[0:00:12] 58 fetched  3.2/s  queued 74  in flight 2  blocked 4  active hosts 8"
    backoff = replace(small, counters=replace(small.counters, hosts_backoff=1), max_pages=60)
    assert progress_line(backoff).endswith("in flight 2  blocked 4")  # no room for the hosts
    big = replace(
        snap(
            pages=123_456,
            queued=4_500_000,
            in_flight=1024,
            hosts_active=50_000,
            hosts_backoff=1_200,
            blocked={"robots": 98_765},
        ),
        state="paused",
        max_pages=200_000,
        at=1000.0 + 100 * 3600,
        pages_per_s=312.4,
    )
    line = progress_line(big)
    assert len(line) <= 80, line
    assert line.startswith("[100:00:00] PAUSED 123.5k/200.0k fetched  312.4/s  queued 4.5M")
    assert progress_line(snap(pages=1)).startswith("[0:00:12] 1 fetched ")


def test_a_resumed_or_recrawled_file_shows_this_runs_fetches() -> None:
    """issue #25: a recrawl's line read ``230/250 pages`` for its whole run, since its
    revisits leave the page count as it was; this run's fetches now come first among
    the figures that may be left out."""
    resumed = replace(snap(pages=230, queued=20, in_flight=1, blocked={"robots": 3}),
                      pages_this_run=41, max_pages=250)  # fmt: skip
    assert progress_line(resumed) == (
        "[0:00:12] 230/250 fetched  3.2/s  queued 20  in flight 1  this run 41  blocked 3"
    )
    # the count is what max_pages counts, a recrawl's revisits (304s) too, as the
    # console's header: it reaches its cap (the trial's line stayed at 400 of 460)
    revisiting = replace(resumed, pages_fetched=246, pages_this_run=57)
    assert progress_line(revisiting).startswith("[0:00:12] 246/250 fetched  3.2/s")


def test_the_cluster_progress_line_fits_80_columns() -> None:
    line = cluster_progress_line(cluster_snapshot(redis_down=True, state="paused"))
    assert line == "[0:01:23] PAUSED 5230 pages  37.6/s  3 workers  Redis DOWN (retrying)"
    line = cluster_progress_line(cluster_snapshot())
    assert line.endswith("  37.6/s  3 workers  hosts 35 owned, 18 to claim  Redis ok")
    assert len(line) <= 80


def test_counts_in_the_summary_are_in_words() -> None:
    one = replace(snap(pages=1, bytes=10), pages_this_run=1, retried=1)
    lines = summary(one, "finished: nothing left to fetch")
    assert any("1 fetch in 12.5 s" in line for line in lines), lines
    assert any("1 URL that failed in earlier runs" in line for line in lines), lines
    assert plural(1, "page") == "1 page"
    assert plural(0, "page") == "0 pages"
    assert plural(2, "fetch", "fetches") == "2 fetches"


def test_the_summary_counts_the_pages_read_in_part_when_there_are_some() -> None:
    out = io.StringIO()
    HeadlessReporter(out).summary(snap(pages=7), "finished: nothing left to fetch", partial=2)
    assert "│ read in part (all runs) │ 2 pages (bodies cut at max_body_bytes or stopped)" in (
        out.getvalue()
    )
    assert not any("read in part" in line for line in summary(snap(pages=7), "finished"))


def test_the_summary_says_this_runs_fetches_with_no_response_beside_its_responses() -> None:
    """The ``responses this run`` and ``no response this run`` rows add up to the run's
    fetches (issue #25: a trial's 137 fetches beside 136 responses, the 137th refused)."""
    out = io.StringIO()
    HeadlessReporter(out).summary(
        snap(pages=7), "finished: nothing left to fetch",
        responses={"200": 5, "503": 1}, no_response={"connect": 1, "timeout": 2},
    )  # fmt: skip
    table = [" ".join(line.split()) for line in out.getvalue().splitlines()]
    assert "│ responses this run │ 200 5, 503 1 │" in table
    assert "│ no response this run │ connect 1, timeout 2 │" in table
    assert not any("no response this run" in line for line in summary(snap(pages=7), "x"))


def test_the_summary_counts_the_tries_put_back_for_a_retry() -> None:
    """A URL answered 503 six times is one 503 in ``responses this run`` (its last try)
    and five tries retried: a row says them (issue #25 trial 7: the server saw 6)."""
    out = io.StringIO()
    HeadlessReporter(out).summary(
        snap(pages=7), "finished: nothing left to fetch",
        responses={"200": 5, "503": 1}, retries={"http_503": 5, "timeout": 1},
    )  # fmt: skip
    table = [" ".join(line.split()) for line in out.getvalue().splitlines()]
    assert (
        "│ retried tries this run │ http_503 5, timeout 1 (each URL's last try is above) │" in table
    )
    assert not any("retried tries" in line for line in summary(snap(pages=7), "x"))


def test_the_summary_counts_the_pages_whose_links_were_cut_when_there_are_some() -> None:
    out = io.StringIO()
    HeadlessReporter(out).summary(snap(pages=7), "finished: nothing left to fetch", links_cut=1)
    table = [" ".join(line.split()) for line in out.getvalue().splitlines()]
    row = (
        "│ links cut (all runs) │ 1 page (-s parse_max_bytes=4194304 or "
        "max_links_per_page=N keeps them) │"
    )
    assert row in table
    assert not any("links cut" in line for line in summary(snap(pages=7), "finished"))


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_the_summary_fits_a_narrow_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new user's trial (issue #25): after the console at 80 x 24 the summary table
    was 87 columns wide and every row wrapped; on a terminal it is at most as wide as
    the terminal, in a file 100 columns; the blocked rows say they count all runs."""
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback: os.terminal_size((80, 24)))
    big = snap(pages=7, bytes=9000, blocked={"scope": 3256}, duplicates=1)
    for out, widest in ((Terminal(), 80), (io.StringIO(), 100)):
        HeadlessReporter(out).summary(big, "finished: nothing left to fetch", partial=3,
                                      links_cut=20)  # fmt: skip
        lines = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue()).splitlines()  # no colours
        assert max(len(line) for line in lines) <= widest
        assert any(re.search(r"blocked \(all runs\): scope +│ 3256 \(out of scope\)", line)
                   for line in lines)  # fmt: skip
