"""The console of a cluster crawl: the coordinator's view of every worker.

``crawldeck crawl SEEDS --workers N`` (and ``demo --workers N``) opens it instead of the
single-process console: this process fetches nothing, it runs the ``Coordinator``
(``core.cluster.coordinator``), so the console shows the cluster, not one engine's
hosts. It runs ``coordinator.run(seeds)`` as a task of the app's loop and draws
``coordinator.snapshot()`` (a ``ClusterSnapshot``) every ``REFRESH_S``: the header
(state, elapsed, pages, pages/s, bytes, Redis, collector lag), the cluster totals
(workers live and late, hosts owned and claimable, status mix, blocked by reason), the
Workers panel (one row per heartbeat; a ``late`` worker's row in red) and the
coordinator's log lines. It reads nothing else from the coordinator and sends it only
``pause``, ``resume``, ``add_seeds`` and ``request_stop``, which act on the whole crawl
(every worker reads the crawl's control in Redis at its next heartbeat).

The app exits when the run task ends (finished, stopped, or ``max_pages`` reached) and
``run_cluster_console`` returns its outcome.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Protocol

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.widgets import Footer, RichLog, Static

from crawldeck.core.cluster.coordinator import ClusterSnapshot, Outcome, WorkerRow
from crawldeck.core.errors import CrawldeckError, UrlError
from crawldeck.core.policy.urls import clean
from crawldeck.tui.screens import STATE_STYLES, STATUS_STYLES, AddSeedScreen, log_line
from crawldeck.tui.stops import stop_signals
from crawldeck.tui.table import Cell, Column, LineTable
from crawldeck.tui.terminal import HangupTolerantDriver, TerminalGone
from crawldeck.tui.widgets import fmt_bytes, fmt_duration, set_static

#: Seconds between two redraws from ``coordinator.snapshot()``.
REFRESH_S = 0.25
#: Lines of the coordinator's log kept on screen.
LOG_LINES = 500

WORKER_COLUMNS = (
    Column("id", "worker", 20),
    Column("machine", "machine", 10),
    Column("hosts", "hosts", 5, right=True),
    Column("pages", "pages", 7, right=True),
    Column("pages_per_s", "pages/s", 7, right=True),
    Column("age", "beat s", 6, right=True),
    Column("state", "state", 8),
)

#: How a worker's state is drawn; a late worker's whole row is red (``LATE_STYLE``).
WORKER_STATE_STYLES = {"running": "green", "paused": "yellow", "stopping": "dark_orange"}
LATE_STYLE = "bold red"


class ClusterSource(Protocol):
    """What the cluster console needs from a crawl; ``Coordinator`` provides it.

    ``run(seeds)`` (the outcome: ``finished``, ``stopped``, ``max_pages``), the reads
    ``snapshot()`` and ``paused``, the commands ``pause``, ``resume``, ``request_stop``
    and ``add_seeds`` (see ``Coordinator``).
    """

    async def run(self, seeds: Sequence[str]) -> Outcome: ...
    def snapshot(self) -> ClusterSnapshot: ...
    @property
    def paused(self) -> bool: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def request_stop(self) -> None: ...
    async def add_seeds(self, seeds: Sequence[str]) -> None: ...


# ------------------------------------------------------------------- drawing


def fmt_lag(lag_ms: float | None) -> str:
    """The collector's lag: ``-`` before anything was collected, ``120 ms``, ``3.4 s``."""
    if lag_ms is None:
        return "-"
    return f"{lag_ms:.0f} ms" if lag_ms < 1000 else f"{lag_ms / 1000:.1f} s"


def header_text(state: str, db_name: str, snap: ClusterSnapshot) -> Text:
    """The header line: ``state`` (upper case, coloured as the single-process
    console's), Redis (``ok``, or ``DOWN`` while the coordinator's last look failed),
    elapsed, pages, pages/s, bytes, the collector's lag and the crawl file's name; the
    most urgent first, as a narrow terminal cuts the end."""
    text = Text.assemble(
        (" crawldeck ", "bold"), (f" {state} ", STATE_STYLES.get(state, "bold")), " "
    )
    if snap.redis_down:
        text.append(" Redis DOWN ", style="bold white on red")
    else:
        text.append("Redis ok", style="green")
    text.append(
        f" · {fmt_duration(snap.elapsed_s)} · pages {snap.pages} · {snap.pages_per_s:.1f}/s"
        f" · {fmt_bytes(snap.bytes)} · collector lag {fmt_lag(snap.collector_lag_ms)}"
        f" · {db_name}"
    )
    if state == "STOPPING":
        text.append("   workers finish their fetches …", style="italic")
    return text


def totals_text(snap: ClusterSnapshot) -> Text:
    """The cluster totals, four lines: workers (live, late, paused), hosts (owned,
    claimable), the status mix of the pages, blocked URLs by reason."""
    states = [w.state for w in snap.workers]
    late = states.count("late")
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"{'workers':9s}", style="bold")
    text.append(f"{len(states) - late} live · ")
    text.append(f"{late} late", style=LATE_STYLE if late else "")
    if states.count("paused"):
        text.append(f" · {states.count('paused')} paused", style="yellow")
    text.append(f"\n{'hosts':9s}", style="bold")
    text.append(f"{snap.owned_hosts} owned · {snap.claimable_hosts} claimable")
    text.append(f"\n{'status':9s}", style="bold")
    mix = [(k, snap.status_mix[k]) for k in ("2xx", "3xx", "4xx", "5xx", "error")
           if snap.status_mix.get(k)]  # fmt: skip
    for key, count in mix:
        text.append(f"{key} ", style=STATUS_STYLES[key])
        text.append(f"{count}  ")
    if not mix:
        text.append("-")
    text.append(f"\n{'blocked':9s}", style="bold")
    text.append(str(sum(snap.blocked.values())))
    for reason, count in sorted(snap.blocked.items(), key=lambda kv: (-kv[1], kv[0])):
        text.append("  ")
        text.append(reason, style="magenta")
        text.append(f" {count}")
    return text


def worker_cells(row: WorkerRow) -> list[Cell]:
    """The cells of one Workers row, in ``WORKER_COLUMNS`` order; every cell of a
    ``late`` worker (no heartbeat for longer than the lease) is ``LATE_STYLE``."""
    values = [row.id, row.machine, str(row.hosts), str(row.pages), f"{row.pages_per_s:.1f}",
              f"{row.age_s:.1f}"]  # fmt: skip
    if row.state == "late":
        late: list[Cell] = [Text(value, style=LATE_STYLE) for value in values]
        return [*late, Text("late", style="bold white on red")]
    return [*values, Text(row.state, style=WORKER_STATE_STYLES.get(row.state, ""))]


class WorkersTable(LineTable):
    """The Workers panel's table: a ``LineTable`` whose Enter selects nothing (no
    ``Detail`` key in the footer: a worker has no detail view)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "select", "Select", show=False)]


class CoordinatorLog(RichLog):
    """The coordinator's log lines (a worker exited, Redis went away), appended as
    they come; warnings in yellow as in the single-process console's log."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, max_lines=LOG_LINES, wrap=True, markup=False)
        self._last: str | None = None

    def take(self, lines: Sequence[str]) -> None:
        """Write the lines of ``lines`` (the coordinator's last lines, oldest first)
        after the last one written, wrapped at the panel's width."""
        start = 0
        if self._last is not None and self._last in lines:
            start = len(lines) - list(lines)[::-1].index(self._last)
        width = self.scrollable_content_region.width or None  # 0: not laid out yet
        for line in lines[start:]:
            self.write(log_line(line), width=width)
        if lines:
            self._last = lines[-1]


# ------------------------------------------------------------------- the app


class ClusterApp(App[None]):
    """The console of a cluster crawl (see the module docstring).

    Args:
        coordinator: the crawl (``Coordinator`` or anything with the ``ClusterSource``
            methods); its ``run`` is started when the app mounts.
        db: the crawl file (its name is shown in the header).
        seeds: the seeds ``run`` publishes.

    ``run_task`` is the task of ``coordinator.run(seeds)`` (``None`` before the app
    mounted); the app exits when it ends. After that, ``outcome`` is its outcome and
    ``error`` what it raised.
    """

    CSS_PATH = Path(__file__).with_name("app.tcss")
    CSS = """
    #totals { height: 6; border: round $primary; border-title-color: $primary;
              border-title-style: bold; padding: 0 1; }
    #workers { height: 2fr; min-height: 6; border: round $primary;
               border-title-color: $primary; border-title-style: bold; }
    #cluster-log { height: 1fr; min-height: 5; overflow-y: auto; border: round $primary;
                   border-title-color: $primary; border-title-style: bold; }
    """
    TITLE = "crawldeck"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "toggle_pause", "Pause/Resume"),
        Binding("a", "add_seed", "Add seed"),
        Binding("q", "quit", "Stop"),
        Binding("ctrl+c", "quit", "Stop", show=False, priority=True),
    ]

    def __init__(self, coordinator: ClusterSource, db: Path, seeds: Sequence[str]) -> None:
        super().__init__(driver_class=HangupTolerantDriver)
        self.coordinator = coordinator
        self.db = db
        self.seeds = list(seeds)
        self.run_task: asyncio.Task[Outcome] | None = None
        self.outcome: Outcome | None = None
        self.error: BaseException | None = None
        self.snapshot: ClusterSnapshot | None = None
        self._quitting = False

    def compose(self) -> ComposeResult:
        """The header, the cluster totals, the Workers panel, the log, the footer."""
        yield Static(id="status")
        totals = Static(id="totals")
        totals.border_title = "Cluster"
        yield totals
        with Vertical(id="workers") as workers:
            workers.border_title = "Workers"
            yield WorkersTable(WORKER_COLUMNS, id="workers-table")
        log = CoordinatorLog(id="cluster-log")
        log.border_title = "Coordinator log"
        yield log
        yield Footer()

    def on_mount(self) -> None:
        """Start the crawl, draw once laid out, then every ``REFRESH_S``."""
        self.run_task = asyncio.get_running_loop().create_task(self.coordinator.run(self.seeds))
        self.run_task.add_done_callback(self._run_ended)
        self.call_after_refresh(self.draw)  # laid out: the log wraps at its width
        self.set_interval(REFRESH_S, self.draw)
        self.query_one("#workers-table", LineTable).focus()

    def _run_ended(self, task: asyncio.Task[Outcome]) -> None:
        if task.cancelled():
            self.error = asyncio.CancelledError()
        elif (exc := task.exception()) is not None:
            self.error = exc
        else:
            self.outcome = task.result()
        self.exit()

    @property
    def over(self) -> bool:
        """The run task has ended."""
        return self.run_task is not None and self.run_task.done()

    def display_state(self) -> str:
        """``RUNNING``, ``PAUSED``, ``STOPPING``, ``FINISHED`` or ``STOPPED``."""
        if self.over:
            return "STOPPED" if self.outcome == "stopped" else "FINISHED"
        if self._quitting:
            return "STOPPING"
        if self.coordinator.paused:
            return "PAUSED"
        state = self.snapshot.state if self.snapshot else "running"
        return state.upper()

    def draw(self) -> None:
        """Draw ``coordinator.snapshot()``: header, totals, workers, log."""
        snap = self.coordinator.snapshot()
        self.snapshot = snap
        try:
            self._draw_status()
            set_static(self.query_one("#totals", Static), totals_text(snap))
            late = sum(1 for w in snap.workers if w.state == "late")
            title = f"Workers · {len(snap.workers)}" + (f" · {late} late" if late else "")
            self.query_one("#workers", Vertical).border_title = title
            rows = [(w.id, worker_cells(w)) for w in snap.workers]
            self.query_one("#workers-table", LineTable).set_rows(rows)
            self.query_one(CoordinatorLog).take(snap.log)
        except NoMatches:  # the app is closing: its widgets are gone
            return

    def _draw_status(self) -> None:
        state = self.display_state()
        self.sub_title = state
        if self.snapshot is not None:
            set_static(self.query_one("#status", Static),
                       header_text(state, self.db.name, self.snapshot))  # fmt: skip

    # ------------------------------------------------------------------ keys

    def action_toggle_pause(self) -> None:
        """p: pause or resume the whole crawl (in-flight fetches finish)."""
        if self.over or self._quitting:
            self.notify("The crawl is stopping.", severity="warning")
            return
        if self.coordinator.paused:
            self.coordinator.resume()
        else:
            self.coordinator.pause()
        self._draw_status()

    def action_add_seed(self) -> None:
        """a: ask for a seed URL, added to the whole crawl."""
        self.push_screen(AddSeedScreen(self._add_seed), self._seed_added)

    async def _add_seed(self, url: str) -> str | None:
        if not url:
            return "Enter a URL, e.g. https://example.com/"
        if self.over or self._quitting:
            return "The crawl is stopping: start a new crawl to add seeds."
        try:
            await self.coordinator.add_seeds([clean(url)])
        except UrlError as exc:
            return f"Refused: {exc}"
        except CrawldeckError as exc:  # Redis gone past redis_outage_s
            return f"Not added: {exc}"
        return None

    def _seed_added(self, url: str | None) -> None:
        if url:
            self.notify(f"Seed added: {url} (the workers check its scope and traps)")

    async def action_quit(self) -> None:
        """q, Ctrl-C: stop the whole crawl; the app closes when the run has ended."""
        self.request_quit()

    def on_terminal_gone(self, _: TerminalGone) -> None:
        """The terminal closed under the console: stop as ``q`` does."""
        self.request_quit()

    def request_quit(self) -> None:
        """Stop the whole crawl (every worker finishes its fetches and gives its hosts
        back); the app exits when the run task ends (at once if it has)."""
        if self.over:
            self.exit()
            return
        if self._quitting:
            self.notify("Stopping: every worker finishes its in-flight fetches first.")
            return
        self._quitting = True
        self.coordinator.request_stop()
        self._draw_status()


async def run_cluster_console(
    coordinator: ClusterSource,
    db: Path,
    seeds: Sequence[str],
    *,
    headless: bool = False,
    size: tuple[int, int] | None = None,
) -> Outcome:
    """Run the cluster console over ``coordinator.run(seeds)`` in the running loop.

    The signals of ``tui.stops.stop_signals`` act like ``q`` (the whole crawl stops,
    its state stays in Redis and the file); log records are kept off the terminal while
    the console owns it (the coordinator's lines are in its log panel). ``headless``
    (with a ``size`` in columns and lines) draws to no terminal: for tests. If the app
    closes before the run ended (it failed), the crawl is stopped and waited for.

    Returns:
        the run's outcome: ``finished``, ``stopped`` or ``max_pages``.

    Raises:
        Exception: what ``coordinator.run`` raised (``ClusterError``, ``StoreError``),
            once the terminal is restored.
    """
    app = ClusterApp(coordinator, db, seeds)
    loop = asyncio.get_running_loop()
    root = logging.getLogger()
    handlers = root.handlers[:]
    for handler in handlers:
        root.removeHandler(handler)
    root.addHandler(logging.NullHandler())
    signals = stop_signals()
    for sig in signals:
        loop.add_signal_handler(sig, app.request_quit)
    try:
        await app.run_async(headless=headless, size=size)
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
        root.handlers[:] = handlers
    task = app.run_task
    if task is None:  # the app failed before it mounted: nothing was started
        raise RuntimeError("the cluster console closed before the crawl started")
    if not task.done():
        coordinator.request_stop()
    return await task


__all__ = ["ClusterApp", "ClusterSource", "run_cluster_console"]
