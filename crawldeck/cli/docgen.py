"""The generated references: ``docs/config.md`` from ``core/config.py`` and
``docs/cli.md`` from the argument parser, so neither can drift from the code.

Each file is prose written by hand around one block between the markers
``<!-- begin generated: ... -->`` and ``<!-- end generated -->``; only the block is
rewritten. The config block is a table with one row per entry of ``CrawlConfig``'s
docstring ``Attributes`` section (its keys, their defaults, the ``Range`` of their
types, the entry's text); the CLI block has one section per command, its flags with
their ``help`` strings and its ``--help`` epilog, read from ``cli.parser.build_parser()``.

Run ``python -m crawldeck.cli.docgen`` after adding a config key or a flag (it rewrites
both files); ``--check`` only compares and exits 1 when a file is stale.
``tests/unit/test_docgen.py`` runs the comparison in the fast tier.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from crawldeck.cli.parser import build_parser
from crawldeck.core.config import RANGES, CrawlConfig
from crawldeck.core.config_checks import Range

#: The one command that regenerates the references (named in the test's failure).
REGENERATE = ".venv/bin/python -m crawldeck.cli.docgen"

#: The repository's ``docs/`` folder, beside the package's ``crawldeck/`` (this file is
#: ``crawldeck/cli/docgen.py``).
DOCS = Path(__file__).resolve().parents[2] / "docs"

_BEGIN = "<!-- begin generated: {what} (" + REGENERATE + "; do not edit by hand) -->"
_END = "<!-- end generated -->"

#: An entry of a Google-style ``Attributes`` section: ``name[, name]: text`` at 8 spaces.
_ENTRY = re.compile(r"^ {8}(?P<names>\w+(?:, \w+)*): (?P<text>.*)$")


def attribute_entries(doc: str) -> list[tuple[list[str], str]]:
    """The entries of a class docstring's ``Attributes`` section, in order.

    Args:
        doc: the docstring (``CrawlConfig.__doc__``): a line starting ``Attributes``,
            then entries ``name: text`` (or ``a, b: text`` for keys described together)
            indented 8 spaces, their continuation lines 12.

    Returns:
        ``(names, text)`` per entry, the text on one line with RST's double backquotes
        made Markdown's single ones.

    Raises:
        ValueError: the docstring has no ``Attributes`` section.
    """
    lines = doc.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip().startswith("Attributes"))
    except StopIteration:
        raise ValueError("the docstring has no Attributes section") from None
    entries: list[tuple[list[str], list[str]]] = []
    for line in lines[start + 1 :]:
        match = _ENTRY.match(line)
        if match:
            entries.append((match["names"].split(", "), [match["text"]]))
        elif line.startswith(" " * 12) and entries:
            entries[-1][1].append(line.strip())
        elif line.strip():
            break
    return [(names, " ".join(words).replace("``", "`")) for names, words in entries]


def _default(value: Any) -> str:
    """A field's default as a table cell: ``none`` for ``None`` or an empty list, a
    number as Python writes it, a text in backquotes, a list of texts comma-separated."""
    if value is None or value == ():
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, tuple):
        return ", ".join(f"`{item}`" for item in value)
    return f"`{value}`"


def _range(bounds: Range | None) -> str:
    """A ``Range`` as a table cell: ``>= low``, ``low to high``, ``—`` for none."""
    if bounds is None:
        return "—"

    def number(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else f"{x:.12f}".rstrip("0")

    if bounds.high is None:
        return f">= {number(bounds.low)}"
    return f"{number(bounds.low)} to {number(bounds.high)}"


def config_block() -> str:
    """The config reference: one Markdown table row per ``CrawlConfig`` docstring
    entry (key, default, range, meaning), in the docstring's order.

    Raises:
        ValueError: a field has no docstring entry, or an entry names no field (a new
            key must be described where it is declared).
    """
    defaults = {f.name: f.default for f in fields(CrawlConfig) if f.default is not MISSING}
    entries = attribute_entries(CrawlConfig.__doc__ or "")
    named = [name for names, _ in entries for name in names]
    missing = [name for name in defaults if name not in named]
    unknown = [name for name in named if name not in defaults]
    if missing or unknown:
        raise ValueError(
            f"CrawlConfig's docstring: no Attributes entry for {missing}, entries for no "
            f"field {unknown}"
        )
    rows = ["| key | default | range | meaning |", "| --- | --- | --- | --- |"]
    for names, text in entries:
        cells = (
            ", ".join(f"`{name}`" for name in names),
            ", ".join(_default(defaults[name]) for name in names),
            ", ".join(_range(RANGES.get(name)) for name in names),
            text.replace("|", "\\|"),
        )
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _flag(action: argparse.Action) -> str:
    """An argument as ``--help`` names it: ``SEED``, ``-o FILE``, ``--scope {a,b}``."""
    if action.metavar is not None:
        metavar = str(action.metavar)
    elif action.choices is not None:
        metavar = "{" + ",".join(str(c) for c in action.choices) + "}"
    else:
        metavar = action.dest.upper()
    if not action.option_strings:
        return f"`{metavar}`"
    takes_value = action.nargs != 0
    return ", ".join(
        f"`{option} {metavar}`" if takes_value else f"`{option}`"
        for option in action.option_strings
    )


def _help(action: argparse.Action, prog: str) -> str:
    """An argument's help with argparse's ``%(...)s`` expanded, as ``--help`` prints it."""
    text = action.help or ""
    if "%" in text:
        text = text % {**vars(action), "prog": prog}
    return text


def _synopsis(parser: argparse.ArgumentParser) -> str:
    """How the command is typed: its name, its positional arguments (``SEED [SEED
    ...]`` for one taking several, as argparse's usage writes it), ``[options]``."""
    words = [parser.prog]
    for action in parser._actions:
        if action.option_strings:
            continue
        name = str(action.metavar or action.dest.upper())
        words.append(f"{name} [{name} ...]" if action.nargs == "+" else name)
    return " ".join([*words, "[options]"])


def _command_section(
    parser: argparse.ArgumentParser, summary: str | None, commands: Sequence[str] = ()
) -> list[str]:
    """One command's section: heading, summary, synopsis, description, ``commands``
    (Markdown lines: the top parser's list of commands), arguments (each with its
    help), epilog."""
    out = [f"## `{parser.prog}`", ""]
    if summary:
        out += [summary[0].upper() + summary[1:] + ".", ""]
    out += ["```text", _synopsis(parser), "```", ""]
    if parser.description:
        out += [" ".join(parser.description.split()), ""]
    if commands:
        out += ["Commands:", "", *commands, ""]
    out += ["Arguments:", ""]
    listed = [
        a
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
    ]
    for action in listed:
        out.append(f"- {_flag(action)}: {_help(action, parser.prog)}")
    out.append("- `-h`, `--help`: this command's help, as here")
    out.append("")
    if parser.epilog:
        out += ["```text", parser.epilog, "```", ""]
    return out


def cli_block() -> str:
    """The CLI reference: ``crawldeck`` itself, then each command in the order of
    ``crawldeck --help``, from ``cli.parser.build_parser()``."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {choice.dest: choice.help for choice in sub._choices_actions}
    commands = [f"- [`{name}`](#crawldeck-{name}): {summaries[name]}" for name in sub.choices]
    out = _command_section(parser, None, commands)
    for name, command in sub.choices.items():
        out += _command_section(command, summaries.get(name))
    return "\n".join(out).rstrip("\n")


#: Each generated file (under ``docs/``), the name of its block, and what fills it.
TARGETS: dict[str, tuple[str, Any]] = {
    "config.md": ("the config table from core/config.py", config_block),
    "cli.md": ("every command's flags from cli/parser.py's build_parser", cli_block),
}


def regenerate(text: str, what: str, block: str) -> str:
    """``text`` with the block between its markers replaced by ``block``.

    Raises:
        ValueError: ``text`` lacks the begin marker for ``what`` or the end marker.
    """
    begin = _BEGIN.format(what=what)
    head, found, rest = text.partition(begin)
    if not found or _END not in rest:
        raise ValueError(f"the markers {begin!r} ... {_END!r} are missing")
    tail = rest.split(_END, 1)[1]
    return f"{head}{begin}\n\n{block}\n\n{_END}{tail}"


def stale(docs: Path | None = None) -> dict[Path, str]:
    """Each generated file under ``docs`` (default ``DOCS``) whose text is not what the
    code generates now, with the text it should have (empty: all up to date).

    Raises:
        OSError: a file cannot be read.
        ValueError: a file lost its markers, or ``config_block`` refused the docstring.
    """
    out: dict[Path, str] = {}
    for name, (what, make) in TARGETS.items():
        path = (docs or DOCS) / name
        text = path.read_text(encoding="utf-8")
        fresh = regenerate(text, what, make())
        if fresh != text:
            out[path] = fresh
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite the stale references (``--check``: only list them, exit 1 if any).

    Returns:
        0 when every file is up to date (or was rewritten), 1 with ``--check`` and a
        stale file, 2 when a file or the docstring cannot be read (one line on stderr).
    """
    parser = argparse.ArgumentParser(prog="python -m crawldeck.cli.docgen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if stale")
    args = parser.parse_args(argv)
    try:
        todo = stale()
    except (OSError, ValueError) as exc:
        print(f"docgen: error: {exc}", file=sys.stderr)
        return 2
    for path, text in todo.items():
        if args.check:
            print(f"{path} is stale: run {REGENERATE}")
        else:
            path.write_text(text, encoding="utf-8")
            print(f"{path} regenerated")
    return 1 if args.check and todo else 0


if __name__ == "__main__":
    sys.exit(main())
