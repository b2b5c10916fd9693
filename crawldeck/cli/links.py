"""``crawldeck links DB``: a crawl's links and what their targets got, as a link checker
reports them (``--broken``: the broken ones only); its ``--help``, arguments and
``run``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from crawldeck.cli.output import EXIT_BROKEN_LINKS, EXIT_OK, fail, link_line
from crawldeck.core.errors import CrawldeckError, without_url
from crawldeck.core.storage.store.lock import lock_holder
from crawldeck.core.words import plural

#: The command's line in ``crawldeck --help``, and the start of its own ``--help``.
SUMMARY = "list a crawl's links and what their targets got; --broken: the broken ones"
DESCRIPTION = (
    "List the links of a crawl file with what each target got, as a link checker\n"
    "reports them; --broken lists only the broken ones."
)
#: The end of its ``--help``: two examples, then notes.
EPILOG = """\
examples:
  crawldeck links crawl.db --broken
      the broken links: HTTP 4xx/5xx, no response (refused, DNS failure, timeout), a
      redirect chain that failed or led to one of those; one line each: why, the link,
      the page it is on (a seed that failed and no page links to: "a seed")
  crawldeck links crawl.db --broken --json | jq -r .from_url | sort -u
      the pages that hold a broken link

A link to a URL refused unfetched (robots.txt, out of scope, a crawl trap) is not
broken: it was never checked; the last line counts those by reason, and the links
not checked because the crawl stopped first (a budget, Ctrl-C). Exit code 1 when
--broken found any (as linkchecker), else 0. The broken_links view of the crawl file
holds the same rows but the seeds' (Datasette, sqlite3)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``crawldeck links``'s arguments."""
    parser.add_argument(
        "db", type=Path, metavar="DB", nargs="?", default=Path("crawl.db"),
        help="the crawl file (default: crawl.db, as crawl's --db)",
    )  # fmt: skip
    parser.add_argument(
        "--broken", action="store_true",
        help="only links whose target got HTTP 4xx/5xx, no response, or a failed redirect "
        "chain, or redirected to such an end (default: every link)",
    )  # fmt: skip
    parser.add_argument(
        "--json", action="store_true",
        help="JSON Lines: from_url, to_url, status, error, final_url, blocked, anchor, "
        "fetched_as (default: text)",
    )  # fmt: skip


def _running(db: Path) -> bool:
    """Whether a crawl holds the crawl file ``db`` now (``False`` when unknown)."""
    try:
        return lock_holder(db) is not None
    except OSError:
        return False


def run(args: argparse.Namespace) -> int:
    """``crawldeck links DB [--broken] [--json]``: one line (or JSON object) a link on
    stdout, then on stderr how many, the links to URLs refused unfetched by reason, and
    the links not checked because the crawl stopped first (``unchecked_links``) and
    the pages whose links were read in part (``cut_pages``);
    ``EXIT_BROKEN_LINKS`` when ``--broken`` found any."""
    from crawldeck.core.storage.link_report import (
        blocked_links,
        cut_pages,
        link_report,
        unchecked_links,
    )

    count = 0
    targets: set[str] = set()
    try:
        for link in link_report(args.db, broken=args.broken):
            if args.json:
                row = {"from_url": link.from_url, "to_url": link.to_url, "status": link.status,
                       # the URL is its own field: not again at the error's end
                       "error": link.error and without_url(link.error, link.to_url),
                       "final_url": link.final_url,
                       "blocked": link.blocked, "anchor": link.anchor,
                       "fetched_as": link.same_as}  # fmt: skip
                print(json.dumps(row, ensure_ascii=False))
            else:
                print(link_line(link))
            count += 1
            targets.add(link.to_url)
        refused = blocked_links(args.db)
        unchecked = unchecked_links(args.db)
        cut = cut_pages(args.db)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    what = "broken link" if args.broken else "link"
    line = f"crawldeck: {plural(count, what)} to {plural(len(targets), 'URL')}"
    if refused:
        by_reason = ", ".join(
            f"{reason} {plural(links, 'link')} to {plural(urls, 'URL')}"
            for reason, (links, urls) in refused.items()
        )
        line += f"; not broken, never fetched (refused): {by_reason}"
    if unchecked:
        # still queued: neither broken nor fine, so not left out (issue #25); while a
        # crawl holds the file, it has not got to them yet (issue #25 trial 7)
        when = (
            "the crawl has not fetched them yet"
            if _running(args.db)
            else ("the crawl stopped before fetching them")
        )
        line += f"; {plural(unchecked, 'link')} not checked: {when}"
    if cut:
        # a link past the cut is in no report: said, not silent (issue #25 trial 20)
        line += (f"; {plural(cut, 'page')} read for links in part, those past the cut"
                 " not checked (-s parse_max_bytes=4194304 or max_links_per_page=N"
                 " reads more)")  # fmt: skip
    print(line, file=sys.stderr)
    return EXIT_BROKEN_LINKS if args.broken and count else EXIT_OK
