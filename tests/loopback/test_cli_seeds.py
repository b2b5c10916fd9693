"""Seeds where people give them and ``-o FILE`` (issue #14 item 1), through real
``crawldeck`` processes over the local web: the tests that start a real server on
loopback or a process; the others are in ``tests/unit/test_cli_seeds.py``."""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from clikit import main_in, run
from httpserver import HTTPTestServer, Response

from crawldeck.localweb import LocalWeb


@pytest.fixture
def web() -> Iterator[LocalWeb]:
    with LocalWeb(delay_scale=0.2) as w:
        yield w


def fetched(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {url for (url,) in conn.execute("SELECT url FROM pages WHERE status = 200")}
    finally:
        conn.close()


def test_a_missing_seeds_file_in_a_real_process(tmp_path: Path) -> None:
    proc = run("crawl", "seeds.txt", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == ("crawldeck crawl: error: 'seeds.txt' is neither an existing file nor a "
                           "URL (a URL starts with http:// or https://, or is a host name: "
                           "example.org)\n")  # fmt: skip


def test_a_seed_without_a_scheme_is_crawled_with_one_info_line(tmp_path: Path) -> None:
    """A real crawl of ``127.0.0.1:PORT/`` (no scheme) over loopback: fetched over
    http, one line on stderr says so."""
    with HTTPTestServer() as srv:
        srv.set("/", Response(200, {"Content-Type": "text/html"}, b"<p>home</p>"))
        given = srv.url("/").removeprefix("http://")
        proc = run("crawl", given, "--no-ui", "--no-warc", cwd=tmp_path)
        # -q: errors and the summary only, as its help says (issue #25 trial 18: this
        # note and a seeds file's skipped lines were still printed)
        (tmp_path / "seeds.txt").write_text(f"{given}\nhttp://[::1/\n")
        quiet = run("crawl", "seeds.txt", "--db", "q.db", "-q", "--no-warc", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    note = f"crawldeck: seed {given!r} has no scheme: crawling http://{given} (as wget does)"
    assert proc.stderr.splitlines()[0] == note
    assert fetched(tmp_path / "crawl.db") == {f"http://{given}"}
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    assert fetched(tmp_path / "q.db") == {f"http://{given}"}


def test_urls_on_the_command_line_and_a_seeds_file_together(tmp_path: Path, web: LocalWeb) -> None:
    (tmp_path / "more.txt").write_text(web.hosts["www"] + "/\n")
    home = web.hosts["norobots"] + "/"
    proc = run("crawl", home, "more.txt", "--no-ui", "--delay-ms", "5", "--scope", "host",
               "--max-depth", "0", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert fetched(tmp_path / "crawl.db") == {home, web.hosts["www"] + "/"}


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_output_writes_the_pages_export_when_the_crawl_ends(
    tmp_path: Path, web: LocalWeb, suffix: str
) -> None:
    home = web.hosts["norobots"] + "/"
    proc = run("crawl", home, "--no-ui", "--delay-ms", "5", "-o", f"pages{suffix}",
               cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    fmt = suffix[1:]
    same = run("export", "crawl.db", "--table", "pages", "--format", fmt, cwd=tmp_path)
    written = (tmp_path / f"pages{suffix}").read_text()
    assert written == same.stdout  # the export of the crawl file, as crawldeck export
    if fmt == "jsonl":
        rows = [json.loads(line) for line in written.splitlines()]
    else:
        rows = list(csv.DictReader(written.splitlines()))
    assert {r["url"] for r in rows} >= {home} and len(rows) == len(fetched(tmp_path / "crawl.db"))
    assert f"{len(rows)} pages written to pages{suffix}" in proc.stdout.splitlines()[-1]
    # it wrote the export: no hint to export it again (issue #25)
    assert "crawl saved in crawl.db\n" in proc.stdout and "export with:" not in proc.stdout


def test_a_crawl_of_other_seeds_into_an_old_file_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new user's trial: ``crawldeck crawl URL`` in a directory holding an old
    ``crawl.db`` of other seeds resumed it silently (0 fetches, exit 0)."""
    with HTTPTestServer() as first, HTTPTestServer("127.0.0.2") as second:
        for server in (first, second):
            server.set("/robots.txt", Response(404))
            server.set("/", Response(200, {"Content-Type": "text/html"}, b"<p>hello</p>"))
        args = ("--no-ui", "--delay-ms", "0", "-s", "sitemaps=false", "-s", "render=never")
        code, _, err = main_in(tmp_path, monkeypatch, capsys, "crawl", first.url("/"), *args)
        assert code == 0 and "other seeds" not in err
        code, _, err = main_in(tmp_path, monkeypatch, capsys, "crawl", second.url("/"), *args)
        assert code == 0
        assert (
            f"crawldeck: warning: crawl.db holds a crawl of other seeds ({first.url('/')})" in err
        )
        code, _, err = main_in(tmp_path, monkeypatch, capsys, "crawl", first.url("/"), *args)
        assert code == 0 and "other seeds" not in err
    assert fetched(tmp_path / "crawl.db") == {first.url("/"), second.url("/")}
