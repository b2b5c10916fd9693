"""``crawldeck show`` and ``export --with-body`` undo a page's ``Content-Encoding``
(``br``, ``gzip``, ``deflate``; issue #14's loose ends, a new user's trial: a brotli
body was printed still compressed), bounded as the fetcher is: a gzip bomb that the
crawl cut at ``max_body_bytes`` is cut there again when read back from its WARC
record, not expanded. A real crawl of a loopback server; ``core.storage.archive.decode_content``
on its own last."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import brotli
import pytest
from clikit import main_in, run
from crawlkit import html, rows, run_crawl
from httpserver import HTTPTestServer, Response

from crawldeck.core.storage.archive import decode_content
from crawldeck.core.storage.export import page_record

PAGE = b"<html><body><p>" + b"decoded text " * 200 + b"</p></body></html>"
#: The crawl's body cap (bytes): the bomb expands far past it.
CAP = 64 * 1024
#: The bomb's decoded size: 20 MB of one letter, about 20 KB gzipped.
BOMB = 20_000_000


def coded(coding: str, body: bytes) -> Response:
    return Response(200, {"Content-Type": "text/html", "Content-Encoding": coding}, body)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    db = tmp_path_factory.mktemp("encodings") / "c.db"
    paths = ("br", "gzip", "deflate", "bomb")
    with HTTPTestServer() as srv:
        srv.set("/", html("".join(f'<a href="/{p}">{p}</a>' for p in paths)))
        srv.set("/br", coded("br", brotli.compress(PAGE)))
        srv.set("/gzip", coded("gzip", gzip.compress(PAGE)))
        srv.set("/deflate", coded("deflate", zlib.compress(PAGE)))
        srv.set("/bomb", coded("gzip", gzip.compress(b"a" * BOMB)))
        run_crawl([srv.url("/")], db, sitemaps=False, max_body_bytes=CAP)
        return db, {p: srv.url(f"/{p}") for p in paths}


@pytest.mark.parametrize("coding", ["br", "gzip", "deflate"])
def test_show_prints_the_body_decoded(
    crawl: tuple[Path, dict[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    coding: str,
) -> None:
    db, url = crawl
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "show", str(db), url[coding])
    assert (code, err) == (0, "")
    assert f"Content-Encoding: {coding}\n" in out
    assert out.endswith(PAGE.decode() + "\n")


def test_export_with_body_gives_every_body_decoded(crawl: tuple[Path, dict[str, str]]) -> None:
    db, url = crawl
    proc = run("export", str(db), "--with-body", cwd=db.parent)
    assert proc.returncode == 0, proc.stderr
    bodies = {row["url"]: row["body"] for row in map(json.loads, proc.stdout.splitlines())}
    assert {bodies[url[c]] for c in ("br", "gzip", "deflate")} == {PAGE.decode()}
    assert bodies[url["bomb"]] == "a" * CAP


def test_a_bomb_in_the_warc_file_is_cut_at_what_the_crawl_kept(
    crawl: tuple[Path, dict[str, str]],
) -> None:
    """The fetcher stopped reading at the cap, but the gzip it had read by then (one
    network read or more) expands far past it: read back, the body is cut at the
    page's recorded size, as the crawl kept it."""
    db, url = crawl
    assert rows(db, "SELECT bytes, error FROM pages WHERE url = ?", url["bomb"]) == [
        (CAP, f"body_too_large: over {CAP} bytes")
    ]
    record = page_record(db, url["bomb"])
    assert decode_content(record.payload, "gzip", BOMB)[0].count(b"a") > CAP  # a bomb
    assert record.body == b"a" * CAP
