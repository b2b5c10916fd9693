"""Date templates: the URLs of one host that differ only in a date (pure: no I/O, no clock).

An endless calendar is many URLs of one host that differ only in their date (a
"previous month" link forever, into the past or the future). :func:`date_template`
reads the dates of a dedupe key and replaces them with placeholders, so every URL of
one calendar has one template; :func:`month_years` gives the years of its dates with
a month. :class:`DateCounts` counts the admitted URLs per template (and per host) in a
fixed-size count-min sketch, and :class:`NewestYears` keeps each host's newest year in
another: the calendar budget and the calendar walk of ``core.policy.traps.TrapGuard.admit``
(step 10) are read from them (docs/architecture.md, "Trap decisions").

Separate from ``core.policy.traps`` because reading dates is a grammar of its own (the
spellings of a date in a path or a query, some 300 lines of patterns and templates)
and the sketches are data structures of their own; the guard only asks them.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable

#: Where a URL's authority ends: its path or its query.
_AUTHORITY_END = re.compile(r"[/?]")
#: Every date a template reads holds a year 1000-2199 or a timestamp of 2001-2065, so
#: four digits starting with 1 or 2: a path or query without them costs one search (a
#: search with a leading character class is the fast one in ``re``).
DATE_HINT = re.compile(r"[12][0-9]{3}")
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
        key: a dedupe key (:func:`core.policy.urls.normalize` of a cleaned URL).

    Returns:
        ``//host[:port]/path?query`` with placeholders (``//a.com/cal/{y}/{m}/``), or
        ``None``. Never raises.
    """
    return date_template_with_years(key, None)


def date_template_with_years(key: str, years: list[int] | None) -> str | None:
    """:func:`date_template` of ``key``; with ``years``, the years of its dates with a
    month or a week are appended to it, in the order found (:func:`month_years`): both
    in one reading of the key (``core.policy.traps.TrapGuard`` needs both). Never raises."""
    scheme_end = key.find("://")
    start = scheme_end + 3 if scheme_end >= 0 else 0
    path_start = _AUTHORITY_END.search(key, start)
    if path_start is None:
        return None
    begin = path_start.start()
    mark_at = key.find("?", begin)
    path_end = len(key) if mark_at < 0 else mark_at
    in_path = DATE_HINT.search(key, begin, path_end) is not None
    in_query = mark_at >= 0 and DATE_HINT.search(key, mark_at) is not None
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


def template_host(template: str) -> str:
    """The ``//host[:port]`` that starts the date template ``template``: its host's key
    in ``DateCounts`` (no template equals it: every template holds a placeholder).
    Never raises."""
    end = _AUTHORITY_END.search(template, 2)
    return template if end is None else template[: end.start()]


def month_years(key: str) -> list[int]:
    """The years of the dates with a month or a week in the dedupe key ``key``, in the
    order found: the path's and the query values' dates as :func:`date_template` reads
    them, but a year alone (``/2019/``, ``/p/2029``: a year archive or an id as often
    as a calendar), compact ``YYYYMMDD`` values, Unix timestamps and dates split over
    parameters. Empty when there is none. Never raises."""
    years: list[int] = []
    date_template_with_years(key, years)
    return years


class NewestYears:
    """The newest year of a dated URL (``month_years``) per host, in a fixed 1.5 MiB.

    The layout of ``DateCounts`` (three rows of 2**18 16-bit cells, a key's cell in
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
        width, bits, mask = DateCounts.WIDTH, DateCounts.BITS, DateCounts.MASK
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
            cells = self._cells = array("H", bytes(2 * 3 * DateCounts.WIDTH))
        for index in self._indexes(key):
            if cells[index] < year:
                cells[index] = year

    def nbytes(self) -> int:
        """Bytes the cells take (0 before the first year, then 1.5 MiB)."""
        return 0 if self._cells is None else self._cells.itemsize * len(self._cells)


class DateCounts:
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


__all__ = [
    "DATE_HINT",
    "DATE_PARAMS",
    "DAY_PART_PARAMS",
    "MONTH_PART_PARAMS",
    "TIME_PARAMS",
    "WEEK_PART_PARAMS",
    "YEAR_PART_PARAMS",
    "DateCounts",
    "NewestYears",
    "date_template",
    "date_template_with_years",
    "month_years",
    "template_host",
]
