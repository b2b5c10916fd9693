"""The run of a crawl, shared by ``crawl``, ``demo`` and ``recrawl``: the checks before it
(``-o``, ``--stats-json``, ``--warc-dir``, a cluster's limits), the crawl itself,
headless (``cli.headless``, the attach socket open) or in the console (``tui.app``),
its summary and exit code (``Ending``: how the end is told and how to go on), and the
files written after it (``-o``, ``--stats-json``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import resource
import shlex
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from crawldeck.cli.flags import (
    FLAG_NAMES,
    OUTPUT_FORMATS,
    log_level,
    output_format,
    unknown_output_name,
)
from crawldeck.cli.headless import HeadlessLog, HeadlessReporter, outcome_heading
from crawldeck.cli.output import (
    EXIT_OK,
    EXIT_SEEDS_FAILED,
    EXIT_STOPPED,
    broken_lines,
    fail,
    program,
)
from crawldeck.core.config import CrawlConfig
from crawldeck.core.crawl.stats import read_run
from crawldeck.core.errors import CrawldeckError, without_url
from crawldeck.core.storage.store import Store
from crawldeck.core.words import plural, spelled_size
from crawldeck.tui.stops import (
    BUDGET_FLAGS,
    WHOLE_CRAWL_BUDGETS,
    hold_stop_signals,
    raised_budget,
    raised_cap,
    stop_signals,
)

if TYPE_CHECKING:
    from crawldeck.core.crawl.engine import Engine
    from crawldeck.core.crawl.metrics import MetricsServer


#: The soft limit on open files a crawl asks for (see ``raise_open_files_limit``).
OPEN_FILES_WANTED = 65_536


def output_problem(output: Path | None, db: Path) -> str | None:
    """Why ``-o output`` cannot be written when the crawl in ``db`` ends (checked before
    it starts), ``None`` when it can: ``-`` (stdout carries the crawl's own lines:
    ``export -o -`` writes a table there), a name not ending as ``OUTPUT_FORMATS`` know
    (``unknown_output_name``, as ``export`` says it), a directory that does not exist
    or that no file can be made in (a probe: issue #25 trial 16 learnt it when the crawl
    had ended), or the crawl file itself."""
    if output is None:
        return None
    if output == Path("-"):
        return ("-o -: the crawl's progress and summary go to stdout; write the pages there "
                f"with crawldeck export {shlex.quote(str(db))} -o -")  # fmt: skip
    if output_format(output) is None:
        return unknown_output_name(output)
    if not output.resolve().parent.is_dir():
        return f"-o {str(output)!r}: the directory {str(output.parent)!r} does not exist"
    why = cannot_write_in(output.resolve().parent)
    if why is not None:
        return f"-o {str(output)!r}: cannot write in {str(output.parent)!r} ({why})"
    if output.exists() and db.exists() and output.samefile(db):
        return f"-o {str(output)!r} is the crawl file itself"
    return None


def warc_dir_problem(config: CrawlConfig) -> str | None:
    """Why the WARC files of this crawl cannot go to its ``warc_dir`` (checked before
    the crawl starts, the directory made when missing: ``mkdir -p``), ``None`` when
    they can or it has none: a directory that cannot be made, a file that is not a
    directory, or one a file cannot be made in (a probe file, made and removed)."""
    if not config.warc or config.warc_dir is None:
        return None
    directory = Path(config.warc_dir)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        return f"--warc-dir {config.warc_dir!r}: not a directory"
    except OSError as exc:
        return f"--warc-dir {config.warc_dir!r}: cannot make it ({exc.strerror or exc})"
    why = cannot_write_in(directory)
    if why is not None:
        return f"--warc-dir {config.warc_dir!r}: cannot write in it ({why})"
    return None


def cannot_write_in(directory: Path) -> str | None:
    """Why no file can be made in ``directory`` (the error's text: ``Permission
    denied``, ``Read-only file system``), found by making an unnamed temporary file
    there and closing it (so an immutable directory, which root's ``access`` check
    passes, is found too); ``None`` when one can."""
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def stats_json_problem(path: Path | None, db: Path) -> str | None:
    """Why ``--stats-json path`` cannot be written when the run in ``db`` ends (checked
    before it starts), ``None`` when it can: a directory that does not exist or that
    no file can be made in (``cannot_write_in``), a directory itself, or the crawl
    file."""
    if path is None:
        return None
    if path.is_dir():
        return f"--stats-json {str(path)!r} is a directory, not a file"
    if not path.resolve().parent.is_dir():
        return f"--stats-json {str(path)!r}: the directory {str(path.parent)!r} does not exist"
    why = cannot_write_in(path.resolve().parent)
    if why is not None:
        return f"--stats-json {str(path)!r}: cannot write in {str(path.parent)!r} ({why})"
    if path.exists() and db.exists() and path.samefile(db):
        return f"--stats-json {str(path)!r} is the crawl file itself"
    return None


def write_stats(command: str, db: Path, path: Path | None, code: int) -> int:
    """After a run of ``db`` that ended with exit ``code``: with ``--stats-json path``,
    write its stats object (``runs.stats`` of the last run, as ``crawldeck stats DB
    --json`` prints it) to ``path``, through a temporary file renamed over it, and say
    so on stdout; ``code``, or ``EXIT_BAD_INPUT`` when the run has no stats (a store
    failure ended it) or the file cannot be written (one line on stderr)."""
    if path is None:
        return code
    try:
        run = read_run(db)
    except CrawldeckError as exc:
        return fail(command, f"--stats-json: {exc}")
    if run.stats is None:
        return fail(command, f"--stats-json: run {run.id} of {db} has no stats ({run.status})")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(run.stats, indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return fail(command, f"--stats-json: cannot write {str(path)!r}: {exc.strerror}")
    with contextlib.suppress(OSError):
        print(f"run {run.id} stats written to {path}", flush=True)
    return code


def write_output(command: str, db: Path, output: Path | None, code: int) -> int:
    """After a crawl that ended with exit ``code``: with ``-o output``, write the pages
    table there (``core.storage.export.export_file``: atomic) and say how many rows on stdout;
    ``code``, or ``EXIT_BAD_INPUT`` when the export failed (one line on stderr)."""
    if output is None:
        return code
    from crawldeck.core.storage.export import export_file

    try:
        count = export_file(db, "pages", OUTPUT_FORMATS[output.suffix.lower()], output)
    except CrawldeckError as exc:
        return fail(command, f"-o: {exc}")
    except OSError as exc:
        return fail(command, f"-o: cannot write {str(output)!r}: {exc.strerror}")
    with contextlib.suppress(OSError):
        print(f"{plural(count, 'page')} written to {output}", flush=True)
    return code


def start_metrics(config: CrawlConfig) -> MetricsServer | None:
    """The run's Prometheus metrics server (``core.crawl.metrics``), started, when
    ``metrics_port`` asks for one, else ``None``.

    Raises:
        ConfigError: the port cannot be bound (one line).
    """
    if not config.metrics_port:
        return None
    from crawldeck.core.crawl.metrics import MetricsServer

    metrics = MetricsServer(config.metrics_port, config.metrics_address)
    metrics.start()
    return metrics


async def run_crawl(
    config: CrawlConfig,
    store: Store,
    db: Path,
    seeds: Sequence[str],
    ending: Ending,
    *,
    ui: bool = False,
    metrics: MetricsServer | None = None,
    log_level: int = logging.INFO,
    cleaned: bool = False,
) -> int:
    """Run one crawl into the open ``store``, headless (its log lines through
    ``HeadlessLog`` from the engine's first, ``resuming: ...``, from ``log_level`` up;
    progress lines unless it is above ``logging.INFO``: ``-q``) or in the console
    (``ui``); returns the exit code; closes the store. ``ending`` tells the summary
    how to say the run ended and how to go on (``_finish``). ``cleaned``: the ``seeds``
    are ``urls.clean``'s results already (``gather_seeds``). With ``metrics_port``, serves
    the run's Prometheus metrics until it ends (``core.crawl.metrics``): through ``metrics``,
    started by the caller (``start_metrics``), else started here; closed at the end.

    Raises:
        ConfigError: the metrics port cannot be bound (before the engine is made).
    """
    try:
        with contextlib.ExitStack() as headless:
            if metrics is not None:
                headless.callback(metrics.close)
            if not ui:
                headless.enter_context(HeadlessLog(level=log_level))
            if metrics is None:
                metrics = start_metrics(config)
                if metrics is not None:
                    headless.callback(metrics.close)
            from crawldeck.core.crawl.engine import Engine

            engine = Engine(config, store)
            for url, why in engine.add_seeds(seeds, cleaned=cleaned):
                print(f"crawldeck: seed refused: {url}: {why}", file=sys.stderr)
            if metrics is not None:
                metrics.watch(engine)
            if ui:
                return await _crawl_console(engine, store, config, db, ending)
            return await _crawl_headless(
                engine, store, db, ending, progress=log_level <= logging.INFO,
                strict_robots=config.robots_on_failure == "disallow",
            )  # fmt: skip
    finally:
        store.close()


async def _crawl_headless(
    engine: Engine,
    store: Store,
    db: Path,
    ending: Ending,
    *,
    progress: bool = True,
    strict_robots: bool = False,
) -> int:
    """Run the crawl with progress lines (``HeadlessReporter``; none without
    ``progress``), stopped cleanly by ``stop_signals``, its attach socket open
    (``core.crawl.attach``: ``crawldeck attach DB``; a socket that cannot be made is one
    warning, the crawl goes on without); the summary and exit code (``_finish``)."""
    from crawldeck.core.crawl.attach import AttachServer

    if progress:
        engine.subscribe(HeadlessReporter())
    server = AttachServer(
        engine,
        db,
        strict_robots=strict_robots,
        resume_hint=ending.resume,
        seed_command=ending.seed_command(),
    )
    attach: AttachServer | None = server
    try:
        await server.start()
    except CrawldeckError as exc:
        print(f"crawldeck: warning: {exc}", file=sys.stderr, flush=True)
        attach = None
    loop = asyncio.get_running_loop()
    stopped_by_signal = False

    def on_signal() -> None:
        nonlocal stopped_by_signal
        stopped_by_signal = True
        # the stop first: with output piped (2>&1 | tee) the same Ctrl-C ended the
        # reader, the print below fails, and the crawl must stop all the same (issue
        # #25: a trial's crawl ran on to its cap)
        engine.request_stop()
        with contextlib.suppress(OSError):
            print(
                "\ncrawldeck: stopping: in-flight fetches finish, state is saved ...",
                file=sys.stderr,
                flush=True,
            )

    signals = stop_signals()
    for sig in signals:
        loop.add_signal_handler(sig, on_signal)
    outcome = "stopped"
    try:
        result = await engine.run()
        outcome = result.outcome
    finally:
        hold_stop_signals(loop, signals)
        if attach is not None:
            await attach.close(outcome)
    return _finish(engine, store, db, result.outcome, ending, stopped=stopped_by_signal)


async def _crawl_console(
    engine: Engine, store: Store, config: CrawlConfig, db: Path, ending: Ending
) -> int:
    """Run the crawl in the live console (``tui.app``), which shows ``ending.resume``
    when the run stops; summary and exit code as headless."""
    from crawldeck.tui.app import run_console

    result = await run_console(
        engine,
        db,
        strict_robots=config.robots_on_failure == "disallow",
        resume_hint=ending.resume,
        seed_command=ending.seed_command(),
    )
    outcome = "stopped" if result is None else result.outcome
    return _finish(engine, store, db, outcome, ending)


def _seed_failures(store: Store) -> list[str]:
    """Why the seeds failed, one line each, when the crawl got no page at all (no 2xx
    response in the file); empty when something was fetched."""
    if store.ok_pages():
        return []
    outcomes = store.seed_outcomes()
    # every seed refused by a rule (--exclude, scope, robots.txt) is no failure of its
    # server (issue #25 trial 19: an --exclude that took the only seed); a seed refused
    # as it was added ("seed refused: ..." above) has no outcome at all
    refused = all(seed.blocked is not None for seed in outcomes)
    lines = [f"no page got a 2xx answer: every seed {'was blocked' if refused else 'failed'}"]
    for seed in outcomes:
        if seed.blocked is not None:
            why = f"blocked: {seed.blocked}"
        elif seed.error is not None:
            error = without_url(seed.error, seed.url)  # the line names it
            why = error if seed.status is None else f"HTTP {seed.status}: {error}"
        elif seed.status is not None:
            why = f"HTTP {seed.status}"
        else:
            why = f"not fetched ({seed.state})"
        lines.append(f"  {seed.url}: {why}")
    return lines


def kept_seeds_note(added: int, db: Path) -> str:
    """What the resume line adds when ``added`` seeds were added while the run ran (the
    console's ``a``, an attached console's): the command does not name them, the crawl
    file keeps them (issue #25 trial 10); ``""`` for none."""
    if not added:
        return ""
    verb = "is" if added == 1 else "are"
    return f" (the {plural(added, 'seed')} added in the console {verb} kept in {db})"


def _finish(
    engine: Engine,
    store: Store,
    db: Path,
    outcome: str,
    ending: Ending,
    *,
    stopped: bool = False,
) -> int:
    """Print the summary under a heading that says how the run ended
    (``outcome_heading``: ``stopped: --max-pages 50 reached``, never "finished" when
    every seed failed), how to export and how to go on: after a stop or the run's
    ``--max-time`` the same command (``ending.resume``), after a whole-crawl budget one
    that fetches more (``ending.go_on`` from what the file holds now); the exit code:
    ``EXIT_STOPPED``, ``EXIT_SEEDS_FAILED`` (the crawl ended with nothing left to
    fetch, not at a budget, and no page of the file got a 2xx answer: the summary says
    why each seed failed) or ``EXIT_OK``.

    The terminal may be gone (SIGHUP after it closed): output that cannot be written is
    dropped, the exit code still tells what happened (the crawl is saved either way).
    """
    lines = broken_lines(store, db)
    try:
        fetched = store.ok_pages() > 0
    except CrawldeckError:
        fetched = True  # the hint stays: the summary goes on
    if fetched and ending.exported:
        lines.append(f"crawl saved in {db}")
    elif fetched:
        lines.append(f"crawl saved in {db}; export with: {program()} export "
                     f"{shlex.quote(str(db))} --table pages -o pages.csv")  # fmt: skip
    else:
        lines.append(f"crawl saved in {db} (no page with a 2xx answer in it yet)")
    stopped = stopped or outcome == "stopped"
    # a budget that ran out before a seed was answered is not a failed seed (issue #25
    # trial 9: a Crawl-delay of 100 s and --max-time 10s said "every seed failed")
    failures = [] if stopped or outcome in BUDGET_FLAGS else _seed_failures(store)
    from crawldeck.core.crawl.engine import NOTHING_TO_DO

    nothing = (engine.stats or {}).get("finish_reason") == NOTHING_TO_DO
    # a "finished" run may leave URLs queued in the file: a parked host's, for the next
    # run (issue #25 trial 22: it said "nothing left to fetch" and no resume command)
    left = None
    if outcome == "finished" and not stopped:
        with contextlib.suppress(CrawldeckError):
            counted = store.counts()
            left = counted["queued"] + counted["in_flight"]
    if nothing and not stopped and not left and ending.nothing_left is not None:
        lines.append(ending.nothing_left)
    kept = kept_seeds_note(engine.seeds_added_live, db)
    if left:
        lines.append(ending.resume + kept)
    if stopped or outcome in BUDGET_FLAGS:
        go_on = None
        if not stopped and outcome in WHOLE_CRAWL_BUDGETS:
            from crawldeck.core.crawl.resume import file_fetches

            with contextlib.suppress(CrawldeckError):  # without the figures: the resume line
                held = {"max_pages": file_fetches(store), "max_bytes": store.page_totals()[1]}
                go_on = ending.go_on(outcome, held)
        lines.append((go_on or ending.resume) + kept)
    heading = outcome_heading("stopped" if stopped else outcome, ending.caps,
                              failed=bool(failures), stopped_by=engine.stop_asked_by,
                              blocked=bool(failures) and "was blocked" in failures[0])  # fmt: skip
    if left and not failures:
        heading = (f"finished this run: {plural(left, 'URL')} left queued for the next run "
                   "(a parked host's: see the warnings)")  # fmt: skip
    try:
        partial, links_cut = store.partial_pages(), store.links_cut_pages()
    except CrawldeckError:
        partial = links_cut = 0  # the summary goes on without them
    with contextlib.suppress(OSError):
        stats = engine.stats or {}
        HeadlessReporter().summary(
            engine.snapshot(), heading,
            responses=stats.get("responses_by_status", {}),
            no_response=stats.get("transport_errors_by_reason", {}),
            retries=stats.get("retries_by_reason", {}),
            partial=partial, links_cut=links_cut, left=left,
        )  # fmt: skip
        print("\n".join(lines), flush=True)
        for line in failures:
            print(f"crawldeck: {line}", file=sys.stderr)
    if stopped:
        return EXIT_STOPPED
    return EXIT_SEEDS_FAILED if failures else EXIT_OK


@dataclass(frozen=True, slots=True)
class Ending:
    """How the end of a run is told (``_finish``).

    Attributes:
        resume: the line after a stop or the run's ``--max-time``: ``resume with:
            COMMAND`` (the same command goes on), or the demo's ``run it again``.
        caps: each budget outcome (``max_pages``, ``max_bytes``, ``max_time``) -> its
            value as the heading quotes it (``"50"``, ``"10m"``).
        budgets: each whole-crawl budget outcome set (``max_pages``, ``max_bytes``) ->
            its cap (pages, bytes), for ``go_on``.
        argv: the command's arguments after ``crawldeck``, which ``go_on`` repeats with
            a higher cap; ``None`` (the demo, which starts anew): no such line.
        exported: the command writes the pages itself (``crawl -o FILE``): the
            summary gives no ``export with:`` hint (issue #25).
        nothing_left: the line after a run that found nothing to fetch (every URL of
            the file fetched before): how to fetch them again; ``None``: none.
    """

    resume: str
    caps: Mapping[str, str] = field(default_factory=dict)
    budgets: Mapping[str, int] = field(default_factory=dict)
    argv: tuple[str, ...] | None = None
    exported: bool = False
    nothing_left: str | None = None

    def seed_command(self) -> tuple[str, tuple[str, ...]] | None:
        """The command of a ``crawl`` split where one more seed goes: ``crawldeck crawl``
        (shell-quoted) and the rest of its arguments (seeds come first: argparse takes
        no positional after the flags). Running it with a URL between the two resumes
        the crawl file with that seed (its scope widened), as the console's ``a`` says
        once the run has ended (issue #25 trial 15; after a whole-crawl budget, with
        the cap raised: ``tui.stops.raised_cap``). ``None`` for another command (a
        recrawl takes no seed) or without ``argv`` (the demo starts anew)."""
        if not self.argv or self.argv[0] != "crawl":
            return None
        return f"{program()} crawl", tuple(self.argv[1:])

    def go_on(self, outcome: str, held: Mapping[str, int]) -> str | None:
        """The line with a command that fetches more after the whole-crawl budget
        ``outcome``: the same command with the cap raised (``tui.stops.raised_cap``;
        ``held``: ``max_pages`` -> the file's fetches, ``max_bytes`` -> its body bytes).
        ``None`` for another outcome, or without ``argv``."""
        cap = self.budgets.get(outcome)
        if self.argv is None or not cap:
            return None
        flag = WHOLE_CRAWL_BUDGETS[outcome]
        value = raised_cap(outcome, cap, held.get(outcome, 0))
        command = shlex.join(raised_budget(self.argv, flag, value))
        return f"to continue, run it with a higher {flag}: {program()} {command}"


def crawl_ending(
    resume: str,
    config: CrawlConfig,
    argv: Sequence[str] | None,
    *,
    exported: bool = False,
    nothing_left: str | None = None,
) -> Ending:
    """The ``Ending`` of a crawl with ``config``: its budgets quoted in the heading and,
    with ``argv`` (the command's arguments, ``None`` for the demo, which starts anew),
    a whole-crawl budget's way on (``Ending.go_on``); ``exported`` and
    ``nothing_left``: as ``Ending``'s."""
    caps = {
        outcome: text
        for outcome, text in (
            ("max_pages", config.max_pages and str(config.max_pages)),
            ("max_bytes", config.max_bytes and spelled_size(config.max_bytes)),
            ("max_time", config.max_time_s and f"{config.max_time_s}s"),
        )
        if text
    }
    budgets = {o: cap for o in WHOLE_CRAWL_BUDGETS if (cap := getattr(config, o))}
    return Ending(
        resume, caps, budgets, None if argv is None else tuple(argv), exported, nothing_left
    )


def spent_budget(pages: int, body_bytes: int, config: CrawlConfig, ending: Ending) -> str | None:
    """The warning before a resumed run whose whole-crawl budget the file has reached
    already (issue #25 F20: it fetched nothing and said so only at the end): ``pages``
    (its fetches, what ``max_pages`` counts: ``core.crawl.resume.file_fetches``) and
    ``body_bytes`` are the file's (``Store.page_totals``); the
    line names the cap and the command that goes on (``ending.go_on``); ``None`` when
    no such budget is reached."""
    for outcome, held, shown in (
        ("max_pages", pages, f"made {plural(pages, 'fetch', 'fetches')}"),
        ("max_bytes", body_bytes, f"fetched {body_bytes:,} body bytes"),
    ):
        cap = getattr(config, outcome)
        if cap and held >= cap:
            flag = WHOLE_CRAWL_BUDGETS[outcome]
            held_now = {"max_pages": pages, "max_bytes": body_bytes}
            way_on = ending.go_on(outcome, held_now) or f"give a higher {flag}"
            return (f"the crawl file's runs {shown} already: {flag} {cap} is reached before "
                    f"this run fetches anything; {way_on}")  # fmt: skip
    return None


def ui_config(config: CrawlConfig) -> CrawlConfig:
    """The console redraws at most 4 times a second: snapshots every 250 ms."""
    from crawldeck.tui.app import UI_SNAPSHOT_INTERVAL_MS

    return config.replace(snapshot_interval_ms=UI_SNAPSHOT_INTERVAL_MS)


def raise_open_files_limit(want: int = OPEN_FILES_WANTED) -> int:
    """Raise this process's soft limit on open files (RLIMIT_NOFILE) to ``want``, or to
    the hard limit if lower, and return the soft limit now.

    A crawl of many hosts keeps one idle keep-alive connection per recently fetched host
    for up to ``2 x delay_ms`` (at least 5 s): at 600 pages/s over thousands of hosts
    that is thousands of sockets, past the usual soft limit of 1024. Never lowers it;
    never raises (a refusal leaves the limit as it was).
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def wants_console(args: argparse.Namespace) -> bool:
    """Whether to open the console: not with ``--no-ui``, and only with a terminal on
    stdin, stdout and stderr (the console draws on stderr). Without one (cron, CI,
    nohup, ``> log``, ``2> log``, a pipe) the crawl runs headless (``say_headless``
    says so once it starts), instead of waiting for a ``q`` nobody can type and
    filling a file with escape codes. ``-q``, ``-v`` or ``--log-level`` choose how
    much a headless run prints: given one, the run is headless (as wget's ``-q`` keeps a
    terminal quiet; issue #25 trials: ``-q`` in a terminal opened the console)."""
    if args.no_ui or getattr(args, "log_level", None) is not None:
        return False
    return sys.stdin.isatty() and sys.stdout.isatty() and sys.stderr.isatty()


def say_headless(args: argparse.Namespace, ui: bool) -> None:
    """The line on stderr that says a run without ``--no-ui`` goes headless for want of
    a terminal (``wants_console``), printed when the crawl starts: after every refusal,
    so an error is the only line of a run that does not start (issue #25 trial 15). An
    information line: not under ``-q``, which keeps errors and the summary only (issue
    #25 trial 11)."""
    if ui or args.no_ui or getattr(args, "log_level", None) is not None:
        return
    if log_level(args) <= logging.INFO:
        print("crawldeck: no terminal on stdin, stdout and stderr: running headless (as "
              "--no-ui)", file=sys.stderr, flush=True)  # fmt: skip


def cluster_problem(args: argparse.Namespace, config: CrawlConfig) -> str | None:
    """Why this cluster crawl (``--workers``, ``--redis``) cannot run: a time or byte
    budget, which its workers do not count yet, metrics, a ``warc_dir``; ``None`` when
    it can, or without one."""
    if args.workers is None and args.redis is None:
        return None
    if config.warc_dir is not None:
        return ("--warc-dir: a cluster crawl's workers write their WARC files beside the "
                "crawl file, or each into its own worker --warc-dir")  # fmt: skip
    if config.metrics_port or args.stats_json is not None:
        return ("a cluster crawl (--workers, --redis) serves no metrics and keeps its run "
                "stats in the crawl file only (crawldeck stats DB): --metrics-port and "
                "--stats-json are for one process")  # fmt: skip
    # each as the operator gave it: the flag, else the config key (issue #25 trial 10)
    given = [
        FLAG_NAMES[key] if getattr(args, flag, None) is not None else key
        for key, flag in (("max_time_s", "max_time"), ("max_bytes", "max_bytes"))
        if getattr(config, key) is not None
    ]
    if not given:
        return None
    return (f"{' and '.join(given)}: the workers of a cluster crawl (--workers, --redis) "
            "do not count --max-time or --max-bytes; --max-pages they do")  # fmt: skip
