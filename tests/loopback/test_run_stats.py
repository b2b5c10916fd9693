"""Run stats (issue #14 item 7): the tests that start a real server on loopback or a
process; the others are in ``tests/unit/test_run_stats.py``."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from clikit import CRAWLDECK, main_in
from crawlkit import html, rows, run_crawl
from httpserver import HTTPTestServer, Response

ROBOTS = Response(200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /private\n")


def small_web(srv: HTTPTestServer, *, slow_s: float = 0.0) -> None:
    """An index linking 18 pages, a 404, a page robots.txt disallows and (``slow_s``) a
    page that answers after ``slow_s`` seconds, linked last."""
    links = "".join(f'<a href="/p{i}">p{i}</a>' for i in range(18))
    links += '<a href="/missing">gone</a><a href="/private/x">private</a>'
    if slow_s:
        links += '<a href="/slow">slow</a>'

        def slow(_: object) -> Response:
            srv.wait(slow_s)
            return html("slow")

        srv.set("/slow", slow)
    srv.set("/robots.txt", ROBOTS)
    srv.set("/", html(links))
    for i in range(18):
        srv.set(f"/p{i}", html(f"<p>page {i}</p>"))


def stored_stats(db: Path, run_id: int) -> dict[str, Any]:
    """``runs.stats`` of run ``run_id``, parsed."""
    ((text,),) = rows(db, "SELECT stats FROM runs WHERE id = ?", run_id)
    value: dict[str, Any] = json.loads(text)
    return value


def test_the_summary_and_stats_count_the_pages_whose_links_were_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #25: the index links 20 pages, 5 are kept (``max_links_per_page``)."""
    config = tmp_path / "c.toml"
    config.write_text("delay_ms = 0\nallow_private = true\nrender = 'never'\nwarc = false\n"
                      "max_links_per_page = 5\n")  # fmt: skip
    with HTTPTestServer() as srv:
        small_web(srv)
        code, out, _ = main_in(
            tmp_path, monkeypatch, capsys, "crawl", srv.url("/"), "--no-ui", "--config",
            str(config),
        )  # fmt: skip
    assert code == 0
    table = [" ".join(line.split()) for line in out.splitlines()]
    row = (
        "│ links cut (all runs) │ 1 page (-s parse_max_bytes=4194304 or "
        "max_links_per_page=N keeps them) │"
    )
    assert row in table, out
    assert stored_stats(tmp_path / "crawl.db", 1)["links_cut"] == 1
    code, text, _ = main_in(tmp_path, monkeypatch, capsys, "stats", "crawl.db")
    assert (code, "links_cut: 1" in text.splitlines()) == (0, True)
    # no DB: crawl.db, as crawl's --db (issue #25 trial 19), for links and export too
    assert main_in(tmp_path, monkeypatch, capsys, "stats")[:2] == (0, text)
    assert main_in(tmp_path, monkeypatch, capsys, "links")[0] == 0
    code, out, _ = main_in(tmp_path, monkeypatch, capsys, "export", "--table", "runs")
    assert (code, out.count("\n")) == (0, 1)


def test_retries_are_counted_by_reason(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    answers = iter([Response(503, {"Retry-After": "0"}, b"")] * 2)
    with HTTPTestServer() as srv:
        srv.set("/robots.txt", Response(404))
        srv.set("/", html('<a href="/busy">busy</a>'))
        srv.set("/busy", lambda _: next(answers, html("at last")))
        run_crawl([srv.url("/")], db, allow_private=True, warc=False, backoff_base_ms=10,
                  backoff_max_ms=20, max_delay_ms=50)  # fmt: skip
        tries = srv.count("/busy")
    stats = stored_stats(db, 1)
    assert tries == 3
    assert stats["retries"] == 2 and stats["retries_by_reason"] == {"http_503": 2}
    assert stats["responses_by_status"] == {"200": 2}  # each URL's last try is its page


def test_each_run_stores_its_own_counts(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    with HTTPTestServer() as srv:
        small_web(srv)
        srv.set("/more", html('<a href="/more1">1</a><a href="/more2">2</a>'))
        srv.set("/more1", html("1"))
        srv.set("/more2", html("2"))
        before = time.monotonic()
        run_crawl([srv.url("/")], db, allow_private=True, warc=False, flush_interval_ms=20)
        took = time.monotonic() - before
        first = stored_stats(db, 1)
        # a second run of the file: a new seed, stopped by max_pages after one more page
        run_crawl(
            [srv.url("/more")], db, allow_private=True, warc=False, max_pages=21,
            flush_interval_ms=20,
        )  # fmt: skip
    statuses = rows(
        db, "SELECT CAST(status AS TEXT), count(*) FROM pages WHERE url NOT LIKE '%/more%'"
        " GROUP BY 1 ORDER BY 1",
    )  # fmt: skip
    assert first["finish_reason"] == "finished"
    assert first["responses_by_status"] == dict(statuses) == {"200": 19, "404": 1}
    assert first["fetches"] == first["responses"] == first["pages_added"] == 20
    assert first["transport_errors"] == 0 and first["transport_errors_by_reason"] == {}
    assert first["blocked_by_reason"] == {"robots": 1} and first["blocked"] == 1
    assert first["robots_txt_fetched"] == 1
    assert first["retries"] == 0 and first["retries_by_reason"] == {}
    assert first["fetch_latency_s"]["count"] == 20
    body = rows(db, "SELECT sum(bytes) FROM pages WHERE url NOT LIKE '%/more%'")[0][0]
    assert first["body_bytes"] == body
    assert first["peak_rss_bytes"] > 10 * 1024 * 1024  # a Python process with aiohttp
    (started, finished) = rows(db, "SELECT started_at, finished_at FROM runs WHERE id = 1")[0]
    # one start and one end, not two a few µs apart (issue #25: stats showed both)
    assert (first["start_time"], first["finish_time"]) == (started, finished)
    assert 0 < first["elapsed_s"] <= took  # seconds, timed within the run
    second = stored_stats(db, 2)
    assert second["finish_reason"] == "max_pages"
    assert second["run_id"] == 2
    assert second["fetches"] == second["pages_added"] == 1  # this run's: /more only
    assert second["responses_by_status"] == {"200": 1}
    assert second["blocked"] == 0
    assert stored_stats(db, 1) == first  # an earlier run's stats stay as they were


def test_stats_json_is_refused_before_the_crawl_where_it_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with HTTPTestServer() as srv:
        small_web(srv)
        code, _, err = main_in(
            tmp_path, monkeypatch, capsys, "crawl", srv.url("/"), "--no-ui",
            "--stats-json", "no/such/dir/s.json",
        )  # fmt: skip
        assert srv.count() == 0
    assert code == 2
    assert err == (
        "crawldeck crawl: error: --stats-json 'no/such/dir/s.json': the directory "
        "'no/such/dir' does not exist\n"
    )


def test_a_stopped_crawl_writes_its_stats_json_and_stats_prints_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with HTTPTestServer() as srv:
        small_web(srv, slow_s=1.0)
        config = tmp_path / "c.toml"
        config.write_text("delay_ms = 0\nallow_private = true\nrender = 'never'\nwarc = false\n")
        proc = subprocess.Popen(
            [CRAWLDECK, "crawl", srv.url("/"), "--no-ui", "--config", str(config),
             "--stats-json", "s.json"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while srv.count("/slow") == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert srv.count("/slow") == 1
            proc.send_signal(signal.SIGTERM)  # while /slow is in flight
            out, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 130, err
    assert "run 1 stats written to s.json" in out
    written = json.loads((tmp_path / "s.json").read_text())
    db = tmp_path / "crawl.db"
    assert written == stored_stats(db, 1)
    assert written["finish_reason"] == "stopped"
    assert rows(db, "SELECT status FROM runs") == [("stopped",)]
    assert written["responses_by_status"]["404"] == 1
    assert written["fetches"] == rows(db, "SELECT count(*) FROM pages")[0][0]
    code, text, _ = main_in(tmp_path, monkeypatch, capsys, "stats", "crawl.db")
    lines = text.splitlines()
    assert code == 0
    assert lines[0].startswith("run 1: stopped, started ")
    assert "finish_reason: stopped" in lines
    assert f"responses: {written['responses']}" in lines
    assert "  404: 1" in lines
    assert (
        "blocked: 1" in lines and "  robots (disallowed by robots.txt): 1" in lines
    )  # codes: --json
    code, text, _ = main_in(tmp_path, monkeypatch, capsys, "stats", "crawl.db", "--json")
    assert (code, json.loads(text)) == (0, written)
