"""``crawldeck crawl --workers N``: the command a user runs, as a real subprocess.

A crawl of the local web with two workers and a private redis-server stops at
``--max-pages`` counted over the whole crawl; without a redis-server to start, or with
a crawl id that cannot name keys, the command says so in one line and exits 2.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from crawldeck.localweb import LocalWeb

CRAWLDECK = [sys.executable, "-m", "crawldeck.cli.launch"]


def crawl(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CRAWLDECK, "crawl", *args], capture_output=True, text=True, timeout=120,
        cwd=tmp_path, env=env, check=False,
    )  # fmt: skip


def test_two_workers_stop_at_max_pages_over_the_whole_crawl(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text(
        'delay_ms = 50\nallow_networks = ["127.77.0.0/24"]\nrender = "never"\n'
        "cluster_lease_ms = 2000\n"
    )
    with LocalWeb(delay_scale=0.2) as web:
        (tmp_path / "seeds.txt").write_text("\n".join(web.seeds()) + "\n")
        done = crawl(tmp_path, "seeds.txt", "--workers", "2", "--max-pages", "30", "--no-ui",
                     "--db", "c.db", "--config", "c.toml")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "stopped: --max-pages 30 reached; " in done.stdout
    conn = sqlite3.connect(tmp_path / "c.db")
    try:
        (pages,) = conn.execute("SELECT count(*) FROM pages").fetchone()
        runs = conn.execute("SELECT status FROM runs").fetchall()
        by_status = dict(conn.execute("SELECT CAST(status AS TEXT), count(*) FROM pages"
                                      " GROUP BY 1"))  # fmt: skip
        ((text,),) = conn.execute("SELECT stats FROM runs").fetchall()
        (broken,) = conn.execute("SELECT count(*) FROM broken_links").fetchone()
    finally:
        conn.close()
    # the coordinator counts the run's stats from the rows the collector committed
    stats = json.loads(text)
    assert stats["finish_reason"] == "max_pages" and stats["workers"] == 2
    assert stats["fetches"] == stats["pages_added"] == pages
    assert stats["responses_by_status"] == by_status
    assert stats["fetch_latency_s"]["count"] == pages
    assert stats["retries"] is None  # only the workers see their retries
    # the pages in flight when the count was reached still land: at most one per
    # host (per_host_concurrency 1) for each of the 8 hosts
    assert 30 <= pages <= 30 + 8
    assert runs == [("max_pages",)]
    # the coordinator's summary counts the broken links as the view does (issue #25)
    assert (f"\nbroken links: {broken}" in done.stdout) == (broken > 0), done.stdout
    # the export hint and the way on of a one-process crawl (issue #25 trial 9)
    assert "export with: " in done.stdout and " --table pages -o pages.csv" in done.stdout
    way_on = done.stdout.splitlines()[-1]
    assert way_on.startswith("to continue, run it with a higher --max-pages: "), done.stdout
    assert way_on.endswith(f" --max-pages {max(60, pages + 30)}"), done.stdout
    assert (tmp_path / "c.db.redis" / "appendonlydir").is_dir()
    log = (tmp_path / "c.db.workers.log").read_text()
    assert log.count("crawldeck worker ") == 2 and log.count(": stopped, ") == 2


def test_no_redis_server_to_start_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "seeds.txt").write_text("http://127.0.0.1:9/\n")
    env = {**os.environ, "PATH": str(tmp_path)}  # no redis-server on it
    done = crawl(tmp_path, "seeds.txt", "--workers", "2", "--no-ui", env=env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "crawldeck crawl: error: redis-server not found: install Debian's redis-server package "
        "or pass --redis URL"
    ]


def test_a_crawl_id_that_cannot_name_keys_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "seeds.txt").write_text("http://127.0.0.1:9/\n")
    done = crawl(tmp_path, "seeds.txt", "--redis", "redis://127.0.0.1:9/0", "--crawl-id",
                 "a b{c}", "--no-ui")  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "crawldeck crawl: error: crawl id 'a b{c}': use 1-64 letters, digits, '-', '_' or '.'"
    ]
