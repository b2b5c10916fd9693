"""JavaScript rendering for single-page-app shells: detection, and a pool of Chromium workers.

Some pages send a near-empty HTML shell (an empty ``<div id="root">`` and a script
bundle) and build their links in the browser. ``looks_like_shell`` spots them from the
raw bytes; ``should_render`` applies the config; ``RenderPool`` renders them in Debian's
Chromium through Playwright and returns the links of the rendered DOM.

Detection (``looks_like_shell``, pure, regular expressions over at most the first
``SCAN_BYTES`` bytes; no HTML parse): an HTML page with at most ``max_links``
followable links whose markup carries one of these signatures, checked in this order
(the first found is returned):

=============================  =========================================================
signature                      what is matched
=============================  =========================================================
``__NEXT_DATA__``              Next.js's data script (``id="__NEXT_DATA__"``)
``__NUXT__``                   Nuxt's state (``window.__NUXT__`` or ``id="__NUXT_DATA__"``)
``ng-version``                 Angular's ``ng-version=`` attribute
``data-reactroot``             React's root marker attribute
``empty #root`` (``#app``, …)  an empty ``div``/``main``/``section`` whose id is a usual
                               mount point (``MOUNT_IDS``)
``empty <app-root>``           an empty Angular root element
``noscript asks for            a ``<noscript>`` whose text mentions JavaScript ("You need
JavaScript``                   to enable JavaScript to run this app")
``script-only body``           at most ``SCRIPT_ONLY_MAX_TEXT`` characters of visible text,
                               and either ``SCRIPT_ONLY_MIN_BYTES`` bytes of inline script
                               or an external ``<script src>``
=============================  =========================================================

Decision (``should_render``), first rule that applies:

1. ``render = "never"``, a non-HTML page, or a page whose robots directives say
   ``nofollow`` (rendering could give no followable link): no.
2. The host is in ``render_never_hosts``: no.
3. ``render = "always"``: yes (``"render = always"``).
4. The host is in ``render_hosts``: yes (``"render_hosts"``).
5. ``auto``: yes when ``looks_like_shell`` finds a signature (returned as the reason).

A host-list entry matches a host key (``app.example.com``, ``127.0.0.8:8080``), the host
without its port, or any subdomain of it (``example.com`` matches
``app.example.com:8443``); case-insensitive.

The pool (``RenderPool``): ``render_pool_size`` workers, each driving its own Chromium
(``render_browser_path``, Debian's ``/usr/bin/chromium``; never a browser Playwright
downloads) started lazily and restarted after ``render_max_pages_per_browser`` pages.
Each page gets a fresh browser context (no cookies, storage or cache from another page;
service workers blocked, so that every request passes the router) in which:

- the main document is answered from the body the crawler already fetched
  (``route.fulfill``), so it is not requested twice;
- every other request is intercepted (``BrowserContext.route``): resource types in
  ``render_block_resources`` (images, fonts, media) are aborted without a request;
  the rest go through the ``gate`` (robots.txt and politeness, in the engine) and are
  aborted and recorded in ``RenderResult.blocked`` when it refuses; each one the gate
  lets through is reported once when it ends (``report``, ``SubRequestEnd``: its
  status, or that no response came, or that it was cancelled), so the engine can
  free the host's slot and learn from a 429;
- navigations of a top-level frame away from the page (a script redirect, a popup)
  are aborted and recorded in ``RenderResult.navigations``; WebSockets are never
  connected (answered by a silent mock);
- Chromium's own checks stay on: a document served from bytes counts as public for
  its Local Network Access check, so its cross-origin requests to loopback or private
  addresses fail in the browser (``net::ERR_FAILED``) before any packet is sent (a
  page cannot probe the crawler's network); same-origin requests are not affected;
- the page has settled when its load event has fired and none of its requests has
  been in flight for ``render_idle_ms``; the whole render, gate waits included, has
  ``render_timeout_ms``: a page still busy then is cut and its DOM taken as it is
  (``timed_out=True``).

Playwright's errors are translated here: a browser that cannot start makes the pool
unavailable (``RenderUnavailable``, one line saying how to install Chromium); a page
that fails (crash, browser gone) gives a ``RenderResult`` with ``error`` set.

Sources: Playwright for Python API (``BrowserType.launch``, ``BrowserContext.route``,
``Route.fulfill/abort/continue_``, ``Request.resource_type``,
``BrowserContext.route_web_socket``); HTML Standard (``<noscript>``, document base URL);
proc(5) for ``/proc/PID/stat``, ``/proc/PID/statm``, ``/proc/PID/smaps_rollup`` and
``/proc/PID/cmdline``; Chromium's Local Network Access (the WICG Private Network Access
draft) for the loopback behaviour above.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import itertools
import os
import re
import signal
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal
from urllib.parse import urldefrag, urlsplit

from crawldeck.core.config import CrawlConfig
from crawldeck.core.errors import CrawldeckError, RenderUnavailable
from crawldeck.core.links import extract_links, is_html

if TYPE_CHECKING:
    from playwright.async_api import (
        Browser,
        Page,
        Playwright,
        Request,
        Route,
        WebSocketRoute,
    )
    from playwright.async_api import Response as PlaywrightResponse

#: ``await gate(url, resource_type)``: may the rendered page request ``url`` now?
#: ``resource_type`` is Playwright's (``script``, ``xhr``, ``fetch``, ``stylesheet``,
#: ``document`` for frames, ...). The engine checks robots.txt and waits for the host's
#: politeness slot; ``False`` aborts the request. The gate may be cancelled (the page's
#: budget ran out): it must then take no slot.
Gate = Callable[[str, str], Awaitable[bool]]

EndKind = Literal["response", "no_response", "cancelled"]


@dataclass(frozen=True, slots=True)
class SubRequestEnd:
    """The end of one sub-request the gate let through (given to ``Report``).

    Attributes:
        url: the URL requested.
        kind: ``response`` (headers came: ``status`` is set), ``no_response`` (the
            network gave none: refused, reset, timed out, closed empty; see
            ``_NO_RESPONSE``) or ``cancelled`` (the page or the pool dropped it, the
            budget ran out, or the browser hid the outcome from the page, e.g. a
            cross-origin answer refused by CORS: nothing is known about the server).
        status: the HTTP status for ``response``, else ``None``.
        elapsed_s: seconds from the gate's yes to the end (to the response headers).
        retry_after: the raw ``Retry-After`` header of a response, if any.
    """

    url: str
    kind: EndKind
    status: int | None
    elapsed_s: float
    retry_after: str | None


#: ``report(end)``: called exactly once for every sub-request the gate let through,
#: when it ends (at the latest when its page's render ends). The engine frees the
#: host's slot on every end and feeds ``response`` / ``no_response`` ends to
#: ``Politeness.on_response`` (adaptive delay, 429/503 backoff). Called on the event
#: loop; must not block.
Report = Callable[[SubRequestEnd], None]

#: Chromium failures that mean the server gave no response (``no_response``).
_NO_RESPONSE: Final = (
    "net::ERR_CONNECTION_",
    "net::ERR_TIMED_OUT",
    "net::ERR_EMPTY_RESPONSE",
    "net::ERR_ADDRESS_UNREACHABLE",
    "net::ERR_NAME_NOT_RESOLVED",
    "net::ERR_INVALID_HTTP_RESPONSE",
    "net::ERR_INCOMPLETE_CHUNKED_ENCODING",
)

#: Flags for Debian's Chromium (see shared/environment-notes.md).
CHROMIUM_ARGS: Final[tuple[str, ...]] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
#: Bytes of a body that detection looks at.
SCAN_BYTES: Final = 256 * 1024
#: Element ids that single-page-app frameworks mount into.
MOUNT_IDS: Final[tuple[str, ...]] = (
    "root",
    "app",
    "__next",
    "__nuxt",
    "___gatsby",
    "svelte",
    "react-root",
    "main-app",
    "application",
)
#: ``script-only body``: at most this many visible characters (not whitespace; a
#: "Loading..." message at most) ...
SCRIPT_ONLY_MAX_TEXT: Final = 32
#: ... and at least this many bytes of inline script (or one external script).
SCRIPT_ONLY_MIN_BYTES: Final = 1024
#: Seconds allowed to read the DOM once the page is cut or settled.
CONTENT_GRACE_S: Final = 2.0
#: Seconds allowed to close a page's context before its browser is restarted.
CLOSE_GRACE_S: Final = 5.0
#: Seconds allowed to start one browser.
LAUNCH_TIMEOUT_S: Final = 30.0
#: Seconds between two reads of the browsers' memory from /proc.
MEMORY_CACHE_S: Final = 1.0
#: Consecutive failed browser starts after which rendering is turned off.
MAX_LAUNCH_FAILURES: Final = 3
#: The ``Content-Type`` the main document is served with when none is given.
DEFAULT_CONTENT_TYPE: Final = "text/html; charset=utf-8"

_MOUNTS = b"|".join(re.escape(m.encode()) for m in MOUNT_IDS)
#: (signature, a literal the lowercased page must hold, the pattern that confirms it);
#: the literal test (a fast substring search) keeps slow patterns off most pages.
_SIGNATURES: Final[tuple[tuple[str, bytes, re.Pattern[bytes]], ...]] = (
    ("__NEXT_DATA__", b"__next_data__", re.compile(rb"""\bid\s*=\s*["']?__next_data__\b""")),
    ("__NUXT__", b"__nuxt", re.compile(rb"""window\.__nuxt__\b|\bid\s*=\s*["']?__nuxt_data__\b""")),
    ("ng-version", b"ng-version", re.compile(rb"\sng-version\s*=")),
    ("data-reactroot", b"data-reactroot", re.compile(rb"\sdata-reactroot\b")),
)
_EMPTY_MOUNT: Final = re.compile(
    rb"<(div|main|section)\b[^>]*?\sid\s*=\s*[\"']?(" + _MOUNTS + rb")(?=[\"'\s/>])"
    rb"[^>]*>\s*</\1\s*>"
)
_EMPTY_APP_ROOT: Final = re.compile(rb"<app-root\b[^>]*>\s*</app-root\s*>")
_NOSCRIPT: Final = re.compile(rb"<noscript\b[^>]*>(.{0,2000}?)</noscript\s*>", re.S)
_JAVASCRIPT: Final = re.compile(rb"java\s*script")
_SCRIPT: Final = re.compile(rb"<script\b([^>]*)>(.*?)</script\s*>", re.S)
_SRC_ATTR: Final = re.compile(rb"\ssrc\s*=")
_HIDDEN: Final = re.compile(
    rb"<(script|style|template|noscript|title|head)\b[^>]*>.*?</\1\s*>|<!--.*?-->", re.S
)
_TAG: Final = re.compile(rb"<[^>]*>")
_SPACE: Final = re.compile(rb"\s+")


def looks_like_shell(
    body: bytes, content_type: str, link_count: int, *, max_links: int = 3
) -> str | None:
    """The single-page-app signature of a page's raw HTML, or ``None``.

    Args:
        body: the raw response body (any encoding; only ASCII markup is matched);
            only its first ``SCAN_BYTES`` bytes are looked at.
        content_type: the response's media type (``text/html``; parameters allowed).
        link_count: the followable links of the raw page (``len(extract_links(...).links)``).
        max_links: a page with more links than this is no shell (``render_max_links``).

    Returns:
        ``None`` for non-HTML, for more than ``max_links`` links, or when no signature
        is found; else the first signature found in the module's table, e.g.
        ``"empty #root"``, ``"__NEXT_DATA__"``, ``"script-only body"``. Never raises.
    """
    if link_count > max_links or not is_html(content_type):
        return None
    doc = body[:SCAN_BYTES].lower()  # ASCII markup: one lowercase copy, then no re.I
    for name, literal, pattern in _SIGNATURES:
        if literal in doc and pattern.search(doc):
            return name
    mount = _EMPTY_MOUNT.search(doc)
    if mount:
        return "empty #" + mount.group(2).decode("ascii")
    if b"<app-root" in doc and _EMPTY_APP_ROOT.search(doc):
        return "empty <app-root>"
    for block in _NOSCRIPT.finditer(doc) if b"<noscript" in doc else ():
        if _JAVASCRIPT.search(block.group(1)):
            return "noscript asks for JavaScript"
    inline = 0
    external = False
    for script in _SCRIPT.finditer(doc):
        if _SRC_ATTR.search(script.group(1)):
            external = True
        inline += len(script.group(2).strip())
    if inline >= SCRIPT_ONLY_MIN_BYTES or external:
        text = _SPACE.sub(b"", _TAG.sub(b"", _HIDDEN.sub(b"", doc)))
        if len(text) <= SCRIPT_ONLY_MAX_TEXT:
            return "script-only body"
    return None


def host_matches(host: str, patterns: Iterable[str]) -> bool:
    """Whether host key ``host`` is named by one of ``patterns`` (a render host list).

    An entry matches the host key itself (``127.0.0.8:8080``), the host without its
    port (``example.com``), or a subdomain of it (``example.com`` matches
    ``app.example.com:8443``). Case-insensitive; surrounding spaces and a trailing dot
    are ignored. Never raises.
    """
    key = host.strip().lower().rstrip(".")
    name = key
    if key.startswith("["):  # [IPv6]:port
        name = key.partition("]")[0] + "]"
    elif key.count(":") == 1:
        name = key.partition(":")[0]
    for raw in patterns:
        entry = raw.strip().lower().rstrip(".")
        if entry and (entry in (key, name) or name.endswith("." + entry)):
            return True
    return False


def should_render(
    config: CrawlConfig,
    host: str,
    body: bytes,
    content_type: str,
    link_count: int,
    *,
    nofollow: bool = False,
) -> str | None:
    """Whether to render a fetched page, and why (the rules of the module docstring).

    Args:
        config: ``render``, ``render_hosts``, ``render_never_hosts``, ``render_max_links``.
        host: the page's host key (``core.urls.host_key``).
        body: the raw body as fetched (call only for complete 2xx bodies).
        content_type: the response's media type.
        link_count: followable links found in the raw HTML.
        nofollow: the raw page's meta robots / X-Robots-Tag said ``nofollow``/``none``.

    Returns:
        ``None`` (do not render) or the reason to render: ``"render = always"``,
        ``"render_hosts"`` or a ``looks_like_shell`` signature. Never raises.
    """
    if config.render == "never" or nofollow or not is_html(content_type):
        return None
    if host_matches(host, config.render_never_hosts):
        return None
    if config.render == "always":
        return "render = always"
    if host_matches(host, config.render_hosts):
        return "render_hosts"
    return looks_like_shell(body, content_type, link_count, max_links=config.render_max_links)


@dataclass(frozen=True, slots=True)
class RenderResult:
    """What rendering one page gave.

    Attributes:
        url: the URL asked for.
        final_url: the document's URL at the end, fragment dropped (a script's
            ``history.pushState`` may change it); ``links`` resolve against ``base``.
        html: the serialized DOM (``page.content()``); ``""`` when it could not be read.
        links: raw ``href`` values of ``<a>``/``<area>`` in the rendered DOM, by
            ``core.links.extract_links`` rules (rel=nofollow and fragment-only hrefs
            skipped, deduplicated, document order; empty when nofollow).
        base: the URL to resolve ``links`` against (``<base href>`` or ``final_url``).
        nofollow, noindex: the rendered DOM's meta robots said so.
        blocked: sub-request URLs the gate refused (aborted, never sent), in order.
        skipped: sub-request URLs aborted for their resource type (images, fonts,
            media by default) and WebSockets, never sent.
        navigations: top-level navigations away from the page (script redirects,
            popups, redirects of the main document), aborted; candidates for the
            frontier like links.
        requests: sub-requests the gate let through.
        timed_out: the page was cut at ``render_timeout_ms`` (or its DOM could not
            be read in time); ``html`` is the DOM at that moment.
        elapsed_ms: from the start of this page's render to its result, in ms
            (queueing before it not included).
        error: why the render failed (page crashed, browser gone, navigation
            failed), one line; ``None`` on success. ``html`` and ``links`` may then be
            empty: use the raw page's links.
    """

    url: str
    final_url: str
    html: str
    links: list[str]
    base: str
    nofollow: bool
    noindex: bool
    blocked: list[str]
    skipped: list[str]
    navigations: list[str]
    requests: int
    timed_out: bool
    elapsed_ms: float
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RenderStats:
    """A read-only picture of the pool for the console (``CrawlSnapshot``).

    Attributes:
        available: rendering can run (``False``: see ``reason``).
        reason: one line on why rendering is off, ``""`` when available.
        size: workers (``render_pool_size``).
        busy, idle: workers rendering now / waiting for a page (``busy + idle == size``).
        queued: pages waiting for a worker.
        browsers: browsers running now (started lazily, so ``<= size``).
        rendered: pages rendered so far (timed-out ones included, failed ones not).
        timed_out: pages cut at the budget.
        failed: pages whose render failed (``RenderResult.error``).
        blocked: sub-requests refused by the gate, all pages together.
        skipped: sub-requests aborted for their resource type, all pages together.
        launches: browsers started; recycles: browsers restarted after
            ``render_max_pages_per_browser`` pages.
        rss_bytes: resident memory (RSS) of the browsers' process trees in bytes
            (``/proc/PID/statm``). Pages shared between the processes of a tree (the
            Chromium binary, shared memory) count once per process: an upper bound.
        pss_bytes: proportional set size of the same trees in bytes
            (``/proc/PID/smaps_rollup``: shared pages split between their users), the
            closer figure of what the pool costs; 0 where the kernel lacks it.
        Both are read from /proc at most once per ``MEMORY_CACHE_S`` (0 without /proc).
    """

    available: bool
    reason: str
    size: int
    busy: int
    idle: int
    queued: int
    browsers: int
    rendered: int
    timed_out: int
    failed: int
    blocked: int
    skipped: int
    launches: int
    recycles: int
    rss_bytes: int
    pss_bytes: int


def _one_line(exc: BaseException) -> str:
    """The first line of ``str(exc)`` (Playwright appends a call log), or the class name."""
    for line in str(exc).splitlines():
        text = " ".join(line.split())
        if text:
            return text
    return type(exc).__name__


def unavailable_reason(config: CrawlConfig) -> str:
    """Why rendering cannot run with ``config`` (one line), or ``""`` if it may.

    Checks that ``render_browser_path`` is an executable file and that the
    ``playwright`` package is importable; whether the browser starts is known only
    when it is launched. Never raises.
    """
    path = Path(config.render_browser_path)
    if not path.is_file() or not os.access(path, os.X_OK):
        return (
            f"rendering is off: Chromium not found at {path} (install it with "
            "`apt-get install chromium`, or set render_browser_path); pages that build "
            "their links with JavaScript are crawled from their raw HTML only"
        )
    if importlib.util.find_spec("playwright") is None:
        return (
            "rendering is off: the Python package playwright is not installed "
            "(`pip install playwright`; the browser itself comes from "
            "`apt-get install chromium`, never from `playwright install`)"
        )
    return ""


# ------------------------------------------------------------------------ /proc


def _proc_parents() -> dict[int, int]:
    """pid -> parent pid of every process in /proc (empty without /proc)."""
    parents: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return parents
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 2:
            parents[int(name)] = int(fields[1])
    return parents


def _tree(root: int, parents: Mapping[int, int]) -> list[int]:
    """``root`` and its descendants according to ``parents``."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    out = [root]
    for pid in out:  # grows while iterating: a breadth-first walk, each pid once
        out.extend(children.get(pid, ()))
    return out


def _rss_bytes(pid: int) -> int:
    """Resident set size of one process in bytes (``/proc/PID/statm``), 0 if gone."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _pss_bytes(pid: int) -> int:
    """Proportional set size of one process in bytes (``/proc/PID/smaps_rollup``)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _find_marked(marker: str) -> int | None:
    """The pid of the process whose command line holds ``marker`` (our browser)."""
    needle = marker.encode()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if needle in f.read().split(b"\0"):
                    return int(name)
        except OSError:
            continue
    return None


# ------------------------------------------------------------------------ one page


class _Session:
    """The state of one page render: the router, in-flight requests, what was refused."""

    def __init__(
        self,
        job: _Job,
        gate: Gate,
        report: Report | None,
        block_types: frozenset[str],
        token: str,
    ) -> None:
        self.job = job
        self.gate = gate
        self.report = report
        self.sent: dict[Request, float] = {}  # requests the gate let through -> when
        self.closing = False
        self.block_types = block_types
        self.token = token
        self.page: Page | None = None
        self.main_served = False
        self.inflight = 0
        self.last_activity = time.monotonic()
        self.changed = asyncio.Event()
        self.blocked: list[str] = []
        self.skipped: list[str] = []
        self.navigations: list[str] = []
        self.requests = 0
        self.gates: set[asyncio.Task[bool]] = set()
        self.bug: BaseException | None = None

    # -- events ---------------------------------------------------------------

    def _touch(self) -> None:
        self.last_activity = time.monotonic()
        self.changed.set()

    def on_request(self, request: Request) -> None:
        """A request started (any page of the context)."""
        self.inflight += 1
        self._touch()

    def on_request_done(self, request: Request) -> None:
        """A request finished or failed (aborted requests fail)."""
        self.inflight = max(0, self.inflight - 1)
        self._touch()
        sent_at = self.sent.pop(request, None)
        if sent_at is None:
            return  # not one the gate let through, or its response was reported
        failure = request.failure or ""
        lost = failure.startswith(_NO_RESPONSE) and not self.closing
        self._end(request.url, "no_response" if lost else "cancelled", None, sent_at, None)

    def on_response(self, response: PlaywrightResponse) -> None:
        """Response headers came for a request: report it if the gate let it through."""
        sent_at = self.sent.pop(response.request, None)
        if sent_at is not None:
            retry_after = response.headers.get("retry-after")
            self._end(response.url, "response", response.status, sent_at, retry_after)

    def end_all(self) -> None:
        """Report every request still open as ``cancelled`` (the render is over)."""
        sent, self.sent = self.sent, {}
        for request, sent_at in sent.items():
            self._end(request.url, "cancelled", None, sent_at, None)

    def _end(
        self, url: str, kind: EndKind, status: int | None, sent_at: float, retry_after: str | None
    ) -> None:
        if self.report is not None:
            elapsed = time.monotonic() - sent_at
            self.report(SubRequestEnd(url, kind, status, elapsed, retry_after))

    def on_websocket(self, ws: WebSocketRoute) -> None:
        """A WebSocket: never connected to its server (the route mocks it silently)."""
        self.skipped.append(ws.url)

    # -- the router -----------------------------------------------------------

    async def handle(self, route: Route, request: Request) -> None:
        """Route one request: serve the main document, skip, gate, or abort."""
        from playwright.async_api import Error as PlaywrightError

        try:
            await self._handle(route, request)
        except PlaywrightError:
            pass  # the page or context closed while this request waited: nothing to do
        except Exception as exc:  # a bug here: surface it from render(), drop the request
            self.bug = self.bug or exc
            with contextlib.suppress(PlaywrightError):
                await route.abort("failed")

    async def _handle(self, route: Route, request: Request) -> None:
        url = request.url
        if urlsplit(url).scheme.lower() not in ("http", "https"):
            await route.continue_()  # data:, blob: and the like never reach a server
            return
        if request.is_navigation_request() and self._top_level(request):
            if not self.main_served and self.page is not None:
                self.main_served = True
                if self.job.body is not None:
                    await route.fulfill(
                        status=200,
                        headers={"content-type": self.job.content_type},
                        body=self.job.body,
                    )
                    return
            else:  # a script redirect, a popup, a redirect of the main document
                self.navigations.append(url)
                await route.abort("aborted")
                return
        kind = request.resource_type
        if kind in self.block_types:
            self.skipped.append(url)
            await route.abort("blockedbyclient")
            return
        allowed = await self._ask_gate(url, kind)
        if allowed:
            self.requests += 1
            self.sent[request] = time.monotonic()  # ended by on_response/..._done/end_all
            await route.continue_()
        else:
            self.blocked.append(url)
            await route.abort("blockedbyclient")

    def _top_level(self, request: Request) -> bool:
        """Whether a navigation request is for a top-level frame (our page, a popup)."""
        from playwright.async_api import Error as PlaywrightError

        try:
            return request.frame.parent_frame is None
        except PlaywrightError:  # a popup's first navigation comes before its frame
            return True

    async def _ask_gate(self, url: str, kind: str) -> bool:
        """The gate's answer; ``False`` when it refuses, raises ours, or is cancelled
        because the page's budget ran out."""
        task = asyncio.ensure_future(self.gate(url, kind))
        self.gates.add(task)
        try:
            return bool(await task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and (current is None or current.cancelling() == 0):
                return False  # cut at the budget: the request is not sent
            raise
        except CrawldeckError:
            return False  # e.g. a URL the engine cannot parse: refuse it
        finally:
            self.gates.discard(task)

    def cancel_gates(self) -> None:
        """Stop every gate still waiting (for a politeness slot): no slot is taken."""
        for task in list(self.gates):
            task.cancel()

    # -- settling -------------------------------------------------------------

    async def settle(self, deadline: float, idle_s: float) -> bool:
        """Wait until no request has been in flight for ``idle_s``; ``False`` if the
        monotonic ``deadline`` comes first."""
        while True:  # each pass waits for a request event or a timer; ends by deadline
            now = time.monotonic()
            quiet = now - self.last_activity
            if self.inflight == 0 and quiet >= idle_s:
                return True
            if now >= deadline:
                return False
            wait = deadline - now
            if self.inflight == 0:
                wait = min(wait, idle_s - quiet)
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(wait, 0.001)):
                    await self.changed.wait()


@dataclass(slots=True)
class _Job:
    url: str
    body: bytes | None
    content_type: str
    future: asyncio.Future[RenderResult]


@dataclass(slots=True)
class _Worker:
    index: int
    lock: asyncio.Lock
    browser: Browser | None = None
    pid: int | None = None
    pages: int = 0
    busy: bool = False
    broken: bool = False
    task: asyncio.Task[None] | None = None


class RenderPool:
    """A pool of Chromium render workers (see the module docstring).

    Args:
        config: ``render_pool_size``, ``render_browser_path``, ``render_timeout_ms``,
            ``render_idle_ms``, ``render_max_pages_per_browser``,
            ``render_block_resources``, ``user_agent`` (sent by the browser) and
            ``robots_token`` (for meta robots in the rendered DOM).
        gate: ``await gate(url, resource_type) -> bool`` for every sub-request a
            rendered page makes (see ``Gate``).
        report: called once for every sub-request the gate let through, when it
            ends (see ``Report``, ``SubRequestEnd``), so the engine can free the host's
            slot and let its politeness learn from the answer; optional.

    Nothing starts until the first ``render`` (or ``start``). Use one pool per event
    loop and close it with ``await pool.aclose()``.
    """

    def __init__(self, config: CrawlConfig, *, gate: Gate, report: Report | None = None) -> None:
        self._config = config
        self._gate = gate
        self._report = report
        self._block_types = frozenset(config.render_block_resources)
        self._reason = unavailable_reason(config)
        self._closed = False
        self._pw: Playwright | None = None
        self._start_lock = asyncio.Lock()
        self._queue: asyncio.Queue[_Job] = asyncio.Queue()
        self._workers = [_Worker(i, asyncio.Lock()) for i in range(config.render_pool_size)]
        self._launch_seq = itertools.count(1)
        self._launches = 0
        self._launch_failures = 0
        self._recycles = 0
        self._rendered = 0
        self._timed_out = 0
        self._failed = 0
        self._blocked = 0
        self._skipped = 0
        self._memory: tuple[float, int, int] = (-MEMORY_CACHE_S, 0, 0)  # (read at, rss, pss)

    # ----------------------------------------------------------------- status

    @property
    def available(self) -> bool:
        """Whether rendering can run (no missing browser found, pool not closed)."""
        return not self._reason and not self._closed

    @property
    def reason(self) -> str:
        """Why rendering is off, one line for the user; ``""`` while available."""
        if self._reason:
            return self._reason
        return "rendering is off: the render pool is closed" if self._closed else ""

    def stats(self) -> RenderStats:
        """Counts and memory for the console (cheap; /proc read at most once a second)."""
        busy = sum(1 for w in self._workers if w.busy)
        rss, pss = self._memory_bytes()
        return RenderStats(
            available=self.available,
            reason=self.reason,
            size=len(self._workers),
            busy=busy,
            idle=len(self._workers) - busy,
            queued=self._queue.qsize(),
            browsers=sum(1 for w in self._workers if w.browser is not None),
            rendered=self._rendered,
            timed_out=self._timed_out,
            failed=self._failed,
            blocked=self._blocked,
            skipped=self._skipped,
            launches=self._launches,
            recycles=self._recycles,
            rss_bytes=rss,
            pss_bytes=pss,
        )

    def _memory_bytes(self) -> tuple[int, int]:
        """(RSS, PSS) of the browsers' process trees in bytes, cached ``MEMORY_CACHE_S``."""
        now = time.monotonic()
        read_at, rss, pss = self._memory
        if now - read_at < MEMORY_CACHE_S:
            return rss, pss
        roots = [w.pid for w in self._workers if w.browser is not None and w.pid is not None]
        rss = pss = 0
        if roots:
            parents = _proc_parents()
            for root in roots:
                for pid in _tree(root, parents):
                    rss += _rss_bytes(pid)
                    pss += _pss_bytes(pid)
        self._memory = (now, rss, pss)
        return rss, pss

    # -------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Start Playwright and the first browser now (``render`` does it lazily).

        Raises:
            RenderUnavailable: Chromium is missing or does not start, Playwright is
                missing, or the pool is closed; the message is one line for the user.
        """
        await self._ensure_started()
        await self._ensure_browser(self._workers[0])

    async def _ensure_started(self) -> None:
        if not self.available:
            raise RenderUnavailable(self.reason)
        if self._pw is not None:
            return
        async with self._start_lock:
            if self._pw is not None:
                return
            try:
                from playwright.async_api import Error as PlaywrightError
                from playwright.async_api import async_playwright
            except ImportError as exc:  # pragma: no cover - checked by unavailable_reason
                self._reason = f"rendering is off: playwright cannot be imported: {exc}"
                raise RenderUnavailable(self._reason) from None
            try:
                self._pw = await async_playwright().start()
            except (PlaywrightError, OSError) as exc:
                self._reason = f"rendering is off: Playwright does not start: {_one_line(exc)}"
                raise RenderUnavailable(self._reason) from None
            for worker in self._workers:
                worker.task = asyncio.create_task(
                    self._run_worker(worker), name=f"render-worker-{worker.index}"
                )

    async def aclose(self) -> None:
        """Stop the workers, close every browser and Playwright; idempotent.

        Pages still queued or rendering get ``RenderUnavailable``. Never raises.
        """
        if self._closed:
            return
        self._closed = True
        tasks = [w.task for w in self._workers if w.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._fail_queued(RenderUnavailable("rendering stopped: the render pool was closed"))
        for worker in self._workers:
            await self._close_browser(worker)
        if self._pw is not None:
            pw, self._pw = self._pw, None
            with contextlib.suppress(Exception):
                async with asyncio.timeout(CLOSE_GRACE_S):
                    await pw.stop()

    def _fail_queued(self, exc: RenderUnavailable) -> None:
        while not self._queue.empty():
            job = self._queue.get_nowait()
            if not job.future.done():
                job.future.set_exception(exc)

    # ----------------------------------------------------------------- render

    async def render(
        self, url: str, body: bytes | None = None, *, content_type: str | None = None
    ) -> RenderResult:
        """Render ``url`` in the next free worker and return its DOM's links.

        Args:
            url: the page's absolute http(s) URL (as fetched).
            body: the raw body already fetched: served to the browser as the main
                document (not requested again). ``None``: the browser requests it,
                through the gate.
            content_type: the ``Content-Type`` header value to serve ``body`` with
                (its charset matters); default ``text/html; charset=utf-8``.

        Returns:
            A ``RenderResult``; a page cut at the budget has ``timed_out=True``; a
            page that failed has ``error`` set (then use the raw page's links).

        Raises:
            RenderUnavailable: Chromium is missing or does not start, or the pool was
                closed; ``pool.reason`` then says the same, once and for all.
        """
        await self._ensure_started()
        future: asyncio.Future[RenderResult] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Job(url, body, content_type or DEFAULT_CONTENT_TYPE, future))
        return await future

    async def _run_worker(self, worker: _Worker) -> None:
        """One worker: take queued pages one at a time until the pool closes."""
        job: _Job | None = None
        try:
            while True:  # ends when aclose() cancels this task
                job = await self._queue.get()
                if job.future.done():  # the caller went away while it was queued
                    continue
                worker.busy = True
                try:
                    result = await self._render_job(worker, job)
                except RenderUnavailable as exc:
                    if not job.future.done():
                        job.future.set_exception(exc)
                    if not self.available:
                        self._fail_queued(exc)
                except Exception as exc:  # a bug: give it to the caller, keep the worker
                    if not job.future.done():
                        job.future.set_exception(exc)
                else:
                    if not job.future.done():
                        job.future.set_result(result)
                finally:
                    worker.busy = False
                job = None
        except asyncio.CancelledError:
            if job is not None and not job.future.done():
                job.future.set_exception(
                    RenderUnavailable("rendering stopped: the render pool was closed")
                )
            raise

    async def _render_job(self, worker: _Worker, job: _Job) -> RenderResult:
        browser = await self._ensure_browser(worker)
        try:
            async with asyncio.timeout(
                self._config.render_timeout_ms / 1000 + CONTENT_GRACE_S + 2 * CLOSE_GRACE_S
            ):
                result = await self._render_page(worker, browser, job)
        except TimeoutError:  # Playwright itself stopped answering: restart the browser
            worker.broken = True
            result = self._failure(job, "render: the browser stopped responding", 0.0)
        worker.pages += 1
        if result.error is None:
            self._rendered += 1
        else:
            self._failed += 1
        self._timed_out += result.timed_out
        self._blocked += len(result.blocked)
        self._skipped += len(result.skipped)
        if worker.broken or not browser.is_connected():
            await self._close_browser(worker)
        elif worker.pages >= self._config.render_max_pages_per_browser:
            self._recycles += 1
            await self._close_browser(worker)
        return result

    def _failure(self, job: _Job, error: str, elapsed_ms: float) -> RenderResult:
        return RenderResult(
            url=job.url,
            final_url=job.url,
            html="",
            links=[],
            base=job.url,
            nofollow=False,
            noindex=False,
            blocked=[],
            skipped=[],
            navigations=[],
            requests=0,
            timed_out=False,
            elapsed_ms=elapsed_ms,
            error=error,
        )

    async def _render_page(self, worker: _Worker, browser: Browser, job: _Job) -> RenderResult:
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeoutError

        config = self._config
        started = time.monotonic()
        deadline = started + config.render_timeout_ms / 1000

        def remaining_ms() -> float:
            return max(1.0, (deadline - time.monotonic()) * 1000)

        session = _Session(job, self._gate, self._report, self._block_types, config.robots_token)
        timed_out = False
        error: str | None = None
        html: str | None = None
        final_url = job.url
        try:
            context = await browser.new_context(
                user_agent=config.user_agent,
                service_workers="block",
                accept_downloads=False,
            )
        except PlaywrightError as exc:
            worker.broken = True
            elapsed = (time.monotonic() - started) * 1000
            return self._failure(job, f"render: {_one_line(exc)}", elapsed)
        try:
            context.set_default_timeout(config.render_timeout_ms)
            context.on("request", session.on_request)
            context.on("requestfinished", session.on_request_done)
            context.on("requestfailed", session.on_request_done)
            context.on("response", session.on_response)
            await context.route("**/*", session.handle)
            await context.route_web_socket("**/*", session.on_websocket)
            page = await context.new_page()
            session.page = page
            try:
                await page.goto(job.url, wait_until="load", timeout=remaining_ms())
                timed_out = not await session.settle(deadline, config.render_idle_ms / 1000)
            except PlaywrightTimeoutError:
                timed_out = True
            except PlaywrightError as exc:
                error = f"render: {_one_line(exc)}"
            html, why = await self._content(page)
            if html is None:
                timed_out = True
                if error is None:
                    error = f"render: the page's DOM could not be read ({why})"
            final_url = urldefrag(page.url)[0] if page.url.startswith("http") else job.url
        except PlaywrightError as exc:
            error = f"render: {_one_line(exc)}"
        finally:
            session.closing = True
            session.cancel_gates()
            try:
                async with asyncio.timeout(CLOSE_GRACE_S):
                    await context.close()
            except (TimeoutError, PlaywrightError):
                worker.broken = True
            session.end_all()
        if session.bug is not None:
            raise session.bug
        elapsed_ms = (time.monotonic() - started) * 1000
        text = html or ""
        extracted = extract_links(
            text.encode("utf-8"), final_url, {"content-type": DEFAULT_CONTENT_TYPE}, session.token
        )
        return RenderResult(
            url=job.url,
            final_url=final_url,
            html=text,
            links=extracted.links if text else [],
            base=extracted.base,
            nofollow=extracted.nofollow,
            noindex=extracted.noindex,
            blocked=session.blocked,
            skipped=session.skipped,
            navigations=session.navigations,
            requests=session.requests,
            timed_out=timed_out,
            elapsed_ms=elapsed_ms,
            error=error,
        )

    async def _content(self, page: Page) -> tuple[str | None, str]:
        """The page's serialized DOM, or ``None`` and why it could not be read within
        ``CONTENT_GRACE_S`` (a script keeps the page busy, or it is still navigating:
        then it is tried again every 100 ms)."""
        from playwright.async_api import Error as PlaywrightError

        deadline = time.monotonic() + CONTENT_GRACE_S
        why = "its script keeps it busy"
        for _ in range(int(CONTENT_GRACE_S / 0.1) + 1):  # bounded by the grace period
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                async with asyncio.timeout(left):
                    return await page.content(), ""
            except TimeoutError:
                return None, "its script keeps it busy"
            except PlaywrightError as exc:  # navigating: the document is being replaced
                why = _one_line(exc).removeprefix("Page.content: ")
                await asyncio.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
        return None, why

    # --------------------------------------------------------------- browsers

    async def _ensure_browser(self, worker: _Worker) -> Browser:
        """The worker's browser, started when it has none.

        Raises:
            RenderUnavailable: it does not start (after ``MAX_LAUNCH_FAILURES`` in a
                row, or the first time ever, rendering is turned off for good).
        """
        async with worker.lock:
            if worker.browser is not None and worker.browser.is_connected():
                return worker.browser
            if worker.browser is not None:
                await self._close_browser_locked(worker)
            if not self.available or self._pw is None:
                raise RenderUnavailable(self.reason or "rendering is off: the pool is not started")
            from playwright.async_api import Error as PlaywrightError

            marker = f"--crawldeck-render={os.getpid()}-{id(self):x}-{next(self._launch_seq)}"
            try:
                browser = await self._pw.chromium.launch(
                    executable_path=self._config.render_browser_path,
                    args=[*CHROMIUM_ARGS, marker],
                    timeout=LAUNCH_TIMEOUT_S * 1000,
                    handle_sigint=False,
                    handle_sigterm=False,
                    handle_sighup=False,
                )
            except PlaywrightError as exc:
                self._launch_failures += 1
                message = (
                    f"rendering is off: Chromium at {self._config.render_browser_path} "
                    f"does not start: {_one_line(exc)}"
                )
                if self._launches == 0 or self._launch_failures >= MAX_LAUNCH_FAILURES:
                    self._reason = message
                raise RenderUnavailable(message) from None
            self._launches += 1
            self._launch_failures = 0
            self._memory = (-MEMORY_CACHE_S, 0, 0)
            worker.browser = browser
            worker.pid = _find_marked(marker)
            worker.pages = 0
            worker.broken = False
            return browser

    async def _close_browser(self, worker: _Worker) -> None:
        async with worker.lock:
            await self._close_browser_locked(worker)

    async def _close_browser_locked(self, worker: _Worker) -> None:
        """Close the worker's browser; kill its process tree if it does not close."""
        browser, pid = worker.browser, worker.pid
        worker.browser, worker.pid, worker.pages, worker.broken = None, None, 0, False
        if browser is None:
            return
        self._memory = (-MEMORY_CACHE_S, 0, 0)
        try:
            async with asyncio.timeout(CLOSE_GRACE_S):
                await browser.close()
        except Exception:  # Playwright errors or the timeout: end it by its pid
            if pid is not None:
                for child in reversed(_tree(pid, _proc_parents())):
                    with contextlib.suppress(OSError):
                        os.kill(child, signal.SIGKILL)


__all__ = [
    "CHROMIUM_ARGS",
    "MOUNT_IDS",
    "Gate",
    "RenderPool",
    "RenderResult",
    "RenderStats",
    "Report",
    "SubRequestEnd",
    "host_matches",
    "looks_like_shell",
    "should_render",
    "unavailable_reason",
]
