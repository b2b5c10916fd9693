"""The flags several commands share, and the types of their values: the flags that make
a crawl's config (``crawl``, ``demo``, ``config``), the log, metrics, stats and Redis
flags, and the config keys the flags give (``flag_overrides``, ``config_from_flags``).

Each value type raises ``argparse.ArgumentTypeError`` with one line, which the parser
prints as ``crawldeck COMMAND: error: ...`` (``cli.parser.Parser``).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, get_args, get_origin, get_type_hints
from urllib.parse import urlsplit

from crawldeck.core.config import CrawlConfig, build_config, load_config_sources
from crawldeck.core.errors import ConfigError

if TYPE_CHECKING:
    from crawldeck.core.storage.export import Format


#: The most worker processes ``--workers`` starts on one machine (more machines join
#: with ``crawldeck worker``).
MAX_WORKERS = 64

#: ``-o FILE``: the export's format by the name's ending, as Scrapy's ``-o`` takes it
#: (``.json`` a JSON array, ``.jsonl`` and ``.jl`` JSON lines); ``crawl``, ``demo`` and
#: ``export`` refuse another ending (``export`` takes any with ``--format``).
OUTPUT_FORMATS: dict[str, Format] = {".jsonl": "jsonl", ".jl": "jsonl", ".json": "json",
                                     ".csv": "csv"}  # fmt: skip


def output_format(output: Path) -> Format | None:
    """The export format ``-o output``'s name says by its ending (``OUTPUT_FORMATS``,
    case ignored), ``None`` for an ending none of them has (``pages.xml``, ``pages``)."""
    return OUTPUT_FORMATS.get(output.suffix.lower())


def unknown_output_name(output: Path) -> str:
    """The one line that refuses ``-o output`` whose name says no format
    (``output_format`` is ``None``), naming the endings ``OUTPUT_FORMATS`` know; the same
    for ``crawl``, ``demo`` and ``export``."""
    *most, last = OUTPUT_FORMATS
    line = (f"-o {str(output)!r}: expected a file name ending in {', '.join(most)} or "
            f"{last} (the export's format is taken from it)")  # fmt: skip
    if output.suffix.lower() == ".log":  # wget's -o LOGFILE (issue #25 trial 20)
        line += f"; for a log as wget's -o writes one: --no-ui > {output} 2>&1"
    return line


#: The config's defaults, quoted by ``--help``.
DEFAULTS = CrawlConfig()

#: ``--max-bytes`` units: decimal (kB = 1000 bytes) and binary (KiB = 1024 bytes), as
#: ``df -H`` and ``df -h`` print them; case is ignored.
SIZE_UNITS: dict[str, int] = {
    "": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3,
    "gb": 1000**3, "t": 1000**4, "tb": 1000**4, "kib": 1024, "mib": 1024**2,
    "gib": 1024**3, "tib": 1024**4,
}  # fmt: skip
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([A-Za-z]*)")

#: Each config field's type (what ``-s KEY=VALUE`` reads its value as).
_FIELD_TYPES: dict[str, Any] = get_type_hints(CrawlConfig)


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


def parse_port(text: str) -> int:
    """A TCP port: 0 (none) to 65535."""
    value = _whole(text, 0)
    if value > 65_535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return value


def parse_count(text: str) -> int:
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
    (``core.crawl.recrawl.parse_duration``'s units s, m, h, d, w).

    Raises:
        argparse.ArgumentTypeError: not a duration, under 1 s, or not a whole number of
            seconds (``1.5s``).
    """
    from crawldeck.core.crawl.recrawl import parse_duration

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
    (``core.policy.request_checks.check_header``: a token name, visible ASCII value).

    Raises:
        argparse.ArgumentTypeError: no ``:``, or nothing before it; or a URL (wget's
            ``-H URL``, span hosts, took the seed as the header: issue #25 trial 19).
    """
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text):
        raise argparse.ArgumentTypeError(
            f"expected 'Name: value', got the URL {text!r}: -H is a request header here "
            "(wget's -H, span hosts, is --scope any)"
        )
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


#: What a printed command shows in place of an ``--auth`` password.
PASSWORD_SHOWN = "PASSWORD"


def without_passwords(argv: Sequence[str]) -> list[str]:
    """``argv`` with each ``--auth`` value's password replaced by ``PASSWORD_SHOWN``: the
    commands a crawl prints (resume with, go on with) land in logs and ``nohup.out``,
    where a password must not. Values that ``parse_auth`` refuses are left as given."""
    shown: list[str] = []
    after_auth = False
    for arg in argv:
        flag, eq, value = arg.partition("=") if arg.startswith("--auth=") else ("", "", arg)
        if after_auth or eq:
            try:
                origin, user, _ = parse_auth(value)
            except argparse.ArgumentTypeError:
                pass
            else:
                value = (
                    f"{origin}={user}:{PASSWORD_SHOWN}" if origin else f"{user}:{PASSWORD_SHOWN}"
                )
            arg = f"{flag}={value}" if eq else value
        after_auth = arg == "--auth"
        shown.append(arg)
    return shown


def auth_entries(
    given: Sequence[tuple[str | None, str, str]], seeds: Sequence[str]
) -> dict[str, dict[str, str]]:
    """The config's ``auth`` table for ``--auth`` values ``given``: each password put
    in this process's environment (``AUTH_PASSWORD_ENV``, named by ``password_env``:
    the config, saved in the crawl file, never holds it), for its origin or, without
    one, for each seed's origin (scheme, host and port: RFC 7617's protection space).
    As wget, credentials go to those origins only: never to another host, nor to a
    redirect's target on another origin (``core.net.request_options``)."""
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


def add_config_flags(
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
        "N fetches are made, over ALL the crawl file's runs (a failed URL tried again by a "
        "later run, or a recrawl's revisit, counts again: the console's 'fetched'): a "
        "rerun with the same N fetches nothing new"
        if not fresh
        else "N pages are fetched (each demo run starts anew)"
    )
    parser.add_argument(
        "--max-pages", type=parse_count, metavar="N",
        help=f"stop once {counted} (default: no cap)",
    )  # fmt: skip
    parser.add_argument(
        "--max-time", type=parse_time_budget, metavar="DURATION",
        help="stop THIS RUN after DURATION of crawling (time paused in the console not "
        "counted): 90s, 10m, 2h, 1h30m (s, m, h, d, w; a bare number is seconds, as timeout(1): "
        "90 = 90s); "
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
        "--concurrency", type=parse_count, metavar="N",
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
        "(default: none; Authorization and Cookie are refused: use "
        + ("--auth or --netrc)" if auth else '--netrc, or [auth."ORIGIN"] in a config file)'),
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
    add_metrics_flag(parser)


#: ``--log-level``'s choices (Python's ``logging`` levels, as Scrapy's ``-L``).
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def add_log_flags(parser: argparse.ArgumentParser) -> None:
    """``-q``, ``-v`` and ``--log-level`` (one of them): how much of the crawl's log the
    headless run prints (``log_level``); each makes the run headless
    (``runner.wants_console``)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-q", "--quiet", dest="log_level", action="store_const", const="ERROR",
        help="headless (as --no-ui), with no progress lines and no information or warning "
        "lines: errors and the summary only (as --log-level ERROR) (default: progress and "
        "INFO lines)",
    )  # fmt: skip
    group.add_argument(
        "-v", "--verbose", dest="log_level", action="store_const", const="DEBUG",
        help="headless (as --no-ui), printing every log line, crawldeck's debug lines "
        "included (as --log-level DEBUG) (default: INFO)",
    )  # fmt: skip
    group.add_argument(
        "--log-level", type=str.upper, choices=LOG_LEVELS, metavar="LEVEL",
        help=f"headless (as --no-ui), the least level of log line printed: "
        f"{', '.join(LOG_LEVELS)} (any case); above INFO, no progress lines either "
        "(default INFO)",
    )  # fmt: skip


def log_level(args: argparse.Namespace) -> int:
    """The ``logging`` level of ``-q``, ``-v`` or ``--log-level`` (``logging.INFO``
    when none is given)."""
    return logging.getLevelNamesMapping()[getattr(args, "log_level", None) or "INFO"]


def add_metrics_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metrics-port", type=parse_port, metavar="PORT",
        help="serve Prometheus metrics on http://127.0.0.1:PORT/metrics while the run "
        "lasts (metrics_address sets another address) (default 0: none)",
    )  # fmt: skip


def add_stats_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stats-json", type=Path, metavar="FILE",
        help="when the run ends (or is stopped), write its stats, the JSON object of "
        "crawldeck stats DB --json, to FILE (default: none; they are in the file's runs "
        "table either way)",
    )  # fmt: skip


def add_crawl_flags(
    parser: argparse.ArgumentParser,
    *,
    db_default: str,
    delay_default: int,
    auth: bool = False,
    fresh: bool = False,
) -> None:
    """The flags of a crawl (``crawl``, ``demo``): ``auth`` and ``fresh`` as in
    ``add_config_flags``."""
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
        help="when the crawl ends (or is stopped), write its pages table to FILE: .jsonl "
        "or .jl, .json (an array) or .csv by the name (default: none; crawldeck export writes it "
        "any time)",
    )  # fmt: skip
    add_stats_flag(parser)
    add_config_flags(parser, delay_default=delay_default, auth=auth, fresh=fresh)
    parser.add_argument(
        "--no-ui", action="store_true",
        help="headless: a progress line every 5 s and a summary on stdout, warnings on "
        "stderr (default: the console, when stdin, stdout and stderr are a terminal)",
    )  # fmt: skip
    add_log_flags(parser)
    parser.add_argument(
        "--workers", type=_workers, metavar="N",
        help="crawl with N worker processes sharing one frontier in Redis (a private "
        "redis-server in DB.redis/ unless --redis is given); --max-time and --max-bytes "
        "are not supported with it (default: one process, no Redis)",
    )  # fmt: skip
    add_redis_flags(parser, required=False)


def add_redis_flags(parser: argparse.ArgumentParser, *, required: bool) -> None:
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


#: The flag that gives each config key of ``flag_overrides`` (its errors name it).
FLAG_NAMES: Final = {
    "max_pages": "--max-pages",
    "max_time_s": "--max-time",
    "max_bytes": "--max-bytes",
    "max_depth": "--max-depth",
    "delay_ms": "--delay-ms",
    "concurrency": "--concurrency",
    "user_agent": "--user-agent",
    "scope": "--scope",
    "include": "--include",
    "exclude": "--exclude",
    "metrics_port": "--metrics-port",
    "header": "-H/--header",
    "proxy": "--proxy",
    "netrc": "--netrc",
    "warc": "--no-warc",
    "warc_prefix": "--warc-prefix",
    "warc_dir": "--warc-dir",
    "auth": "--auth",
}


def flag_overrides(args: argparse.Namespace) -> dict[str, object]:
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
        # a browser's sub-requests would bypass the proxy (core.policy.request_checks)
        "render": "never" if args.proxy and "render" not in dict(args.settings) else None,
    }


#: The keys a resume with no SEED does not take from the last run: the budgets (a
#: spent cap would stop it at once) and the metrics port (another process may hold it).
NOT_CARRIED: Final = frozenset({"max_pages", "max_bytes", "max_time_s", "metrics_port"})


def config_from_flags(
    args: argparse.Namespace,
    overrides: dict[str, object],
    saved: Mapping[str, Any] | None = None,
) -> CrawlConfig:
    """The config of ``--config``, ``-s`` and ``overrides`` (``load_config``); with
    ``saved`` (a crawl file's last run's config: ``crawl --db FILE`` with no SEED), its
    values for every key none of those sets but ``NOT_CARRIED`` (a resume goes on as
    the run before it, as Heritrix resumes a job: issue #25 trial 21, the run's
    ``--include`` and ``--delay-ms`` were dropped; its budgets are this run's, as a
    recrawl's are).

    Raises:
        ConfigError: one line naming the file and line, ``-s`` or the key.
    """
    config, sources = load_config_sources(
        args.config, overrides, dict(args.settings), flag_names=FLAG_NAMES
    )
    return with_saved(config, sources, saved)[0]


def with_saved(
    config: CrawlConfig, sources: Mapping[str, str], saved: Mapping[str, Any] | None
) -> tuple[CrawlConfig, frozenset[str]]:
    """``config`` with ``saved``'s value for each key ``sources`` says is a default,
    but ``NOT_CARRIED`` (``config_from_flags``), and the keys so taken (``crawldeck
    config --db`` labels them).

    Raises:
        ConfigError: a saved value this crawldeck refuses (one line).
    """
    if not saved:
        return config, frozenset()
    values = asdict(config)
    taken = frozenset(
        key
        for key, source in sources.items()
        if source == "default" and key in saved and key not in NOT_CARRIED
    )
    values.update({key: saved[key] for key in taken})
    return build_config(values), taken
