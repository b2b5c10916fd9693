"""The argument parser of the ``crawldeck`` command, built from one module per command.

Each command's module (``COMMANDS``: ``cli.crawl``, ``cli.demo`` ...) gives its line
in ``crawldeck --help`` (``SUMMARY``), the start and end of its own ``--help``
(``DESCRIPTION``, ``EPILOG``: two examples, then notes), its arguments
(``add_arguments``) and what it does (``run``, called by ``cli.main``). Every module
here is light: ``crawldeck --help`` and ``--version`` import neither the engine nor
aiohttp (each command imports what it needs when it runs).
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from importlib.metadata import version
from typing import Final, NoReturn, Protocol

from crawldeck.cli import attach, config, crawl, demo, export, links, recrawl, show, stats, worker
from crawldeck.cli.crawl import common_keys_epilog
from crawldeck.cli.output import EXIT_BAD_INPUT
from crawldeck.core.other_crawlers import OTHER_CRAWLERS, other_crawler_hint


class Command(Protocol):
    """A command's module, as ``build_parser`` and ``cli.main`` use it."""

    #: Its line in ``crawldeck --help``.
    SUMMARY: str
    #: The start of its ``--help``.
    DESCRIPTION: str
    #: The end of its ``--help``: two examples, then notes.
    EPILOG: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the command's arguments to its parser."""

    def run(self, args: argparse.Namespace) -> int:
        """Do the command with its parsed ``args``; the exit code."""


#: The commands, in the order of ``crawldeck --help``.
COMMANDS: dict[str, Command] = {
    "crawl": crawl, "demo": demo, "worker": worker, "recrawl": recrawl, "export": export,
    "links": links, "show": show, "stats": stats, "config": config, "attach": attach,
}  # fmt: skip

#: The epilog of each command's ``--help`` (``crawldeck``'s own first): two examples, then
#: notes.
EPILOGS: dict[str, str] = {
    "crawldeck": """\
examples:
  crawldeck demo
      start the built-in local web (9 hosts on loopback) and crawl it in the console
  crawldeck crawl https://docs.example.org/ --max-pages 500 -o pages.jsonl
      crawl one site into crawl.db, at most 500 pages, then write them to pages.jsonl

Each command has its own --help: crawldeck crawl --help.""",
    **{name: command.EPILOG for name, command in COMMANDS.items()},
}


#: wget's flags that a crawldeck command has under another name: in that command the
#: hint is its own flag, not the way from a crawl to it (issue #25 trial 20: ``export -m
#: DIR`` was told "a crawl, then crawldeck export DB --mirror DIR").
_OWN_FLAG_OF: Final = {"-m": "--mirror"}


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: ``PROG: error: MESSAGE (see PROG
    --help)`` on stderr and exit 2, not argparse's usage block (``crawldeck crawl`` for
    a command's own parser: argparse makes them of this class too)."""

    #: The commands' own parsers by name (``build_parser``), for the errors of the
    #: arguments only the top parser sees (an unknown flag after the command).
    commands: dict[str, Parser]

    def error(self, message: str) -> NoReturn:
        """Print ``message`` in one line and exit with ``EXIT_BAD_INPUT``."""
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def unrecognized(self, unknown: Sequence[str], argv: Sequence[str] = ()) -> NoReturn:
        """The error for arguments this command does not take (``unknown``, as
        ``parse_known_args`` leaves them), with the nearest flag of this command for
        the first one that looks like a flag (``--max-pags`` -> ``--max-pages``,
        ``--delay=5`` by its name): ``difflib`` over its option strings, as Python
        3.14's ``suggest_on_error`` does for choices; another crawler's flag (wget's
        ``-w 2``) gets crawldeck's equivalent instead (``_other_crawler_flag``, its
        value read from ``argv``, the whole command line, when given)."""
        for item in unknown:  # wget's -m in export, which has it as --mirror DIR
            own = _OWN_FLAG_OF.get(item.split("=", 1)[0])
            if own is not None and own in self._option_string_actions:
                self.error(f"unrecognized arguments: {' '.join(unknown)} (wget's {item} is "
                           f"{own} here: {self.prog} DB {own} DIR)")  # fmt: skip
        other = _other_crawler_flag(unknown, argv or unknown)
        if other is not None:  # a wget flag: crawldeck's word for it (issue #25)
            self.error(other)
        message = f"unrecognized arguments: {' '.join(unknown)}"
        flags = [item.split("=", 1)[0] for item in unknown if item.startswith("-")]
        if flags:
            # the names without their dashes, which every flag shares: --bogus is not
            # near --verbose (0.5), --max-page is near --max-pages (issue #25)
            names = {o.lstrip("-"): o for o in sorted(self._option_string_actions)}
            near = difflib.get_close_matches(flags[0].lstrip("-"), names, n=1, cutoff=0.6)
            if near:
                message += f" (did you mean {names[near[0]]}?)"
        self.error(message)


def _other_crawler_flag(unknown: Sequence[str], argv: Sequence[str]) -> str | None:
    """The first of ``unknown`` (arguments argparse did not take) that is another
    crawler's flag (``core.other_crawlers.OTHER_CRAWLERS``: wget's ``-w 2``, ``--wait=2``,
    ``-l3``, ``-np``, ``-e robots=off``), with crawldeck's equivalent and the value
    converted (``other_crawler_hint``); ``None`` when none is. A flag that takes a
    value takes the argument after it in ``argv``, the command line as typed: argparse
    gives a flag it does not know no value, and the word after it went to the seeds
    when the flag came before them (issue #25 trial 19: ``-U x URL`` hinted
    ``--user-agent N``). A flag two crawlers mean two things by (wget's ``-L`` a
    switch, Scrapy's ``-L LEVEL``) takes it when either takes one (the hint tells them
    apart by it)."""
    for item in unknown:
        if not item.startswith("-"):
            continue
        name, eq, value = item.partition("=")
        entry = OTHER_CRAWLERS.get(name)
        if entry is None and not item.startswith("--") and len(item) > 2:
            name, value, eq = item[:2], item[2:], "="  # -l3, -w2
            entry = OTHER_CRAWLERS.get(name)
        if entry is None or not entry.whose:
            continue
        given: str | None = value if eq else None
        takes_value = entry.takes_value or (entry.other is not None and entry.other.takes_value)
        at = list(argv).index(item) + 1 if item in argv else len(argv)
        if given is None and takes_value and at < len(argv):
            given = argv[at]
        return other_crawler_hint(name, given, flag=True)
    return None


def _command(sub: argparse._SubParsersAction[Parser], name: str, command: Command) -> Parser:
    """A command's parser: its ``SUMMARY`` in ``crawldeck --help``, its ``DESCRIPTION``
    and ``EPILOGS`` entry in its own ``--help`` (``crawl``'s ends with
    ``common_keys_epilog``), its arguments (``add_arguments``)."""
    epilog = EPILOGS[name] + ("\n\n" + common_keys_epilog() if name == "crawl" else "")
    parser = sub.add_parser(
        name, help=command.SUMMARY, description=command.DESCRIPTION, epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
    )  # fmt: skip
    command.add_arguments(parser)
    return parser


def build_parser() -> Parser:
    """The argument parser of the ``crawldeck`` command (a ``Parser``: one-line errors)."""
    parser = Parser(
        prog="crawldeck",
        description="A polite, fast web crawler with a live console.",
        epilog=EPILOGS["crawldeck"],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"crawldeck {version('crawldeck')}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parser.commands = {name: _command(sub, name, command) for name, command in COMMANDS.items()}
    return parser
