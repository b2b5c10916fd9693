"""Crawl scope and crawler-trap guards (pure: no I/O, no clock; ``today`` is passed in).

Every URL found goes through :meth:`TrapGuard.admit` before it is deduplicated and
queued (docs/architecture.md, "The flow of one URL"). A URL that must not be
crawled gets a :class:`Verdict`: a :class:`BlockReason` token, recorded in the
``blocked`` table, and a detail a user can read, such as ``depth 11 > max_depth 10``.

The trap rules are heuristics for the classic infinite URL spaces (calendars,
endless pagination, relative links that repeat path segments, ever deeper paths);
each is bounded by a ``CrawlConfig`` field so a user can loosen it. Session ids in
query strings are not a trap here: ``urls.normalize`` strips them from the dedupe key.
"""

from __future__ import annotations

import datetime
import re
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

from core import urls
from core.config import CrawlConfig, Scope
from core.errors import UrlError


class BlockReason(StrEnum):
    """Why a URL was not crawled; the value is the token stored in ``blocked.reason``.

    Member names are the tokens in upper case (``BlockReason.HOST_CAP == "host_cap"``);
    ``BlockReason(err.reason)`` maps a ``UrlError`` to ``bad_url`` or ``scheme``.

    Members (by value):
        robots: robots.txt disallows the URL for our token (RFC 9309 §2.2.2).
        robots_unavailable: robots.txt could not be fetched (5xx or network error)
            and ``robots_on_failure`` is ``disallow`` (RFC 9309 §2.3.1.4).
        depth: more links from a seed than ``max_depth``.
        host_cap: the host already had ``max_per_host`` URLs admitted.
        path_depth: more non-empty path segments than ``max_path_depth``.
        repeating_path: one path segment occurs more than ``max_segment_repeats``
            times (``/a/b/a/b/a/``: relative links resolved again and again).
        calendar: a year in the path or query more than ``calendar_window_years``
            after today (an endless calendar).
        pagination: a page or offset number above ``max_page_param``.
        url_length: longer than ``max_url_length`` characters.
        scheme: not http or https (``mailto:``, ``javascript:``, ``data:``, ...).
        bad_url: cannot be parsed, has no host or a bad port.
        scope: outside the crawl scope (``host``, ``domain`` or ``any``) of the seeds.
        redirect_loop: a redirect leads back to a URL already in its chain.
        too_many_redirects: a redirect chain longer than ``max_redirects`` hops.
        private_address: the host resolves to an address the crawl may not reach.
        dns: the host name does not resolve.
    """

    ROBOTS = "robots"
    ROBOTS_UNAVAILABLE = "robots_unavailable"
    DEPTH = "depth"
    HOST_CAP = "host_cap"
    PATH_DEPTH = "path_depth"
    REPEATING_PATH = "repeating_path"
    CALENDAR = "calendar"
    PAGINATION = "pagination"
    URL_LENGTH = "url_length"
    SCHEME = "scheme"
    BAD_URL = "bad_url"
    SCOPE = "scope"
    REDIRECT_LOOP = "redirect_loop"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    PRIVATE_ADDRESS = "private_address"
    DNS = "dns"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A URL is blocked: ``reason`` (the stored token) and ``detail`` (one line for users)."""

    reason: BlockReason
    detail: str


class ScopePolicy:
    """Which URLs belong to the crawl, by the hosts of its seeds.

    Scopes (``CrawlConfig.scope``):
        ``host``: the URL's :func:`core.urls.host_key` is a seed's (the port counts,
            the scheme does not: ``http://a/`` and ``https://a/`` share one host);
        ``domain``: the URL's host has a seed's registered domain by the Public
            Suffix List (:func:`core.urls.registered_domain`; ports ignored);
        ``any``: every URL.
    With no seed added, ``host`` and ``domain`` allow nothing.
    """

    __slots__ = ("_keys", "scope")

    def __init__(self, scope: Scope) -> None:
        """A policy for ``scope`` with no seeds yet."""
        self.scope: Scope = scope
        self._keys: set[str] = set()

    def _key(self, url: str) -> str:
        """The scope key of ``url``: host key or registered domain; raises ``UrlError``."""
        key = urls.host_key(url)
        if self.scope == "host":
            return key
        # the host name: the host key without its port (an IPv6 literal keeps brackets)
        host = key[: key.index("]") + 1] if key.startswith("[") else key.partition(":")[0]
        return urls.registered_domain(host)

    def add_seed(self, url: str) -> None:
        """Widen the scope to the host (or registered domain) of the seed ``url``.

        Raises:
            UrlError: ``url`` has no host or cannot be parsed.
        """
        if self.scope != "any":
            self._keys.add(self._key(url))

    def allows(self, url: str) -> bool:
        """Whether ``url`` (a cleaned URL) is inside the scope.

        Raises:
            UrlError: ``url`` has no host or cannot be parsed (scope ``any`` never raises).
        """
        return self.scope == "any" or self._key(url) in self._keys

    def explain(self, url: str) -> str:
        """One line saying why ``url`` is outside the scope (for a ``Verdict`` detail)."""
        kind = "host" if self.scope == "host" else "registered domain"
        seeds = ", ".join(sorted(self._keys)[:3]) or "none"
        if len(self._keys) > 3:
            seeds += f", ... ({len(self._keys)} in all)"
        return f"{kind} {self._key(url)!r} is outside scope {self.scope!r} (seeds: {seeds})"


#: Query parameters that carry a page number or an item offset.
PAGE_PARAMS: frozenset[str] = frozenset({"page", "p", "pg", "offset", "start"})
#: Query parameters whose value is a year.
YEAR_PARAMS: frozenset[str] = frozenset({"year", "yr"})

#: A path segment that is a date: a year 1900-2199, optionally with a month and a
#: day and a file extension (``2031``, ``2031-05``, ``2031_05_01``, ``2031-05-01.html``).
_PATH_DATE = re.compile(r"(19[0-9]{2}|2[01][0-9]{2})(?:[-_.][0-9]{1,2}){0,2}(?:\.[A-Za-z]{1,5})?")
#: A query value that is a date: a year 1900-2199 with at least a month
#: (``2031-05``, ``2031-05-01``, ``2031/05``); a bare number in a query is an id or a
#: page as often as a year, so it counts only under a :data:`YEAR_PARAMS` name.
_QUERY_DATE = re.compile(r"(19[0-9]{2}|2[01][0-9]{2})(?:[-_./][0-9]{1,2}){1,2}(?:T.*)?")
#: Longer digit strings are compared as "huge" without converting them (Python
#: refuses int() of more than 4300 digits, and nothing here needs the exact value).
_MAX_DIGITS = 18
_HUGE = 10**_MAX_DIGITS


def _number(text: str) -> int | None:
    """``text`` as a non-negative integer if it is only ASCII digits, else ``None``."""
    if not text or not text.isascii() or not text.isdigit():
        return None
    return int(text) if len(text) <= _MAX_DIGITS else _HUGE


def _show(text: str) -> str:
    """``text`` quoted and cut to 40 characters for a detail line."""
    return repr(text if len(text) <= 40 else text[:40] + "...")


def _digits(text: str) -> str:
    """A number's digits for a detail line, cut to 20 characters."""
    return text if len(text) <= 20 else text[:20] + "..."


class TrapGuard:
    """Decides whether a URL may be crawled: :meth:`admit` returns ``None`` or a ``Verdict``.

    Args:
        config: the limits (``max_url_length``, ``max_depth``, ``max_per_host``,
            ``max_path_depth``, ``max_segment_repeats``, ``calendar_window_years``,
            ``max_page_param``).
        scope: the seeds' scope; seeds are added to it by the caller.
        today: the date calendar years are measured from (pure: no clock is read).
    """

    __slots__ = ("config", "scope", "today")

    def __init__(self, config: CrawlConfig, scope: ScopePolicy, today: datetime.date) -> None:
        """A guard with ``config``'s limits, ``scope`` and ``today``'s year."""
        self.config = config
        self.scope = scope
        self.today = today

    def admit(
        self, url: str, depth: int, host_count: int, *, is_seed: bool = False
    ) -> Verdict | None:
        """``None`` if ``url`` may be crawled, else the first rule it breaks.

        Checks in order (docs/architecture.md, ``core/traps.py``):

        1. ``url_length``: ``len(url) > max_url_length`` characters.
        2. ``scope``: not :meth:`ScopePolicy.allows` (skipped when ``is_seed``:
           seeds define the scope).
        3. ``depth``: ``depth > max_depth``.
        4. ``host_cap``: ``host_count >= max_per_host`` (one more would exceed it).
        5. ``path_depth``: more than ``max_path_depth`` non-empty path segments.
        6. ``repeating_path``: one path segment occurs more than
           ``max_segment_repeats`` times (empty segments ignored).
        7. ``calendar``: a year more than ``calendar_window_years`` after
           ``today.year`` in a path segment that is a date (``/2031/``,
           ``/2031-05-01/``, ``/2031-05.html``; years 1900-2199, not right after a
           ``page`` segment), in a query value that is a date with at least a month
           (``?d=2031-05``), or in a ``year``/``yr`` parameter (any number).
        8. ``pagination``: a ``page``/``p``/``pg``/``offset``/``start`` query
           parameter (name case-insensitive) or a path ``/page/N`` with a number
           above ``max_page_param``.

        A ``url`` without a host, with a bad port or that cannot be parsed gets
        ``bad_url`` instead of raising (checked with the scope, first for seeds).

        Args:
            url: a URL returned by :func:`core.urls.clean`.
            depth: links followed from a seed (a seed is 0; a redirect keeps its depth).
            host_count: URLs of this URL's host admitted so far.
            is_seed: ``url`` is a seed: the scope check is skipped.

        Returns:
            ``None`` to admit, or ``Verdict(reason, detail)``.
        """
        config = self.config
        if len(url) > config.max_url_length:
            return Verdict(
                BlockReason.URL_LENGTH,
                f"URL has {len(url)} characters > max_url_length {config.max_url_length}",
            )
        try:
            if not is_seed and not self.scope.allows(url):
                return Verdict(BlockReason.SCOPE, self.scope.explain(url))
            host = urls.host_key(url)
        except UrlError as exc:
            return Verdict(BlockReason.BAD_URL, str(exc))
        # the path starts at the first "/" after "://" (a cleaned URL has no fragment)
        slash = url.find("/", url.find("://") + 3)
        rest = url[slash:].partition("#")[0] if slash >= 0 else ""
        path, _, query_text = rest.partition("?")
        if depth > config.max_depth:
            return Verdict(BlockReason.DEPTH, f"depth {depth} > max_depth {config.max_depth}")
        if host_count >= config.max_per_host:
            return Verdict(
                BlockReason.HOST_CAP,
                f"host {host!r} already has {host_count} URLs (max_per_host {config.max_per_host})",
            )
        segments = [segment for segment in path.split("/") if segment]
        if len(segments) > config.max_path_depth:
            return Verdict(
                BlockReason.PATH_DEPTH,
                f"path has {len(segments)} segments > max_path_depth {config.max_path_depth}",
            )
        if len(segments) > config.max_segment_repeats:
            segment, count = Counter(segments).most_common(1)[0]
            if count > config.max_segment_repeats:
                return Verdict(
                    BlockReason.REPEATING_PATH,
                    f"segment {_show(segment)} repeats {count} times "
                    f"(max {config.max_segment_repeats})",
                )
        query = [piece.partition("=") for piece in query_text.split("&") if piece]
        verdict = self._calendar(segments, query)
        if verdict is None:
            verdict = self._pagination(segments, query)
        return verdict

    def _far_year(self, year: int) -> bool:
        """Whether ``year`` is more than ``calendar_window_years`` after today's.

        Only the future counts: no real content is dated years ahead, while archives
        of past years (a blog's ``/2019/05/``) are real content; an endless calendar
        into the past is cut by the depth and per-host limits.
        """
        return year - self.today.year > self.config.calendar_window_years

    def _calendar_detail(self, year: int, where: str) -> Verdict:
        """The ``calendar`` verdict for ``year`` found in ``where``."""
        window = self.config.calendar_window_years
        shown = str(year) if year < _HUGE else "(huge)"
        return Verdict(
            BlockReason.CALENDAR,
            f"year {shown} in {where} is more than {window} years after {self.today.year}",
        )

    def _calendar(self, segments: list[str], query: list[tuple[str, str, str]]) -> Verdict | None:
        """The ``calendar`` verdict for the path ``segments`` and ``query`` pieces.

        A path segment right after a ``page`` segment is a page number, not a year
        (``/page/2000/`` is left to the pagination rule).
        """
        for index, segment in enumerate(segments):
            match = _PATH_DATE.fullmatch(segment)
            if match is not None and (index == 0 or segments[index - 1].lower() != "page"):
                year = int(match.group(1))
                if self._far_year(year):
                    return self._calendar_detail(year, f"path segment {_show(segment)}")
        for name, _, value in query:
            if name.lower() in YEAR_PARAMS:
                year_value = _number(value)
                if year_value is not None and self._far_year(year_value):
                    return self._calendar_detail(year_value, f"query {name}={_digits(value)}")
                continue
            match = _QUERY_DATE.fullmatch(value)
            if match is not None:
                year = int(match.group(1))
                if self._far_year(year):
                    return self._calendar_detail(year, f"query {name}={_show(value)}")
        return None

    def _pagination(self, segments: list[str], query: list[tuple[str, str, str]]) -> Verdict | None:
        """The ``pagination`` verdict for the path ``segments`` and ``query`` pieces."""
        limit = self.config.max_page_param
        for name, _, value in query:
            if name.lower() in PAGE_PARAMS:
                number = _number(value)
                if number is not None and number > limit:
                    return Verdict(
                        BlockReason.PAGINATION,
                        f"{name}={_digits(value)} > max_page_param {limit}",
                    )
        for index, segment in enumerate(segments[:-1]):
            if segment.lower() == "page":
                number = _number(segments[index + 1])
                if number is not None and number > limit:
                    return Verdict(
                        BlockReason.PAGINATION,
                        f"/page/{_digits(segments[index + 1])} > max_page_param {limit}",
                    )
        return None


__all__ = ["PAGE_PARAMS", "YEAR_PARAMS", "BlockReason", "ScopePolicy", "TrapGuard", "Verdict"]
