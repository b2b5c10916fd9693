"""The ``crawldeck`` command: ``crawl``, ``demo``, ``worker``, ``recrawl``, ``export`` and ``show``.

Exit codes: 0 a finished crawl (or one that reached ``--max-pages``), 2 bad input (one
line on stderr), 3 a crawl that ended without fetching any page (every seed failed; the
summary says why), 130 stopped by Ctrl-C, SIGTERM or SIGHUP (state saved, resume command printed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import resource
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from crawldeck.core.config import CrawlConfig, build_config, load_config
from crawldeck.core.engine import CrawlResult, Engine
from crawldeck.core.errors import CrawldeckError
from crawldeck.core.export import body_text, export, export_file, foreign_crawl, page_record
from crawldeck.core.recrawl import parse_duration, prepare, summarize
from crawldeck.core.seeds import read_seeds
from crawldeck.core.store import Store
from crawldeck.tui.headless import HeadlessReporter, stop_signals

#: The soft limit on open files a crawl asks for (see ``raise_open_files_limit``).
OPEN_FILES_WANTED = 65_536

EXIT_OK = 0
EXIT_BAD_INPUT = 2
#: The crawl ended and got no page at all: every seed failed (its summary says why).
EXIT_SEEDS_FAILED = 3
EXIT_STOPPED = 130

#: The loopback network the local web of ``crawldeck demo`` lives on.
DEMO_PREFIX = "127.77.0"
DEMO_NETWORK = f"{DEMO_PREFIX}.0/24"

#: The most worker processes ``--workers`` starts on one machine (more machines join
#: with ``crawldeck worker``).
MAX_WORKERS = 64

EXPORT_TABLES = ("pages", "blocked", "hosts", "links")
EXPORT_FORMATS = ("jsonl", "csv")


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


def _count(text: str) -> int:
    """A flag value >= 1 (page caps, concurrency)."""
    return _whole(text, 1)


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


def _add_crawl_flags(parser: argparse.ArgumentParser, *, db_default: str) -> None:
    parser.add_argument("--db", default=db_default, help=f"SQLite file (default {db_default})")
    parser.add_argument("--config", type=Path, help="TOML config file (keys as in the README)")
    parser.add_argument("--max-pages", type=_count, help="stop after N pages")
    parser.add_argument("--max-depth", type=_positive, help="links followed from a seed")
    parser.add_argument("--delay-ms", type=_positive, help="politeness delay per host, ms")
    parser.add_argument("--concurrency", type=_count, help="fetches in flight in all")
    parser.add_argument(
        "--user-agent",
        help="User-Agent header; its product token is matched against robots.txt groups",
    )
    parser.add_argument("--scope", choices=("host", "domain", "any"), help="which links to follow")
    for flag, rule in (
        ("include", "only URLs it (or another --include) matches are followed; seeds need not"),
        ("exclude", "URLs it matches are refused, seeds too"),
    ):
        parser.add_argument(
            f"--{flag}", action="append", metavar="REGEX",
            help=f"Python regex searched in each cleaned URL: {rule}; repeatable, replaces "
            f"the config file's {flag} list; refused URLs are in blocked as 'excluded'",
        )  # fmt: skip
    parser.add_argument("--no-ui", action="store_true", help="headless: progress lines only")
    parser.add_argument(
        "--workers",
        type=_workers,
        help="crawl with N worker processes sharing one frontier in Redis (a private "
        "redis-server in DB.redis/ unless --redis is given)",
    )
    _add_redis_flags(parser, required=False)


def _add_redis_flags(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "--redis",
        required=required,
        metavar="URL",
        help="the Redis of a cluster crawl (redis://HOST:PORT/DB, unix:///PATH)",
    )
    parser.add_argument(
        "--crawl-id",
        required=required,
        metavar="NAME",
        help="the cluster crawl's name in that Redis"
        + ("" if required else " (default: the --db file's name; 'crawl' on a private Redis)"),
    )
    parser.add_argument("--redis-cluster", action="store_true", help="the Redis is a Redis Cluster")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``crawldeck`` command."""
    parser = argparse.ArgumentParser(
        prog="crawldeck",
        description="A polite, fast web crawler with a live console.",
        allow_abbrev=False,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    crawl = sub.add_parser(
        "crawl", help="crawl from a seeds file (resumes if --db has a crawl)", allow_abbrev=False
    )
    crawl.add_argument("seeds", type=Path, metavar="SEEDS_FILE", help="one URL per line")
    _add_crawl_flags(crawl, db_default="crawl.db")
    demo = sub.add_parser(
        "demo", help="start the built-in local web and crawl it", allow_abbrev=False
    )
    _add_crawl_flags(demo, db_default="demo.db")
    worker = sub.add_parser(
        "worker",
        help="join a cluster crawl started with crawl --redis ... --crawl-id ...",
        allow_abbrev=False,
    )
    _add_redis_flags(worker, required=True)
    worker.add_argument(
        "--warc-dir",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where this worker writes its WARC files <crawl-id>-<random>-NNNNN.warc.gz "
        "(default: the current directory; copy them beside the crawl file for show and export)",
    )
    recrawl = sub.add_parser(
        "recrawl",
        help="revisit a crawl's pages with conditional GET, often-changing pages first",
        allow_abbrev=False,
    )
    recrawl.add_argument("db", type=Path, metavar="DB", help="the crawl file")
    recrawl.add_argument(
        "--older-than",
        default="0s",
        metavar="DURATION",
        help="only pages last fetched longer ago than this: 30s, 15m, 2h, 7d, 2w (default 0s)",
    )
    recrawl.add_argument("--no-ui", action="store_true", help="headless: progress lines only")
    exp = sub.add_parser("export", help="export a table of a crawl file", allow_abbrev=False)
    exp.add_argument("db", type=Path, metavar="DB")
    exp.add_argument("--table", choices=EXPORT_TABLES, default="pages")
    exp.add_argument("--format", choices=EXPORT_FORMATS, default="jsonl")
    exp.add_argument("-o", "--output", type=Path, help="output file (default stdout)")
    exp.add_argument(
        "--with-body", action="store_true", help="pages as jsonl: add each page's body"
    )
    show = sub.add_parser(
        "show", help="print a page's WARC record: headers and body", allow_abbrev=False
    )
    show.add_argument("db", type=Path, metavar="DB")
    show.add_argument("url", metavar="URL")
    show.add_argument(
        "--raw", action="store_true", help="write only the body's bytes, as stored (no headers)"
    )
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    return {
        "max_pages": args.max_pages,
        "max_depth": args.max_depth,
        "delay_ms": args.delay_ms,
        "concurrency": args.concurrency,
        "user_agent": args.user_agent,
        "scope": args.scope,
        "include": args.include,
        "exclude": args.exclude,
    }


def _fail(message: str) -> int:
    print(f"crawldeck: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


async def _crawl(
    config: CrawlConfig,
    store: Store,
    db: Path,
    seeds: Sequence[str],
    resume_hint: str,
    *,
    ui: bool = False,
) -> int:
    """Run one crawl into the open ``store``, headless or in the console (``ui``);
    returns the exit code; closes the store."""
    try:
        engine = Engine(config, store)
        for url, why in engine.add_seeds(seeds):
            print(f"crawldeck: seed refused: {url}: {why}", file=sys.stderr)
        if ui:
            return await _crawl_console(engine, store, config, db, resume_hint)
        reporter = HeadlessReporter()
        engine.subscribe(reporter)
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
        try:
            result: CrawlResult = await engine.run()
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)
        return _finish(engine, store, db, result.outcome, resume_hint, stopped=stopped_by_signal)
    finally:
        store.close()


async def _crawl_console(
    engine: Engine, store: Store, config: CrawlConfig, db: Path, resume_hint: str
) -> int:
    """Run the crawl in the live console (``tui.app``); summary and exit code as headless."""
    from crawldeck.tui.app import run_console

    result = await run_console(engine, db, strict_robots=config.robots_on_failure == "disallow")
    outcome = "stopped" if result is None else result.outcome
    return _finish(engine, store, db, outcome, resume_hint)


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
            why = seed.error if seed.status is None else f"HTTP {seed.status}: {seed.error}"
        elif seed.status is not None:
            why = f"HTTP {seed.status}"
        else:
            why = f"not fetched ({seed.state})"
        lines.append(f"  {seed.url}: {why}")
    return lines


def _finish(
    engine: Engine,
    store: Store,
    db: Path,
    outcome: str,
    resume_hint: str,
    *,
    stopped: bool = False,
) -> int:
    """Print the summary, how to export and (when stopped) how to resume; the exit code:
    ``EXIT_STOPPED``, ``EXIT_SEEDS_FAILED`` (the crawl ended and no page of the file
    got a 2xx answer: the summary says why each seed failed) or ``EXIT_OK``.

    The terminal may be gone (SIGHUP after it closed): output that cannot be written is
    dropped, the exit code still tells what happened (the crawl is saved either way).
    """
    lines = [f"crawl saved in {db}; export with: {program()} export {shlex.quote(str(db))} "
             "--table pages --format csv"]  # fmt: skip
    stopped = stopped or outcome == "stopped"
    failures = [] if stopped else _seed_failures(store)
    if stopped:
        lines.append(resume_hint)
    with contextlib.suppress(OSError):
        HeadlessReporter().summary(engine.snapshot(), outcome)
        print("\n".join(lines), flush=True)
        for line in failures:
            print(f"crawldeck: {line}", file=sys.stderr)
    if stopped:
        return EXIT_STOPPED
    return EXIT_SEEDS_FAILED if failures else EXIT_OK


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


def _run_crawl(args: argparse.Namespace) -> int:
    raise_open_files_limit()
    try:
        config = load_config(args.config, _overrides(args))
        seeds, problems = read_seeds(args.seeds)
    except CrawldeckError as exc:
        return _fail(str(exc))
    for problem in problems:
        print(f"crawldeck: {args.seeds}: {problem} (skipped)", file=sys.stderr)
    if not seeds:
        return _fail(f"no valid seed URL in {str(args.seeds)!r}")
    if not args.db.strip():
        return _fail("--db needs a file name")
    ui = _wants_console(args)
    if ui:
        config = _ui_config(config)
    hint = f"resume with: {program()} {shlex.join(sys.argv[1:])}"
    db = Path(args.db)
    if args.workers is not None or args.redis is not None:
        from crawldeck.tui.cluster_cli import run_cluster_crawl

        return run_cluster_crawl(args, config, seeds, db, hint, ui=ui)
    try:
        store = Store(db, flush_interval_ms=config.flush_interval_ms)
        return asyncio.run(_crawl(config, store, db, seeds, hint, ui=ui))
    except CrawldeckError as exc:
        return _fail(str(exc))


def _run_demo(args: argparse.Namespace) -> int:
    from crawldeck.localweb.web import LocalWeb

    raise_open_files_limit()
    overrides = _overrides(args)
    if overrides["delay_ms"] is None:
        overrides["delay_ms"] = 250
    # The demo allows only the loopback network of the local web (issue #4).
    overrides["allow_networks"] = [DEMO_NETWORK]
    try:
        config = load_config(args.config, overrides)
    except CrawldeckError as exc:
        return _fail(str(exc))
    if not args.db.strip():
        return _fail("--db needs a file name")
    db = Path(args.db)
    foreign = foreign_crawl(db, DEMO_PREFIX)
    if foreign:
        return _fail(f"{str(db)!r} {foreign}; the demo starts anew and would erase it: "
                     "give the demo another --db")  # fmt: skip
    try:
        # the lock first: a demo file in use by another crawldeck is refused, not erased
        store = Store(db, flush_interval_ms=config.flush_interval_ms, fresh=True)
    except CrawldeckError as exc:
        return _fail(str(exc))
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
                return run_cluster_crawl(args, config, web.seeds(), db, hint, ui=ui, fresh=True)
            return asyncio.run(_crawl(config, store, db, web.seeds(), hint, ui=ui))
    except CrawldeckError as exc:
        return _fail(str(exc))
    finally:
        store.close()


def _run_recrawl(args: argparse.Namespace) -> int:
    """``crawldeck recrawl DB``: a new run of the crawl in DB with its last run's config
    (``max_pages`` lifted: revisits add no page), its pages queued again in change-rate
    order (``core.recrawl.prepare``) and asked for conditionally; then the summary and
    one line of what the revisits found."""
    raise_open_files_limit()
    db = Path(args.db)
    try:
        older_than_s = parse_duration(args.older_than)
    except CrawldeckError as exc:
        return _fail(str(exc))
    if not db.is_file():
        return _fail(f"{str(db)!r} does not exist or is not a file")
    if db.stat().st_size == 0:
        return _fail(f"{str(db)!r} is empty, not a crawl file")
    try:
        store = Store(db)
    except CrawldeckError as exc:
        return _fail(str(exc))
    try:
        saved = store.last_config()
        if saved is None or not store.has_crawl():
            store.close()
            return _fail(f"{str(db)!r} holds no crawl to revisit")
        config = build_config({**saved, "max_pages": None})
        ui = _wants_console(args)
        if ui:
            config = _ui_config(config)
        started = time.time()
        plan = prepare(store, older_than_s=older_than_s, now=started)
        seeds = store.seed_urls()  # they give the crawl its scope again
    except CrawldeckError as exc:
        store.close()
        return _fail(str(exc))
    print(f"crawldeck recrawl: {len(plan.order)} pages to revisit, {plan.skipped} fetched "
          f"within {args.older_than}", flush=True)  # fmt: skip
    hint = f"resume with: {program()} {shlex.join(sys.argv[1:])}"
    try:
        code = asyncio.run(_crawl(config, store, db, seeds, hint, ui=ui))
        with Store(db) as after:
            found = summarize(after, started)
    except CrawldeckError as exc:
        return _fail(str(exc))
    with contextlib.suppress(OSError):
        print(f"recrawl: {found.not_modified} not modified (304), {found.changed} changed or new, "
              f"{found.unchanged} unchanged (200, same digest), {found.other} other",
              flush=True)  # fmt: skip
    return code


def _stop_export(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _export_to_file(args: argparse.Namespace) -> int:
    """``export_file`` (atomic: a temporary file renamed over ``-o`` at the end), with
    SIGTERM and SIGHUP raising ``KeyboardInterrupt`` as SIGINT does, so that a stopped
    export removes its temporary file and leaves ``-o`` as it was."""
    stops = (signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, _stop_export) for sig in stops}
    try:
        return export_file(args.db, args.table, args.format, args.output, with_body=args.with_body)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run_export(args: argparse.Namespace) -> int:
    try:
        if args.output is None:
            count = export(args.db, args.table, args.format, sys.stdout, with_body=args.with_body)
        else:
            count = _export_to_file(args)
    except CrawldeckError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        kept = "" if args.output is None else f"; {str(args.output)!r} left as it was"
        print(f"crawldeck: export stopped{kept}", file=sys.stderr)
        return EXIT_STOPPED
    except BrokenPipeError:
        # The reader went away (``| head``): not an error. Silence the final flush too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        return _fail(f"cannot write {str(args.output)!r}: {exc.strerror}")
    print(f"crawldeck: exported {count} rows of {args.table}", file=sys.stderr)
    return EXIT_OK


def _run_show(args: argparse.Namespace) -> int:
    """``crawldeck show DB URL``: the page's WARC header, HTTP head and body (decoded
    text; a binary body as one line with its size), or with ``--raw`` the body's bytes
    alone."""
    try:
        record = page_record(args.db, args.url)
    except CrawldeckError as exc:
        return _fail(str(exc))
    if args.raw:  # the body alone, as stored (like curl -o): for a file or a pipe
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
        print(f"(binary body, {len(record.body)} bytes, {kind}; --raw writes it)")
    else:
        print(text)
    return EXIT_OK


def _run_worker(args: argparse.Namespace) -> int:
    from crawldeck.tui.cluster_cli import run_worker

    return run_worker(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crawldeck`` console script; returns the exit code."""
    logging.basicConfig(level=logging.WARNING, format="crawldeck: %(message)s")
    logging.getLogger("crawldeck").setLevel(logging.ERROR)
    args = build_parser().parse_args(argv)
    handlers = {"crawl": _run_crawl, "demo": _run_demo, "export": _run_export,
                "worker": _run_worker, "recrawl": _run_recrawl, "show": _run_show}  # fmt: skip
    try:
        with contextlib.suppress(BrokenPipeError):
            return handlers[args.command](args)
    except KeyboardInterrupt:  # Ctrl-C before the crawl's own handler is in place
        print("\ncrawldeck: stopped", file=sys.stderr)
        return EXIT_STOPPED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
