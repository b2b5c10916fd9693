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
"""

from __future__ import annotations

import datetime
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import unquote

from crawldeck.core import urls
from crawldeck.core.config import CrawlConfig, HostOverride, Scope
from crawldeck.core.errors import UrlError


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
            repeating or nesting what it had (:func:`redirect_grows`); the chain
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


#: Query parameters that carry a page number or an item offset.
PAGE_PARAMS: frozenset[str] = frozenset({"page", "p", "pg", "offset", "start"})
#: Query parameters whose value is a year.
YEAR_PARAMS: frozenset[str] = frozenset({"year", "yr"})

#: A path segment that is a date: a year 1900-2199, optionally with a month and a
#: day and a file extension (``2031``, ``2031-05``, ``2031_05_01``, ``2031-05-01.html``).
_PATH_DATE = re.compile(
    r"(19[0-9]{2}|2[01][0-9]{2})(?:[-_.][0-9]{1,2}){0,2}(?:\.[A-Za-z][A-Za-z0-9]{0,4})?"
)
#: A query value that is a date: a year 1900-2199 with at least a month
#: (``2031-05``, ``2031-05-01``, ``2031/05``); a bare number in a query is an id or a
#: page as often as a year, so it counts only under a :data:`YEAR_PARAMS` name.
_QUERY_DATE = re.compile(r"(19[0-9]{2}|2[01][0-9]{2})(?:[-_./][0-9]{1,2}){1,2}(?:T.*)?")
#: Longer digit strings are compared as "huge" without converting them (Python
#: refuses int() of more than 4300 digits, and nothing here needs the exact value).
_MAX_DIGITS = 18
_HUGE = 10**_MAX_DIGITS

# ------------------------------------------------------------------ date templates

#: Where a URL's authority ends: its path or its query.
_AUTHORITY_END = re.compile(r"[/?]")
#: Every date a template reads holds a year 1000-2199 or a timestamp of 2001-2065, so
#: four digits starting with 1 or 2: a path or query without them costs one search (a
#: search with a leading character class is the fast one in ``re``).
_DATE_HINT = re.compile(r"[12][0-9]{3}")
#: Date parts as templates read them. A year alone is 1900-2199: 4-digit ids are too
#: common for more (a template of ids 1000-2199 would reach the default budget); a
#: year beside a month or a week is 1000-2199. Months 1-12, days 1-31 (one or two
#: digits; two where noted), English month names and their 3-letter abbreviations
#: in any case, ISO 8601 weeks ``W1``-``W53``.
_YEAR = r"(?:19[0-9]{2}|2[01][0-9]{2})"
_YEAR_DATED = r"(?:1[0-9]{3}|2[01][0-9]{2})"
_MONTH = r"(?:0?[1-9]|1[0-2])"
_DAY = r"(?:0?[1-9]|[12][0-9]|3[01])"
_MONTH_2 = r"(?:0[1-9]|1[0-2])"
_DAY_2 = r"(?:0[1-9]|[12][0-9]|3[01])"
_MONTH_NAME = (
    r"(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEK = r"[Ww](?:0?[1-9]|[1-4][0-9]|5[0-3])"
_EXTENSION = r"(?:\.[A-Za-z][A-Za-z0-9]{0,4})?"
#: Separators inside one date: ``-``, ``_``, ``.``, an escaped slash or space (a
#: dedupe key has ``-_.`` unescaped and other escapes in upper case); a raw ``/``
#: too in a query value.
_SEP = r"(?:[-_.]|%2F|%20)"
_QUERY_SEP = r"(?:[-_./]|%2F|%20)"
#: A date in a path (it starts a segment; an extension may end it). A group named
#: ``<placeholder>_<n>`` is a date part a template replaces, in alternative ``n`` of
#: its pattern (``0``: after every alternative), and the first part of each
#: alternative is not optional. A day or a numeric month written before the year has
#: two digits (``1.2.1234`` is a version).
_PATH_DATE_RUN = re.compile(
    # every form starts with at most four digits and a separator, or a month name
    r"/(?<!/[Pp][Aa][Gg][Ee]/)(?:(?=[0-9]{1,4}(?:[-_./%Ww]|$))(?:"
    # year first over segments: /2019/05, /2019/5/1, /2019/May, /2019/W18
    rf"(?P<y_1>{_YEAR_DATED})/(?:(?P<m_1>{_MONTH}|{_MONTH_NAME})(?:/(?P<d_1>{_DAY}))?"
    rf"|(?P<w_1>{_WEEK}))"
    # year first in one segment: 2019-05, 2019_05_01, 2019.05.01, 2019-May, 2019-W18
    rf"|(?P<y_2>{_YEAR_DATED})(?:(?P<sep2>{_SEP})(?P<m_2>{_MONTH}|{_MONTH_NAME})"
    rf"(?:(?P=sep2)(?P<d_2>{_DAY}))?|-?(?P<w_2>{_WEEK}))"
    # year last over segments: /01/05/2019 (day and month in either order), /05/2019
    rf"|(?P<d_3>{_DAY_2})/(?P<m_3>{_DAY_2})/(?P<y_3>{_YEAR_DATED})"
    rf"|(?P<m_4>{_MONTH_2})/(?P<y_4>{_YEAR_DATED})"
    # year last in one segment: 01.05.2019, 01-May-2019, 05-2019
    rf"|(?P<d_5>{_DAY_2})(?P<sep5>{_SEP})(?P<m_5>{_DAY_2})(?P=sep5)(?P<y_5>{_YEAR_DATED})"
    rf"|(?P<d_6>{_DAY})(?P<sep6>{_SEP})(?P<m_6>{_MONTH_NAME})(?P=sep6)(?P<y_6>{_YEAR_DATED})"
    rf"|(?P<m_7>{_MONTH_2})(?P<sep7>{_SEP})(?P<y_7>{_YEAR_DATED})"
    # a year alone: /2019, /2019.html
    rf"|(?P<y_8>{_YEAR}))"
    # a month name first: /May/2019, May-2019, May-01-2019
    rf"|(?=[AaDdFfJjMmNnOoSs])(?P<m_9>{_MONTH_NAME})(?:/|(?P<sep9>{_SEP})(?:(?P<d_9>{_DAY})(?P=sep9))?)"
    rf"(?P<y_9>{_YEAR_DATED})"
    rf")(?P<ext>{_EXTENSION})(?=/|$)"
)
#: A query value that is a whole date: the forms of a path segment (a raw ``/``
#: separates too; one-digit days and months before the year only with a slash, as
#: in ``5/1/2019``), then an optional time after ``T``, an escaped space or ``+``.
_QUERY_VALUE_DATE = re.compile(
    # every form starts with digits and a separator or a week, or with a month name
    r"=(?:(?=[0-9]{1,4}[-_./%Ww])(?:"
    rf"(?P<y_1>{_YEAR_DATED})(?:(?P<sep1>{_QUERY_SEP})(?P<m_1>{_MONTH}|{_MONTH_NAME})"
    rf"(?:(?P=sep1)(?P<d_1>{_DAY}))?|-?(?P<w_1>{_WEEK}))"
    rf"|(?P<d_2>{_DAY_2})(?P<sep2>{_QUERY_SEP})(?P<m_2>{_DAY_2})(?P=sep2)(?P<y_2>{_YEAR_DATED})"
    rf"|(?P<d_3>{_DAY})(?P<sep3>/|%2F)(?P<m_3>{_DAY})(?P=sep3)(?P<y_3>{_YEAR_DATED})"
    rf"|(?P<d_4>{_DAY})(?P<sep4>{_QUERY_SEP})(?P<m_4>{_MONTH_NAME})(?P=sep4)(?P<y_4>{_YEAR_DATED})"
    rf"|(?P<m_5>{_MONTH_2})(?P<sep5>{_QUERY_SEP})(?P<y_5>{_YEAR_DATED})"
    rf"|(?P<m_6>{_MONTH})(?P<sep6>/|%2F)(?P<y_6>{_YEAR_DATED}))"
    rf"|(?=[AaDdFfJjMmNnOoSs])(?P<m_7>{_MONTH_NAME})(?P<sep7>{_QUERY_SEP})(?:(?P<d_7>{_DAY})(?P=sep7))?"
    rf"(?P<y_7>{_YEAR_DATED})"
    r")(?:(?:T|%20|\+)(?P<t_0>[0-9][^&]*))?(?=&|$)"
)
#: A query value that is a number date: ``YYYYMM[DD]`` or a Unix timestamp of
#: 2001-09-09 to 2065-01-24 in seconds (10 digits) or milliseconds (13); which one
#: counts depends on the parameter's name (:data:`DATE_PARAMS`, :data:`TIME_PARAMS`).
_QUERY_NUMBER_DATE = re.compile(
    rf"=(?:(?P<y_1>{_YEAR_DATED})(?P<m_1>{_MONTH_2})(?P<d_1>{_DAY_2})?"
    r"|(?P<ts_2>[12][0-9]{9}(?:[0-9]{3})?))(?=&|$)"
)
#: Parameter names under which a compact date counts (and any name holding ``date``):
#: under other names an 8-digit number is an id as often as a date.
DATE_PARAMS: frozenset[str] = frozenset({"d", "day", "dt", "ym", "ymd", "month"})
#: Parameter names under which a Unix timestamp counts (and any name holding ``time``
#: or ``date``): ``t`` and ``_`` are the usual cache busters, which mint a new URL per
#: link like a calendar. Under other names a 10-digit number is an id.
TIME_PARAMS: frozenset[str] = frozenset({"t", "ts", "_", "epoch", "unix", "unixtime"})
#: Parameter names of a date split over several parameters (``?y=2019&m=5&d=1``);
#: month, day and week names count only beside a year name holding a year.
YEAR_PART_PARAMS: frozenset[str] = frozenset({"year", "yr", "y"})
MONTH_PART_PARAMS: frozenset[str] = frozenset({"month", "mon", "mo", "m"})
DAY_PART_PARAMS: frozenset[str] = frozenset({"day", "dd", "d"})
WEEK_PART_PARAMS: frozenset[str] = frozenset({"week", "wk", "w"})


#: The placeholder of each split-date parameter name (lowercased), and the values each
#: placeholder reads.
_PART_OF_NAME: dict[str, str] = {
    name: placeholder
    for names, placeholder in (
        (YEAR_PART_PARAMS, "y"),
        (MONTH_PART_PARAMS, "m"),
        (DAY_PART_PARAMS, "d"),
        (WEEK_PART_PARAMS, "w"),
    )
    for name in names
}
#: A year part's name and the first digit of its value (most queries have none).
_YEAR_PART = re.compile(rf"(?:^|&)(?:{'|'.join(sorted(YEAR_PART_PARAMS))})=[12]", re.IGNORECASE)
_PART_VALUES: dict[str, re.Pattern[str]] = {
    "y": re.compile(_YEAR_DATED),
    "m": re.compile(f"{_MONTH}|{_MONTH_NAME}"),
    "d": re.compile(_DAY),
    "w": re.compile(f"{_WEEK}|0?[1-9]|[1-4][0-9]|5[0-3]"),
}


def _placeholders(pattern: re.Pattern[str]) -> Callable[[re.Match[str]], str]:
    """The template maker of ``pattern`` (its groups named as in :data:`_PATH_DATE_RUN`):
    a function of one match that returns its text with each date part it matched
    replaced by its placeholder (``{y}``, ``{m}``, ``{d}``, ``{w}``, ``{t}``, ``{ts}``);
    separators, names and extensions stay as written."""
    by_alternative: dict[int, list[tuple[int, str]]] = {}
    for name, number in pattern.groupindex.items():
        placeholder, underscore, alternative = name.partition("_")
        if underscore:
            by_alternative.setdefault(int(alternative), []).append((number, f"{{{placeholder}}}"))
    after = sorted(by_alternative.pop(0, []))
    # groups are numbered in the order they open: their order in the text within one
    # alternative, and an alternative matched exactly when its first group did
    alternatives = [sorted(parts) + after for _, parts in sorted(by_alternative.items())]

    def template(match: re.Match[str]) -> str:
        spans = match.regs  # every group's (start, end), (-1, -1) if it did not match
        text, (at, end) = match.string, spans[0]
        out: list[str] = []
        for parts in alternatives:
            if spans[parts[0][0]][0] >= 0:
                for number, placeholder in parts:
                    start, stop = spans[number]
                    if start >= 0:
                        out += (text[at:start], placeholder)
                        at = stop
                break
        out.append(text[at:end])
        return "".join(out)

    return template


_path_template = _placeholders(_PATH_DATE_RUN)
_value_template = _placeholders(_QUERY_VALUE_DATE)
_number_template = _placeholders(_QUERY_NUMBER_DATE)


def _year_groups(pattern: re.Pattern[str]) -> tuple[int, ...]:
    """The numbers of ``pattern``'s year groups that sit beside a month or a week: every
    ``y_<n>`` but a path's year alone (``y_8``)."""
    return tuple(
        number
        for name, number in sorted(pattern.groupindex.items())
        if name.startswith("y_") and name != "y_8"
    )


#: The year groups of a path date and of a query value date (:func:`month_years`).
_PATH_YEARS = _year_groups(_PATH_DATE_RUN)
_QUERY_YEARS = _year_groups(_QUERY_VALUE_DATE)


def _replace(
    pattern: re.Pattern[str],
    template: Callable[[re.Match[str]], str],
    text: str,
    years: list[int] | None = None,
    year_groups: tuple[int, ...] = (),
) -> tuple[str, int]:
    """``pattern.subn(template, text)``, cheaper for the usual text with no match or one
    (a search is cheaper than a subn, and no match is searched twice); with ``years``,
    the year of each match read from the first of its ``year_groups`` that matched is
    appended to it (none if no such group matched)."""
    match = pattern.search(text)
    if match is None:
        return text, 0
    out: list[str] = []
    at = count = 0
    while match is not None:
        out += (text[at : match.start()], template(match))
        if years is not None:
            spans = match.regs  # (-1, -1) for a group that did not match
            for number in year_groups:
                first, last = spans[number]
                if first >= 0:
                    years.append(int(text[first:last]))
                    break
        at = match.end()
        count += 1
        match = pattern.search(text, at)
    out.append(text[at:])
    return "".join(out), count


def _name_before(match: re.Match[str]) -> str:
    """The lowercased name of the query parameter whose ``=value`` is ``match``."""
    query = match.string
    return query[query.rfind("&", 0, match.start()) + 1 : match.start()].lower()


def _number_date(match: re.Match[str]) -> str:
    """The template of one :data:`_QUERY_NUMBER_DATE` match, or the match unchanged if
    its parameter's name is not a date's (a compact date) or a time's (a timestamp)."""
    name = _name_before(match)
    if match["ts_2"] is None:
        dated = name in DATE_PARAMS or "date" in name
    else:
        dated = name in TIME_PARAMS or "time" in name or "date" in name
    return _number_template(match) if dated else match[0]


def _split_dates(query: str) -> tuple[str, int]:
    """``query`` with the parts of a date split over parameters replaced, and how many:
    a year part 1900-2199, or 1000-2199 beside a month or week part, and the month,
    day and week parts beside it; ``(query, 0)`` without such a year."""
    if _YEAR_PART.search(query) is None:
        return query, 0
    pieces = query.split("&")
    parts: list[tuple[int, str, str]] = []  # (index, name as written, placeholder)
    for index, piece in enumerate(pieces):
        name, _, value = piece.partition("=")
        placeholder = _PART_OF_NAME.get(name.lower())
        if placeholder is not None and _PART_VALUES[placeholder].fullmatch(value):
            parts.append((index, name, placeholder))
    # four-digit years compare as text
    years = [pieces[index][-4:] for index, _, placeholder in parts if placeholder == "y"]
    if not years:
        return query, 0
    if max(years) < "1900" and all(placeholder in "yd" for _, _, placeholder in parts):
        return query, 0
    for index, name, placeholder in parts:
        pieces[index] = f"{name}={{{placeholder}}}"
    return "&".join(pieces), len(parts)


def date_template(key: str) -> str | None:
    """The date template of the dedupe key ``key``, or ``None`` if it holds no date.

    The template is the key without its scheme, with each date component replaced by
    ``{y}``, ``{m}``, ``{d}``, ``{w}`` (an ISO week), ``{t}`` (a time of day) or
    ``{ts}`` (a Unix timestamp) and every other character kept, so URLs that differ
    only in their dates share it (docs/architecture.md, "Trap decisions"). Years are
    1900-2199 alone and 1000-2199 beside a month or a week; months are 1-12 or an
    English month name or its 3-letter abbreviation (any case), days 1-31. Dates read:

    * in the path, a date that starts a segment and ends one (an extension may follow):
      a year segment with optional month (or week) and day segments (``/2019/``,
      ``/2019/5/``, ``/2019/May/``, ``/2019/W18/``, ``/2019/05/01.html``); a whole
      date in one segment, year first (``2019-05``, ``2019_05_01``, ``2019.05.01.html``,
      ``2019-May``, ``2019-W18``) or last (``01.05.2019``, ``05-2019``, ``May-2019``,
      ``01-May-2019``), with one separator of ``-_.``, ``%2F``, ``%20``; a month or a
      day and a month before a year segment (``/05/2019/``, ``/May/2019/``,
      ``/01/05/2019/``, day and month in either order: templates are read from the
      shape, so both orders give one template). A day or a numeric month before the
      year has two digits (``1.2.1234`` is a version). Not right after a ``page``
      segment; ``20190501`` in a path is not read (product ids look like it);
    * a query value holding a whole date in the same forms (a raw ``/`` separates
      too, and ``5/1/2019`` may have one-digit parts), with an optional time after
      ``T``, ``+`` or ``%20`` (``month=2019-05``, ``d=05%2F01%2F2019``,
      ``week=2019-W18``, ``start=2019-05-01T10%3A00``);
    * a query value ``YYYYMM`` or ``YYYYMMDD`` under a :data:`DATE_PARAMS` name or a
      name containing ``date`` (``date=20190501``);
    * a Unix timestamp of 2001-09-09 to 2065-01-24, 10 digits (seconds) or 13
      (milliseconds), under a :data:`TIME_PARAMS` name or a name containing ``time``
      or ``date`` (``ts=1556668800``, ``timestamp=``, ``t=``, ``_=`` cache busters);
    * a year under a :data:`YEAR_PART_PARAMS` name, with the months, days and weeks
      under :data:`MONTH_PART_PARAMS`, :data:`DAY_PART_PARAMS` and
      :data:`WEEK_PART_PARAMS` names beside it (``?y=2019&m=5``,
      ``?year=2019&month=May``, ``?year=2019&week=18``).

    Names are matched case-insensitively. Because the template is computed from the
    dedupe key, every spelling of a URL (query order, stripped session parameters,
    escapes of unreserved characters such as ``%2D``, escape case) has the same
    template.

    Args:
        key: a dedupe key (:func:`core.urls.normalize` of a cleaned URL).

    Returns:
        ``//host[:port]/path?query`` with placeholders (``//a.com/cal/{y}/{m}/``), or
        ``None``. Never raises.
    """
    return _dated(key, None)


def _dated(key: str, years: list[int] | None) -> str | None:
    """:func:`date_template` of ``key``; with ``years``, the years of its dates with a
    month or a week are appended to it, in the order found (:func:`month_years`)."""
    scheme_end = key.find("://")
    start = scheme_end + 3 if scheme_end >= 0 else 0
    path_start = _AUTHORITY_END.search(key, start)
    if path_start is None:
        return None
    begin = path_start.start()
    mark_at = key.find("?", begin)
    path_end = len(key) if mark_at < 0 else mark_at
    in_path = _DATE_HINT.search(key, begin, path_end) is not None
    in_query = mark_at >= 0 and _DATE_HINT.search(key, mark_at) is not None
    if not (in_path or in_query):
        return None
    path, mark, query = key[begin:].partition("?")
    found = 0
    if in_path:
        path, found = _replace(_PATH_DATE_RUN, _path_template, path, years, _PATH_YEARS)
    if in_query:
        query, values = _replace(_QUERY_VALUE_DATE, _value_template, query, years, _QUERY_YEARS)
        found += values
        if _QUERY_NUMBER_DATE.search(query) is not None:
            before = query
            query = _QUERY_NUMBER_DATE.sub(_number_date, query)
            found += query != before
        query, parts = _split_dates(query)
        found += parts
    if not found:
        return None
    return "//" + key[start:begin] + path + mark + query


def _host_of(template: str) -> str:
    """The ``//host[:port]`` that starts ``template``: its host's key in ``_DateCounts``
    (no template equals it: every template holds a placeholder)."""
    end = _AUTHORITY_END.search(template, 2)
    return template if end is None else template[: end.start()]


def month_years(key: str) -> list[int]:
    """The years of the dates with a month or a week in the dedupe key ``key``, in the
    order found: the path's and the query values' dates as :func:`date_template` reads
    them, but a year alone (``/2019/``, ``/p/2029``: a year archive or an id as often
    as a calendar), compact ``YYYYMMDD`` values, Unix timestamps and dates split over
    parameters. Empty when there is none. Never raises."""
    years: list[int] = []
    _dated(key, years)
    return years


class _NewestYears:
    """The newest year of a dated URL (``month_years``) per host, in a fixed 1.5 MiB.

    The layout of ``_DateCounts`` (three rows of 2**18 16-bit cells, a key's cell in
    each row picked by its hash), keeping maxima: a year raises the key's three cells
    to it and the key's year is the least of them. It is never below the true newest,
    and above it only when each of the three cells is shared with a host that has a
    newer date (a calendar of that host is then cut sooner, never later). 0: no date
    yet. The cells are allocated at the first year noted.
    """

    __slots__ = ("_cells",)

    def __init__(self) -> None:
        """No year noted yet (no memory taken)."""
        self._cells: array[int] | None = None

    @staticmethod
    def _indexes(key: str) -> tuple[int, int, int]:
        code = hash(key)
        width, bits, mask = _DateCounts.WIDTH, _DateCounts.BITS, _DateCounts.MASK
        return (
            code & mask,
            width + ((code >> bits) & mask),
            2 * width + ((code >> (2 * bits)) & mask),
        )

    def newest(self, key: str) -> int:
        """The newest year noted for ``key`` (never below the true one), 0 for none."""
        cells = self._cells
        if cells is None:
            return 0
        return min(cells[index] for index in self._indexes(key))

    def note(self, key: str, year: int) -> None:
        """Note ``year`` (0-65 535) for ``key``."""
        cells = self._cells
        if cells is None:
            cells = self._cells = array("H", bytes(2 * 3 * _DateCounts.WIDTH))
        for index in self._indexes(key):
            if cells[index] < year:
                cells[index] = year

    def nbytes(self) -> int:
        """Bytes the cells take (0 before the first year, then 1.5 MiB)."""
        return 0 if self._cells is None else self._cells.itemsize * len(self._cells)


class _DateCounts:
    """URLs counted per date template, in a fixed 1.5 MiB: a count-min sketch.

    Three rows of 2**18 16-bit counters; a key (a date template, or a host's
    ``//host[:port]`` for its calendar total) adds one to the cell its hash picks
    in each row and its count is the least of its three cells (Cormode and
    Muthukrishnan, "An improved data stream summary: the count-min sketch and its
    applications", J. Algorithms 55, 2005), with conservative update: only the cells
    below the new count are raised (Estan and Varghese, "New directions in traffic
    measurement and accounting", SIGCOMM 2002). A count is never below the true one,
    so no calendar gets past its budget however many templates a crawl meets; it is
    above the true one only when each of its three cells is shared with templates
    that together have as many URLs. Counts saturate at 65 535. The cells are
    allocated at the first key counted.
    """

    __slots__ = ("_cells",)

    BITS = 18
    WIDTH = 1 << BITS
    MASK = WIDTH - 1
    #: The highest count a cell holds.
    CEILING = 0xFFFF

    def __init__(self) -> None:
        """No templates counted yet (no memory taken)."""
        self._cells: array[int] | None = None

    def count(self, key: str) -> int:
        """The count of ``key``: never below the number of times it was counted."""
        cells = self._cells
        if cells is None:
            return 0
        code = hash(key)
        return min(
            cells[code & self.MASK],
            cells[self.WIDTH + ((code >> self.BITS) & self.MASK)],
            cells[2 * self.WIDTH + ((code >> (2 * self.BITS)) & self.MASK)],
        )

    def add_below(self, key: str, limit: int) -> int:
        """Count one more URL for ``key`` if its count is below ``limit``.

        Returns:
            the count before this call; when it is ``limit`` or more, nothing was counted.
        """
        cells = self._cells
        if cells is None:
            cells = self._cells = array("H", bytes(2 * 3 * self.WIDTH))
        code = hash(key)
        first = code & self.MASK
        second = self.WIDTH + ((code >> self.BITS) & self.MASK)
        third = 2 * self.WIDTH + ((code >> (2 * self.BITS)) & self.MASK)
        count = min(cells[first], cells[second], cells[third])
        if count < limit and count < self.CEILING:
            value = count + 1
            for index in (first, second, third):
                if cells[index] < value:
                    cells[index] = value
        return count

    def nbytes(self) -> int:
        """Bytes the counters take (0 before the first template, then 1.5 MiB)."""
        return 0 if self._cells is None else self._cells.itemsize * len(self._cells)


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

    The guard keeps two pieces of state: how many admitted URLs each date template has
    (:func:`date_template`) and, per host, how many of its admitted URLs were not the
    first of their template, in a count-min sketch of a fixed 1.5 MiB taken at the
    first dated URL (nothing per host or per template; see ``_DateCounts``); and the
    newest year of a date with a month admitted per host (:func:`month_years`), in
    another fixed 1.5 MiB (``_NewestYears``). A resumed crawl gives both back with
    :meth:`observe`.

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
        self._dates = _DateCounts()
        self._newest = _NewestYears()
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

        Checks in order (docs/architecture.md, ``core/traps.py``):

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
        10. ``calendar``: the URL's :func:`date_template` (read from ``key``) already
           has ``calendar_max_dates`` admitted URLs (a calendar into the past or the
           future, one page per date); or the template has at least one and the
           URL's host already has ``calendar_max_dates_per_host`` admitted URLs that
           were not the first of their template (many calendars on one host: one
           per venue, per room, per team). An admitted URL with a template adds one
           to it, and one to its host's total unless it is its template's first, so
           each template lets at most ``calendar_max_dates`` URLs through and each
           host at most ``calendar_max_dates_per_host`` beyond one per template. A
           template with one date (a blog post ``/2019/05/my-post``) never counts
           towards its host's total. Before the budget, a calendar walked page to
           page: ``url`` was found on a page of its own date template (``found_on``:
           ``/cal/2019-04/`` on ``/cal/2019-05/``, a "previous month" link) and the
           oldest year of its dates with a month (:func:`month_years`) is more than
           ``calendar_max_years`` before the newest such year admitted on its host.
           An archive reached from index pages is not walked: its dated pages are
           found on pages of no date or of another template (the blog's home, an
           archive list, a post), so it is admitted however old (up to the budget).
           A year alone (``/2019/``, ``/p/2029``) never counts here: a year-only
           walk back ends at 1900 anyway.

        A ``url`` without a host, with a bad port or that cannot be parsed gets
        ``bad_url`` instead of raising (checked with the scope, first for seeds).

        Args:
            url: a URL returned by :func:`core.urls.clean`, not admitted before (the
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
        if verdict is None and (key is None or _DATE_HINT.search(key) is not None):
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
            key: a dedupe key (:func:`core.urls.normalize` of a cleaned URL).
        """
        years: list[int] = []
        template = _dated(key, years)
        if template is None:
            return
        if self._dates.add_below(template, _DateCounts.CEILING):
            self._dates.add_below(_host_of(template), _DateCounts.CEILING)
        if years:
            self._newest.note(_host_of(template), max(years))

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
        template = _dated(key, years)
        if template is None:
            return None
        host = _host_of(template)
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
        (``/page/2000/`` is left to the pagination rule).
        """
        for index, segment in enumerate(segments):
            if segment[0] not in "12":
                continue
            # a ";name=value" path parameter (a session id) is not part of the date
            match = _PATH_DATE.fullmatch(segment.partition(";")[0])
            if match is None:
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


# ---------------------------------------------------------------- redirect growth


def _path_and_query(url: str) -> tuple[str, str]:
    """The path and the query (without ``?``) of the absolute ``url``."""
    scheme_end = url.find("://")
    start = scheme_end + 3 if scheme_end >= 0 else 0
    end = _AUTHORITY_END.search(url, start)
    if end is None:
        return "", ""
    path, _, query = url[end.start() :].partition("#")[0].partition("?")
    return path, query


def _grows_by_repeats(old: list[str], new: list[str]) -> bool:
    """Whether ``new`` holds every item of ``old`` as often and one of them more often."""
    if len(new) <= len(old) or not old:
        return False
    old_counts = Counter(old)
    new_counts = Counter(new)
    return all(new_counts[item] >= count for item, count in old_counts.items()) and any(
        new_counts[item] > count for item, count in old_counts.items()
    )


def _first_values(query: str) -> dict[str, str]:
    """Each parameter name of ``query`` with its first value."""
    values: dict[str, str] = {}
    for piece in query.split("&"):
        name, _, value = piece.partition("=")
        values.setdefault(name, value)
    return values


def _holds(old: str, new: str) -> bool:
    """Whether ``new``, as written or percent-decoded once or twice, is longer than
    ``old`` and contains it."""
    for _ in range(3):
        if len(new) > len(old) and old in new:
            return True
        if "%" not in new:
            return False
        new = unquote(new)
    return False


def _segments_grow(old: list[str], new: list[str]) -> bool:
    """Whether ``new`` has as many segments as ``old``, each starting or ending with
    the one of ``old`` at its place, and one of them longer (``/a`` -> ``/aa``,
    ``/x/p`` -> ``/x/p.html``, ``/p`` -> ``/www.p``)."""
    return (
        len(new) == len(old)
        and any(len(grown) > len(segment) for segment, grown in zip(old, new, strict=True))
        and all(
            grown.startswith(segment) or grown.endswith(segment)
            for segment, grown in zip(old, new, strict=True)
        )
    )


#: A run of slashes in a path.
_SLASHES = re.compile(r"//+")


def _extra_slashes(path: str) -> int:
    """The slashes of ``path`` that repeat the one before them (``/x//`` has one)."""
    return len(path) - len(_SLASHES.sub("/", path))


#: Where a query starts in a decoded URL, its own or a nested URL's: ``?name=``.
_QUERY_START = re.compile(r"\?[^?&=#/]*=")
#: Percent-decodings tried on a URL nested in a query (each nesting escapes once more;
#: a chain is cut long before ten levels).
_MAX_DECODES = 10


def _decoded(text: str) -> str:
    """``text`` percent-decoded until nothing changes (at most :data:`_MAX_DECODES` times)."""
    for _ in range(_MAX_DECODES):
        if "%" not in text:
            break
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    return text


def _nests_deeper(source: str, old_path: str, old_query: str, new_query: str) -> bool:
    """Whether ``new_query``, decoded, holds the decoded path and query of ``source``,
    which already nests a URL with a query of its own (two ``?name=`` once decoded):
    a third level of nesting, under any names."""
    if "?" not in source:
        return False
    nested = _decoded(old_path + "?" + old_query)
    starts = _QUERY_START.finditer(nested)
    if next(starts, None) is None or next(starts, None) is None:
        return False
    return nested in _decoded(new_query)


def redirect_grows(source: str, target: str) -> bool:
    """Whether the redirect hop ``source`` -> ``target`` grows the URL by repeating or
    nesting what ``source`` already holds (the shape of a redirect trap, issue #10).

    True exactly when ``target`` is longer than ``source`` (in characters) and one of:

    1. path repetition: the non-empty path segments of ``target`` hold every segment
       of ``source``'s at least as often and one of them more often (``/a/b`` ->
       ``/a/b/b``, ``/a/b`` -> ``/a/b/a/b``, ``/a/`` -> ``/a/a/``);
    2. segment growth: ``target`` has as many non-empty path segments as ``source``,
       each starting or ending with the one at its place in ``source``, and one of
       them longer (``/a`` -> ``/aa`` -> ``/aaa``, ``/p`` -> ``/p.html`` ->
       ``/p.html.html``);
    3. slash growth: the same non-empty segments with more repeated slashes
       (``/x/`` -> ``/x//`` -> ``/x///``);
    4. query repetition: the non-empty ``&`` pieces of ``target``'s query hold every
       piece of ``source``'s at least as often and one of them more often
       (``?x=1`` -> ``?x=1&x=1``);
    5. value growth: a parameter that ``source`` has with a non-empty value ``v`` has
       in ``target`` a value (the first of that name in each) that contains ``v`` and
       is longer, as written or percent-decoded once or twice (``?r=abc`` ->
       ``?r=abcabc``; ``/login?next=/x`` -> ``/login?next=/login%3Fnext%3D/x``, where
       the value nests the whole source URL);
    6. deeper nesting: ``source``, percent-decoded until it no longer changes, nests
       a URL with a query (it holds two ``?name=``), and ``target``'s query, decoded
       the same way, holds ``source``'s decoded path and query, under any parameter
       name and on any host (the single sign-on ping-pong
       ``https://sso/login?service=https://app/cb?back=https://sso/login?service=...``,
       whose names alternate).

    Comparisons are case-sensitive and byte for byte; scheme and host are ignored.
    Not growing: a new segment or parameter (``/`` -> ``/en/`` -> ``/en/home``; a
    consent redirect adding ``?consent=1``), ``http`` -> ``https``, ``/a`` -> ``/a/``,
    a first and a second nesting under new names (``/x`` -> ``/login?next=/x`` ->
    ``https://idp/login?service=http://a/login?next=/x``: a single sign-on detour)
    and every hop that shortens the URL (``/login?next=/`` -> ``/``). So a nesting
    loop under one name grows from its second hop on, under changing names from its
    third, and a legitimate chain grows at most once (a value or a segment made
    longer once, such as ``?lang=en`` -> ``?lang=en-US`` or ``/docs`` ->
    ``/docs.html``); the engine cuts a chain at its second growing hop
    (``redirect_trap``).

    Args:
        source: the URL that answered with the redirect, as sent (``urls.clean``).
        target: its ``Location`` resolved against ``source`` (``urls.clean``).

    Returns:
        The verdict; never raises (text that is not a URL has an empty path and query).
    """
    if len(target) <= len(source):
        return False
    old_path, old_query = _path_and_query(source)
    new_path, new_query = _path_and_query(target)
    old_segments = [segment for segment in old_path.split("/") if segment]
    new_segments = [segment for segment in new_path.split("/") if segment]
    if _grows_by_repeats(old_segments, new_segments) or _segments_grow(old_segments, new_segments):
        return True
    if old_segments == new_segments and _extra_slashes(new_path) > _extra_slashes(old_path):
        return True
    old_pieces = [piece for piece in old_query.split("&") if piece]
    new_pieces = [piece for piece in new_query.split("&") if piece]
    if _grows_by_repeats(old_pieces, new_pieces):
        return True
    if not old_pieces or not new_pieces:
        return False
    new_values = _first_values(new_query)
    for name, value in _first_values(old_query).items():
        grown = new_values.get(name)
        if value and grown is not None and _holds(value, grown):
            return True
    return _nests_deeper(source, old_path, old_query, new_query)


__all__ = [
    "DATE_PARAMS",
    "DAY_PART_PARAMS",
    "MONTH_PART_PARAMS",
    "PAGE_PARAMS",
    "YEAR_PARAMS",
    "YEAR_PART_PARAMS",
    "BlockReason",
    "ScopePolicy",
    "TrapGuard",
    "TrapSettings",
    "UrlPatterns",
    "Verdict",
    "date_template",
    "redirect_grows",
]
