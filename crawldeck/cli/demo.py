"""``crawldeck demo``: start the built-in local web (``crawldeck.localweb``, 9 hosts on
loopback) and crawl it into a fresh file; its ``--help``, arguments and ``run``.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from pathlib import Path

from crawldeck.cli.flags import add_crawl_flags, config_from_flags, flag_overrides, log_level
from crawldeck.cli.output import EXIT_BAD_INPUT, fail, program
from crawldeck.cli.runner import (
    cluster_problem,
    crawl_ending,
    output_problem,
    raise_open_files_limit,
    run_crawl,
    say_headless,
    stats_json_problem,
    ui_config,
    wants_console,
    warc_dir_problem,
    write_output,
    write_stats,
)
from crawldeck.core.errors import CrawldeckError
from crawldeck.core.storage.store import Store

#: The loopback network the local web of ``crawldeck demo`` lives on.
DEMO_PREFIX = "127.77.0"
DEMO_NETWORK = f"{DEMO_PREFIX}.0/24"

#: The demo's politeness delay unless one is given (ms): its hosts are all local.
DEMO_DELAY_MS = 250

#: The command's line in ``crawldeck --help``, and the start of its own ``--help``.
SUMMARY = "start the built-in local web and crawl it"
DESCRIPTION = (
    "Start a local web of 9 hosts on loopback (robots.txt rules, traps, redirects,\n"
    "a slow, a flaky and a busy host, JavaScript pages, a sitemap) and crawl it\n"
    "into a fresh --db file: each run erases it and starts anew; only the local\n"
    "web's addresses are fetched."
)
#: The end of its ``--help``: two examples, then notes.
EPILOG = """\
examples:
  crawldeck demo
      start the local web and crawl it in the console (q quits, state saved)
  crawldeck demo --no-ui --max-pages 100 -o demo.csv
      headless, 100 pages, then the pages table as demo.csv

The demo erases its --db file each run (it refuses a file that holds another crawl)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``crawldeck demo``'s arguments."""
    add_crawl_flags(parser, db_default="demo.db", delay_default=DEMO_DELAY_MS, fresh=True)


def run(args: argparse.Namespace) -> int:
    from crawldeck.localweb.web import LocalWeb

    raise_open_files_limit()
    overrides = flag_overrides(args)
    if overrides["delay_ms"] is None and "delay_ms" not in dict(args.settings):
        overrides["delay_ms"] = DEMO_DELAY_MS
    # The demo allows only the loopback network of the local web (issue #4).
    overrides["allow_networks"] = [DEMO_NETWORK]
    try:
        config = config_from_flags(args, overrides)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    if not args.db.strip():
        return fail(args.command, "--db needs a file name")
    db = Path(args.db)
    problem = (
        output_problem(args.output, db)
        or stats_json_problem(args.stats_json, db)
        or cluster_problem(args, config)
        or warc_dir_problem(config)
    )
    if problem is not None:
        return fail(args.command, problem)
    from crawldeck.core.storage.export import foreign_crawl

    foreign = foreign_crawl(db, DEMO_PREFIX, DEMO_NETWORK)
    if foreign:
        return fail(args.command, f"{str(db)!r} {foreign}; the demo starts anew and would "
                    "erase it: give the demo another --db")  # fmt: skip
    try:
        # the lock first: a demo file in use by another crawldeck is refused, not erased
        store = Store(db, flush_interval_ms=config.flush_interval_ms, fresh=True)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    ui = wants_console(args)
    if ui:
        config = ui_config(config)
    hint = f"the demo starts anew each run: {program()} {shlex.join(sys.argv[1:])}"
    try:
        with LocalWeb() as web:
            print("crawldeck demo: the local web is up:")
            for name, base in web.hosts.items():
                print(f"  {name:10s} {base}/")
            print(f"crawling it into {db} (a fresh file each demo run)\n", flush=True)
            if args.workers is not None or args.redis is not None:
                from crawldeck.cli.cluster import run_cluster_crawl

                store.close()  # the coordinator opens it again (fresh: erased above)
                code = run_cluster_crawl(args, config, web.seeds(), db, hint, ui=ui, fresh=True)
                if code == EXIT_BAD_INPUT:
                    return code
            else:
                say_headless(args, ui)
                ending = crawl_ending(hint, config, None)
                code = asyncio.run(
                    run_crawl(
                        config, store, db, web.seeds(), ending, ui=ui, log_level=log_level(args)
                    )
                )
                code = write_stats(args.command, db, args.stats_json, code)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    finally:
        store.close()
    return write_output(args.command, db, args.output, code)
