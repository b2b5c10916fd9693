"""Single-page-app shells: spotting them in raw HTML, and deciding which pages to render.

Some pages send a near-empty HTML shell (an empty ``<div id="root">`` and a script
bundle) and build their links in the browser. ``looks_like_shell`` spots them from the
raw bytes; ``should_render`` applies the config (``render``, ``render_hosts``,
``render_never_hosts``, ``render_max_links``); ``core.render.browser_pool.RenderPool``
renders the pages it picks. Pure: no I/O, no browser, never raises.

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

A host with a ``[hosts."..."]`` ``render`` has it in place of ``render`` in 1, 3 and 5
(``CrawlConfig.override``; rule 3 then says ``hosts."HOST".render = always``).

A host-list entry matches a host key (``app.example.com``, ``127.0.0.8:8080``), the host
without its port, or any subdomain of it (``example.com`` matches
``app.example.com:8443``); case-insensitive.

Sources: the HTML Standard (``<noscript>``); the frameworks' own mount points and
markers (create-react-app, Vue CLI, Next.js, Nuxt, Angular, Gatsby, Vite).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from crawldeck.core.config import CrawlConfig
from crawldeck.core.policy.links import is_html

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
        config: ``render``, ``render_hosts``, ``render_never_hosts``, ``render_max_links``
            and the host's own ``render`` (``hosts``).
        host: the page's host key (``core.policy.urls.host_key``).
        body: the raw body as fetched (call only for complete 2xx bodies).
        content_type: the response's media type.
        link_count: followable links found in the raw HTML.
        nofollow: the raw page's meta robots / X-Robots-Tag said ``nofollow``/``none``.

    Returns:
        ``None`` (do not render) or the reason to render: ``"render = always"``,
        ``'hosts."HOST".render = always'``, ``"render_hosts"`` or a ``looks_like_shell``
        signature. Never raises.
    """
    mode = config.render
    own = config.override(host) if config.hosts else None
    if own is not None and own.render is not None:
        mode = own.render
    if mode == "never" or nofollow or not is_html(content_type):
        return None
    if host_matches(host, config.render_never_hosts):
        return None
    if mode == "always":
        return "render = always" if mode == config.render else f'hosts."{host}".render = always'
    if host_matches(host, config.render_hosts):
        return "render_hosts"
    return looks_like_shell(body, content_type, link_count, max_links=config.render_max_links)


__all__ = [
    "MOUNT_IDS",
    "SCAN_BYTES",
    "SCRIPT_ONLY_MAX_TEXT",
    "SCRIPT_ONLY_MIN_BYTES",
    "host_matches",
    "looks_like_shell",
    "should_render",
]
