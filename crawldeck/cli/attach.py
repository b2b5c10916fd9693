"""``crawldeck attach DB``: the console of a crawl running headless (``tui.attach``), in
this terminal or, with ``--web PORT``, served to browsers; its ``--help``, arguments
and ``run``.

``--web PORT`` serves the attached console to browsers with textual-serve (one
``crawldeck attach DB`` process per viewer, its terminal drawn by xterm.js in the page):
bound to 127.0.0.1 unless ``--bind`` says otherwise; bound elsewhere, every path is
under a random token printed once (``http://HOST:PORT/TOKEN/``) and refused without
it. The page and its websocket are refused to a ``Host`` that is not the address
served (DNS rebinding) and the websocket to an ``Origin`` of another site (another
page in the viewer's browser driving the console): ``WebGuard``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import ipaddress
import os
import re
import secrets
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from crawldeck.cli.flags import parse_port
from crawldeck.cli.output import EXIT_ATTACH_LOST, EXIT_OK, fail, program
from crawldeck.core.errors import AttachError, CrawldeckError

#: The command's line in ``crawldeck --help``, and the start of its own ``--help``.
SUMMARY = "open the console of a crawl running headless (--web: in browsers)"
DESCRIPTION = (
    "Open the console of a crawl running headless on DB, over its socket\n"
    "DB.sock: q detaches (the crawl goes on), S twice stops the crawl."
)
#: The end of its ``--help``: two examples, then notes.
EPILOG = """\
examples:
  crawldeck attach crawl.db
      the console of the crawl running headless on crawl.db; q detaches, S twice stops it
  crawldeck attach crawl.db --web 8080
      the same console in browsers at http://127.0.0.1:8080/ (one process per viewer)
  crawldeck attach crawl.db --web 8080 --bind 0.0.0.0
      on every address, under a random token printed once (plain HTTP: prefer ssh -L)

A crawl run headless (--no-ui, under systemd or nohup) listens on crawl.db.sock, a
Unix socket only its user may open; detaching leaves the crawl running."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``crawldeck attach``'s arguments."""
    parser.add_argument(
        "db", type=Path, metavar="DB", nargs="?", default=Path("crawl.db"),
        help="the crawl file of the running crawl (default: crawl.db, as crawl's --db)",
    )  # fmt: skip
    parser.add_argument(
        "--web", type=parse_port, metavar="PORT",
        help="serve the console to browsers on PORT (0: any free port, printed; "
        "textual-serve: one process per viewer) instead of opening it here (default: here, "
        "in the terminal)",
    )  # fmt: skip
    parser.add_argument(
        "--bind", default="127.0.0.1", metavar="ADDR",
        help="with --web: the address to listen on; any but loopback puts a random token "
        "in the URL, printed once, and refuses requests without it (default 127.0.0.1)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """``crawldeck attach DB``: the console of the crawl running headless on DB, in this
    terminal until it detaches, or with ``--web PORT`` served to browsers until
    Ctrl-C (``tui.attach``). Exit 0 (detached, the crawl's end seen, or serving
    stopped), 1 the crawl went away while attached (one line), 2 no crawl to attach to
    or bad input (one line)."""
    from crawldeck.core.crawl.attach import open_blocking
    from crawldeck.tui.attach import WEB_DRIVER_ENV, CrawlLost, run_attached

    db = Path(args.db)
    if args.web is None and args.bind != "127.0.0.1":
        return fail(args.command, "--bind is for --web")
    try:
        probe, _ = open_blocking(db)  # no crawl there: one line before anything else
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    probe.close()
    if args.web is not None:
        try:
            asyncio.run(serve_web(db, args.web, args.bind, said=_say))
        except CrawldeckError as exc:
            return fail(args.command, str(exc))
        return EXIT_OK
    web = bool(os.environ.get(WEB_DRIVER_ENV))
    if not web and not (sys.stdin.isatty() and sys.stdout.isatty() and sys.stderr.isatty()):
        return fail(args.command, "no terminal on stdin, stdout and stderr: attach opens a "
                    "console (--web PORT serves it to browsers)")  # fmt: skip
    try:
        result, go_on = asyncio.run(run_attached(db))
    except CrawlLost as exc:
        print(f"crawldeck attach: {exc}", file=sys.stderr)
        return EXIT_ATTACH_LOST
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    if not web:
        if result is None:
            print(f"crawldeck attach: detached; the crawl goes on ({program()} attach {db})")
        else:
            said = f"; {go_on}" if go_on else ""
            print(f"crawldeck attach: the crawl ended: {result.outcome}{said}")
    return EXIT_OK


def _say(line: str) -> None:
    """Print one line of a long-running command now (stdout may be a pipe or a log)."""
    print(line, flush=True)


#: A ``<link>`` of textual-serve's page to another site (its web font from Google
#: Fonts): left out, the page's font falls back to the monospace ones it names next.
OUTSIDE_LINK = re.compile(r"<link[^>]*https?://[^>]*>", re.DOTALL)

#: Added to the end of textual-serve's page: the terminal takes the keyboard's focus
#: as soon as xterm.js has made its input box, so keys work without a click first, as
#: in a terminal (issue #25 trial 15: a viewer's first keys went nowhere).
FOCUS_SCRIPT = (
    "<script>new MutationObserver((_, seen) => {"
    ' const box = document.querySelector("#terminal .xterm-helper-textarea");'
    " if (box) { box.focus(); seen.disconnect(); }"
    "}).observe(document.body, {childList: true, subtree: true});</script>"
)


def is_loopback(address: str) -> bool:
    """Whether ``address`` (an IP address or ``localhost``) is a loopback one."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class WebGuard:
    """Which requests the web console answers (``make_web_app``'s middleware asks it).

    Args:
        token: the random path prefix every URL must start with (``/TOKEN/``), or
            ``None`` (bound to loopback: no token).
        port: the port served (a loopback ``Host`` must name it).

    Refused with 403 and one line: a path without the token; with no token, a ``Host``
    that is not loopback (a DNS-rebinding page reaching 127.0.0.1 under its own
    name); a websocket whose ``Origin`` is not the page's own (``scheme://host``), as
    a page of another site in the viewer's browser would send (the websocket is the
    console's keyboard).
    """

    def __init__(self, token: str | None, port: int) -> None:
        self.prefix = f"/{token}" if token else ""
        self._port = port

    def refusal(self, path: str, host: str, origin: str | None, scheme: str = "http") -> str | None:
        """Why a request for ``path`` with these ``Host`` and ``Origin`` headers is
        refused; ``None`` when it is served."""
        if self.prefix:
            head = path[: len(self.prefix) + 1]
            if not hmac.compare_digest(head.encode(), f"{self.prefix}/".encode()):
                return "this console needs its token: open the URL crawldeck attach printed"
        elif not is_loopback(urlsplit(f"//{host}").hostname or ""):
            return "this console answers to a loopback Host only (127.0.0.1, localhost)"
        if origin is not None and path.endswith("/ws") and origin != f"{scheme}://{host}":
            return "a page of another site may not drive this console"
        return None


def attach_command(db: Path) -> str:
    """The shell command textual-serve runs per viewer: this Python's
    ``crawldeck attach DB`` (``cli.launch``), ``db`` absolute."""
    return shlex.join(
        [sys.executable, "-m", "crawldeck.cli.launch", "attach", str(Path(db).resolve())]
    )


def make_web_app(db: Path, port: int, token: str | None) -> Any:
    """The aiohttp application of ``--web``: textual-serve's page, static files and
    websocket (its ``Server``, which runs ``attach_command`` per viewer), under the
    token's prefix, behind ``WebGuard``; the page's URLs follow the ``Host`` it was
    asked by, and its links to other sites (a web font) are left out
    (``OUTSIDE_LINK``): a viewer's browser asks nothing of any other server. The
    terminal takes the keyboard's focus once it is made (``FOCUS_SCRIPT``)."""
    import aiohttp_jinja2
    import jinja2
    from aiohttp import web
    from textual_serve.server import Server

    guard = WebGuard(token, port)

    @web.middleware
    async def guarded(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """The handler's answer, or 403 with ``WebGuard.refusal``'s line."""
        why = guard.refusal(
            request.path, request.host, request.headers.get("Origin"), request.scheme
        )
        if why is not None:
            return web.Response(status=403, text=why + "\n")
        return await handler(request)

    server = Server(attach_command(db), host="127.0.0.1", port=port, title="crawldeck attach")

    async def index(request: web.Request) -> web.Response:
        base = f"{request.scheme}://{request.host}{guard.prefix}"
        ws = ("wss" if request.scheme == "https" else "ws") + base[len(request.scheme) :]
        context = {
            "font_size": 16,
            "app_websocket_url": f"{ws}/ws",
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": server.title},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    page = (Path(server.templates_path) / "app_index.html").read_text(encoding="utf-8")
    page = OUTSIDE_LINK.sub("", page).replace("</body>", FOCUS_SCRIPT + "</body>")
    app = web.Application(middlewares=[guarded])
    aiohttp_jinja2.setup(app, loader=jinja2.DictLoader({"app_index.html": page}))
    app.add_routes(
        [
            web.get(f"{guard.prefix}/", index),
            web.get(f"{guard.prefix}/ws", server.handle_websocket),
            web.static(f"{guard.prefix}/static", server.statics_path),
        ]
    )
    return app


async def serve_web(
    db: Path,
    port: int,
    bind: str,
    *,
    said: Callable[[str], None] = print,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve the attached console of ``db`` at ``http://BIND:PORT/`` (with a token
    unless ``bind`` is loopback) until SIGINT or SIGTERM (or ``stop`` is set); the URL
    goes to ``said`` once the socket is bound.

    Raises:
        AttachError: no crawl runs on ``db`` (checked first), or the port cannot be
            bound (one line).
    """
    from aiohttp import web

    from crawldeck.core.crawl.attach import open_blocking

    probe, _ = await asyncio.to_thread(open_blocking, db)
    probe.close()
    token = None if is_loopback(bind) else secrets.token_urlsafe(24)
    runner = web.AppRunner(make_web_app(db, port, token), handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, bind, port)
        try:
            await site.start()
        except OSError as exc:
            raise AttachError(f"cannot serve on {bind}:{port}: {exc.strerror or exc}") from None
        host = f"[{bind}]" if ":" in bind else bind
        bound = port or runner.addresses[0][1]
        url = f"http://{host}:{bound}/" + (f"{token}/" if token else "")
        plain = "" if token is None else " (plain HTTP: on an untrusted network use ssh -L)"
        # the URL last, nothing after it: copied whole (issue #25 trial 18 took its ";")
        said(f"crawldeck attach: serving the console of {db}, one process per viewer "
             f"(Ctrl-C stops serving, the crawl goes on){plain}: {url}")  # fmt: skip
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        signals: list[signal.Signals] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
                signals.append(sig)
        try:
            await stop.wait()
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)
    finally:
        await runner.cleanup()
