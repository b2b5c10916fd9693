"""The ``crawldeck`` command: ``crawl``, ``demo``, ``worker``, ``recrawl``, ``export``,
``links`` (a link checker's report), ``show``, ``config``, ``stats`` (a run's figures,
``core.stats``) and ``attach`` (the console of a crawl running headless, ``tui.attach``).

Exit codes: 0 a finished crawl (or one that reached a budget: ``--max-pages``,
``--max-time``, ``--max-bytes``), 1 ``links --broken`` found broken links (linkchecker's
convention, for scripts and CI; ``attach``: the crawl went away while attached), 2 bad
input (one line on stderr, ``crawldeck COMMAND: error: MESSAGE`` as argparse's own
(``fail``); a flag error ends with ``(see crawldeck COMMAND --help)``, never the usage
block), 3 a crawl that ended without fetching any page (every seed failed; the summary
says why), 130 stopped by Ctrl-C, SIGTERM or SIGHUP (state saved, resume command
printed).

Settings: defaults < ``--config FILE`` < ``-s KEY=VALUE`` < flags (``--delay-ms`` ...);
``crawldeck config`` prints the result with where each value came from. Figures go to
stdout, warnings and errors to stderr (``tui.headless``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import json
import logging
import os
import re
import resource
import shlex
import shutil
import signal
import sys
import tempfile
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, get_args, get_origin, get_type_hints
from urllib.parse import urlsplit

from crawldeck.core import urls
from crawldeck.core.config import (
    CrawlConfig,
    Source,
    asdict,
    build_config,
    load_config,
    load_config_sources,
)
from crawldeck.core.errors import ConfigError, CrawldeckError, SeedError, UrlError, without_url
from crawldeck.core.other_crawlers import OTHER_CRAWLERS, other_crawler_hint
from crawldeck.core.records import LinkCheck
from crawldeck.core.request_options import RequestOptions
from crawldeck.core.seeds import read_seeds
from crawldeck.core.stats import read_run, stats_lines
from crawldeck.core.store import Store
from crawldeck.core.words import plural
from crawldeck.tui.headless import (
    BUDGET_FLAGS,
    WHOLE_CRAWL_BUDGETS,
    HeadlessLog,
    HeadlessReporter,
    outcome_heading,
    stop_signals,
)

# The engine, the exports and the recrawl (aiohttp and the parsers with them) are
# imported where a command needs them: crawldeck --help and --version answer without.
if TYPE_CHECKING:
    from crawldeck.core.engine import Engine
    from crawldeck.core.export import Format
    from crawldeck.core.metrics import MetricsServer

#: The soft limit on open files a crawl asks for (see ``raise_open_files_limit``).
OPEN_FILES_WANTED = 65_536

EXIT_OK = 0
#: ``crawldeck links --broken`` found broken links (as linkchecker exits 1 on them).
EXIT_BROKEN_LINKS = 1
EXIT_BAD_INPUT = 2
#: The crawl ended and got no page at all: every seed failed (its summary says why).
EXIT_SEEDS_FAILED = 3
#: ``crawldeck attach``: the crawl went away while attached (killed: no run's end).
EXIT_ATTACH_LOST = 1
EXIT_STOPPED = 130

#: The loopback network the local web of ``crawldeck demo`` lives on.
DEMO_PREFIX = "127.77.0"
DEMO_NETWORK = f"{DEMO_PREFIX}.0/24"

#: The most worker processes ``--workers`` starts on one machine (more machines join
#: with ``crawldeck worker``).
MAX_WORKERS = 64

#: ``export --table``'s choices: ``core.export.TABLES``, spelt out so that ``--help``
#: does not import the exports (a test holds the two equal).
EXPORT_TABLES = (
    "pages", "blocked", "hosts", "links", "frontier", "runs", "page_versions", "sitemaps",
    "sitemap_urls",
)  # fmt: skip
EXPORT_FORMATS = ("jsonl", "json", "csv")
#: ``-o FILE``: the export's format by the name's ending, as Scrapy's ``-o`` takes it
#: (``.json`` a JSON array, ``.jsonl`` and ``.jl`` JSON lines); ``crawl`` and ``demo``
#: refuse another ending, ``export`` writes JSON lines unless ``--format`` says.
OUTPUT_FORMATS: dict[str, Format] = {".jsonl": "jsonl", ".jl": "jsonl", ".json": "json",
                                     ".csv": "csv"}  # fmt: skip

#: The config's defaults, quoted by ``--help``.
DEFAULTS = CrawlConfig()
#: The demo's politeness delay unless one is given (ms): its hosts are all local.
DEMO_DELAY_MS = 250

#: ``--max-bytes`` units: decimal (kB = 1000 bytes) and binary (KiB = 1024 bytes), as
#: ``df -H`` and ``df -h`` print them; case is ignored.
SIZE_UNITS: dict[str, int] = {
    "": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3,
    "gb": 1000**3, "t": 1000**4, "tb": 1000**4, "kib": 1024, "mib": 1024**2,
    "gib": 1024**3, "tib": 1024**4,
}  # fmt: skip
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([A-Za-z]*)")
#: A seed given on the command line that is not an existing file must start so.
_URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
#: A seed without a scheme that names a host (``example.org``, ``www.example.org/docs``,
#: ``localhost:8080``, ``127.0.0.1:8000/x``, ``[::1]:8080``): taken as ``http://`` plus
#: it, as wget and ``scrapy fetch`` do. A name's last label has a letter (not ``1.5``).
_HOST_SEED = re.compile(
    r"(?:(?:[\w-]+\.)+[\w-]*[^\W\d_][\w-]*\.?|localhost|\d{1,3}(?:\.\d{1,3}){3}"
    r"|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?(?:[/?#]\S*)?"
)
#: Last labels that are a file's suffix, not a top-level domain: ``seeds.txt`` is a
#: seeds file given by a wrong name, not the host ``seeds.txt``.
_FILE_SUFFIXES = frozenset(
    {"txt", "csv", "tsv", "lst", "list", "toml", "json", "jsonl", "db", "sqlite", "xml", "gz"}
)

#: Where ``crawldeck config`` says a value came from (``file`` is followed by its path).
SOURCE_LABELS: dict[Source, str] = {
    "default": "default", "file": "file", "setting": "-s", "flag": "flag",
    "user_agent": "from user_agent",
}  # fmt: skip

#: Each config field's type (what ``-s KEY=VALUE`` reads its value as).
_FIELD_TYPES: dict[str, Any] = get_type_hints(CrawlConfig)


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

    def unrecognized(self, unknown: Sequence[str]) -> NoReturn:
        """The error for arguments this command does not take (``unknown``, as
        ``parse_known_args`` leaves them), with the nearest flag of this command for
        the first one that looks like a flag (``--max-pags`` -> ``--max-pages``,
        ``--delay=5`` by its name): ``difflib`` over its option strings, as Python
        3.14's ``suggest_on_error`` does for choices; another crawler's flag (wget's
        ``-w 2``) gets crawldeck's equivalent instead (``_other_crawler_flag``)."""
        other = _other_crawler_flag(unknown)
        if other is not None:  # a wget flag: crawldeck's word for it (issue #25)
            self.error(other)
        message = f"unrecognized arguments: {' '.join(unknown)}"
        flags = [item.split("=", 1)[0] for item in unknown if item.startswith("-")]
        if flags:
            options = sorted(self._option_string_actions)
            near = difflib.get_close_matches(flags[0], options, n=1, cutoff=0.6)
            if near:
                message += f" (did you mean {near[0]}?)"
        self.error(message)


def _other_crawler_flag(unknown: Sequence[str]) -> str | None:
    """The first of ``unknown`` (arguments argparse did not take) that is another
    crawler's flag (``core.config.OTHER_CRAWLERS``: wget's ``-w 2``, ``--wait=2``,
    ``-l3``, ``-np``, ``-e robots=off``), with crawldeck's equivalent and the value
    converted (``other_crawler_hint``); ``None`` when none is."""
    for i, item in enumerate(unknown):
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
        if given is None and entry.takes_value and i + 1 < len(unknown):
            given = unknown[i + 1]
        return other_crawler_hint(name, given, flag=True)
    return None


def _whole(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected a number >= {least}, got {text!r}")
    return value


def _positive(text: str) -> int:
    """A flag value >= 0 (delays, depths)."""
    return _whole(text, 0)


def _workers(text: str) -> int:
    """A worker count: 1 to ``MAX_WORKERS`` (each is a process with its own engine)."""
    value = _whole(text, 1)
    if value > MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"expected at most {MAX_WORKERS} workers on one machine, got {text!r}"
        )
    return value


def _port(text: str) -> int:
    """A TCP port: 0 (none) to 65535."""
    value = _whole(text, 0)
    if value > 65_535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return value


def _count(text: str) -> int:
    """A flag value >= 1 (page caps, concurrency)."""
    return _whole(text, 1)


def parse_size(text: str) -> int:
    """``--max-bytes``' value in bytes: a number and a unit of ``SIZE_UNITS``, ``500MB``
    -> 500 000 000, ``2GiB`` -> 2 147 483 648, ``1.5k`` -> 1500, ``4096`` -> 4096
    (fractions of a byte dropped).

    Raises:
        argparse.ArgumentTypeError: anything else, or less than 1 byte (one line).
    """
    match = _SIZE.fullmatch(text.strip())
    unit = None if match is None else SIZE_UNITS.get(match[2].lower())
    if match is None or unit is None:
        raise argparse.ArgumentTypeError(
            f"expected a size such as 500MB, 2GiB or 1048576 (bytes), got {text!r}"
        )
    size = int(float(match[1]) * unit)
    if size < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1 byte, got {text!r}")
    return size


def parse_time_budget(text: str) -> int:
    """``--max-time``' value in whole seconds: ``90s``, ``10m``, ``2h``, ``1.5h``, ``90``
    (``core.recrawl.parse_duration``'s units s, m, h, d, w).

    Raises:
        argparse.ArgumentTypeError: not a duration, under 1 s, or not a whole number of
            seconds (``1.5s``).
    """
    from crawldeck.core.recrawl import parse_duration

    try:
        seconds = parse_duration(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if seconds < 1 or seconds != int(seconds):
        raise argparse.ArgumentTypeError(f"expected a whole number of seconds >= 1, got {text!r}")
    return int(seconds)


def parse_setting(text: str) -> tuple[str, object]:
    """``-s KEY=VALUE``: the key and its value, read as a TOML value (``2000``, ``true``,
    ``1.5``, ``["a", "b"]``, ``"text"``) and else as text; a key whose field holds text
    (``scope``, ``user_agent``) takes the text as written unless it is a quoted
    string, and a list key (``render_hosts``) takes ``a,b`` as ``["a", "b"]``. The
    value is checked with the others (``core.config.load_config``).

    Raises:
        argparse.ArgumentTypeError: no ``=``, or nothing before it.
    """
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(
            f"expected KEY=VALUE with a config key (delay_ms=2000), got {text!r}"
        )
    value: object
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    hint = _FIELD_TYPES.get(key)
    if hint is not None and _holds_text(hint) and not isinstance(value, str):
        return key, raw
    if hint == tuple[str, ...] and not isinstance(value, list):
        return key, [item.strip() for item in raw.split(",") if item.strip()]
    return key, value


def parse_header(text: str) -> tuple[str, str]:
    """``-H 'K: V'`` (as curl's and wget's ``--header``): the field's name and value,
    blanks around each dropped; the pair is checked with the config's ``header``
    (``core.request_checks.check_header``: a token name, visible ASCII value).

    Raises:
        argparse.ArgumentTypeError: no ``:``, or nothing before it.
    """
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(
            f"expected 'Name: value', such as 'Accept-Language: en', got {text!r}"
        )
    return name.strip(), value.strip()


#: The environment variable ``--auth``'s Nth password is kept in for this process (the
#: config names it in ``password_env``: a password is never saved in the crawl file).
AUTH_PASSWORD_ENV = "CRAWLDECK_AUTH_PASSWORD_{}"
_AUTH = re.compile(r"(?:(?P<origin>https?://[^=]+)=)?(?P<user>[^:]+):(?P<password>.*)", re.S)


def parse_auth(text: str) -> tuple[str | None, str, str]:
    """``--auth [ORIGIN=]USER:PASS``: the origin (``None``: the seeds'), user and
    password (HTTP Basic, RFC 7617; the user holds no ``:``).

    Raises:
        argparse.ArgumentTypeError: not of that form.
    """
    match = _AUTH.fullmatch(text)
    if match is None:
        raise argparse.ArgumentTypeError(
            "expected USER:PASS or ORIGIN=USER:PASS (https://intranet.example=alice:s3cret), "
            f"got {text.split(':', 1)[0]!r}..."
        )
    return match["origin"], match["user"], match["password"]


def auth_entries(
    given: Sequence[tuple[str | None, str, str]], seeds: Sequence[str]
) -> dict[str, dict[str, str]]:
    """The config's ``auth`` table for ``--auth`` values ``given``: each password put
    in this process's environment (``AUTH_PASSWORD_ENV``, named by ``password_env``:
    the config, saved in the crawl file, never holds it), for its origin or, without
    one, for each seed's origin (scheme, host and port: RFC 7617's protection space).
    As wget, credentials go to those origins only: never to another host, nor to a
    redirect's target on another origin (``core.request_options``)."""
    table: dict[str, dict[str, str]] = {}
    for n, (origin, user, password) in enumerate(given, 1):
        variable = AUTH_PASSWORD_ENV.format(n)
        os.environ[variable] = password
        origins = [origin] if origin else [_origin(seed) for seed in seeds]
        for each in origins:
            table[each.rstrip("/")] = {"user": user, "password_env": variable}
    return table


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def _holds_text(hint: Any) -> bool:
    """Whether a field of type ``hint`` holds text: ``str``, a ``Literal`` of strings, or
    either or ``None``."""
    if hint is str:
        return True
    args = get_args(hint)
    if get_origin(hint) is Literal:
        return all(isinstance(a, str) for a in args)
    return type(None) in args and any(_holds_text(a) for a in args if a is not type(None))


def program() -> str:
    """How to call this command again: ``crawldeck`` when that is on PATH, else the
    path it was started by (e.g. ``.venv/bin/crawldeck`` after the README's install)."""
    argv0 = sys.argv[0]
    on_path = shutil.which("crawldeck")
    if on_path and Path(on_path).resolve() == Path(argv0).resolve():
        return "crawldeck"
    path = Path(argv0).resolve()
    if path.is_relative_to(Path.cwd()):
        return shlex.quote(str(path.relative_to(Path.cwd())))
    return shlex.quote(str(path))


def _add_config_flags(
    parser: argparse.ArgumentParser,
    *,
    delay_default: int,
    auth: bool = False,
    fresh: bool = False,
) -> None:
    """The flags that make the crawl's config (``crawl``, ``demo``, ``config``);
    ``auth``: ``--auth`` too, right after ``--netrc`` (``crawl`` alone: its credentials go
    to the seeds' origins); ``fresh``: each run starts anew (the demo), so the budgets
    count one run and nothing resumes (issue #25: its help said otherwise)."""
    d = DEFAULTS
    parser.add_argument(
        "--config", type=Path, metavar="FILE",
        help="TOML config file, keys as in docs/config.md (default: none, the defaults)",
    )  # fmt: skip
    parser.add_argument(
        "-s", "--set", dest="settings", type=parse_setting, action="append", default=[],
        metavar="KEY=VALUE",
        help="any config key, over the file, typed as in TOML: -s delay_ms=2000 -s "
        "render=never; repeatable (default: none; a flag below wins over -s)",
    )  # fmt: skip
    counted = (
        "the crawl file holds N pages, over ALL its runs: a rerun with the same N fetches "
        "nothing new"
        if not fresh
        else "N pages are fetched (each demo run starts anew)"
    )
    parser.add_argument(
        "--max-pages", type=_count, metavar="N",
        help=f"stop once {counted} (default: no cap)",
    )  # fmt: skip
    parser.add_argument(
        "--max-time", type=parse_time_budget, metavar="DURATION",
        help="stop THIS RUN after DURATION: 90s, 10m, 2h (s, m, h, d, w; a bare number is "
        "seconds, as timeout(1): 90 = 90s); "
        + ("" if fresh else "a resumed run gets DURATION again; ")
        + "fetches in flight get 5 s, a cut one stays queued (default: no limit)",
    )  # fmt: skip
    parser.add_argument(
        "--max-bytes", type=parse_size, metavar="SIZE",
        help="stop once the pages' decoded bodies add up to SIZE"
        + ("" if fresh else ", over ALL runs as --max-pages")
        + ": 500MB, 2GiB (kB = 1000, KiB = 1024 bytes; a bare number is bytes: "
        "4096 = 4KiB); fetches in flight finish (default: no cap)",
    )  # fmt: skip
    parser.add_argument(
        "--max-depth", type=_positive, metavar="N",
        help=f"links followed from a seed, which is depth 0 (default {d.max_depth})",
    )  # fmt: skip
    parser.add_argument(
        "--delay-ms", type=_positive, metavar="MS",
        help="politeness delay per host in ms, from the end of one fetch to the start of "
        f"the next (default {delay_default})",
    )  # fmt: skip
    parser.add_argument(
        "--concurrency", type=_count, metavar="N",
        help=f"fetches in flight over all hosts (default {d.concurrency}; one per host)",
    )  # fmt: skip
    parser.add_argument(
        "--user-agent", metavar="UA",
        help="User-Agent header; its product token is matched against robots.txt groups "
        f"(default {d.user_agent!r})",
    )  # fmt: skip
    parser.add_argument(
        "--scope", choices=("host", "domain", "any"),
        help="which links to follow: the seeds' hosts, their registered domains, or any "
        f"(default {d.scope})",
    )  # fmt: skip
    for flag, rule in (
        ("include", "only URLs it (or another --include) matches are followed; seeds need not"),
        ("exclude", "URLs it matches are refused, seeds too"),
    ):
        parser.add_argument(
            f"--{flag}", action="append", metavar="REGEX",
            help=f"Python regex searched in each cleaned URL: {rule}; repeatable, replaces "
            f"the config file's {flag} list; refused URLs are in blocked as 'excluded' "
            "(default: none)",
        )  # fmt: skip
    parser.add_argument(
        "-H", "--header", dest="headers", type=parse_header, action="append", metavar="'K: V'",
        help="a request header sent with every request, robots.txt included: -H "
        "'Accept-Language: en'; repeatable, replaces the config file's header table "
        "(default: none; Authorization and Cookie are refused: use --auth or netrc)",
    )  # fmt: skip
    parser.add_argument(
        "--proxy", metavar="URL",
        help="send every request through this HTTP proxy, http://HOST:PORT (CONNECT for "
        "https); it sets render=never unless -s render=... is given (Chromium's "
        "sub-requests would not go through it) (default: none, direct; -s trust_env=true "
        "reads HTTP_PROXY)",
    )  # fmt: skip
    parser.add_argument(
        "--netrc", action="store_const", const=True,
        help="HTTP Basic credentials from $NETRC or ~/.netrc: a machine's login and password "
        "go to that host name only, never to another host or a redirect's (default: off)",
    )  # fmt: skip
    if auth:
        parser.add_argument(
            "--auth", type=parse_auth, action="append", default=[], metavar="[ORIGIN=]USER:PASS",
            help="HTTP Basic credentials, sent to the seeds' origins (scheme, host, port) or to "
            "ORIGIN only, never to another host or a redirect's target elsewhere; repeatable; "
            "the password is not saved in the crawl file (a recrawl reads the Nth from "
            "$CRAWLDECK_AUTH_PASSWORD_N; it is visible in ps: "
            "[auth.\"ORIGIN\"] password_env in --config, or --netrc, avoid that) (default: none)",
        )  # fmt: skip
    parser.add_argument(
        "--no-warc", dest="warc", action="store_const", const=False,
        help="write no WARC files (default: every fetch goes to DB-NNNNN.warc.gz beside "
        "the crawl file; show and export --with-body read them)",
    )  # fmt: skip
    parser.add_argument(
        "--warc-prefix", metavar="NAME",
        help="name the WARC files NAME-00001.warc.gz (warc_prefix) (default: the crawl "
        f"file's name, {'demo' if fresh else 'crawl'}-00001.warc.gz)",
    )  # fmt: skip
    parser.add_argument(
        "--warc-dir", metavar="DIR",
        help="write the WARC files into DIR, made when missing; the crawl file records "
        "where, so show and export --with-body still find them (warc_dir) (default: "
        "beside the crawl file)",
    )  # fmt: skip
    _add_metrics_flag(parser)


#: ``--log-level``'s choices (Python's ``logging`` levels, as Scrapy's ``-L``).
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _add_log_flags(parser: argparse.ArgumentParser) -> None:
    """``-q``, ``-v`` and ``--log-level`` (one of them): how much of the crawl's log the
    headless run prints (``log_level``)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-q", "--quiet", dest="log_level", action="store_const", const="ERROR",
        help="headless: no progress lines, no information or warning lines; errors and "
        "the summary only (as --log-level ERROR) (default: progress and INFO lines)",
    )  # fmt: skip
    group.add_argument(
        "-v", "--verbose", dest="log_level", action="store_const", const="DEBUG",
        help="headless: every log line, crawldeck's debug lines included (as --log-level "
        "DEBUG) (default: INFO)",
    )  # fmt: skip
    group.add_argument(
        "--log-level", type=str.upper, choices=LOG_LEVELS, metavar="LEVEL",
        help=f"the least level of log line printed: {', '.join(LOG_LEVELS)} (any case); "
        "above INFO, no progress lines either (default INFO)",
    )  # fmt: skip


def log_level(args: argparse.Namespace) -> int:
    """The ``logging`` level of ``-q``, ``-v`` or ``--log-level`` (``logging.INFO``
    when none is given)."""
    return logging.getLevelNamesMapping()[getattr(args, "log_level", None) or "INFO"]


def _add_metrics_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metrics-port", type=_port, metavar="PORT",
        help="serve Prometheus metrics on http://127.0.0.1:PORT/metrics while the run "
        "lasts (metrics_address sets another address) (default 0: none)",
    )  # fmt: skip


def _add_stats_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stats-json", type=Path, metavar="FILE",
        help="when the run ends (or is stopped), write its stats, the JSON object of "
        "crawldeck stats DB --json, to FILE (default: none; they are in the file's runs "
        "table either way)",
    )  # fmt: skip


def _add_crawl_flags(
    parser: argparse.ArgumentParser,
    *,
    db_default: str,
    delay_default: int,
    auth: bool = False,
    fresh: bool = False,
) -> None:
    """The flags of a crawl (``crawl``, ``demo``): ``auth`` and ``fresh`` as in
    ``_add_config_flags``."""
    resumes = (
        "erased at the start of each run (a file holding another crawl is refused)"
        if fresh
        else "a crawl in it resumes"
    )
    parser.add_argument(
        "--db", default=db_default, metavar="FILE",
        help="the crawl's SQLite file, and where the WARC files go: beside it, named after "
        f"it (NAME-00001.warc.gz); {resumes} (default {db_default}, in the current "
        "directory)",
    )  # fmt: skip
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE",
        help="when the crawl ends (or is stopped), write its pages table to FILE: .jsonl, "
        ".json (an array) or .csv by the name (default: none; crawldeck export writes it "
        "any time)",
    )  # fmt: skip
    _add_stats_flag(parser)
    _add_config_flags(parser, delay_default=delay_default, auth=auth, fresh=fresh)
    parser.add_argument(
        "--no-ui", action="store_true",
        help="headless: a progress line every 5 s and a summary on stdout, warnings on "
        "stderr (default: the console, when stdin, stdout and stderr are a terminal)",
    )  # fmt: skip
    _add_log_flags(parser)
    parser.add_argument(
        "--workers", type=_workers, metavar="N",
        help="crawl with N worker processes sharing one frontier in Redis (a private "
        "redis-server in DB.redis/ unless --redis is given); --max-time and --max-bytes "
        "are not supported with it (default: one process, no Redis)",
    )  # fmt: skip
    _add_redis_flags(parser, required=False)


def _add_redis_flags(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "--redis",
        required=required,
        metavar="URL",
        help="the Redis of a cluster crawl (redis://HOST:PORT/DB, unix:///PATH)"
        + (" (required)" if required else " (default: none; with --workers a private one)"),
    )
    parser.add_argument(
        "--crawl-id",
        required=required,
        metavar="NAME",
        help="the cluster crawl's name in that Redis"
        + (" (required)" if required else " (default: the --db file's name; 'crawl' on a "
           "private Redis)"),
    )  # fmt: skip
    parser.add_argument(
        "--redis-cluster", action="store_true",
        help="the Redis is a Redis Cluster (default: a single Redis server)",
    )  # fmt: skip


#: The epilog of each command's ``--help``: two examples, then notes.
EPILOGS: dict[str, str] = {
    "crawldeck": """\
examples:
  crawldeck demo
      start the built-in local web (9 hosts on loopback) and crawl it in the console
  crawldeck crawl https://docs.example.org/ --max-pages 500 -o pages.jsonl
      crawl one site into crawl.db, at most 500 pages, then write them to pages.jsonl

Each command has its own --help: crawldeck crawl --help.""",
    "crawl": """\
examples:
  crawldeck crawl https://docs.example.org/ --max-pages 500 -o pages.jsonl
      crawl one site into crawl.db, at most 500 pages, then write them to pages.jsonl
  crawldeck crawl seeds.txt --no-ui --max-time 2h -s delay_ms=2000 --db news.db
      the URLs of seeds.txt, headless, for two hours; the same command resumes it

budgets: --max-pages and --max-bytes count over the whole crawl (every run of the
--db file: a rerun with the same cap fetches nothing new); --max-time counts per run
(a resumed run gets its time again). A budget reached ends the run cleanly (exit 0,
the reason in the runs table); the same command, with a higher budget, goes on.
per-host caps: -s max_per_host=N and a [hosts."HOST"] table's max_pages count the URLs
admitted for the host (queued: links, sitemap URLs, redirect targets; all runs), not
its pages fetched: each admitted URL gives at most one page, so the host gets at most
N pages, fewer when robots.txt refuses some or they fail; past N a URL is blocked as
host_cap. A cluster crawl counts them per worker and per run.
settings: defaults < --config FILE < -s KEY=VALUE < flags; crawldeck config prints them.""",
    "demo": """\
examples:
  crawldeck demo
      start the local web and crawl it in the console (q quits, state saved)
  crawldeck demo --no-ui --max-pages 100 -o demo.csv
      headless, 100 pages, then the pages table as demo.csv

The demo erases its --db file each run (it refuses a file that holds another crawl).""",
    "worker": """\
examples:
  crawldeck worker --redis redis://10.0.0.5:6379/0 --crawl-id news
      join the crawl 'news' published by crawldeck crawl ... --redis ... --crawl-id news
  crawldeck worker --redis unix:///run/redis.sock --crawl-id news --warc-dir /data/warc
      the same over a unix socket, writing WARC files into /data/warc""",
    "recrawl": """\
examples:
  crawldeck recrawl crawl.db
      revisit every page of crawl.db, asking with If-None-Match / If-Modified-Since
  crawldeck recrawl crawl.db --older-than 7d --no-ui --max-pages 1000
      only pages last fetched over a week ago, headless, at most 1000 fetches

An unfinished crawl (URLs queued, never fetched) goes on after the revisits: on each
host its pages are revisited first, then its queue is crawled, within the recrawl's
budgets. --max-pages, --max-time and --max-bytes count THIS recrawl's fetches only
(revisits and new pages alike; the crawl's own budgets are not carried over); without
them a recrawl revisits every page and crawls the whole queue. The last line counts
the revisits (304, 200 with the same digest, changed) and the new pages apart.""",
    "export": """\
examples:
  crawldeck export crawl.db --table blocked --format csv -o blocked.csv
      the refused URLs and why as CSV (written to a temporary file, renamed at the end)
  crawldeck export crawl.db --mirror site --convert-links
      the fetched pages as files under site/HOST/..., as wget -m -k leaves them

--mirror names: a path segment's escapes decoded, then every byte but A-Z a-z 0-9
-._~!$&'()*+,;=:@ written %XX (an encoded slash stays %2F, a NUL %00); . and .. as
%2E and %2E%2E; the query after a ?; %_ an empty segment, %+ a long name's next piece
(a directory), %~ a file whose name a directory needs. Nothing lands outside DIR.""",
    "links": """\
examples:
  crawldeck links crawl.db --broken
      the broken links: HTTP 4xx/5xx, no response (refused, DNS failure, timeout), a
      redirect chain that failed or led to one of those; one line each: why, the link,
      the page it is on
  crawldeck links crawl.db --broken --json | jq -r .from_url | sort -u
      the pages that hold a broken link

A link to a URL refused unfetched (robots.txt, out of scope, a crawl trap) is not
broken: it was never checked; the last line counts those by reason. Exit code 1 when
--broken found any (as linkchecker), else 0. The broken_links view of the crawl file
holds the same rows (Datasette, sqlite3).""",
    "show": """\
examples:
  crawldeck show crawl.db https://docs.example.org/
      the page's WARC record: its headers, HTTP head and body as text
  crawldeck show crawl.db https://example.org/logo.png --raw > logo.png
      the body's bytes alone, as they were received""",
    "stats": """\
examples:
  crawldeck stats crawl.db
      the last run's figures as text: responses by status, bytes, blocked, why it ended
  crawldeck stats crawl.db --run 2 --json | jq .responses_by_status
      the second run's stats object as JSON

Counts are the run's own (not the crawl's totals over all runs). A run killed (SIGKILL)
has no stats; this says so.""",
    "attach": """\
examples:
  crawldeck attach crawl.db
      the console of the crawl running headless on crawl.db; q detaches, S stops it
  crawldeck attach crawl.db --web 8080
      the same console in browsers at http://127.0.0.1:8080/ (one process per viewer)
  crawldeck attach crawl.db --web 8080 --bind 0.0.0.0
      on every address, under a random token printed once (plain HTTP: prefer ssh -L)

A crawl run headless (--no-ui, under systemd or nohup) listens on crawl.db.sock, a
Unix socket only its user may open; detaching leaves the crawl running.""",
    "config": """\
examples:
  crawldeck config --config crawldeck.toml -s delay_ms=2000
      what a crawl with that file and setting would use, key by key
  crawldeck config --max-time 10m > crawldeck.toml
      a complete config file to start from (the output is TOML)

Each line is KEY = VALUE # where it came from: default, file FILE, -s, flag (or, for
robots_token, from user_agent); a key that is not set is a comment.""",
}


#: The ten config keys most often set beside the flags, and what each does: the end of
#: ``crawl --help`` (their defaults are read from ``CrawlConfig``).
COMMON_KEYS: dict[str, str] = {
    "per_host_concurrency": "fetches in flight per host",
    "max_per_host": "URLs admitted per host (host_cap beyond)",
    "render": "auto, always or never: run JavaScript pages in Chromium",
    "robots_on_failure": "allow or disallow a host whose robots.txt is unreachable",
    "sitemaps": "read the hosts' sitemaps (robots.txt's Sitemap: lines)",
    "max_retries": "further tries after 429/503, a timeout or a lost connection",
    "retry_refused": "retry a refused connection to a host that never answered",
    "total_timeout_ms": "the longest one fetch may take, in ms",
    "max_body_bytes": "body cap after decoding, in bytes",
    "allow_private": "follow links to private and loopback addresses",
}


def common_keys_epilog() -> str:
    """The end of ``crawl --help``: ``COMMON_KEYS`` with their defaults, and how ``-s``
    sets any other key."""
    width = max(map(len, COMMON_KEYS))
    lines = ["config keys most often set (-s KEY=VALUE; the default in brackets):"]
    for key, what in COMMON_KEYS.items():
        default = toml_value(getattr(DEFAULTS, key))
        lines.append(f"  {key:{width}s}  {what} [{default}]")
    lines.append("any other key is set the same way (-s KEY=VALUE, repeatable, or in a TOML")
    lines.append("--config file); crawldeck config prints them all, docs/config.md lists them.")
    return "\n".join(lines)


def _command(
    sub: argparse._SubParsersAction[Parser], name: str, summary: str, description: str
) -> Parser:
    """A command's parser: ``summary`` in ``crawldeck --help``, ``description`` and the
    command's ``EPILOGS`` entry in its own ``--help`` (``crawl``'s ends with
    ``common_keys_epilog``)."""
    epilog = EPILOGS[name] + ("\n\n" + common_keys_epilog() if name == "crawl" else "")
    return sub.add_parser(
        name, help=summary, description=description, epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
    )  # fmt: skip


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
    crawl = _command(
        sub, "crawl", "crawl from URLs or seeds files (resumes if --db has a crawl)",
        "Crawl from seed URLs into a SQLite file, politely (robots.txt, a delay per\n"
        "host); a crawl already in the file resumes.",
    )  # fmt: skip
    crawl.add_argument(
        "seeds", nargs="+", metavar="SEED",
        help="a URL (http:// or https://; a host name alone, example.org, is taken as "
        "http://example.org/) or a seeds file (one URL per line, # comments); several may "
        "be given",
    )  # fmt: skip
    _add_crawl_flags(crawl, db_default="crawl.db", delay_default=DEFAULTS.delay_ms, auth=True)
    demo = _command(
        sub, "demo", "start the built-in local web and crawl it",
        "Start a local web of 9 hosts on loopback (robots.txt rules, traps, redirects,\n"
        "a slow, a flaky and a busy host, JavaScript pages, a sitemap) and crawl it\n"
        "into a fresh --db file: each run erases it and starts anew; only the local\n"
        "web's addresses are fetched.",
    )  # fmt: skip
    _add_crawl_flags(demo, db_default="demo.db", delay_default=DEMO_DELAY_MS, fresh=True)
    worker = _command(
        sub, "worker", "join a cluster crawl started with crawl --redis ... --crawl-id ...",
        "Join a cluster crawl: take hosts from its Redis, fetch them, send the\n"
        "results to the crawl's coordinator.",
    )  # fmt: skip
    _add_redis_flags(worker, required=True)
    worker.add_argument(
        "--warc-dir",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where this worker writes its WARC files <crawl-id>-<random>-NNNNN.warc.gz "
        "(default: the current directory; copy them beside the crawl file for show and export)",
    )
    recrawl = _command(
        sub, "recrawl", "revisit a crawl's pages with conditional GET, often-changing pages first",
        "Revisit the pages of a crawl file with conditional GET (ETag,\n"
        "Last-Modified), pages that changed more often first.",
    )  # fmt: skip
    recrawl.add_argument("db", type=Path, metavar="DB", help="the crawl file")
    recrawl.add_argument(
        "--older-than",
        default="0s",
        metavar="DURATION",
        help="only pages last fetched longer ago than this: 30s, 15m, 2h, 7d, 2w (default 0s)",
    )
    recrawl.add_argument(
        "--no-ui", action="store_true",
        help="headless: progress lines and a summary (default: the console on a terminal)",
    )  # fmt: skip
    recrawl.add_argument(
        "-s", "--set", dest="settings", type=parse_setting, action="append", default=[],
        metavar="KEY=VALUE",
        help="any config key over the last run's config, as crawl's -s: -s delay_ms=2000; "
        "repeatable (default: none; the budgets are the flags below)",
    )  # fmt: skip
    _add_stats_flag(recrawl)
    _add_metrics_flag(recrawl)
    _add_log_flags(recrawl)
    recrawl.add_argument(
        "--max-pages", type=_count, metavar="N",
        help="stop once THIS RECRAWL fetched N pages, revisits and new pages alike (the "
        "file's earlier pages do not count, unlike crawl's --max-pages) (default: no cap)",
    )  # fmt: skip
    recrawl.add_argument(
        "--max-time", type=parse_time_budget, metavar="DURATION",
        help="stop this recrawl after DURATION, as crawl's: 90s, 10m, 2h (a bare number is "
        "seconds) (default: no limit)",
    )  # fmt: skip
    recrawl.add_argument(
        "--max-bytes", type=parse_size, metavar="SIZE",
        help="stop once THIS RECRAWL's decoded bodies add up to SIZE (a 304 has none): "
        "500MB, 2GiB (a bare number is bytes) (default: no cap)",
    )  # fmt: skip
    exp = _command(
        sub, "export", "export a table of a crawl file, or its pages as a mirror (--mirror)",
        "Write one table of a crawl file as JSON Lines, JSON or CSV, streaming\n"
        "(constant memory); or, with --mirror DIR, its pages as files, as wget -m.",
    )  # fmt: skip
    exp.add_argument("db", type=Path, metavar="DB", help="the crawl file")
    exp.add_argument(
        "--table", choices=EXPORT_TABLES, default="pages", metavar="TABLE",
        help=f"the table: {', '.join(EXPORT_TABLES)} (default pages)",
    )  # fmt: skip
    exp.add_argument(
        "--format", choices=EXPORT_FORMATS,
        help="the format: jsonl (one object a line), json (one array), csv (default: by "
        "-o's name, .jsonl/.jl, .json, .csv, as Scrapy's -o; else jsonl)",
    )  # fmt: skip
    exp.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="output file (default stdout)"
    )
    exp.add_argument(
        "--with-body", action="store_true",
        help="pages as jsonl: add each page's body, read from the WARC files (default: off)",
    )  # fmt: skip
    exp.add_argument(
        "--mirror", type=Path, metavar="DIR",
        help="write the fetched bodies from the WARC files as a directory tree under DIR, "
        "as wget -m does: a folder per host, index.html for directory URLs (default: off)",
    )  # fmt: skip
    exp.add_argument(
        "--convert-links", action="store_true",
        help="with --mirror: make the links between mirrored pages relative, as wget -k "
        "(default: off)",
    )  # fmt: skip
    links = _command(
        sub, "links", "list a crawl's links and what their targets got; --broken: the broken ones",
        "List the links of a crawl file with what each target got, as a link checker\n"
        "reports them; --broken lists only the broken ones.",
    )  # fmt: skip
    links.add_argument("db", type=Path, metavar="DB", help="the crawl file")
    links.add_argument(
        "--broken", action="store_true",
        help="only links whose target got HTTP 4xx/5xx, no response, or a failed redirect "
        "chain, or redirected to such an end (default: every link)",
    )  # fmt: skip
    links.add_argument(
        "--json", action="store_true",
        help="JSON Lines: from_url, to_url, status, error, final_url, blocked (default: text)",
    )  # fmt: skip
    show = _command(
        sub, "show", "print a page's WARC record: headers and body",
        "Print the WARC record of one fetched page: its WARC headers, HTTP head\n"
        "and body.",
    )  # fmt: skip
    show.add_argument("db", type=Path, metavar="DB", help="the crawl file")
    show.add_argument("url", metavar="URL", help="the page's URL, as fetched")
    show.add_argument(
        "--raw", action="store_true",
        help="write only the body's bytes, as stored, no headers (default: off)",
    )  # fmt: skip
    stats = _command(
        sub, "stats", "print a run's stats: responses by status, bytes, blocked, finish reason",
        "Print the stats of one run of a crawl file (the last unless --run): its page\n"
        "fetches, responses by status, bytes, blocked URLs by reason, the finish reason.",
    )  # fmt: skip
    stats.add_argument("db", type=Path, metavar="DB", help="the crawl file")
    stats.add_argument(
        "--run", type=_count, metavar="N",
        help="the run's id, as in the runs table: 1, 2, ... (default: the last run)",
    )  # fmt: skip
    stats.add_argument(
        "--json", action="store_true",
        help="print the stats object as JSON, as --stats-json writes it (default: text)",
    )  # fmt: skip
    config = _command(
        sub, "config", "print the effective config and where each value came from",
        "Print the config a crawl with these flags would use, as TOML, each key\n"
        "with where its value came from.",
    )  # fmt: skip
    _add_config_flags(config, delay_default=DEFAULTS.delay_ms)
    attach = _command(
        sub, "attach", "open the console of a crawl running headless (--web: in browsers)",
        "Open the console of a crawl running headless on DB, over its socket\n"
        "DB.sock: q detaches (the crawl goes on), S stops the crawl.",
    )  # fmt: skip
    attach.add_argument("db", type=Path, metavar="DB", help="the crawl file of the running crawl")
    attach.add_argument(
        "--web", type=_port, metavar="PORT",
        help="serve the console to browsers on PORT (0: any free port, printed; "
        "textual-serve: one process per viewer) instead of opening it here (default: here, "
        "in the terminal)",
    )  # fmt: skip
    attach.add_argument(
        "--bind", default="127.0.0.1", metavar="ADDR",
        help="with --web: the address to listen on; any but loopback puts a random token "
        "in the URL, printed once, and refuses requests without it (default 127.0.0.1)",
    )  # fmt: skip
    parser.commands = {
        "crawl": crawl, "demo": demo, "worker": worker, "recrawl": recrawl, "export": exp,
        "links": links, "show": show, "config": config, "stats": stats, "attach": attach,
    }  # fmt: skip
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    """The config keys the flags give (``None``: not given)."""
    return {
        "max_pages": args.max_pages,
        "max_time_s": args.max_time,
        "max_bytes": args.max_bytes,
        "max_depth": args.max_depth,
        "delay_ms": args.delay_ms,
        "concurrency": args.concurrency,
        "user_agent": args.user_agent,
        "scope": args.scope,
        "include": args.include,
        "exclude": args.exclude,
        "metrics_port": args.metrics_port,
        "header": args.headers,
        "proxy": args.proxy,
        "netrc": args.netrc,
        "warc": args.warc,
        "warc_prefix": args.warc_prefix,
        "warc_dir": args.warc_dir,
        # a browser's sub-requests would bypass the proxy (core.request_checks)
        "render": "never" if args.proxy and "render" not in dict(args.settings) else None,
    }


def fail(command: str, message: str) -> int:
    """Print the one-line error ``crawldeck COMMAND: error: MESSAGE`` on stderr (the
    form of argparse's flag errors, ``Parser.error``: every error names its command);
    returns ``EXIT_BAD_INPUT``."""
    print(f"crawldeck {command}: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def gather_seeds(
    items: Sequence[str], notes: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """The seed URLs of ``crawl SEED [SEED ...]``, in order and each once: an item that
    is an existing path is a seeds file (``core.seeds.read_seeds``), one that starts
    with a scheme (``https://``) a URL, one without a scheme that names a host
    (``example.org/docs``, ``localhost:8080``: ``_HOST_SEED``, not a file name such
    as ``seeds.txt``) the URL ``http://`` + it, as wget and ``scrapy fetch`` take it,
    which ``notes`` gets a line about; and the seeds files' bad lines, one line each
    (``FILE: line N: REASON``), which are skipped.

    Raises:
        SeedError: an item that is neither an existing path nor a URL, a URL that cannot
            be crawled (``core.urls.clean``'s reason), or a seeds file that cannot be read.
    """
    found: list[str] = []
    problems: list[str] = []
    for item in items:
        if Path(item).exists():
            listed, bad = read_seeds(Path(item))
            found.extend(listed)
            problems.extend(f"{item}: {problem}" for problem in bad)
        elif _URL_SCHEME.match(item):
            try:
                found.append(urls.clean(item))
            except UrlError as exc:
                raise SeedError(f"seed {item!r}: {exc}") from None
        elif _HOST_SEED.fullmatch(item) and _last_label(item) not in _FILE_SUFFIXES:
            try:
                url = urls.clean(f"http://{item}")
            except UrlError as exc:
                raise SeedError(f"seed {item!r}: {exc}") from None
            found.append(url)
            if notes is not None:
                notes.append(f"seed {item!r} has no scheme: crawling {url} (as wget does)")
        else:
            raise SeedError(
                f"{item!r} is neither an existing file nor a URL "
                "(a URL starts with http:// or https://, or is a host name: example.org)"
            )
    return list(dict.fromkeys(found)), problems


def _last_label(item: str) -> str:
    """The last label of the host of a seed without a scheme, lowercase
    (``Seeds.TXT`` -> ``txt``, ``example.org:8080/x`` -> ``org``)."""
    host = re.split(r"[/?#]", item, maxsplit=1)[0]
    if not host.startswith("["):
        host = host.split(":", 1)[0]
    return host.rstrip(".").rsplit(".", 1)[-1].lower()


def _output_problem(output: Path | None, db: Path) -> str | None:
    """Why ``-o output`` cannot be written when the crawl in ``db`` ends (checked before
    it starts), ``None`` when it can: a name not ending as ``OUTPUT_FORMATS`` know, a
    directory that does not exist, or the crawl file itself."""
    if output is None:
        return None
    if output.suffix.lower() not in OUTPUT_FORMATS:
        return (f"-o {str(output)!r}: expected a file name ending in .jsonl, .json or .csv "
                "(the export's format is taken from it)")  # fmt: skip
    if not output.resolve().parent.is_dir():
        return f"-o {str(output)!r}: the directory {str(output.parent)!r} does not exist"
    if output.exists() and db.exists() and output.samefile(db):
        return f"-o {str(output)!r} is the crawl file itself"
    return None


def _warc_dir_problem(config: CrawlConfig) -> str | None:
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
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        return f"--warc-dir {config.warc_dir!r}: cannot write in it ({exc.strerror or exc})"
    return None


def _stats_json_problem(path: Path | None, db: Path) -> str | None:
    """Why ``--stats-json path`` cannot be written when the run in ``db`` ends (checked
    before it starts), ``None`` when it can: a directory that does not exist, a
    directory itself, or the crawl file."""
    if path is None:
        return None
    if path.is_dir():
        return f"--stats-json {str(path)!r} is a directory, not a file"
    if not path.resolve().parent.is_dir():
        return f"--stats-json {str(path)!r}: the directory {str(path.parent)!r} does not exist"
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


def _write_output(command: str, db: Path, output: Path | None, code: int) -> int:
    """After a crawl that ended with exit ``code``: with ``-o output``, write the pages
    table there (``core.export.export_file``: atomic) and say how many rows on stdout;
    ``code``, or ``EXIT_BAD_INPUT`` when the export failed (one line on stderr)."""
    if output is None:
        return code
    from crawldeck.core.export import export_file

    try:
        count = export_file(db, "pages", OUTPUT_FORMATS[output.suffix.lower()], output)
    except CrawldeckError as exc:
        return fail(command, f"-o: {exc}")
    except OSError as exc:
        return fail(command, f"-o: cannot write {str(output)!r}: {exc.strerror}")
    with contextlib.suppress(OSError):
        print(f"{plural(count, 'page')} written to {output}", flush=True)
    return code


def _load_config(args: argparse.Namespace, overrides: dict[str, object]) -> CrawlConfig:
    """The config of ``--config``, ``-s`` and ``overrides`` (``load_config``).

    Raises:
        ConfigError: one line naming the file and line, ``-s`` or the key.
    """
    return load_config(args.config, overrides, dict(args.settings))


def start_metrics(config: CrawlConfig) -> MetricsServer | None:
    """The run's Prometheus metrics server (``core.metrics``), started, when
    ``metrics_port`` asks for one, else ``None``.

    Raises:
        ConfigError: the port cannot be bound (one line).
    """
    if not config.metrics_port:
        return None
    from crawldeck.core.metrics import MetricsServer

    metrics = MetricsServer(config.metrics_port, config.metrics_address)
    metrics.start()
    return metrics


async def _crawl(
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
    the run's Prometheus metrics until it ends (``core.metrics``): through ``metrics``,
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
            from crawldeck.core.engine import Engine

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
    (``core.attach``: ``crawldeck attach DB``; a socket that cannot be made is one
    warning, the crawl goes on without); the summary and exit code (``_finish``)."""
    from crawldeck.core.attach import AttachServer

    if progress:
        engine.subscribe(HeadlessReporter())
    server = AttachServer(engine, db, strict_robots=strict_robots, resume_hint=ending.resume)
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
        print(
            "\ncrawldeck: stopping: in-flight fetches finish, state is saved ...",
            file=sys.stderr,
            flush=True,
        )
        engine.request_stop()

    signals = stop_signals()
    for sig in signals:
        loop.add_signal_handler(sig, on_signal)
    outcome = "stopped"
    try:
        result = await engine.run()
        outcome = result.outcome
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
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
        engine, db, strict_robots=config.robots_on_failure == "disallow", resume_hint=ending.resume
    )
    outcome = "stopped" if result is None else result.outcome
    return _finish(engine, store, db, outcome, ending)


def _seed_failures(store: Store) -> list[str]:
    """Why the seeds failed, one line each, when the crawl got no page at all (no 2xx
    response in the file); empty when something was fetched."""
    if store.ok_pages():
        return []
    lines = ["no page got a 2xx answer: every seed failed"]
    for seed in store.seed_outcomes():
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


#: Groups of broken links the end-of-crawl summary lists (``broken_lines``), and the
#: links it shows of each.
SUMMARY_BROKEN_GROUPS = 5
SUMMARY_BROKEN_PER_GROUP = 3


def broken_lines(store: Store, db: Path) -> list[str]:
    """The end-of-crawl summary's broken links (``Store.broken_groups``, after a
    ``flush``): their count and the command that lists them all, then grouped by what
    the target got (``HTTP 404: 3``, ``connect: 1``), the largest group first, at most
    ``SUMMARY_BROKEN_GROUPS`` groups, each with its first ``SUMMARY_BROKEN_PER_GROUP``
    links as ``crawldeck links`` prints them; nothing when there are none, or when the
    file cannot be read (the summary goes on without them). The headless summary, the
    console's (printed when it closes) and a cluster crawl's."""
    try:
        store.flush()
        groups = store.broken_groups(SUMMARY_BROKEN_PER_GROUP)
    except CrawldeckError:
        return []
    if not groups:
        return []
    count = sum(group.count for group in groups)
    listing = f"{program()} links {shlex.quote(str(db))} --broken"
    lines = [f"broken links: {count} (all of them: {listing})"]
    for group in groups[:SUMMARY_BROKEN_GROUPS]:
        more = f", the first {len(group.first)}" if group.count > len(group.first) else ""
        lines.append(f"  {group.label()}: {group.count}{more}")
        lines += [f"    {link_line(link)}" for link in group.first]
    rest = groups[SUMMARY_BROKEN_GROUPS:]
    if rest:
        others = ", ".join(f"{group.label()} {group.count}" for group in rest)
        lines.append(f"  and {sum(group.count for group in rest)} more: {others}")
    return lines


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
    that fetches more (``ending.go_on``); the exit code:
    ``EXIT_STOPPED``, ``EXIT_SEEDS_FAILED`` (the crawl ended and no page of the file
    got a 2xx answer: the summary says why each seed failed) or ``EXIT_OK``.

    The terminal may be gone (SIGHUP after it closed): output that cannot be written is
    dropped, the exit code still tells what happened (the crawl is saved either way).
    """
    lines = broken_lines(store, db)
    lines.append(f"crawl saved in {db}; export with: {program()} export "
                 f"{shlex.quote(str(db))} --table pages --format csv")  # fmt: skip
    stopped = stopped or outcome == "stopped"
    failures = [] if stopped else _seed_failures(store)
    if stopped or outcome in BUDGET_FLAGS:
        lines.append(ending.go_on.get(outcome, ending.resume))
    heading = outcome_heading("stopped" if stopped else outcome, ending.caps, failed=bool(failures))
    try:
        partial = store.partial_pages()
    except CrawldeckError:
        partial = 0  # the summary goes on without it
    with contextlib.suppress(OSError):
        responses = (engine.stats or {}).get("responses_by_status", {})
        HeadlessReporter().summary(engine.snapshot(), heading, responses=responses, partial=partial)
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
        go_on: a whole-crawl budget outcome -> the line with a command that fetches
            more (``raised_budget``); an outcome not in it gets ``resume``.
    """

    resume: str
    caps: Mapping[str, str] = field(default_factory=dict)
    go_on: Mapping[str, str] = field(default_factory=dict)


def raised_budget(argv: Sequence[str], flag: str, value: str) -> list[str]:
    """``argv`` (a command's arguments after ``crawldeck``) with ``flag`` (``--max-pages``,
    ``--max-bytes``) set to ``value``: its ``flag X`` and ``flag=X`` left out and
    ``flag value`` added at the end (a flag wins over ``-s`` and ``--config``)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == flag:
            skip = True
        elif not arg.startswith(f"{flag}="):
            kept.append(arg)
    return [*kept, flag, value]


def crawl_ending(resume: str, config: CrawlConfig, argv: Sequence[str] | None) -> Ending:
    """The ``Ending`` of a crawl with ``config``: its budgets quoted in the heading and,
    with ``argv`` (the command's arguments, ``None`` for the demo, which starts anew),
    a whole-crawl budget's way on: the same command with twice the cap (``--max-pages``
    and ``--max-bytes`` count every run of the file, so the same cap fetches nothing)."""
    caps = {
        outcome: text
        for outcome, text in (
            ("max_pages", config.max_pages and str(config.max_pages)),
            ("max_bytes", config.max_bytes and str(config.max_bytes)),
            ("max_time", config.max_time_s and f"{config.max_time_s}s"),
        )
        if text
    }
    go_on: dict[str, str] = {}
    for outcome, flag in WHOLE_CRAWL_BUDGETS.items():
        cap = getattr(config, outcome)
        if argv is not None and cap:
            command = shlex.join(raised_budget(argv, flag, str(2 * cap)))
            go_on[outcome] = f"to go on, with a higher {flag}: {program()} {command}"
    return Ending(resume, caps, go_on)


def spent_budget(pages: int, body_bytes: int, config: CrawlConfig, ending: Ending) -> str | None:
    """The warning before a resumed run whose whole-crawl budget the file has reached
    already (issue #25 F20: it fetched nothing and said so only at the end): ``pages``
    and ``body_bytes`` are the file's (``Store.counts``, ``Store.page_totals``); the
    line names the cap and the command that goes on (``ending.go_on``); ``None`` when
    no such budget is reached."""
    for outcome, held, shown in (
        ("max_pages", pages, plural(pages, "page")),
        ("max_bytes", body_bytes, f"{body_bytes:,} body bytes"),
    ):
        cap = getattr(config, outcome)
        if cap and held >= cap:
            flag = WHOLE_CRAWL_BUDGETS[outcome]
            way_on = ending.go_on.get(outcome, f"give a higher {flag}")
            return (f"the crawl file holds {shown} already: {flag} {cap} is reached before "
                    f"this run fetches anything; {way_on}")  # fmt: skip
    return None


def _ui_config(config: CrawlConfig) -> CrawlConfig:
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


def _wants_console(args: argparse.Namespace) -> bool:
    """Whether to open the console: not with ``--no-ui``, and only with a terminal on
    stdin, stdout and stderr (the console draws on stderr). Without one (cron, CI,
    nohup, ``> log``, ``2> log``, a pipe) the crawl runs headless and says so in one
    line on stderr, instead of waiting for a ``q`` nobody can type and filling a file
    with escape codes."""
    if args.no_ui:
        return False
    if sys.stdin.isatty() and sys.stdout.isatty() and sys.stderr.isatty():
        return True
    print("crawldeck: no terminal on stdin, stdout and stderr: running headless (as --no-ui)",
          file=sys.stderr)  # fmt: skip
    return False


def _cluster_problem(args: argparse.Namespace, config: CrawlConfig) -> str | None:
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
    given = [key for key in ("max_time_s", "max_bytes") if getattr(config, key) is not None]
    if not given:
        return None
    return (f"{' and '.join(given)}: the workers of a cluster crawl (--workers, --redis) "
            "do not count --max-time or --max-bytes; --max-pages they do")  # fmt: skip


def _run_crawl(args: argparse.Namespace) -> int:
    """``crawldeck crawl SEED ...``: the crawl, headless or in the console, then the
    ``-o`` export; the exit code."""
    raise_open_files_limit()
    try:
        notes: list[str] = []
        seeds, problems = gather_seeds(args.seeds, notes)
        overrides = _overrides(args)
        if args.auth:
            overrides["auth"] = auth_entries(args.auth, seeds)
        config = _load_config(args, overrides)
        # a netrc file missing, a password_env not set: one line before the file is made
        RequestOptions.from_config(config)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    for note in notes:
        print(f"crawldeck: {note}", file=sys.stderr)
    for problem in problems:
        print(f"crawldeck: {problem} (skipped)", file=sys.stderr)
    if not seeds:
        return fail(
            args.command, f"no valid seed URL in {', '.join(repr(item) for item in args.seeds)}"
        )
    if not args.db.strip():
        return fail(args.command, "--db needs a file name")
    refused = (
        _output_problem(args.output, Path(args.db))
        or _stats_json_problem(args.stats_json, Path(args.db))
        or _cluster_problem(args, config)
        or _warc_dir_problem(config)
    )
    if refused is not None:
        return fail(args.command, refused)
    ui = _wants_console(args)
    if ui:
        config = _ui_config(config)
    hint = f"resume with: {program()} {shlex.join(sys.argv[1:])}"
    ending = crawl_ending(hint, config, sys.argv[1:])
    db = Path(args.db)
    if args.workers is not None or args.redis is not None:
        from crawldeck.tui.cluster_cli import run_cluster_crawl

        code = run_cluster_crawl(args, config, seeds, db, hint, ui=ui)
        return (
            code if code == EXIT_BAD_INPUT else _write_output(args.command, db, args.output, code)
        )
    metrics = None
    try:
        metrics = start_metrics(config)  # a port in use is refused before the file is made
        store = Store(db, flush_interval_ms=config.flush_interval_ms)
        if store.has_crawl():
            other = other_seeds(store.seed_urls(), seeds, db)
            if other is not None:
                print(f"crawldeck: warning: {other}", file=sys.stderr, flush=True)
            spent = spent_budget(store.counts()["pages"], store.page_totals()[1], config, ending)
            if spent is not None:
                print(f"crawldeck: warning: {spent}", file=sys.stderr, flush=True)
        code = asyncio.run(
            _crawl(
                config,
                store,
                db,
                seeds,
                ending,
                ui=ui,
                metrics=metrics,
                log_level=log_level(args),
                cleaned=True,
            )
        )
    except CrawldeckError as exc:
        if metrics is not None:
            metrics.close()
        return fail(args.command, str(exc))
    code = write_stats(args.command, db, args.stats_json, code)
    return _write_output(args.command, db, args.output, code)


def _seed_host(url: str) -> str | None:
    try:
        return urls.host_key(urls.clean(url))
    except UrlError:
        return None


def other_seeds(earlier: Sequence[str], seeds: Sequence[str], db: Path) -> str | None:
    """The warning for a crawl file ``db`` whose ``earlier`` seeds share no host with the
    ``seeds`` given now (a user starting a new crawl into an old default ``crawl.db``,
    as wget or Scrapy would start one anew), or ``None``: the run resumes that crawl,
    its seeds added, and says so."""
    before = {host for host in map(_seed_host, earlier) if host is not None}
    if not before or any(_seed_host(url) in before for url in seeds):
        return None
    more = f" and {len(earlier) - 1} more" if len(earlier) > 1 else ""
    return (
        f"{db} holds a crawl of other seeds ({earlier[0]}{more}): this run goes on with it, "
        "the seeds given added; --db NEW.db starts a new crawl"
    )


def _run_demo(args: argparse.Namespace) -> int:
    from crawldeck.localweb.web import LocalWeb

    raise_open_files_limit()
    overrides = _overrides(args)
    if overrides["delay_ms"] is None and "delay_ms" not in dict(args.settings):
        overrides["delay_ms"] = DEMO_DELAY_MS
    # The demo allows only the loopback network of the local web (issue #4).
    overrides["allow_networks"] = [DEMO_NETWORK]
    try:
        config = _load_config(args, overrides)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    if not args.db.strip():
        return fail(args.command, "--db needs a file name")
    db = Path(args.db)
    problem = (
        _output_problem(args.output, db)
        or _stats_json_problem(args.stats_json, db)
        or _cluster_problem(args, config)
        or _warc_dir_problem(config)
    )
    if problem is not None:
        return fail(args.command, problem)
    from crawldeck.core.export import foreign_crawl

    foreign = foreign_crawl(db, DEMO_PREFIX, DEMO_NETWORK)
    if foreign:
        return fail(args.command, f"{str(db)!r} {foreign}; the demo starts anew and would "
                    "erase it: give the demo another --db")  # fmt: skip
    try:
        # the lock first: a demo file in use by another crawldeck is refused, not erased
        store = Store(db, flush_interval_ms=config.flush_interval_ms, fresh=True)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    ui = _wants_console(args)
    if ui:
        config = _ui_config(config)
    hint = f"the demo starts anew each run: {program()} {shlex.join(sys.argv[1:])}"
    try:
        with LocalWeb() as web:
            print("crawldeck demo: the local web is up:")
            for name, base in web.hosts.items():
                print(f"  {name:10s} {base}/")
            print(f"crawling it into {db} (a fresh file each demo run)\n", flush=True)
            if args.workers is not None or args.redis is not None:
                from crawldeck.tui.cluster_cli import run_cluster_crawl

                store.close()  # the coordinator opens it again (fresh: erased above)
                code = run_cluster_crawl(args, config, web.seeds(), db, hint, ui=ui, fresh=True)
                if code == EXIT_BAD_INPUT:
                    return code
            else:
                ending = crawl_ending(hint, config, None)
                code = asyncio.run(
                    _crawl(config, store, db, web.seeds(), ending, ui=ui, log_level=log_level(args))
                )
                code = write_stats(args.command, db, args.stats_json, code)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    finally:
        store.close()
    return _write_output(args.command, db, args.output, code)


def recrawl_budgets(
    args: argparse.Namespace, *, pages_before: int, bytes_before: int
) -> dict[str, int | None]:
    """The budget keys of a recrawl run from its ``--max-pages``, ``--max-time`` and
    ``--max-bytes`` (``None``: not given), which count this recrawl alone: the engine
    counts pages and bytes over all runs (``Engine``: every fetch recorded, a revisit
    too), so the caps are ``pages_before + N`` and ``bytes_before + SIZE``, with
    ``pages_before`` the file's ``pages`` rows and ``bytes_before`` their body bytes
    (what the engine's figures start from: ``Store.counts``, ``Store.page_totals``).
    The crawl's own budgets are not carried over (its ``max_pages`` counts the file's
    pages, which the revisits do not add to)."""
    return {
        "max_pages": None if args.max_pages is None else pages_before + args.max_pages,
        "max_time_s": args.max_time,
        "max_bytes": None if args.max_bytes is None else bytes_before + args.max_bytes,
    }


def _run_recrawl(args: argparse.Namespace) -> int:
    """``crawldeck recrawl DB``: a new run of the crawl in DB with its last run's config
    and the recrawl's own budgets (``recrawl_budgets``), its pages queued again in
    change-rate order, an unfinished crawl's queue behind them
    (``core.recrawl.prepare``), the revisits asked for conditionally; then the summary
    and one line of what the revisits found and how many pages were new."""
    from crawldeck.core.recrawl import parse_duration, prepare, summarize

    raise_open_files_limit()
    db = Path(args.db)
    try:
        older_than_s = parse_duration(args.older_than)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    if not db.is_file():
        return fail(args.command, f"{str(db)!r} does not exist or is not a file")
    if db.stat().st_size == 0:
        return fail(args.command, f"{str(db)!r} is empty, not a crawl file")
    problem = _stats_json_problem(args.stats_json, db)
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
            return fail(args.command, f"{str(db)!r} holds no crawl to revisit")
        before = store.counts()["pages"], store.page_totals()[1]
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
        ui = _wants_console(args)
        if ui:
            config = _ui_config(config)
        started = time.time()
        plan = prepare(store, older_than_s=older_than_s, now=started)
        seeds = store.seed_urls()  # they give the crawl its scope again
    except CrawldeckError as exc:
        store.close()
        return fail(args.command, str(exc))
    queue = f", then {plural(plan.queued, 'queued URL')} never fetched" if plan.queued else ""
    print(f"crawldeck recrawl: {plural(len(plan.order), 'page')} to revisit, "
          f"{plan.skipped} fetched within {args.older_than}{queue}", flush=True)  # fmt: skip
    hint = f"resume with: {program()} {shlex.join(sys.argv[1:])}"
    # the recrawl's budgets count this recrawl: the same command fetches more
    caps = {"max_pages": args.max_pages, "max_bytes": args.max_bytes, "max_time": args.max_time}
    ending = Ending(hint, {key: str(value) for key, value in caps.items() if value})
    try:
        code = asyncio.run(
            _crawl(config, store, db, seeds, ending, ui=ui, log_level=log_level(args))
        )
        with Store(db) as after:
            found = summarize(after, started)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    with contextlib.suppress(OSError):
        revisited = found.not_modified + found.unchanged + found.changed + found.other
        print(f"recrawl: {revisited} revisited: {found.not_modified} not modified (304), "
              f"{found.unchanged} unchanged (200, same digest), {found.changed} changed, "
              f"{found.other} other; {found.new} new pages", flush=True)  # fmt: skip
    return write_stats(args.command, db, args.stats_json, code)


def _stop_export(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _export_to_file(args: argparse.Namespace) -> int:
    """``export_file`` (atomic: a temporary file renamed over ``-o`` at the end), with
    SIGTERM and SIGHUP raising ``KeyboardInterrupt`` as SIGINT does, so that a stopped
    export removes its temporary file and leaves ``-o`` as it was."""
    from crawldeck.core.export import export_file

    stops = (signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, _stop_export) for sig in stops}
    try:
        return export_file(args.db, args.table, args.format, args.output, with_body=args.with_body)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


#: Pages skipped as another URL's file that ``export --mirror`` names, one a line.
MIRROR_CLASHES = 5


def _run_mirror(args: argparse.Namespace) -> int:
    """``crawldeck export DB --mirror DIR [--convert-links]`` (``core.mirror``): the
    files, then on stderr how many and what was skipped, by reason, and the first
    ``MIRROR_CLASHES`` pages skipped as the same file as another URL, with that URL."""
    if (args.output is not None or args.with_body or args.table != "pages"
            or args.format is not None):  # fmt: skip
        return fail(args.command, "--mirror writes a directory of bodies; --table, --format, "
                    "-o and --with-body are for a table's rows")  # fmt: skip
    from crawldeck.core.mirror import write_mirror

    try:
        done = write_mirror(args.db, args.mirror, convert_links=args.convert_links)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    except OSError as exc:
        return fail(args.command, f"cannot write {str(args.mirror)!r}: {exc.strerror}")
    line = (f"crawldeck: mirrored {plural(done.files, 'file')} of {plural(done.hosts, 'host')} "
            f"into {args.mirror}")  # fmt: skip
    if args.convert_links:
        line += (
            f"; {plural(done.links_converted, 'link')} made relative, "
            f"{done.links_absolute} to pages not mirrored made absolute"
        )
    if done.skipped:
        line += "; skipped: " + ", ".join(f"{why} {n}" for why, n in sorted(done.skipped.items()))
    # which URL took which one's file, as a wget user reads a clash (issue #25)
    clashes = [f"  {url}: same file as {kept}" for url, kept in done.same_file[:MIRROR_CLASHES]]
    if len(done.same_file) > MIRROR_CLASHES:
        clashes.append(f"  and {len(done.same_file) - MIRROR_CLASHES} more")
    print("\n".join([line, *clashes]), file=sys.stderr)
    return EXIT_OK


#: Each export format in words, for the note on a name that says another.
FORMAT_NAMES: dict[str, str] = {"jsonl": "JSON lines", "json": "one JSON array", "csv": "CSV"}


def _run_export(args: argparse.Namespace) -> int:
    """``crawldeck export DB``: a table to stdout or ``-o FILE`` in ``--format``, else
    the format ``-o``'s name says (``OUTPUT_FORMATS``), else JSON lines; a note when the
    name says another format than ``--format``; ``--mirror`` (``_run_mirror``)."""
    if args.mirror is not None:
        return _run_mirror(args)
    if args.convert_links:
        return fail(args.command, "--convert-links goes with --mirror DIR")
    by_name = None if args.output is None else OUTPUT_FORMATS.get(args.output.suffix.lower())
    if args.format is None:
        args.format = by_name or "jsonl"
    elif by_name is not None and by_name != args.format:
        # what the name promises is not what is written: say so (issue #25)
        print(f"crawldeck: note: {str(args.output)!r} holds {FORMAT_NAMES[args.format]} "
              f"(--format {args.format}), not what its name says", file=sys.stderr)  # fmt: skip
    from crawldeck.core.export import export

    try:
        if args.output is None:
            count = export(args.db, args.table, args.format, sys.stdout, with_body=args.with_body)
        else:
            count = _export_to_file(args)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    except KeyboardInterrupt:
        kept = "" if args.output is None else f"; {str(args.output)!r} left as it was"
        print(f"crawldeck: export stopped{kept}", file=sys.stderr)
        return EXIT_STOPPED
    except BrokenPipeError:
        # The reader went away (``| head``): not an error. Silence the final flush too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        return fail(args.command, f"cannot write {str(args.output)!r}: {exc.strerror}")
    rows = "row" if count == 1 else "rows"
    print(f"crawldeck: exported {count} {rows} of {args.table}", file=sys.stderr)
    return EXIT_OK


def link_line(link: LinkCheck) -> str:
    """One link as ``crawldeck links`` prints it: ``WHY  LINK  from PAGE``, then
    ``  "ANCHOR TEXT"`` when the link has one (JSON's quoting)."""
    line = f"{link.why()}  {link.to_url}  from {link.from_url}"
    if link.anchor:
        line += "  " + json.dumps(link.anchor, ensure_ascii=False)
    return line


def _run_links(args: argparse.Namespace) -> int:
    """``crawldeck links DB [--broken] [--json]``: one line (or JSON object) a link on
    stdout, then on stderr how many and the links to URLs refused unfetched by reason;
    ``EXIT_BROKEN_LINKS`` when ``--broken`` found any."""
    from crawldeck.core.export import blocked_links, link_report

    count = 0
    targets: set[str] = set()
    try:
        for link in link_report(args.db, broken=args.broken):
            if args.json:
                row = {"from_url": link.from_url, "to_url": link.to_url, "status": link.status,
                       "error": link.error, "final_url": link.final_url,
                       "blocked": link.blocked, "anchor": link.anchor}  # fmt: skip
                print(json.dumps(row, ensure_ascii=False))
            else:
                print(link_line(link))
            count += 1
            targets.add(link.to_url)
        refused = blocked_links(args.db)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    what = "broken link" if args.broken else "link"
    line = f"crawldeck: {plural(count, what)} to {plural(len(targets), 'URL')}"
    if refused:
        by_reason = ", ".join(f"{reason} {n}" for reason, n in refused.items())
        line += f"; not broken, never fetched (refused): {by_reason}"
    print(line, file=sys.stderr)
    return EXIT_BROKEN_LINKS if args.broken and count else EXIT_OK


def _run_show(args: argparse.Namespace) -> int:
    """``crawldeck show DB URL``: the page's WARC header, HTTP head and body (decoded
    text; a binary body as one line with its size), or with ``--raw`` the body's bytes
    alone."""
    from crawldeck.core.export import body_text, page_record

    try:
        record = page_record(args.db, args.url)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    if args.raw:  # the body alone, as stored (like curl -o): for a file or a pipe
        if record.rec_type == "revisit":  # the same payload as a page fetched earlier
            target = dict(record.warc_headers).get("WARC-Refers-To-Target-URI")
            if target is None:
                return fail(args.command, f"{args.url} is a revisit record without its target")
            try:
                record = page_record(args.db, target)
            except CrawldeckError as exc:
                return fail(args.command, f"{args.url} repeats {target}: {exc}")
        sys.stdout.buffer.write(record.body)
        return EXIT_OK
    lines = [f"{name}: {value}" for name, value in record.warc_headers]
    print("\n".join(lines) + "\n")
    if record.http_head:
        print(record.http_head.replace("\r\n", "\n") + "\n")
    text = body_text(record)
    truncated = dict(record.warc_headers).get("WARC-Truncated")
    if truncated == "unspecified" and not record.body:
        print("(body not downloaded: not HTML)")
    elif record.rec_type == "revisit":
        target = dict(record.warc_headers).get("WARC-Refers-To-Target-URI", "?")
        print(f"(revisit: the same payload as {target}; no body stored here)")
    elif text is None:
        kind = record.content_type or "no Content-Type"
        print(f"(binary body, {plural(len(record.body), 'byte')}, {kind}; --raw writes it)")
    else:
        print(text)
    return EXIT_OK


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
    config: CrawlConfig, sources: dict[str, Source], path: Path | None = None
) -> list[str]:
    """The lines ``crawldeck config`` prints: ``KEY = VALUE  # SOURCE`` for each key in
    field order (a TOML file that gives ``config`` again), a key that is not set
    (``None``) as a comment; SOURCE is ``default``, ``file PATH`` (``path``: the
    ``--config`` file), ``-s``, ``flag`` or ``from user_agent``."""
    lines = ["# crawldeck's effective config: defaults < --config FILE < -s KEY=VALUE < flags"]
    for key, value in asdict(config).items():
        label = SOURCE_LABELS[sources[key]]
        if sources[key] == "file":
            label = f"file {path}"
        if value is None:
            lines.append(f"# {key} is not set  # {label}")
        else:
            lines.append(f"{key} = {toml_value(value)}  # {label}")
    return lines


def _run_config(args: argparse.Namespace) -> int:
    """``crawldeck config``: the effective config on stdout, each key with its source."""
    try:
        config, sources = load_config_sources(args.config, _overrides(args), dict(args.settings))
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    print("\n".join(config_lines(config, sources, args.config)))
    return EXIT_OK


def _run_stats(args: argparse.Namespace) -> int:
    """``crawldeck stats DB [--run N] [--json]``: a run's stats (``core.stats``) as text,
    or as the JSON object; a run without stats (running, killed, older) says why."""
    try:
        run = read_run(args.db, args.run)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    if args.json:
        if run.stats is None:
            return fail(args.command, stats_lines(run)[-1])
        print(json.dumps(run.stats, indent=2))
    else:
        print("\n".join(stats_lines(run)))
    return EXIT_OK


def _run_attach(args: argparse.Namespace) -> int:
    """``crawldeck attach DB``: the console of the crawl running headless on DB, in this
    terminal until it detaches, or with ``--web PORT`` served to browsers until
    Ctrl-C (``tui.attach``). Exit 0 (detached, the crawl's end seen, or serving
    stopped), 1 the crawl went away while attached (one line), 2 no crawl to attach to
    or bad input (one line)."""
    from crawldeck.core.attach import open_blocking
    from crawldeck.tui.attach import WEB_DRIVER_ENV, CrawlLost, run_attached, serve_web

    db = Path(args.db)
    if args.web is None and args.bind != "127.0.0.1":
        return fail(args.command, "--bind is for --web")
    try:
        probe, _ = open_blocking(db)  # no crawl there: one line before anything else
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    probe.close()
    if args.web is not None:
        try:
            asyncio.run(serve_web(db, args.web, args.bind, said=_say))
        except CrawldeckError as exc:
            return fail(args.command, str(exc))
        return EXIT_OK
    web = bool(os.environ.get(WEB_DRIVER_ENV))
    if not web and not (sys.stdin.isatty() and sys.stdout.isatty() and sys.stderr.isatty()):
        return fail(args.command, "no terminal on stdin, stdout and stderr: attach opens a "
                    "console (--web PORT serves it to browsers)")  # fmt: skip
    try:
        result = asyncio.run(run_attached(db))
    except CrawlLost as exc:
        print(f"crawldeck attach: {exc}", file=sys.stderr)
        return EXIT_ATTACH_LOST
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    if not web:
        if result is None:
            print(f"crawldeck attach: detached; the crawl goes on ({program()} attach {db})")
        else:
            print(f"crawldeck attach: the crawl ended: {result.outcome}")
    return EXIT_OK


def _say(line: str) -> None:
    """Print one line of a long-running command now (stdout may be a pipe or a log)."""
    print(line, flush=True)


def _run_worker(args: argparse.Namespace) -> int:
    from crawldeck.tui.cluster_cli import run_worker

    return run_worker(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crawldeck`` console script; returns the exit code."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's parser: see crawldeck crawl --help
        parser.commands[args.command].unrecognized(unknown)
    level = log_level(args)
    # other libraries from WARNING up (from ERROR with -q), everything with -v
    root = logging.WARNING if level == logging.INFO else level
    logging.basicConfig(level=root, format="crawldeck: %(message)s")
    # crawldeck's own modules speak from ERROR up unless --log-level DEBUG (-v)
    logging.getLogger("crawldeck").setLevel(
        level if level == logging.DEBUG else max(level, logging.ERROR)
    )
    handlers = {"crawl": _run_crawl, "demo": _run_demo, "export": _run_export,
                "worker": _run_worker, "recrawl": _run_recrawl, "show": _run_show,
                "links": _run_links, "attach": _run_attach,
                "config": _run_config, "stats": _run_stats}  # fmt: skip
    try:
        with contextlib.suppress(BrokenPipeError):
            return handlers[args.command](args)
    except KeyboardInterrupt:  # Ctrl-C before the crawl's own handler is in place
        print("\ncrawldeck: stopped", file=sys.stderr)
        return EXIT_STOPPED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
