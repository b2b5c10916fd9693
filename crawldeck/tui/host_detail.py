"""The host detail screen (Enter on a host): its politeness state, robots.txt, queue
head and recent responses, drawn from a ``HostDetail`` handed to it; it never reaches
into the engine."""

from __future__ import annotations

from typing import ClassVar

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from crawldeck.core.crawl.snapshot import HostDetail, HostRow
from crawldeck.core.words import plural
from crawldeck.tui.widgets import (
    DELAY_SOURCES,
    fmt_clock,
    fmt_countdown,
    host_ip,
    url_on_host,
)

#: What each robots.txt state is called in the host detail, and its style.
ROBOTS_WORDS = {
    "ok": ("fetched", "green"),
    "missing": ("missing", ""),
    "unreachable": ("unreachable", "yellow"),
    "redirect_limit": ("redirect limit", "yellow"),
}


def robots_line(detail: HostDetail, strict_robots: bool) -> Text:
    """The host detail's robots.txt line, each fact once: the state, the HTTP status
    and why (when it says more than the status), what the crawl does about it, and when
    the file is asked again: ``missing (HTTP 404), allow all · expires in 3480 s``,
    ``fetched (HTTP 200) · expires in 3480 s``, ``unreachable (no response: connect),
    allow all, audited · expires in 60 s``; ``robots.txt not fetched yet`` before it
    was asked (``HostDetail.robots_why`` ``None``)."""
    if detail.robots_why is None:
        return Text("robots.txt not fetched yet")
    status = detail.row.robots_status
    word, style = ROBOTS_WORDS.get(status, (status, ""))
    code = detail.robots_http
    why = detail.robots_why
    if code is not None and why == str(code):
        why = ""
    elif code is not None and why.startswith(f"{code} "):  # "301 without a usable Location"
        why = why[len(str(code)) + 1 :]
    said = "no response" if code is None else f"HTTP {code}"
    text = Text.assemble((word, style), f" ({said}: {why})" if why else f" ({said})")
    if status in ("missing", "redirect_limit"):
        text.append(", allow all")
    elif status == "unreachable":
        blocked = detail.robots_rules == (("disallow", "/"),)
        if strict_robots and (blocked or not detail.robots_rules):
            text.append(", every URL blocked (strict)", style="bold red")
        elif detail.robots_rules:
            text.append(", the rules of the last copy fetched")
        else:
            text.append(", allow all, audited")
    if detail.robots_expires_in_s is not None:
        text.append(f" · expires in {detail.robots_expires_in_s:.0f} s")
    return text


def next_fetch_words(row: HostRow, dispatching: bool) -> str:
    """When the host detail says the host's next fetch comes: ``in 1.2s``, ``never
    this run`` (parked), ``-`` while the crawl sends no fetch (``widgets.next_fetch``)."""
    if row.state == "parked":
        return "never this run (parked)"
    return f"in {fmt_countdown(row.next_fetch_in_s)}" if dispatching else "-"


def _detail_summary(detail: HostDetail, strict_robots: bool, dispatching: bool = True) -> Table:
    row = detail.row
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row("IP", host_ip(row))
    rendering = f" · {row.rendering} rendering" if row.rendering else ""
    grid.add_row(
        "queue",
        f"{row.queued} queued · {row.in_flight} in flight{rendering} · {row.fetched} fetched"
        f" · {plural(row.errors, 'error')}",
    )
    source = DELAY_SOURCES.get(row.delay_source, row.delay_source)
    grid.add_row(
        "politeness",
        f"delay {row.delay_ms:.0f} ms ({source}) · {row.tokens:.1f} tokens · "
        f"next fetch {next_fetch_words(row, dispatching)}",
    )
    crawl_delay = "none" if detail.crawl_delay_s is None else f"{detail.crawl_delay_s:g} s"
    grid.add_row("robots.txt", robots_line(detail, strict_robots))
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


#: The most cells the host detail gives a response's URL (its path and query).
URL_CELLS = 40


class ResponsesTable:
    """The host's last responses as a Rich table sized to the width it is drawn in
    (``_responses_table`` makes it).

    Args:
        rows: newest first, each ``(time "HH:MM:SS" UTC, HTTP status or None, elapsed
            ms as text, URL as shown, error text or "")``.
    """

    def __init__(self, rows: list[tuple[str, int | None, str, str, str]]) -> None:
        self.rows = rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The table within ``options.max_width`` cells."""
        # time, status and ms (22 cells) and 8 of padding; the URL half of the rest
        url_cells = max(8, min(URL_CELLS, (options.max_width - 30) // 2))
        table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold", expand=True)
        table.add_column("time (UTC)", width=10, no_wrap=True)
        table.add_column("status", justify="right", width=6, no_wrap=True)
        table.add_column("ms", justify="right", width=6, no_wrap=True)
        table.add_column("URL", no_wrap=True, overflow="ellipsis", max_width=url_cells)
        table.add_column("error", no_wrap=True, overflow="ellipsis", ratio=1)
        for at, code, ms, url, error in self.rows:
            style = "green" if code and code < 400 else "red"
            table.add_row(at, Text("-" if code is None else str(code), style=style), ms, url, error)
        yield table


def _responses_table(detail: HostDetail) -> ResponsesTable | Text:
    """The host's last responses, newest first: time, status and ms at their full
    width (a long error squeezed them to ``ti…`` and no status; issue #25 trial 6),
    then the URL without its ``scheme://host`` (the title says it; up to ``URL_CELLS``,
    at most half of what is left) and the error in the rest, each cut with ``…``."""
    if not detail.responses:
        return Text("no response yet", style="dim")
    host = detail.row.host
    return ResponsesTable([
        (fmt_clock(r.at), r.status, f"{r.elapsed_ms:.0f}", url_on_host(r.url, host), r.error or "")
        for r in reversed(detail.responses)
    ])  # fmt: skip


def _queue_text(detail: HostDetail) -> Text:
    """The host's next URLs, numbered, each with its OPIC cash first under ``opic``, and
    its in-links after the cash under ``opic-inlinks``."""
    if not detail.queue_head:
        return Text("the back queue is empty", style="dim")
    if detail.queue_inlinks:
        lines3 = zip(detail.queue_head, detail.queue_scores, detail.queue_inlinks, strict=True)
        return Text(
            "\n".join(
                f"{i + 1:2d}. cash {cash:<#9.3g} {n:5d} in-links  {url}"
                for i, (url, cash, n) in enumerate(lines3)
            )
        )
    if detail.queue_scores:
        lines = zip(detail.queue_head, detail.queue_scores, strict=True)
        return Text(
            "\n".join(f"{i + 1:2d}. {cash:#9.3g}  {url}" for i, (url, cash) in enumerate(lines))
        )
    return Text("\n".join(f"{i + 1:2d}. {url}" for i, url in enumerate(detail.queue_head)))


class HostDetailScreen(ModalScreen[None]):
    """One host: summary, robots.txt rules for our user-agent, queue head, last responses.

    ``refresh_detail`` redraws it (the console calls it with a fresh ``HostDetail``
    at each refresh while the screen is open).
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,enter", "close", "Close")]

    def __init__(
        self, detail: HostDetail, *, strict_robots: bool = False, dispatching: bool = True
    ) -> None:
        super().__init__()
        self.host = detail.row.host
        self._detail = detail
        self._strict = strict_robots
        self.dispatching = dispatching

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

    def refresh_detail(self, detail: HostDetail, dispatching: bool | None = None) -> None:
        """Draw ``detail``; ``dispatching``: whether the crawl sends fetches (the next
        fetch's countdown runs; ``None``: as before)."""
        self._detail = detail
        if dispatching is not None:
            self.dispatching = dispatching
        self.query_one("#detail-title", Static).update(
            Text.assemble(("Host ", "bold"), (detail.row.host, "bold cyan"), "   (Esc closes)")
        )
        self.query_one("#detail-summary", Static).update(
            _detail_summary(detail, self._strict, self.dispatching)
        )
        self.query_one("#detail-rules", Static).update(_rules_text(detail))
        self.query_one("#detail-queue", Static).update(_queue_text(detail))
        self.query_one("#detail-responses", Static).update(_responses_table(detail))

    def action_close(self) -> None:
        """Back to the panels."""
        self.dismiss(None)
