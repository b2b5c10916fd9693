"""``crawldeck worker --redis URL --crawl-id NAME``: join a cluster crawl, on this machine
or another (``core.cluster.worker.Worker``): take hosts from its Redis, fetch them,
send the results to the crawl's coordinator (``cli.cluster``); its ``--help``,
arguments and ``run``. The cluster's modules (Redis, the engine) are imported when it
runs, not by ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from pathlib import Path

from crawldeck.cli.flags import add_redis_flags
from crawldeck.cli.output import EXIT_OK, fail
from crawldeck.core.errors import ConfigError, CrawldeckError
from crawldeck.core.words import plural
from crawldeck.tui.stops import stop_signals

#: The command's line in ``crawldeck --help``, and the start of its own ``--help``.
SUMMARY = "join a cluster crawl started with crawl --redis ... --crawl-id ..."
DESCRIPTION = (
    "Join a cluster crawl: take hosts from its Redis, fetch them, send the\n"
    "results to the crawl's coordinator."
)
#: The end of its ``--help``: two examples, then notes.
EPILOG = """\
examples:
  crawldeck worker --redis redis://10.0.0.5:6379/0 --crawl-id news
      join the crawl 'news' published by crawldeck crawl ... --redis ... --crawl-id news
  crawldeck worker --redis unix:///run/redis.sock --crawl-id news --warc-dir /data/warc
      the same over a unix socket, writing WARC files into /data/warc"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``crawldeck worker``'s arguments."""
    add_redis_flags(parser, required=True)
    parser.add_argument(
        "--warc-dir",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where this worker writes its WARC files <crawl-id>-<random>-NNNNN.warc.gz "
        "(default: the current directory; copy them beside the crawl file for show and export)",
    )


async def _work(args: argparse.Namespace) -> None:
    from crawldeck.core.cluster.keys import Keyspace, check_crawl_id
    from crawldeck.core.cluster.link import RedisLink, open_client
    from crawldeck.core.cluster.server import acheck_redis
    from crawldeck.core.cluster.worker import Worker, read_config

    await acheck_redis(args.redis)
    keys = Keyspace(check_crawl_id(args.crawl_id))
    link = RedisLink(open_client(args.redis, cluster=args.redis_cluster))
    try:
        config = await read_config(link, keys)
        link = RedisLink(link.client, outage_s=config.redis_outage_s)
        warc_dir = None
        if config.warc:
            warc_dir = Path(args.warc_dir)
            try:
                await asyncio.to_thread(warc_dir.mkdir, parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(f"--warc-dir {args.warc_dir}: {exc.strerror}") from None
        worker = Worker(link, keys, config, warc_dir=warc_dir)
        loop = asyncio.get_running_loop()
        for sig in stop_signals():
            loop.add_signal_handler(sig, worker.engine.request_stop)
        started = time.monotonic()
        result = await worker.run()
        stats, store = link.stats, worker.store.statistics()
        figures = ", ".join([
            f"{plural(worker.store.pages_added().get('pages', 0), 'page')} in "
            f"{time.monotonic() - started:.1f} s",
            plural(stats.batches, "Redis round trip"),
            plural(stats.commands, "command"),
            f"{plural(store.fenced, 'op')} fenced",
            f"{plural(worker.leases.lost_total, 'lease')} lost",
        ])  # fmt: skip
        print(f"crawldeck worker {worker.id}: {result.outcome}, {figures}",
              file=sys.stderr, flush=True)  # fmt: skip
    finally:
        with contextlib.suppress(Exception):
            await link.aclose()


def run(args: argparse.Namespace) -> int:
    """``crawldeck worker --redis URL --crawl-id NAME [--warc-dir DIR]``: the exit code
    (its WARC files go into ``DIR``, default the current directory, when the crawl's
    ``warc`` is on; ``core.cluster.worker.Worker``)."""
    args.warc_dir = Path(args.warc_dir).resolve()
    try:
        asyncio.run(_work(args))
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    return EXIT_OK
