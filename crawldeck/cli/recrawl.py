"""``crawldeck recrawl DB``: revisit a crawl's pages with conditional GET, pages that
changed more often first, with the recrawl's own budgets; its ``--help``, arguments
and ``run``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from crawldeck.cli.flags import (
    add_log_flags,
    add_metrics_flag,
    add_stats_flag,
    log_level,
    parse_count,
    parse_setting,
    parse_size,
    parse_time_budget,
)
from crawldeck.cli.output import fail, program
from crawldeck.cli.runner import (
    Ending,
    raise_open_files_limit,
    run_crawl,
    say_headless,
    start_metrics,
    stats_json_problem,
    ui_config,
    wants_console,
    warc_dir_problem,
    write_stats,
)
from crawldeck.core.config import build_config
from crawldeck.core.errors import ConfigError, CrawldeckError
from crawldeck.core.net.request_options import RequestOptions
from crawldeck.core.storage.store import Store
from crawldeck.core.words import plural

if TYPE_CHECKING:  # imported when the command runs: --help stays light
    from crawldeck.core.crawl.recrawl import RecrawlPlan

#: The command's line in ``crawldeck --help``, and the start of its own ``--help``.
SUMMARY = "revisit a crawl's pages with conditional GET, often-changing pages first"
DESCRIPTION = (
    "Revisit the pages of a crawl file with conditional GET (ETag,\n"
    "Last-Modified), pages that changed more often first."
)
#: The end of its ``--help``: two examples, then notes.
EPILOG = """\
examples:
  crawldeck recrawl crawl.db
      revisit every page of crawl.db, asking with If-None-Match / If-Modified-Since
  crawldeck recrawl crawl.db --older-than 7d --no-ui --max-pages 1000
      only pages last fetched over a week ago, headless, at most 1000 fetches

It revisits the pages that got a 200 and those that got a 4xx (a broken link's target
may be there now; 5xx and no answer are tried again by any run of the file).
An unfinished crawl (URLs queued, never fetched) goes on after the revisits: on each
host its pages are revisited first, then its queue is crawled, within the recrawl's
budgets. --max-pages, --max-time and --max-bytes count THIS recrawl's fetches only
(revisits and new pages alike; the crawl's own budgets are not carried over); without
them a recrawl revisits every page and crawls the whole queue. The last line counts
the revisits (304, 200 with the same digest, changed, not compared: a body not read)
and the new pages apart."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``crawldeck recrawl``'s arguments."""
    parser.add_argument("db", type=Path, metavar="DB", help="the crawl file")
    parser.add_argument(
        "--older-than",
        default="0s",
        metavar="DURATION",
        help="only pages last fetched longer ago than this: 30s, 15m, 2h, 7d, 2w (default 0s)",
    )
    parser.add_argument(
        "--no-ui", action="store_true",
        help="headless: progress lines and a summary (default: the console on a terminal)",
    )  # fmt: skip
    parser.add_argument(
        "-s", "--set", dest="settings", type=parse_setting, action="append", default=[],
        metavar="KEY=VALUE",
        help="any config key over the last run's config, as crawl's -s: -s delay_ms=2000; "
        "repeatable (default: none; the budgets are the flags below)",
    )  # fmt: skip
    add_stats_flag(parser)
    add_metrics_flag(parser)
    add_log_flags(parser)
    parser.add_argument(
        "--max-pages", type=parse_count, metavar="N",
        help="stop once THIS RECRAWL fetched N pages, revisits and new pages alike (the "
        "file's earlier pages do not count, unlike crawl's --max-pages) (default: no cap)",
    )  # fmt: skip
    parser.add_argument(
        "--max-time", type=parse_time_budget, metavar="DURATION",
        help="stop this recrawl after DURATION, as crawl's: 90s, 10m, 2h (a bare number is "
        "seconds) (default: no limit)",
    )  # fmt: skip
    parser.add_argument(
        "--max-bytes", type=parse_size, metavar="SIZE",
        help="stop once THIS RECRAWL's decoded bodies add up to SIZE (a 304 has none): "
        "500MB, 2GiB (a bare number is bytes) (default: no cap)",
    )  # fmt: skip


def recrawl_budgets(
    args: argparse.Namespace, *, pages_before: int, bytes_before: int
) -> dict[str, int | None]:
    """The budget keys of a recrawl run from its ``--max-pages``, ``--max-time`` and
    ``--max-bytes`` (``None``: not given), which count this recrawl alone: the engine
    counts pages and bytes over all runs (``Engine``: every fetch recorded, a revisit
    too), so the caps are ``pages_before + N`` and ``bytes_before + SIZE``, with
    ``pages_before`` the file's fetches and ``bytes_before`` its pages' body bytes
    (what the engine's figures start from: ``core.crawl.resume.file_fetches``,
    ``Store.page_totals``).
    The crawl's own budgets are not carried over (its ``max_pages`` counts the file's
    pages, which the revisits do not add to)."""
    return {
        "max_pages": None if args.max_pages is None else pages_before + args.max_pages,
        "max_time_s": args.max_time,
        "max_bytes": None if args.max_bytes is None else bytes_before + args.max_bytes,
    }


def first_line(plan: RecrawlPlan, older_than: str, older_than_s: float) -> str:
    """What the recrawl is about to do: the pages to revisit, those left alone (visited
    within ``older_than``; or, continuing a stopped recrawl, visited since it began),
    then the queue behind them (a stopped recrawl's revisits left, URLs never fetched),
    and the URLs that failed transiently, which every run tries again.
    ``--older-than 0`` (the default) leaves nothing: no "0 fetched within 0s"."""
    line = f"{plural(len(plan.order), 'page')} to revisit"
    fresh = plan.queued
    if plan.continued is not None:
        left = plan.continued[1]
        line = (f"going on with the recrawl that stopped: {line} ({plan.skipped} visited "
                f"since it began left alone)")  # fmt: skip
        if left:
            line += f", then its {plural(left, 'revisit')} left"
        fresh -= left
    elif older_than_s:
        line += f", {plan.skipped} fetched within {older_than} left alone"
    if fresh > 0:
        line += f", then {plural(fresh, 'queued URL')} never fetched"
    if plan.retried:  # the last line counts them revisited (issue #25 trial 11)
        line += f"; {plural(plan.retried, 'URL')} that failed before tried again"
    return line


def run(args: argparse.Namespace) -> int:
    """``crawldeck recrawl DB``: a new run of the crawl in DB with its last run's config
    and the recrawl's own budgets (``recrawl_budgets``), its pages queued again in
    change-rate order, an unfinished crawl's queue behind them
    (``core.crawl.recrawl.prepare``), the revisits asked for conditionally; then the summary
    and one line of what the revisits found and how many pages were new."""
    from crawldeck.core.crawl.recrawl import parse_duration, prepare, summarize

    raise_open_files_limit()
    db = Path(args.db)
    try:
        older_than_s = parse_duration(args.older_than)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    if not db.is_file():
        return fail(args.command, f"{db} does not exist or is not a file")
    if db.stat().st_size == 0:
        return fail(args.command, f"{db} is empty, not a crawl file")
    problem = stats_json_problem(args.stats_json, db)
    if problem is not None:
        return fail(args.command, problem)
    try:
        store = Store(db)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    try:
        saved = store.last_config()
        if saved is None or not store.has_crawl():
            store.close()
            return fail(args.command, f"{db} holds no crawl to revisit")
        from crawldeck.core.crawl.resume import file_fetches

        before = file_fetches(store), store.page_totals()[1]
        budgets = recrawl_budgets(args, pages_before=before[0], bytes_before=before[1])
        # metrics only when this recrawl asks (--metrics-port), not the last run's port
        # -s over the last run's config (issue #25 F21); the budgets are this recrawl's
        settings = dict(args.settings)
        try:
            config = build_config(
                {**saved, **settings, **budgets, "metrics_port": args.metrics_port or 0}
            )
        except ConfigError as exc:
            store.close()
            return fail(args.command, f"-s: {exc}")
        ui = wants_console(args)
        if ui:
            config = ui_config(config)
        # what can refuse the run is asked before prepare queues the pages again: a
        # refused recrawl leaves the file as it was (issue #25: a trial's password_env
        # not set left every page queued, and the next crawl fetched them all again)
        RequestOptions.from_config(config)
        refused = warc_dir_problem(config)
        if refused is not None:
            raise ConfigError(refused)
        metrics = start_metrics(config)
    except CrawldeckError as exc:
        store.close()
        return fail(args.command, str(exc))
    try:
        started = time.time()
        plan = prepare(store, older_than_s=older_than_s, now=started)
        seeds = store.seed_urls()  # they give the crawl its scope again
    except CrawldeckError as exc:
        store.close()
        if metrics is not None:
            metrics.close()
        return fail(args.command, str(exc))
    say_headless(args, ui)
    print(f"crawldeck recrawl: {first_line(plan, args.older_than, older_than_s)}", flush=True)
    hint = f"resume with: {program()} {shlex.join(sys.argv[1:])}"
    # the recrawl's budgets count this recrawl: the same command fetches more
    caps = {"max_pages": args.max_pages, "max_bytes": args.max_bytes, "max_time": args.max_time}
    ending = Ending(hint, {key: str(value) for key, value in caps.items() if value})
    try:
        code = asyncio.run(
            run_crawl(
                config, store, db, seeds, ending, ui=ui, metrics=metrics, log_level=log_level(args)
            )
        )
        with Store(db) as after:
            found = summarize(after, started)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    with contextlib.suppress(OSError):
        revisited = (found.not_modified + found.unchanged + found.changed + found.other
                     + found.not_compared)  # fmt: skip
        unread = f"{found.not_compared} not compared (200, body not read: not HTML), "
        print(f"recrawl: {revisited} revisited: {found.not_modified} not modified (304), "
              f"{found.unchanged} unchanged (200, same digest), {found.changed} changed, "
              f"{unread if found.not_compared else ''}{found.other} other; "
              f"{plural(found.new, 'new page')}", flush=True)  # fmt: skip
    return write_stats(args.command, db, args.stats_json, code)
