"""``crawldeck show DB URL`` and ``crawldeck export --with-body`` over a real crawl's
WARC files (issue #13 item 2)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from crawlkit import html, run_crawl
from httpserver import HTTPTestServer, Response

from crawldeck.cli.main import main

LATIN = "<html><body><p>caf\u00e9 cr\u00e8me</p></body></html>"


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    db = tmp_path_factory.mktemp("show") / "c.db"
    with HTTPTestServer() as srv:
        srv.set("/", html('<a href="/latin">l</a><a href="/gz">g</a><a href="/png">p</a>'
                          '<a href="/copy">c</a><a href="/moved">m</a>'))  # fmt: skip
        srv.set("/moved", Response(301, {"Location": "/gz"}, b""))
        for path in ("/latin", "/copy"):  # /copy: the same payload, a revisit record
            srv.set(path, Response(200, {"Content-Type": "text/html; charset=iso-8859-1"},
                                   LATIN.encode("latin-1")))  # fmt: skip
        srv.set("/gz", Response(200, {"Content-Type": "text/html", "Content-Encoding": "gzip"},
                                gzip.compress(b"<html><body>unzipped</body></html>")))  # fmt: skip
        srv.set("/png", Response(200, {"Content-Type": "image/png"}, b"\x89PNG" + bytes(50)))
        run_crawl([srv.url("/")], db)
        names = ("", "latin", "gz", "png", "copy", "moved")
        return db, {name: srv.url(f"/{name}") for name in names}


def test_show_prints_headers_and_the_decoded_body(
    crawl: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, url = crawl
    assert main(["show", str(db), url["latin"]]) == 0
    out = capsys.readouterr().out
    assert "WARC-Type: response\n" in out
    assert f"WARC-Target-URI: {url['latin']}\n" in out
    assert "HTTP/1.1 200 OK\n" in out and "Content-Type: text/html; charset=iso-8859-1\n" in out
    assert out.endswith(LATIN + "\n")
    assert main(["show", str(db), url["gz"]]) == 0
    assert capsys.readouterr().out.endswith("<html><body>unzipped</body></html>\n")
    # without a scheme, as crawl takes a seed (issue #25: a trial's 127.0.0.1:8712/)
    assert main(["show", str(db), url["gz"].removeprefix("http://")]) == 0
    assert capsys.readouterr().out.endswith("<html><body>unzipped</body></html>\n")


def test_show_errors_are_one_line(
    crawl: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db, url = crawl
    assert main(["show", str(db), "http://unknown.test/"]) == 2
    assert (
        capsys.readouterr().err
        == f"crawldeck show: error: http://unknown.test/ is not a page of {db.name}\n"
    )
    assert main(["show", str(db), url["png"]]) == 0  # skipped (not HTML): headers only
    assert "(body not downloaded: not HTML)" in capsys.readouterr().out
    moved = db.with_name("c-00001.warc.gz")
    hidden = moved.with_name("hidden.gz")
    moved.rename(hidden)
    try:
        assert main(["show", str(db), url["latin"]]) == 2
        err = capsys.readouterr().err
        assert err.startswith("crawldeck show: error: c-00001.warc.gz: WARC file not found")
        assert err.count("\n") == 1
        # another file of that name (issue #25 trial 19: a later run's, once the first
        # was archived): warcio's message quotes the binary it found; ours is one line
        moved.write_bytes(bytes(range(256)) * 256)  # 64 KiB, past the record's offset
        assert main(["show", str(db), url["latin"]]) == 2
        err = capsys.readouterr().err
        assert err.startswith("crawldeck show: error: c-00001.warc.gz: no WARC record starts")
        assert err.count("\n") == 1 and err[:-1].isprintable()
    finally:
        hidden.rename(moved)


def test_export_with_body_streams_decoded_bodies(
    crawl: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, url = crawl
    assert main(["export", str(db), "--with-body"]) == 0
    rows = {r["url"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows[url["latin"]]["body"] == LATIN
    assert rows[url["gz"]]["body"] == "<html><body>unzipped</body></html>"
    assert rows[url["png"]]["body"] is None
    assert rows[url["png"]]["body_note"] == "not downloaded (image/png: not HTML)"
    assert rows[url["latin"]]["body_note"] is None
    # an exact duplicate (a revisit record) has the body it repeats, as show --raw and
    # the mirror give it (issue #25 trial 8: null, "revisit: the body is that of ...")
    assert (rows[url["copy"]]["body"], rows[url["copy"]]["body_note"]) == (LATIN, None)
    assert rows[url["moved"]]["body_note"] == "a redirect (HTTP 301): its body is not kept"
    assert main(["export", str(db), "--with-body", "--format", "csv"]) == 2
    assert "jsonl only" in capsys.readouterr().err


def test_show_raw_writes_the_body_alone(
    crawl: tuple[Path, dict[str, str]], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """``--raw`` is for a file or a pipe (like ``curl -o``): the body as stored, no
    header line."""
    db, url = crawl
    assert main(["show", str(db), url["latin"], "--raw"]) == 0
    assert capsysbinary.readouterr().out == LATIN.encode("latin-1")


def test_show_raw_of_a_body_not_downloaded_is_an_error_not_an_empty_file(
    crawl: tuple[Path, dict[str, str]], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """An image's body is not downloaded: ``--raw`` says so in one line and exits 2,
    where it wrote nothing and exited 0 (issue #25 trial 11: ``> logo.png`` made an
    empty file)."""
    db, url = crawl
    assert main(["show", str(db), url["png"], "--raw"]) == 2
    out, err = capsysbinary.readouterr()
    assert out == b""
    assert err.decode() == (
        f"crawldeck show: error: {url['png']}: its body was not downloaded (image/png: not "
        "HTML; the crawl reads the bodies of HTML pages only)\n"
    )


def test_show_raw_of_a_revisit_writes_the_body_it_repeats(
    crawl: tuple[Path, dict[str, str]], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """A page whose payload repeats an earlier page's is a WARC revisit record with no
    body of its own: ``--raw`` writes the body of the page it refers to, not nothing."""
    db, url = crawl
    assert main(["show", str(db), url["copy"], "--raw"]) == 0
    assert capsysbinary.readouterr().out == LATIN.encode("latin-1")


def test_show_takes_a_url_as_a_browser_would_read_it(
    crawl: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """The URL given is looked up as typed, then as the crawl wrote it: scheme and host
    in any case, the root without its slash."""
    db, url = crawl
    root = url[""]
    assert main(["show", str(db), root.rstrip("/")]) == 0
    assert f"WARC-Target-URI: {root}\n" in capsys.readouterr().out
    assert main(["show", str(db), url["latin"].replace("http://", "HTTP://")]) == 0
    assert capsys.readouterr().out.endswith(LATIN + "\n")
