"""The Scrapy side of the end-to-end benchmark (issue #6 part 1): a link-following spider.

    benchmarks/.venv-scrapy/bin/python benchmarks/scrapy_spider.py --seeds seeds.txt \\
        --concurrency 100 --max-depth 5 --max-pages 20000 --out stats.json

Runs with Scrapy's own venv, never the project's: Scrapy is not a dependency of
crawldeck. ``benchmarks/e2e_bench.py`` creates that venv when it is missing, pinned to
``scrapy==2.19.0`` (the newest on PyPI when this was written; it brought Twisted 26.10.0,
lxml 6.1.3, parsel 1.12.1, Protego 0.7.0):

    python3 -m venv benchmarks/.venv-scrapy
    benchmarks/.venv-scrapy/bin/pip install scrapy==2.19.0

What it crawls: a ``CrawlSpider`` with one ``Rule(LinkExtractor(), follow=True)``,
started from the seed URLs (one a line), so every ``<a>``/``<area>`` link is followed,
as crawldeck does. No callback, no items, no pipeline: the spider only follows links.
crawldeck also writes every page (URL, status, sizes, links) to its SQLite file; that
work is on crawldeck's side of the comparison only.

Settings: what a Scrapy user following the "Broad Crawls" page of Scrapy's docs would
pick, plus what makes the work equal to crawldeck's:

- broad crawls: ``CONCURRENT_REQUESTS`` = ``--concurrency`` (the docs suggest starting
  at 100), ``LOG_LEVEL = "INFO"``, ``COOKIES_ENABLED = False``,
  ``REACTOR_THREADPOOL_MAXSIZE = 20``, ``DOWNLOAD_TIMEOUT = 15``, breadth-first order
  (``DEPTH_PRIORITY = 1`` with the FIFO memory and disk queues), and
  ``SCHEDULER_PRIORITY_QUEUE = "scrapy.pqueues.DownloaderAwarePriorityQueue"`` (the
  docs' advice for broad crawls; already the default in Scrapy 2.19, set here explicitly).
  Retries stay at Scrapy's defaults (the docs suggest turning them off; nothing fails
  on the synthetic web, so it makes no difference) and so do redirects (crawldeck
  follows redirects too).
- equivalence with crawldeck: ``ROBOTSTXT_OBEY = True``, ``CONCURRENT_REQUESTS_PER_DOMAIN
  = 1`` (Scrapy's download slot key is the request's hostname, and every host of the
  synthetic web is its own IP literal, so this is also one request in flight per IP),
  ``DOWNLOAD_DELAY = 0``, AutoThrottle off, ``DEPTH_LIMIT`` = ``--max-depth`` (seeds
  are depth 0, as in crawldeck), no ``allowed_domains`` (crawldeck runs with ``scope =
  "any"``), the telnet console and the remote-control HTTP server (both debugging
  aids that listen on a port) off.
- the page cap: Scrapy's ``CLOSESPIDER_PAGECOUNT`` counts every response, robots.txt
  ones included, while crawldeck's ``max_pages`` counts pages only. The spider sets it
  to ``--max-pages`` plus the number of seed hosts (each has one robots.txt, fetched
  before its first page), so both crawlers stop after about ``--max-pages`` pages.
  Scrapy then lets the requests in flight finish, so it may fetch up to
  ``--concurrency`` more; pages/s is pages over elapsed time either way.

Writes ``--out``: a JSON object with ``pages`` (responses other than robots.txt: the
HTML pages), ``robots`` (robots.txt responses), ``requests`` (Scrapy's
``downloader/request_count``), ``elapsed_s`` (Scrapy's own ``elapsed_time_seconds``:
spider opened to spider closed, so interpreter start-up and imports are not counted),
``finish_reason``, ``scrapy_version``, ``settings`` (the ones above) and ``stats`` (the
full stats dict, datetimes as strings).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class LinkSpider(CrawlSpider):
    """Follows every link from the seeds; counts robots.txt and page responses."""

    name = "bench"
    rules = (Rule(LinkExtractor(), follow=True),)
    counts: dict[str, int]

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> LinkSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.counts = {"pages": 0, "robots": 0}
        crawler.signals.connect(spider.on_response, signal=signals.response_received)
        return spider

    def on_response(self, response: Any, request: Any, spider: Any) -> None:
        kind = "robots" if urlsplit(response.url).path == "/robots.txt" else "pages"
        self.counts[kind] += 1


def settings_for(concurrency: int, max_depth: int, page_cap: int) -> dict[str, Any]:
    """The crawl's Scrapy settings (see the module docstring for why each)."""
    return {
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 0,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "AUTOTHROTTLE_ENABLED": False,
        "DEPTH_LIMIT": max_depth,
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "CLOSESPIDER_PAGECOUNT": page_cap,
        "COOKIES_ENABLED": False,
        "REACTOR_THREADPOOL_MAXSIZE": 20,
        "DOWNLOAD_TIMEOUT": 15,
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seeds", type=Path, required=True, help="one URL a line")
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--max-depth", type=int, default=5)
    parser.add_argument("--max-pages", type=int, default=20000)
    parser.add_argument("--out", type=Path, required=True, help="stats JSON to write")
    args = parser.parse_args()
    seeds = [
        line.strip()
        for line in args.seeds.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    hosts = {urlsplit(url).netloc for url in seeds}
    settings = settings_for(args.concurrency, args.max_depth, args.max_pages + len(hosts))
    process = CrawlerProcess(settings=settings, install_root_handler=True)
    crawler = process.create_crawler(LinkSpider)
    process.crawl(crawler, start_urls=seeds)
    process.start()
    stats = crawler.stats.get_stats()
    spider = crawler.spider
    out = {
        "pages": spider.counts["pages"],
        "robots": spider.counts["robots"],
        "requests": stats.get("downloader/request_count", 0),
        "elapsed_s": stats.get("elapsed_time_seconds"),
        "finish_reason": stats.get("finish_reason"),
        "scrapy_version": scrapy.__version__,
        "settings": settings,
        "stats": stats,
    }
    args.out.write_text(json.dumps(out, indent=1, sort_keys=True, default=str) + "\n")
    return 0 if out["elapsed_s"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
