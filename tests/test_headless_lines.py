"""The headless reporter's lines as a terminal shows them (issue #25): no trailing
spaces, a progress line within 80 columns, counts in words ("1 page", "2 pages")."""

from __future__ import annotations

import io

from crawldeck.core.snapshot import Counters, CrawlSnapshot
from crawldeck.tui.headless import HeadlessReporter, outcome_heading


def snap(**counters: object) -> CrawlSnapshot:
    """A snapshot 12.5 s into a run with ``counters`` (defaults: a small crawl)."""
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
        pages_this_run=7,
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
