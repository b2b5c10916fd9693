"""SVG snapshots of the console's panels, fed by a deterministic engine (``FakeEngine``).

``FakeEngine`` publishes a fixed sequence of ``CrawlSnapshot``s (a two-minute crawl of
twelve hosts, fixed epoch times) and answers ``query_hosts``/``host_detail`` from the
same data, so every picture is the same on every machine. Update the pictures after an
intended change with ``pytest tests/console/test_tui_snapshots.py --snapshot-update`` and look
at them (``__snapshots__/test_tui_snapshots/*.svg``) before committing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Input

from crawldeck.core.crawl.engine import CrawlResult, Outcome
from crawldeck.core.crawl.snapshot import (
    BackoffRow,
    BlockedRow,
    Counters,
    CrawlSnapshot,
    CrawlState,
    HostDetail,
    HostRow,
    ResponseRow,
)
from crawldeck.core.render_types import RenderStats
from crawldeck.tui.app import CrawlApp

T0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
STEPS = 120
SIZE = (120, 40)

HOSTS: tuple[HostRow, ...] = (
    HostRow("docs.example.org", 412, 1, 830, 2, 1000, "crawl_delay", 3.2, 0.4, "ok"),
    HostRow("www.example.com", 97, 1, 655, 0, 250, "default", 4.0, 0.0, "ok"),
    HostRow("shop.example.net", 61, 0, 402, 9, 4000, "backoff", 5.0, 3.1, "ok"),
    HostRow("api.example.io", 44, 1, 380, 0, 612, "adaptive", 2.1, 0.1, "missing"),
    HostRow("blog.example.com", 33, 0, 290, 1, 250, "default", 5.0, 0.2, "ok"),
    HostRow("legacy.example.org", 20, 0, 121, 14, 8000, "backoff", 5.0, 7.6, "unreachable"),
    HostRow("cdn.example.net", 18, 0, 1210, 0, 250, "default", 1.0, 0.0, "ok"),
    HostRow("news.example.com", 12, 0, 77, 0, 1500, "crawl_delay", 4.5, 1.2, "ok"),
    HostRow("forum.example.org", 9, 0, 64, 3, 250, "default", 5.0, 0.0, "redirect_limit"),
    HostRow("wiki.example.net", 5, 0, 51, 0, 250, "default", 5.0, 0.0, "ok"),
    HostRow("static.example.io", 2, 0, 33, 0, 250, "default", 5.0, 0.0, "ok"),
    HostRow("old.example.com", 0, 0, 12, 0, 250, "default", 5.0, 0.0, "unknown"),
)

BACKOFF = (
    BackoffRow("shop.example.net", 3, 429, 30.0, T0 + STEPS + 3.1, False),
    BackoffRow("legacy.example.org", 6, 503, None, T0 + STEPS + 7.6, True),
    BackoffRow("api.example.io", 1, None, None, T0 + STEPS + 0.1, False, last_error="timeout"),
)

_REASONS = ("calendar", "robots", "pagination", "repeating_path", "scope", "url_length")


def _blocked() -> tuple[BlockedRow, ...]:
    rows = []
    for i in range(40):
        reason = _REASONS[i * 7 % len(_REASONS)]
        host = HOSTS[i * 5 % len(HOSTS)].host
        rows.append(BlockedRow(T0 + 3 * i, reason, host, f"http://{host}/{reason}/{i}?page={i}"))
    return tuple(rows)


LOG = (
    "22:13:21 robots.txt of https://legacy.example.org unreachable (503): allowing all, "
    "retry in 3600 s",
    "22:13:40 shop.example.net: retry 1 of https://shop.example.net/cart (HTTP 429, backoff 1.3 s)",
    "22:14:02 shop.example.net: retry 2 of https://shop.example.net/cart (HTTP 429, backoff 30 s)",
    "22:14:30 legacy.example.org: in backoff for over 3600 s, demoted",
    "22:14:55 api.example.io: retry 1 of https://api.example.io/v1 (ConnectFailed: refused)",
)


def snapshot_at(step: int, *, state: CrawlState = "running") -> CrawlSnapshot:
    """The fake crawl after ``step`` seconds (pages follow a fixed wave)."""
    pages = sum(20 + (i * 37) % 25 for i in range(step))
    blocked = _blocked()[: max(1, step // 3)]
    counts: dict[str, int] = {}
    for row in blocked:
        counts[row.reason] = counts.get(row.reason, 0) + 1
    queued = max(0, 900 - step * 3)
    spilled = queued // 4
    seeds = min(queued - spilled, 12)
    counters = Counters(
        pages=pages,
        bytes=pages * 14_000,
        errors=step // 10,
        queued=queued,
        in_flight=5,
        hosts_known=12,
        hosts_active=11,
        hosts_backoff=len(BACKOFF),
        blocked=counts,
        status_mix={
            "2xx": pages - pages // 8,
            "3xx": pages // 10,
            "4xx": pages // 40,
            "5xx": step // 8,
            "error": step // 10,
        },
        queued_by_priority=by_band(seeds, queued - spilled - seeds),
        spilled=spilled,
        ordering="opic-inlinks",
    )
    return CrawlSnapshot(
        at=T0 + step,
        started_at=T0,
        state=state,
        counters=counters,
        pages_per_s=28.4,
        bytes_per_s=398_000.0,
        window_s=10.0,
        max_pages=6000,
        hosts=HOSTS[:11],
        backoff=BACKOFF,
        blocked=blocked,
        log=LOG[: 1 + step // 30],
        render=RENDER,
        pages_this_run=pages,
        bytes_this_run=pages * 14_000,
    )


#: Two of the five URLs in process are past their fetch: one rendering, one waiting for
#: a browser (the header says 3 in flight, the overview 3 in flight · 2 rendering).
RENDER = RenderStats(
    available=True,
    reason="",
    size=2,
    busy=1,
    idle=1,
    queued=1,
    browsers=2,
    rendered=40,
    timed_out=1,
    failed=0,
    blocked=12,
    skipped=30,
    launches=2,
    recycles=0,
    rss_bytes=310_000_000,
    pss_bytes=182_000_000,
    memory_age_s=1.0,
)


def by_band(seeds: int, links: int) -> tuple[int, ...]:
    """URLs per priority under ``opic-inlinks`` (32 queues): ``seeds`` at 0, ``links``
    over the bands of importance 2^0 (an eighth), 2^-2 (a half) and 2^-4 (the rest)."""
    bands = [0] * 32
    bands[0] = seeds
    bands[15], bands[16] = links // 8, links // 2
    bands[17] = links - bands[15] - bands[16]
    return tuple(bands)


def detail_of(row: HostRow) -> HostDetail:
    """A fixed detail view for ``row``."""
    return HostDetail(
        row=row,
        queue_head=tuple(f"https://{row.host}/docs/page-{i}.html" for i in range(6)),
        queue_scores=(0.5, 0.125, 0.0625, 0.0625, 0.03125, 0.03125),
        queue_inlinks=(3, 4, 1, 1, 2, 1),
        robots_rules=(
            ("disallow", "/private/"),
            ("allow", "/private/press/"),
            ("disallow", "/*.pdf$"),
        ),
        robots_why="312 bytes",
        robots_http=200,
        robots_expires_in_s=3480.0,
        crawl_delay_s=1.0 if row.delay_source == "crawl_delay" else None,
        responses=(
            ResponseRow(T0 + 100, f"https://{row.host}/", 200, 84.0, None),
            ResponseRow(T0 + 104, f"https://{row.host}/about", 301, 12.0, None),
            ResponseRow(T0 + 109, f"https://{row.host}/cart", 429, 5.0, None),
            ResponseRow(
                T0 + 115, f"https://{row.host}/slow", None, 30000.0, "read_timeout: no data in 30 s"
            ),
        ),
    )


class FakeEngine:
    """A deterministic stand-in for ``core.crawl.engine.Engine`` (the ``CrawlSource`` methods).

    ``run`` publishes ``snapshots`` in order, then returns ``finish`` at once when it
    is set (``True``: ``finished``; a budget's outcome, e.g. ``max_pages``), else waits
    for ``request_stop`` and returns ``stopped``.
    """

    def __init__(
        self, snapshots: Sequence[CrawlSnapshot], *, finish: bool | Outcome = False
    ) -> None:
        self.snapshots = list(snapshots)
        self.finish: Outcome | None = "finished" if finish is True else finish or None
        self.subscribers: list[Callable[[CrawlSnapshot], None]] = []
        self.seeds: list[str] = []
        self.queries: list[tuple[str, int]] = []
        self.stop_requested = False
        self.published = 0
        self.live_adds = 0  # add_seeds_live calls (the console during a crawl)
        self._paused = False
        self._stop: asyncio.Event | None = None

    def subscribe(self, callback: Callable[[CrawlSnapshot], None]) -> None:
        self.subscribers.append(callback)

    def add_seeds(self, seed_urls: Iterable[str]) -> list[tuple[str, str]]:
        refused = []
        for url in seed_urls:
            if url.startswith(("http://", "https://")):
                self.seeds.append(url)
            else:
                refused.append((url, f"not an http(s) URL: {url!r}"))
        return refused

    async def add_seeds_live(self, seed_urls: Iterable[str]) -> list[tuple[str, str]]:
        self.live_adds += 1
        return self.add_seeds(seed_urls)

    def _publish(self, snap: CrawlSnapshot) -> None:
        self.published += 1
        for callback in self.subscribers:
            callback(snap)

    async def run(self) -> CrawlResult:
        self._stop = asyncio.Event()
        if self.stop_requested:
            self._stop.set()
        for snap in self.snapshots:
            self._publish(snap)
        last = self.snapshots[-1]
        if self.finish is not None:
            return CrawlResult(self.finish, last.counters)
        await self._stop.wait()
        self._publish(replace(last, state="stopped"))
        return CrawlResult("stopped", last.counters)

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    @property
    def paused(self) -> bool:
        return self._paused

    def request_stop(self) -> None:
        self.stop_requested = True
        if self._stop is not None:
            self._stop.set()

    def snapshot(self) -> CrawlSnapshot:
        return self.snapshots[0]

    def query_hosts(self, text: str = "", limit: int = 50) -> tuple[HostRow, ...]:
        self.queries.append((text, limit))
        return tuple(row for row in HOSTS if text in row.host)[:limit]

    def host_detail(self, host: str, queue_head: int = 20) -> HostDetail | None:
        row = next((r for r in HOSTS if r.host == host), None)
        return None if row is None else detail_of(row)


#: The resume hint the fake consoles are given (as ``cli.crawl`` words it).
RESUME = "resume with: crawldeck crawl seeds.txt --db crawl.db --max-pages 6000 --max-time 2m"


def fake_app(*, finish: bool | Outcome = False, steps: int = STEPS) -> CrawlApp:
    """The console over ``FakeEngine`` with ``steps`` one-second snapshots."""
    snaps = [snapshot_at(i) for i in range(steps + 1)]
    if finish:
        state: CrawlState = "finished" if finish in (True, "finished") else "stopped"
        snaps[-1] = replace(snaps[-1], state=state, hosts=(), ended_at=snaps[-1].at)
    return CrawlApp(FakeEngine(snaps, finish=finish), Path("crawl.db"), resume_hint=RESUME)


async def settle(pilot: Pilot[None]) -> None:
    """Wait until the last published snapshot is drawn; stop cursors blinking."""
    app = pilot.app
    assert isinstance(app, CrawlApp)
    engine = app.engine
    assert isinstance(engine, FakeEngine)
    calm = 0
    for _ in range(400):  # 20 s at most; usually 0.1 s, or a second for the labels
        # the last snapshot published is on screen, tab labels included, on two polls
        settled = engine.published >= len(engine.snapshots) and app.drawing_settled
        calm = calm + 1 if settled else 0
        if calm == 2:
            break
        await pilot.pause(0.05)
    for screen in app.screen_stack:  # a dialog's input too (app.query sees the base screen)
        for box in screen.query(Input):
            box.cursor_blink = False
    await pilot.pause()


def _run_before(*keys: str) -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        if keys:
            await pilot.press(*keys)
            await settle(pilot)

    return run_before


class SnapCompare(Protocol):
    """The ``snap_compare`` fixture of pytest-textual-snapshot (which ships no types):
    whether ``app``'s screen, after ``run_before``, matches the stored SVG."""

    def __call__(
        self,
        app: App[None],
        *,
        terminal_size: tuple[int, int],
        run_before: Callable[[Pilot[None]], Awaitable[None]],
    ) -> bool: ...


def test_hosts_panel(snap_compare: SnapCompare) -> None:
    """Hosts tab: the busiest hosts, the throughput chart with progress and ETA."""
    assert snap_compare(fake_app(), terminal_size=SIZE, run_before=_run_before())


def test_hosts_sorted_by_errors(snap_compare: SnapCompare) -> None:
    """Hosts sorted by the errors column (s pressed five times: host, ..., err)."""
    keys = ("s",) * 5
    assert snap_compare(fake_app(), terminal_size=SIZE, run_before=_run_before(*keys))


def test_hosts_filtered(snap_compare: SnapCompare) -> None:
    """Hosts filtered by '.org' (typed after /, Enter applies it)."""
    keys = ("slash", *".org", "enter")
    assert snap_compare(fake_app(), terminal_size=SIZE, run_before=_run_before(*keys))


def test_backoff_panel(snap_compare: SnapCompare) -> None:
    """Backoff tab: attempt, last status, Retry-After, until, demoted."""
    assert snap_compare(fake_app(), terminal_size=SIZE, run_before=_run_before("2"))


def test_blocked_panel(snap_compare: SnapCompare) -> None:
    """Blocked tab: counts per reason and the newest refused URLs first."""
    assert snap_compare(fake_app(), terminal_size=SIZE, run_before=_run_before("3"))


def test_blocked_filtered(snap_compare: SnapCompare) -> None:
    """Blocked tab filtered by reason: 'reason:calendar'."""
    keys = ("3", "slash", *"reason:calendar", "enter")
    assert snap_compare(fake_app(), terminal_size=SIZE, run_before=_run_before(*keys))


def test_log_panel(snap_compare: SnapCompare) -> None:
    """Log tab: audit lines (robots.txt 5xx treated as allow, demotion) and retries."""
    assert snap_compare(fake_app(), terminal_size=SIZE, run_before=_run_before("4"))


def test_host_detail(snap_compare: SnapCompare) -> None:
    """Enter on the first host: rules, queue head, last responses."""
    assert snap_compare(fake_app(), terminal_size=SIZE, run_before=_run_before("enter"))


def test_paused_header(snap_compare: SnapCompare) -> None:
    """p: the header shows PAUSED."""
    assert snap_compare(fake_app(), terminal_size=SIZE, run_before=_run_before("p"))


def test_help_screen(snap_compare: SnapCompare) -> None:
    """?: the keys."""
    assert snap_compare(fake_app(), terminal_size=SIZE, run_before=_run_before("question_mark"))


def test_add_seed_error(snap_compare: SnapCompare) -> None:
    """a, then a URL that is not http(s): the error stays on the dialog."""
    keys = ("a", *"ftp://x", "enter")
    assert snap_compare(fake_app(), terminal_size=SIZE, run_before=_run_before(*keys))


def test_finished(snap_compare: SnapCompare) -> None:
    """The crawl finished: FINISHED in the header, every host's final row."""
    assert snap_compare(fake_app(finish=True), terminal_size=SIZE, run_before=_run_before())


def test_small_terminal(snap_compare: SnapCompare) -> None:
    """80 x 24: the header with the ETA, the throughput figures without the chart, the
    hosts table's key columns (host to robots.txt), the keys."""
    assert snap_compare(fake_app(), terminal_size=(80, 24), run_before=_run_before())


def test_small_terminal_scrolled_right(snap_compare: SnapCompare) -> None:
    """80 x 24, → pressed until the last column: the host column stays, the others
    scroll a column at a time to the last ones (from, tok, IP)."""
    keys = ("right",) * 6
    assert snap_compare(fake_app(), terminal_size=(80, 24), run_before=_run_before(*keys))


def test_large_terminal(snap_compare: SnapCompare) -> None:
    """160 x 48: between the throughput panel and the tables, the run's pages/s and
    bytes/s, the status mix and the frontier's depth per priority as bars."""
    assert snap_compare(fake_app(), terminal_size=(160, 48), run_before=_run_before())


def test_help_screen_small_terminal(snap_compare: SnapCompare) -> None:
    """F1 at 80 x 24: every key, generated from the bindings, scrollable."""
    assert snap_compare(fake_app(), terminal_size=(80, 24), run_before=_run_before("f1"))


def test_stopped_at_a_budget(snap_compare: SnapCompare) -> None:
    """The run stopped at max_time: STOPPED in the header, the resume command shown."""
    app = fake_app(finish="max_time")
    assert snap_compare(app, terminal_size=(80, 24), run_before=_run_before())


def test_blocked_small_terminal(snap_compare: SnapCompare) -> None:
    """The Blocked tab at 80 x 24: narrow time and host columns, the URL's path on its
    host in view, the filter box saying that arrows scroll."""
    keys = ("3",)
    assert snap_compare(fake_app(), terminal_size=(80, 24), run_before=_run_before(*keys))


def test_backoff_small_terminal(snap_compare: SnapCompare) -> None:
    """The Backoff tab at 80 x 24: its label, its rows and the overview's backoff count
    are one figure."""
    assert snap_compare(fake_app(), terminal_size=(80, 24), run_before=_run_before("2"))


def test_large_terminal_blocked(snap_compare: SnapCompare) -> None:
    """160 x 48 on the Blocked tab: the overview sits above the tabs, so a short table
    leaves no blank band between itself and the overview."""
    assert snap_compare(fake_app(), terminal_size=(160, 48), run_before=_run_before("3"))
