"""Cluster workers write WARC files (issue #13 item 1 in a cluster crawl), against a real
``redis-server`` and a loopback web whose every answer is known
(``clusterkit.SynthWeb``): the tests that start a real server on loopback or a process;
the others are in ``tests/unit/test_cluster_warc.py``."""

from __future__ import annotations

import asyncio
import gzip
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from clusterkit import SynthWeb, crawldeck, write_toml
from crewkit import crawl_with_crew
from redisfix import LoopbackRedis
from warcio.archiveiterator import ArchiveIterator

from crawldeck.cli.main import main
from crawldeck.core.cluster.worker import Worker
from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.storage.warc_reader import warc_files

WARCIO = str(Path(sys.executable).parent / "warcio")
SETTINGS: dict[str, Any] = {
    "delay_ms": 20,
    "concurrency": 8,
    "allow_networks": ["127.0.0.0/8"],
    "render": "never",
    "cluster_lease_ms": 2000,
    "max_depth": 50,
}
CRAWL_ID = "wc"


def hosts(count: int, net: int) -> dict[str, str]:
    """``count`` hosts, each its own address ``127.<net>.0.<i>`` (served as itself)."""
    return {f"127.{net}.0.{i}": f"127.{net}.0.{i}" for i in range(1, count + 1)}


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql).fetchall()


def check_with_warcio(path: Path) -> None:
    """``warcio check`` (every digest verified) and ``warcio index`` pass on ``path``."""
    checked = subprocess.run([WARCIO, "check", "-v", str(path)], capture_output=True)
    assert checked.returncode == 0, checked.stdout.decode()[-2000:]
    assert b"digest fail" not in checked.stdout
    indexed = subprocess.run([WARCIO, "index", str(path)], capture_output=True)
    assert indexed.returncode == 0, indexed.stderr.decode()


def record_at(path: Path, offset: int, length: int) -> Any:
    """The record of the gzip member at ``offset`` (``length`` bytes), read whole,
    after checking the member is exactly those bytes."""
    with path.open("rb") as f:
        f.seek(offset)
        stored = f.read(length)
    assert gzip.decompress(stored).startswith(b"WARC/1.1\r\n")  # one whole member
    with path.open("rb") as f:
        f.seek(offset)
        record = next(iter(ArchiveIterator(f)))
        record.raw = record.raw_stream.read()
        return record


async def _crawl(url: str, seeds: list[str], db: Path, config: CrawlConfig) -> list[Worker]:
    return await crawl_with_crew(
        url, seeds, db, config, crawl_id=CRAWL_ID, warc_dir=db.parent, timeout_s=60
    )


def test_two_workers_write_their_own_files_and_every_row_points_into_them(
    tmp_path: Path, redis_server: LoopbackRedis, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "crawl.db"
    config = build_config(SETTINGS)
    with SynthWeb(hosts(4, 93), pages=12, latency_s=0.005) as web:
        crew = asyncio.run(_crawl(redis_server.url, web.seeds(), db, config))
        pages = rows(db, "SELECT url, status, warc_file, warc_offset, warc_length, "
                         "payload_digest, duplicate_of FROM pages")  # fmt: skip
        assert {p[0] for p in pages} == web.urls()
        stems = {w.store.warc_home.stem: w for w in crew if w.store.warc_home is not None}
        assert len(stems) == 2
        assert all(re.fullmatch(CRAWL_ID + r"-[0-9a-f]{8}", s) for s in stems), stems
        per_stem: Counter[str] = Counter()
        for url, status, file, offset, length, digest, duplicate_of in pages:
            assert status == 200 and duplicate_of is None  # every body differs
            stem = str(file).rsplit("-", 1)[0]
            assert stem in stems, file
            per_stem[stem] += 1
            record = record_at(tmp_path / file, offset, length)
            assert record.rec_type == "response"
            assert record.rec_headers.get_header("WARC-Target-URI") == url
            assert record.rec_headers.get_header("WARC-Payload-Digest") == digest
            host, _, path = url.removeprefix("http://").partition("/")
            assert record.raw == web.answer(host, "/" + path)[1]
        # each worker's committed pages are exactly the rows naming its files
        assert per_stem == {
            stem: w.store.pages_added().get("pages", 0) for stem, w in stems.items()
        }
        assert all(per_stem.values())  # both workers fetched
        files = sorted(tmp_path.glob("*.warc.gz"))
        assert files == sorted(p for s in stems for p in warc_files(tmp_path, s))
        types: Counter[str] = Counter()
        responses: Counter[tuple[str, str]] = Counter()  # by record type, path
        for path in files:
            check_with_warcio(path)
            first_robots = None  # this file's full robots.txt response
            with path.open("rb") as f:
                records = iter(ArchiveIterator(f))
                info = next(records)
                assert info.rec_type == "warcinfo"
                assert f"isPartOf: {CRAWL_ID}\r\n" in info.content_stream().read().decode()
                for r in records:
                    types[r.rec_type] += 1
                    get = r.rec_headers.get_header
                    if r.rec_type not in ("response", "revisit"):
                        continue
                    target = get("WARC-Target-URI")
                    responses[r.rec_type, target.split("/", 3)[3].partition("/")[0]] += 1
                    if r.rec_type == "revisit":  # of its own worker's first response
                        assert get("WARC-Refers-To-Target-URI") == first_robots
                    elif target.endswith("/robots.txt"):
                        first_robots = target
        # robots.txt once per host for the whole cluster, every one the same body: a
        # full response in each worker's files, the worker's later ones revisits of it
        # (the duplicate map is per worker); /sitemap.xml (404, at most one per host)
        assert responses.pop(("response", "robots.txt")) == len(files) == 2
        assert responses.pop(("revisit", "robots.txt")) == 4 - len(files)
        assert responses.pop(("response", "sitemap.xml"), 0) <= 4
        assert responses == {("response", "p"): len(pages)}
        assert types["request"] == types["response"] + types["revisit"]
        assert types["metadata"] == len(pages)
        url = sorted(web.urls())[0]
        assert main(["show", str(db), url]) == 0
        out = capsys.readouterr().out
        assert f"WARC-Target-URI: {url}\n" in out and " 200 OK\n" in out
        host, _, path = url.removeprefix("http://").partition("/")
        assert out.endswith(web.answer(host, "/" + path)[1].decode() + "\n")


def test_crawl_with_workers_writes_warc_beside_the_crawl_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``crawl --workers 2`` (a private redis-server, the coordinator's own worker
    processes) run from another directory: the WARC files are beside the crawl file,
    none in the current directory, and ``show`` and ``export --with-body`` read them."""
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    config = write_toml(here / "c.toml", SETTINGS)
    with SynthWeb(hosts(3, 94), pages=6) as web:
        (here / "seeds.txt").write_text("\n".join(web.seeds()) + "\n")
        done = subprocess.run(
            crawldeck("crawl", "seeds.txt", "--workers", "2", "--no-ui", "--db",
                      str(there / "c.db"), "--config", str(config)),
            cwd=here, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr + (there / "c.db.workers.log").read_text()
    assert list(here.glob("*.warc.gz")) == []
    db = there / "c.db"
    got = rows(db, "SELECT url, warc_file FROM pages")
    assert {u for u, _f in got} == web.urls()
    assert all((there / f).is_file() for _u, f in got)
    assert {f.rsplit("-", 2)[0] for _u, f in got} == {"crawl"}  # the private Redis's id
    url = sorted(web.urls())[-1]
    assert main(["show", str(db), url]) == 0
    assert f"WARC-Target-URI: {url}\n" in capsys.readouterr().out
    assert main(["export", str(db), "--with-body"]) == 0
    assert capsys.readouterr().out.count('"body": "<html><body><p>') == len(got)
