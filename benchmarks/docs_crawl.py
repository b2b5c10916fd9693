"""Real input: crawl the Python and Django docs from Debian's packages, served on loopback.

    .venv/bin/python benchmarks/docs_crawl.py            # install/find, serve, crawl, check
    .venv/bin/python benchmarks/docs_crawl.py --serve-only   # just serve (installs nothing)

Three hosts on port 8780: 127.78.0.1 the Python standard library docs (python3-doc,
robots.txt disallows /whatsnew/), 127.78.0.2 the Django docs (python-django-doc,
disallows /releases/), 127.78.0.3 a small portal linking to both (disallows /private/).
A real ``crawldeck crawl --no-ui`` process crawls them with a 1 ms politeness delay.

Prints pages, pages/s, peak RSS of the crawler, and three checks: no disallowed URL was
requested and no URL was requested twice (from the servers' own access logs), and every
HTML page reachable from the seeds without crossing a disallowed directory was fetched
(the reachable set is computed independently from the files on disk, with the standard
library's HTML parser).
Exits 1 if a check fails.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter, deque
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from crawldeck.localweb.static import StaticSite

PORT = 8780
PYTHON_DOCS = Path("/usr/share/doc/python3/html")
DJANGO_DOCS = Path("/usr/share/doc/python-django-doc/html")
PORTAL_HTML = """<!doctype html><html><head><title>Docs portal</title></head><body>
<h1>Local documentation</h1>
<ul><li><a href="http://127.78.0.1:{port}/index.html">Python</a></li>
<li><a href="http://127.78.0.2:{port}/index.html">Django</a></li>
<li><a href="/private/notes.html">Private notes</a></li>
<li><a href="/about.html">About</a></li></ul></body></html>"""
ABOUT_HTML = """<!doctype html><html><head><title>About</title></head><body>
<p>Served on loopback for crawldeck's real-input benchmark.</p><a href="/">Home</a>
</body></html>"""


class _Links(HTMLParser):
    """Collects ``<a href>`` values (an independent parser: not crawldeck's)."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("a", "area"):
            for name, value in attrs:
                if name == "href" and value:
                    self.hrefs.append(value.strip())


def ensure_docs(*, install: bool) -> None:
    """Install python3-doc and python-django-doc with apt-get if they are missing (root,
    and only when ``install``: ``--serve-only`` installs nothing, it says what to do)."""
    packages = {"python3-doc": PYTHON_DOCS, "python-django-doc": DJANGO_DOCS}
    missing = [name for name, home in packages.items() if not (home / "index.html").exists()]
    if not missing:
        return
    if not install or os.geteuid() != 0 or shutil.which("apt-get") is None:
        # only what is missing (a trial had python3-doc and was told to install it)
        sys.exit(
            f"docs_crawl: install {' and '.join(missing)} first "
            f"(apt-get install {' '.join(missing)}, as root)"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, env=env)


def reachable(sites: dict[str, tuple[Path, str]], seeds: list[str]) -> set[str]:
    """HTML page URLs reachable from ``seeds`` over same-site links, never entering a
    disallowed directory; ``sites`` maps ``host:port`` -> (root, disallowed prefix)."""
    found: set[str] = set()
    queue = deque(seeds)
    while queue:
        url = queue.popleft()
        parts = urlsplit(url)
        site = sites.get(parts.netloc)
        if site is None or url in found:
            continue
        root, disallowed = site
        path = unquote(parts.path) or "/"
        if path.startswith(disallowed):
            continue
        file = root / path.lstrip("/")
        if file.is_dir():
            file = file / "index.html"
        if file.suffix != ".html" or not file.is_file():
            continue
        found.add(url)
        parser = _Links()
        parser.feed(file.read_text(encoding="utf-8", errors="replace"))
        for href in parser.hrefs:
            target = urljoin(url, href).split("#", 1)[0]
            if target.startswith("http://") and "?" not in target:
                queue.append(target)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--serve-only", action="store_true", help="serve until Ctrl-C")
    parser.add_argument("--delay-ms", type=int, default=1, help="politeness delay (ms)")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    ensure_docs(install=not args.serve_only)
    work = Path(tempfile.mkdtemp(prefix="crawldeck-docs-"))
    portal = work / "portal"
    (portal / "private").mkdir(parents=True)
    (portal / "index.html").write_text(PORTAL_HTML.format(port=PORT))
    (portal / "about.html").write_text(ABOUT_HTML)
    (portal / "private" / "notes.html").write_text(ABOUT_HTML)
    layout = {
        "127.78.0.1": (PYTHON_DOCS, "/whatsnew/"),
        "127.78.0.2": (DJANGO_DOCS, "/releases/"),
        "127.78.0.3": (portal, "/private/"),
    }
    servers = [
        StaticSite(root, address, PORT, robots_txt=f"User-agent: *\nDisallow: {prefix}\n")
        for address, (root, prefix) in layout.items()
    ]
    try:
        for server in servers:
            server.start()
    except OSError as exc:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
        sys.exit(f"docs_crawl: cannot serve on port {PORT}: {exc.strerror} (another docs_crawl?)")
    try:
        seeds = [f"http://{address}:{PORT}/index.html" for address in layout]
        if args.serve_only:
            print("serving:", *seeds, sep="\n  ")
            while True:
                time.sleep(3600)
        return crawl(args, work, seeds, layout, servers)
    except KeyboardInterrupt:
        return 0
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


def crawl(
    args: argparse.Namespace,
    work: Path,
    seeds: list[str],
    layout: dict[str, tuple[Path, str]],
    servers: list[StaticSite],
) -> int:
    seeds_file = work / "seeds.txt"
    seeds_file.write_text("\n".join(seeds) + "\n")
    db = work / "docs.db"
    crawldeck = Path(sys.executable).parent / "crawldeck"
    command = [
        str(crawldeck), "crawl", str(seeds_file), "--no-ui", "--db", str(db),
        "--delay-ms", str(args.delay_ms), "--concurrency", str(args.concurrency),
        "--max-depth", "100",
    ]  # fmt: skip
    print("$", " ".join(command), flush=True)
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    peak_rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        print(proc.stdout, proc.stderr, sep="\n")
        return 1
    conn = sqlite3.connect(db)
    pages = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
    html = {u for (u,) in conn.execute("SELECT url FROM pages WHERE content_type = 'text/html'")}
    by_reason = dict(conn.execute("SELECT reason, count(*) FROM blocked GROUP BY reason"))
    conn.close()
    sites = {f"{address}:{PORT}": value for address, value in layout.items()}
    expected = reachable(sites, seeds)
    missing = expected - html
    repeated = [
        f"{server.host_key}{path}"
        for server in servers
        for path, n in Counter(a.path for a in server.access_log()).items()
        if n > 1 and path != "/robots.txt"
    ]
    bad_requests = [
        f"{server.host_key}{a.path}"
        for server, (_, prefix) in zip(servers, layout.values(), strict=True)
        for a in server.access_log()
        if a.path.startswith(prefix)
    ]
    print(f"pages fetched        {pages} ({len(html)} HTML, {pages - len(html)} other files)")
    print(f"elapsed              {elapsed:.1f} s")
    print(f"pages/s              {pages / elapsed:.1f}")
    print(f"peak RSS (crawler)   {peak_rss_kib / 1024:.1f} MiB")
    print(f"blocked by reason    {by_reason}")
    print(f"reachable HTML pages {len(expected)}; fetched {len(expected & html)}")
    print(f"check: disallowed URLs requested: {len(bad_requests)} {bad_requests[:5]}")
    print(f"check: reachable HTML pages not fetched: {len(missing)} {sorted(missing)[:5]}")
    print(f"check: URLs requested more than once: {len(repeated)} {repeated[:5]}")
    ok = not bad_requests and not missing and not repeated
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
