"""A new user's trial of the console (``tests/console/test_tui_trial.py``): the tests
that need no console: the charts' bars drawn from 0, the host detail's robots.txt line."""

from __future__ import annotations

from dataclasses import replace

from console.test_tui_snapshots import HOSTS, detail_of
from rich.console import Console
from rich.style import Style

from crawldeck.core.crawl.snapshot import HostDetail, ResponseRow
from crawldeck.tui.host_detail import _responses_table, robots_line
from crawldeck.tui.screens import EIGHTHS, RateBars


def test_rate_bars_of_zeros_are_empty_and_start_from_zero() -> None:
    low, high = Style(color="rgb(0,0,80)"), Style(color="rgb(0,0,255)")
    for zeros in ([], [0.0], [0.0] * 200):
        lines = RateBars(zeros, 12, 2, low, high).lines()
        assert ["".join(c for c, _ in line) for line in lines] == [" " * 12] * 2, zeros
    # from 0: a value of 0 has no bar, the peak a full one, the least rate an eighth
    lines = RateBars([0.0, 1.0, 8.0], 3, 1, low, high).lines()
    assert "".join(c for c, _ in lines[0]) == f" {EIGHTHS[0]}{EIGHTHS[-1]}"


def robots_of(
    status: str,
    why: str | None,
    http: int | None,
    expires_in_s: float | None,
    rules: tuple[tuple[str, str], ...] = (),
) -> HostDetail:
    """A host detail whose robots.txt is in ``status``: ``why`` and ``http`` as the
    robots cache says them, asked again in ``expires_in_s``."""
    row = replace(HOSTS[3], robots_status=status)
    return replace(
        detail_of(row), robots_why=why, robots_http=http, robots_expires_in_s=expires_in_s,
        robots_rules=rules,
    )  # fmt: skip


def test_the_host_detail_says_the_robots_status_once() -> None:
    cases = {
        ("missing", "404", 404, 3480.0): "missing (HTTP 404), allow all · expires in 3480 s",
        ("ok", "200", 200, 3480.0): "fetched (HTTP 200) · expires in 3480 s",
        ("ok", "312 bytes", 200, 3480.0): "fetched (HTTP 200: 312 bytes) · expires in 3480 s",
        ("unreachable", "connect", None, 60.0): (
            "unreachable (no response: connect), allow all, audited · expires in 60 s"
        ),
        ("redirect_limit", "more than 5 redirects", 301, 9.0): (
            "redirect limit (HTTP 301: more than 5 redirects), allow all · expires in 9 s"
        ),
        ("missing", "302 without a usable Location", 302, 9.0): (
            "missing (HTTP 302: without a usable Location), allow all · expires in 9 s"
        ),
        ("unknown", None, None, None): "robots.txt not fetched yet",
    }
    for (status, why, http, left), line in cases.items():
        detail = robots_of(status, why, http, left)
        assert robots_line(detail, strict_robots=False).plain == line
    strict = robots_of("unreachable", "503", 503, 60.0, (("disallow", "/"),))
    assert robots_line(strict, strict_robots=True).plain == (
        "unreachable (HTTP 503), every URL blocked (strict) · expires in 60 s"
    )


def test_the_last_responses_keep_time_status_and_ms_beside_long_errors() -> None:
    """Long errors squeezed the host detail's table to ``ti…  URL  error``: no status
    (issue #25 trial 6). Time, status and ms stay whole; the URL is the path."""
    row = HOSTS[3]
    long = "redirect_loop: loop after 2 hops: back to hop 1 (" + "http://x.test/" * 6 + ")"
    detail = replace(detail_of(row), responses=(
        ResponseRow(1_700_000_000.0, f"http://{row.host}/loop-a", 302, 1.0, long),
        ResponseRow(1_700_000_001.0, f"http://{row.host}/gone", 404, 2.0, None),
    ))  # fmt: skip
    console = Console(width=104, record=True)
    console.print(_responses_table(detail))
    lines = console.export_text().splitlines()
    assert lines[0].split() == ["time", "(UTC)", "status", "ms", "URL", "error"]
    assert lines[1].split()[:4] == ["22:13:21", "404", "2", "/gone"]
    assert lines[2].split()[:5] == ["22:13:20", "302", "1", "/loop-a", "redirect_loop:"]
    assert lines[2].rstrip().endswith("…") and max(len(line) for line in lines) <= 104
