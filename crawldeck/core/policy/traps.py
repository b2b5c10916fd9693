"""Crawl scope and crawler-trap guards (pure: no I/O, no clock; ``today`` is passed in).

Every URL found goes through :meth:`TrapGuard.admit` before it is deduplicated and
queued (docs/architecture.md, "The flow of one URL"). A URL that must not be
crawled gets a :class:`Verdict`: a :class:`BlockReason` token, recorded in the
``blocked`` table, and a detail a user can read, such as ``depth 11 > max_depth 10``.

The trap rules are heuristics for the classic infinite URL spaces (calendars,
endless pagination, relative links that repeat path segments, ever deeper paths,
redirects that grow their URL); each is bounded by a ``CrawlConfig`` field so a user
can loosen it. Session ids in query strings are not a trap here: ``urls.normalize``
strips them from the dedupe key.

Two parts of the rules live in modules of their own: the date templates of the
calendar budget and their counters (``core.policy.date_templates``), which the guard asks,
and the redirect hops that grow their URL (``core.policy.redirect_traps``), which
``core.net.redirects`` asks; their verdicts are this module's ``Verdict`` and
``BlockReason``.
"""

from __future__ import annotations

import datetime
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from crawldeck.core.config import CrawlConfig, Scope
from crawldeck.core.config_checks import HostOverride
from crawldeck.core.errors import UrlError
from crawldeck.core.policy import urls
from crawldeck.core.policy.date_templates import (
    DATE_HINT,
    DateCounts,
    NewestYears,
    date_template,
    date_template_with_years,
    template_host,
)


class BlockReason(StrEnum):
    """Why a URL was not crawled; the value is the token stored in ``blocked.reason``.

    Member names are the tokens in upper case (``BlockReason.HOST_CAP == "host_cap"``);
    ``BlockReason(err.reason)`` maps a ``UrlError`` to ``bad_url`` or ``scheme``.

    Members (by value):
        robots: robots.txt disallows the URL for our token (RFC 9309 §2.2.2).
        robots_unavailable: robots.txt could not be fetched (5xx or network error)
            and ``robots_on_failure`` is ``disallow`` (RFC 9309 §2.3.1.4).
        depth: more links from a seed than ``max_depth``.
        host_cap: the host already had ``max_per_host`` URLs admitted (or its
            ``[hosts."..."]`` table's ``max_pages``).
        path_depth: more non-empty path segments than ``max_path_depth``.
        repeating_path: one path segment occurs more than ``max_segment_repeats``
            times (``/a/b/a/b/a/``: relative links resolved again and again).
        calendar: a year in the path or query more than ``calendar_window_years``
            after today, a date template of the host that already has
            ``calendar_max_dates`` URLs (an endless calendar, into the future or
            the past), or a date more than ``calendar_max_years`` before the host's
            newest on a calendar walked page to page (see :meth:`TrapGuard.admit`).
        pagination: a page or offset number above ``max_page_param``.
        url_length: longer than ``max_url_length`` characters.
        scheme: not http or https (``mailto:``, ``javascript:``, ``data:``, ...).
        bad_url: cannot be parsed, has no host or a bad port.
        scope: outside the crawl scope (``host``, ``domain`` or ``any``) of the seeds.
        excluded: matches an ``exclude`` pattern, or no ``include`` pattern when some
            are given (``--include`` / ``--exclude``; seeds need match no include).
        redirect_loop: a redirect leads back to a URL already in its chain.
        too_many_redirects: a redirect chain longer than ``max_redirects`` hops.
        redirect_trap: the second hop of one redirect chain that grows the URL by
            repeating or nesting what it had
            (``core.policy.redirect_traps.redirect_grows``); the chain
            is cut there instead of at ``max_redirects``.
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
    EXCLUDED = "excluded"
    REDIRECT_LOOP = "redirect_loop"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    REDIRECT_TRAP = "redirect_trap"
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
        ``host``: the URL's :func:`core.policy.urls.host_key` is a seed's (the port counts,
            the scheme does not: ``http://a/`` and ``https://a/`` share one host);
        ``domain``: the URL's host has a seed's registered domain by the Public
            Suffix List (:func:`core.policy.urls.registered_domain`; ports ignored);
        ``any``: every URL.
    With no seed added, ``host`` and ``domain`` allow nothing.
    """

    __slots__ = ("_keys", "scope")

    def __init__(self, scope: Scope) -> None:
        """A policy for ``scope`` with no seeds yet."""
        self.scope: Scope = scope
        self._keys: set[str] = set()

    def _key(self, url: str, host: str | None = None) -> str:
        """The scope key of ``url`` (its host key ``host`` if known): host key or
        registered domain; raises ``UrlError``."""
        key = urls.host_key(url) if host is None else host
        if self.scope == "host":
            return key
        # the host name: the host key without its port (an IPv6 literal keeps brackets)
        host = key[: key.index("]") + 1] if key.startswith("[") else key.partition(":")[0]
        return urls.registered_domain(host)

    def add_seed(self, url: str, *, host: str | None = None) -> None:
        """Widen the scope to the host (or registered domain) of the seed ``url``;
        ``host``: its host key (``urls.host_key(url)``) when the caller has it.

        Raises:
            UrlError: ``url`` has no host or cannot be parsed.
        """
        if self.scope != "any":
            self._keys.add(self._key(url, host))

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


class UrlPatterns:
    """The ``include`` and ``exclude`` regular expressions of a crawl, compiled once.

    A URL is refused (``excluded``) when an ``exclude`` pattern is found in it
    (``re.search``), or when ``include`` patterns are given and none is found in it;
    ``exclude`` is checked first. A seed passes ``include`` unchecked: it is where the
    crawl starts, as wget's start URLs pass no ``--accept-regex`` (``wget(1)``:
    recursive retrieval filters the links it follows) and Heritrix's seeds are in
    scope by their own SURT prefix; ``exclude`` refuses a seed too, as a Heritrix
    reject rule after the seeds' accept rule does.

    Args:
        include, exclude: Python ``re`` patterns (``CrawlConfig.include`` /
            ``exclude``, which checked that they compile).

    Raises:
        re.error: a pattern does not compile (only for patterns not from a config).
    """

    __slots__ = ("exclude", "include")

    def __init__(self, include: Iterable[str] = (), exclude: Iterable[str] = ()) -> None:
        """Compile ``include`` and ``exclude``."""
        self.include = tuple(re.compile(pattern) for pattern in include)
        self.exclude = tuple(re.compile(pattern) for pattern in exclude)

    @classmethod
    def from_config(cls, config: CrawlConfig) -> UrlPatterns:
        """The patterns of ``config`` (its keys ``include`` and ``exclude``)."""
        return cls(config.include, config.exclude)

    def __bool__(self) -> bool:
        """Whether there is any pattern (no pattern: every URL passes)."""
        return bool(self.include or self.exclude)

    def verdict(self, url: str, *, is_seed: bool = False) -> Verdict | None:
        """The ``excluded`` verdict of the cleaned URL ``url``, or ``None`` if it passes.

        The detail names the pattern found (``matches exclude '\\.pdf$'``) or the
        includes none of which is (``matches no include ('/docs/')``, three at most).
        Never raises.
        """
        for pattern in self.exclude:
            if pattern.search(url) is not None:
                return Verdict(
                    BlockReason.EXCLUDED, f"matches exclude {_show(pattern.pattern, 60)}"
                )
        if not self.include or is_seed:
            return None
        for pattern in self.include:
            if pattern.search(url) is not None:
                return None
        shown = ", ".join(_show(pattern.pattern, 60) for pattern in self.include[:3])
        if len(self.include) > 3:
            shown += f", ... ({len(self.include)} in all)"
        return Verdict(BlockReason.EXCLUDED, f"matches no include ({shown})")


#: A path segment that is a month after a bare year (``/2031/05/``, ``/2031/may/``).
_PATH_MONTH = re.compile(
    r"(?:0?[1-9]|1[0-2]|(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?"
    r"|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?))"
    r"(?:\.[A-Za-z][A-Za-z0-9]{0,4})?"
)
#: Query parameters that carry a page number or an item offset.
PAGE_PARAMS: frozenset[str] = frozenset({"page", "p", "pg", "offset", "start"})
#: Query parameters whose value is a year.
YEAR_PARAMS: frozenset[str] = frozenset({"year", "yr"})

#: A path segment that is a date: a year 1900-2199, optionally with a month and a
#: day (group 2) and a file extension (``2031``, ``2031-05``, ``2031_05_01``,
#: ``2031-05-01.html``).
_PATH_DATE = re.compile(
    r"(19[0-9]{2}|2[01][0-9]{2})((?:[-_.][0-9]{1,2}){0,2})(?:\.[A-Za-z][A-Za-z0-9]{0,4})?"
)
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


def _show(text: str, limit: int = 40) -> str:
    """``text`` quoted and cut to ``limit`` characters for a detail line."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _digits(text: str) -> str:
    """A number's digits for a detail line, cut to 20 characters."""
    return text if len(text) <= 20 else text[:20] + "..."


@dataclass(frozen=True, slots=True)
class TrapSettings:
    """The limits ``TrapGuard`` uses, named and counted as ``CrawlConfig``'s keys.

    Attributes:
        max_url_length: longest URL admitted (characters).
        max_depth: links followed from a seed.
        max_per_host: URLs admitted per host.
        max_path_depth: most non-empty path segments.
        max_segment_repeats: most times one path segment may occur.
        max_page_param: highest page/offset number.
        calendar_window_years: years after today beyond which a date is a trap.
        calendar_max_dates: URLs admitted per host and date template.
        calendar_max_dates_per_host: URLs admitted per host past each template's
            first, over all its templates.
        calendar_max_years: years a calendar walked page to page may run back from
            its host's newest date.
        strip_params: parameters removed from the dedupe key (``urls.normalize``).

    Not checked here: ``from_config`` takes them from a ``CrawlConfig``, which
    checked their ranges.
    """

    max_url_length: int
    max_depth: int
    max_per_host: int
    max_path_depth: int
    max_segment_repeats: int
    max_page_param: int
    calendar_window_years: int
    calendar_max_dates: int
    calendar_max_dates_per_host: int
    calendar_max_years: int
    strip_params: tuple[str, ...]

    @classmethod
    def from_config(cls, config: CrawlConfig) -> TrapSettings:
        """The trap limits of ``config`` (its keys of the same names)."""
        return cls(
            max_url_length=config.max_url_length,
            max_depth=config.max_depth,
            max_per_host=config.max_per_host,
            max_path_depth=config.max_path_depth,
            max_segment_repeats=config.max_segment_repeats,
            max_page_param=config.max_page_param,
            calendar_window_years=config.calendar_window_years,
            calendar_max_dates=config.calendar_max_dates,
            calendar_max_dates_per_host=config.calendar_max_dates_per_host,
            calendar_max_years=config.calendar_max_years,
            strip_params=config.strip_params,
        )


class TrapGuard:
    """Decides whether a URL may be crawled: :meth:`admit` returns ``None`` or a ``Verdict``.

    The guard keeps two pieces of state (both in ``core.policy.date_templates``): how many
    admitted URLs each date template has (``date_template``) and, per host, how many of
    its admitted URLs were not the first of their template, in a count-min sketch of a
    fixed 1.5 MiB taken at the first dated URL (nothing per host or per template; see
    ``DateCounts``); and the newest year of a date with a month admitted per host
    (``month_years``), in another fixed 1.5 MiB (``NewestYears``). A resumed crawl
    gives both back with :meth:`observe`.

    Args:
        settings: the limits (``TrapSettings.from_config(config)``).
        scope: the seeds' scope; seeds are added to it by the caller.
        today: the date calendar years are measured from (pure: no clock is read).
        patterns: the ``include`` / ``exclude`` patterns (``UrlPatterns.from_config``;
            default none).
        hosts: the crawl's per-host settings (``CrawlConfig.hosts``): a host whose
            entry has a ``max_pages`` has it as its cap in place of ``max_per_host``.
    """

    __slots__ = (
        "_dates",
        "_found_on",
        "_host_caps",
        "_newest",
        "_patterns",
        "scope",
        "settings",
        "today",
    )

    def __init__(
        self,
        settings: TrapSettings,
        scope: ScopePolicy,
        today: datetime.date,
        *,
        patterns: UrlPatterns | None = None,
        hosts: Iterable[HostOverride] = (),
    ) -> None:
        """A guard with ``settings``' limits, ``scope``, ``today``'s year, ``patterns``
        and the caps of ``hosts``."""
        self.settings = settings
        self.scope = scope
        self.today = today
        self._patterns = patterns if patterns is not None else UrlPatterns()
        self._host_caps = {e.host: e.max_pages for e in hosts if e.max_pages is not None}
        self._dates = DateCounts()
        self._newest = NewestYears()
        self._found_on: tuple[str, str | None] = ("", None)  # a page URL, its template

    @property
    def patterns(self) -> UrlPatterns:
        """The crawl's ``include`` / ``exclude`` patterns (step 3 of :meth:`admit`)."""
        return self._patterns

    def admit(
        self,
        url: str,
        depth: int,
        host_count: int,
        *,
        is_seed: bool = False,
        key: str | None = None,
        found_on: str | None = None,
    ) -> Verdict | None:
        """``None`` if ``url`` may be crawled, else the first rule it breaks.

        Checks in order (docs/architecture.md, ``core/policy/traps.py``):

        1. ``url_length``: ``len(url) > max_url_length`` characters.
        2. ``scope``: not :meth:`ScopePolicy.allows` (skipped when ``is_seed``:
           seeds define the scope).
        3. ``excluded``: :meth:`UrlPatterns.verdict` (an ``exclude`` pattern is found
           in ``url``, seeds too; or ``include`` patterns are given and none is found
           in it, skipped when ``is_seed``).
        4. ``depth``: ``depth > max_depth``.
        5. ``host_cap``: ``host_count >= max_per_host``, or the host's own cap
           (its ``[hosts."..."]`` ``max_pages``, from ``hosts``) when it has one (one
           more would exceed it).
        6. ``path_depth``: more than ``max_path_depth`` non-empty path segments.
        7. ``repeating_path``: one path segment occurs more than
           ``max_segment_repeats`` times (empty segments ignored).
        8. ``calendar``: a year more than ``calendar_window_years`` after
           ``today.year`` in a path segment that is a date (``/2031/``,
           ``/2031-05-01/``, ``/2031-05.html``; years 1900-2199, not right after a
           ``page`` segment), in a query value that is a date with at least a month
           (``?d=2031-05``), or in a ``year``/``yr`` parameter (any number).
        9. ``pagination``: a ``page``/``p``/``pg``/``offset``/``start`` query
           parameter (name case-insensitive) or a path ``/page/N`` with a number
           above ``max_page_param``.
        10. ``calendar``: the URL's ``date_templates.date_template`` (read from ``key``)
           already has ``calendar_max_dates`` admitted URLs (a calendar into the past or
           the future, one page per date); or the template has at least one and the
           URL's host already has ``calendar_max_dates_per_host`` admitted URLs that
           were not the first of their template (many calendars on one host: one per
           venue, per room, per team). An admitted URL with a template adds one to it,
           and one to its host's total unless it is its template's first, so each
           template lets at most ``calendar_max_dates`` URLs through and each host at
           most ``calendar_max_dates_per_host`` beyond one per template. A template with
           one date (a blog post ``/2019/05/my-post``) never counts towards its host's
           total. Before the budget, a calendar walked page to page: ``url`` was found
           on a page of its own date template (``found_on``: ``/cal/2019-04/`` on
           ``/cal/2019-05/``, a "previous month" link) and the oldest year of its dates
           with a month (``date_templates.month_years``) is more than
           ``calendar_max_years`` before the newest such year admitted on its host. An
           archive reached from index pages is not walked: its dated pages are found on
           pages of no date or of another template (the blog's home, an archive list, a
           post), so it is admitted however old (up to the budget). A year alone
           (``/2019/``, ``/p/2029``) never counts here: a year-only walk back ends at
           1900 anyway.

        A ``url`` without a host, with a bad port or that cannot be parsed gets
        ``bad_url`` instead of raising (checked with the scope, first for seeds).

        Args:
            url: a URL returned by :func:`core.policy.urls.clean`, not admitted before (the
                caller checks its seen set first: every call that admits counts).
            depth: links followed from a seed (a seed is 0; a redirect keeps its depth).
            host_count: URLs of this URL's host admitted so far.
            is_seed: ``url`` is a seed: the scope and ``include`` checks are skipped.
            key: ``url``'s dedupe key (``urls.normalize(url, settings.strip_params)``)
                if the caller has it; otherwise it is computed (for a URL that passes
                steps 1-9).
            found_on: the cleaned URL of the page ``url`` was found on (``None``: a
                seed, a redirect's target, or not known); step 10 reads its template.

        Returns:
            ``None`` to admit, or ``Verdict(reason, detail)``.
        """
        limits = self.settings
        if len(url) > limits.max_url_length:
            return Verdict(
                BlockReason.URL_LENGTH,
                f"URL has {len(url)} characters > max_url_length {limits.max_url_length}",
            )
        try:
            if not is_seed and not self.scope.allows(url):
                return Verdict(BlockReason.SCOPE, self.scope.explain(url))
            host = urls.host_key(url)
        except UrlError as exc:
            return Verdict(BlockReason.BAD_URL, str(exc))
        if self._patterns:
            verdict = self._patterns.verdict(url, is_seed=is_seed)
            if verdict is not None:
                return verdict
        # the path starts at the first "/" after "://" (a cleaned URL has no fragment)
        slash = url.find("/", url.find("://") + 3)
        rest = url[slash:].partition("#")[0] if slash >= 0 else ""
        path, _, query_text = rest.partition("?")
        if depth > limits.max_depth:
            return Verdict(BlockReason.DEPTH, f"depth {depth} > max_depth {limits.max_depth}")
        cap = self._host_caps.get(host) if self._host_caps else None
        if cap is not None:
            if host_count >= cap:
                return Verdict(
                    BlockReason.HOST_CAP,
                    f'host {host!r} already has {host_count} URLs (hosts."{host}".max_pages {cap})',
                )
        elif host_count >= limits.max_per_host:
            return Verdict(
                BlockReason.HOST_CAP,
                f"host {host!r} already has {host_count} URLs (max_per_host {limits.max_per_host})",
            )
        segments = [segment for segment in path.split("/") if segment]
        if len(segments) > limits.max_path_depth:
            return Verdict(
                BlockReason.PATH_DEPTH,
                f"path has {len(segments)} segments > max_path_depth {limits.max_path_depth}",
            )
        # a segment occurring c times leaves at least c - 1 duplicates
        if len(segments) - len(set(segments)) >= limits.max_segment_repeats:
            segment, count = Counter(segments).most_common(1)[0]
            if count > limits.max_segment_repeats:
                return Verdict(
                    BlockReason.REPEATING_PATH,
                    f"segment {_show(segment)} repeats {count} times "
                    f"(max {limits.max_segment_repeats})",
                )
        query = [piece.partition("=") for piece in query_text.split("&") if piece]
        verdict = self._calendar(segments, query)
        if verdict is None:
            verdict = self._pagination(segments, query)
        # most keys hold no four digits starting with 1 or 2, so no date (the host's
        # digits only cost date_template's own two searches)
        if verdict is None and (key is None or DATE_HINT.search(key) is not None):
            verdict = self._date_budget(url, key, found_on)
        return verdict

    def observe(self, key: str) -> None:
        """Count the admitted URL whose dedupe key is ``key`` towards its date template.

        For a resumed crawl: call it once for each URL admitted by an earlier run
        (each frontier key, whatever its state), before new URLs are admitted, so a
        calendar's budget (and its host's) is not handed out again, and its host's
        newest date is known again. No verdict, no
        budget check; a key without four digits starting with 1 or 2 costs two
        searches.

        Args:
            key: a dedupe key (:func:`core.policy.urls.normalize` of a cleaned URL).
        """
        years: list[int] = []
        template = date_template_with_years(key, years)
        if template is None:
            return
        if self._dates.add_below(template, DateCounts.CEILING):
            self._dates.add_below(template_host(template), DateCounts.CEILING)
        if years:
            self._newest.note(template_host(template), max(years))

    def _date_budget(self, url: str, key: str | None, found_on: str | None) -> Verdict | None:
        """Step 10 of :meth:`admit`: refuse a calendar walked too far back from its
        host's newest date, or when the date template or its host's calendar total is
        full; else count the URL."""
        if key is None:
            try:
                key = urls.normalize(url, self.settings.strip_params)
            except UrlError:
                return None
        years: list[int] = []
        template = date_template_with_years(key, years)
        if template is None:
            return None
        host = template_host(template)
        if years and found_on is not None and self._template_of_page(found_on) == template:
            newest = self._newest.newest(host)
            limit = self.settings.calendar_max_years
            if newest - min(years) > limit:
                return Verdict(
                    BlockReason.CALENDAR,
                    f"{min(years)} is more than {limit} years before {newest}, the newest "
                    f"date on host {_show(host[2:])}, walking template "
                    f"{_show(template[len(host) :], 60)} (calendar_max_years {limit})",
                )
        dates = self._dates
        budget = self.settings.calendar_max_dates
        count = dates.count(template)
        if count >= budget:
            shown = template[len(host) :]  # the path and query
            return Verdict(
                BlockReason.CALENDAR,
                f"template {_show(shown, 60)} has {count} dates (calendar_max_dates {budget})",
            )
        if count:
            limit = self.settings.calendar_max_dates_per_host
            total = dates.count(host)
            if total >= limit:
                return Verdict(
                    BlockReason.CALENDAR,
                    f"host {_show(host[2:])} has {total} dates past the first of their "
                    f"templates (calendar_max_dates_per_host {limit})",
                )
            dates.add_below(host, limit)
        dates.add_below(template, budget)
        if years:
            self._newest.note(host, max(years))
        return None

    def _template_of_page(self, page_url: str) -> str | None:
        """The date template of the page ``page_url`` (its links come one after the
        other: the last page's is kept)."""
        if self._found_on[0] != page_url:
            try:
                template = date_template(urls.normalize(page_url, self.settings.strip_params))
            except UrlError:
                template = None
            self._found_on = (page_url, template)
        return self._found_on[1]

    def _far_year(self, year: int) -> bool:
        """Whether ``year`` is more than ``calendar_window_years`` after today's.

        Only the future counts: no real content is dated years ahead, while archives
        of past years (a blog's ``/2019/05/``) are real content; an endless calendar
        into the past is cut by the date template budget (step 10 of :meth:`admit`).
        """
        return year - self.today.year > self.settings.calendar_window_years

    def _calendar_detail(self, year: int, where: str) -> Verdict:
        """The ``calendar`` verdict for ``year`` found in ``where``."""
        window = self.settings.calendar_window_years
        shown = str(year) if year < _HUGE else "(huge)"
        return Verdict(
            BlockReason.CALENDAR,
            f"year {shown} in {where} is more than {window} years after {self.today.year}",
        )

    def _calendar(self, segments: list[str], query: list[tuple[str, str, str]]) -> Verdict | None:
        """The ``calendar`` verdict for the path ``segments`` and ``query`` pieces (step 8
        of :meth:`admit`).

        A path segment right after a ``page`` segment is a page number, not a year
        (``/page/2000/`` is left to the pagination rule); a year alone in its segment is
        a date only with a month in the next one (``/2031/05/``): ``/many/2029`` or
        ``/issues/2100`` is an id (issue #25 trial 8: 171 numbered pages refused), and
        so is one with a file extension alone, ``/items/2031.html`` (trial 17).
        """
        for index, segment in enumerate(segments):
            if segment[0] not in "12":
                continue
            # a ";name=value" path parameter (a session id) is not part of the date
            bare = segment.partition(";")[0]
            match = _PATH_DATE.fullmatch(bare)
            if match is None:
                continue
            if not match.group(2) and (  # a year alone: a date with a month after it
                index + 1 >= len(segments)
                or not _PATH_MONTH.fullmatch(segments[index + 1].partition(";")[0])
            ):
                continue
            if index == 0 or segments[index - 1].lower() != "page":
                year = int(match.group(1))
                if self._far_year(year):
                    return self._calendar_detail(year, f"path segment {_show(segment)}")
        for name, _, value in query:
            if name.lower() in YEAR_PARAMS:
                year_value = _number(value)
                if year_value is not None and self._far_year(year_value):
                    return self._calendar_detail(year_value, f"query {name}={_digits(value)}")
                continue
            if value[:1] not in ("1", "2"):
                continue
            match = _QUERY_DATE.fullmatch(value)
            if match is not None:
                year = int(match.group(1))
                if self._far_year(year):
                    return self._calendar_detail(year, f"query {name}={_show(value)}")
        return None

    def _pagination(self, segments: list[str], query: list[tuple[str, str, str]]) -> Verdict | None:
        """The ``pagination`` verdict for the path ``segments`` and ``query`` pieces."""
        limit = self.settings.max_page_param
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


__all__ = [
    "PAGE_PARAMS",
    "YEAR_PARAMS",
    "BlockReason",
    "ScopePolicy",
    "TrapGuard",
    "TrapSettings",
    "UrlPatterns",
    "Verdict",
]
