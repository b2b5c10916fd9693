"""The request switches a curl, wget or Scrapy user types first (issue #25 item 2):
``-H/--header``, ``--proxy``, ``--auth``, ``--no-warc``, ``--warc-prefix``,
``--warc-dir`` and ``-q``,
each crawled against real loopback servers (``tests/httpserver.py``,
``tests/forwardproxy.py``)."""

from __future__ import annotations

import base64
import gzip
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from clikit import CRAWLDECK, run
from forwardproxy import ForwardProxy
from httpserver import HTTPTestServer, Request, Response

HTML = {"Content-Type": "text/html"}
BASIC = "Basic " + base64.b64encode(b"alice:s3cret").decode()


@pytest.fixture
def site() -> Iterator[HTTPTestServer]:
    with HTTPTestServer() as srv:
        yield srv


@pytest.fixture
def elsewhere() -> Iterator[HTTPTestServer]:
    """Another host (127.0.0.2): a redirect's target that must not get credentials."""
    with HTTPTestServer("127.0.0.2") as srv:
        yield srv


def test_header_is_sent_with_every_request_robots_txt_included(
    tmp_path: Path, site: HTTPTestServer
) -> None:
    site.set("/", Response(200, HTML, b'<a href="/next">n</a>'))
    site.set("/next", Response(200, HTML, b"<p>next</p>"))
    proc = run("crawl", site.url("/"), "--no-ui", "--delay-ms", "0", "-H", "X-Trace: 42",
               "--header", "Accept-Language:  en ", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(r.path for r in site.requests) == ["/", "/next", "/robots.txt", "/sitemap.xml"]
    assert all(r.headers.get("x-trace") == "42" for r in site.requests)
    assert all(r.headers.get("accept-language") == "en" for r in site.requests)
    # the loopback seed the operator named: one information line, no warning
    assert "warning" not in proc.stderr, proc.stderr
    assert proc.stdout.count("seed host at loopback address 127.0.0.1") == 1


def test_proxy_carries_every_request(tmp_path: Path, site: HTTPTestServer) -> None:
    site.set("/", Response(200, HTML, b"<p>home</p>"))
    with ForwardProxy() as proxy:
        proc = run("crawl", site.url("/"), "--no-ui", "--proxy", proxy.url, cwd=tmp_path)
        proxied = proxy.requests
    assert proc.returncode == 0, proc.stderr
    paths = ["/", "/robots.txt", "/sitemap.xml"]
    assert sorted(p.target for p in proxied) == [site.url(path) for path in paths]
    assert sorted(r.path for r in site.requests) == paths


def test_auth_goes_to_the_seeds_origin_only_never_across_a_redirect(
    tmp_path: Path, site: HTTPTestServer, elsewhere: HTTPTestServer
) -> None:
    """The server checks the header (401 without it); a redirect to another host gets
    none; the password is in neither the crawl file nor the WARC files."""

    def private(req: Request) -> Response:
        if req.headers.get("authorization") != BASIC:
            return Response(401, {"WWW-Authenticate": 'Basic realm="x"'}, b"")
        return Response(200, HTML, b"<p>members only</p>")

    site.set("/", Response(200, HTML, b'<a href="/private">p</a><a href="/away">a</a>'))
    site.set("/private", private)
    site.set("/away", Response(302, {"Location": elsewhere.url("/landing")}, b""))
    elsewhere.set("/landing", Response(200, HTML, b"<p>landed</p>"))
    proc = run("crawl", site.url("/"), "--no-ui", "--delay-ms", "0", "--scope", "any",
               "-s", "allow_private=true", "--auth", "alice:s3cret", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert all(r.headers.get("authorization") == BASIC for r in site.requests)
    assert "/landing" in [r.path for r in elsewhere.requests]
    assert all("authorization" not in r.headers for r in elsewhere.requests)
    with sqlite3.connect(tmp_path / "crawl.db") as db:
        assert db.execute("SELECT status FROM pages WHERE url = ?", (site.url("/private"),))\
            .fetchone() == (200,)  # fmt: skip
        saved = "".join(row[0] for row in db.execute("SELECT config FROM runs"))
    assert "alice" in saved and "s3cret" not in saved  # the user, not the password
    warcs = list(tmp_path.glob("crawl-*.warc.gz"))
    assert warcs
    for path in warcs:
        data = gzip.decompress(path.read_bytes())
        assert b"s3cret" not in data and BASIC.encode() not in data


def test_auth_for_a_named_origin_is_not_sent_to_the_seed(
    tmp_path: Path, site: HTTPTestServer, elsewhere: HTTPTestServer
) -> None:
    site.set("/", Response(200, HTML, f'<a href="{elsewhere.url("/x")}">x</a>'.encode()))
    elsewhere.set("/x", Response(200, HTML, b"<p>x</p>"))
    proc = run("crawl", site.url("/"), "--no-ui", "--delay-ms", "0", "--scope", "any",
               "-s", "allow_private=true", "--auth", f"{elsewhere.origin}=alice:s3cret",
               cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert all("authorization" not in r.headers for r in site.requests)
    assert elsewhere.requests and all(
        r.headers.get("authorization") == BASIC for r in elsewhere.requests
    )


def test_no_warc_writes_no_warc_file(tmp_path: Path, site: HTTPTestServer) -> None:
    site.set("/", Response(200, HTML, b"<p>home</p>"))
    proc = run("crawl", site.url("/"), "--no-ui", "--no-warc", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "crawl.db").exists()
    assert list(tmp_path.glob("*.warc.gz")) == []


def test_warc_prefix_names_the_files_and_show_still_reads_them(
    tmp_path: Path, site: HTTPTestServer
) -> None:
    site.set("/", Response(200, HTML, b"<p>home page body</p>"))
    proc = run("crawl", site.url("/"), "--no-ui", "--warc-prefix", "site.v1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in tmp_path.glob("*.warc.gz")] == ["site.v1-00001.warc.gz"]
    shown = run("show", "crawl.db", site.url("/"), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "<p>home page body</p>" in shown.stdout


def _bodies(db: str, cwd: Path) -> dict[str, str]:
    """``export DB --with-body``'s bodies by URL (run in ``cwd``)."""
    proc = run("export", db, "--with-body", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return {row["url"]: row["body"] for row in map(json.loads, proc.stdout.splitlines())}


def test_warc_dir_below_and_elsewhere_show_and_export_find_the_files(
    tmp_path: Path, site: HTTPTestServer
) -> None:
    """``--warc-dir``: the files go there (made when missing), none beside the crawl
    file; ``show`` and ``export --with-body`` read them from another directory, and a
    directory below the crawl file's moves with it."""
    site.set("/", Response(200, HTML, b'<p>home page body</p><a href="/a">a</a>'))
    site.set("/a", Response(200, HTML, b"<p>page a body</p>"))
    work, other = tmp_path / "work", tmp_path / "other"
    work.mkdir()
    proc = run("crawl", site.url("/"), "--no-ui", "--warc-dir", "w/arc", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in (work / "w" / "arc").iterdir()] == ["crawl-00001.warc.gz"]
    assert list(work.glob("*.warc.gz")) == []
    with sqlite3.connect(work / "crawl.db") as conn:
        assert {f for (f,) in conn.execute("SELECT warc_file FROM pages")} == {
            "w/arc/crawl-00001.warc.gz"
        }
    assert run("show", "crawl.db", site.url("/a"), cwd=work).stdout.endswith("<p>page a body</p>\n")
    (work / "crawl.db").rename(tmp_path / "crawl.db")  # the crawl file and w/ move together
    (work / "w").rename(tmp_path / "w")
    assert _bodies(str(tmp_path / "crawl.db"), cwd=work) == {
        site.url("/"): '<p>home page body</p><a href="/a">a</a>',
        site.url("/a"): "<p>page a body</p>",
    }
    proc = run("crawl", site.url("/"), "--no-ui", "--db", "two.db", "--warc-dir", str(other),
               cwd=work)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in other.iterdir()] == ["two-00001.warc.gz"]
    shown = run("show", str(work / "two.db"), site.url("/"), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.endswith('<p>home page body</p><a href="/a">a</a>\n')
    assert _bodies("two.db", cwd=work)[site.url("/a")] == "<p>page a body</p>"


def test_warc_dir_that_cannot_be_made_or_written_is_one_line(tmp_path: Path) -> None:
    """A ``--warc-dir`` below a file, a file, or one no file can be made in: one line,
    exit 2, before the crawl file is made."""
    (tmp_path / "f").write_text("x")
    cases = [("f/sub", "--warc-dir 'f/sub': cannot make it (Not a directory)"),
             ("f", "--warc-dir 'f': not a directory")]  # fmt: skip
    if Path("/sys/kernel").is_dir():  # sysfs: no file is made there, not even by root
        cases.append(("/sys/kernel", "--warc-dir '/sys/kernel': cannot write in it ("))
    for given, message in cases:
        proc = run("crawl", "http://127.0.0.1:9/", "--no-ui", "--warc-dir", given, cwd=tmp_path)
        assert proc.returncode == 2
        assert proc.stderr.startswith(f"crawldeck crawl: error: {message}"), proc.stderr
        assert len(proc.stderr.splitlines()) == 1
        assert not (tmp_path / "crawl.db").exists()


def test_quiet_prints_the_summary_and_nothing_else(tmp_path: Path, site: HTTPTestServer) -> None:
    site.set("/", Response(200, HTML, b"<p>home</p>"))
    proc = run("crawl", site.url("/"), "--no-ui", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # not even the loopback seed's line
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("finished: nothing left to fetch")  # no progress, no log
    assert lines[-1].startswith("crawl saved in crawl.db")


@pytest.mark.parametrize("flags", [["-v"], ["--log-level", "debug"]])
def test_verbose_prints_a_line_a_url_done_as_scrapy_does(
    tmp_path: Path, site: HTTPTestServer, flags: list[str]
) -> None:
    """``-v`` (or ``--log-level`` DEBUG, in any case) prints each URL done: its status,
    size, time and links, or why it failed, as Scrapy's "Crawled (200) <GET ...>"; the
    default level does not."""
    site.set("/", Response(200, HTML, b'<a href="/a">a</a><a href="/gone">gone</a>'
                                      b'<a href="/private/x">p</a>'))  # fmt: skip
    site.set("/robots.txt", Response(200, {"Content-Type": "text/plain"},
                                     b"User-agent: *\nDisallow: /private/\n"))  # fmt: skip
    site.set("/a", Response(200, HTML, b"<p>a</p>"))
    site.set("/gone", Response(404, HTML, b"<p>no</p>"))
    proc = run("crawl", site.url("/"), "--no-ui", *flags, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    done = [line[line.index("crawled (") :] for line in out if " crawled (" in line]
    assert sorted(line.split(": ", 1)[0] for line in done) == [
        f"crawled (200) {site.url('/')}", f"crawled (200) {site.url('/a')}",
        f"crawled (404) {site.url('/gone')}",
    ]  # fmt: skip
    assert any(line.startswith(f"crawled (200) {site.url('/')}: ") and "3 links" in line
               for line in done)  # fmt: skip
    # a refused URL too, with its reason, as Scrapy's "Forbidden by robots.txt"
    assert any(f"blocked (robots) {site.url('/private/x')}" in line for line in out), out
    assert "Using selector" not in proc.stderr  # asyncio's debug line is no crawl detail
    quiet = run("crawl", site.url("/"), "--no-ui", "--db", "other.db", cwd=tmp_path)
    assert " crawled (" not in quiet.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-H", "no colon"], "argument -H/--header: expected 'Name: value'"),
        (["-H", "Cookie: a=b"], "argument -H/--header: 'Cookie' is refused"),
        (["--proxy", "ftp://p:21"], "argument --proxy: expected an http:// proxy URL"),
        (["--auth", "alice"], "argument --auth: expected USER:PASS or ORIGIN=USER:PASS"),
        (["--log-level", "LOUD"], "argument --log-level: invalid choice: 'LOUD'"),
        (["-q", "-v"], "argument -v/--verbose: not allowed with argument -q/--quiet"),
        (["--netrc"], "netrc file "),
        (["--auth", "https://a.example/x=u:p"], "argument --auth: 'https://a.example/x' is"),
        (["--warc-prefix", "../up"], "argument --warc-prefix: expected a file name stem"),
        # a flag's bad value is named by the flag, not a config key (issue #25)
        (["--include", "("], "argument --include: '(' is not a regular expression"),
        (["--user-agent", "a\tb"], "argument --user-agent: only printable ASCII"),
    ],
)
def test_a_bad_request_flag_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "NETRC": ""}  # no netrc file
    proc = subprocess.run(
        [CRAWLDECK, "crawl", "http://127.0.0.1:9/", "--no-ui", *args], cwd=tmp_path,
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("crawldeck crawl: error: ") and message in proc.stderr
    assert not (tmp_path / "crawl.db").exists()
