"""Broken links as a link checker shows them (issue #25 item 4): the ``broken_links``
view, ``crawldeck links DB --broken [--json]`` and the end-of-crawl summary, on a real
loopback site with known broken links (404, 500, a refused host, a name that does not
exist, a redirect to a 404); a URL robots.txt refused is not broken.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from clikit import main_in, run
from crawlkit import html, rows
from dnsserver import DnsmasqServer
from httpserver import HTTPTestServer, Request, Response

from crawldeck.core.storage.link_report import broken_count
from crawldeck.core.storage.store import Store
from loopback.test_crawl_outcomes import closed_port


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A crawl of a site of known broken links through the CLI (a real process, the
    headless summary on its stdout): ``(crawl file, seed, the crawl's stdout)``."""
    tmp = tmp_path_factory.mktemp("links")
    with (
        HTTPTestServer() as server,
        DnsmasqServer(
            tmp, {"www.crawl.test": ["127.0.0.1"], "refused.crawl.test": ["127.0.0.1"]}
        ) as dns,
    ):
        port = server.port
        robots = b"User-agent: *\nDisallow: /private\n"
        server.set("/robots.txt", Response(200, {"Content-Type": "text/plain"}, robots))
        home = (
            '<a href="/ok">ok</a> <a href="/missing">m</a> <a href="/boom">b</a>'
            ' <a href="/private">p</a> <a href="/moved">r</a>'
            f' <a href="http://refused.crawl.test:{closed_port()}/">x</a>'
            f' <a href="http://gone.crawl.test:{port}/">g</a>'
        )
        server.set("/", html(home))
        server.set(
            "/ok",
            html('<a href="/missing">again</a> <a href="/">home</a> <a href="/private">p</a>'),
        )
        server.set("/missing", Response(404, {"Content-Type": "text/html"}, b"no"))
        server.set("/boom", Response(500, {"Content-Type": "text/html"}, b"oops"))
        server.set("/moved", Response(301, {"Location": "/missing2"}))
        server.set("/missing2", Response(404, {"Content-Type": "text/html"}, b"no"))
        (tmp / "fast.toml").write_text(
            f'max_retries = 0\nallow_private = true\ndns_nameservers = ["{dns.nameserver}"]\n'
        )
        seed = f"http://www.crawl.test:{port}/"
        proc = run(
            "crawl", seed, "--no-ui", "--db", "c.db", "--delay-ms", "0", "--config", "fast.toml",
            cwd=tmp,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return tmp / "c.db", seed, proc.stdout


def test_the_view_holds_each_broken_link_with_its_referring_page(
    site: tuple[Path, str, str],
) -> None:
    db, seed, _ = site
    found = rows(db, "SELECT from_url, to_url, status, error FROM broken_links")
    port = seed.rsplit(":", 1)[1].rstrip("/")
    (refused,) = [u for (u,) in rows(db, "SELECT url FROM pages") if "refused" in u]
    shown = {(f, t, s, None if e is None else e.split(":", 1)[0]) for f, t, s, e in found}
    assert shown == {
        (seed, f"{seed}boom", 500, None),
        (seed, f"{seed}missing", 404, None),
        (f"{seed}ok", f"{seed}missing", 404, None),
        (seed, f"{seed}moved", 404, None),  # a 301 to a 404: the link on the page
        (seed, refused, None, "connect"),
        (seed, f"http://gone.crawl.test:{port}/", None, "dns"),
    }
    assert len(shown) == 6  # the refused host is there too
    assert rows(db, "SELECT final_url FROM broken_links WHERE to_url = ?", f"{seed}moved") == [
        (f"{seed}missing2",)
    ]
    # robots.txt refused /private: never fetched, so not broken; it is in blocked
    assert rows(db, "SELECT reason FROM blocked WHERE url = ?", f"{seed}private") == [("robots",)]


def test_links_broken_lists_them_and_exits_1(site: tuple[Path, str, str]) -> None:
    db, seed, _ = site
    proc = run("links", str(db), "--broken", cwd=db.parent)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert f'HTTP 404  {seed}missing  from {seed}  "m"' in lines  # the anchor text last
    assert f'HTTP 404  {seed}missing  from {seed}ok  "again"' in lines
    assert f'HTTP 500  {seed}boom  from {seed}  "b"' in lines
    assert f'HTTP 404 (redirected to {seed}missing2)  {seed}moved  from {seed}  "r"' in lines
    assert any(line.startswith("dns") and "gone.crawl.test" in line for line in lines)
    (connect,) = [line for line in lines if line.startswith("connect")]
    # the host:port it tried, then the link once (the error's own ": URL" not repeated)
    assert connect.count("refused.crawl.test") == 2 and "Connect call failed" not in connect
    assert "[Errno 111] Connection refused  http://refused.crawl.test:" in connect
    assert len(lines) == 6
    assert proc.stderr == (
        "crawldeck: 6 broken links to 5 URLs; not broken, never fetched (refused): "
        "robots 2 links to 1 URL\n"  # two pages link to /private: links, then URLs
    )
    as_json = run("links", str(db), "--broken", "--json", cwd=db.parent)
    objects = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert {"from_url": seed, "to_url": f"{seed}boom", "status": 500, "error": None,
            "final_url": f"{seed}boom", "blocked": None, "anchor": "b",
            "fetched_as": None} in objects  # fmt: skip
    assert len(objects) == 6
    # the URL is a field of its own: the error does not end with it again (issue #25)
    (failed,) = [o for o in objects if o["error"] and o["error"].startswith("connect")]
    assert failed["error"].endswith("Connection refused"), failed


def test_links_without_broken_shows_every_link_and_the_robots_refusal(
    site: tuple[Path, str, str],
) -> None:
    db, seed, _ = site
    proc = run("links", str(db), cwd=db.parent)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert f'blocked: robots  {seed}private  from {seed}  "p"' in lines
    assert f'HTTP 200  {seed}ok  from {seed}  "ok"' in lines
    # a redirect says where it went (issue #25 trial 7: only --broken did)
    assert f'HTTP 301 (redirected to {seed}missing2)  {seed}moved  from {seed}  "r"' in lines
    assert f"HTTP 404  {seed}missing2  from {seed}moved" in lines  # a redirect: no text
    assert len(lines) == len(rows(db, "SELECT * FROM links"))


def test_the_summary_counts_them_and_shows_the_first(site: tuple[Path, str, str]) -> None:
    """The summary's broken links: how many, then grouped by what the target got with
    each group's count, the largest first, and its first links with their text."""
    _, seed, out = site
    lines = out.splitlines()
    (first,) = [n for n, line in enumerate(lines) if line.startswith("broken links: ")]
    assert re.fullmatch(
        r"broken links: 6 links to 5 URLs \(all of them: \S*crawldeck links c\.db --broken\)",
        lines[first],
    ), lines[first]
    groups = [line for line in lines[first + 1 :] if re.match(r"  \S", line)]
    assert groups[0] == "  HTTP 404: 3 links to 2 URLs"
    assert sorted(groups[1:]) == ["  HTTP 500: 1", "  connect: 1", "  dns: 1"]
    # one link to each URL first, then the second ones (issue #25 trial 13)
    assert lines[first + 2 : first + 5] == [
        f'    HTTP 404  {seed}missing  from {seed}  "m"',
        f'    HTTP 404 (redirected to {seed}missing2)  {seed}moved  from {seed}  "r"',
        f'    HTTP 404  {seed}missing  from {seed}ok  "again"',
    ]
    assert f'    HTTP 500  {seed}boom  from {seed}  "b"' in lines


def test_a_file_made_before_the_view_gets_it_on_open(
    site: tuple[Path, str, str], tmp_path: Path
) -> None:
    old = tmp_path / "old.db"
    with sqlite3.connect(site[0]) as src, sqlite3.connect(old) as dst:
        src.backup(dst)
    with sqlite3.connect(old) as conn:
        conn.execute("DROP VIEW broken_links")
    # read-only, before any crawl reopens it: the report reads it all the same
    proc = run("links", str(old), "--broken", cwd=tmp_path)
    assert len(proc.stdout.splitlines()) == 6
    Store(old).close()
    assert rows(old, "SELECT count(*) FROM broken_links") == [(6,)]


def test_links_count_the_links_a_stopped_crawl_did_not_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #25: a crawl stopped by --max-pages 1 checked none of the home page's 4
    links; links --broken says so rather than leave them out."""
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a>'
                             ' <a href="/missing">m</a>'))  # fmt: skip
        code, _, _ = main_in(
            tmp_path, monkeypatch, capsys, "crawl", server.url("/"), "--no-ui", "--db", "c.db",
            "--delay-ms", "0", "--max-pages", "1", "-s", "allow_private=true",
        )  # fmt: skip
    assert code == 0
    unchecked = "4 links not checked: the crawl stopped before fetching them"
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "links", "c.db", "--broken")
    assert (code, out, err) == (0, "", f"crawldeck: 0 broken links to 0 URLs; {unchecked}\n")
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "links", "c.db")
    assert code == 0 and err == f"crawldeck: 4 links to 4 URLs; {unchecked}\n"
    assert [line.split("  ")[0] for line in out.splitlines()] == ["not fetched"] * 4


def test_a_recrawl_checks_a_broken_link_again(tmp_path: Path) -> None:
    """The missing page is made after the crawl: a recrawl fetches it again (a 4xx is
    revisited, as a link checker checks again) and ``links --broken`` lists no link
    (issue #25 trial 9: it kept the 404, and a rerun said only "nothing left to fetch")."""
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="/missing">m</a> <a href="/gone">g</a>'))
        server.set("/missing", Response(404, {"Content-Type": "text/html"}, b"no"))
        server.set("/gone", Response(410, {"Content-Type": "text/html"}, b"gone"))
        seed = server.url("/")
        crawl = ("crawl", seed, "--no-ui", "--db", "c.db", "--delay-ms", "0")
        assert run(*crawl, cwd=tmp_path).returncode == 0
        assert run("links", "c.db", "--broken", cwd=tmp_path).returncode == 1
        server.set("/missing", html("here now"))
        again = run("recrawl", "c.db", "--no-ui", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert "recrawl: 3 revisited" in again.stdout, again.stdout
        fetched = [r.path for r in server.requests if r.path not in ("/robots.txt", "/sitemap.xml")]
    assert sorted(fetched) == ["/", "/", "/gone", "/gone", "/missing", "/missing"]
    broken = run("links", "c.db", "--broken", cwd=tmp_path)
    assert broken.stdout.splitlines() == [f'HTTP 410  {seed}gone  from {seed}  "g"']
    assert rows(tmp_path / "c.db", "SELECT status FROM pages WHERE url = ?", seed + "missing") == [
        (200,)
    ]


def test_an_href_that_is_no_url_is_a_broken_link(tmp_path: Path) -> None:
    """``http://[bad`` cannot be parsed: it is blocked as ``bad_url`` and listed as a
    broken link of the page it is on, with its anchor text, as linkchecker reports an
    invalid URL; a ``mailto:`` is neither (issue #25 trial 9: neither ``links`` nor
    ``--broken`` showed it)."""
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="http://[bad">odd</a> <a href="mailto:me@x.test">me</a>'))
        seed = server.url("/")
        proc = run("crawl", seed, "--no-ui", "--db", "c.db", "--delay-ms", "0", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    broken = run("links", "c.db", "--broken", cwd=tmp_path)
    assert broken.returncode == 1, broken.stderr
    (line,) = broken.stdout.splitlines()
    assert line.startswith("bad_url: ") and line.endswith(f'  http://[bad  from {seed}  "odd"')
    assert "1 broken link to 1 URL" in broken.stderr
    assert "bad_url" in proc.stdout  # the end-of-crawl summary's broken links


def test_a_redirect_with_no_location_is_a_broken_link(tmp_path: Path) -> None:
    """A 302 with no Location, or an empty one, leads nowhere: listed as broken with its
    reason, as wget says "Redirection (302) without location" (issue #25 trial 20: both
    were plain 302s, and ``--broken`` did not list them)."""
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="/noloc">n</a> <a href="/emptyloc">e</a>'))
        server.set("/noloc", Response(302, {}, b""))
        server.set("/emptyloc", Response(302, {"Location": ""}, b""))
        seed = server.url("/")
        proc = run("crawl", seed, "--no-ui", "--db", "c.db", "--delay-ms", "0", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert rows(
        tmp_path / "c.db", "SELECT url, status, error FROM pages WHERE status = 302 ORDER BY url"
    ) == [
        (server.url(path), 302, "redirect_no_location: HTTP 302 with no Location to follow")
        for path in ("/emptyloc", "/noloc")
    ]
    broken = run("links", "c.db", "--broken", cwd=tmp_path)
    assert broken.returncode == 1, broken.stderr
    assert sorted(broken.stdout.splitlines()) == [
        f"HTTP 302: redirect_no_location: HTTP 302 with no Location to follow  {server.url(path)}"
        f'  from {seed}  "{anchor}"'
        for path, anchor in (("/emptyloc", "e"), ("/noloc", "n"))
    ]


def test_links_says_when_a_pages_links_were_read_in_part(tmp_path: Path) -> None:
    """Links are read from the first ``parse_max_bytes`` of a page: a 404 linked past
    them is in no report, and ``links`` says so rather than "0 broken links" alone
    (issue #25 trial 20: a 425 KiB page's broken link went unreported)."""
    padding = "<p>" + "x" * 100 + "</p>\n"
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html(padding * 400 + '<a href="/missing">late</a>'))  # 42 kB
        server.set("/missing", Response(404, {"Content-Type": "text/html"}, b"no"))
        seed = server.url("/")
        proc = run("crawl", seed, "--no-ui", "--db", "c.db", "--delay-ms", "0",
                   "-s", "parse_max_bytes=32768", cwd=tmp_path)  # fmt: skip
        assert server.count("/missing") == 0
    assert proc.returncode == 0, proc.stderr
    broken = run("links", "c.db", "--broken", cwd=tmp_path)
    assert (broken.returncode, broken.stdout) == (0, "")
    assert broken.stderr == (
        "crawldeck: 0 broken links to 0 URLs; 1 page read for links in part, those past"
        " the cut not checked (-s parse_max_bytes=4194304 or max_links_per_page=N reads"
        " more)\n"
    )


def test_a_link_left_queued_behind_a_parked_host_says_why(tmp_path: Path) -> None:
    """A 429 with Retry-After 7200 parks the host: the link it left queued is "not
    fetched yet: its host parked", not a bare "not fetched" (issue #25 trial 20)."""
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="/a">a</a> <a href="/b">b</a>'))  # /a first
        server.set("/a", Response(429, {"Retry-After": "7200"}, b""))
        seed = server.url("/")
        proc = run("crawl", seed, "--no-ui", "--db", "c.db", "--delay-ms", "0",
                   "-s", "sitemaps=false", cwd=tmp_path)  # fmt: skip
        assert (server.count("/a"), server.count("/b")) == (1, 0)
    assert proc.returncode == 0, proc.stderr
    assert rows(tmp_path / "c.db", "SELECT state FROM hosts") == [("parked",)]
    # the run says what it left and how to go on (trial 22: "nothing left to fetch")
    assert (
        proc.stdout.startswith(
            "finished this run: 1 URL left queued for the next run (a parked host's: see the"
            " warnings)\n"
        )
        or "\nfinished this run: 1 URL left queued for the next run" in proc.stdout
    )
    assert re.search(r"queued \(left\)\s*│ 1\s*│", proc.stdout), proc.stdout
    assert "\nresume with: " in proc.stdout
    listed = run("links", "c.db", cwd=tmp_path)
    assert listed.stdout.splitlines() == [
        # its answer parked the host
        f'HTTP 429: gave up after 1 try  {server.url("/a")}  from {seed}  "a"',
        f'not fetched yet: its host parked  {server.url("/b")}  from {seed}  "b"',
    ]


def test_a_seed_that_failed_is_listed_as_a_broken_start_url(tmp_path: Path) -> None:
    """No page links to a seed: ``links --broken`` lists a failed one on its own, as
    linkchecker lists its start URL (issue #25 trial 11: a 401 seed, "0 broken links",
    exit 0); a seed that some page links to is listed once, by that link."""
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="/gone">g</a>'))
        server.set("/gone", Response(404, {"Content-Type": "text/html"}, b"no"))
        server.set("/locked", Response(401, {"Content-Type": "text/html"}, b"who?"))
        seeds = [server.url("/locked"), server.url("/"), server.url("/gone")]
        (tmp_path / "seeds.txt").write_text("\n".join(seeds) + "\n")
        proc = run("crawl", "seeds.txt", "--no-ui", "--db", "c.db", "--delay-ms", "0", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    broken = run("links", "c.db", "--broken", cwd=tmp_path)
    assert broken.returncode == 1, broken.stderr
    assert broken.stdout.splitlines() == [
        f'HTTP 404  {seeds[2]}  from {seeds[1]}  "g"',
        f"HTTP 401  {seeds[0]}  a seed",
    ]
    as_json = run("links", "c.db", "--broken", "--json", cwd=tmp_path)
    rows = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [(r["from_url"], r["to_url"], r["status"]) for r in rows][-1] == (None, seeds[0], 401)
    # the end-of-crawl summary and the console count what links --broken lists: the
    # seed too (trial 15: "broken links: 4" beside 5 listed, a refused seed left out)
    assert "\nbroken links: 2 (all of them: " in proc.stdout, proc.stdout
    assert f"\n    HTTP 401  {seeds[0]}  a seed\n" in proc.stdout
    assert broken_count(tmp_path / "c.db") == 2


def test_a_recrawl_says_up_front_which_failed_urls_it_tries_again(tmp_path: Path) -> None:
    """A page that answered 503 to the crawl is tried again by the recrawl, as by any
    run: its first line says so, so that its last line's revisits add up (issue #25
    trial 11: "24 pages to revisit" then "25 revisited")."""
    down = [True]

    def flaky(request: Request) -> Response:
        return Response(503, {}, b"down") if down[0] else html("back")

    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="/flaky">f</a>'))
        server.set("/flaky", flaky)
        (tmp_path / "fast.toml").write_text("max_retries = 0\n")
        crawl = ("crawl", server.url("/"), "--no-ui", "--db", "c.db", "--delay-ms", "0",
                 "--config", "fast.toml")  # fmt: skip
        assert run(*crawl, cwd=tmp_path).returncode == 0
        down[0] = False
        again = run("recrawl", "c.db", "--no-ui", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    assert lines[0] == "crawldeck recrawl: 1 page to revisit; 1 URL that failed before tried again"
    assert lines[-1].startswith("recrawl: 2 revisited: ")
