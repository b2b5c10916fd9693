"""What surrounds the tables: the header, the throughput strip, the overview of a
large terminal (the whole run's chart, the status mix and the frontier as bars), the
log, and the modal screens (add a seed, help; the host detail is
``tui.host_detail``).

They draw data handed to them (a ``CrawlSnapshot``, a ``HostDetail``, the key bindings
in force) or call a function handed to them (the seed validator); they never reach
into the engine.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import ClassVar

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.app import RenderResult as WidgetRender
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, RichLog, Sparkline, Static

from crawldeck.core.crawl.snapshot import Counters, CrawlSnapshot
from crawldeck.core.errors import UrlError
from crawldeck.core.policy.prioritizer import (
    CASH_ORDERINGS,
    IMPORTANCE_TOP,
    INLINK_POWER,
    PRIORITY_LINK,
    PRIORITY_SEED,
)
from crawldeck.core.policy.seeds import schemeless
from crawldeck.core.policy.urls import clean
from crawldeck.tui.history import CrawlHistory, ThroughputHistory
from crawldeck.tui.widgets import (
    OrderedInput,
    crawl_over,
    fmt_bytes,
    fmt_duration,
    host_counts,
    set_static,
)

#: Log lines kept on screen.
LOG_LINES = 1000
#: Words that mark a log line as a warning or an audit line.
WARN_WORDS = ("robots.txt", "demoted", "dns", "giving up", "unreachable", "failed", "error")

# ------------------------------------------------------------------- status line

STATE_STYLES = {
    "RUNNING": "bold black on green",
    "PAUSED": "bold black on yellow",
    "STOPPING": "bold black on dark_orange",
    "FINISHED": "bold white on blue",
    "STOPPED": "bold white on red",
}


def budget_left_s(snap: CrawlSnapshot) -> list[float | None]:
    """Seconds left to each budget set, at the current rates: ``max_pages`` (pages/s),
    ``max_bytes`` (bytes/s), ``max_time_s`` (the clock); ``None`` for a budget whose
    rate is 0 so far (no estimate). 0 for a budget reached."""
    c = snap.counters
    left: list[float | None] = []
    for cap, done, rate in (
        (snap.max_pages, snap.pages_done, snap.pages_per_s),
        (snap.max_bytes, c.bytes, snap.bytes_per_s),
    ):
        if cap:
            rest = max(0, cap - done)
            left.append(0.0 if rest == 0 else rest / rate if rate > 0 else None)
    if snap.max_time_s:
        left.append(max(0.0, snap.max_time_s - snap.elapsed_s))
    return left


def eta_text(snap: CrawlSnapshot) -> str | None:
    """The time left to the first budget the run will reach (``budget_left_s``):
    ``h:mm:ss``, ``done``, ``paused`` (the crawl is paused: its rates fall while
    nothing is fetched, so a figure would only grow), or ``-`` (no rate yet, or the run
    is over short of it); ``None`` without a budget (nothing to estimate)."""
    left = budget_left_s(snap)
    if not left:
        return None
    if 0.0 in left:
        return "done"
    if snap.state == "paused":
        return "paused"
    known = [s for s in left if s is not None]
    return "-" if crawl_over(snap) or not known else fmt_duration(min(known))


#: Header width in cells from which it starts with the program's name.
WIDE_HEADER = 100


def renders_in_flight(snap: CrawlSnapshot) -> int:
    """Pages of ``snap``'s crawl fetched and now rendering or waiting for a browser:
    the render pool's busy plus queued (0 with rendering off)."""
    r = snap.render
    return 0 if r is None else r.busy + r.queued


def fetches_in_flight(snap: CrawlSnapshot) -> int:
    """URLs of ``snap``'s crawl being fetched now: the URLs in process
    (``counters.in_flight``) less those past their fetch, rendering
    (:func:`renders_in_flight`)."""
    return max(0, snap.counters.in_flight - renders_in_flight(snap))


def status_text(
    state: str, db_name: str, snap: CrawlSnapshot | None, width: int, brand: str = "crawldeck"
) -> Text:
    """The header line (``StatusBar``) in a terminal ``width`` cells wide: ``brand``
    (the program's name, ``crawldeck attach`` for the attached console; from
    ``WIDE_HEADER`` cells on), ``state`` (upper case), the crawl file's name and
    ``snap``'s totals; ``fetched`` counts the fetches (``CrawlSnapshot.pages_done``:
    the hosts table's ``fetched`` summed; a retried URL's each answer, which the status
    mix, one a URL, counts once: issue #25), as the headless progress line does. The
    rates are the last ``window_s`` seconds' while the run goes on, its averages once it
    has ended (``run_average``).

    The figures after the fetches in flight (the ETA, the queue, the bytes a second, in
    that order) are each shown whole or not at all: from the first that would pass
    ``width`` on, they are left out rather than cut in the middle of a word (the
    throughput panel shows them all; a trial at 80x24 saw ``· q…``, issue #25)."""
    # the name of the program is the first thing an 80-column header gives up
    name = (f" {brand} ", "bold") if width >= WIDE_HEADER else ""
    text = Text.assemble(name, (f" {state} ", STATE_STYLES.get(state, "bold")), f"  {db_name}")
    if snap is not None:
        c = snap.counters
        cap = f"/{snap.max_pages}" if snap.max_pages else ""
        average = run_average(snap)
        pages_s, bytes_s = (snap.pages_per_s, snap.bytes_per_s) if average is None else average
        rate = f"{pages_s:.1f}/s" if average is None else f"{pages_s:.1f}/s average"
        text.append(
            f"  fetched {snap.pages_done}{cap} · {rate} · in flight {fetches_in_flight(snap)}"
        )
        eta = eta_text(snap)
        extras = [] if eta is None else [Text.assemble(" · ETA ", (eta, "bold"))]
        extras += [Text(f" · queued {c.queued}"), Text(f" · {fmt_bytes(bytes_s)}/s")]
        for extra in extras:
            if text.cell_len + extra.cell_len > width:
                break
            text.append_text(extra)
    if state == "STOPPING":
        text.append("   in-flight fetches finish, state is saved …", style="italic")
    return text


class StatusBar(Static):
    """The header line: the crawl's state (RUNNING, PAUSED, ...), the file, the totals.

    The figures come most needed first (pages, pages/s, the fetches in flight, the ETA
    of the budgets, the queue), so a narrow terminal (80 columns) leaves out, whole, only
    what the throughput panel also shows; under ``WIDE_HEADER`` cells the program's name (the
    app's title: ``crawldeck``, ``crawldeck attach``) is left out.
    """

    def show(self, state: str, db_name: str, snap: CrawlSnapshot | None) -> None:
        """Draw ``state`` (upper case), the crawl file's name and ``snap``'s totals."""
        width = self.app.size.width
        set_static(self, status_text(state, db_name, snap, width, self.app.title))


# ------------------------------------------------------------------- charts

#: The eighths of a cell a chart's bar is drawn with, from one eighth to a full cell.
EIGHTHS = "▁▂▃▄▅▆▇█"


def _blend(low: Style, high: Style, ratio: float) -> Style:
    """The colour ``ratio`` (0 to 1) of the way from ``low``'s to ``high``'s."""
    a, b = low.color, high.color
    if a is None or b is None:
        return high
    ra, ga, ba = a.get_truecolor()
    rb, gb, bb = b.get_truecolor()
    mix = tuple(round(x + (y - x) * ratio) for x, y in ((ra, rb), (ga, gb), (ba, bb)))
    return Style(color=f"rgb({mix[0]},{mix[1]},{mix[2]})")


class RateBars:
    """A Rich renderable: one bar per cell of ``width``, ``height`` lines tall, each
    the max of its share of ``data`` (a point stretched over several cells when there
    are fewer points than cells), drawn from 0: a value of 0 is no bar at all, the
    peak a full bar, any other value at least an eighth of a cell. No data, or only
    zeros, draws an empty chart."""

    def __init__(
        self, data: Sequence[float], width: int, height: int, low: Style, high: Style
    ) -> None:
        self.data = list(data)
        self.width = width
        self.height = max(1, height)
        self.low = low
        self.high = high

    def columns(self) -> list[float]:
        """The value each cell column shows (``[]`` without data)."""
        n = len(self.data)
        if not n:
            return []
        cols = []
        for col in range(self.width):
            start = col * n // self.width
            end = max(start + 1, (col + 1) * n // self.width)
            cols.append(max(self.data[start:end]))
        return cols

    def lines(self) -> list[list[tuple[str, Style | None]]]:
        """The chart's cells, top line first: ``(character, style)``."""
        cols = self.columns()
        peak = max(cols, default=0.0)
        steps = 8 * self.height
        bars: list[tuple[int, float]] = []
        for value in cols:
            ratio = value / peak if peak > 0 and value > 0 else 0.0
            eighths = max(1, round(ratio * steps)) if ratio > 0 else 0
            bars.append((eighths, ratio))
        rows = []
        for line in reversed(range(self.height)):
            cells: list[tuple[str, Style | None]] = []
            for eighths, ratio in bars:
                fill = eighths - 8 * line
                if fill <= 0:
                    cells.append((" ", None))
                else:
                    style = _blend(self.low, self.high, ratio)
                    cells.append((EIGHTHS[min(fill, 8) - 1], style))
            if not bars:
                cells = [(" ", None)] * self.width
            rows.append(cells)
        return rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The lines of ``lines()``."""
        for i, cells in enumerate(self.lines()):
            if i:
                yield Segment.line()
            for char, style in cells:
                yield Segment(char, style)


class RateChart(Sparkline):
    """Textual's ``Sparkline`` (its CSS, colours and ``data``), drawn by ``RateBars``:
    from 0, so a rate of 0 draws no bar. Textual's scales from the data's minimum to
    its maximum: a chart of zeros drew a line of eighths, and a single point (the
    first second of a run) full-height bars."""

    def render(self) -> WidgetRender:
        """The bars of ``data`` at the widget's size."""
        _, base = self.background_colors
        low = base + self.get_component_styles("sparkline--min-color").color
        high = base + self.get_component_styles("sparkline--max-color").color
        return RateBars(
            self.data or [],
            self.size.width,
            self.size.height,
            Style(color=low.rich_color),
            Style(color=high.rich_color),
        )


# ------------------------------------------------------------------- throughput


STATUS_STYLES = {"2xx": "green", "3xx": "cyan", "4xx": "yellow", "5xx": "red", "error": "red"}
#: The status classes of ``Counters.status_mix``, in the order they are shown.
STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx", "error")
#: What feeds each frontier priority under ``bfs`` and ``larger-sites-first``
#: (``core.policy.prioritizer``); others are shown by number.
PRIORITY_LABELS = {PRIORITY_SEED: "seeds, redirects", PRIORITY_LINK: "links, sitemaps"}


def progress_bar(done: int, total: int, width: int = 16) -> Text:
    """A bar of ``width`` cells, ``done`` of ``total`` filled."""
    filled = round(width * done / total) if total else 0
    return Text.assemble(("━" * filled, "magenta"), ("─" * (width - filled), "dim"))


def run_average(snap: CrawlSnapshot) -> tuple[float, float] | None:
    """Pages/s and body bytes/s over this whole run once it has ended (``ended_at``
    set): what this run fetched over its crawl time; ``None`` while it runs (the header
    and the throughput panel show the last ``window_s`` seconds' rates, which after the
    end only say how the run wound down: issue #25 trial 15 read 284 kB/s, a late
    sample, beside a run of 392 kB/s)."""
    if snap.ended_at is None:
        return None
    if snap.elapsed_s <= 0:
        return 0.0, 0.0
    return snap.pages_this_run / snap.elapsed_s, snap.bytes_this_run / snap.elapsed_s


def summary_text(snap: CrawlSnapshot, width: int | None = None) -> Text:
    """Totals, elapsed time (of ``max_time_s``) and the rates over the last
    ``window_s`` seconds, labelled so, status mix, (with a page cap) progress
    and the ETA (``eta_text``), the hosts (``host_counts``; those in backoff while the
    crawl runs), and the render pool (busy / idle / queued, pages rendered, browsers'
    memory as PSS). ``width``: the cells the lines get, if known; an elapsed line
    longer than that leaves out bytes/s (the chart's label shows it in a large
    terminal; issue #25 trial 9: with ``--max-time`` it lost "(last 10 s)").

    Plain ``Text`` lines (no Rich table): it is drawn four times a second.
    """
    c = snap.counters
    text = Text(no_wrap=True, overflow="ellipsis")

    def row(label: str, *parts: str | Text) -> None:
        if text:
            text.append("\n")
        text.append(f"{label:9s}", style="bold")
        for part in parts:
            text.append(part)

    budget = f"/{fmt_duration(snap.max_time_s)}" if snap.max_time_s else ""
    # the rates are a recent window's, and say so (issue #25 F18)
    average = run_average(snap)
    if average is None:
        rate = f"{snap.pages_per_s:.1f} pages/s · {fmt_bytes(snap.bytes_per_s)}/s"
        line = f"{fmt_duration(snap.elapsed_s)}{budget} · {rate} (last {snap.window_s:g} s)"
        if width is not None and 9 + len(line) > width:
            line = (
                f"{fmt_duration(snap.elapsed_s)}{budget} · {snap.pages_per_s:.1f} pages/s "
                f"(last {snap.window_s:g} s)"
            )
        row("elapsed", line)
    else:
        pages_s, bytes_s = average
        line = f"{fmt_duration(snap.elapsed_s)}{budget} · {pages_s:.1f} pages/s"
        bytes_part = f" · {fmt_bytes(bytes_s)}/s"
        if width is None or 9 + len(line + bytes_part) + 21 <= width:
            line += bytes_part
        row("elapsed", f"{line} (this run's average)")
    if snap.max_pages:
        done = min(snap.pages_done, snap.max_pages)
        row("fetched", f"{snap.pages_done}/{snap.max_pages} ", progress_bar(done, snap.max_pages),
            f" {100 * done / snap.max_pages:.0f}% ETA {eta_text(snap)}")  # fmt: skip
    else:
        cap = f"/{fmt_bytes(snap.max_bytes)}" if snap.max_bytes else ""
        row("fetched", f"{snap.pages_done}  ({fmt_bytes(c.bytes)}{cap})")
    if c.duplicates or c.near_duplicates:
        row("dupes", f"{c.duplicates} exact · {c.near_duplicates} near")
    mix = Text()
    for key in STATUS_CLASSES:
        if c.status_mix.get(key):
            mix.append(f"{key} ", style=STATUS_STYLES[key])
            mix.append(f"{c.status_mix[key]}  ")
    row("status", mix if mix.plain else "-")
    rendering = renders_in_flight(snap)
    also = f" · {rendering} rendering" if rendering else ""
    row("frontier", f"{c.queued} queued · {fetches_in_flight(snap)} in flight{also}")
    backoff = "" if crawl_over(snap) else f" · {c.hosts_backoff} backoff"
    row("hosts", f"{host_counts(snap)}{backoff}")
    row("blocked", f"{sum(c.blocked.values())} · no response {c.errors}")
    r = snap.render
    if r is None:
        row("render", "off")
    else:
        failed = f" · {r.failed} failed" if r.failed else ""
        row("render", f"{r.busy}/{r.size} busy · {r.queued} queued · {r.rendered} done · "
            f"{r.timed_out} cut{failed} · mem {fmt_bytes(r.pss_bytes)}")  # fmt: skip
    return text


class ThroughputPanel(Horizontal):
    """Pages/s and bytes/s charts over the last minutes, with the totals beside them."""

    def compose(self) -> ComposeResult:
        """Two labelled sparklines and the summary."""
        with Vertical(id="charts"):
            with Horizontal(classes="chart"):
                yield Static(id="pages-label", classes="chart-label")
                yield RateChart([], id="pages-chart")
            with Horizontal(classes="chart"):
                yield Static(id="bytes-label", classes="chart-label")
                yield RateChart([], id="bytes-chart")
        yield Static(id="summary")

    def show(self, snap: CrawlSnapshot, history: ThroughputHistory) -> None:
        """Draw ``snap`` and the chart ``history`` (no chart in a small terminal)."""
        title = "Throughput · last 3 min" if self.query_one("#charts").display else "Throughput"
        if self.border_title != title:
            self.border_title = title
        pages = Text.assemble(("pages/s\n", "bold"), f"{snap.pages_per_s:.1f}")
        set_static(self.query_one("#pages-label", Static), pages)
        size = Text.assemble(("bytes/s\n", "bold"), fmt_bytes(snap.bytes_per_s))
        set_static(self.query_one("#bytes-label", Static), size)
        self.query_one("#pages-chart", Sparkline).data = list(history.pages)
        self.query_one("#bytes-chart", Sparkline).data = list(history.bytes)
        summary = self.query_one("#summary", Static)
        text = summary_text(snap, summary.size.width or None)
        if str(summary.content).count("\n") == text.plain.count("\n"):
            set_static(summary, text)
        else:  # a row more or less (the dupes row): the panel's height follows
            summary.update(text)


# ------------------------------------------------------------------- overview

#: Cells of a bar of the overview's bar charts at least (a narrow box).
MIN_BAR = 8
#: Cells beside a bar: a space, the count (7 digits), a space and the share (``100%``).
BAR_FIGURES = 13


def bar_rows(rows: Sequence[tuple[str, int, str]], total: int, width: int) -> Text:
    """One line per ``(label, count, style)``: the label, a bar of ``count / total`` of
    a ``width``-cell line (eighths of a cell drawn), the count and its share of
    ``total``; the bars fit ``width`` with the labels and figures (``BAR_FIGURES``),
    and are ``MIN_BAR`` cells at least.

    ``total`` 0 draws empty bars and no share.
    """
    label_width = max((len(label) for label, _, _ in rows), default=0) + 1
    cells = max(MIN_BAR, width - label_width - BAR_FIGURES)
    text = Text(no_wrap=True, overflow="ellipsis")
    for i, (label, count, style) in enumerate(rows):
        if i:
            text.append("\n")
        eighths = round(8 * cells * count / total) if total else 0
        full, part = divmod(eighths, 8)
        bar = "█" * full + ("▏▎▍▌▋▊▉"[part - 1] if part else "")
        text.append(f"{label:{label_width}s}", style="bold")
        text.append(f"{bar:{cells}s}", style=style)
        text.append(f" {count:>7d}")
        if total:
            text.append(f" {100 * count / total:3.0f}%", style="dim")
    return text


def status_bars(c: Counters, width: int) -> Text:
    """The status mix as bars (``bar_rows`` in ``width`` cells): every class of
    ``STATUS_CLASSES``, as shares of all pages."""
    mix = c.status_mix
    rows = [(key, mix.get(key, 0), STATUS_STYLES[key]) for key in STATUS_CLASSES]
    return bar_rows(rows, sum(count for _, count, _ in rows), width)


def priority_bars(c: Counters, width: int, height: int | None = None) -> Text:
    """The frontier's depth per priority (URLs queued in memory at each, 0 = highest,
    named by what feeds it: under ``opic`` the cash band, ``cash >= 2^-p``, under
    ``opic-inlinks`` the importance band, ``cash x in-links^2 >= 2^(30 - 2p)``, only
    the bands that hold URLs) and the URLs spilled to SQLite, as bars (``bar_rows`` in
    ``width`` cells) of all the URLs queued; at most ``height`` lines (the lowest bands
    that hold URLs summed in one, ``p-q lower bands``, when there are more)."""
    counts = c.queued_by_priority
    if c.ordering in CASH_ORDERINGS:
        last = len(counts) - 1
        rows = [
            (f"{p} {'demoted' if p == last else _band_label(c.ordering, p)}", n, "magenta")
            for p, n in enumerate(counts)
            if n
        ]
        if height is not None and len(rows) + 1 > height >= 3:
            bands = [p for p, n in enumerate(counts) if n]
            keep = height - 2
            rest = sum(n for _, n, _ in rows[keep:])
            rows = [*rows[:keep], (f"{bands[keep]}-{bands[-1]} lower bands", rest, "magenta")]
    else:
        rows = [
            (f"{p} {PRIORITY_LABELS.get(p, 'lowest')}", n, "magenta") for p, n in enumerate(counts)
        ]
    rows.append(("spilled (SQLite)", c.spilled, "blue"))
    return bar_rows(rows, sum(c.queued_by_priority) + c.spilled, width)


def _band_label(ordering: str, p: int) -> str:
    """What priority ``p`` holds under a cash ordering (``core.policy.prioritizer``)."""
    if ordering == "opic":
        return f"cash >= 2^-{p}"
    band = f"cash x in^{INLINK_POWER} >= 2^{IMPORTANCE_TOP - 2 - 2 * p}"
    return f"seeds, {band}" if p == 0 else band


def rate_label(name: str, rates: list[float], mean: float, fmt: Callable[[float], str]) -> Text:
    """``name  peak X · mean Y``: the highest of a chart's points and ``mean`` (over
    the crawl time: ``CrawlHistory.mean_pages_per_s``); ``-`` before any point."""
    text = Text.assemble((f"{name:9s}", "bold"))
    if not rates:
        return text.append("-")
    return text.append(f"peak {fmt(max(rates))} · mean {fmt(mean)}")


#: A run chart whose first snapshot came this late into the run (s) says from when it
#: counts (an attached console's).
LATE_START_S = 5.0


class OverviewPanel(Horizontal):
    """What a large terminal (140 x 40 or more) shows between the throughput panel and the
    tables: pages/s and bytes/s over the whole run (``CrawlHistory``), the status mix as
    bars, and the frontier's depth per priority as bars."""

    def compose(self) -> ComposeResult:
        """The run's chart, the status bars and the frontier bars, each in a box."""
        with Vertical(id="run-chart", classes="overview-box") as run:
            run.border_title = "This run · pages/s and bytes/s"
            yield Static(id="run-pages-label")
            yield RateChart([], id="run-pages-chart")
            yield Static(id="run-bytes-label")
            yield RateChart([], id="run-bytes-chart")
        with Vertical(id="status-box", classes="overview-box") as status:
            status.border_title = "Status mix"
            yield Static(id="status-bars")
        with Vertical(id="frontier-box", classes="overview-box") as frontier:
            frontier.border_title = "Frontier by priority"
            yield Static(id="frontier-bars")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: tuple[CrawlSnapshot, CrawlHistory] | None = None

    def on_resize(self) -> None:
        """The bars fit the boxes: draw the last snapshot again at the new size."""
        if self._shown is not None:
            self.show(*self._shown)

    def show(self, snap: CrawlSnapshot, history: CrawlHistory) -> None:
        """Draw ``snap`` and the run's ``history``."""
        self._shown = (snap, history)
        pages = history.pages_per_s()
        sizes = history.bytes_per_s()
        set_static(self.query_one("#run-pages-label", Static),
                   rate_label("pages/s", pages, history.mean_pages_per_s(),
                              lambda v: f"{v:.1f}"))  # fmt: skip
        set_static(self.query_one("#run-bytes-label", Static),
                   rate_label("bytes/s", sizes, history.mean_bytes_per_s(),
                              fmt_bytes))  # fmt: skip
        self.query_one("#run-pages-chart", Sparkline).data = pages
        self.query_one("#run-bytes-chart", Sparkline).data = sizes
        run = self.query_one("#run-chart")
        # an attached console saw the run from its attach on: says so (issue #25 trial 9)
        since = f" from {fmt_duration(history.from_s)}" if history.from_s >= LATE_START_S else ""
        run.border_subtitle = (
            f"{fmt_duration(history.span_s)}{since}, {history.bucket_s:g} s per point"
        )
        status = self.query_one("#status-bars", Static)
        set_static(status, status_bars(snap.counters, status.size.width))
        frontier = self.query_one("#frontier-bars", Static)
        set_static(
            frontier,
            priority_bars(snap.counters, frontier.size.width, frontier.size.height),
        )


# ------------------------------------------------------------------- log


def log_line(line: str) -> RenderableType:
    """A log line, warnings and audit lines in yellow."""
    lowered = line.lower()
    style = "yellow" if any(word in lowered for word in WARN_WORDS) else ""
    return Text(line, style=style)


class LogPanel(RichLog):
    """Warnings and audit lines (robots.txt 5xx treated as allow, DNS failures,
    demotions, retries), appended as they arrive; a line wider than the panel wraps
    (a URL and its reason are read whole, not cut at the terminal's width: issue #25
    trial), at the panel's width when it is written."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, max_lines=LOG_LINES, wrap=True, markup=False, min_width=20)
        self._last: str | None = None
        self._pending: deque[str] = deque(maxlen=LOG_LINES)
        self.count = 0

    def take(self, snap: CrawlSnapshot) -> None:
        """Queue the lines of ``snap.log`` not taken yet (cheap: call it every snapshot)."""
        lines = list(snap.log)
        start = 0
        if self._last is not None and self._last in lines:
            start = len(lines) - lines[::-1].index(self._last)
        self._pending.extend(lines[start:])
        self.count += len(lines) - start
        if lines:
            self._last = lines[-1]

    def flush(self) -> None:
        """Write the queued lines (only while the log is shown: writing lays it out)."""
        # the panel's width, not the one RichLog measures a line at (capped at the
        # console's, which need not be the terminal's)
        width = self.scrollable_content_region.width or None
        for line in self._pending:
            self.write(log_line(line), width=width)
        self._pending.clear()


def _declared(node: object) -> set[tuple[str, str]]:
    """``(key, action)`` of the bindings the classes of ``node`` declare, Textual's own
    classes left out (``App``, ``Screen``, ``Input``, ...)."""
    own: set[tuple[str, str]] = set()
    for cls in type(node).__mro__:
        if cls.__module__.split(".")[0] == "textual" or "BINDINGS" not in vars(cls):
            continue
        for binding in Binding.make_bindings(vars(cls)["BINDINGS"]):
            own.add((binding.key, binding.action))
    return own


def own_bindings(bindings: Iterable[ActiveBinding]) -> list[ActiveBinding]:
    """The bindings of ``bindings`` the console declares (its app, screens and widgets),
    in their order: Textual's own (Tab to move the focus, the copy key of its screens)
    are left out of the help, which lists crawldeck's keys."""
    declared: dict[int, set[tuple[str, str]]] = {}
    kept = []
    for active in bindings:
        own = declared.setdefault(id(active.node), _declared(active.node))
        if (active.binding.key, active.binding.action) in own:
            kept.append(active)
    return kept


def key_rows(
    bindings: Iterable[ActiveBinding], key_display: Callable[[Binding], str]
) -> list[tuple[str, str]]:
    """``(keys, what they do)`` of the bindings in force, one row per action of one
    node (``q``, ``^c`` and ``^q`` of one quit share a row): the app's first, then the
    focused widget's and its screen's, each in its declared order.

    ``keys`` are ``key_display``'s texts, shortest first, joined by ``, ``; what they
    do is the first ``tooltip`` of the row's bindings, else the first ``description``,
    else the action.
    """
    rows: dict[tuple[int, str], list[Binding]] = {}
    ordered = sorted(bindings, key=lambda b: not isinstance(b.node, App))  # stable
    for active in ordered:
        rows.setdefault((id(active.node), active.binding.action), []).append(active.binding)
    table = []
    for (_, action), group in rows.items():
        keys = sorted(dict.fromkeys(key_display(b) for b in group), key=len)
        tooltip = next((b.tooltip for b in group if b.tooltip), "")
        description = next((b.description for b in group if b.description), "")
        table.append((", ".join(keys), tooltip or description or action))
    return table


class HelpScreen(ModalScreen[None]):
    """Every key in force where ``?`` was pressed, generated from the bindings (so it
    cannot go stale), and what the panels show.

    Args:
        rows: ``key_rows`` of the screen the help was opened over.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "dismiss_help", "Close"),
    ]

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        """The key table and a few lines on the panels."""
        keys = Table.grid(padding=(0, 2))
        keys.add_column(style="bold cyan", no_wrap=True)
        keys.add_column()
        for key, what in self.rows:
            keys.add_row(key, what)
        close = ", ".join(self.app.get_key_display(b) for b in Binding.make_bindings(self.BINDINGS))
        with VerticalScroll(id="help", classes="dialog"):
            # how to close it first: the end of the text is below a small terminal's
            # last line (issue #25 trial 10)
            title = Text("crawldeck console — keys", style="bold")
            title.append(f"  ({close} closes this help)", style="dim")
            yield Static(title, id="help-close")
            yield Static(keys, id="help-keys")
            yield Static(
                "\nThroughput (top): pages/s and bytes/s over the last 3 minutes, status mix, "
                "totals, progress with --max-pages, the ETA of the first budget to be reached "
                "(--max-pages, --max-time, --max-bytes). In a terminal of 140 x 40 or more, "
                "between the throughput panel and the tables: the whole run's pages/s and "
                "bytes/s, the status mix and the frontier's depth per priority as bars.\n"
                "Hosts: the busiest back queues (delay and where it comes from, tokens, "
                "next fetch in, robots.txt state; columns past the edge: ← →). Backoff: "
                "hosts after 429/503. Blocked: refused URLs with their reason. Log: warnings "
                "and audit lines."
            )

    def action_dismiss_help(self) -> None:
        """Close the help."""
        self.dismiss(None)


class AddSeedScreen(ModalScreen[str | None]):
    """Asks for a seed URL; ``await validate(url)`` returns an error text or ``None``
    (added). A host without a scheme (``127.0.0.3:8713``, ``example.org/docs``) is
    ``http://`` + it, as on the command line (``core.policy.seeds.schemeless``, wget's
    rule; issue #25 trial 10: the dialog refused what ``crawldeck crawl`` takes).

    The screen stays open and shows the error until a URL is accepted or Esc is
    pressed; it is dismissed with the accepted URL (``None`` when cancelled).
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        validate: Callable[[str], Awaitable[str | None]],
        *,
        title: str | None = None,
        keys: str | None = None,
    ) -> None:
        super().__init__()
        self._validate = validate
        self._title = title or "Add a seed URL"
        self._keys = keys or "Enter adds it, Esc cancels."

    def compose(self) -> ComposeResult:
        """A prompt (``title``), an input, an error line and what the keys do (``keys``)."""
        with Vertical(id="add-seed", classes="dialog"):
            yield Static(Text(self._title, style="bold"))
            yield OrderedInput(placeholder="https://example.com/", id="seed-input")
            yield Static("", id="seed-error")
            yield Static(Text(self._keys, style="dim"), id="seed-keys")

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        """Validate and add the URL, or show why not."""
        event.stop()
        url = event.value.strip()
        url = schemeless(url) or url
        with contextlib.suppress(UrlError):  # as the crawl writes it: http://host/
            url = clean(url)
        error = await self._validate(url)
        if error is None:
            self.dismiss(url)
        else:
            self.query_one("#seed-error", Static).update(Text(error, style="bold red"))

    def action_cancel(self) -> None:
        """Close without adding anything."""
        self.dismiss(None)
