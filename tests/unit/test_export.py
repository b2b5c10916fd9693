"""Export of a crawl file: exact JSON Lines and CSV, refusals, constant memory."""

from __future__ import annotations

import io
import json
import sqlite3
import tracemalloc
from contextlib import closing
from pathlib import Path

import pytest
from clikit import main_in

from crawldeck.core.errors import StoreError
from crawldeck.core.records import BlockedRecord, FrontierRow, HostRecord, PageRecord
from crawldeck.core.storage.export import Format, Table, export
from crawldeck.core.storage.store import Store

T0 = 1714564800.25  # 2024-05-01T12:00:00.250000Z
ISO = "2024-05-01T12:00:00.250000Z"


@pytest.fixture
def crawl(tmp_path: Path) -> Path:
    """A small finished crawl: two pages, one refused URL, one host, one run."""
    db = tmp_path / "crawl.db"
    with Store(db, clock=lambda: T0) as s:
        run = s.begin_run({"delay_ms": 1000, "scope": "host"})
        s.enqueue_urls([FrontierRow("http://a.test/", "http://a.test/", "a.test", 0, 0)])
        s.record_page(
            PageRecord(
                "http://a.test/",
                "http://a.test/",
                "a.test",
                0,
                200,
                "text/html",
                1234,
                12.5,
                T0,
                False,
                None,
                False,
            ),
            key="http://a.test/",
            links=[("http://a.test/", "http://a.test/b,c"), ("http://a.test/", "http://a.test/é")],
            new_rows=[
                FrontierRow(
                    "http://a.test/b,c",
                    "http://a.test/b,c",
                    "a.test",
                    1,
                    1,
                    redirects=("k0",),
                    via="http://a.test/",
                )
            ],
            state="done",
        )
        s.record_page(
            PageRecord(
                "http://a.test/b,c",
                None,
                "a.test",
                1,
                None,
                None,
                0,
                30000.0,
                T0 + 1,
                False,
                'timeout: read "slow"',
                True,
            ),
            key="http://a.test/b,c",
            links=(),
            new_rows=(),
            state="failed",
        )
        s.record_blocked(
            BlockedRecord("http://a.test/private", "a.test", "robots", "disallowed", T0)
        )
        s.upsert_host(
            HostRecord("a.test", None, "ok", T0 + 86400, None, 1000.0, 0, None, 2, "active")
        )
        s.end_run(run, "finished")
    return db


def run_export(db: Path, table: Table, fmt: Format) -> tuple[int, str]:
    out = io.StringIO(newline="")
    count = export(db, table, fmt, out)
    return count, out.getvalue()


def test_pages_csv(crawl: Path) -> None:
    count, text = run_export(crawl, "pages", "csv")
    assert count == 2
    assert text == (
        "url,final_url,host,depth,status,content_type,bytes,elapsed_ms,fetched_at,rendered,error,noindex,"
        "warc_file,warc_offset,warc_length,payload_digest,title,etag,last_modified,"
        "content_length,canonical_url,duplicate_of,simhash,near_duplicate_of,run_id\n"
        f"http://a.test/,http://a.test/,a.test,0,200,text/html,1234,12.5,{ISO},0,,0,,,,,,,,,,,,,1\n"
        '"http://a.test/b,c",,a.test,1,,,0,30000.0,2024-05-01T12:00:01.250000Z,0,'
        '"timeout: read ""slow""",1,,,,,,,,,,,,,1\n'
    )


#: The issue #13 columns of a page recorded without them, as JSON.
NULLS = ", ".join(
    f'"{name}": null'
    for name in (
        "warc_file", "warc_offset", "warc_length", "payload_digest", "title", "etag",
        "last_modified", "content_length", "canonical_url", "duplicate_of", "simhash",
        "near_duplicate_of",
    )
)  # fmt: skip


def test_pages_jsonl(crawl: Path) -> None:
    count, text = run_export(crawl, "pages", "jsonl")
    assert count == 2
    assert text == (
        '{"url": "http://a.test/", "final_url": "http://a.test/", "host": "a.test", "depth": 0, '
        '"status": 200, "content_type": "text/html", "bytes": 1234, "elapsed_ms": 12.5, '
        f'"fetched_at": "{ISO}", "rendered": false, "error": null, "noindex": false, {NULLS}, '
        '"run_id": 1}\n'
        '{"url": "http://a.test/b,c", "final_url": null, "host": "a.test", "depth": 1, '
        '"status": null, "content_type": null, "bytes": 0, "elapsed_ms": 30000.0, '
        '"fetched_at": "2024-05-01T12:00:01.250000Z", "rendered": false, '
        f'"error": "timeout: read \\"slow\\"", "noindex": true, {NULLS}, "run_id": 1}}\n'
    )


def test_links_keep_non_ascii(crawl: Path) -> None:
    assert run_export(crawl, "links", "jsonl") == (
        2,
        '{"from_url": "http://a.test/", "to_url": "http://a.test/b,c", "anchor": null}\n'
        '{"from_url": "http://a.test/", "to_url": "http://a.test/é", "anchor": null}\n',
    )
    assert run_export(crawl, "links", "csv") == (
        2,
        'from_url,to_url,anchor\nhttp://a.test/,"http://a.test/b,c",\nhttp://a.test/,http://a.test/é,\n',
    )


def test_frontier_blocked_hosts_runs(crawl: Path) -> None:
    assert run_export(crawl, "frontier", "csv") == (
        2,
        "key,url,host,depth,priority,state,available_epoch_s,attempts,redirects,via,seq,score,"
        "inlinks\n"
        "http://a.test/,http://a.test/,a.test,0,0,done,0.0,0,[],,1,0.0,1\n"
        '"http://a.test/b,c","http://a.test/b,c",a.test,1,1,failed,0.0,0,"[""k0""]",'
        "http://a.test/,2,0.0,1\n",
    )
    assert run_export(crawl, "blocked", "jsonl") == (
        1,
        '{"url": "http://a.test/private", "host": "a.test", "reason": "robots", '
        f'"detail": "disallowed", "blocked_at": "{ISO}", "run_id": 1}}\n',
    )
    assert run_export(crawl, "hosts", "csv") == (
        1,
        "host,ip,robots_status,robots_expires_epoch_s,crawl_delay_ms,delay_ms,backoff_attempts,"
        "backoff_until_epoch_s,pages_fetched,state,backoff_started_epoch_s,learnt_delay_ms\n"
        "a.test,,ok,1714651200.25,,1000.0,0,,2,active,,\n",
    )
    assert run_export(crawl, "runs", "jsonl") == (
        1,
        f'{{"id": 1, "started_at": "{ISO}", "finished_at": "{ISO}", "status": "finished", '
        '"config": {"delay_ms": 1000, "scope": "host"}, "stats": null}\n',
    )


def test_json_formats_write_json_columns_as_values_and_round_host_times(tmp_path: Path) -> None:
    """JSON text stays JSON (a list, not a quoted string of JSON) in the JSON formats, and
    a host's float noise is cut to the µs (issue #25: ``delay_ms 6.970405578613281``)."""
    db = tmp_path / "crawl.db"
    with Store(db, clock=lambda: T0) as s:
        s.enqueue_urls(
            [FrontierRow("http://a.test/x", "http://a.test/x", "a.test", 0, 0, redirects=("k0",))]
        )
        s.upsert_host(
            HostRecord(
                "a.test", None, "ok", T0 + 0.123456789, None, 6.970405578613281, 1,
                T0 + 2.0000004, 0, "backoff",
            )
        )  # fmt: skip
    _, frontier = run_export(db, "frontier", "jsonl")
    assert json.loads(frontier)["redirects"] == ["k0"]
    _, hosts = run_export(db, "hosts", "json")
    (host,) = json.loads(hosts)
    assert host["delay_ms"] == 6.97
    assert host["robots_expires_epoch_s"] == 1714564800.373457
    assert host["backoff_until_epoch_s"] == 1714564802.25


def test_empty_table_csv_has_only_the_header(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    Store(db).close()
    assert run_export(db, "blocked", "csv") == (0, "url,host,reason,detail,blocked_at,run_id\n")
    assert run_export(db, "blocked", "jsonl") == (0, "")
    assert run_export(db, "blocked", "json") == (0, "[]\n")


def test_json_is_one_array_of_the_jsonl_objects(crawl: Path) -> None:
    """``-o pages.json`` as Scrapy writes it (issue #25): an array, not JSON lines."""
    count, text = run_export(crawl, "pages", "json")
    _, lines = run_export(crawl, "pages", "jsonl")
    assert count == 2
    assert json.loads(text) == [json.loads(line) for line in lines.splitlines()]
    assert text.splitlines()[1:-1] == [line + "," for line in lines.splitlines()[:-1]] + [
        lines.splitlines()[-1]
    ]


def test_export_takes_the_format_from_the_output_name(
    crawl: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tmp = crawl.parent
    code, _, err = main_in(tmp, monkeypatch, capsys, "export", str(crawl), "-o", "pages.json")
    assert (code, err) == (0, "crawldeck: exported 2 rows of pages\n")
    assert len(json.loads((tmp / "pages.json").read_text())) == 2
    code, _, _ = main_in(tmp, monkeypatch, capsys, "export", str(crawl), "-o", "pages.csv")
    assert (tmp / "pages.csv").read_text().startswith("url,final_url,")
    args = ("export", str(crawl), "-o", "lines.json", "--format", "jsonl")
    code, _, err = main_in(tmp, monkeypatch, capsys, *args)
    assert err.splitlines()[0] == (
        "crawldeck: note: 'lines.json' holds JSON lines (--format jsonl), not what its name says"
    )
    args = ("export", str(crawl), "--mirror", "site", "--format", "csv")
    code, _, err = main_in(tmp, monkeypatch, capsys, *args)
    refusal = ("crawldeck export: error: --mirror writes a directory of bodies; --table, "
               "--format, -o and --with-body are for a table's rows\n")  # fmt: skip
    assert (code, err) == (2, refusal)


def test_export_refuses_a_name_that_says_no_format(
    crawl: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-o pages.xml`` (issue #25): one line naming the endings it knows, exit 2, nothing
    written, as ``crawl -o`` refuses it; with ``--format`` the name is the user's."""
    tmp = crawl.parent
    for name in ("pages.xml", "pages"):
        code, out, err = main_in(tmp, monkeypatch, capsys, "export", str(crawl), "-o", name)
        assert (code, out) == (2, "")
        assert err == (
            f"crawldeck export: error: -o '{name}': expected a file name ending in .jsonl, .jl, "
            ".json or .csv (the export's format is taken from it), or give --format jsonl, "
            "json or csv\n"
        )
        assert not (tmp / name).exists()
    args = ("export", str(crawl), "-o", "pages.xml", "--format", "csv")
    code, _, err = main_in(tmp, monkeypatch, capsys, *args)
    assert (code, err) == (0, "crawldeck: exported 2 rows of pages\n")
    assert (tmp / "pages.xml").read_text().startswith("url,final_url,")


def test_export_while_the_crawl_holds_the_file(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    with Store(db) as s:
        s.enqueue_urls([FrontierRow("k", "http://a.test/", "a.test", 0, 0)])
        s.flush()
        assert run_export(db, "frontier", "csv")[0] == 1


def test_refusals(tmp_path: Path, crawl: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        run_export(tmp_path / "missing.db", "pages", "csv")
    with pytest.raises(StoreError, match="unknown table 'meta'"):
        run_export(crawl, "meta", "csv")  # type: ignore[arg-type]  # not a Table, on purpose
    with pytest.raises(StoreError, match="unknown export format 'xml'"):
        run_export(crawl, "pages", "xml")  # type: ignore[arg-type]  # not a Format, on purpose
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    with pytest.raises(StoreError, match=r"notes\.txt is not a SQLite crawl file"):
        run_export(text, "pages", "csv")
    assert text.read_text() == "hello\n"
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as conn:
        conn.execute("CREATE TABLE pages (url)")
        conn.commit()
    with pytest.raises(StoreError, match=r"other\.db is a SQLite file but not a crawldeck crawl"):
        run_export(other, "pages", "csv")
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(StoreError, match="empty SQLite file"):
        run_export(empty, "pages", "csv")


class CountingSink(io.TextIOBase):
    """A text stream that only counts what is written to it."""

    def __init__(self) -> None:
        self.chars = 0
        self.lines = 0

    def write(self, s: str) -> int:
        self.chars += len(s)
        self.lines += s.count("\n")
        return len(s)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_export_streams_in_bounded_memory(tmp_path: Path, fmt: Format) -> None:
    db = tmp_path / "crawl.db"
    Store(db).close()
    n = 200_000
    with closing(sqlite3.connect(db)) as conn:
        conn.executemany(
            "INSERT INTO links (from_url, to_url) VALUES (?, ?)",
            ((f"http://a.test/page/{i // 20}", f"http://b.test/target/{i:09d}") for i in range(n)),
        )
        conn.commit()
    sink = CountingSink()
    tracemalloc.start()
    try:
        # typeshed counts no io.TextIOBase subclass as a TextIO, though it is a text stream
        count = export(db, "links", fmt, sink)  # type: ignore[arg-type]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == n
    assert sink.lines == n + (1 if fmt == "csv" else 0)
    assert sink.chars > 10_000_000  # over 10 MB of text; as Python rows, ~50 MB
    assert peak < 1_000_000  # about one fetchmany batch, not the table


def test_the_views_the_docs_name_are_exported_too(crawl: Path) -> None:
    """``broken_links``, ``page_summary`` and ``host_summary`` (docs/results.md) export as
    the tables do (issue #25 trial 21: refused as "invalid choice")."""
    count, text = run_export(crawl, "broken_links", "jsonl")
    assert count == 1
    row = json.loads(text)
    assert (row["from_url"], row["to_url"], row["error"]) == (
        "http://a.test/", "http://a.test/b,c", 'timeout: read "slow"'
    )  # fmt: skip
    count, text = run_export(crawl, "page_summary", "csv")
    assert count == 2 and text.splitlines()[0].startswith("url,host,status,")
    count, text = run_export(crawl, "host_summary", "jsonl")
    assert count == 1 and json.loads(text)["host"] == "a.test"
