"""Make the crawl files of older schema versions that ``tests/loopback/test_schema.py`` migrates:
``crawl_2f3a1ea.db`` written by crawldeck at commit ``2f3a1ea`` (schema version 1) and
``crawl_4cc1605.db`` at commit ``4cc1605`` (version 2, the last before version 3) and
``crawl_4990f41.db`` at ``4990f41`` (version 3, the last before ``links.anchor``), each
stopped by ``max_pages`` with URLs still queued.

The site (``serve``, stdlib only, so the test serves the same one) is 31 pages on
``http://127.83.19.7:8080`` (a loopback address of its own, so the fixed port meets no
other server): ``/`` links to ``/p1`` ... ``/p30``, each ``/pN`` links to ``/pN+1``,
``/`` and ``/private/N`` (refused by robots.txt), ``/p7`` is a 404; ``/`` also links to
``/private/`` and to another site (out of scope).

Made with (from the repository, a checkout of each commit in ``OLD``: ``git worktree
add OLD 2f3a1ea``, or ``git archive 4cc1605 | tar -x -C OLD``)::

    PYTHONPATH=OLD .venv/bin/python tests/data/make_old_crawl.py core \\
        tests/data/crawl_2f3a1ea.db
    PYTHONPATH=OLD .venv/bin/python tests/data/make_old_crawl.py crawldeck.core \\
        tests/data/crawl_4cc1605.db
    PYTHONPATH=OLD .venv/bin/python tests/data/make_old_crawl.py crawldeck.core \\
        tests/data/crawl_4990f41.db

(the package of the old code: ``core`` at 2f3a1ea, ``crawldeck.core`` later); a WARC
crawl (4cc1605 on) writes its ``.warc.gz`` beside the file: WARC is off here (4990f41
also writes a ``.metadata.json``, removed).
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HOST = "127.83.19.7"
PORT = 8080
ORIGIN = f"http://{HOST}:{PORT}"
PAGES = 30
#: ``max_pages`` of the old crawl: robots.txt, ``/`` and the first pages, the rest queued.
MAX_PAGES = 12


def page(path: str) -> tuple[int, str, bytes]:
    """``(status, content type, body)`` of ``path`` on the site."""
    if path == "/robots.txt":
        return 200, "text/plain", b"User-agent: *\nDisallow: /private/\n"
    if path == "/":
        links = "".join(f'<a href="/p{n}">page {n}</a>' for n in range(1, PAGES + 1))
        links += '<a href="/private/">private</a><a href="http://outside.example/">out</a>'
        return 200, "text/html", f"<html><title>Home</title><body>{links}</body></html>".encode()
    if path.startswith("/p") and path[2:].isdigit() and 1 <= int(path[2:]) <= PAGES:
        n = int(path[2:])
        if n == 7:
            return 404, "text/html", b"<html><title>Not found</title></html>"
        body = (
            f"<html><title>Page {n}</title><body><a href='/p{n + 1}'>next</a>"
            f"<a href='/'>home</a><a href='/private/{n}'>private</a></body></html>"
        )
        return 200, "text/html", body.encode()
    return 404, "text/html", b"<html><title>Not found</title></html>"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        status, kind, body = page(self.path)
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve() -> ThreadingHTTPServer:
    """The site on ``HOST:PORT``, served by a daemon thread; ``shutdown()`` and
    ``server_close()`` it when done. Raises ``OSError`` if the port is taken."""
    server = ThreadingHTTPServer((HOST, PORT), _Handler)
    server.daemon_threads = True
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return server


async def _crawl(package: str, db: Path) -> None:
    config_module = importlib.import_module(f"{package}.config")
    engine_module = importlib.import_module(f"{package}.engine")
    store_module = importlib.import_module(f"{package}.store")
    settings = {"max_pages": MAX_PAGES, "delay_ms": 0, "allow_private": True}
    settings |= {"concurrency": 2, "flush_interval_ms": 10}
    if "warc" in config_module.CrawlConfig.__dataclass_fields__:
        settings["warc"] = False
    config = config_module.CrawlConfig(**settings)
    Engine, Store = engine_module.Engine, store_module.Store
    with Store(db) as store:
        engine = Engine(config, store)
        engine.add_seeds([ORIGIN + "/"])
        await engine.run()


def main(argv: list[str]) -> int:
    """Crawl with the old code's package ``argv[0]`` into the file ``argv[1]``
    (replaced if it exists)."""
    package, db = argv[0], Path(argv[1])
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    server = serve()
    try:
        asyncio.run(_crawl(package, db))
    finally:
        server.shutdown()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
