"""The live console: a Textual app that runs the crawl and shows it, host by host.

The engine runs in the app's own asyncio loop (a Textual worker awaits
``engine.run()``). The engine calls back with a ``CrawlSnapshot`` every
``snapshot_interval_ms``; the callback feeds the throughput history and posts a
``SnapshotReady`` message that replaces any one still queued, and the app draws the
latest snapshot at most ``MAX_REFRESH_PER_S`` times a second. The UI reads nothing
else from the engine but ``query_hosts`` (the operator types a host filter; the crawl
ends) and ``host_detail`` (a detail view is open, or a filtered row is off the
snapshot), and sends it commands: ``pause``, ``resume``, ``add_seeds``,
``request_stop``.

The layout follows the terminal: below 100 columns or 30 lines the throughput panel
keeps its figures and drops its chart (the header, the ETA and the hosts table's key
columns fit 80 x 24; the other columns scroll into view with the arrow keys); from 140
columns and 40 lines an overview between the throughput panel and the tables charts the
whole run, the status mix and the frontier's depth per priority.

``run_console(engine, db)`` is what ``crawldeck crawl`` and ``crawldeck demo`` call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import ClassVar, Protocol

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.message import Message
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Footer, Input, Static, TabbedContent, TabPane

from crawldeck.core.crawl.engine import CrawlResult
from crawldeck.core.crawl.snapshot import BackoffRow, CrawlSnapshot, HostDetail, HostRow
from crawldeck.core.errors import CrawldeckError
from crawldeck.core.storage.link_report import broken_count
from crawldeck.core.words import spelled_size
from crawldeck.tui.history import CrawlHistory, ThroughputHistory
from crawldeck.tui.host_detail import HostDetailScreen
from crawldeck.tui.screens import (
    AddSeedScreen,
    HelpScreen,
    LogPanel,
    OverviewPanel,
    StatusBar,
    ThroughputPanel,
    key_rows,
    own_bindings,
)
from crawldeck.tui.stops import (
    BUDGET_FLAGS,
    go_on_line,
    hold_stop_signals,
    seed_rerun,
    stop_signals,
)
from crawldeck.tui.table import LineTable
from crawldeck.tui.terminal import HangupTolerantDriver, TerminalGone
from crawldeck.tui.widgets import (
    BackoffPanel,
    BlockedPanel,
    HostsPanel,
    dispatching,
    export_dir,
    export_tables,
)

#: The console redraws at most this often (snapshots in between are dropped).
MAX_REFRESH_PER_S = 4
#: The engine's snapshot interval the console asks for (``config.snapshot_interval_ms``).
UI_SNAPSHOT_INTERVAL_MS = 1000 // MAX_REFRESH_PER_S
#: Terminal width (cells) below which the footer is compact (one cell between keys).
FOOTER_COMPACT_BELOW = 100
#: Seconds between two updates of the tabs' counts.
LABELS_EVERY_S = 1.0
#: Seconds a host filter waits for the operator to stop typing before asking the engine.
FILTER_DEBOUNCE_S = 0.3
#: URLs of a host's queue the detail view lists.
DETAIL_QUEUE_HEAD = 10
#: Tab ids, in key order (1-4).
TABS = ("tab-hosts", "tab-backoff", "tab-blocked", "tab-log")
#: Tab labels of the help and the footer, by tab id.
TAB_NAMES = {"tab-hosts": "Hosts", "tab-backoff": "Backoff", "tab-blocked": "Blocked",
             "tab-log": "Log"}  # fmt: skip


def stop_reason(outcome: str, snap: CrawlSnapshot) -> str:
    """Why a run stopped before its frontier was empty (``CrawlResult.outcome``), in
    the flags the operator typed (issue #25: not the config's ``max_pages``):
    ``--max-pages 50 reached``, ``--max-time 600s spent``, ``--max-bytes 5MB
    reached`` (the value from ``snap``, left out when it has none), or ``stopped on
    request, state saved``."""
    if outcome == "stopped":
        return "stopped on request, state saved"
    flag = BUDGET_FLAGS.get(outcome)
    if flag is None:
        return outcome
    values: dict[str, object] = {
        "max_pages": snap.max_pages,
        "max_time": None if snap.max_time_s is None else f"{snap.max_time_s:g}s",
        "max_bytes": None if snap.max_bytes is None else spelled_size(snap.max_bytes),
    }
    value = values.get(outcome)
    verb = "spent" if outcome == "max_time" else "reached"
    return f"{flag} {value} {verb}" if value else f"{flag} {verb}"


#: What ``a`` says once the crawl is over (or stopping) when the command that crawls on
#: with a seed is not known (the demo starts anew; a recrawl takes no seed).
SEEDS_OVER = "The crawl is over: start a new crawl to add seeds."
#: The seed box's title once the crawl is over: it still takes the URL (keys typed
#: after ``a`` go to it, not to the console's keys) and answers with the command.
SEEDS_OVER_TITLE = "The crawl is over: a URL typed here gets the command that adds it"
#: What the keys of that box do (it adds nothing itself: issue #25 trial 16).
SEEDS_OVER_KEYS = "Enter shows the command, Esc closes."
#: The keys that act on a running crawl: once it has ended they leave the footer.
RUNNING_ONLY = frozenset({"toggle_pause", "stop_crawl"})
#: What q, Ctrl-C and Ctrl-Q do (the help's line).
QUIT_TIP = "quit: stop cleanly, state saved, the resume command printed"
#: What ``q`` does once the run has ended (FINISHED, STOPPED): the help says so.
ENDED_QUIT_TIP = "quit: close the console (the run has ended, its state is saved)"
#: The table that takes the focus on each tab.
TAB_TABLES = {
    "tab-hosts": "#hosts-table",
    "tab-backoff": "#backoff-table",
    "tab-blocked": "#blocked-table",
    "tab-log": "#log",
}


class CrawlSource(Protocol):
    """What the console needs from a crawl; ``core.crawl.engine.Engine`` provides it.

    ``subscribe`` (called with every published snapshot), ``run``, the commands
    ``add_seeds`` (before the run) and ``add_seeds_live`` (during it; both return
    ``(url, reason)`` per refused seed), ``pause``, ``resume``,
    ``request_stop``, and the reads ``paused``, ``snapshot``, ``query_hosts`` and
    ``host_detail`` (see ``Engine``).
    """

    def subscribe(self, callback: Callable[[CrawlSnapshot], None]) -> None: ...
    def add_seeds(self, seed_urls: Iterable[str]) -> list[tuple[str, str]]: ...
    async def add_seeds_live(self, seed_urls: Iterable[str]) -> list[tuple[str, str]]: ...
    async def run(self) -> CrawlResult: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    @property
    def paused(self) -> bool: ...
    def request_stop(self) -> None: ...
    def snapshot(self) -> CrawlSnapshot: ...
    def query_hosts(self, text: str = "", limit: int = 50) -> tuple[HostRow, ...]: ...
    def host_detail(self, host: str, queue_head: int = 20) -> HostDetail | None: ...


class SnapshotReady(Message):
    """A new snapshot was published; a newer one replaces it in the queue."""

    def __init__(self, snapshot: CrawlSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def can_replace(self, message: Message) -> bool:
        """Only the latest snapshot matters."""
        return isinstance(message, SnapshotReady)


class CrawlApp(App[None]):
    """The crawldeck console over one crawl (see the module docstring).

    Args:
        engine: the crawl (``Engine`` or anything with the ``CrawlSource`` methods);
            ``add_seeds`` must already have been called.
        db: the crawl's SQLite file (shown in the header; ``e`` exports next to it).
        strict_robots: ``robots_on_failure`` is ``disallow`` (an unreachable
            robots.txt shows as ``strict-blocked``).
        resume_hint: the line that tells how to continue this crawl, as the CLI prints
            it when the run stopped (``resume with: crawldeck crawl ... --db ...``),
            shown once the run stops before its frontier is empty (``q``, a signal, a
            budget); ``None``: the stop is shown without it.
        seed_command: the crawl's command split where one more seed goes (``crawldeck
            crawl``, shell-quoted, and the rest of its arguments): once the run has
            ended, ``a``'s box answers a URL with that command and the URL, as a rerun
            adds a seed (``cli.runner.Ending.seed_command``; after a whole-crawl
            budget with the cap raised); ``None``: ``SEEDS_OVER``.
        driver_class: Textual's driver (``None``: Textual's choice, which follows
            ``TEXTUAL_DRIVER``, as textual-serve sets it for ``crawldeck attach --web``).

    After the app exits, ``result`` holds the crawl's ``CrawlResult`` (``None`` if
    the console closed before the crawl ended) and ``error`` what ``run`` raised.
    """

    CSS_PATH = Path(__file__).with_name("app.tcss")
    TITLE = "crawldeck"
    ENABLE_COMMAND_PALETTE = False
    # Textual annotates these ``ClassVar[...] | None``, which mypy reads as instance
    # variables: a ClassVar annotation here would not type-check, hence the noqa.
    HORIZONTAL_BREAKPOINTS = [  # noqa: RUF012
        (0, "-narrow"),
        (100, "-normal"),
        (140, "-wide"),
    ]
    VERTICAL_BREAKPOINTS = [  # noqa: RUF012
        (0, "-short"),
        (30, "-medium"),
        (40, "-tall"),
    ]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "toggle_pause", "Pause/Resume",
                tooltip="pause / resume: fetches in flight finish, no new one starts"),
        Binding("a", "add_seed", "Add seed",
                tooltip="add a seed URL (validated; it also widens the scope)"),
        # a priority binding: taken when the App reads the key, not after the focused
        # table passed it up, so the keys typed behind it go to the box (``check_action``)
        Binding("slash", "filter", "Filter", priority=True,
                tooltip="filter the hosts or blocked table (Enter or Esc: back to it)"),
        Binding("enter", "detail", "Detail",
                tooltip="detail of the host under the cursor (hosts, backoff, blocked)"),
        Binding("e", "export", "Export",
                tooltip="export pages, blocked, hosts, links to CSV beside the file"),
        Binding("q", "quit", "Quit", tooltip=QUIT_TIP),
        Binding("question_mark", "help", "Help", tooltip="this help"),
        Binding("f1", "help", "Help", show=False, tooltip="this help"),
        Binding("s", "sort", "Sort", show=False,
                tooltip="sort the hosts by the next column (or click a header)"),
        Binding("r", "reverse", "Reverse", show=False, tooltip="reverse the hosts' order"),
        Binding("escape", "leave_filter", "Back", show=False,
                tooltip="cancel a filter (its box emptied) and go back to its table"),
        Binding("ctrl+c,ctrl+q", "quit", "Quit", show=False, priority=True, tooltip=QUIT_TIP),
        *(Binding(str(i + 1), f"tab('{tab}')", f"{TAB_NAMES[tab]} tab", show=False)
          for i, tab in enumerate(TABS)),
    ]  # fmt: skip

    def __init__(
        self,
        engine: CrawlSource,
        db: Path,
        *,
        strict_robots: bool = False,
        resume_hint: str | None = None,
        seed_command: tuple[str, tuple[str, ...]] | None = None,
        driver_class: type[Driver] | None = HangupTolerantDriver,
    ) -> None:
        super().__init__(driver_class=driver_class)
        self.engine = engine
        self.db = db
        self.strict_robots = strict_robots
        self.resume_hint = resume_hint
        self.seed_command = seed_command
        self.result: CrawlResult | None = None
        self.error: BaseException | None = None
        self.snapshot: CrawlSnapshot | None = None
        self.history = ThroughputHistory()
        self.run_history = CrawlHistory()
        self.last_export: Path | None = None
        self._latest: CrawlSnapshot | None = None
        self._last_draw = 0.0
        self._draw_timer: Timer | None = None
        self._filter_timer: Timer | None = None
        self._quitting = False
        self._detail: HostDetailScreen | None = None
        self._tab_labels: dict[str, str] = {}
        self._labels_at = 0.0
        self._label_timer: Timer | None = None
        self._drawn: CrawlSnapshot | None = None
        self._blocked_shown: dict[str, int] = {}
        self._backoff_shown: tuple[BackoffRow, ...] = ()

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        """Header line, the resume line (once stopped), throughput panel, the overview
        (large terminals), the tabs, the footer."""
        yield StatusBar(id="status")
        yield Static(id="resume")
        yield ThroughputPanel(id="throughput")
        # above the tabs: a short table leaves its blank rows at the bottom, not
        # between the table and the overview
        yield OverviewPanel(id="overview")
        with TabbedContent(id="tabs", initial="tab-hosts"):
            with TabPane("Hosts", id="tab-hosts"):
                yield HostsPanel(
                    self.engine.query_hosts, self._read_row, strict_robots=self.strict_robots
                )
            with TabPane("Backoff", id="tab-backoff"):
                yield BackoffPanel()
            with TabPane("Blocked", id="tab-blocked"):
                yield BlockedPanel()
            with TabPane("Log", id="tab-log"):
                yield LogPanel(id="log")
        yield Footer()

    def on_mount(self) -> None:
        """Subscribe, start the crawl in a worker, draw a first picture."""
        self.engine.subscribe(self._on_engine_snapshot)
        self.run_worker(self._drive(), name="engine", group="engine", exit_on_error=False)
        self._on_engine_snapshot(self.engine.snapshot())
        self.query_one("#hosts-table", LineTable).focus()

    def on_resize(self, event: events.Resize) -> None:
        """Below ``FOOTER_COMPACT_BELOW`` columns the footer packs its keys closer, so
        the attached console's extra key (``S Stop``) fits 80 columns with the rest."""
        with contextlib.suppress(NoMatches):  # a resize before the footer is mounted
            self.query_one(Footer).compact = event.size.width < FOOTER_COMPACT_BELOW

    @property
    def hosts_panel(self) -> HostsPanel:
        """The hosts panel."""
        return self.query_one(HostsPanel)

    # ------------------------------------------------------------------ the crawl

    async def _drive(self) -> None:
        try:
            result = await self.engine.run()
        except Exception as exc:  # shown by the CLI once the terminal is restored
            self.error = exc
            self.exit()
            return
        self.result = result
        self.hosts_panel.crawl_ended()
        self.refresh_bindings()  # the keys of a running crawl leave the footer
        self._draw_now()
        if self._quitting:
            self.exit()
        elif result.outcome == "finished":
            broken = await asyncio.to_thread(self._broken_links)
            said = "" if not broken else f"; {broken} broken links (listed when you quit)"
            self.notify(f"The crawl has finished{said}. q quits.", title="FINISHED", timeout=10)
        else:
            reason = stop_reason(result.outcome, self.engine.snapshot())
            self._show_resume(
                f"Stopped: {reason}; q quits.", go_on_line(result.outcome, self.resume_hint)
            )

    def _broken_links(self) -> int:
        """The crawl file's broken links (``core.storage.link_report.broken_count``), 0 when it
        cannot be read: the console's end says how many; the summary printed when it
        closes lists the first (``cli.output.broken_lines``)."""
        try:
            return broken_count(self.db)
        except CrawldeckError:
            return 0

    def _show_resume(self, why: str, go_on: str | None = None) -> None:
        """Show ``why`` the run stops and how to continue it: ``go_on`` (``go_on_line``),
        else ``resume_hint``."""
        text = Text(why, style="bold")
        hint = go_on or self.resume_hint
        if hint is not None:
            text.append(" ")
            text.append(hint, style="bold cyan")
        resume = self.query_one("#resume", Static)
        resume.update(text)
        resume.display = True

    def _on_engine_snapshot(self, snap: CrawlSnapshot) -> None:
        """The engine's subscriber: O(1), runs in the engine's task."""
        self.history.add(snap)
        self.run_history.add(snap)
        self._latest = snap
        self.post_message(SnapshotReady(snap))

    def on_snapshot_ready(self, _: SnapshotReady) -> None:
        """Draw now, or at the next refresh slot if the last draw was too recent."""
        self._schedule_draw()

    def _schedule_draw(self) -> None:
        """At most ``MAX_REFRESH_PER_S`` draws a second: now, or at the next slot."""
        if self._draw_timer is not None:
            return
        wait = self._last_draw + 1 / MAX_REFRESH_PER_S - time.monotonic()
        if wait <= 0:
            self._draw_now()
        else:
            self._draw_timer = self.set_timer(wait, self._draw_now)

    def _draw_now(self) -> None:
        if self._draw_timer is not None:
            self._draw_timer.stop()
            self._draw_timer = None
        if self._latest is not None:
            self._last_draw = time.monotonic()
            self._drawn = self._latest
            with contextlib.suppress(NoMatches):  # the app is closing: its widgets are gone
                self.draw(self._latest)

    def _relabel_now(self) -> None:
        """The trailing edge of the labels' throttle: when snapshots stop coming (the
        crawl ended, or a test's engine published its last), the tab labels and the
        counts drawn with them catch up with the last snapshot a second later."""
        self._label_timer = None
        self._labels_at = 0.0  # the next draw relabels: within the draws' own limit
        self._schedule_draw()

    @property
    def drawing_settled(self) -> bool:
        """Whether the last snapshot received is on screen, tab labels included: no
        draw and no relabel is pending."""
        return (
            self._latest is not None
            and self._drawn is self._latest
            and self._draw_timer is None
            and self._label_timer is None
        )

    def draw(self, snap: CrawlSnapshot) -> None:
        """Draw ``snap``: the header, the throughput panel, the tab on show and (in a
        large terminal) the overview.

        Hidden tabs are drawn when they are shown: a table that changes lays the
        screen out again, and that costs the crawl time.
        """
        log = self.query_one(LogPanel)
        log.take(snap)
        c = snap.counters
        now = time.monotonic()
        relabel = now - self._labels_at >= LABELS_EVERY_S or snap.state in ("finished", "stopped")
        if relabel:
            self._blocked_shown = c.blocked
            self._backoff_shown = snap.backoff
            if self._label_timer is not None:
                self._label_timer.stop()
                self._label_timer = None
        elif self._label_timer is None:
            self._label_timer = self.set_timer(
                LABELS_EVERY_S - (now - self._labels_at), self._relabel_now
            )
        # the blocked counts and the hosts backing off change with the tab labels (at
        # most once a second), so a label, the panels and its tab show one figure: the
        # overview's "backoff" counts the Backoff tab's rows (hosts whose last answer
        # started or continued a backoff), not only those waiting at this instant
        snap = replace(
            snap,
            counters=replace(
                c, blocked=self._blocked_shown, hosts_backoff=len(self._backoff_shown)
            ),
            backoff=self._backoff_shown,
        )
        c = snap.counters
        self.snapshot = snap
        self._draw_status()
        self.query_one(ThroughputPanel).show(snap, self.history)
        self.query_one(OverviewPanel).show(snap, self.run_history)  # hidden: nothing painted
        tabs = self.query_one(TabbedContent)
        self._draw_tab(tabs.active, snap)
        if relabel:
            self._labels_at = now  # a new label lays the screen out: not 4 times a second
            self._label("tab-hosts", f"Hosts {c.hosts_known}")
            self._label("tab-backoff", f"Backoff {len(snap.backoff)}")
            self._label("tab-blocked", f"Blocked {sum(c.blocked.values())}")
            self._label("tab-log", f"Log {log.count}")
        if self._detail is not None:
            detail = self.engine.host_detail(self._detail.host, DETAIL_QUEUE_HEAD)
            if detail is not None:
                self._detail.refresh_detail(detail, self._dispatching())

    def _draw_tab(self, tab: str, snap: CrawlSnapshot) -> None:
        if tab == "tab-hosts":
            self.hosts_panel.show(snap)
        elif tab == "tab-backoff":
            self.query_one(BackoffPanel).show(snap)
        elif tab == "tab-blocked":
            self.query_one(BlockedPanel).show(snap)
        elif tab == "tab-log":
            self.query_one(LogPanel).flush()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """Draw a tab as it is shown (the Log after the layout that shows it: its lines
        wrap at the width they are written at, and a hidden panel's is not its own)."""
        if self.snapshot is not None and event.pane.id is not None:
            if event.pane.id == "tab-log":
                self.call_after_refresh(self.query_one(LogPanel).flush)
            else:
                self._draw_tab(event.pane.id, self.snapshot)

    def _label(self, tab: str, label: str) -> None:
        if self._tab_labels.get(tab) != label:
            self._tab_labels[tab] = label
            self.query_one(TabbedContent).get_tab(tab).label = label

    def display_state(self) -> str:
        """``RUNNING``, ``PAUSED``, ``STOPPING``, ``FINISHED`` (the frontier is empty) or
        ``STOPPED`` (asked to, or a budget reached: the crawl can be resumed)."""
        if self.result is not None:
            return "FINISHED" if self.result.outcome == "finished" else "STOPPED"
        if self._quitting:
            return "STOPPING"
        if self.engine.paused:
            return "PAUSED"
        state = self.snapshot.state if self.snapshot else "running"
        return "RUNNING" if state == "paused" else state.upper()

    def _draw_status(self) -> None:
        state = self.display_state()
        self.sub_title = state
        self.query_one(StatusBar).show(state, self.db.name, self.snapshot)

    def _dispatching(self) -> bool:
        """Whether the crawl sends fetches now (``widgets.dispatching`` of the snapshot
        drawn, and the run has not ended): the next fetch's countdown runs."""
        snap = self.snapshot
        return self.result is None and snap is not None and dispatching(snap)

    def _read_row(self, host: str) -> HostRow | None:
        detail = self.engine.host_detail(host, 0)
        return None if detail is None else detail.row

    # ------------------------------------------------------------------ keys

    def action_toggle_pause(self) -> None:
        """p: pause or resume dispatching (in-flight fetches finish); off once the run
        has ended (``check_action``)."""
        if self._quitting:
            self.notify("The crawl is stopping.", severity="warning")
            return
        if self.engine.paused:
            self.engine.resume()
        else:
            self.engine.pause()
        self._draw_status()

    def action_add_seed(self) -> None:
        """a: ask for a seed URL; once the crawl is over the box still opens (the URL
        typed or pasted after ``a`` goes to it, not to the console's keys: issue #25
        trial 15) and answers with the command that crawls on with it; without that
        command (``seed_command`` ``None``) ``SEEDS_OVER`` is said at once."""
        over = self.result is not None or self._quitting
        if over and self.seed_command is None:  # nothing to tell a URL: say so at once
            self.notify(SEEDS_OVER, severity="warning")
            return
        screen = (
            AddSeedScreen(self._add_seed, title=SEEDS_OVER_TITLE, keys=SEEDS_OVER_KEYS)
            if over
            else AddSeedScreen(self._add_seed)
        )
        self.push_screen(screen, self._seed_added)

    async def _add_seed(self, url: str) -> str | None:
        if not url:
            return "Enter a URL, e.g. https://example.com/"
        if self.result is not None or self._quitting:
            return self._seed_over(url)
        refused = await self.engine.add_seeds_live([url])
        if refused:
            return f"Refused: {refused[0][1]}"
        return None

    def _seed_over(self, url: str) -> str:
        """What the seed box says to ``url`` once the crawl is over: the command that
        adds it (``tui.stops.seed_rerun``), else ``SEEDS_OVER``."""
        if self.seed_command is None:
            return SEEDS_OVER
        outcome = "" if self.result is None else self.result.outcome
        command = seed_rerun(self.seed_command, url, outcome, self.engine.snapshot())
        return f"To add it, run: {command}"

    def _seed_added(self, url: str | None) -> None:
        if url:
            self.notify(f"Seed added: {url}")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``/`` (a priority binding) is a filter key only over the tables: a ``/``
        typed in a box (a filter, a seed URL) or a dialog is that box's character."""
        if action == "filter":
            return not isinstance(self.focused, Input) and not isinstance(self.screen, ModalScreen)
        if action in RUNNING_ONLY:  # hidden once the run has ended (issue #25 trial 15)
            return self.result is None
        return True

    def action_filter(self) -> None:
        """/: focus the filter of the hosts tab (or of the blocked tab when shown), at
        once: ``Widget.focus`` moves the focus after the keys already queued, so a
        filter typed in the same write as ``/`` went to the table (issue #25 trial 9)."""
        tabs = self.query_one(TabbedContent)
        if tabs.active == "tab-blocked":
            self.set_focus(self.query_one("#blocked-filter", Input))
            return
        tabs.active = "tab-hosts"
        self.set_focus(self.query_one("#hosts-filter", Input))

    def on_input_changed(self, event: Input.Changed) -> None:
        """Filter as the operator types (hosts: after a short pause)."""
        if event.input.id == "blocked-filter":
            self.query_one(BlockedPanel).set_filter(event.value)
        elif event.input.id == "hosts-filter":
            if self._filter_timer is not None:
                self._filter_timer.stop()
            value = event.value
            self._filter_timer = self.set_timer(
                FILTER_DEBOUNCE_S, lambda: self.hosts_panel.set_filter(value)
            )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in a filter: apply it now and go back to the table."""
        if event.input.id == "hosts-filter":
            if self._filter_timer is not None:
                self._filter_timer.stop()
            self.hosts_panel.set_filter(event.value)
            self.query_one("#hosts-table", LineTable).focus()
        elif event.input.id == "blocked-filter":
            self.query_one("#blocked-table", LineTable).focus()

    def action_leave_filter(self) -> None:
        """Esc: cancel the filter (its box emptied, every row shown again) and go back
        to its table, as Esc cancels a search in less or vim; Enter keeps a filter."""
        focused = self.focused
        if isinstance(focused, Input) and focused.id in ("hosts-filter", "blocked-filter"):
            if self._filter_timer is not None:
                self._filter_timer.stop()
            focused.value = ""
            if focused.id == "hosts-filter":
                self.hosts_panel.set_filter("")
            else:
                self.query_one(BlockedPanel).set_filter("")
        self._focus_tab_table()

    def action_tab(self, tab: str) -> None:
        """1-4: show a tab."""
        self.query_one(TabbedContent).active = tab
        self._focus_tab_table()

    def _focus_tab_table(self) -> None:
        active = self.query_one(TabbedContent).active
        self.query_one(TAB_TABLES.get(active, "#hosts-table")).focus()

    def action_sort(self) -> None:
        """s: sort the hosts by the next column."""
        self.hosts_panel.next_sort()

    def action_reverse(self) -> None:
        """r: reverse the hosts' order."""
        panel = self.hosts_panel
        panel.sort_by(panel.sort_column, not panel.sort_reverse)

    def on_line_table_header_selected(self, event: LineTable.HeaderSelected) -> None:
        """A click on a hosts column header sorts by it (again: reversed)."""
        if event.table.id == "hosts-table":
            self.hosts_panel.sort_by(event.column)

    def on_line_table_row_selected(self, event: LineTable.RowSelected) -> None:
        """Enter on a row: that host's detail."""
        event.stop()
        self.action_detail()

    def action_detail(self) -> None:
        """Enter: the detail view of the host under the cursor."""
        host = self._cursor_host()
        if host is None:
            self.notify("No host under the cursor.", severity="warning")
            return
        detail = self.engine.host_detail(host, DETAIL_QUEUE_HEAD)
        if detail is None:
            if self.query_one(TabbedContent).active == "tab-blocked":
                # a trial read "Unknown host" for a host whose every URL was refused
                refused = f"No detail for {host}: none of its URLs was queued (refused)."
                self.notify(refused, severity="warning")
            else:
                self.notify(f"Unknown host {host}.", severity="warning")
            return
        self._detail = HostDetailScreen(
            detail, strict_robots=self.strict_robots, dispatching=self._dispatching()
        )
        self.push_screen(self._detail, self._detail_closed)

    def _detail_closed(self, _: None) -> None:
        self._detail = None

    def _cursor_host(self) -> str | None:
        active = self.query_one(TabbedContent).active
        if active == "tab-blocked":
            panel = self.query_one(BlockedPanel)
            row = self.query_one("#blocked-table", LineTable).cursor_row
            return panel.shown[row].host if 0 <= row < len(panel.shown) else None
        table_id = "#backoff-table" if active == "tab-backoff" else "#hosts-table"
        return self.query_one(table_id, LineTable).cursor_key

    def action_export(self) -> None:
        """e: export the tables as CSV next to the crawl file (in a thread)."""
        out_dir = export_dir(self.db)
        self.run_worker(
            lambda: self._export(out_dir), name="export", thread=True, exit_on_error=False
        )

    def _export(self, out_dir: Path) -> None:
        try:
            counts = export_tables(self.db, out_dir)
        except (CrawldeckError, OSError) as exc:
            self.call_from_thread(self.notify, f"Export failed: {exc}", severity="error")
            return
        self.last_export = out_dir
        rows = ", ".join(f"{table} {n}" for table, n in counts.items())
        self.call_from_thread(self.notify, f"Exported {rows} to {out_dir}/", timeout=8)

    def action_help(self) -> None:
        """?, F1: every key of the console's in force here (``key_rows`` of the bindings;
        Textual's own, ``own_bindings`` leaves out)."""
        active = own_bindings(self.screen.active_bindings.values())
        rows = key_rows(active, self.get_key_display)
        if self.result is not None:  # the run is over: q only closes the console
            rows = [(keys, ENDED_QUIT_TIP if what == QUIT_TIP else what) for keys, what in rows]
        self.push_screen(HelpScreen(rows))

    async def action_quit(self) -> None:
        """q, Ctrl-C: stop the crawl cleanly (state saved), then close."""
        self.request_quit()

    def on_terminal_gone(self, _: TerminalGone) -> None:
        """The terminal closed under the console: stop as ``q`` does."""
        self.request_quit()

    def request_quit(self) -> None:
        """Stop the crawl and close once ``run`` returned (at once if it already has)."""
        if self.result is not None or self.error is not None:
            self.exit()
            return
        if self._quitting:
            self.notify("Stopping: in-flight fetches finish first.")
            return
        self._quitting = True
        self.engine.request_stop()
        self._draw_status()
        with contextlib.suppress(NoMatches):  # the app is closing: its widgets are gone
            self._show_resume("Stopping: in-flight fetches finish, state is saved.")


async def run_console(
    engine: CrawlSource,
    db: Path,
    *,
    strict_robots: bool = False,
    headless: bool = False,
    size: tuple[int, int] | None = None,
    resume_hint: str | None = None,
    seed_command: tuple[str, tuple[str, ...]] | None = None,
) -> CrawlResult | None:
    """Run the console over ``engine`` in the running loop until the operator quits
    (``run_app``); ``resume_hint`` is shown when the run stops, ``seed_command`` is
    how a seed is added once it has ended (see ``CrawlApp``).

    Returns:
        the crawl's result, ``None`` if the console closed before the crawl ended.

    Raises:
        Exception: what ``engine.run()`` raised, once the terminal is restored.
    """
    app = CrawlApp(
        engine, db, strict_robots=strict_robots, resume_hint=resume_hint, seed_command=seed_command
    )
    await run_app(app, headless=headless, size=size)
    if app.error is not None:
        raise app.error
    return app.result


async def run_app(
    app: CrawlApp, *, headless: bool = False, size: tuple[int, int] | None = None
) -> None:
    """Run ``app`` in the running loop until it exits.

    The signals of ``tui.stops.stop_signals`` (SIGINT, SIGTERM and SIGHUP: the
    terminal closed, a dropped ssh session) call ``app.request_quit`` (the crawl's
    console: stop cleanly, state saved; the attached one: detach). Log records are
    kept off the terminal while the console owns it (the engine's warnings are in the
    Log tab). ``headless`` (with a ``size`` in columns and lines) draws to no
    terminal: for tests and benchmarks.
    """
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
        hold_stop_signals(loop, signals)
        root.handlers[:] = handlers
