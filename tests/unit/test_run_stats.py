"""Run stats (issue #14 item 7): ``runs.stats`` at the end of every run, this run's counts
only, ``crawl --stats-json FILE`` and ``crawldeck stats DB [--run N] [--json]``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from clikit import main_in
from crawlkit import rows
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.crawl.stats import RunTally, read_run, reason_gloss, reason_words
from crawldeck.core.policy.traps import BlockReason
from crawldeck.core.records import PageRecord
from crawldeck.core.storage.store import Store, connect_reader

#: ``stats``' line for a run whose end was never written.
NO_END = (
    "no stats for this run: the run ended without writing its end (a SIGKILL, a crash or a "
    "full disk): its figures were lost"
)


def test_the_tally_puts_each_fetch_in_its_bucket_by_status_and_reason() -> None:
    tally = RunTally()
    tally.fetched(200, 5.0, None)  # exactly a bound: in that bucket (le, Prometheus)
    tally.fetched(404, 12.0, None)
    tally.fetched(None, 30_000.0, "timeout: no answer in 30 s")
    tally.fetched(200, 0.0, "body_too_large: over 1024 bytes")  # an answer, not an error
    latency = tally.latency()
    buckets = dict(latency.buckets)
    assert (buckets[0.005], buckets[0.01], buckets[0.025], buckets[10.0]) == (2, 2, 3, 3)
    assert buckets[float("inf")] == latency.count == 4
    assert latency.sum_s == pytest.approx(30.017)
    assert tally.by_status == {200: 2, 404: 1}
    assert tally.errors == {"timeout": 1}


def test_the_tally_counts_the_responses_whose_links_were_cut() -> None:
    tally = RunTally()
    tally.fetched(200, 1.0, "links_cut: kept 5 of 20 links (max_links_per_page)")
    tally.fetched(200, 1.0, "parse_cut: links read from the first 32768 of 40000 bytes")
    tally.fetched(200, 1.0, "body_too_large: over 1024 bytes")
    tally.fetched(None, 1.0, "connect: refused")
    assert tally.links_cut == 2


@given(st.lists(st.floats(min_value=0, max_value=60_000, allow_nan=False), max_size=50))
def test_the_histogram_counts_what_each_bound_covers(elapsed_ms: list[float]) -> None:
    tally = RunTally()
    for ms in elapsed_ms:
        tally.fetched(200, ms, None)
    latency = tally.latency()
    for bound, count in latency.buckets:
        assert count == sum(1 for ms in elapsed_ms if ms / 1000 <= bound)
    assert latency.count == len(elapsed_ms)


def test_a_run_without_stats_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "c.db"
    with Store(db) as store:  # a run that has not ended, its file held: running
        store.begin_run({})
        page = PageRecord(
            "http://a.test/", "http://a.test/", "a.test", 0, 200, "text/html", 10, 1.0, 1.7e9,
            False, None, False,
        )  # fmt: skip
        store.record_page(page, key=page.url, links=(), new_rows=(), state="done")
        store.flush()
        code, out, _ = main_in(tmp_path, monkeypatch, capsys, "stats", "c.db")
        assert code == 0
        assert out.splitlines()[-2:] == [
            "no stats for this run: it is still running: its stats are written when it ends",
            "the file holds 1 fetch of it: 200 1",
        ]
    # the file let go without the run's end: killed (issue #25 trial 6: after kill -9,
    # stats said "still running, or was killed" with the file's lock free)
    code, out, _ = main_in(tmp_path, monkeypatch, capsys, "stats", "c.db")
    assert (code, out.splitlines()[0].split(",")[0]) == (0, "run 1: killed")
    assert out.splitlines()[-2:] == [
        NO_END,
        "the file holds 1 fetch of it: 200 1",  # what its rows say (issue #25 trial 7)
    ]
    with Store(db) as store:  # the next run marks it killed
        store.begin_run({})
        store.end_run(2, "finished", stats={"run_id": 2, "fetches": 0})
    code, out, _ = main_in(tmp_path, monkeypatch, capsys, "stats", "c.db", "--run", "1")
    assert (code, out.splitlines()[-2]) == (0, NO_END)
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "stats", "c.db", "--run", "1", "--json")
    assert (code, out) == (2, "")
    assert err == f"crawldeck stats: error: {NO_END}\n"
    code, out, _ = main_in(tmp_path, monkeypatch, capsys, "stats", "c.db", "--json")
    assert (code, json.loads(out)) == (0, {"run_id": 2, "fetches": 0})
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "stats", "c.db", "--run", "9")
    assert (code, err) == (2, "crawldeck stats: error: c.db has no run 9 (its runs are 1 to 2)\n")
    with Store(db) as store:  # a third run, killed: the last one with stats is named
        store.begin_run({})  # (issue #25 trial 20: found by trying --run N-1)
    code, out, _ = main_in(tmp_path, monkeypatch, capsys, "stats", "c.db")
    assert (code, out.splitlines()[0].split(",")[0]) == (0, "run 3: killed")
    assert out.splitlines()[-2:] == [NO_END, "the last run with stats is run 2: --run 2 shows it"]
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "stats", "nothing.db")
    assert (code, err) == (
        2, "crawldeck stats: error: nothing.db does not exist or is not a file\n"
    )  # fmt: skip


def test_a_file_of_an_older_crawldeck_gets_the_column(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with Store(db) as store:
        store.begin_run({})
        store.end_run(1, "finished")
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE runs DROP COLUMN stats")  # as a file made before item 7
    conn.commit()
    conn.close()
    run = read_run(db)
    assert (run.id, run.status, run.stats) == (1, "finished", None)
    with Store(db):
        pass
    assert rows(db, "SELECT stats FROM runs") == [(None,)]


def test_a_cluster_crawl_refuses_stats_json_and_metrics_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for flag in (["--stats-json", "s.json"], ["--metrics-port", "9464"]):
        code, out, err = main_in(
            tmp_path, monkeypatch, capsys, "crawl", "http://a.test/", "--no-ui",
            "--workers", "2", *flag,
        )  # fmt: skip
        assert (code, out) == (2, "")
        assert err == (
            "crawldeck crawl: error: a cluster crawl (--workers, --redis) serves no metrics "
            "and keeps its run stats in the crawl file only (crawldeck stats DB): "
            "--metrics-port and --stats-json are for one process\n"
        )
    assert list(tmp_path.iterdir()) == []  # no crawl file, no private Redis


def test_reason_codes_read_as_words() -> None:
    """``crawldeck stats`` says what a code means (issue #25 F19) but keeps the code
    first: the console, the ``blocked`` table and ``--json`` use the codes, so every
    output names a reason the same way (issue #25: ``out of scope`` against ``scope``)."""
    assert reason_words("robots") == "robots (disallowed by robots.txt)"
    assert reason_words("scope") == "scope (out of scope)"
    # the way to allow it, where the summary shows it (issue #25 trial 19)
    assert reason_words("private_address") == (
        "private_address (a private or special address: -s allow_private=true fetches it)"
    )
    assert reason_words("http_429") == "http_429 (HTTP 429)"
    assert reason_words("redirect_loop") == "redirect_loop (a redirect back into its chain)"
    assert reason_words("timeout") == "timeout"
    # every reason a URL is blocked for says what it means (issue #25 trial 10)
    assert all(reason_gloss(reason) for reason in BlockReason)


def test_reading_a_file_leaves_no_wal_or_shm_beside_it_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``stats``, ``show`` and ``export`` leave the directory as they found it (a
    ``mode=ro`` connection left ``c.db-wal`` and ``c.db-shm``; issue #25); while a
    ``Store`` holds the file, a reader sees its commits and the writer's WAL stays."""
    db = tmp_path / "c.db"
    with Store(db) as store:
        store.begin_run({})
        store.end_run(1, "finished", stats={"run_id": 1, "fetches": 0})
    before = sorted(p.name for p in tmp_path.iterdir())
    assert before == ["c.db", "c.db.metadata.json"]
    for args in (
        ("stats", "c.db"),
        ("export", "c.db", "--table", "runs", "--format", "jsonl", "-o", "-"),
    ):
        code, _, _ = main_in(tmp_path, monkeypatch, capsys, *args)
        assert code == 0
        assert sorted(p.name for p in tmp_path.iterdir()) == before, args
    conn = connect_reader(db)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("DELETE FROM runs")
    finally:
        conn.close()
    with Store(db) as store:
        store.begin_run({})
        store.flush()
        assert read_run(db).id == 2
        assert (tmp_path / "c.db-wal").exists()
    assert rows(db, "SELECT count(*) FROM runs") == [(2,)]
