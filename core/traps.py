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
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import unquote

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
            after today, or a date template of the host that already has
            ``calendar_max_dates`` URLs (an endless calendar, into the future or
            the past; see :meth:`TrapGuard.admit`).
        pagination: a page or offset number above ``max_page_param``.
        url_length: longer than ``max_url_length`` characters.
        scheme: not http or https (``mailto:``, ``javascript:``, ``data:``, ...).
        bad_url: cannot be parsed, has no host or a bad port.
        scope: outside the crawl scope (``host``, ``domain`` or ``any``) of the seeds.
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
#: Date parts as templates read them: a year 1900-2199, a month 1-12 and a day 1-31
#: (one or two digits; two in a compact date), a file extension after a date.
_YEAR = r"(?:19[0-9]{2}|2[01][0-9]{2})"
_MONTH = r"(?:0?[1-9]|1[0-2])"
_DAY = r"(?:0?[1-9]|[12][0-9]|3[01])"
_MONTH_2 = r"(?:0[1-9]|1[0-2])"
_DAY_2 = r"(?:0[1-9]|[12][0-9]|3[01])"
_EXTENSION = r"(?:\.[A-Za-z][A-Za-z0-9]{0,4})?"
#: A date in a path: a year segment, then optional month and day segments
#: (``/2019/05/01``), or a whole date in one segment with one separator
#: (``/2019-05-01``); an optional extension; not right after a ``page`` segment.
_PATH_DATE_RUN = re.compile(
    rf"/(?<!/[Pp][Aa][Gg][Ee]/){_YEAR}"
    rf"(?:(?P<sep>[-_.]){_MONTH}(?:(?P=sep)(?P<day>{_DAY}))?"
    rf"|(?P<month>/{_MONTH})(?P<mday>/{_DAY})?)?"
    rf"(?P<ext>{_EXTENSION})(?=/|$)"
)
#: A query value holding a whole date: year, month, optional day, one separator, an
#: optional time (``2019-05``, ``2019/05/01``, ``2019-05-01T10:00``).
_QUERY_VALUE_DATE = re.compile(
    rf"={_YEAR}(?P<sep>[-_./]){_MONTH}(?:(?P=sep)(?P<day>{_DAY}))?(?P<time>T[^&]*)?(?=&|$)"
)
#: A compact query value ``YYYYMM`` or ``YYYYMMDD`` (its name is checked apart).
_QUERY_COMPACT_DATE = re.compile(rf"={_YEAR}{_MONTH_2}(?P<day>{_DAY_2})?(?=&|$)")
#: A query value that is a year alone (its name is checked apart).
_QUERY_YEAR = re.compile(rf"={_YEAR}(?=&|$)")
#: Parameter names under which a compact date counts (and any name holding ``date``):
#: under other names an 8-digit number is an id as often as a date.
DATE_PARAMS: frozenset[str] = frozenset({"d", "day", "dt", "ym", "ymd", "month"})
#: Parameter names of a date split over several parameters (``?y=2019&m=5&d=1``);
#: month and day names count only beside a year name holding a year.
YEAR_PART_PARAMS: frozenset[str] = frozenset({"year", "yr", "y"})
MONTH_PART_PARAMS: frozenset[str] = frozenset({"month", "mon", "mo", "m"})
DAY_PART_PARAMS: frozenset[str] = frozenset({"day", "dd", "d"})
_SPLIT_PARTS = re.compile(
    rf"(?:^|(?<=&))(?:(?P<year>{'|'.join(sorted(YEAR_PART_PARAMS))})={_YEAR}"
    rf"|(?P<month>{'|'.join(sorted(MONTH_PART_PARAMS))})={_MONTH}"
    rf"|(?P<day>{'|'.join(sorted(DAY_PART_PARAMS))})={_DAY})(?=&|$)",
    re.IGNORECASE,
)


def _path_date(match: re.Match[str]) -> str:
    """The template of one :data:`_PATH_DATE_RUN` match."""
    separator = match["sep"]
    if separator is not None:
        text = "/{y}" + separator + "{m}" + ("" if match["day"] is None else separator + "{d}")
    elif match["month"] is not None:
        text = "/{y}/{m}" + ("" if match["mday"] is None else "/{d}")
    else:
        text = "/{y}"
    return text + match["ext"]


def _value_date(match: re.Match[str]) -> str:
    """The template of one :data:`_QUERY_VALUE_DATE` match."""
    separator = match["sep"]
    text = "={y}" + separator + "{m}" + ("" if match["day"] is None else separator + "{d}")
    return text if match["time"] is None else text + "T{t}"


def _name_before(match: re.Match[str]) -> str:
    """The lowercased name of the query parameter whose ``=value`` is ``match``."""
    query = match.string
    return query[query.rfind("&", 0, match.start()) + 1 : match.start()].lower()


def _compact_date(match: re.Match[str]) -> str:
    """The template of one :data:`_QUERY_COMPACT_DATE` match (unchanged if its name is not
    a date's)."""
    name = _name_before(match)
    if name not in DATE_PARAMS and "date" not in name:
        return match[0]
    return "={y}{m}" + ("" if match["day"] is None else "{d}")


def _split_part(match: re.Match[str]) -> str:
    """The template of one :data:`_SPLIT_PARTS` match."""
    if match["year"] is not None:
        return match["year"] + "={y}"
    if match["month"] is not None:
        return match["month"] + "={m}"
    return match["day"] + "={d}"


def date_template(key: str) -> str | None:
    """The date template of the dedupe key ``key``, or ``None`` if it holds no date.

    The template is the key without its scheme, with each date component replaced by
    ``{y}``, ``{m}``, ``{d}`` (and a time by ``{t}``) and every other character kept, so
    URLs that differ only in their dates share it (docs/architecture.md, "Trap
    decisions"). Date components (years 1900-2199, months 1-12, days 1-31):

    * in the path, a year segment followed by optional month and day segments
      (``/2019/``, ``/2019/5/``, ``/2019/05/01.html``), or a whole date in one segment
      with one separator (``2019-05``, ``2019_05_01``, ``2019.05.01.html``); an
      extension may end it; not right after a ``page`` segment; ``20190501`` in a path
      is not read (product ids look like it);
    * a query value holding a whole date (``month=2019-05``, ``d=2019/05/01``,
      ``start=2019-05-01T10:00``);
    * a query value ``YYYYMM`` or ``YYYYMMDD`` under a :data:`DATE_PARAMS` name or a
      name containing ``date`` (``date=20190501``);
    * a year under a :data:`YEAR_PART_PARAMS` name, with the months and days under
      :data:`MONTH_PART_PARAMS` and :data:`DAY_PART_PARAMS` names beside it
      (``?y=2019&m=5``, ``?year=2019&month=05&day=01``).

    Names are matched case-insensitively. Because the template is computed from the
    dedupe key, every spelling of a URL (query order, stripped session parameters,
    escapes) has the same template.

    Args:
        key: a dedupe key (:func:`core.urls.normalize` of a cleaned URL).

    Returns:
        ``//host[:port]/path?query`` with placeholders (``//a.com/cal/{y}/{m}/``), or
        ``None``. Never raises.
    """
    scheme_end = key.find("://")
    start = scheme_end + 3 if scheme_end >= 0 else 0
    path_start = _AUTHORITY_END.search(key, start)
    if path_start is None:
        return None
    path, mark, query = key[path_start.start() :].partition("?")
    found = 0
    # every path date starts a segment with a year, every query date a value: a key
    # without "/1", "/2", "=1" or "=2" costs four substring searches
    if "/1" in path or "/2" in path:
        path, found = _PATH_DATE_RUN.subn(_path_date, path)
    if "=1" in query or "=2" in query:
        query, values = _QUERY_VALUE_DATE.subn(_value_date, query)
        found += values
        if _QUERY_COMPACT_DATE.search(query) is not None:
            before = query
            query = _QUERY_COMPACT_DATE.sub(_compact_date, query)
            found += query != before
        year = _QUERY_YEAR.search(query)
        while year is not None and _name_before(year) not in YEAR_PART_PARAMS:
            year = _QUERY_YEAR.search(query, year.end())
        if year is not None:
            query, parts = _SPLIT_PARTS.subn(_split_part, query)
            found += parts
    if not found:
        return None
    return "//" + key[start : path_start.start()] + path + mark + query


class _DateCounts:
    """URLs counted per date template, in a fixed 1.5 MiB: a count-min sketch.

    Three rows of 2**18 16-bit counters; a template adds one to the cell its hash picks
    in each row and its count is the least of its three cells (Cormode and
    Muthukrishnan, "An improved data stream summary: the count-min sketch and its
    applications", J. Algorithms 55, 2005), with conservative update: only the cells
    below the new count are raised (Estan and Varghese, "New directions in traffic
    measurement and accounting", SIGCOMM 2002). A count is never below the true one,
    so no calendar gets past its budget however many templates a crawl meets; it is
    above the true one only when each of its three cells is shared with templates
    that together have as many URLs. Counts saturate at 65 535. The cells are
    allocated at the first template counted.
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

    def add_below(self, template: str, limit: int) -> int:
        """Count one more URL for ``template`` if its count is below ``limit``.

        Returns:
            the count before this call; when it is ``limit`` or more, nothing was counted.
        """
        cells = self._cells
        if cells is None:
            cells = self._cells = array("H", bytes(2 * 3 * self.WIDTH))
        code = hash(template)
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


class TrapGuard:
    """Decides whether a URL may be crawled: :meth:`admit` returns ``None`` or a ``Verdict``.

    The guard keeps one piece of state: how many admitted URLs each date template has
    (:func:`date_template`), in a count-min sketch of a fixed 1.5 MiB taken at the
    first dated URL (nothing per host or per template; see ``_DateCounts``). A resumed
    crawl gives it back with :meth:`observe`.

    Args:
        config: the limits (``max_url_length``, ``max_depth``, ``max_per_host``,
            ``max_path_depth``, ``max_segment_repeats``, ``calendar_window_years``,
            ``max_page_param``, ``calendar_max_dates``, ``strip_params``).
        scope: the seeds' scope; seeds are added to it by the caller.
        today: the date calendar years are measured from (pure: no clock is read).
    """

    __slots__ = ("_dates", "config", "scope", "today")

    def __init__(self, config: CrawlConfig, scope: ScopePolicy, today: datetime.date) -> None:
        """A guard with ``config``'s limits, ``scope`` and ``today``'s year."""
        self.config = config
        self.scope = scope
        self.today = today
        self._dates = _DateCounts()

    def admit(
        self,
        url: str,
        depth: int,
        host_count: int,
        *,
        is_seed: bool = False,
        key: str | None = None,
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
        9. ``calendar``: the URL's :func:`date_template` already has
           ``calendar_max_dates`` admitted URLs (a calendar into the past or the
           future, one page per date). An admitted URL with a template adds one to
           it, so each template lets at most ``calendar_max_dates`` URLs through.
           Only URLs whose path or query step 7 found date-like (a year segment, a
           date, a 6- or 8-digit value, a year parameter) get here, so a date that
           ``url`` writes with escaped digits (``%32019``) is not counted.

        A ``url`` without a host, with a bad port or that cannot be parsed gets
        ``bad_url`` instead of raising (checked with the scope, first for seeds).

        Args:
            url: a URL returned by :func:`core.urls.clean`, not admitted before (the
                caller checks its seen set first: every call that admits counts).
            depth: links followed from a seed (a seed is 0; a redirect keeps its depth).
            host_count: URLs of this URL's host admitted so far.
            is_seed: ``url`` is a seed: the scope check is skipped.
            key: ``url``'s dedupe key (``urls.normalize(url, config.strip_params)``)
                if the caller has it; otherwise it is computed for dated URLs only.

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
        # a segment occurring c times leaves at least c - 1 duplicates
        if len(segments) - len(set(segments)) >= config.max_segment_repeats:
            segment, count = Counter(segments).most_common(1)[0]
            if count > config.max_segment_repeats:
                return Verdict(
                    BlockReason.REPEATING_PATH,
                    f"segment {_show(segment)} repeats {count} times "
                    f"(max {config.max_segment_repeats})",
                )
        query = [piece.partition("=") for piece in query_text.split("&") if piece]
        verdict, dated = self._calendar(segments, query)
        if verdict is None:
            verdict = self._pagination(segments, query)
        if verdict is None and dated:
            verdict = self._date_budget(url, key)
        return verdict

    def observe(self, key: str) -> None:
        """Count the admitted URL whose dedupe key is ``key`` towards its date template.

        For a resumed crawl: call it once for each URL admitted by an earlier run
        (each frontier key, whatever its state), before new URLs are admitted, so a
        calendar's budget is not handed out again. No verdict, no budget check; a
        key without ``/1``, ``/2``, ``=1`` or ``=2`` costs four substring searches.

        Args:
            key: a dedupe key (:func:`core.urls.normalize` of a cleaned URL).
        """
        template = date_template(key)
        if template is not None:
            self._dates.add_below(template, _DateCounts.CEILING)

    def _date_budget(self, url: str, key: str | None) -> Verdict | None:
        """Step 9 of :meth:`admit`: refuse when the date template is full, else count it."""
        if key is None:
            try:
                key = urls.normalize(url, self.config.strip_params)
            except UrlError:
                return None
        template = date_template(key)
        if template is None:
            return None
        budget = self.config.calendar_max_dates
        count = self._dates.add_below(template, budget)
        if count < budget:
            return None
        shown = template[template.find("/", 2) :]  # the path and query
        return Verdict(
            BlockReason.CALENDAR,
            f"template {_show(shown, 60)} has {count} dates (calendar_max_dates {budget})",
        )

    def _far_year(self, year: int) -> bool:
        """Whether ``year`` is more than ``calendar_window_years`` after today's.

        Only the future counts: no real content is dated years ahead, while archives
        of past years (a blog's ``/2019/05/``) are real content; an endless calendar
        into the past is cut by the date template budget (step 9 of :meth:`admit`).
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

    def _calendar(
        self, segments: list[str], query: list[tuple[str, str, str]]
    ) -> tuple[Verdict | None, bool]:
        """The ``calendar`` verdict for the path ``segments`` and ``query`` pieces (step 7
        of :meth:`admit`), and whether they hold something a :func:`date_template` may
        read (a year segment, a date or a 6- or 8-digit number in a value, a year in a
        :data:`YEAR_PART_PARAMS` parameter), so URLs without one skip step 9.

        A path segment right after a ``page`` segment is a page number, not a year
        (``/page/2000/`` is left to the pagination rule).
        """
        dated = False
        for index, segment in enumerate(segments):
            if segment[0] not in "12":
                continue
            # a ";name=value" path parameter (a session id) is not part of the date
            match = _PATH_DATE.fullmatch(segment.partition(";")[0])
            if match is None:
                continue
            dated = True
            if index == 0 or segments[index - 1].lower() != "page":
                year = int(match.group(1))
                if self._far_year(year):
                    return self._calendar_detail(year, f"path segment {_show(segment)}"), True
        for name, _, value in query:
            lowered = name.lower()
            if lowered in YEAR_PARAMS:
                year_value = _number(value)
                if year_value is not None and self._far_year(year_value):
                    detail = f"query {name}={_digits(value)}"
                    return self._calendar_detail(year_value, detail), True
                dated = dated or (year_value is not None and 1900 <= year_value <= 2199)
                continue
            if value[:1] not in ("1", "2"):
                continue
            match = _QUERY_DATE.fullmatch(value)
            if match is not None:
                year = int(match.group(1))
                if self._far_year(year):
                    return self._calendar_detail(year, f"query {name}={_show(value)}"), True
                dated = True
            elif (lowered in YEAR_PART_PARAMS and len(value) == 4) or (
                len(value) in (6, 8) and value.isdigit()
            ):
                dated = True
        return None, dated

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


def redirect_grows(source: str, target: str) -> bool:
    """Whether the redirect hop ``source`` -> ``target`` grows the URL by repeating or
    nesting what ``source`` already holds (the shape of a redirect trap, issue #10).

    True exactly when ``target`` is longer than ``source`` (in characters) and one of:

    1. path repetition: the non-empty path segments of ``target`` hold every segment
       of ``source``'s at least as often and one of them more often (``/a/b`` ->
       ``/a/b/b``, ``/a/b`` -> ``/a/b/a/b``, ``/a/`` -> ``/a/a/``);
    2. query repetition: the non-empty ``&`` pieces of ``target``'s query hold every
       piece of ``source``'s at least as often and one of them more often
       (``?x=1`` -> ``?x=1&x=1``);
    3. value growth: a parameter that ``source`` has with a non-empty value ``v`` has
       in ``target`` a value (the first of that name in each) that contains ``v`` and
       is longer, as written or percent-decoded once or twice (``?r=abc`` ->
       ``?r=abcabc``; ``/login?next=/x`` -> ``/login?next=/login%3Fnext%3D/x``, where
       the value nests the whole source URL).

    Comparisons are case-sensitive and byte for byte; scheme and host are ignored.
    Not growing: a new segment or parameter (``/`` -> ``/en/`` -> ``/en/home``; a
    consent redirect adding ``?consent=1``), ``http`` -> ``https``, ``/a`` -> ``/a/``,
    a first nesting under a new name (``/x`` -> ``/login?next=/x``: ``source`` has no
    ``next``) and every hop that shortens the URL (``/login?next=/`` -> ``/``). So a
    nesting loop from ``/x`` grows from its second hop on, and a legitimate chain
    grows at most once (a value made longer once, such as ``?lang=en`` ->
    ``?lang=en-US``); the engine cuts a chain at its second growing hop
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
    if _grows_by_repeats(old_segments, new_segments):
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
    return False


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
    "Verdict",
    "date_template",
    "redirect_grows",
]
