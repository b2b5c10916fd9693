"""``crawldeck export DB --mirror DIR [--convert-links] [-E]`` (issue #25 item 5): the
fetched bodies as a directory tree as ``wget -m`` leaves one, hostile URLs (``..``,
encoded slashes and dots, names over 255 bytes, case collisions, NUL and control
bytes, a query, a file a directory also needs) mapped safely and reversibly and never
outside DIR, and links between mirrored pages made relative as ``wget -k`` makes them.
A real crawl of a real loopback server; the naming itself tested directly."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, unquote_to_bytes, urlsplit

import pytest
from clikit import main_in
from crawlkit import html, rows, run_crawl
from httpserver import HTTPTestServer, Response
from selectolax.lexbor import LexborHTMLParser

from crawldeck.core.policy import urls
from crawldeck.core.storage.mirror import mirror_url

#: Links of the start page, as written in its HTML.
HOSTILE = (
    "/../../../../etc/passwd",
    "/a%2F..%2F..%2Fescape",
    "/%2e%2e%2foutside",
    "/x/.%2e/%2E%2E/up",
    "/" + "L" * 300,
    "/" + "%C3%A9" * 100 + "/deep",
    "/Case",
    "/case",
    "/nul%00byte",
    "/ctl%01%1F%7Fx",
    "/sp ace",
    "/q?a=1&b=/x/../y",
    "/q?a=2",
    "/dir/",
    "/dir",
    "/dir/page",
    "/a//b",
    "/caf%C3%A9",
    "/pct%25",
    "/img.png",
)


def _decoded(url: str) -> tuple[str, tuple[bytes, ...], bytes | None]:
    """``url``'s host, path segments and query as bytes, its escapes decoded."""
    parts = urlsplit(url)
    query = unquote_to_bytes(parts.query) if "?" in url else None
    return parts.netloc, tuple(unquote_to_bytes(s) for s in parts.path.split("/")), query


def _served(server: HTTPTestServer, base: str) -> dict[str, bytes]:
    """Route each hostile link at the path the crawl asks for; the URL -> body."""
    bodies: dict[str, bytes] = {}
    for href in HOSTILE:
        url = urls.clean(href, base)
        body = f"body of {url}".encode()
        bodies[url] = body
        path = urlsplit(url).path
        kind = "image/png" if href.endswith(".png") else "text/html"
        server.set(path, lambda r, b=body, k=kind: _answer(r.path, b, k, bodies))
    return bodies


def _answer(path: str, body: bytes, kind: str, bodies: dict[str, bytes]) -> Response:
    """The body of the URL with this path and query (the routes ignore the query)."""
    for url, b in bodies.items():
        parts = urlsplit(url)
        if parts.path + (f"?{parts.query}" if "?" in url else "") == path:
            return Response(200, {"Content-Type": kind}, b)
    return Response(200, {"Content-Type": kind}, body)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, bytes]]:
    """A crawl of a site whose start page links every ``HOSTILE`` URL: ``(crawl file,
    start URL, URL -> body)``."""
    tmp = tmp_path_factory.mktemp("mirror")
    with HTTPTestServer() as server:
        base = server.url("/")
        bodies = _served(server, base)
        links = "".join(f'<a href="{h}#frag">x</a><img src="{h}">' for h in HOSTILE)
        same = html("<p>the same payload twice: the second is a WARC revisit</p>")
        for path in ("/same-1", "/same-2"):
            server.set(path, same)
            bodies[server.url(path)] = same.body
        links += '<a href="/same-1">1</a><a href="/same-2">2</a><a href="/moved">3</a>'
        links += '<a href="/same-1?sessionid=42">4</a>'  # the /same-1 the crawl fetched
        server.set("/moved", Response(301, {"Location": "/same-1"}))
        start = html(f"<!DOCTYPE html><title>t</title><p>{links}</p>")
        server.set("/", start)
        bodies[base] = start.body
        server.set("/robots.txt", Response(404))
        db = tmp / "c.db"
        run_crawl([base], db, max_path_depth=10, max_url_length=4096)
    return db, base, bodies


def _mirror(
    crawl: tuple[Path, str, dict[str, bytes]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *flags: str,
) -> tuple[Path, str]:
    db = crawl[0]
    out = tmp_path / "site"
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", str(db), "--mirror",
                           str(out), *flags)  # fmt: skip
    assert code == 0, err
    return out, err


def test_the_mirror_holds_every_body_at_its_path_and_nothing_outside(
    crawl: tuple[Path, str, dict[str, bytes]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, base, served = crawl
    bodies = dict(served)
    out, err = _mirror(crawl, tmp_path, monkeypatch, capsys)
    # the crawl does not download a body that is not HTML: the image is not there; and
    # /moved, a redirect, has no body: each page is counted (issue #25 trial 9)
    assert err == (f"crawldeck: mirrored {len(bodies) - 1} files of 1 host into {out}; "
                   "skipped: no 2xx answer 1, not downloaded 1\n")  # fmt: skip
    del bodies[base + "img.png"]
    written = {}
    for folder, _, files in os.walk(out):
        for name in files:
            path = Path(folder, name)
            assert path.resolve().is_relative_to(out.resolve())
            written[path.relative_to(out).parts] = path.read_bytes()
    # every URL at its mapped path (the /dir file beside the /dir/ folder: %~), its body
    assert {_decoded("http:" + mirror_url(p)): b for p, b in written.items()} == {
        _decoded(url): body for url, body in bodies.items()
    }
    host = urls.host_key(base)
    assert written[(host, "Case")] == bodies[base + "Case"]
    assert written[(host, "case")] == bodies[base + "case"]
    assert written[(host, "dir%~")] == bodies[base + "dir"]
    assert written[(host, "dir", "index.html")] == bodies[base + "dir/"]
    assert written[(host, "a%2F..%2F..%2Fescape")] == bodies[base + "a%2F..%2F..%2Fescape"]
    assert written[(host, "nul%00byte")] == bodies[base + "nul%00byte"]
    assert written[(host, "q?a=2")] == bodies[base + "q?a=2"]
    assert written[(host, "etc", "passwd")] == bodies[base + "etc/passwd"]
    assert [p for p in written if p[1] == "L" * 240] == [(host, "L" * 240, "%+" + "L" * 60)]
    assert sorted(os.listdir(tmp_path)) == ["site"]
    # the second of two equal payloads is a WARC revisit: its body is the first's
    assert rows(crawl[0], "SELECT duplicate_of FROM pages WHERE url = ?", base + "same-2") == [
        (base + "same-1",)
    ]
    assert written[(host, "same-2")] == written[(host, "same-1")] == bodies[base + "same-1"]


def test_convert_links_points_each_link_at_its_file(
    crawl: tuple[Path, str, dict[str, bytes]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, base, bodies = crawl
    out, err = _mirror(crawl, tmp_path, monkeypatch, capsys, "--convert-links")
    # and /same-1, /same-2, /moved (a redirect to /same-1) and /same-1?sessionid=42
    # (the /same-1 the crawl fetched for it, issue #25 trial 13), each made a link to a file
    assert f"; {2 * (len(HOSTILE) - 1) + 4} links made relative, 2 to pages" in err
    index = out / urls.host_key(base) / "index.html"
    tree = LexborHTMLParser(index.read_text())
    hrefs = [n.attributes["href"] or "" for n in tree.css("a")][: len(HOSTILE)]
    srcs = [n.attributes["src"] or "" for n in tree.css("img")]
    assert len(hrefs) == len(srcs) == len(HOSTILE)
    assert [n.attributes["href"] for n in tree.css("a")][len(HOSTILE) :] == [
        "same-1", "same-2", "same-1", "same-1",
    ]  # fmt: skip
    for href, src, hostile in zip(hrefs, srcs, HOSTILE, strict=True):
        assert href == src + "#frag"
        if hostile == "/img.png":  # not mirrored (not downloaded): absolute, as wget -k
            assert src == base + "img.png"
            continue
        assert "://" not in src and not src.startswith("/")
        # as a browser opens the link from the file: the target file, its body
        target = (index.parent / unquote(src)).resolve()
        assert target.is_relative_to(out.resolve())
        assert target.read_bytes() == bodies[urls.clean(hostile, base)], hostile


def test_adjust_extension_names_html_pages_dot_html_and_links_follow(
    crawl: tuple[Path, str, dict[str, bytes]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``-E`` (wget's ``--adjust-extension``): an HTML page's file ends in ``.html``
    (issue #25: a trial's extensionless page opened as text from disk); a name that ends
    in ``.html`` already is left; ``--convert-links`` points at the adjusted names."""
    _, base, bodies = crawl
    out, err = _mirror(crawl, tmp_path, monkeypatch, capsys, "-E", "--convert-links")
    folder = out / urls.host_key(base)
    assert (folder / "same-1.html").read_bytes() == bodies[base + "same-1"]
    assert (folder / "Case.html").read_bytes() == bodies[base + "Case"]
    assert (folder / "q?a=2.html").read_bytes() == bodies[base + "q?a=2"]
    assert (folder / "dir" / "index.html").read_bytes() == bodies[base + "dir/"]
    assert not (folder / "same-1").exists() and not (folder / "index.html.html").exists()
    tree = LexborHTMLParser((folder / "index.html").read_text())
    assert [n.attributes["href"] for n in tree.css("a")][len(HOSTILE) :] == [
        "same-1.html", "same-2.html", "same-1.html", "same-1.html",
    ]  # fmt: skip
    assert "was not empty" not in err
    # again without -E into the same DIR: the -E names stay, and the line says why
    again, err = _mirror(crawl, tmp_path, monkeypatch, capsys)
    assert (folder / "same-1").exists() and (folder / "same-1.html").exists()
    assert err.endswith(
        f"crawldeck: note: {again} was not empty: files this export did not write are left "
        "as they were (remove it first for a mirror of this crawl only)\n"
    )
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", str(crawl[0]), "-E")
    assert code == 2 and err.endswith("--adjust-extension goes with --mirror DIR\n")


def test_a_symlink_planted_in_dir_is_not_followed(
    crawl: tuple[Path, str, dict[str, bytes]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, base, _ = crawl
    outside = tmp_path / "outside"
    outside.mkdir()
    host_dir = tmp_path / "site" / urls.host_key(base)
    host_dir.mkdir(parents=True)
    (host_dir / "dir").symlink_to(outside)
    (host_dir / "Case").symlink_to(outside / "case-file")
    _, err = _mirror(crawl, tmp_path, monkeypatch, capsys)
    # dir/index.html, dir/page, Case refused; /moved a redirect
    assert (
        "skipped: a symlink or file in the way (not followed) 3, no 2xx answer 1, "
        "not downloaded 1" in err
    )
    assert list(outside.iterdir()) == []
    # every file in the way: nothing mirrored, an error a script sees (issue #25 trial
    # 18: "mirrored 0 files ... refused 63", exit 0)
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / urls.host_key(base)).symlink_to(outside)
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", str(crawl[0]), "--mirror",
                           str(planted))  # fmt: skip
    assert code == 1
    assert err.splitlines()[-1] == (
        f"crawldeck export: error: nothing mirrored: {planted} holds symbolic links or "
        "files where the mirror's folders or files go, and the mirror follows or "
        "overwrites none: mirror into a new directory"
    )
    assert list(outside.iterdir()) == []


def test_mirror_refusals_are_one_line(
    crawl: tuple[Path, str, dict[str, bytes]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = str(crawl[0])
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", db, "--convert-links")
    assert (code, err) == (2, "crawldeck export: error: --convert-links goes with --mirror DIR\n")
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", db, "--mirror", "m", "-o", "x")
    assert code == 2 and err.count("\n") == 1 and "--mirror writes a directory" in err
    (tmp_path / "file").write_text("x")
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", db, "--mirror", "file")
    assert (code, err.count("\n")) == (2, 1) and "--mirror 'file' is a file, not a directory" in err


def test_a_crawl_without_warc_files_says_why_nothing_is_mirrored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with HTTPTestServer() as server:
        server.set("/", html('<a href="/a">a</a>'))
        server.set("/a", html("a"))
        server.set("/robots.txt", Response(404))
        run_crawl([server.url("/")], tmp_path / "c.db", warc=False)
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", "c.db", "--mirror", "m")
    # a mirror of nothing exits 1: a script must see it (issue #25 trial 8)
    assert (code, err.splitlines()) == (
        1,
        [
            "crawldeck: mirrored 0 files of 0 hosts into m; skipped: no WARC record 2",
            "crawldeck export: error: nothing mirrored: the bodies come from the crawl's "
            "WARC files, and it was crawled with WARC off (--no-warc or warc = false)",
        ],
    )
    assert list((tmp_path / "m").iterdir()) == []


def test_a_page_the_crawl_cut_is_mirrored_as_cut_and_the_line_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #25 trial 16: a 30 MB page cut at ``max_body_bytes`` was mirrored as its
    first 10 MiB without a word; the line counts the partial files."""
    cap = 64 * 1024
    big = b"<html><body>" + b"<p>filler</p>" * 20_000 + b"</body></html>"
    with HTTPTestServer() as server:
        server.set("/", html('<a href="/big">big</a>'))
        server.set("/big", Response(200, {"Content-Type": "text/html"}, big))
        server.set("/robots.txt", Response(404))
        run_crawl([server.url("/")], tmp_path / "c.db", max_body_bytes=cap)
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", "c.db", "--mirror", "m")
    assert code == 0
    assert err.splitlines()[0] == (
        "crawldeck: mirrored 2 files of 1 host into m; 1 file cut at the crawl's max_body_bytes"
    )
    host = urlsplit(server.url("/")).netloc
    assert (tmp_path / "m" / host / "big").read_bytes() == big[:cap]


def test_a_crawl_whose_warc_files_are_gone_says_so_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """WARC files deleted after the crawl: each page is skipped as ``WARC file missing``
    and the command exits 1; with one page's file back, that page is mirrored and the
    exit is 0 (issue #25 trial 8: it exited 0 having written nothing)."""
    with HTTPTestServer() as server:
        server.set("/", html('<a href="/a">a</a>'))
        server.set("/a", html("a"))
        server.set("/robots.txt", Response(404))
        run_crawl([server.url("/")], tmp_path / "c.db")
    warcs = sorted(tmp_path.rglob("*.warc.gz"))
    assert warcs
    kept = {w: w.read_bytes() for w in warcs}
    for w in warcs:
        w.unlink()
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", "c.db", "--mirror", "m")
    assert (code, err.splitlines()) == (
        1,
        [
            "crawldeck: mirrored 0 files of 0 hosts into m; skipped: WARC file missing 2",
            "crawldeck export: error: nothing mirrored: the bodies come from the crawl's "
            "WARC files, and the WARC files it names are not beside c.db",
        ],
    )
    for w, body in kept.items():
        w.write_bytes(body)
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", "c.db", "--mirror", "m")
    assert (code, err) == (0, "crawldeck: mirrored 2 files of 1 host into m\n")


def test_a_page_whose_file_another_url_took_is_named_with_that_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``/d/`` and ``/d/index.html`` are one file: the second is skipped, and the line
    says whose file it is (issue #25: the reason was a bare "same file")."""
    with HTTPTestServer() as server:
        base = server.url("/")
        server.set("/", html('<a href="/d/">d</a> <a href="/d/index.html">i</a>'))
        server.set("/d/", html("<p>the directory</p>"))
        server.set("/d/index.html", html("<p>its index</p>"))
        server.set("/robots.txt", Response(404))
        db = tmp_path / "c.db"
        run_crawl([base], db)
    out = tmp_path / "site"
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", str(db), "--mirror", str(out))
    assert code == 0, err
    first, second = base + "d/", base + "d/index.html"
    assert err.splitlines() == [
        f"crawldeck: mirrored 2 files of 1 host into {out}; skipped: same file as another URL 1",
        f"  {second}: same file as {first}",
    ]
    assert (out / urls.host_key(base) / "d" / "index.html").read_bytes() == b"<p>the directory</p>"
    # --convert-links: a link to the skipped URL leads to the file it shares, relative
    # (issue #25: a trial saw http://H/index.html written absolute, off the mirror)
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", str(db), "--mirror", str(out),
                           "--convert-links")  # fmt: skip
    assert code == 0, err
    index = LexborHTMLParser((out / urls.host_key(base) / "index.html").read_text())
    assert [n.attributes["href"] for n in index.css("a")] == ["d/index.html", "d/index.html"]


def test_a_link_through_a_redirect_chain_leads_to_the_file_at_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``/r1`` redirects to ``/r2``, which redirects to ``/b.html``: with
    ``--convert-links`` a link to ``/r1`` is ``b.html``, as wget converts it (issue #25
    trial 10: it stayed ``http://HOST/r1``)."""
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", html('<a href="/r1">r</a>'))
        server.set("/r1", Response(302, {"Location": "/r2"}))
        server.set("/r2", Response(301, {"Location": "/b.html"}))
        server.set("/b.html", html("<p>b</p>"))
        base = server.url("/")
        run_crawl([base], tmp_path / "c.db")
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", "c.db", "--mirror", "m",
                           "--convert-links")  # fmt: skip
    assert code == 0, err
    index = LexborHTMLParser((tmp_path / "m" / urls.host_key(base) / "index.html").read_text())
    assert [n.attributes["href"] for n in index.css("a")] == ["b.html"]


def test_a_query_in_a_latin1_pages_link_is_fetched_and_mirrored_in_latin1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #25 trial 18: ``?name=café`` on a Latin-1 page went out as UTF-8; a browser,
    Scrapy and wget send ``caf%E9``. The mirror's ``--convert-links`` reads the link
    the same way, so it leads to the file of the URL fetched."""
    latin = {"Content-Type": "text/html; charset=iso-8859-1"}
    with HTTPTestServer() as server:
        server.set("/robots.txt", Response(404))
        server.set("/", Response(200, latin, '<a href="/q?name=café">q</a>'.encode("latin-1")))
        server.set("/q", html("<p>q</p>"))
        base = server.url("/")
        run_crawl([base], tmp_path / "c.db")
        sent = [r.path for r in server.requests if r.path.startswith("/q")]
    assert sent == ["/q?name=caf%E9"]
    # -k, as wget's (issue #25 trial 18: refused with a hint to --convert-links)
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "export", "c.db", "--mirror", "m", "-k")
    assert code == 0, err
    host = tmp_path / "m" / urls.host_key(base)
    index = LexborHTMLParser((host / "index.html").read_bytes().decode("latin-1"))
    (href,) = [n.attributes["href"] for n in index.css("a")]
    assert href is not None and not href.startswith("http")
    assert (host / unquote(href)).is_file()
