"""What JavaScript rendering takes and gives, as plain data: no browser, no Playwright.

The renderer (``core.render.browser_pool.RenderPool``, one page at a time in
``core.render.render_session.RenderSession``) and its users (the engine, the snapshot the
console reads) meet on these types, so that a snapshot is plain data and importing it
loads no renderer (issue #11, item 5):

* ``Gate`` and ``Report``: the two callbacks the engine hands the pool (may the page
  request this URL now? / this sub-request ended);
* ``SubRequestEnd``: how one sub-request the gate let through ended;
* ``RenderResult``: what rendering one page gave;
* ``RenderStats``: a read-only picture of the pool for the console.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

#: ``await gate(url, resource_type)``: may the rendered page request ``url`` now?
#: ``resource_type`` is Playwright's (``script``, ``xhr``, ``fetch``, ``stylesheet``,
#: ``document`` for frames, ...). The engine checks robots.txt and waits for the host's
#: politeness slot; ``False`` aborts the request. The gate may be cancelled (the page's
#: budget ran out): it must then take no slot.
Gate = Callable[[str, str], Awaitable[bool]]

#: How a sub-request ended (see ``SubRequestEnd.kind``).
EndKind = Literal["response", "no_response", "cancelled"]


@dataclass(frozen=True, slots=True)
class SubRequestEnd:
    """The end of one sub-request the gate let through (given to ``Report``).

    Attributes:
        url: the URL requested.
        kind: ``response`` (headers came: ``status`` is set), ``no_response`` (the
            network gave none: refused, reset, timed out, closed empty; see
            ``core.render.render_session.NO_RESPONSE``) or ``cancelled`` (the page or the pool
            dropped it, the budget ran out, or the browser hid the outcome from the
            page, e.g. a cross-origin answer refused by CORS: nothing is known about
            the server).
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


@dataclass(frozen=True, slots=True)
class RenderResult:
    """What rendering one page gave.

    Attributes:
        url: the URL asked for.
        final_url: the document's URL at the end, fragment dropped (a script's
            ``history.pushState`` may change it); ``links`` resolve against ``base``.
        html: the serialized DOM (``page.content()``); ``""`` when it could not be read.
        links: raw ``href`` values of ``<a>``/``<area>`` in the rendered DOM, by
            ``core.policy.links.extract_links`` rules (rel=nofollow and fragment-only hrefs
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
        simhash: the SimHash of the rendered DOM's visible text (``core.policy.simhash``;
            a JavaScript shell's raw text is that of every other shell of its app),
            ``None`` when the DOM has no text.
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
    simhash: int | None = None


@dataclass(frozen=True, slots=True)
class RenderStats:
    """A read-only picture of the render pool for the console (``CrawlSnapshot.render``).

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
        memory_age_s: seconds since ``rss_bytes`` and ``pss_bytes`` were measured
            (``core.render.procmem.MemoryMonitor`` measures them in a thread, off the event
            loop, every ``MEMORY_INTERVAL_S``); ``0.0`` when no browser runs (both are
            then 0 exactly); ``None`` while no measurement has been made since a
            browser started (both are then 0).
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
    memory_age_s: float | None


__all__ = ["EndKind", "Gate", "RenderResult", "RenderStats", "Report", "SubRequestEnd"]
