"""``crawldeck crawl SEED ...``: crawl from seed URLs and seeds files into a SQLite file,
politely; a crawl already in the file resumes. Its ``--help`` (ending with the config
keys most often set), its arguments, how the seeds given are read (``gather_seeds``)
and its ``run``; a crawl with ``--workers`` or ``--redis`` is ``cli.cluster``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from crawldeck.cli.config import toml_value
from crawldeck.cli.flags import (
    DEFAULTS,
    add_crawl_flags,
    auth_entries,
    config_from_flags,
    flag_overrides,
    log_level,
    without_passwords,
)
from crawldeck.cli.output import EXIT_BAD_INPUT, fail, program
from crawldeck.cli.runner import (
    cluster_problem,
    crawl_ending,
    output_problem,
    raise_open_files_limit,
    run_crawl,
    say_headless,
    spent_budget,
    start_metrics,
    stats_json_problem,
    ui_config,
    wants_console,
    warc_dir_problem,
    write_output,
    write_stats,
)
from crawldeck.core.config import CrawlConfig
from crawldeck.core.errors import DISK_FULL, CrawldeckError, SeedError, StoreError, UrlError
from crawldeck.core.net.request_options import RequestOptions
from crawldeck.core.policy import urls
from crawldeck.core.policy.seeds import URL_SCHEME, read_seeds, schemeless
from crawldeck.core.storage.export import holds_crawl, last_run_config
from crawldeck.core.storage.store import Store, is_sqlite_file
from crawldeck.core.words import plural

#: The command's line in ``crawldeck --help``, and the start of its own ``--help``.
SUMMARY = "crawl from URLs or seeds files (resumes if --db has a crawl)"
DESCRIPTION = (
    "Crawl from seed URLs into a SQLite file, politely (robots.txt, a delay per\n"
    "host); a crawl already in the file resumes."
)
#: The end of its ``--help``: two examples, then notes.
EPILOG = """\
examples:
  crawldeck crawl https://docs.example.org/ --max-pages 500 -o pages.jsonl
      crawl one site into crawl.db, at most 500 pages, then write them to pages.jsonl
  crawldeck crawl seeds.txt --no-ui --max-time 2h -s delay_ms=2000 --db news.db
      the URLs of seeds.txt, headless, for two hours; the same command resumes it

budgets: --max-pages and --max-bytes count over the whole crawl (every run of the
--db file: a rerun with the same cap fetches nothing new); --max-time counts per run
(a resumed run gets its time again; time paused is not counted). A budget reached
ends the run cleanly (exit 0, the reason in the runs table); the same command, with a
higher budget, goes on.
per-host caps: -s max_per_host=N and a [hosts."HOST"] table's max_pages count the URLs
admitted for the host (queued: links, sitemap URLs, redirect targets; all runs), not
its pages fetched: each admitted URL gives at most one page, so the host gets at most
N pages, fewer when robots.txt refuses some or they fail; past N a URL is blocked as
host_cap. A cluster crawl counts them per worker and per run.
settings: defaults < --config FILE < -s KEY=VALUE < flags; crawldeck config prints them."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``crawldeck crawl``'s arguments."""
    parser.add_argument(
        "seeds", nargs="*", metavar="SEED",
        help="a URL (http:// or https://; a host name alone, example.org, is taken as "
        "http://example.org/) or a seeds file (one URL per line, # comments); several may "
        "be given; none: resume the crawl of --db",
    )  # fmt: skip
    add_crawl_flags(parser, db_default="crawl.db", delay_default=DEFAULTS.delay_ms, auth=True)


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


#: A seed given on the command line that is not an existing file must start so.


def port_less_tables(config: CrawlConfig, seeds: Sequence[str]) -> list[str]:
    """One line for each ``[hosts."NAME"]`` table that names a seed's host without the
    seed's port: a host key has its port (``127.0.0.1`` is not ``127.0.0.1:8761``), so
    the table applies to no seed and would be silently unused (issue #25 trial 7)."""
    keys = set()
    for seed in seeds:
        with contextlib.suppress(CrawldeckError):
            keys.add(urls.host_key(seed))
    lines = []
    for table in config.hosts:
        if table.host in keys:
            continue
        ported = sorted(k for k in keys if k.rpartition(":")[0] == table.host)
        if ported:
            lines.append(
                f'[hosts."{table.host}"] applies to no seed: the seed\'s host is '
                f'{ported[0]} (a host has its port: [hosts."{ported[0]}"])'
            )
    return lines


def _seed_error(item: str, exc: UrlError) -> str:
    """``seed 'ITEM': PROBLEM``, the URL said once (the URL check's message names it
    too: ``unsupported scheme 'ftp' in 'ftp://x/'``; issue #25 trial 19)."""
    return f"seed {item!r}: {str(exc).replace(f' in {item!r}', '')}"


def gather_seeds(
    items: Sequence[str], notes: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """The seed URLs of ``crawl SEED [SEED ...]``, in order and each once: an item that
    is an existing path is a seeds file (``core.policy.seeds.read_seeds``), one that starts
    with a scheme (``https://``) a URL, one without a scheme that names a host
    (``example.org/docs``, ``localhost:8080``: ``seeds.schemeless``, not a file name such
    as ``seeds.txt``) the URL ``http://`` + it, as wget and ``scrapy fetch`` take it,
    which ``notes`` gets a line about (one a seeds file for its lines without a
    scheme); and the seeds files' bad lines, one line each (``FILE: line N: REASON``),
    which are skipped.

    Raises:
        SeedError: an item that is neither an existing path nor a URL, a URL that cannot
            be crawled (``core.policy.urls.clean``'s reason), or a seeds file that cannot be read.
    """
    found: list[str] = []
    problems: list[str] = []
    for item in items:
        if is_sqlite_file(Path(item)):  # issue #25 trial 20: "holds NUL bytes" said
            raise SeedError(
                f"{item!r} is a crawl file, not a seeds file: resume its crawl with "
                f"{program()} crawl --db {shlex.quote(item)}"
            )
        if Path(item).exists():
            guessed: list[int] = []
            listed, bad = read_seeds(Path(item), guessed)
            found.extend(listed)
            problems.extend(f"{item}: {problem}" for problem in bad)
            if guessed and notes is not None:  # one line a file, as on the command line
                first = (
                    f" (the first: line {guessed[0]})"
                    if len(guessed) > 1
                    else f" (line {guessed[0]})"
                )
                notes.append(f"{item}: {plural(len(guessed), 'line')} without a scheme{first}: "
                             "crawled as http:// + the line, as wget -i does")  # fmt: skip
        elif URL_SCHEME.match(item):
            try:
                found.append(urls.clean(item))
            except UrlError as exc:
                raise SeedError(_seed_error(item, exc)) from None
        elif (spelled := schemeless(item)) is not None:
            try:
                url = urls.clean(spelled)
            except UrlError as exc:
                raise SeedError(_seed_error(item, exc)) from None
            found.append(url)
            if notes is not None:
                notes.append(f"seed {item!r} has no scheme: crawling {url} (as wget does)")
        else:
            raise SeedError(
                f"{item!r} is neither an existing file nor a URL "
                "(a URL starts with http:// or https://, or is a host name: example.org)"
            )
    return list(dict.fromkeys(found)), problems


def run(args: argparse.Namespace) -> int:
    """``crawldeck crawl SEED ...``: the crawl, headless or in the console, then the
    ``-o`` export; the exit code. No SEED resumes the crawl of ``--db`` with the seeds
    it holds, as Heritrix resumes a job (issue #25 trial 20: the seeds were asked
    again)."""
    if not args.seeds and not holds_crawl(Path(args.db)):
        return fail(args.command, f"no SEED given, and {args.db} holds no crawl to resume: "
                    "give a URL or a seeds file (crawldeck crawl --help)")  # fmt: skip
    if not args.seeds and (args.workers is not None or args.redis is not None):
        return fail(args.command, "a cluster crawl needs its seeds: give them again")
    raise_open_files_limit()
    try:
        notes: list[str] = []
        seeds, problems = gather_seeds(args.seeds, notes)
        overrides = flag_overrides(args)
        if args.auth:
            overrides["auth"] = auth_entries(args.auth, seeds)
        saved = None if args.seeds else last_run_config(Path(args.db))
        if saved is not None:
            notes.append(f"no SEED: resuming {args.db} with its last run's config but its "
                         "budgets (what --config, -s and the flags give now wins)")  # fmt: skip
        config = config_from_flags(args, overrides, saved)
        # a netrc file missing, a password_env not set: one line before the file is made
        RequestOptions.from_config(config)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    level = log_level(args)  # -q: errors and the summary only (issue #25 trial 18)
    for note in notes if level <= logging.INFO else ():
        print(f"crawldeck: {note}", file=sys.stderr)
    for problem in problems if level <= logging.WARNING else ():
        print(f"crawldeck: {problem} (skipped)", file=sys.stderr)
    for line in port_less_tables(config, seeds) if level <= logging.WARNING else ():
        print(f"crawldeck: warning: {line}", file=sys.stderr)
    if not seeds and args.seeds:
        return fail(
            args.command, f"no valid seed URL in {', '.join(repr(item) for item in args.seeds)}"
        )
    if not args.db.strip():
        return fail(args.command, "--db needs a file name")
    folder = Path(args.db).parent
    if not folder.is_dir():  # as -o says it (issue #25 trial 21: "cannot open crawls/x")
        return fail(args.command, f"--db {args.db!r}: the directory {str(folder)!r} does not "
                    f"exist (mkdir -p {shlex.quote(str(folder))})")  # fmt: skip
    refused = (
        output_problem(args.output, Path(args.db))
        or stats_json_problem(args.stats_json, Path(args.db))
        or cluster_problem(args, config)
        or warc_dir_problem(config)
    )
    if refused is not None:
        return fail(args.command, refused)
    ui = wants_console(args)
    if ui:
        config = ui_config(config)
    argv = without_passwords(sys.argv[1:])  # the commands printed, passwords left out
    hint = f"resume with: {program()} {shlex.join(argv)}"
    db = Path(args.db)
    again = (f"every URL of {db} was fetched before; fetch its pages again with: "
             f"{program()} recrawl {shlex.quote(str(db))}")  # fmt: skip
    ending = crawl_ending(hint, config, argv, exported=args.output is not None, nothing_left=again)
    if args.workers is not None or args.redis is not None:
        from crawldeck.cli.cluster import run_cluster_crawl

        code = run_cluster_crawl(args, config, seeds, db, hint, ui=ui)
        return code if code == EXIT_BAD_INPUT else write_output(args.command, db, args.output, code)
    metrics = None
    try:
        metrics = start_metrics(config)  # a port in use is refused before the file is made
        store = Store(db, flush_interval_ms=config.flush_interval_ms)
        if store.has_crawl():
            other = other_seeds(store.seed_urls(), seeds, db) if seeds else None
            if other is not None:
                print(f"crawldeck: warning: {other}", file=sys.stderr, flush=True)
            from crawldeck.core.crawl.resume import file_fetches

            counts, body_bytes = store.counts(), store.page_totals()[1]
            spent = spent_budget(file_fetches(store), body_bytes, config, ending)
            # nothing queued: the run ends "finished", no cap to raise (issue #25)
            if spent is not None and counts["queued"] + counts["in_flight"]:
                print(f"crawldeck: warning: {spent}", file=sys.stderr, flush=True)
        say_headless(args, ui)
        code = asyncio.run(
            run_crawl(
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
        if isinstance(exc, StoreError) and DISK_FULL in str(exc):  # trial 14: and then?
            return fail(args.command, f"{exc}; free some space, then {hint}")
        return fail(args.command, str(exc))
    code = write_stats(args.command, db, args.stats_json, code)
    return write_output(args.command, db, args.output, code)


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
