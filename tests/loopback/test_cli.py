"""The ``crawldeck`` command as a real process: bad input, SIGKILL resume, Ctrl-C, export."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawldeck.localweb import LocalWeb

CRAWLDECK = str(Path(sys.executable).parent / "crawldeck")
FLUSH_MS = 100


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CRAWLDECK, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def web() -> Iterator[LocalWeb]:
    with LocalWeb(delay_scale=0.2, busy_429_count=1, retry_after_s=1) as w:
        yield w


def write_setup(tmp_path: Path, web: LocalWeb) -> list[str]:
    (tmp_path / "seeds.txt").write_text("# local web\n" + "\n".join(web.seeds()) + "\n")
    # render_timeout_ms: spa's /app/never never settles, its render is cut at this budget
    (tmp_path / "fast.toml").write_text(
        f"flush_interval_ms = {FLUSH_MS}\nbackoff_base_ms = 100\nrender_timeout_ms = 3000\n"
    )
    return ["crawl", "seeds.txt", "--no-ui", "--db", "c.db", "--config", "fast.toml",
            "--delay-ms", "50"]  # fmt: skip


def page_count(db: Path) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM pages").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def start_and_wait(args: list[str], cwd: Path, pages: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [CRAWLDECK, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while page_count(cwd / "c.db") < pages:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "crawl made no progress"
        time.sleep(0.05)
    return proc


def requests_per_path(web: LocalWeb) -> Counter[str]:
    return Counter(
        f"{name}{a.path}"
        for name in web.hosts
        for a in web.access_log(name)
        if not a.path.endswith("robots.txt") and a.status != 429
    )


def rowless(web: LocalWeb, db: Path) -> set[str]:
    """What was asked for so far (as ``requests_per_path`` names it) and has no
    ``pages`` or ``sitemaps`` row in ``db``: a render's sub-requests, and after a stop
    the fetches and sitemap readings it cut. A fetch still running 5 s after the stop
    (``engine.STOP_GRACE_S``: a render on a loaded machine) stays queued; a sitemap's
    row is written once its reading is done (an index's after the files it lists, a
    urlset's after its URLs are queued). A resumed run asks for them again (README,
    "Resume"; ``core/crawl/sitemaps.py``)."""
    conn = sqlite3.connect(db)
    try:
        done = {u for (u,) in conn.execute("SELECT url FROM pages UNION SELECT url FROM sitemaps")}
    finally:
        conn.close()
    return {
        f"{name}{a.path}"
        for name in web.hosts
        for a in web.access_log(name)
        if not a.path.endswith("robots.txt") and a.status != 429
        and web.url(name, a.path) not in done
    }  # fmt: skip


def good_fetched(web: LocalWeb, db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        urls = {u for (u,) in conn.execute("SELECT url FROM pages WHERE status = 200")}
    finally:
        conn.close()
    return {web.expected.canonical(u) for u in urls}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["crawl", "missing.txt", "--no-ui"], "'missing.txt' is neither an existing file"),
        (["crawl", "seeds.txt", "--no-ui", "--config", "bad.toml"], "unknown config key 'delay'"),
        (["crawl", "empty.txt", "--no-ui"], "no valid seed URL in 'empty.txt'"),
        (["crawl", "seeds.txt", "--delay-ms", "-5"], "expected a number >= 0"),
        (["crawl", "seeds.txt", "--scope", "web"], "invalid choice: 'web'"),
        (["export", "nothing.db"], "nothing.db"),
        (["crawl", "seeds.txt", "--no-ui", "--db", ""], "--db needs a file name"),
        (["crawl", "seeds.txt", "--no-ui", "--user-agent", "Bót/1"], "only printable ASCII"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "seeds.txt").write_text("http://127.0.0.1:9/\n")
    (tmp_path / "bad.toml").write_text("delay = 5\n")
    (tmp_path / "empty.txt").write_text("# nothing\nnot a url at all\n")
    proc = run(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert message in last
    assert "Traceback" not in proc.stderr


def test_a_seed_on_a_refused_port_fails_at_once_and_reads_as_a_failure(tmp_path: Path) -> None:
    """Nothing listens on the port (bound, then closed): one try, not max_retries with
    backoff; the summary says every seed failed and counts no page fetched; exit 3."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    seed = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    sock.close()
    proc = run("crawl", seed, "--no-ui", "--db", "c.db", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "retry" not in proc.stdout  # no "retry 1 of ..." line
    assert "ended: every seed failed, no page fetched" in proc.stdout
    assert "finished" not in proc.stdout
    # the console's count (a row without a response too), split so it reads right
    assert re.search(r"pages \(all runs\)\s*│\s*1 \(0 answered, 1 no response\)\s", proc.stdout), (
        proc.stdout
    )
    assert f"{seed}: connect: connection failed: " in proc.stderr
    with sqlite3.connect(tmp_path / "c.db") as db:
        assert db.execute("SELECT state, attempts FROM frontier").fetchall() == [("failed", 0)]


def test_bad_seed_line_reported_rest_crawled(tmp_path: Path, web: LocalWeb) -> None:
    home = web.hosts["norobots"] + "/"
    (tmp_path / "seeds.txt").write_text(f"{home}\nftp://files.example/\n")
    proc = run("crawl", "seeds.txt", "--no-ui", "--db", "c.db", "--delay-ms", "10", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "seeds.txt: line 2:" in proc.stderr and "ftp" in proc.stderr
    assert web.expected.good["norobots"] <= good_fetched(web, tmp_path / "c.db")
    assert "finished: nothing left to fetch" in proc.stdout


def test_resume_after_sigkill(tmp_path: Path, web: LocalWeb) -> None:
    args = write_setup(tmp_path, web)
    proc = start_and_wait(args, tmp_path, pages=40)
    os.kill(proc.pid, signal.SIGKILL)
    killed_at = time.time()
    proc.communicate(timeout=10)
    before = page_count(tmp_path / "c.db")
    assert before >= 40
    conn = sqlite3.connect(tmp_path / "c.db")
    committed = {url for (url,) in conn.execute("SELECT url FROM pages")}
    conn.close()

    again = run(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "resuming:" in again.stdout
    conn = sqlite3.connect(tmp_path / "c.db")
    statuses = [s for (s,) in conn.execute("SELECT status FROM runs ORDER BY id")]
    conn.close()
    assert statuses == ["killed", "finished"]
    expected = web.expected.all_good | web.expected.all_files
    assert expected - good_fetched(web, tmp_path / "c.db") == set()
    # Nothing committed before the kill is fetched again: only what was in flight (a
    # page being rendered included) or fetched but not yet committed.
    again_asked = {
        web.url(name, a.path)
        for name in web.hosts
        for a in web.access_log(name)
        if a.at > killed_at and not a.path.endswith("robots.txt") and a.status != 429
    }
    asked_before = {
        web.url(name, a.path) for name in web.hosts for a in web.access_log(name)
        if a.at <= killed_at
    }  # fmt: skip
    assert committed <= asked_before  # the same spelling of URLs on both sides
    assert again_asked & committed == set()
    twice = {path for path, n in requests_per_path(web).items() if n > 1}
    assert len(twice) <= 16


def test_ctrl_c_saves_prints_resume_and_exits_130(tmp_path: Path, web: LocalWeb) -> None:
    args = write_setup(tmp_path, web)
    proc = start_and_wait(args, tmp_path, pages=30)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "stopping" in err
    assert f"resume with: {CRAWLDECK} {' '.join(args)}" in out
    assert "Traceback" not in err
    stopped = page_count(tmp_path / "c.db")
    cut = rowless(web, tmp_path / "c.db")

    again = run(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"{stopped} fetches made before" in again.stdout
    expected = web.expected.all_good | web.expected.all_files
    assert expected - good_fetched(web, tmp_path / "c.db") == set()
    # nothing the stopped run recorded is asked for again; what the stop cut, once more
    twice = {p: n for p, n in requests_per_path(web).items() if n > 1}
    assert set(twice) <= cut and set(twice.values()) <= {2}, (twice, cut)
    # a render's sub-request (never a row) only beside a page of its host fetched again
    never = rowless(web, tmp_path / "c.db")
    redone = {p.split("/")[0] for p in set(twice) - never}
    assert {p.split("/")[0] for p in set(twice) & never} <= redone, twice
    # the summary's totals are of all runs, and agree with each other
    total_line = re.search(r"pages \(all runs\)\s*│\s*(\d+)", again.stdout)
    mix_line = re.search(r"status mix \(all runs\)\s*│\s*([^│]+)│", again.stdout)
    assert total_line and mix_line, again.stdout
    total, mix = int(total_line[1]), mix_line[1]
    assert total == page_count(tmp_path / "c.db")
    assert sum(int(n) for n in re.findall(r"\dxx (\d+)", mix)) == total


def test_export_tables(tmp_path: Path, web: LocalWeb) -> None:
    home = web.hosts["norobots"] + "/"
    (tmp_path / "seeds.txt").write_text(home + "\n")
    assert run("crawl", "seeds.txt", "--no-ui", "--db", "c.db", "--delay-ms", "5",
               cwd=tmp_path).returncode == 0  # fmt: skip
    n = page_count(tmp_path / "c.db")
    assert n == len(web.expected.good["norobots"]) + len(web.expected.files["norobots"])
    out = run("export", "c.db", "--table", "pages", "--format", "jsonl", cwd=tmp_path)
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == n and {r["status"] for r in rows} == {200}
    assert {r["host"] for r in rows} == {web.host_keys["norobots"]}
    assert f"exported {n} rows of pages" in out.stderr
    hosts = run("export", "c.db", "--table", "hosts", cwd=tmp_path)
    assert "crawldeck: exported 1 row of hosts\n" in hosts.stderr  # one host: "row"
    run("export", "c.db", "--table", "links", "--format", "csv", "-o", "links.csv", cwd=tmp_path)
    with (tmp_path / "links.csv").open(newline="") as f:
        links = list(csv.DictReader(f))
    assert links and set(links[0]) == {"from_url", "to_url", "anchor"}
    assert all(r["from_url"].startswith(web.hosts["norobots"]) for r in links)


def test_export_refuses_to_overwrite_the_crawl_and_survives_a_closed_pipe(
    tmp_path: Path, web: LocalWeb
) -> None:
    (tmp_path / "seeds.txt").write_text(web.hosts["norobots"] + "/\n")
    assert run("crawl", "seeds.txt", "--no-ui", "--db", "c.db", "--delay-ms", "5",
               cwd=tmp_path).returncode == 0  # fmt: skip
    size = (tmp_path / "c.db").stat().st_size
    same = run("export", "c.db", "--format", "csv", "-o", "./c.db", cwd=tmp_path)
    assert same.returncode == 2
    assert "is the crawl file itself" in same.stderr
    assert (tmp_path / "c.db").stat().st_size == size
    piped = subprocess.run(
        f"{CRAWLDECK} export c.db --table links --format csv | head -2",
        shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert piped.stdout.splitlines()[0] == "from_url,to_url,anchor"
    assert "error" not in piped.stderr


def test_demo_refuses_to_erase_a_crawl_of_other_hosts(tmp_path: Path, web: LocalWeb) -> None:
    (tmp_path / "seeds.txt").write_text(web.hosts["norobots"] + "/\n")
    run("crawl", "seeds.txt", "--no-ui", "--db", "precious.db", "--delay-ms", "5", cwd=tmp_path)
    conn = sqlite3.connect(tmp_path / "precious.db")
    conn.execute("UPDATE hosts SET host = 'books.example'")
    conn.commit()
    conn.close()
    proc = run("demo", "--no-ui", "--db", "precious.db", cwd=tmp_path)
    assert proc.returncode == 2
    assert "holds a crawl of 1 host outside the local web" in proc.stderr
    assert page_count(tmp_path / "precious.db") > 0


def test_the_demos_run_it_again_command_works_after_a_seed_was_added(tmp_path: Path) -> None:
    """The console's ``a`` adds a seed on another host to the demo's file (a hosts row
    outside the local web, as here): the printed command starts the demo anew."""
    first = run("demo", "--no-ui", "--db", "d.db", "--max-pages", "3", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    prefix = f"the demo starts anew each run: {CRAWLDECK} "
    (again,) = [line for line in first.stdout.splitlines() if line.startswith(prefix)]
    conn = sqlite3.connect(tmp_path / "d.db")
    with conn:
        conn.execute("INSERT INTO hosts (host, delay_ms, backoff_attempts, pages_fetched, "
                     "state) VALUES ('books.example', 0, 0, 0, 'active')")  # fmt: skip
    conn.close()
    second = run(*again.removeprefix(prefix).split(), cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "local web is up" in second.stdout
    conn = sqlite3.connect(tmp_path / "d.db")  # anew: the added host is gone
    try:
        assert conn.execute("SELECT count(*) FROM hosts WHERE host = 'books.example'")\
            .fetchone() == (0,)  # fmt: skip
    finally:
        conn.close()
