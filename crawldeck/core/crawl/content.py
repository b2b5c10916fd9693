"""Content: what a fetched page holds, off the event loop.

An HTML answer (2xx, body read) is parsed in the parse pool (``core.net.parse``: threads
for small pages, killable worker processes for big ones, a budget per page); a page
that looks like a JavaScript shell (``core.policy.shell.should_render``) is rendered in the
browser pool (``core.render.browser_pool``) and its DOM's links are added. A page cut at
``max_body_bytes`` is parsed too (the links of its first ``parse_max_bytes``, as for any
page) but never rendered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from crawldeck.core.config import CrawlConfig
from crawldeck.core.crawl.observer import HostStats
from crawldeck.core.errors import ParseError, RenderUnavailable
from crawldeck.core.net.parse import ParsePool
from crawldeck.core.policy.links import Extracted, is_html
from crawldeck.core.policy.shell import should_render
from crawldeck.core.records import FetchResult
from crawldeck.core.render.browser_pool import RenderPool
from crawldeck.core.render_types import Gate, RenderResult, RenderStats, Report


@dataclass(frozen=True, slots=True)
class Content:
    """What a page held: ``extracted`` (``None``: not HTML, not parsed, or its parse
    failed), ``rendered`` (``None``: not rendered, or the render gave nothing) and
    ``parse_error`` (``"reason: message"`` when the parse failed)."""

    extracted: Extracted | None = None
    rendered: RenderResult | None = None
    parse_error: str | None = None


class ContentReader:
    """The parse pool and, unless ``render = never`` or Chromium is missing, the
    browser pool.

    Args:
        config: ``robots_token``, the parse and render keys.
        gate: the render pool's gate for sub-requests (``SideRequests.render_gate``).
        report: its report of ended sub-requests (``SideRequests.render_report``).
        log: keeps a log line; audit: keeps an audit line (``Observer.log`` / ``audit``).
        clock: the engine's one clock (s): the parse and render budgets run on it.
    """

    def __init__(
        self,
        config: CrawlConfig,
        gate: Gate,
        report: Report,
        log: Callable[[str], None],
        audit: Callable[[str], None],
        clock: Callable[[], float],
    ) -> None:
        self._config = config
        self._log = log
        self._audit = audit
        self._parser = ParsePool(config, clock=clock)
        self._noticed = False
        self._render: RenderPool | None = None
        if config.may_render():
            pool = RenderPool(config, gate=gate, report=report, clock=clock)
            if pool.available:
                self._render = pool
            else:
                audit(pool.reason)

    @staticmethod
    def wants_body(media_type: str) -> bool:
        """Whether a response body of ``media_type`` is read: only HTML is parsed and
        nothing else is kept, so other bodies (a 700 MB zip) are not downloaded."""
        return is_html(media_type)

    async def read(self, host: str, stats: HostStats, result: FetchResult) -> Content:
        """Parse ``result`` (a 2xx HTML answer of ``host``, or anything: others give an
        empty ``Content``) and render it if it is a shell, counted meanwhile in
        ``stats.rendering`` (``host``'s figures)."""
        if not (200 <= result.status < 300 and not result.skipped and is_html(result.content_type)):
            return Content()
        url = result.url
        try:
            extracted = await self._parser.extract(
                result.body,
                url,
                result.headers,
                self._config.robots_token,
                obey_nofollow=self._config.obey_nofollow,
            )
        except ParseError as exc:  # over parse_timeout_ms, or its worker died
            self._log(f"{host}: {exc}")
            return Content(parse_error=f"{exc.reason}: {exc}")
        finally:
            if self._parser.notice is not None and not self._noticed:
                self._noticed = True
                self._audit(self._parser.notice)
        if self._render is None or result.truncated:
            return Content(extracted)
        why = should_render(
            self._config, host, result.body, result.content_type, len(extracted.links),
            nofollow=extracted.nofollow and self._config.obey_nofollow,
        )  # fmt: skip
        if why is None:
            return Content(extracted)
        stats.rendering += 1
        try:
            return Content(extracted, await self._render_page(host, result, why))
        finally:
            stats.rendering -= 1

    async def _render_page(self, host: str, result: FetchResult, why: str) -> RenderResult | None:
        """Render a JavaScript shell in the pool (the host stays checked out meanwhile)."""
        assert self._render is not None
        try:
            out = await self._render.render(
                result.url, result.body, content_type=result.headers.get("content-type")
            )
        except RenderUnavailable as exc:
            self._audit(str(exc))
            self._render = None
            return None
        if out.error is not None:
            self._log(f"{host}: render of {result.url} ({why}): {out.error}")
            if not out.timed_out:
                return None
        return out

    def render_stats(self) -> RenderStats | None:
        """The browser pool's figures, ``None`` when rendering is off."""
        return self._render.stats() if self._render is not None else None

    async def aclose(self) -> None:
        """Close the browser pool and the parse pool."""
        if self._render is not None:
            await self._render.aclose()
        await self._parser.aclose()


__all__ = ["Content", "ContentReader"]
