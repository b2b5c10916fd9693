"""Make ``docs/datasette-pages.png``: Datasette's ``host_summary`` page of a demo crawl.

Crawls the built-in local web (``crawldeck demo --no-ui``, 150 pages, no rendering)
into a temporary directory, serves the file with ``datasette serve`` on a free
loopback port with the metadata the crawl wrote beside it, and takes a headless
Chromium screenshot (Playwright, the system's ``/usr/bin/chromium``) of the view.
Needs datasette in the venv (``pip install -e '.[test]'``). Run from the repository::

    .venv/bin/python docs/make_datasette_screenshot.py [OUT.png]
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.async_api import async_playwright

BIN = Path(sys.executable).parent
#: The page shown: hosts with the most pages first.
VIEW = "/demo/host_summary?_sort_desc=pages"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _shoot(url: str, out: Path) -> None:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox"]
        )
        page = await browser.new_page(viewport={"width": 1760, "height": 900})
        await page.goto(url, wait_until="networkidle")
        await page.screenshot(path=str(out), full_page=False)
        await browser.close()


def main(argv: list[str]) -> int:
    """Write the screenshot to ``argv[0]`` (default ``docs/datasette-pages.png``)."""
    out = Path(argv[0] if argv else Path(__file__).with_name("datasette-pages.png")).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.db"
        demo = [str(BIN / "crawldeck"), "demo", "--no-ui", "--db", str(db), "--max-pages", "150"]
        subprocess.run([*demo, "-s", "render=never", "-s", "warc=false"], check=True, cwd=tmp)
        port = _free_port()
        meta = db.with_name(db.name + ".metadata.json")
        serve = [str(BIN / "datasette"), "serve", str(db), "-h", "127.0.0.1", "-p", str(port)]
        with subprocess.Popen([*serve, "-m", str(meta)], stderr=subprocess.DEVNULL) as server:
            try:
                base = f"http://127.0.0.1:{port}"
                for _ in range(300):
                    try:
                        urllib.request.urlopen(base, timeout=1).close()
                        break
                    except OSError:
                        time.sleep(0.1)
                asyncio.run(_shoot(base + VIEW, out))
            finally:
                server.terminate()
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
