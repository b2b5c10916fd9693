"""The ``crawldeck`` command (started by ``cli.launch``): ``crawl``, ``demo``, ``worker``,
``recrawl``, ``export``, ``links`` (a link checker's report), ``show``, ``config``,
``stats`` (a run's figures, ``core.crawl.stats``) and ``attach`` (the console of a crawl
running headless, ``tui.attach``), each a module of ``cli`` (``cli.parser.COMMANDS``).

Exit codes: 0 a finished crawl (or one that reached a budget: ``--max-pages``,
``--max-time``, ``--max-bytes``), 1 ``links --broken`` found broken links (linkchecker's
convention, for scripts and CI; ``attach``: the crawl went away while attached;
``export --mirror``: no file written for want of WARC records), 2 bad input (one line
on stderr, ``crawldeck COMMAND: error: MESSAGE`` as argparse's own
(``cli.output.fail``); a flag error ends with ``(see crawldeck COMMAND --help)``, never
the usage block), 3 a crawl that ended with nothing left to fetch and without any page
fetched (every seed failed; the summary says why; a budget reached first is 0), 130
stopped by Ctrl-C, SIGTERM or SIGHUP (state saved, resume command printed);
``cli.output`` names them.

Settings: defaults < ``--config FILE`` < ``-s KEY=VALUE`` < flags (``--delay-ms`` ...);
``crawldeck config`` prints the result with where each value came from. Figures go to
stdout, warnings and errors to stderr (``cli.headless``).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Sequence

from crawldeck.cli.flags import log_level
from crawldeck.cli.output import EXIT_BAD_INPUT, EXIT_OK, EXIT_STOPPED
from crawldeck.cli.parser import COMMANDS, build_parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crawldeck`` console script; returns the exit code."""
    parser = build_parser()
    typed = list(sys.argv[1:] if argv is None else argv)
    if not typed:
        # no command: the commands, as git and Scrapy print them (issue #25 trial 7:
        # "the following arguments are required: COMMAND")
        print(parser.format_help(), end="")
        return EXIT_BAD_INPUT
    first = typed[0]
    if first not in COMMANDS and not first.startswith("-") and ("://" in first or "." in first):
        # a URL where the command goes, as wget and Scrapy's fetch take one (issue #25
        # trial 19): argparse lists the commands; the one meant is crawl
        parser.error(f"{first!r} is not a command: to crawl it, crawldeck crawl {first}")
    args, unknown = parser.parse_known_args(typed)
    if unknown:  # said by the command's parser: see crawldeck crawl --help
        parser.commands[args.command].unrecognized(unknown, typed)
    level = log_level(args)
    # other libraries from WARNING up (from ERROR with -q), everything with -v
    root = logging.WARNING if level == logging.INFO else level
    logging.basicConfig(level=root, format="crawldeck: %(message)s")
    # but asyncio's own debug line ("Using selector: EpollSelector") is no crawl detail
    # (issue #25: the first line a trial's -v printed)
    logging.getLogger("asyncio").setLevel(max(root, logging.INFO))
    # crawldeck's own modules speak from ERROR up unless --log-level DEBUG (-v)
    logging.getLogger("crawldeck").setLevel(
        level if level == logging.DEBUG else max(level, logging.ERROR)
    )
    try:
        with contextlib.suppress(BrokenPipeError):
            return COMMANDS[args.command].run(args)
    except KeyboardInterrupt:  # Ctrl-C before the crawl's own handler is in place
        print("\ncrawldeck: stopped", file=sys.stderr)
        return EXIT_STOPPED
    return EXIT_OK
