"""The cluster side of the ``crawldeck`` command: ``crawl --workers N`` and ``--redis``
(``demo`` too), whose workers are ``crawldeck worker`` processes (``cli.worker``).

``crawl SEEDS --workers N`` (or ``demo --workers N``) without ``--redis`` starts a
private ``redis-server`` in ``DB.redis/`` (unix socket, append-only file: a stopped
crawl resumes from it), then a ``Coordinator`` that starts the ``N`` workers, collects
their results into ``DB`` and shows the crawl (the console's Workers panel, or progress
lines with ``--no-ui``). With ``--redis URL --crawl-id NAME`` the Redis is given and
other machines join with ``crawldeck worker --redis URL --crawl-id NAME``.

Exit codes as ``cli.output``'s: 2 with one line for a Redis that cannot be reached or
started (never a hang: the reach is checked within 2 s), 130 when stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from crawldeck.cli.flags import without_passwords
from crawldeck.cli.headless import PROGRESS_WIDTH, clock, outcome_heading, short_count
from crawldeck.cli.output import EXIT_OK, EXIT_STOPPED, broken_lines, fail, program
from crawldeck.cli.runner import crawl_ending, say_headless
from crawldeck.core.cluster.coordinator import ClusterSnapshot, Coordinator
from crawldeck.core.cluster.keys import Keyspace, check_crawl_id
from crawldeck.core.cluster.link import RedisLink, open_client
from crawldeck.core.cluster.server import PrivateRedis, acheck_redis, check_redis_url
from crawldeck.core.config import CrawlConfig
from crawldeck.core.crawl.resume import file_fetches
from crawldeck.core.errors import CrawldeckError
from crawldeck.core.storage.store import Store
from crawldeck.core.words import plural
from crawldeck.tui.stops import hold_stop_signals, stop_signals

#: The crawl id of a crawl on its own private Redis.
PRIVATE_CRAWL_ID = "crawl"
#: Seconds between two headless progress lines.
PROGRESS_INTERVAL_S = 5.0


def default_crawl_id(db: Path) -> str:
    """A crawl id from the crawl file's name (``crawl.db`` -> ``crawl``)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", db.stem)[:64].strip("-.")
    return name or PRIVATE_CRAWL_ID


def worker_command(url: str, crawl_id: str, *, cluster: bool, warc_dir: Path) -> list[str]:
    """The command line that starts one worker of crawl ``crawl_id`` on ``url``,
    writing its WARC files into ``warc_dir`` (the crawl file's directory for the
    coordinator's own workers: ``show`` and ``export --with-body`` look there)."""
    command = [sys.executable, "-m", "crawldeck.cli.launch", "worker",
               "--redis", url, "--crawl-id", crawl_id, "--warc-dir", str(warc_dir)]  # fmt: skip
    return [*command, "--redis-cluster"] if cluster else command


def progress_line(snap: ClusterSnapshot) -> str:
    """One headless line within ``PROGRESS_WIDTH`` columns (issue #25): elapsed time,
    pages, pages/s, live workers (late ones not counted), hosts owned and claimable
    (when they fit), Redis."""
    live = sum(1 for w in snap.workers if w.state != "late")
    redis = "Redis DOWN (retrying)" if snap.redis_down else "Redis ok"
    paused = " PAUSED" if snap.state == "paused" else ""
    pages = "page" if snap.pages == 1 else "pages"
    head = (f"[{clock(snap.elapsed_s)}]{paused} {short_count(snap.pages)} {pages}  "
            f"{snap.pages_per_s:.1f}/s  {plural(live, 'worker')}")  # fmt: skip
    hosts = (f"hosts {short_count(snap.owned_hosts)} owned, "
             f"{short_count(snap.claimable_hosts)} to claim")  # fmt: skip
    line = f"{head}  {hosts}  {redis}"
    return line if len(line) <= PROGRESS_WIDTH else f"{head}  {redis}"


def summary_lines(snap: ClusterSnapshot, heading: str) -> list[str]:
    """The end-of-crawl summary of a cluster crawl under ``heading`` (how it ended,
    ``cli.headless.outcome_heading``): pages, bytes, time, status mix and refusals
    (each worker's own figures are its last line in ``DB.workers.log``)."""
    mix = ", ".join(f"{k} {v}" for k, v in sorted(snap.status_mix.items())) or "-"
    lines = [
        f"{heading}; {plural(snap.pages, 'page')} (all runs), {snap.bytes:,} bytes, "
        f"{snap.elapsed_s:.1f} s this run",
        f"  status mix: {mix}",
    ]
    for reason, count in sorted(snap.blocked.items()):
        lines.append(f"  blocked: {reason} {count}")
    return lines


async def _report(coordinator: Coordinator) -> None:
    last_log = 0
    while True:
        await asyncio.sleep(PROGRESS_INTERVAL_S)
        snap = coordinator.snapshot()
        for line in snap.log[last_log:]:
            print(f"  {line}", flush=True)
        last_log = len(snap.log)
        print(progress_line(snap), flush=True)


async def _coordinate(
    args: argparse.Namespace,
    config: CrawlConfig,
    seeds: Sequence[str],
    db: Path,
    store: Store,
    url: str,
    crawl_id: str,
    warc_dir: Path,
    *,
    ui: bool,
) -> tuple[str, ClusterSnapshot]:
    await acheck_redis(url)
    link = RedisLink(open_client(url, cluster=args.redis_cluster), outage_s=config.redis_outage_s)
    try:
        coordinator = Coordinator(
            config, store, link, Keyspace(crawl_id),
            workers=args.workers if args.workers is not None else 0,
            worker_command=worker_command(
                url, crawl_id, cluster=args.redis_cluster, warc_dir=warc_dir
            ),
            worker_log=Path(f"{db}.workers.log"),
        )  # fmt: skip
        if ui:  # the console's signals and log (textual is imported for it only)
            from crawldeck.tui.cluster_app import run_cluster_console

            outcome = await run_cluster_console(coordinator, db, seeds)
            return outcome, coordinator.snapshot()
        loop = asyncio.get_running_loop()

        def on_signal() -> None:
            coordinator.request_stop()  # first: the print fails when the reader is gone
            with contextlib.suppress(OSError):
                print("\ncrawldeck: stopping every worker: in-flight fetches finish ...",
                      file=sys.stderr, flush=True)  # fmt: skip

        signals = stop_signals()
        for sig in signals:
            loop.add_signal_handler(sig, on_signal)
        reporter = loop.create_task(_report(coordinator))
        try:
            outcome = await coordinator.run(seeds)
        finally:
            reporter.cancel()
            hold_stop_signals(loop, signals)
        return outcome, coordinator.snapshot()
    finally:
        with contextlib.suppress(Exception):
            await link.aclose()


def run_cluster_crawl(
    args: argparse.Namespace,
    config: CrawlConfig,
    seeds: Sequence[str],
    db: Path,
    resume_hint: str,
    *,
    ui: bool,
    fresh: bool = False,
) -> int:
    """``crawl``/``demo`` with ``--workers`` or ``--redis``: the exit code. ``fresh``
    (the demo): a private Redis starts empty."""
    try:
        fallback = PRIVATE_CRAWL_ID if args.redis is None else default_crawl_id(db)
        crawl_id = check_crawl_id(fallback if args.crawl_id is None else args.crawl_id)
        if args.redis is not None:  # a URL that does not parse leaves no crawl file
            check_redis_url(args.redis)
        # the crawl file first: one in use by another crawldeck is refused in one line
        # before anything starts (its private Redis is that crawl's)
        store = Store(db, flush_interval_ms=config.flush_interval_ms)
        say_headless(args, ui)  # after every refusal: an error is a refused run's one line
        private = None
        try:
            if args.redis is None:
                directory = Path(f"{db}.redis")
                if fresh:
                    shutil.rmtree(directory, ignore_errors=True)
                private = PrivateRedis(directory)
                private.start()
                url = private.url
            else:
                url = args.redis
            outcome, snap = asyncio.run(
                _coordinate(
                    args, config, seeds, db, store, url, crawl_id, db.resolve().parent, ui=ui
                )
            )
            broken = broken_lines(store, db)
            held = {"max_pages": file_fetches(store)}
        finally:
            store.close()
            if private is not None:
                private.stop()
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    with contextlib.suppress(OSError):
        for line in snap.log[-5:]:  # why it ended, when it was not the user's stop
            print(f"crawldeck: {line}", file=sys.stderr)
        caps = {"max_pages": str(config.max_pages)} if config.max_pages else {}
        print("\n".join([*summary_lines(snap, outcome_heading(outcome, caps)), *broken]))
        # the export hint and the way on of a single-process crawl (issue #25 trial 9)
        print(f"crawl saved in {db} (each worker's last line in {db}.workers.log); export "
              f"with: {program()} export {shlex.quote(str(db))} --table pages -o pages.csv",
              flush=True)  # fmt: skip
        if outcome == "stopped":
            print(resume_hint, flush=True)
        elif outcome == "max_pages":
            ending = crawl_ending(
                resume_hint, config, None if fresh else without_passwords(sys.argv[1:])
            )
            print(ending.go_on(outcome, held) or resume_hint, flush=True)
    return EXIT_STOPPED if outcome == "stopped" else EXIT_OK


__all__ = [
    "default_crawl_id",
    "progress_line",
    "run_cluster_crawl",
    "summary_lines",
    "worker_command",
]
