"""Helpers of the engine tests on real loopback servers: a canned HTML response, one
crawl of some seeds into a SQLite file, and SQL over that file (no pytest needed)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from httpserver import Response

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.storage.store import Store


def html(body: str, **headers: str) -> Response:
    """A 200 ``text/html`` response with ``body`` (and extra ``headers``)."""
    return Response(200, {"Content-Type": "text/html", **headers}, body.encode())


def run_crawl(seeds: list[str], db: Path, *, timeout: float = 60, **config: object) -> Engine:
    """Crawl ``seeds`` into ``db`` to the end (at most ``timeout`` s) with ``config`` over
    ``delay_ms = 0`` and ``render = never``; the engine, for its snapshot. Every seed
    must be accepted."""
    store = Store(db, flush_interval_ms=50)
    engine = Engine(build_config({"delay_ms": 0, "render": "never", **config}), store)
    assert engine.add_seeds(seeds) == []
    try:
        asyncio.run(asyncio.wait_for(engine.run(), timeout=timeout))
    finally:
        store.close()
    return engine


def rows(db: Path, sql: str, *args: object) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` over the crawl file ``db``."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()
