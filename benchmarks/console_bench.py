"""What the live console costs: pages/s of the same crawl with the console open vs --no-ui.

    .venv/bin/python benchmarks/console_bench.py              # A B A B A B, ~4200 pages each
    .venv/bin/python benchmarks/console_bench.py --rounds 3 --pages-per-host 300

Both sides run the real ``crawldeck crawl`` command over the same local web, fast
settings (``delay_ms`` 0, ``adaptive_delay_factor`` 0, concurrency 16: the crawl is
bound by CPU, not by politeness, the worst case for a console sharing its loop):

- the local web (``LocalWeb``: seven hosts, traps, robots variants, one 429 answer
  with Retry-After 1 s; delays scaled to 0), plus
- ``--hosts`` static hosts on loopback (one generated tree of ``--pages-per-host``
  HTML pages, ten links each, served under every address).

Both run in a real pseudo-terminal of 120 x 40 (``--size``) that this script drains (as a
terminal emulator would): ``--no-ui`` (A) prints its progress lines there, the
console (B) draws there and gets ``q`` once the crawl file says the run finished.
Pages/s is measured the same way on both sides, from the crawl file: pages /
(``runs.finished_at`` - ``runs.started_at``), so process start-up and the console's
own start-up are not counted in either. CPU ms/page (user + system of the crawler
process, start-up included) is printed too: on a busy machine it is the steadier
figure.

Prints each run, the medians and the ratio console / no-ui; exits 1 when the console
costs more than ``--max-cost`` (default 10 %) of the pages/s.

    .venv/bin/python benchmarks/console_bench.py --screenshot docs/console.svg --size 160x48

renders the README's picture instead: the console (``--size``, default 120 x 36) over
the demo's crawl of the local web, taken once a host is in backoff and traps were
blocked.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import resource
import select
import shutil
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from e2e_bench import crawldeck_result

from crawldeck.localweb import LocalWeb
from crawldeck.localweb.static import serve_static

CRAWLDECK = str(Path(sys.executable).parent / "crawldeck")
TERMINAL = (120, 40)  # columns, lines: the benchmark's default
SCREENSHOT = (120, 36)  # columns, lines: the picture's default
RUN_TIMEOUT_S = 300.0
CONFIG = """\
delay_ms = 0
adaptive_delay_factor = 0
concurrency = 16
max_depth = 20
backoff_base_ms = 100
flush_interval_ms = 500
"""


def build_tree(root: Path, pages: int) -> None:
    """``index.html`` and ``p/<i>.html``: every page links to ten others (and the next)."""
    (root / "p").mkdir(parents=True)
    filler = "<p>" + "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 20 + "</p>"
    for i in range(pages):
        targets = {(i + 1) % pages, *((i * 7 + k * 13 + 1) % pages for k in range(10))}
        links = "".join(f'<li><a href="/p/{t}.html">page {t}</a></li>' for t in sorted(targets))
        (root / "p" / f"{i}.html").write_text(
            f"<!doctype html><html><head><title>Page {i}</title></head><body>"
            f"<h1>Page {i}</h1>{filler}<ul>{links}</ul></body></html>"
        )
    first = "".join(f'<li><a href="/p/{t}.html">page {t}</a></li>' for t in range(min(20, pages)))
    (root / "index.html").write_text(f"<!doctype html><html><body><ul>{first}</ul></body></html>")


@contextmanager
def bench_web(hosts: int, pages_per_host: int, prefix: str) -> Iterator[tuple[Path, list[str]]]:
    """The benchmarks' web: ``hosts`` static hosts (127.79.0.N) of ``pages_per_host``
    pages each beside the local web, served until the block ends.

    Yields ``(work, seeds)``: a fresh directory (named ``prefix...``, removed at the
    end) holding ``seeds.txt`` (every host's root URL) and ``bench.toml``
    (``CONFIG``), and those seed URLs.
    """
    work = Path(tempfile.mkdtemp(prefix=prefix))
    tree = work / "tree"
    build_tree(tree, pages_per_host)
    sites = serve_static(tree, [f"127.79.0.{i}" for i in range(1, hosts + 1)])
    try:
        with LocalWeb(delay_scale=0.0, busy_429_count=1, retry_after_s=1) as web:
            seeds = web.seeds() + [f"{site.base_url}/" for site in sites]
            (work / "seeds.txt").write_text("\n".join(seeds) + "\n")
            (work / "bench.toml").write_text(CONFIG)
            yield work, seeds
    finally:
        for site in sites:
            site.stop()
        shutil.rmtree(work, ignore_errors=True)


def run_rate(db: Path) -> tuple[int, float]:
    """``(pages, pages/s)`` of the last run in ``db``, timed by the crawl file itself."""
    pages, elapsed = crawldeck_result(db)
    return pages, pages / elapsed


def finished(db: Path) -> bool:
    """True once the crawl in ``db`` has written ``runs.finished_at``."""
    if not db.exists():
        return False
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT finished_at FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return row is not None and row[0] is not None


def child_cpu_s() -> float:
    """CPU seconds (user + system) used by the waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def crawl_in_terminal(work: Path, db: Path, *, console: bool, size: tuple[int, int]) -> int:
    """Run ``crawldeck crawl`` in a pseudo-terminal of ``size`` (columns, lines); returns
    the bytes it drew.

    Both sides are run the same way, so the benchmark process (which also serves the
    local web) does the same work for both: it drains the terminal and polls the crawl
    file (read-only, every 0.25 s) until ``runs.finished_at`` is written. The console
    then gets ``q``; ``--no-ui`` exits by itself.
    """
    command = [CRAWLDECK, "crawl", "seeds.txt", "--db", str(db), "--config", "bench.toml"]
    if not console:
        command.append("--no-ui")
    master, slave = os.openpty()
    columns, lines = size
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor"}
    proc = subprocess.Popen(
        command, cwd=work, stdin=slave, stdout=slave, stderr=slave, env=env,
        start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    written = 0
    quit_sent = False
    deadline = time.monotonic() + RUN_TIMEOUT_S
    next_poll = 0.0
    try:
        while proc.poll() is None:
            if time.monotonic() > deadline:
                raise TimeoutError("the crawl did not end in time")
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    written += len(os.read(master, 65536))
                except OSError:  # the child closed the terminal
                    break
            if not quit_sent and time.monotonic() >= next_poll:
                next_poll = time.monotonic() + 0.25
                if finished(db) and console:
                    os.write(master, b"q")
                    quit_sent = True
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    if proc.returncode != 0:
        raise RuntimeError(f"the crawl exited {proc.returncode}")
    return written


async def screenshot(
    path: Path, size: tuple[int, int], *, min_s: float = 4.0, max_s: float = 60.0
) -> None:
    """Save an SVG of the console (``size``: columns, lines) crawling the local web as
    ``crawldeck demo`` does, while it runs, once traps were blocked and a host is in
    backoff (or twice ``min_s`` passed) (the README's pictures)."""
    from crawldeck.core.config import build_config
    from crawldeck.core.crawl.engine import Engine
    from crawldeck.core.storage.store import Store
    from crawldeck.tui.app import UI_SNAPSHOT_INTERVAL_MS, CrawlApp

    work = Path(tempfile.mkdtemp(prefix="crawldeck-screenshot-"))
    try:
        with LocalWeb() as web:
            config = build_config(
                {"delay_ms": 250, "snapshot_interval_ms": UI_SNAPSHOT_INTERVAL_MS}
            )
            store = Store(work / "demo.db", flush_interval_ms=config.flush_interval_ms)
            try:
                engine = Engine(config, store)
                engine.add_seeds(web.seeds())
                app = CrawlApp(engine, Path("demo.db"))
                async with app.run_test(size=size) as pilot:
                    start = time.monotonic()
                    while time.monotonic() - start < max_s:
                        await pilot.pause(0.25)
                        snap = app.snapshot
                        waited = time.monotonic() - start
                        if (
                            snap is not None
                            and snap.state == "running"
                            and waited >= min_s
                            and (snap.backoff or waited >= 2 * min_s)
                            and sum(snap.counters.blocked.values()) >= 10
                        ):
                            break  # fmt: skip
                    app.save_screenshot(path.name, path=str(path.parent))
                    await pilot.press("q")
            finally:
                store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"console_bench: wrote {path}")


def terminal_size(text: str) -> tuple[int, int]:
    """``COLSxLINES`` (e.g. ``160x48``) as ``(columns, lines)``.

    Raises:
        argparse.ArgumentTypeError: not two positive whole numbers around an ``x``.
    """
    columns, _, lines = text.lower().partition("x")
    if not (columns.isdigit() and lines.isdigit() and int(columns) and int(lines)):
        raise argparse.ArgumentTypeError(f"not COLSxLINES: {text!r}")
    return int(columns), int(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when the console costs at most ``--max-cost``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="A B pairs (default 3)")
    parser.add_argument("--hosts", type=int, default=8, help="static hosts (default 8)")
    parser.add_argument("--pages-per-host", type=int, default=500, help="default 500")
    parser.add_argument("--max-cost", type=float, default=0.10, help="default 0.10 (10 %%)")
    parser.add_argument("--screenshot", type=Path, metavar="SVG",
                        help="only save the README's console picture to SVG")  # fmt: skip
    parser.add_argument("--size", type=terminal_size, metavar="COLSxLINES",
                        help="the terminal (default 120x40; 120x36 for --screenshot)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.screenshot:
        asyncio.run(screenshot(args.screenshot, args.size or SCREENSHOT))
        return 0
    size = args.size or TERMINAL
    if not Path(CRAWLDECK).exists():
        sys.exit(f"console_bench: {CRAWLDECK} not found: pip install -e . first")
    rates: dict[str, list[float]] = {"no-ui": [], "console": []}
    cpu_ms: dict[str, list[float]] = {"no-ui": [], "console": []}
    with bench_web(args.hosts, args.pages_per_host, "crawldeck-console-bench-") as (work, seeds):
        print(f"{len(seeds)} hosts, {args.hosts} x {args.pages_per_host} static pages "
              f"+ the local web; terminal {size[0]} x {size[1]}")  # fmt: skip
        for i in range(args.rounds):
            for mode in ("no-ui", "console"):
                db = work / f"{mode}-{i}.db"
                cpu = child_cpu_s()
                drawn = crawl_in_terminal(work, db, console=mode == "console", size=size)
                cpu = child_cpu_s() - cpu
                pages, rate = run_rate(db)
                rates[mode].append(rate)
                cpu_ms[mode].append(1000 * cpu / pages)
                print(f"  {mode:8s} round {i + 1}: {pages} pages, {rate:7.1f} pages/s "
                      f"({1000 * cpu / pages:.2f} CPU ms/page, {drawn / 1e6:.2f} MB "
                      "written to the terminal)")  # fmt: skip
    plain = statistics.median(rates["no-ui"])
    console = statistics.median(rates["console"])
    ratio = console / plain
    cpu_ratio = statistics.median(cpu_ms["no-ui"]) / statistics.median(cpu_ms["console"])
    print(f"median CPU ms/page: no-ui {statistics.median(cpu_ms['no-ui']):.2f}, console "
          f"{statistics.median(cpu_ms['console']):.2f}; pages per CPU-second ratio "
          f"{cpu_ratio:.3f}")  # fmt: skip
    cost = f"console cost {100 * (1 - ratio):+.1f} %, limit {100 * args.max_cost:.0f} %"
    print(f"median pages/s: no-ui {plain:.1f}, console {console:.1f}; ratio {ratio:.3f} ({cost})")
    return 0 if ratio >= 1 - args.max_cost else 1


if __name__ == "__main__":
    sys.exit(main())
