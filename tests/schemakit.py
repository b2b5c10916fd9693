"""The helpers that ``tests/loopback/test_schema.py`` and ``tests/unit/test_schema.py``
share: one subject's tests, split by tier (issue #24 item 8)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"


V1, V2 = DATA / "crawl_2f3a1ea.db", DATA / "crawl_4cc1605.db"


def counts(db: Path) -> dict[str, Any]:
    """Row counts of every table of a crawl file, frontier rows by state."""
    with closing(sqlite3.connect(db)) as conn:
        found = {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("pages", "blocked", "links", "hosts", "runs", "sitemaps")
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        }
        found["frontier"] = dict(conn.execute("SELECT state, count(*) FROM frontier GROUP BY 1"))
    return found


def shape(db: Path) -> dict[str, Any]:
    """The schema as the tools read it: per table and view its columns (name, type,
    not null, pk), foreign keys and indexes (name, unique, columns)."""
    with closing(sqlite3.connect(db)) as conn:
        names = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                " AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        out: dict[str, Any] = {}
        for name in names:
            indexes = {
                index: (unique, [c[2] for c in conn.execute(f"PRAGMA index_info({index})")])
                for _, index, unique, *_ in conn.execute(f"PRAGMA index_list({name})")
            }
            out[name] = (
                [
                    (c[1], c[2].upper(), c[3], c[5])
                    for c in conn.execute(f"PRAGMA table_info({name})")
                ],
                sorted(tuple(fk[2:5]) for fk in conn.execute(f"PRAGMA foreign_key_list({name})")),
                indexes,
            )
    return out
