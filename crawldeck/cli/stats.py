"""``crawldeck stats DB``: the stats of one run of a crawl file (``core.crawl.stats``), as text or
JSON; its ``--help``, arguments and ``run``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from crawldeck.cli.flags import parse_count
from crawldeck.cli.output import EXIT_OK, fail
from crawldeck.core.crawl.stats import no_stats_line, read_run, stats_lines
from crawldeck.core.errors import CrawldeckError

#: The command's line in ``crawldeck --help``, and the start of its own ``--help``.
SUMMARY = "print a run's stats: responses by status, bytes, blocked, finish reason"
DESCRIPTION = (
    "Print the stats of one run of a crawl file (the last unless --run): its page\n"
    "fetches, responses by status, bytes, blocked URLs by reason, the finish reason."
)
#: The end of its ``--help``: two examples, then notes.
EPILOG = """\
examples:
  crawldeck stats crawl.db
      the last run's figures as text: responses by status, bytes, blocked, why it ended
  crawldeck stats crawl.db --run 2 --json | jq .responses_by_status
      the second run's stats object as JSON

Counts are the run's own (not the crawl's totals over all runs). A run killed (SIGKILL)
has no stats; this says so."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``crawldeck stats``'s arguments."""
    parser.add_argument(
        "db", type=Path, metavar="DB", nargs="?", default=Path("crawl.db"),
        help="the crawl file (default: crawl.db, as crawl's --db)",
    )  # fmt: skip
    parser.add_argument(
        "--run", type=parse_count, metavar="N",
        help="the run's id, as in the runs table: 1, 2, ... (default: the last run)",
    )  # fmt: skip
    parser.add_argument(
        "--json", action="store_true",
        help="print the stats object as JSON, as --stats-json writes it (default: text)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """``crawldeck stats DB [--run N] [--json]``: a run's stats (``core.crawl.stats``) as text,
    or as the JSON object; a run without stats (running, killed, older) says why."""
    try:
        run = read_run(args.db, args.run)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    if args.json:
        if run.stats is None:
            return fail(args.command, no_stats_line(run))
        print(json.dumps(run.stats, indent=2))
    else:
        print("\n".join(stats_lines(run)))
    return EXIT_OK
