"""What surrounds the tables: the throughput strip, the log, and the modal screens
(host detail, add a seed, help).

They draw data handed to them (a ``CrawlSnapshot``, a ``HostDetail``) or call a
function handed to them (the seed validator); they never reach into the engine.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import ClassVar

from rich.console import JustifyMethod, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, RichLog, Sparkline, Static

from crawldeck.core.snapshot import CrawlSnapshot, HostDetail
from crawldeck.tui.widgets import (
    DELAY_SOURCES,
    fmt_bytes,
    fmt_clock,
    fmt_countdown,
    fmt_duration,
    host_ip,
    robots_label,
    set_static,
)

#: Seconds of throughput history the chart shows (one point per second).
HISTORY_S = 180
#: Log lines kept on screen.
LOG_LINES = 1000
#: Words that mark a log line as a warning or an audit line.
WARN_WORDS = ("robots.txt", "demoted", "dns", "giving up", "unreachable", "failed", "error")

#: The keys of the console, as the help screen and the README list them.
KEYS: tuple[tuple[str, str], ...] = (
    ("p", "pause / resume: in-flight fetches finish, nothing new is dispatched"),
    ("a", "add a seed URL (validated; it also widens the scope)"),
    ("/", "filter the hosts or blocked table (Enter or Esc: back to the table)"),
    ("Enter", "detail of the host under the cursor (hosts, backoff, blocked)"),
    ("s / r", "sort the hosts by the next column / reverse (or click a header)"),
    ("1-4", "show the Hosts, Backoff, Blocked or Log tab"),
    ("e", "export pages, blocked, hosts and links as CSV next to the crawl file"),
    ("q", "quit: stop cleanly, state saved, the resume command printed (also Ctrl-C)"),
    ("?", "this help"),
)


# ------------------------------------------------------------------- status line

STATE_STYLES = {
    "RUNNING": "bold black on green",
    "PAUSED": "bold black on yellow",
    "STOPPING": "bold black on dark_orange",
    "FINISHED": "bold white on blue",
    "STOPPED": "bold white on red",
}


class StatusBar(Static):
    """The header line: the crawl's state (RUNNING, PAUSED, ...), the file, the totals."""

    def show(self, state: str, db_name: str, snap: CrawlSnapshot | None) -> None:
        """Draw ``state`` (upper case), the crawl file's name and ``snap``'s totals."""
        text = Text.assemble(
            (" crawldeck ", "bold"), (f" {state} ", STATE_STYLES.get(state, "bold")), f"  {db_name}"
        )
        if snap is not None:
            c = snap.counters
            cap = f"/{snap.max_pages}" if snap.max_pages else ""
            text.append(
                f"   pages {c.pages}{cap} · {snap.pages_per_s:.1f}/s · "
                f"{fmt_bytes(snap.bytes_per_s)}/s · queued {c.queued} · in flight {c.in_flight}"
            )
        if state == "STOPPING":
            text.append("   in-flight fetches finish, state is saved …", style="italic")
        set_static(self, text)


# ------------------------------------------------------------------- throughput


class ThroughputHistory:
    """Pages/s and bytes/s, one point per second, over the last ``HISTORY_S`` seconds.

    Fed with every snapshot (not only the drawn ones) so the chart never depends on
    how the UI coalesced its refreshes.
    """

    def __init__(self, points: int = HISTORY_S) -> None:
        self.pages: deque[float] = deque([0.0] * points, maxlen=points)
        self.bytes: deque[float] = deque([0.0] * points, maxlen=points)
        self._last: tuple[float, int, int] | None = None

    def add(self, snap: CrawlSnapshot) -> None:
        """Take one snapshot; adds a point when a second or more has passed."""
        c = snap.counters
        if self._last is None:
            self._last = (snap.at, c.pages, c.bytes)
            return
        at, pages, size = self._last
        span = snap.at - at
        if span < 1.0:
            return
        self.pages.append(max(0.0, (c.pages - pages) / span))
        self.bytes.append(max(0.0, (c.bytes - size) / span))
        self._last = (snap.at, c.pages, c.bytes)


STATUS_STYLES = {"2xx": "green", "3xx": "cyan", "4xx": "yellow", "5xx": "red", "error": "red"}


def progress_bar(done: int, total: int, width: int = 16) -> Text:
    """A bar of ``width`` cells, ``done`` of ``total`` filled."""
    filled = round(width * done / total) if total else 0
    return Text.assemble(("━" * filled, "magenta"), ("─" * (width - filled), "dim"))


def summary_text(snap: CrawlSnapshot) -> Text:
    """Totals, elapsed time, status mix, (with a page cap) progress and ETA, and the
    render pool (busy / idle / queued, pages rendered, browsers' memory as PSS).

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

    row("elapsed", fmt_duration(snap.elapsed_s))
    if snap.max_pages:
        done = min(c.pages, snap.max_pages)
        left = snap.max_pages - done
        eta = "-" if snap.pages_per_s <= 0 else fmt_duration(left / snap.pages_per_s)
        row("pages", f"{c.pages}/{snap.max_pages} ", progress_bar(done, snap.max_pages),
            f" {100 * done / snap.max_pages:.0f}% ETA {'done' if left == 0 else eta}")  # fmt: skip
    else:
        row("pages", f"{c.pages}  ({fmt_bytes(c.bytes)})")
    if c.duplicates or c.near_duplicates:
        row("dupes", f"{c.duplicates} exact · {c.near_duplicates} near")
    mix = Text()
    for key in ("2xx", "3xx", "4xx", "5xx", "error"):
        if c.status_mix.get(key):
            mix.append(f"{key} ", style=STATUS_STYLES[key])
            mix.append(f"{c.status_mix[key]}  ")
    row("status", mix if mix.plain else "-")
    row("frontier", f"{c.queued} queued · {c.in_flight} in flight")
    row("hosts", f"{c.hosts_known} known · {c.hosts_active} active · {c.hosts_backoff} backoff")
    row("blocked", f"{sum(c.blocked.values())} · no response {c.errors}")
    r = snap.render
    if r is None:
        row("render", "off")
    else:
        failed = f" · {r.failed} failed" if r.failed else ""
        row("render", f"{r.busy}/{r.size} busy · {r.queued} queued · {r.rendered} done · "
            f"{r.timed_out} cut{failed} · {fmt_bytes(r.pss_bytes)}")  # fmt: skip
    return text


class ThroughputPanel(Horizontal):
    """Pages/s and bytes/s charts over the last minutes, with the totals beside them."""

    def compose(self) -> ComposeResult:
        """Two labelled sparklines and the summary."""
        with Vertical(id="charts"):
            with Horizontal(classes="chart"):
                yield Static(id="pages-label", classes="chart-label")
                yield Sparkline([], id="pages-chart")
            with Horizontal(classes="chart"):
                yield Static(id="bytes-label", classes="chart-label")
                yield Sparkline([], id="bytes-chart")
        yield Static(id="summary")

    def show(self, snap: CrawlSnapshot, history: ThroughputHistory) -> None:
        """Draw ``snap`` and the chart ``history``."""
        pages = Text.assemble(("pages/s\n", "bold"), f"{snap.pages_per_s:.1f}")
        set_static(self.query_one("#pages-label", Static), pages)
        size = Text.assemble(("bytes/s\n", "bold"), fmt_bytes(snap.bytes_per_s))
        set_static(self.query_one("#bytes-label", Static), size)
        self.query_one("#pages-chart", Sparkline).data = list(history.pages)
        self.query_one("#bytes-chart", Sparkline).data = list(history.bytes)
        set_static(self.query_one("#summary", Static), summary_text(snap))


# ------------------------------------------------------------------- log


def log_line(line: str) -> RenderableType:
    """A log line, warnings and audit lines in yellow."""
    lowered = line.lower()
    style = "yellow" if any(word in lowered for word in WARN_WORDS) else ""
    return Text(line, style=style)


class LogPanel(RichLog):
    """Warnings and audit lines (robots.txt 5xx treated as allow, DNS failures,
    demotions, retries), appended as they arrive."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, max_lines=LOG_LINES, wrap=False, markup=False)
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
        for line in self._pending:
            self.write(log_line(line))
        self._pending.clear()


class HelpScreen(ModalScreen[None]):
    """The keys and the panels."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss_help", "Close"),
    ]

    def compose(self) -> ComposeResult:
        """The key table and a few lines on the panels."""
        keys = Table.grid(padding=(0, 2))
        keys.add_column(style="bold cyan", no_wrap=True)
        keys.add_column()
        for key, what in KEYS:
            keys.add_row(key, what)
        with Vertical(id="help", classes="dialog"):
            yield Static(Text("crawldeck console — keys", style="bold"))
            yield Static(keys)
            yield Static(
                "\nThroughput (top): pages/s and bytes/s over the last 3 minutes, status mix, "
                "totals, progress and ETA with --max-pages.\n"
                "Hosts: the busiest back queues (delay and where it comes from, tokens, "
                "next fetch in, robots.txt state). Backoff: hosts after 429/503. Blocked: "
                "refused URLs with their reason. Log: warnings and audit lines.\n\n"
                "[dim]Esc, q or ? closes this help.[/]"
            )

    def action_dismiss_help(self) -> None:
        """Close the help."""
        self.dismiss(None)


class AddSeedScreen(ModalScreen[str | None]):
    """Asks for a seed URL; ``await validate(url)`` returns an error text or ``None``
    (added).

    The screen stays open and shows the error until a URL is accepted or Esc is
    pressed; it is dismissed with the accepted URL (``None`` when cancelled).
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, validate: Callable[[str], Awaitable[str | None]]) -> None:
        super().__init__()
        self._validate = validate

    def compose(self) -> ComposeResult:
        """A prompt, an input and an error line."""
        with Vertical(id="add-seed", classes="dialog"):
            yield Static(Text("Add a seed URL", style="bold"))
            yield Input(placeholder="https://example.com/", id="seed-input")
            yield Static("", id="seed-error")
            yield Static("[dim]Enter adds it, Esc cancels.[/]")

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        """Validate and add the URL, or show why not."""
        event.stop()
        url = event.value.strip()
        error = await self._validate(url)
        if error is None:
            self.dismiss(url)
        else:
            self.query_one("#seed-error", Static).update(Text(error, style="bold red"))

    def action_cancel(self) -> None:
        """Close without adding anything."""
        self.dismiss(None)


def _detail_summary(detail: HostDetail, strict_robots: bool) -> Table:
    row = detail.row
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row("IP", host_ip(row))
    grid.add_row(
        "queue",
        f"{row.queued} queued · {row.in_flight} in flight · {row.fetched} fetched · "
        f"{row.errors} errors",
    )
    source = DELAY_SOURCES.get(row.delay_source, row.delay_source)
    grid.add_row(
        "politeness",
        f"delay {row.delay_ms:.0f} ms ({source}) · {row.tokens:.1f} tokens · "
        f"next fetch in {fmt_countdown(row.next_fetch_in_s)}",
    )
    crawl_delay = "none" if detail.crawl_delay_s is None else f"{detail.crawl_delay_s:g} s"
    grid.add_row(
        "robots.txt",
        Text.assemble(robots_label(row.robots_status, strict_robots), f" — {detail.robots_detail}"),
    )
    grid.add_row("Crawl-delay", crawl_delay)
    if detail.overrides:
        settings = " · ".join(f"{key} {value}" for key, value in detail.overrides)
        grid.add_row("own settings", Text(f'{settings} (hosts."{row.host}" in the config)'))
    return grid


def _rules_text(detail: HostDetail) -> Text:
    if not detail.robots_rules:
        return Text("no rules for our user-agent (everything allowed)", style="dim")
    text = Text()
    for i, (kind, pattern) in enumerate(detail.robots_rules):
        if i:
            text.append("\n")
        text.append(f"{kind.capitalize():9s}", style="green" if kind == "allow" else "red")
        text.append(pattern)
    return text


def _responses_table(detail: HostDetail) -> Table | Text:
    if not detail.responses:
        return Text("no response yet", style="dim")
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("time (UTC)", "left"),
        ("status", "right"),
        ("ms", "right"),
        ("URL", "left"),
        ("error", "left"),
    )
    for label, justify in columns:
        table.add_column(label, justify=justify, no_wrap=True)
    for r in reversed(detail.responses):
        status = "-" if r.status is None else str(r.status)
        style = "green" if r.status and r.status < 400 else "red"
        table.add_row(fmt_clock(r.at), Text(status, style=style), f"{r.elapsed_ms:.0f}",
                      r.url, r.error or "")  # fmt: skip
    return table


def _queue_text(detail: HostDetail) -> Text:
    if not detail.queue_head:
        return Text("the back queue is empty", style="dim")
    return Text("\n".join(f"{i + 1:2d}. {url}" for i, url in enumerate(detail.queue_head)))


class HostDetailScreen(ModalScreen[None]):
    """One host: summary, robots.txt rules for our user-agent, queue head, last responses.

    ``refresh_detail`` redraws it (the console calls it with a fresh ``HostDetail``
    at each refresh while the screen is open).
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,enter", "close", "Close")]

    def __init__(self, detail: HostDetail, *, strict_robots: bool = False) -> None:
        super().__init__()
        self.host = detail.row.host
        self._detail = detail
        self._strict = strict_robots

    def compose(self) -> ComposeResult:
        """The sections of the view."""
        with VerticalScroll(id="detail", classes="dialog"):
            yield Static(id="detail-title")
            yield Static(id="detail-summary")
            yield Static("robots.txt rules for our user-agent", classes="heading")
            yield Static(id="detail-rules")
            yield Static("head of the queue (next first)", classes="heading")
            yield Static(id="detail-queue")
            yield Static("last responses (newest first)", classes="heading")
            yield Static(id="detail-responses")

    def on_mount(self) -> None:
        """Draw."""
        self.refresh_detail(self._detail)

    def refresh_detail(self, detail: HostDetail) -> None:
        """Draw ``detail``."""
        self._detail = detail
        self.query_one("#detail-title", Static).update(
            Text.assemble(("Host ", "bold"), (detail.row.host, "bold cyan"), "   (Esc closes)")
        )
        self.query_one("#detail-summary", Static).update(_detail_summary(detail, self._strict))
        self.query_one("#detail-rules", Static).update(_rules_text(detail))
        self.query_one("#detail-queue", Static).update(_queue_text(detail))
        self.query_one("#detail-responses", Static).update(_responses_table(detail))

    def action_close(self) -> None:
        """Back to the panels."""
        self.dismiss(None)
