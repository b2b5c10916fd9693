"""``crawldeck config``: the config a crawl with these flags would use, as TOML, each key
with where its value came from; its ``--help``, arguments and ``run``, and
``toml_value`` (a config value as TOML, which ``crawl --help`` quotes too).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from crawldeck.cli.flags import DEFAULTS, add_config_flags, flag_overrides, with_saved
from crawldeck.cli.output import EXIT_OK, fail
from crawldeck.core.config import CrawlConfig, Source, asdict, load_config_sources
from crawldeck.core.errors import CrawldeckError
from crawldeck.core.words import plural

#: Where ``crawldeck config`` says a value came from (``file`` is followed by its path).
SOURCE_LABELS: dict[Source, str] = {
    "default": "default", "file": "file", "setting": "-s", "flag": "flag",
    "user_agent": "from user_agent",
}  # fmt: skip

#: Keys whose value follows another key's unless they are set themselves, and what a
#: comment line says of them: ``crawldeck config`` writes them as comments then, so a
#: file made from its output follows an edited ``user_agent`` (issue #25, trial 15: the
#: file pinned ``robots_token = "crawldeck"`` beside a new bot's ``user_agent``).
FOLLOWERS: dict[str, str] = {
    "robots_token": "follows user_agent's product token unless set (RFC 9309 §2.2.1)",
}

#: The key whose value is a table per host: written as TOML tables after every other
#: key (``[hosts."example.org"]``), so that a file made from the output takes one more.
TABLES_KEY = "hosts"
#: What the comment line of ``TABLES_KEY`` says.
TABLES_NOTE = 'a host\'s table goes at the end: [hosts."example.org"] then delay_ms = 2000'

#: The command's line in ``crawldeck --help``, and the start of its own ``--help``.
SUMMARY = "print the effective config and where each value came from"
DESCRIPTION = (
    "Print the config a crawl with these flags would use, as TOML, each key\n"
    "with where its value came from."
)
#: The end of its ``--help``: two examples, then notes.
EPILOG = """\
examples:
  crawldeck config --config crawldeck.toml -s delay_ms=2000
      what a crawl with that file and setting would use, key by key
  crawldeck config --max-time 10m > crawldeck.toml
      a complete config file to start from (the output is TOML)

Each line is KEY = VALUE # where it came from: default, file FILE, -s, flag (or, for
robots_token, from user_agent); a key that is not set is a comment, and so is
robots_token while it follows user_agent."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``crawldeck config``'s arguments."""
    add_config_flags(parser, delay_default=DEFAULTS.delay_ms)
    parser.add_argument(
        "--db", type=Path, metavar="FILE",
        help="the config a resume of the crawl in FILE with no SEED would use: its last "
        "run's, but its budgets, under what --config, -s and the flags give (default: "
        "none, a new crawl's)",
    )  # fmt: skip


def toml_value(value: object) -> str:
    """``value`` (of ``core.config.asdict``: text, a number, a bool, a list, a table) as
    a TOML value; a table's ``None`` entries are left out (TOML has no null).

    Raises:
        TypeError: a value of another type (no config key holds one).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        items = [f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items()
                 if v is not None]  # fmt: skip
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"no TOML form for {value!r}")


def config_lines(
    config: CrawlConfig,
    sources: dict[str, Source],
    path: Path | None = None,
    saved: frozenset[str] = frozenset(),
    db: Path | None = None,
) -> list[str]:
    """The lines ``crawldeck config`` prints: ``KEY = VALUE  # SOURCE`` for each key in
    field order (a TOML file that gives ``config`` again), a key that is not set
    (``None``) as a comment, and so is a key of ``FOLLOWERS`` that follows another;
    the per-host tables (``TABLES_KEY``) come last, as TOML tables; SOURCE is
    ``default``, ``file PATH`` (``path``: the
    ``--config`` file), ``-s``, ``flag``, ``from user_agent``, or ``crawl file DB`` for
    the keys of ``saved`` (``--db``: its last run's values)."""
    under = "defaults < the crawl file's last run (--db)" if db is not None else "defaults"
    lines = [f"# crawldeck's effective config: {under} < --config FILE < -s KEY=VALUE < flags"]
    tables: list[str] = []
    for key, value in asdict(config).items():
        label = SOURCE_LABELS[sources[key]]
        if sources[key] == "file":
            label = f"file {path}"
        if key in saved:
            label = f"crawl file {db}"
        if key == TABLES_KEY and isinstance(value, dict):
            # tables at the end, where a user adds one more (issue #25 trial 17: an
            # inline "hosts = {}" made an added [hosts."..."] a second declaration)
            lines.append(f"# {key}: {plural(len(value), 'host table')} ({label}); {TABLES_NOTE}")
            for host, entry in value.items():
                tables += ["", f"[{key}.{json.dumps(str(host))}]"]
                tables += [f"{k} = {toml_value(v)}" for k, v in entry.items() if v is not None]
            continue
        if value is None:
            lines.append(f"# {key}: not set ({label})")
        elif key in FOLLOWERS and sources[key] in ("default", "user_agent"):
            # written out, it would stay as it is when the file's user_agent is edited
            lines.append(f"# {key} = {toml_value(value)}  # {label}: {FOLLOWERS[key]}")
        else:
            lines.append(f"{key} = {toml_value(value)}  # {label}")
    return lines + tables


def run(args: argparse.Namespace) -> int:
    """``crawldeck config``: the effective config on stdout, each key with its source."""
    try:
        config, sources = load_config_sources(
            args.config, flag_overrides(args), dict(args.settings)
        )
        taken: frozenset[str] = frozenset()
        if args.db is not None:  # issue #25 trial 21: what a crawl file used
            from crawldeck.core.storage.export import last_run_config

            saved = last_run_config(args.db)
            if saved is None:
                return fail(args.command, f"{args.db} holds no run")
            config, taken = with_saved(config, sources, saved)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    lines = config_lines(config, sources, args.config, taken, args.db)
    print("\n".join(lines))
    return EXIT_OK
