"""The console's tables: hosts, backoff and blocked URLs, the helpers they share, and
the CSV export of the ``e`` key.

Every panel is drawn from a ``CrawlSnapshot`` (``show(snap)``); none of them reaches
into the engine. The hosts panel also takes two narrow read functions: a host query
(called when the operator types a filter, and once when the crawl ends) and a
one-host row reader (for the few filtered rows the snapshot does not carry). Times
on screen are UTC, like the engine's log lines; countdowns are measured from the
snapshot's own ``at``, so a snapshot always draws the same picture.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Static

from crawldeck.core.crawl.snapshot import BackoffRow, BlockedRow, CrawlSnapshot, HostRow
from crawldeck.core.storage.export import Table as ExportTable
from crawldeck.core.storage.export import export
from crawldeck.core.words import plural
from crawldeck.tui.table import Cell, Column, LineTable

HostQuery = Callable[[str, int], tuple[HostRow, ...]]
HostReader = Callable[[str], HostRow | None]

#: Rows a host filter asks the engine for.
FILTER_LIMIT = 100
#: Rows asked for when the crawl has ended (the snapshot then carries no idle host).
FINAL_LIMIT = 500
#: Known hosts up to which the table shows every one: the snapshot carries the busiest
#: (those in flight or next to be fetched), so the others (a parked host, a host with
#: nothing queued) are asked for, at most once a second (``FILL_EVERY_S``).
EVERY_HOST_UP_TO = 50
#: Seconds (of snapshot time) between two asks for the hosts a snapshot leaves out, when
#: the known hosts and the snapshot's hosts are the same.
FILL_EVERY_S = 1.0

DELAY_SOURCES = {
    "default": "default",
    "crawl_delay": "Crawl-delay",
    "adaptive": "adaptive",
    "rate_limit": "rate limit",
    "backoff": "backoff",
}


# ------------------------------------------------------------------- input


class OrderedInput(Input):
    """Textual's ``Input`` that applies every key in the order it was typed.

    Textual's ``Input`` inserts a printable key itself, but a key bound to one of its
    actions (Backspace, Delete, the arrows, Enter, ...) is not handled there: it
    bubbles up through the input's parents to the app, which finds the binding and
    runs it. Keys that arrive together (a terminal read holds several) are all queued
    at the app before the first one bubbles back to it, so a Backspace ran after the
    characters typed behind it (issue #25: after a refused seed, 8 Backspaces and a
    URL typed fast gave ``fohttp://localhost:8765/howt``). Here the input runs its own
    bindings as the key reaches it, in the same queue as the printable keys.
    """

    async def _on_key(self, event: events.Key) -> None:
        if event.is_printable:
            return  # Input._on_key inserts it, next in this queue
        for key in event.aliases:
            for binding in self._bindings.key_to_bindings.get(key, ()):
                event.stop()
                event.prevent_default()  # no Input._on_key, no bubbling to the app
                await self.run_action(binding.action)
                return


# ------------------------------------------------------------------- formatting


def fmt_duration(seconds: float) -> str:
    """``h:mm:ss`` of a duration in seconds (negative counts as 0)."""
    total = max(0, int(seconds))
    return f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"


def fmt_countdown(seconds: float | None) -> str:
    """A short countdown: ``now``, ``1.2s``, ``42s``, ``3m05s``; ``-`` for ``None``."""
    if seconds is None:
        return "-"
    if seconds <= 0.05:
        return "now"
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    whole = int(seconds)
    return f"{whole // 60}m{whole % 60:02d}s"


def fmt_bytes(count: float) -> str:
    """A byte count in decimal units (1 kB = 1000 B): ``512 B``, ``1.2 kB``, ``3.4 MB``."""
    value = float(count)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def fmt_clock(at: float) -> str:
    """``HH:MM:SS`` (UTC) of an epoch time."""
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S")


def host_ip(row: HostRow) -> str:
    """The address the host's connections go to, ``-`` until it is resolved."""
    return row.ip or "-"


def robots_label(status: str, strict: bool) -> Text:
    """The robots.txt state as the operator reads it: ``fetched``, ``404 allow``,
    ``unreachable`` (a 5xx or no answer: allow all, audited; issue #25: a closed port
    read ``5xx audit``) or ``strict-blocked``, ``redirect limit``."""
    if status == "ok":
        return Text("fetched", style="green")
    if status == "missing":
        return Text("404 allow")
    if status == "unreachable":
        return Text("strict-blocked", style="bold red") if strict else Text("unreachable", "yellow")
    if status == "redirect_limit":
        return Text("redirect limit", style="yellow")
    return Text("pending", style="dim")


def set_static(widget: Static, content: Text | str) -> None:
    """Update a fixed-size ``Static`` only if its content changed, without a new layout
    (a layout of the screen costs the crawl more than the whole redraw)."""
    if widget.content != content:
        widget.update(content, layout=False)


def _num(value: float | int, fmt: str = "{:d}") -> str:
    return fmt.format(value)


# ------------------------------------------------------------------- hosts


@dataclass(frozen=True, slots=True)
class HostColumn:
    """One column of the hosts table: key, label, width, numeric (sorts descending first)."""

    key: str
    label: str
    width: int
    numeric: bool
    sort_key: Callable[[HostRow], str | int | float]


#: The hosts table's columns, the key ones first: host to robots.txt fit 80 columns
#: (with the host column at ``HOST_WIDTH``); where the delay comes from, the tokens
#: and the IP follow (the arrow keys scroll them into view).
HOST_COLUMNS: tuple[HostColumn, ...] = (
    HostColumn("host", "host", 18, False, lambda r: r.host),
    HostColumn("queued", "queue", 6, True, lambda r: r.queued),
    HostColumn("in_flight", "infl", 4, True, lambda r: r.in_flight),
    HostColumn("fetched", "fetched", 7, True, lambda r: r.fetched),
    HostColumn("errors", "err", 4, True, lambda r: r.errors),
    HostColumn("delay", "delay", 5, True, lambda r: r.delay_ms),
    HostColumn("next", "next", 6, True, lambda r: r.next_fetch_in_s),
    HostColumn("robots", "robots.txt", 14, False, lambda r: r.robots_status),
    HostColumn("source", "from", 11, False, lambda r: r.delay_source),
    HostColumn("tokens", "tok", 4, True, lambda r: r.tokens),
    HostColumn("ip", "IP", 15, False, host_ip),
)
#: The host column's width in cells: at least this, more when the terminal has room.
HOST_WIDTH = (18, 32)


def next_fetch(row: HostRow, dispatching: bool) -> Text | str:
    """The ``next`` column: ``parked`` (nothing more is sent to the host this run), else
    the countdown to the host's next fetch while the crawl sends fetches
    (``dispatching``), ``-`` while it does not (paused, stopping or over: no fetch
    comes at that time, and a countdown that went on would say one does)."""
    if row.state == "parked":
        return Text("parked", style="bold red")
    return fmt_countdown(row.next_fetch_in_s) if dispatching else "-"


def dispatching(snap: CrawlSnapshot) -> bool:
    """Whether ``snap``'s crawl sends new fetches: it runs, not paused, stopping or over."""
    return snap.state == "running"


def host_cells(row: HostRow, strict_robots: bool, dispatching: bool = True) -> list[Cell]:
    """The cells of one hosts-table row, in ``HOST_COLUMNS`` order; ``infl`` counts the
    host's fetches under way (its pages rendering are not fetches: the host detail
    counts them), as the header does (``screens.fetches_in_flight``); ``next`` as
    ``next_fetch`` words it."""
    source = DELAY_SOURCES.get(row.delay_source, row.delay_source)
    return [
        Text(row.host, style="bold") if row.in_flight or row.rendering else row.host,
        _num(row.queued),
        _num(row.in_flight),
        _num(row.fetched),
        Text(str(row.errors), style="red" if row.errors else ""),
        _num(row.delay_ms, "{:.0f}"),
        next_fetch(row, dispatching),
        robots_label(row.robots_status, strict_robots),
        Text(source, style="bold red") if row.delay_source == "backoff" else source,
        _num(row.tokens, "{:.1f}"),
        host_ip(row),
    ]


def crawl_over(snap: CrawlSnapshot) -> bool:
    """Whether ``snap`` is of a crawl that has ended (``finished`` or ``stopped``)."""
    return snap.state in ("finished", "stopped")


def host_counts(snap: CrawlSnapshot) -> str:
    """``N known · M active`` while ``snap``'s crawl runs; once it is over no host is
    active: ``N known · M with URLs left`` (hosts whose queued URLs a next run takes
    up; 0 after a crawl that finished)."""
    c = snap.counters
    active = "with URLs left" if crawl_over(snap) else "active"
    return f"{c.hosts_known} known · {c.hosts_active} {active}"


class HostsPanel(Vertical):
    """The per-host back queues: a filter box, one line of counts, a sortable table.

    Without a filter the table shows every known host up to ``EVERY_HOST_UP_TO`` (the
    snapshot's busiest, then the others ``query`` returns: a parked host, a host with
    nothing queued; the table has room for them), beyond that the snapshot's busiest
    (the engine's top N; a filter finds any host). A filter asks ``query`` once per
    change; the matching rows the snapshot does not carry are refreshed with
    ``read_row`` (one host each).
    """

    def __init__(
        self,
        query: HostQuery,
        read_row: HostReader,
        *,
        strict_robots: bool = False,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self._query = query
        self._read_row = read_row
        self._strict = strict_robots
        self.filter_text = ""
        self.sort_column: str | None = None
        self.sort_reverse = False
        self._matches: list[str] | None = None
        self._final: dict[str, HostRow] | None = None
        self._snap: CrawlSnapshot | None = None
        self._others: tuple[HostRow, ...] = ()  # known hosts the snapshot leaves out
        self._others_of: tuple[int, frozenset[str]] | None = None
        self._others_at = 0.0

    def compose(self) -> ComposeResult:
        """The filter box, the counts line and the table."""
        yield OrderedInput(placeholder="/ filter hosts (part of a host name)", id="hosts-filter")
        yield Static(id="hosts-info")
        columns = [Column(c.key, c.label, c.width, c.numeric) for c in HOST_COLUMNS]
        yield LineTable(columns, fixed=1, id="hosts-table")

    @property
    def table(self) -> LineTable:
        """The hosts table."""
        return self.query_one("#hosts-table", LineTable)

    def on_resize(self, event: events.Resize) -> None:
        """Give the host column the room the other columns leave, within ``HOST_WIDTH``
        (a cell each side of every column, one for the scroll bar)."""
        others = sum(c.width + 2 for c in HOST_COLUMNS[1:])
        low, high = HOST_WIDTH
        self.table.set_width("host", max(low, min(high, event.size.width - others - 3)))

    def set_filter(self, text: str) -> None:
        """Filter the hosts by ``text`` (case-insensitive part of the host key)."""
        text = text.strip().lower()
        if text == self.filter_text and (self._matches is not None or not text):
            return  # already shown: no new query
        self.filter_text = text
        if self._final is not None:  # the crawl is over: the final rows are asked again
            self._final = {row.host: row for row in self._query(text, FINAL_LIMIT)}
        elif self.filter_text:
            found = self._query(self.filter_text, FILTER_LIMIT)
            self._matches = [row.host for row in found]
        else:
            self._matches = None
        if self._snap is not None:
            self._ask_others(self._snap)
        self._redraw()

    def crawl_ended(self) -> None:
        """Keep every host's final row (the last snapshot carries only active hosts)."""
        self._final = {row.host: row for row in self._query(self.filter_text, FINAL_LIMIT)}
        self._redraw()

    def sort_by(self, column: str | None, reverse: bool | None = None) -> None:
        """Sort by ``column`` (a ``HOST_COLUMNS`` key; ``None``: busiest first).

        Numeric columns sort biggest first, text columns A to Z; ``reverse`` flips it
        (default: flip when the column is already the sort column).
        """
        if reverse is None:
            reverse = not self.sort_reverse if column == self.sort_column else False
        self.sort_column = column
        self.sort_reverse = reverse
        table = self.table
        for spec in HOST_COLUMNS:
            label = spec.label
            if spec.key == column:
                descending = spec.numeric != reverse
                label = f"{label}{'▼' if descending else '▲'}"
            table.set_label(spec.key, label)
        self._redraw()

    def next_sort(self) -> None:
        """Sort by the next column (after the last one: busiest first again)."""
        keys = [c.key for c in HOST_COLUMNS]
        if self.sort_column is None:
            self.sort_by(keys[0], False)
        else:
            i = keys.index(self.sort_column) + 1
            self.sort_by(keys[i] if i < len(keys) else None, False)

    def show(self, snap: CrawlSnapshot) -> None:
        """Draw ``snap``."""
        self._snap = snap
        self._ask_others(snap)
        self._redraw()

    def _ask_others(self, snap: CrawlSnapshot) -> None:
        """Ask ``query`` for the known hosts ``snap`` leaves out when there are at most
        ``EVERY_HOST_UP_TO`` (not while a filter or the final rows are shown: they ask
        for their own), again when the known hosts or the snapshot's hosts change, or
        ``FILL_EVERY_S`` later."""
        known = snap.counters.hosts_known
        if (
            self._final is not None
            or self.filter_text
            or known <= len(snap.hosts)
            or known > EVERY_HOST_UP_TO
        ):
            self._others, self._others_of = (), None
            return
        shown = frozenset(row.host for row in snap.hosts)
        of = (known, shown)
        if of != self._others_of or snap.at - self._others_at >= FILL_EVERY_S:
            found = self._query("", EVERY_HOST_UP_TO)
            self._others = tuple(row for row in found if row.host not in shown)
            self._others_of, self._others_at = of, snap.at

    def rows(self) -> list[HostRow]:
        """The rows the table shows now, in display order."""
        snap = self._snap
        if snap is None:
            return []
        live = {row.host: row for row in snap.hosts}
        if self._final is not None:
            rows = list(self._final.values())
        elif self._matches is not None:
            rows = []
            for host in self._matches:
                row = live.get(host) or self._read_row(host)
                if row is not None:
                    rows.append(row)
            known = set(self._matches)
            rows += [r for r in snap.hosts if r.host not in known and self.filter_text in r.host]
        else:
            shown = {row.host for row in snap.hosts}
            rows = [*snap.hosts, *(r for r in self._others if r.host not in shown)]
        if self.filter_text:
            rows = [r for r in rows if self.filter_text in r.host]
        if self.sort_column is not None:
            spec = next(c for c in HOST_COLUMNS if c.key == self.sort_column)
            rows.sort(key=spec.sort_key, reverse=spec.numeric != self.sort_reverse)
        return rows

    def _redraw(self) -> None:
        snap = self._snap
        if snap is None:
            return
        rows = self.rows()
        live = self._final is None and dispatching(snap)
        self.table.set_rows([(r.host, host_cells(r, self._strict, live)) for r in rows])
        c = snap.counters
        if self.filter_text and not rows:  # said as such (issue #25 trial 10)
            scope = f"no host matches {self.filter_text!r}"
        elif self._final is not None:
            what = f" matching {self.filter_text!r}" if self.filter_text else ""
            scope = f"final rows of {plural(len(rows), 'host')}{what}"
        elif self.filter_text:
            scope = f"{plural(len(rows), 'host')} match {self.filter_text!r}"
        elif len(rows) >= c.hosts_known:
            scope = "all shown"
        elif len(rows) == 1:
            scope = "showing the busiest host"
        else:
            scope = f"showing the {len(rows)} busiest"
        order = "busiest first" if self.sort_column is None else f"sorted by {self.sort_column}"
        backoff = "" if crawl_over(snap) else f" · {c.hosts_backoff} in backoff"
        info = Text.assemble(
            f"{host_counts(snap)}{backoff} — {scope}, {order}  ",
            ("(s sort, r reverse, Enter detail)", "dim"),
        )
        set_static(self.query_one("#hosts-info", Static), info)


# ------------------------------------------------------------------- backoff


BACKOFF_COLUMNS = (
    Column("host", "host", 24),
    Column("attempt", "attempt", 7, right=True),
    Column("status", "last status", 13),
    Column("retry_after", "Retry-After", 11, right=True),
    Column("until", "backoff until (UTC)", 19),
    Column("left", "left", 7, right=True),
    Column("state", "state", 7),
)


def _backoff_state(row: BackoffRow) -> Text:
    """``parked`` (nothing more is sent this run), ``demoted`` or ``backoff``."""
    if row.parked:
        return Text("parked", style="bold red")
    if row.demoted:
        return Text("demoted", style="bold red")
    return Text("backoff", style="yellow")


class BackoffPanel(Vertical):
    """The hosts in backoff: attempt, last status, Retry-After, until when, and
    whether the host is parked or demoted."""

    def compose(self) -> ComposeResult:
        """A hint line and the table."""
        yield Static(id="backoff-info")
        yield LineTable(BACKOFF_COLUMNS, fixed=1, id="backoff-table")  # the host stays

    def show(self, snap: CrawlSnapshot) -> None:
        """Draw ``snap``."""
        rows: list[tuple[str, list[Cell]]] = []
        for b in snap.backoff:
            left = None if b.backoff_until is None else b.backoff_until - snap.at
            if b.last_status is not None:
                status = str(b.last_status)
            else:  # what came instead of an answer (trial 14: a drip said "network error")
                status = b.last_error or "network error"
            retry = "-" if b.retry_after_s is None else f"{b.retry_after_s:.0f} s"
            # a time passed is no time to wait for (a parked host's last backoff ended
            # long ago: nothing, not a clock in the past; issue #25 trial)
            passed = left is None or left <= 0
            until = "-" if passed or b.backoff_until is None else fmt_clock(b.backoff_until)
            if passed and b.parked:
                left = None
            cells: list[Cell] = [
                b.host,
                _num(b.attempts),
                Text(status, style="bold yellow"),
                retry,
                until,
                fmt_countdown(left),
                _backoff_state(b),
            ]
            rows.append((b.host, cells))
        self.query_one("#backoff-table", LineTable).set_rows(rows)
        info = (
            f"{len(rows)} host(s) in backoff after 429/503 or network errors (Enter: detail)"
            if rows
            else "No host is in backoff."
        )
        set_static(self.query_one("#backoff-info", Static), info)


# ------------------------------------------------------------------- blocked


def blocked_matcher(text: str) -> Callable[[BlockedRow], bool]:
    """A predicate for the blocked filter: every word must match.

    ``reason:calendar`` matches the reason exactly, ``host:127.0`` a part of the host;
    a bare word matches a reason that starts with it or a part of the host.
    """
    words = text.lower().split()

    def match(row: BlockedRow) -> bool:
        for word in words:
            kind, sep, value = word.partition(":")
            if sep and kind == "reason":
                ok = row.reason == value
            elif sep and kind == "host":
                ok = value in row.host
            else:
                ok = row.reason.startswith(word) or word in row.host
            if not ok:
                return False
        return True

    return match


BLOCKED_COLUMNS = (
    Column("at", "UTC", 8),
    Column("reason", "reason", 18),
    Column("host", "host", 16),
    Column("url", "URL (path on its host)", 80),
)
#: The blocked table's host column in cells: its width at 80 columns, and at most this
#: when a wider terminal leaves room beside the URL's 80 (issue #25 trial 9: at 160
#: columns the host was cut while the URL had room).
BLOCKED_HOST_WIDTH = (16, 40)


def url_on_host(url: str, host: str) -> str:
    """``url`` without its ``scheme://host`` when that is ``host`` (the row's host
    column already says it), so an 80-column table shows the path and query:
    ``url_on_host("http://a.test:8080/x?q", "a.test:8080") == "/x?q"``; any other URL
    (another host, unparsable) whole."""
    _, sep, rest = url.partition("://")
    if sep and (rest == host or rest.startswith((f"{host}/", f"{host}?", f"{host}#"))):
        return rest[len(host) :] or "/"
    return url


class BlockedPanel(Vertical):
    """The refused URLs, newest first: counts per reason, a filter, a table."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.filter_text = ""
        self._snap: CrawlSnapshot | None = None
        self.shown: list[BlockedRow] = []

    def compose(self) -> ComposeResult:
        """Counts, filter box and table."""
        yield Static(id="blocked-counts")
        yield OrderedInput(placeholder="/ filter: reason or host (reason:calendar) · "
                                "←→↑↓ scroll the table",
                    id="blocked-filter")  # fmt: skip
        yield LineTable(BLOCKED_COLUMNS, id="blocked-table")

    def on_resize(self, event: events.Resize) -> None:
        """Give the host column the room the other columns leave, within
        ``BLOCKED_HOST_WIDTH`` (a cell each side of every column, one for the scroll
        bar)."""
        others = sum(c.width + 2 for c in BLOCKED_COLUMNS if c.key != "host")
        low, high = BLOCKED_HOST_WIDTH
        width = max(low, min(high, event.size.width - others - 3))
        self.query_one("#blocked-table", LineTable).set_width("host", width)

    def set_filter(self, text: str) -> None:
        """Show only the rows ``blocked_matcher(text)`` accepts."""
        self.filter_text = text.strip()
        if self._snap is not None:
            self.show(self._snap)

    def show(self, snap: CrawlSnapshot) -> None:
        """Draw ``snap``."""
        self._snap = snap
        match = blocked_matcher(self.filter_text)
        self.shown = [row for row in reversed(snap.blocked) if match(row)]
        rows: list[tuple[str, list[Cell]]] = [
            (
                f"{r.at}|{r.url}",
                [
                    fmt_clock(r.at),
                    Text(r.reason, style="magenta"),
                    r.host,
                    url_on_host(r.url, r.host),
                ],
            )
            for r in self.shown
        ]
        self.query_one("#blocked-table", LineTable).set_rows(rows)
        counts = snap.counters.blocked
        total = sum(counts.values())
        text = Text(f"{total} blocked", style="bold")
        for reason, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            text.append("  ")
            text.append(reason, style="magenta")
            text.append(f" {count}")
        if self.filter_text:
            text.append(f"   ({len(self.shown)} of the {len(snap.blocked)} most recent shown)")
        set_static(self.query_one("#blocked-counts", Static), text)


# ------------------------------------------------------------------- export (the e key)

#: Tables written by ``e``, as ``crawldeck export`` writes them.
EXPORT_TABLES: tuple[ExportTable, ...] = ("pages", "blocked", "hosts", "links")


def export_dir(db: Path, now: datetime | None = None) -> Path:
    """``<db dir>/<db stem>-export-<UTC YYYYmmdd-HHMMSS>``: where ``e`` writes."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return db.parent / f"{db.stem}-export-{stamp}"


def export_tables(db: Path, out_dir: Path) -> dict[str, int]:
    """Write ``EXPORT_TABLES`` of ``db`` as ``out_dir/<table>.csv``; rows per table.

    Raises:
        StoreError: ``db`` cannot be read as a crawl file.
        OSError: ``out_dir`` cannot be written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for table in EXPORT_TABLES:
        with (out_dir / f"{table}.csv").open("w", encoding="utf-8", newline="") as out:
            counts[table] = export(db, table, "csv", out)
    return counts
