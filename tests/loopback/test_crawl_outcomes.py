"""What a crawl reports when it ends (issue #10, items 16 and 18).

Exit codes tell the truth (every seed failed: exit 3, and why); rerunning a finished
crawl retries what failed transiently; the figures of the summary, the console and
the SQLite tables agree; ``hosts.state`` is final once the crawl ended.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from crawlkit import html, rows, run_crawl
from dnsserver import DnsmasqServer
from httpserver import HTTPTestServer, Request, Response

from crawldeck.core.config import build_config
from crawldeck.core.crawl.engine import Engine
from crawldeck.core.policy import admission as admission_module
from crawldeck.core.storage.store import Store

CRAWLDECK = str(Path(sys.executable).parent / "crawldeck")


def crawldeck(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CRAWLDECK, "crawl", "seeds.txt", "--no-ui", "--db", "c.db", "--delay-ms", "0", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_crawl_whose_every_seed_is_excluded_says_blocked_not_failed(tmp_path: Path) -> None:
    """Issue #25 trial 19: an --exclude that took the only seed ended "every seed
    failed", as if its server had."""
    with HTTPTestServer() as server:
        (tmp_path / "seeds.txt").write_text(server.url("/docs/") + "\n")
        proc = crawldeck(tmp_path, "--exclude", "/docs/")
    assert proc.returncode == 3, proc.stderr
    assert "ended: every seed was blocked, no page fetched" in proc.stdout
    assert "no page got a 2xx answer: every seed was blocked" in proc.stderr
    assert f"seed refused: {server.url('/docs/')}: excluded" in proc.stderr
    assert "failed" not in proc.stdout + proc.stderr
    assert server.requests == []  # nothing asked of the server, robots.txt included


def test_a_crawl_whose_every_seed_failed_exits_3_and_says_why(tmp_path: Path) -> None:
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/gone", Response(404, {"Content-Type": "text/html"}, b"no"))
        dead = f"http://127.0.0.1:{closed_port()}/"
        (tmp_path / "seeds.txt").write_text(f"{server.url('/gone')}\n{dead}\n")
        (tmp_path / "fast.toml").write_text("max_retries = 0\n")
        proc = crawldeck(tmp_path, "--config", "fast.toml")
    assert proc.returncode == 3, proc.stderr
    assert "every seed failed" in proc.stderr
    assert f"{server.url('/gone')}: HTTP 404" in proc.stderr
    port = dead.rsplit(":", 1)[1].rstrip("/")
    # the URL said once, and the OS's words, not asyncio's "Connect call failed (addr)"
    assert (f"crawldeck:   {dead}: connect: connection failed: cannot connect to "
            f"127.0.0.1:{port}: [Errno 111] Connection refused\n") in proc.stderr  # fmt: skip
    assert "Traceback" not in proc.stderr
    # no export hint for a file with no page worth exporting (issue #25)
    assert "crawl saved in c.db (no page with a 2xx answer in it yet)" in proc.stdout + proc.stderr
    assert "export with" not in proc.stdout + proc.stderr


def test_a_time_budget_spent_before_any_seed_was_answered_is_no_failed_seed(
    tmp_path: Path,
) -> None:
    """robots.txt asks 100 s between requests (30 s with ``max_delay_ms``) and the run
    has 2 s: the seed is still queued when the time is up. The heading says the budget
    and the exit is 0 (issue #25 trial 9: "every seed failed", exit 3)."""
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(200, {"Content-Type": "text/plain"},
                                           b"User-agent: *\nCrawl-delay: 100\n"))  # fmt: skip
        server.set("/", html("ok"))
        (tmp_path / "seeds.txt").write_text(server.url("/") + "\n")
        proc = crawldeck(tmp_path, "--max-time", "2s")  # the delay is capped at 30 s
    assert proc.returncode == 0, proc.stderr
    assert "stopped: --max-time 2s reached" in proc.stdout
    assert "every seed failed" not in proc.stdout + proc.stderr
    assert "crawl saved in c.db (no page with a 2xx answer in it yet)" in proc.stdout
    assert rows(tmp_path / "c.db", "SELECT state FROM frontier") == [("queued",)]


def test_a_crawl_that_fetched_something_exits_0(tmp_path: Path) -> None:
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html("ok"))
        (tmp_path / "seeds.txt").write_text(server.url("/") + "\n")
        proc = crawldeck(tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_a_rerun_with_nothing_left_is_recorded_as_such(tmp_path: Path) -> None:
    """A rerun of a finished crawl with nothing left to fetch fetches nothing, and its
    ``runs`` row says ``nothing_to_do`` (status and stats), not a run that crawled; a
    run that fetched says ``finished``."""
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="/a">a</a>'))
        server.set("/a", html("a"))
        db = tmp_path / "c.db"
        run_crawl([server.url("/")], db, allow_private=True, warc=False)
        requests = server.count("/") + server.count("/a")
        run_crawl([server.url("/")], db, allow_private=True, warc=False)
        assert server.count("/") + server.count("/a") == requests == 2
    found = rows(db, "SELECT id, status, json_extract(stats, '$.finish_reason'),"
                     " json_extract(stats, '$.fetches') FROM runs ORDER BY id")  # fmt: skip
    assert found == [(1, "finished", "finished", 2), (2, "nothing_to_do", "nothing_to_do", 0)]


def test_a_rerun_with_nothing_left_says_how_to_fetch_again(tmp_path: Path) -> None:
    """The same command again on a finished crawl: it says recrawl fetches the pages
    again (issue #25 trial 9: a fixed broken link could not be checked again, and
    the rerun said only "finished: nothing left to fetch")."""
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html("home"))
        (tmp_path / "seeds.txt").write_text(server.url("/") + "\n")
        first = crawldeck(tmp_path)
        again = crawldeck(tmp_path)
    assert first.returncode == again.returncode == 0, again.stderr
    hint = (
        f"every URL of c.db was fetched before; fetch its pages again with: {CRAWLDECK} "
        "recrawl c.db"
    )
    assert hint not in first.stdout
    assert again.stdout.splitlines()[-1] == hint, again.stdout


def test_rerunning_a_finished_crawl_retries_its_transient_failures(tmp_path: Path) -> None:
    broken = [True]

    def flaky(request: Request) -> Response:
        return Response(503, {}, b"down") if broken[0] else html("back")

    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="/flaky">f</a><a href="/missing">m</a>'))
        server.set("/flaky", flaky)
        server.set("/missing", Response(404))
        (tmp_path / "seeds.txt").write_text(server.url("/") + "\n")
        (tmp_path / "fast.toml").write_text(
            "max_retries = 1\nbackoff_base_ms = 10\nbackoff_max_ms = 20\n"
        )
        first = crawldeck(tmp_path, "--config", "fast.toml")
        assert first.returncode == 0, first.stderr
        assert rows(tmp_path / "c.db", "SELECT state, attempts FROM frontier WHERE url = ?",
                    server.url("/flaky")) == [("failed", 1)]  # fmt: skip
        broken[0] = False
        second = crawldeck(tmp_path, "--config", "fast.toml")
        assert second.returncode == 0, second.stderr
        assert server.count("/flaky") == 3  # two tries, then one on the rerun
        assert server.count("/missing") == 1  # a 404 is not transient
    assert "retried this run" in second.stdout
    db = tmp_path / "c.db"
    assert rows(db, "SELECT status, error FROM pages WHERE url = ?", server.url("/flaky")) == [
        (200, None)
    ]
    assert rows(db, "SELECT state, attempts FROM frontier WHERE url = ?", server.url("/flaky")) == [
        ("done", 2)
    ]
    assert rows(db, "SELECT count(*) FROM pages")[0][0] == 3


def test_a_failed_urls_tries_count_toward_max_pages_over_runs(tmp_path: Path) -> None:
    """A URL that failed transiently is queued again by each rerun; its earlier try is a
    fetch of the crawl file: ``--max-pages 1`` spent on it stops the rerun at once, and
    the resume line counts it (issue #25 trial 20: a rerun said "0 fetches made before"
    and tried it again, so a failing site never used up the cap)."""
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", Response(503, {}, b"down"))
        (tmp_path / "seeds.txt").write_text(server.url("/") + "\n")
        first = crawldeck(tmp_path, "--max-pages", "1", "-s", "max_retries=0")
        assert first.returncode == 3, first.stderr  # every seed failed
        assert "HTTP 503: gave up after 1 try\n" in first.stderr
        assert rows(tmp_path / "c.db", "SELECT state FROM frontier") == [("failed",)]
        again = crawldeck(tmp_path, "--max-pages", "1", "-s", "max_retries=0")
        assert server.count("/") == 1  # not tried again: the cap is spent
    assert "resuming: 1 URL queued (1 that failed before is tried again), 1 fetch made before" in (
        again.stdout
    )
    assert "--max-pages 1 reached" in again.stdout + again.stderr


def test_crawl_with_no_seed_resumes_the_crawl_of_its_db(tmp_path: Path) -> None:
    """``crawl --db FILE`` with no SEED resumes the crawl the file holds, with its own
    seeds, as Heritrix resumes a job; a crawl file given as a seed is named as one, and
    no SEED with no crawl to resume is one line, no file made (issue #25 trial 20: the
    seeds were asked again, and ``crawl crawl.db`` said the file "holds NUL bytes")."""
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a>'))
        for path in ("/a", "/b", "/c"):
            server.set(path, html(path))
        (tmp_path / "seeds.txt").write_text(server.url("/") + "\n")
        first = crawldeck(tmp_path, "--max-pages", "2", "--exclude", "/c$")
        assert first.returncode == 0, first.stderr
        # no --exclude, no --delay-ms 0: the last run's config goes on (trial 21)
        again = subprocess.run(
            [CRAWLDECK, "crawl", "--db", "c.db", "--no-ui"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert [server.count(p) for p in ("/", "/a", "/b", "/c")] == [1, 1, 1, 0]
    assert "resuming: 1 URL queued, 2 fetches made before" in again.stdout
    assert "finished: nothing left to fetch" in again.stdout
    assert (
        "crawldeck: no SEED: resuming c.db with its last run's config but its budgets (what"
        " --config, -s and the flags give now wins)"
    ) in again.stderr
    configs = [json.loads(c) for (c,) in rows(tmp_path / "c.db", "SELECT config FROM runs")]
    assert [(c["exclude"], c["delay_ms"], c["max_pages"]) for c in configs] == [
        (["/c$"], 0, 2),
        (["/c$"], 0, None),  # the budget is this run's
    ]

    def refused(*args: str) -> str:
        proc = subprocess.run([CRAWLDECK, "crawl", "--no-ui", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
        return proc.stderr

    assert refused("c.db") == (
        f"crawldeck crawl: error: 'c.db' is a crawl file, not a seeds file: resume its crawl"
        f" with {CRAWLDECK} crawl --db c.db\n"
    )
    assert refused("--db", "none.db") == (
        "crawldeck crawl: error: no SEED given, and none.db holds no crawl to resume: give a"
        " URL or a seeds file (crawldeck crawl --help)\n"
    )
    assert not (tmp_path / "none.db").exists()


def crawl(server: HTTPTestServer, db: Path, **config: Any) -> Engine:
    return run_crawl([server.url("/")], db, timeout=30, **config)


def test_blocked_counts_are_the_tables_even_past_the_engines_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine remembers only the last BLOCKED_MEMORY blocked URLs; the same
    refused links on many pages must still be counted once each, as in the table."""
    monkeypatch.setattr(admission_module, "BLOCKED_MEMORY", 5)
    links = "".join(f'<a href="/a/b/a/b/a/b/{i}">t</a><a href="mailto:x{i}@y">m</a>'
                    for i in range(20))  # fmt: skip
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html(links + "".join(f'<a href="/p{i}">p</a>' for i in range(5))))
        for i in range(5):
            server.set(f"/p{i}", html(links))
        db = tmp_path / "c.db"
        engine = crawl(server, db)
    table = dict(rows(db, "SELECT reason, count(*) FROM blocked GROUP BY reason"))
    assert table == {"repeating_path": 20, "scheme": 20}
    assert engine.snapshot().counters.blocked == table
    counters = engine.snapshot().counters
    assert counters.pages == rows(db, "SELECT count(*) FROM pages")[0][0] == 6
    assert counters.bytes == rows(db, "SELECT sum(bytes) FROM pages")[0][0]


def test_this_run_counts_crawl_time_and_host_states_are_final(tmp_path: Path) -> None:
    with HTTPTestServer() as server, HTTPTestServer("127.0.0.2") as other:
        server.set("/robots.txt", Response(404))
        server.set("/", html(f'<a href="/x">x</a><a href="{other.url("/")}">o</a>'))
        server.set("/x", html("x"))
        other.set("/robots.txt", Response(404))
        other.set("/", html("o"))
        started = time.monotonic()
        engine = crawl(server, tmp_path / "c.db", scope="any", allow_private=True)
        took = time.monotonic() - started
        time.sleep(1.0)  # the console stays open after FINISHED
    snap = engine.snapshot()
    assert snap.elapsed_s <= took
    assert {s for (s,) in rows(tmp_path / "c.db", "SELECT state FROM hosts")} == {"done"}
    assert {row.state for row in engine.query_hosts()} == {"done"}


def test_a_rerun_keeps_the_hosts_rows_it_does_not_touch_and_retries_a_500(
    tmp_path: Path,
) -> None:
    """A rerun of a finished crawl keeps each host's robots.txt columns and final state
    (a host whose name does not exist stays dead); a page that got a 500 is tried again."""
    answers = iter([500])
    with (
        HTTPTestServer() as server,
        DnsmasqServer(tmp_path, {"www.crawl.test": ["127.0.0.1"]}) as dns,
    ):
        robots = b"User-agent: *\nDisallow: /private\n"
        server.set("/robots.txt", Response(200, {"Content-Type": "text/plain"}, robots))
        home = f'<a href="/e500">e</a><a href="http://gone.crawl.test:{server.port}/">g</a>'
        server.set("/", html(home))
        server.set("/e500", lambda r: Response(next(answers, 200), {}, b"x"))
        db = tmp_path / "c.db"
        seed = f"http://www.crawl.test:{server.port}/"
        names = [dns.nameserver]
        query = "SELECT host, robots_status, robots_expires_epoch_s, state FROM hosts ORDER BY host"
        run_crawl([seed], db, dns_nameservers=names, allow_private=True)
        before = rows(db, query)
        engine = run_crawl([seed], db, dns_nameservers=names, allow_private=True)
        after = rows(db, query)
        assert server.count("/e500") == 2
    assert engine.retried == 1
    assert [(h, r, s) for h, r, _, s in before] == [
        (f"gone.crawl.test:{server.port}", None, "dead"),
        (f"www.crawl.test:{server.port}", "ok", "done"),
    ]
    assert after[0] == before[0]  # untouched: kept as it was
    assert after[1][1] == "ok" and after[1][3] == "done"
    assert rows(db, "SELECT status FROM pages WHERE url = ?", seed + "e500") == [(200,)]


def test_a_resumed_crawl_shows_its_recent_blocked_urls(tmp_path: Path) -> None:
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html("".join(f'<a href="mailto:x{i}@y">m</a>' for i in range(5))))
        db = tmp_path / "c.db"
        run_crawl([server.url("/")], db)
        store = Store(db)
        try:
            again = Engine(build_config({"render": "never"}), store)
            recent = again.snapshot().blocked
        finally:
            store.close()
    assert [row.url for row in recent] == [f"mailto:x{i}@y" for i in range(5)]
    assert {row.reason for row in recent} == {"scheme"}


def test_a_rerun_with_other_seeds_keeps_the_earlier_seeds_queued_urls(tmp_path: Path) -> None:
    """A loopback host is let through because it is a seed; a rerun of the crawl file
    that names another seed still trusts it (and keeps it in scope): its URLs left
    queued are fetched, not refused as ``private_address`` (a new user's trial lost
    201 queued URLs so)."""
    with HTTPTestServer() as first, HTTPTestServer("127.0.0.2") as second:
        for server in (first, second):
            server.set("/robots.txt", Response(404))
        first.set("/", html("".join(f'<a href="/p{i}">p</a>' for i in range(3))))
        for i in range(3):
            first.set(f"/p{i}", html(f"page {i}"))
        second.set("/", html("another seed"))
        db = tmp_path / "c.db"
        run_crawl([first.url("/")], db, max_pages=1)
        assert rows(db, "SELECT count(*) FROM frontier WHERE state = 'queued'") == [(3,)]
        run_crawl([second.url("/")], db)
        paths = sorted(
            r.path for r in first.requests if r.path not in ("/robots.txt", "/sitemap.xml")
        )
    assert paths == ["/", "/p0", "/p1", "/p2"]  # each once
    assert rows(db, "SELECT url, reason FROM blocked") == []
    assert rows(db, "SELECT count(*) FROM pages") == [(5,)]


def test_a_dead_proxy_is_named_as_the_proxy_not_as_the_site(tmp_path: Path) -> None:
    """A proxy that refuses connections is said to be the proxy, not the site behind it
    (issue #25: a trial read "127.0.0.1:8713: parked: it refuses connections" when its
    --proxy port was closed)."""
    with HTTPTestServer() as server:
        server.set("/", Response(200, {"Content-Type": "text/html"}, b"<p>up</p>"))
        (tmp_path / "seeds.txt").write_text(server.url("/") + "\n")
        port = closed_port()
        proc = crawldeck(tmp_path, "--proxy", f"http://127.0.0.1:{port}")
    assert proc.returncode == 3, proc.stderr
    assert f"cannot connect to the proxy 127.0.0.1:{port}: [Errno 111]" in proc.stderr
    assert "parked: the proxy refuses connections" in proc.stderr
    assert "unreachable (proxy)" in proc.stderr  # robots.txt's warning, first of all
    assert "it refuses connections and has not answered" not in proc.stderr
    assert server.requests == []  # nothing reached the site
