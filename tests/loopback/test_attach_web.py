"""``crawldeck attach DB --web PORT`` (issue #25 item 8): the attached console served to
browsers by textual-serve, tested in Debian's Chromium through Playwright against a
real headless crawl; and who the web console answers (``cli.attach.WebGuard``).

The page draws the console on a canvas (xterm.js), so what it shows is read from what
its websocket received: the console's output, escape sequences taken out.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
import pytest
from attachkit import CAP_S, headless_demo, until, wait_for, watch
from clikit import CRAWLDECK

from crawldeck.cli.attach import attach_command, make_web_app
from crawldeck.core.render.browser_pool import CHROMIUM_ARGS
from crawldeck.tui.attach import SocketSource

if TYPE_CHECKING:
    from playwright.async_api import Page, WebSocket

CHROMIUM = "/usr/bin/chromium"
#: Escape sequences of a terminal's output (CSI, OSC, charset and keypad modes).
ESCAPES = re.compile(rb"\x1b\[[0-9;?$]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>]")


class Screen:
    """What one page's websocket received, as text."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def take(self, payload: str | bytes) -> None:
        self.frames.append(payload if isinstance(payload, bytes) else payload.encode())

    def listen(self, page: Page) -> None:
        """Take what ``page``'s websockets receive."""

        def on_websocket(ws: WebSocket) -> None:
            ws.on("framereceived", self.take)

        page.on("websocket", on_websocket)

    def text(self, since: int = 0) -> str:
        """The text received from frame ``since`` on."""
        return ESCAPES.sub(b"", b"".join(self.frames[since:])).decode("utf-8", "replace")


def viewers(pid: int) -> list[int]:
    """The processes under ``pid`` that run ``crawldeck attach`` (textual-serve's one
    per viewer, under the shell it starts them with)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            kids = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        for kid in map(int, kids):
            todo.append(kid)
            try:
                cmdline = Path(f"/proc/{kid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"crawldeck.cli.launch\0attach" in cmdline:
                found.append(kid)
    return found


@pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Chromium is missing: apt-get install chromium"
)
async def test_two_browsers_see_the_same_crawl_keys_work_and_closing_them_leaves_it_running(
    tmp_path: Path,
) -> None:
    from playwright.async_api import Route, async_playwright

    with headless_demo(tmp_path) as (crawl, db):
        err = (tmp_path / "web.err").open("wb")
        web = await asyncio.create_subprocess_exec(
            CRAWLDECK, "attach", str(db), "--web", "0", stdout=subprocess.PIPE, stderr=err
        )
        try:
            assert web.stdout is not None
            said = (await asyncio.wait_for(web.stdout.readline(), CAP_S)).decode()
            found = re.search(r"http://127\.0\.0\.1:\d+/", said)
            assert found is not None, said + (tmp_path / "web.err").read_text()
            assert said.endswith(f": {found.group(0)}\n"), said  # copied whole
            url = found.group()
            source = await SocketSource.connect(db)
            runner, seen = await watch(source)
            async with async_playwright() as pw:
                # the flags crawldeck renders with: no lookup of Chromium's own outside
                # loopback (tests/loopback/test_render_background.py)
                browser = await pw.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS])
                context = await browser.new_context(viewport={"width": 1400, "height": 900})
                outside: list[str] = []

                async def only_the_console(route: Route) -> None:
                    if route.request.url.startswith(url):
                        await route.continue_()
                    else:  # never beyond loopback; the page must not ask anyway
                        outside.append(route.request.url)
                        await route.abort()

                await context.route("**/*", only_the_console)
                pages = [await context.new_page() for _ in range(2)]
                screens = [Screen(), Screen()]
                for page, screen in zip(pages, screens, strict=True):
                    screen.listen(page)
                    await page.goto(url)
                # both pages show the panels of the one crawl
                await until(
                    lambda: all(
                        "crawldeck attach" in s.text() and "Throughput" in s.text()
                        and "Hosts" in s.text() and "RUNNING" in s.text() for s in screens
                    ),
                    "the console in both pages",
                )  # fmt: skip
                assert len(viewers(web.pid)) == 2  # one process per viewer
                # p in the first page pauses the crawl; the second page shows it too
                mark = len(screens[1].frames)
                # with no click first: the terminal has the focus (issue #25 trial 15)
                for page in pages:
                    focused = "document.activeElement.classList.contains('xterm-helper-textarea')"
                    assert await page.evaluate(focused)
                await pages[0].keyboard.press("p")
                await until(lambda: seen[-1].state == "paused", "the crawl paused")
                await until(lambda: "PAUSED" in screens[1].text(mark), "PAUSED in the other page")
                # closing the pages ends their processes, not the crawl
                for page in pages:
                    await page.close()
                await until(lambda: not viewers(web.pid), "the viewers' processes ended")
                count = len(seen)
                await until(lambda: len(seen) >= count + 2, "the crawl's snapshots going on")
                assert crawl.poll() is None and seen[-1].state == "paused"
                assert outside == []
                await browser.close()
            runner.cancel()
            await asyncio.to_thread(source.resume)
            source.close()
        finally:
            web.send_signal(signal.SIGINT)
            code = await asyncio.wait_for(web.wait(), CAP_S)
            err.close()
        assert code == 0, (tmp_path / "web.err").read_text()
        assert crawl.poll() is None  # serving stopped, the crawl still runs


@asynccontextmanager
async def serving(token: str | None) -> AsyncIterator[str]:
    """``make_web_app`` (no crawl behind it: the guard answers first) on 127.0.0.1; its
    ``http://127.0.0.1:PORT``."""
    from aiohttp import web

    runner = web.AppRunner(make_web_app(Path("crawl.db"), 0, token))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_bound_elsewhere_every_path_needs_the_token(tmp_path: Path) -> None:
    async with serving("s3cret") as base, aiohttp.ClientSession() as http:
        for path in ("/", "/ws", "/static/js/textual.js", "/s3cre/", "/S3CRET/"):
            async with http.get(base + path) as answer:
                assert answer.status == 403, path
                assert "needs its token" in await answer.text()
        async with http.get(base + "/s3cret/") as answer:
            page = await answer.text()
            assert answer.status == 200
        assert f'data-session-websocket-url="ws://{base[7:]}/s3cret/ws"' in page
        assert "googleapis" not in page and "https://" not in page  # nothing from elsewhere
        async with http.get(base + "/s3cret/static/js/textual.js") as answer:
            assert answer.status == 200
        other = {"Origin": "http://evil.example", "Connection": "Upgrade", "Upgrade": "websocket"}
        async with http.get(base + "/s3cret/ws", headers=other) as answer:
            assert answer.status == 403
            assert await answer.text() == "a page of another site may not drive this console\n"


async def test_on_loopback_a_host_of_another_name_is_refused(tmp_path: Path) -> None:
    async with serving(None) as base, aiohttp.ClientSession() as http:
        async with http.get(base + "/") as answer:
            assert answer.status == 200
        port = base.rsplit(":", 1)[1]
        async with http.get(base + "/", headers={"Host": f"rebound.example:{port}"}) as answer:
            assert answer.status == 403
            assert "loopback Host only" in await answer.text()


#: A stand-in for textual-serve that dies at once (SIGKILL, as when its process is
#: killed): it starts one viewer's process as textual-serve does, prints its pid, and
#: exits without a word to it.
DYING_SERVER = """
import os, subprocess, sys
env = dict(os.environ, TEXTUAL_DRIVER="textual.drivers.web_driver:WebDriver",
           COLUMNS="120", ROWS="40")
viewer = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
print(viewer.pid, flush=True)
viewer.stdout.read(1)  # the viewer draws: it runs
os._exit(0)
"""


def running(pid: int) -> bool:
    """Whether process ``pid`` is there and not a zombie (an orphan's parent may be a
    pid 1 that never reaps it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def test_a_viewer_whose_server_is_killed_detaches(tmp_path: Path) -> None:
    """Trial 14: after textual-serve's process was killed, a viewer's ``crawldeck
    attach`` stayed, an orphan on the crawl's socket, until a SIGKILL of its own."""
    with headless_demo(tmp_path) as (proc, db):
        server = subprocess.run(
            [sys.executable, "-c", DYING_SERVER, *shlex.split(attach_command(db))],
            capture_output=True, timeout=CAP_S, check=True,
        )  # fmt: skip
        viewer = int(server.stdout)
        wait_for(lambda: not running(viewer), "the orphaned viewer gone")
        assert proc.poll() is None  # detached: the crawl goes on
