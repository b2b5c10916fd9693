"""Other crawlers' settings and flags (Scrapy's settings, wget's flags, the switches
that turn robots.txt off) and crawldeck's words for each (issue #25).

Separate from ``core.config`` because it is a table about other programs, not a part of
crawldeck's config: ``core.config.build_config`` and the CLI's unknown-flag error look a
name up here (``other_crawler_hint``) to answer with crawldeck's key or flag, the value
converted, instead of a near key. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The answer to another crawler's switch that turns robots.txt off.
ROBOTS_ALWAYS = "robots.txt is always obeyed: no key turns it off"


@dataclass(frozen=True, slots=True)
class Equivalent:
    """What crawldeck has for another crawler's setting or flag (``OTHER_CRAWLERS``).

    Attributes:
        whose: the crawler, ``Scrapy`` or ``wget`` (``""``: several crawlers' word).
        ours: crawldeck's equivalent; ``{value}`` is the value as given (``N`` when
            none), ``{ms}`` the value in seconds as ms (``MS`` when it is no number);
            ``ROBOTS_ALWAYS`` for a switch that turns robots.txt off.
        takes_value: a flag followed by its value (``-w 2``), not a switch (``-r``).
    """

    whose: str
    ours: str
    takes_value: bool = False


def _scrapy(ours: str) -> Equivalent:
    return Equivalent("Scrapy", ours)


def _wget(ours: str, takes_value: bool = True) -> Equivalent:
    return Equivalent("wget", ours, takes_value)


#: Other crawlers' settings and flags that people type first, and crawldeck's words
#: for them (issue #25): Scrapy's settings as config keys (looked up in any case:
#: ``DOWNLOAD_DELAY`` as ``-s DOWNLOAD_DELAY=2`` or in a TOML file), wget's flags as
#: given to ``crawldeck crawl`` (as typed), and the switches that turn robots.txt off,
#: which crawldeck does not have. ``build_config`` and the CLI's unknown-flag error
#: answer with the entry (``other_crawler_hint``) instead of a near key.
OTHER_CRAWLERS: dict[str, Equivalent] = {
    **{
        key: Equivalent("", ROBOTS_ALWAYS)
        for key in (
            "robotstxt_obey",
            "robots",
            "obey_robots",
            "ignore_robots",
            "robots_txt",
            "respect_robots",
        )
    },
    "download_delay": _scrapy("delay_ms = {ms}"),
    "user_agent": _scrapy("user_agent = {value}"),
    "concurrent_requests": _scrapy("concurrency = {value}"),
    "concurrent_requests_per_domain": _scrapy("per_host_concurrency = {value}"),
    "concurrent_requests_per_ip": _scrapy("per_host_concurrency = {value}"),
    "depth_limit": _scrapy("max_depth = {value}"),
    "closespider_pagecount": _scrapy("max_pages = {value}"),
    "closespider_timeout": _scrapy("max_time_s = {value}"),
    "download_timeout": _scrapy("total_timeout_ms = {ms}"),
    "download_maxsize": _scrapy("max_body_bytes = {value}"),
    "retry_times": _scrapy("max_retries = {value}"),
    "redirect_max_times": _scrapy("max_redirects = {value}"),
    "default_request_headers": _scrapy("header, a table of name = value (or -H 'K: V')"),
    "jobdir": _scrapy("the crawl file itself: --db FILE resumes the crawl in it"),
    "log_level": _scrapy("the --log-level LEVEL flag"),
    "-w": _wget("--delay-ms {ms}"),
    "--wait": _wget("--delay-ms {ms}"),
    "--random-wait": _wget(
        "--delay-ms MS (one delay per host, longer when it answers 429)", takes_value=False
    ),
    "-l": _wget("--max-depth {value}"),
    "--level": _wget("--max-depth {value}"),
    "-np": _wget("--include REGEX: --include '^https://host/dir/'", takes_value=False),
    "--no-parent": _wget("--include REGEX: --include '^https://host/dir/'", takes_value=False),
    "-r": _wget("the default, a crawl follows links (--max-depth N, --scope)", takes_value=False),
    "--recursive": _wget(
        "the default, a crawl follows links (--max-depth N, --scope)", takes_value=False
    ),
    "-m": _wget("a crawl, then crawldeck export DB --mirror DIR", takes_value=False),
    "--mirror": _wget("a crawl, then crawldeck export DB --mirror DIR", takes_value=False),
    "-k": _wget("crawldeck export DB --mirror DIR --convert-links", takes_value=False),
    "--convert-links": _wget("crawldeck export DB --mirror DIR --convert-links", takes_value=False),
    "-U": _wget("--user-agent {value}"),
    "--limit-rate": _wget("--delay-ms MS and --concurrency N (no bytes/s cap)"),
    "-t": _wget("-s max_retries={value}"),
    "--tries": _wget("-s max_retries={value}"),
    "-T": _wget("-s total_timeout_ms={ms}"),
    "--timeout": _wget("-s total_timeout_ms={ms}"),
    "-A": _wget("--include REGEX"),
    "--accept": _wget("--include REGEX"),
    "-R": _wget("--exclude REGEX"),
    "--reject": _wget("--exclude REGEX"),
    "-D": _wget("--scope domain, or --include REGEX"),
    "--domains": _wget("--scope domain, or --include REGEX"),
    "--span-hosts": _wget("--scope any", takes_value=False),
    "-i": _wget("the file as a SEED: crawldeck crawl {value}"),
    "--input-file": _wget("the file as a SEED: crawldeck crawl {value}"),
    "-N": _wget("crawldeck recrawl DB (conditional GET)", takes_value=False),
    "--timestamping": _wget("crawldeck recrawl DB (conditional GET)", takes_value=False),
    "--spider": _wget("crawldeck links DB --broken, after a crawl", takes_value=False),
    "-P": _wget("--db DIR/crawl.db, and crawldeck export DB --mirror DIR"),
    "--directory-prefix": _wget("--db DIR/crawl.db, and crawldeck export DB --mirror DIR"),
    "-Q": _wget("--max-bytes {value}"),
    "--quota": _wget("--max-bytes {value}"),
    "-e": _wget("-s KEY=VALUE"),
    "--execute": _wget("-s KEY=VALUE"),
}

#: A duration as wget reads one: seconds, or with an ``s``, ``m``, ``h`` or ``d``.
_WGET_SECONDS = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def _as_ms(value: object) -> str:
    """``value`` seconds as whole ms (``2`` -> ``2000``, wget's ``1m`` -> ``60000``);
    ``MS`` when it is no duration."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(round(value * 1000))
    match = _WGET_SECONDS.fullmatch(str(value).strip()) if isinstance(value, str) else None
    if match is None:
        return "MS"
    return str(round(float(match.group(1)) * _UNIT_S[match.group(2)] * 1000))


def other_crawler_hint(name: str, value: object = None, *, flag: bool = False) -> str | None:
    """What crawldeck has for another crawler's setting or flag ``name`` given
    ``value`` (``None``: none given), in a few words for a one-line error; ``None``
    when ``OTHER_CRAWLERS`` does not know it.

    ``flag``: ``name`` is a command-line flag (wget's, as typed: ``-w``, ``--wait``)
    and ``value`` its text; else a config key (Scrapy's setting, in any case), its
    value typed as TOML gives it. ``DOWNLOAD_DELAY`` 2 gives ``Scrapy's
    DOWNLOAD_DELAY = 2; in crawldeck: delay_ms = 2000``; ``-w`` ``"2"`` gives ``wget's
    -w 2; in crawldeck: --delay-ms 2000``. ``-e robots=off`` and the robots.txt
    switches give ``ROBOTS_ALWAYS``.
    """
    entry = OTHER_CRAWLERS.get(name if flag else name.lower())
    if entry is None or (not flag and name.startswith("-")):
        return None
    if entry.ours == ROBOTS_ALWAYS or (
        flag and name in ("-e", "--execute") and str(value).lower().startswith("robots")
    ):
        return ROBOTS_ALWAYS
    if value is None:
        shown, given = "N", ""
    elif flag:
        shown = str(value)
        given = f" {value}"
    else:
        shown = _toml_value(value)
        given = f" = {shown}"
    ours = entry.ours.format(value=shown, ms=_as_ms(value))
    return f"{entry.whose}'s {name}{given}; in crawldeck: {ours}"


def _toml_value(value: object) -> str:
    """``value`` as TOML writes it: ``true``, ``2``, ``"text"``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


__all__ = ["OTHER_CRAWLERS", "ROBOTS_ALWAYS", "Equivalent", "other_crawler_hint"]
