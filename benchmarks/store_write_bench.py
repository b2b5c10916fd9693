"""What the store's writer costs a page, by commit interval (issue #23 item 2).

    .venv/bin/python benchmarks/store_write_bench.py [--pages 2000] [--rate 300] [--rounds 2]
    .venv/bin/python benchmarks/store_write_bench.py --intervals 500,2000 --lazy-index

``Store.record_page`` of ``--pages`` pages as the e2e web's (200 hosts, 45 links to the
same host and 5 to others, 3 new frontier rows, a title, a digest and a SimHash each),
``--rate`` pages a second (the writer batches by time, so the rate sets the batch
size), into a fresh file per run, for each commit interval of ``--intervals`` (ms).
``--lazy-index`` adds a run without the ``links_to`` index while writing, built once
at the end (its ``CREATE INDEX`` is printed and counted). Printed: CPU ms per page of
this process (``getrusage``: the writer thread, and the caller's queueing) and the
file's bytes per page. Runs alternate within a round, so their ratios are same-run.
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import tempfile
import time
from pathlib import Path

from crawldeck.core.records import FrontierRow, PageRecord
from crawldeck.core.storage.store import Store

HOSTS = 200


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _page(i: int) -> tuple[PageRecord, list[tuple[str, str]], list[FrontierRow]]:
    host = f"127.0.0.{i % HOSTS}:8080"
    url = f"http://{host}/p/{i // HOSTS}.html"
    links = [(url, f"http://{host}/p/{(i * 7 + k * 13) % 100}.html") for k in range(45)]
    links += [
        (url, f"http://127.0.0.{(i * 131 + k * 7919) % HOSTS}:8080/p/{(i + k) % 100}.html")
        for k in range(5)
    ]
    rows = [
        FrontierRow(key=f"k{i}-{k}", url=f"{url}?q={k}", host=host, depth=1, priority=0)
        for k in range(3)
    ]
    page = PageRecord(
        url=url, final_url=None, host=host, depth=1, status=200, content_type="text/html",
        bytes=15_000, elapsed_ms=3.0, fetched_at=time.time(), rendered=False, error=None,
        noindex=False, payload_digest=f"sha1:{i:032d}", title=f"Page {i}",
        simhash=i * 2_654_435_761 % (1 << 63),
    )  # fmt: skip
    return page, links, rows


def run(pages: int, rate: float, interval_ms: int, lazy_index: bool) -> tuple[float, float]:
    """One run: (CPU ms per page, file bytes per page)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "c.db"
        store = Store(db, flush_interval_ms=interval_ms)
        if lazy_index:
            with sqlite3.connect(db) as conn:
                conn.execute("DROP INDEX links_to")
        cpu0, t0 = _cpu_s(), time.monotonic()
        for i in range(pages):
            page, links, rows = _page(i)
            store.record_page(page, key=f"k{i}", links=links, new_rows=rows, state="done")
            ahead = (i + 1) / rate - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)
        store.close()
        if lazy_index:
            conn = sqlite3.connect(db)
            conn.execute("CREATE INDEX links_to ON links (to_url)")
            conn.commit()
            conn.close()
        cpu = _cpu_s() - cpu0
        size = sum(p.stat().st_size for p in Path(tmp).glob("c.db*"))
    return cpu * 1000 / pages, size / pages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000, help="default 2000")
    parser.add_argument("--rate", type=float, default=300.0, help="pages/s (default 300)")
    parser.add_argument("--rounds", type=int, default=2, help="default 2")
    parser.add_argument("--intervals", default="500,2000", help="ms (default 500,2000)")
    parser.add_argument("--lazy-index", action="store_true", help="a run with links_to built last")
    args = parser.parse_args()
    runs = [(int(ms), False) for ms in args.intervals.split(",")]
    if args.lazy_index:
        runs.append((runs[0][0], True))
    for r in range(args.rounds):
        for interval_ms, lazy in runs:
            cpu, size = run(args.pages, args.rate, interval_ms, lazy)
            label = f"{interval_ms} ms" + (", links_to built last" if lazy else "")
            print(f"round {r + 1} {label:32s} CPU {cpu:.3f} ms/page  file {size:,.0f} B/page")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
