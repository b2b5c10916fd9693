"""The ``--no-ui`` reporter: one progress line every few seconds, a summary at the end,
and the crawl's log lines as they come.

Figures go to stdout, warnings to stderr: the progress lines, the summary and the
log's information lines (retries, sitemaps read) on stdout; the log's warnings (robots.txt
unreachable and allowed, a host demoted, parked or dead) on stderr as ``crawldeck:
warning: ...``, so ``crawldeck crawl ... > progress.log`` still shows them. The reporter
reads ``CrawlSnapshot``s only; the log lines come through ``logging`` (``HeadlessLog``).
"""

from __future__ import annotations

import logging
import shutil
import sys
import time
from collections.abc import Mapping
from typing import TextIO

from rich.console import Console
from rich.table import Table

from crawldeck.core.crawl.snapshot import CrawlSnapshot
from crawldeck.core.crawl.stats import reason_gloss
from crawldeck.core.words import plural
from crawldeck.tui.stops import BUDGET_FLAGS


def outcome_heading(
    outcome: str,
    caps: Mapping[str, str],
    *,
    failed: bool = False,
    stopped_by: str | None = None,
    blocked: bool = False,
) -> str:
    """The summary's heading, a sentence saying how the run ended: ``finished:
    nothing left to fetch``, ``stopped: --max-pages 50 reached`` (``caps``: each budget
    outcome's value as the operator gave it, ``{"max_pages": "50"}``), ``stopped on
    request (Ctrl-C, q or a signal); state saved`` (``stopped_by``, the engine's
    ``stop_asked_by``, names another asker: ``stopped on request from an attached
    console (crawldeck attach); state saved``), or with ``failed`` (the crawl got no
    2xx answer: every seed failed) ``ended: every seed failed, no page fetched``, or
    with ``blocked`` too (each seed refused by a rule: ``--exclude``, the scope,
    robots.txt) ``ended: every seed was blocked, no page fetched``."""
    if failed:
        return f"ended: every seed {'was blocked' if blocked else 'failed'}, no page fetched"
    if outcome == "finished":
        return "finished: nothing left to fetch"
    if outcome == "stopped":
        by = "(Ctrl-C, q or a signal)" if stopped_by is None else stopped_by
        return f"stopped on request {by}; state saved"
    flag = BUDGET_FLAGS.get(outcome)
    if flag is None:
        return f"ended: {outcome}"
    cap = caps.get(outcome)
    return f"stopped: {flag} {cap} reached" if cap else f"stopped: {flag} reached"


def _numeric(item: tuple[str, int]) -> int:
    """A ``(status text, count)`` pair's sort key: the status as a number."""
    return int(item[0]) if item[0].isdigit() else 0


#: The width the headless progress line keeps within (a terminal's default columns).
PROGRESS_WIDTH = 80


def short_count(count: int) -> str:
    """A count in at most 6 characters: ``9999``, ``12.3k``, ``4.5M`` (1k = 1000)."""
    if count < 10_000:
        return str(count)
    if count < 999_950:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.1f}M"


def clock(seconds: float) -> str:
    """``h:mm:ss`` of ``seconds`` (negative counts as 0): a progress line's elapsed time."""
    whole = max(0, int(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def summary_width(out: TextIO) -> int:
    """Columns of the end-of-crawl summary table: 100, or the terminal's width when
    ``out`` is a narrower terminal (a new user's trial: after the console at 80 x 24,
    every row of the 87-column table wrapped)."""
    try:
        if not out.isatty():
            return 100
    except (OSError, ValueError):  # the terminal is gone, the stream closed
        return 100
    return max(40, min(100, shutil.get_terminal_size((100, 24)).columns))


def progress_line(snap: CrawlSnapshot) -> str:
    """One line within ``PROGRESS_WIDTH`` columns (issue #25: it wrapped at 80): elapsed
    time (h:mm:ss), fetches (``N fetched``: all runs, ``pages_done``, what ``max_pages``
    counts, a recrawl's revisits too), of the cap, fetches/s, queued, in flight, then, while they
    fit, this run's fetches when the file held pages before it (a resume or a recrawl),
    URLs blocked and hosts active (``active hosts``: with URLs queued or in flight, not
    the summary's every host; issue #25), and in backoff; counts past 9999 as ``12.3k``. The
    blocked URLs by reason are in the summary and ``crawldeck stats``."""
    c = snap.counters
    paused = " PAUSED" if snap.state == "paused" else ""
    cap = f"/{short_count(snap.max_pages)}" if snap.max_pages else ""
    # the fetches as max_pages counts them (every run's, a recrawl's revisits too), as
    # the console's header: "fetched", not "pages", which the summary counts once a URL
    # (issue #25: a trial read "769 pages" beside the summary's 528)
    done = snap.pages_done
    line = (
        f"[{clock(snap.elapsed_s)}]{paused} {short_count(done)}{cap} fetched  "
        f"{snap.pages_per_s:.1f}/s  queued {short_count(c.queued)}  "
        f"in flight {short_count(c.in_flight)}"
    )
    backoff = f" ({short_count(c.hosts_backoff)} in backoff)" if c.hosts_backoff else ""
    blocked = sum(c.blocked.values())
    # pages_this_run counts from the run's start: below the file's count, pages came before
    resumed = snap.pages_this_run < done
    for part in (
        *([f"this run {short_count(snap.pages_this_run)}"] if resumed else []),
        f"blocked {short_count(blocked)}",
        f"active hosts {short_count(c.hosts_active)}{backoff}",
    ):
        if len(line) + 2 + len(part) > PROGRESS_WIDTH:
            break
        line += f"  {part}"
    return line


#: The logger of the crawl's log lines (``core.crawl.observer``: the console's Log tab).
CRAWL_LOGGER = "crawldeck.engine"
#: The start of the engine's line when an error stops the crawl (a full disk): the
#: command prints that error itself at the end, once, on stderr.
STOPPING = "stopping: "


class HeadlessLog(logging.Handler):
    """The crawl's log lines as they come: information as ``  HH:MM:SS LINE`` (UTC) on
    ``out``, warnings and errors as ``crawldeck: warning: LINE`` on ``err``.

    The engine's ``stopping: ERROR`` line is information here: the command ends with
    that error as its one ``crawldeck: error:`` line. Output that cannot be written
    (the terminal closed) is dropped.

    Args:
        out: where information goes (default stdout).
        err: where warnings go (default stderr).
        level: the least level printed (``logging.INFO``; ``--log-level``, ``-q``, ``-v``).
    """

    def __init__(
        self, out: TextIO | None = None, err: TextIO | None = None, level: int = logging.INFO
    ) -> None:
        super().__init__(level)
        self._out = out or sys.stdout
        self._err = err or sys.stderr
        self._level = logging.NOTSET  # the logger's, while this handler has it
        self._propagate = True

    def emit(self, record: logging.LogRecord) -> None:
        """Print one record to ``out`` or ``err`` by its level."""
        line = record.getMessage()
        try:
            if record.levelno >= logging.WARNING and not line.startswith(STOPPING):
                kind = "warning" if record.levelno == logging.WARNING else "error"
                print(f"crawldeck: {kind}: {line}", file=self._err, flush=True)
            else:
                stamp = time.strftime("%H:%M:%S", time.gmtime(record.created))
                print(f"  {stamp} {line}", file=self._out, flush=True)
        except OSError:
            pass

    def __enter__(self) -> HeadlessLog:
        """Take the crawl's log lines (``CRAWL_LOGGER`` from this handler's level up)
        until ``__exit__``."""
        logger = logging.getLogger(CRAWL_LOGGER)
        self._level, self._propagate = logger.level, logger.propagate
        logger.setLevel(self.level)
        logger.propagate = False
        logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        """Give the logger back as it was."""
        logger = logging.getLogger(CRAWL_LOGGER)
        logger.removeHandler(self)
        logger.setLevel(self._level)
        logger.propagate = self._propagate


class HeadlessReporter:
    """Prints ``progress_line`` at most every ``interval_s`` seconds.

    Args:
        out: where progress goes (default stdout).
        interval_s: seconds between two progress lines.
    """

    def __init__(self, out: TextIO | None = None, interval_s: float = 5.0) -> None:
        self._out = out or sys.stdout
        self._interval_s = interval_s
        self._last_at: float | None = None
        self._gone = False

    def __call__(self, snap: CrawlSnapshot) -> None:
        """Take one snapshot (called by the engine every ``snapshot_interval_ms``).

        Output that cannot be written (the terminal closed, the reader of a pipe went
        away) ends the reporting, never the crawl.
        """
        if self._gone:
            return
        try:
            if self._last_at is None or snap.at - self._last_at >= self._interval_s:
                self._last_at = snap.at
                print(progress_line(snap), file=self._out, flush=True)
        except OSError:
            self._gone = True

    def summary(
        self,
        snap: CrawlSnapshot,
        heading: str,
        *,
        responses: Mapping[str, int] | None = None,
        no_response: Mapping[str, int] | None = None,
        retries: Mapping[str, int] | None = None,
        partial: int = 0,
        links_cut: int = 0,
        left: int | None = None,
    ) -> None:
        """Print the end-of-crawl summary table under ``heading`` (``outcome_heading``);
        its pages are the console's (``pages`` rows: the header's and the throughput
        panel's count, errors included), split into those that got an HTTP answer and
        those that got none (the trial read the console's 30 and the summary's 28
        answered as one figure that disagreed: issue #25). ``responses`` (HTTP status
        as text -> responses: the run's stats, ``core.crawl.stats`` ``responses_by_status``)
        adds this run's responses by status, where a recrawl's 304s show (a 304 leaves
        the ``pages`` row, and so the all-runs status mix, as it was); ``no_response``
        (``FetchError.reason`` -> fetches: ``transport_errors_by_reason``) the fetches
        that got no answer, a row beside it, so that the two add up to the ``this run``
        fetches (issue #25: a trial's 137 fetches beside 136 responses). ``retries``
        (reason -> tries: ``retries_by_reason``): the tries put back for another one,
        which are not in those two rows (each URL's last try is), a row of their own, as
        ``http_503 5`` (issue #25 trial 7: 6 requests for a 503 page read as one).
        ``partial``:
        the pages read in part (``Store.partial_pages``), a row of its own when there
        are some (issue #25); ``links_cut`` likewise, the pages whose links were cut
        (``Store.links_cut_pages``). When the fetches of all runs outnumber the pages
        (a recrawl's revisits), a ``fetches (all runs)`` row gives them: the count of the
        progress line and ``max_pages`` (issue #25: 220/220 pages beside 121 pages).
        ``left``: the URLs the crawl file holds queued for the next run, when the
        caller counted them (a parked host's: the snapshot's queue is this run's)."""
        c = snap.counters
        elapsed = snap.elapsed_s
        # the heading is a line of its own: a table's title is padded to the table's width
        table = Table(show_header=False)
        table.add_column("what", style="bold")
        table.add_column("value")
        run_pages = snap.pages_this_run
        rate = run_pages / elapsed if elapsed > 0 else 0.0
        answered = c.pages - c.errors
        split = f" ({answered} answered, {c.errors} no response)" if c.errors else ""
        table.add_row("pages (all runs)", f"{c.pages}{split}")
        if snap.pages_done > c.pages:  # revisits, retries a run later: the progress line's
            again = "a URL fetched again is a fetch, not a page"  # (issue #25 trial 21)
            table.add_row("fetches (all runs)", f"{snap.pages_done} ({again})")
        table.add_row("bytes (all runs)", f"{c.bytes:,}")
        # fetches, not rows: a redirect that comes back to its URL fetches it twice
        table.add_row(
            "this run", f"{plural(run_pages, 'fetch', 'fetches')} in {elapsed:.1f} s, {rate:.1f}/s"
        )
        if snap.retried:
            table.add_row(
                "retried this run", f"{plural(snap.retried, 'URL')} that failed in earlier runs"
            )
        if partial:
            cut = f"{plural(partial, 'page')} (bodies cut at max_body_bytes or stopped)"
            table.add_row("read in part (all runs)", cut)
        if links_cut:
            # how to keep them, as a row a user acts on (issue #25 trial 7)
            # the key to raise, and where the pages are (issue #25 trial 19)
            cut = (f"{plural(links_cut, 'page')} (-s parse_max_bytes=4194304 or "
                   "max_links_per_page=N keeps them)")  # fmt: skip
            table.add_row("links cut (all runs)", cut)
        mix = ", ".join(f"{k} {v}" for k, v in sorted(c.status_mix.items())) or "-"
        table.add_row("status mix (all runs)", mix)
        if responses:
            run_mix = ", ".join(f"{k} {v}" for k, v in sorted(responses.items(), key=_numeric))
            table.add_row("responses this run", run_mix)
        if no_response:
            failed = ", ".join(f"{k} {v}" for k, v in sorted(no_response.items()))
            table.add_row("no response this run", failed)
        if retries:
            tries = ", ".join(f"{k} {v}" for k, v in sorted(retries.items()))
            table.add_row("retried tries this run", f"{tries} (each URL's last try is above)")
        table.add_row("duplicates (all runs)", f"{c.duplicates} exact, {c.near_duplicates} near")
        table.add_row("queued (left)", str(c.queued if left is None else left))
        table.add_row("hosts", str(c.hosts_known))
        for reason, count in sorted(c.blocked.items()):
            gloss = reason_gloss(reason)  # the code, as the console and stats name it
            table.add_row(
                f"blocked (all runs): {reason}", f"{count} ({gloss})" if gloss else str(count)
            )
        print(heading, file=self._out)
        Console(file=self._out, width=summary_width(self._out)).print(table)
