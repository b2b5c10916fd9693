"""What the ``broken_links`` view costs on a large crawl file (issue #25 item 4), in
SQLite virtual machine steps (deterministic: the same on a loaded machine) and in
seconds (noisy), against one pass over ``links`` joined to the target page (what a
query that starts from the links costs: the largest table, read whole).

    .venv/bin/python benchmarks/broken_links_bench.py                  # 20 000 pages x 10 links
    .venv/bin/python benchmarks/broken_links_bench.py --pages 2000 --links 5

The file is made by ``core.storage.store.Store`` (the real schema and indexes), then filled in
one transaction: ``--pages`` pages of which 1 in 50 is a 404 and 1 in 200 has no
response, ``--links`` links each to other pages, 1 in 100 URLs refused (``blocked``,
half of them a DNS failure). Printed: the broken links, the VM steps (a progress
handler called every step: ``set_progress_handler(f, 1)``) and the seconds of the
view's ``count(*)`` and of the pass over ``links``, and their ratio.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

from crawldeck.core.storage.store import Store


def fill(db: Path, pages: int, links: int) -> None:
    """A crawl file of ``pages`` pages with ``links`` links each (module docstring)."""
    Store(db).close()
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany(
            "INSERT INTO pages (url, host, depth, status, bytes, elapsed_ms, fetched_at,"
            " rendered, error, noindex) VALUES (?, 'h.test', 1, ?, 0, 1.0, 'x', 0, ?, 0)",
            (
                (
                    f"http://h.test/{i}",
                    None if i % 200 == 7 else 404 if i % 50 == 3 else 200,
                    "connect: refused" if i % 200 == 7 else None,
                )
                for i in range(pages)
            ),
        )
        conn.executemany(
            "INSERT INTO blocked (url, host, reason, detail, blocked_at) VALUES (?, 'h.test',"
            " ?, 'x', 'x')",
            ((f"http://h.test/b{i}", "dns" if i % 2 else "robots") for i in range(pages // 100)),
        )
        conn.executemany(
            "INSERT OR IGNORE INTO links (from_url, to_url) VALUES (?, ?)",
            (
                (
                    f"http://h.test/{i}",
                    f"http://h.test/b{(i * 7 + j) % (pages // 100)}"
                    if j == 0 and i % 10 == 0
                    else f"http://h.test/{(i * 31 + j * 17) % pages}",
                )
                for i in range(pages)
                for j in range(links)
            ),
        )
    conn.close()


def measure(conn: sqlite3.Connection, sql: str) -> tuple[int, int, float]:
    """``(the count, VM steps, seconds)`` of ``sql``."""
    steps = 0

    def step() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn.set_progress_handler(step, 1)
    start = time.perf_counter()
    (count,) = conn.execute(sql).fetchone()
    took = time.perf_counter() - start
    conn.set_progress_handler(None, 1)
    return int(count), steps, took


def main() -> None:
    """Print the figures (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--links", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "c.db"
        fill(db, args.pages, args.links)
        conn = sqlite3.connect(db)
        (n_links,) = conn.execute("SELECT count(*) FROM links").fetchone()
        view = measure(conn, "SELECT count(*) FROM broken_links")
        scan = measure(conn, "SELECT count(*) FROM links l JOIN pages p ON p.url = l.to_url")
        conn.close()
    print(f"{args.pages} pages, {n_links} links: {view[0]} broken links")
    print(f"broken_links count:          {view[1]:>12,} VM steps  {view[2]:.3f} s")
    print(f"one pass over links x pages: {scan[1]:>12,} VM steps  {scan[2]:.3f} s")
    print(f"steps ratio pass / view: {scan[1] / view[1]:.2f}")


if __name__ == "__main__":
    main()
