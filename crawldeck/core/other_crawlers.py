"""Other crawlers' settings and flags (Scrapy's settings, wget's and Scrapy's flags,
the switches that turn robots.txt off) and crawldeck's words for each (issue #25).

Separate from ``core.config`` because it is a table about other programs, not a part of
crawldeck's config: ``core.config.build_config`` and the CLI's unknown-flag error look a
name up here (``other_crawler_hint``) to answer with crawldeck's key or flag, the value
converted, instead of a near key. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

#: The answer to another crawler's switch that turns robots.txt off.
ROBOTS_ALWAYS = "robots.txt is always obeyed: no key turns it off"


@dataclass(frozen=True, slots=True)
class Equivalent:
    """What crawldeck has for another crawler's setting or flag (``OTHER_CRAWLERS``).

    Attributes:
        whose: the crawler, ``Scrapy`` or ``wget`` (``""``: several crawlers' word).
        ours: crawldeck's equivalent; ``{value}`` is the value as given (``metavar``
            when none), ``{ms}`` the value in seconds as ms (``MS`` when it is no
            number), ``{retries}`` wget's tries less the first (``N`` for none or
            wget's unlimited 0 and ``inf``); ``ROBOTS_ALWAYS`` for a switch that turns
            robots.txt off.
        takes_value: a flag followed by its value (``-w 2``), not a switch (``-r``).
        other: another crawler's meaning of the same flag (wget's ``-t`` is tries,
            Scrapy's the feed's format), ``None`` when it has none; the hint names the
            one the value ``fits``, else both.
        what: what the flag does in its crawler, in a few words, said when the flag
            has an ``other``.
        fits: the values of this crawler's flag (a regex, any case), which tell it
            from ``other``'s; ``""``: none do (a file name for either).
        metavar: the value's name in ``ours`` when the value given is not this
            crawler's (``{value}`` -> ``FORMAT``).
    """

    whose: str
    ours: str
    takes_value: bool = False
    other: Equivalent | None = None
    what: str = ""
    fits: str = ""
    metavar: str = "N"


def _scrapy(ours: str, takes_value: bool = False) -> Equivalent:
    return Equivalent("Scrapy", ours, takes_value)


def _wget(ours: str, takes_value: bool = True, metavar: str = "N") -> Equivalent:
    return Equivalent("wget", ours, takes_value, metavar=metavar)


#: wget's ``-O`` (a file of every page) and Scrapy's (the feed, overwritten): a file
#: name either way, so the hint names both.
_OUTPUT_DOCUMENT = Equivalent(
    "wget", "none (crawldeck show DB URL --raw > FILE writes one page)", takes_value=True,
    what="output document (every page in one file)", metavar="FILE",
)  # fmt: skip
_OVERWRITE_OUTPUT = Equivalent(
    "Scrapy", "-o {value}, which replaces the file", takes_value=True,
    what="feed, overwritten", metavar="FILE",
)  # fmt: skip
#: wget's ``-L`` (a switch: relative links only) and Scrapy's (``-L LEVEL``).
_RELATIVE = Equivalent(
    "wget", "none: every link in scope is followed (--scope, --include REGEX narrow it)",
    what="relative links only",
)  # fmt: skip
_LOG_LEVEL = Equivalent(
    "Scrapy", "--log-level {value}", takes_value=True, what="log level",
    fits="debug|info|warning|error|critical", metavar="LEVEL",
)  # fmt: skip
#: wget's ``-nv``: less than its default, a line a file.
_NO_VERBOSE = "--no-ui: a progress line every few seconds (-q: errors and the summary only)"
#: wget's ``-t`` (tries, the first included) and Scrapy's (the feed's format).
_TRIES = Equivalent(
    "wget", "-s max_retries={retries} (tries after the first)", takes_value=True,
    what="tries", fits=r"\d+|inf",
)  # fmt: skip
_FEED_FORMAT = Equivalent(
    "Scrapy", "-o FILE named .jsonl, .json or .csv", takes_value=True, what="feed format",
    fits="jsonlines|jsonl|jl|json|csv|xml|marshal|pickle", metavar="FORMAT",
)  # fmt: skip


#: Other crawlers' settings and flags that people type first, and crawldeck's words
#: for them (issue #25): Scrapy's settings as config keys (looked up in any case:
#: ``DOWNLOAD_DELAY`` as ``-s DOWNLOAD_DELAY=2`` or in a TOML file), wget's and
#: Scrapy's flags as given to ``crawldeck crawl`` (as typed; ``-O``, ``-L`` and ``-t``,
#: which mean one thing to wget and another to Scrapy, are wget's with Scrapy's as
#: ``other``), and the switches that turn robots.txt off, which crawldeck does not
#: have; where crawldeck has nothing alike, the entry says so (``none: ...``).
#: ``build_config`` and the CLI's unknown-flag error answer with the entry
#: (``other_crawler_hint``) instead of a near key.
#: wget's folder flags: crawldeck's mirror has one folder per host, always.
_HOST_FOLDERS = "crawldeck export DB --mirror DIR (a folder per host, always)"
#: wget's -p: crawldeck fetches the bodies of HTML pages only.
_HTML_ONLY = "none: the crawl downloads HTML bodies only (no images, CSS or scripts)"
#: wget's -c: a crawl file resumes.
_RESUME = "the same crawl command again: the crawl file resumes, nothing fetched twice"

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
    # issue #25 trial 21: these got nothing, or a wrong guess
    "autothrottle_max_delay": _scrapy("max_delay_ms = {ms}"),
    "autothrottle_start_delay": _scrapy("delay_ms = {ms}"),
    "autothrottle_target_concurrency": _scrapy(
        "per_host_concurrency = N (a host's delay follows its answer times: adaptive_delay_factor)"
    ),
    "retry_enabled": _scrapy("max_retries = N (0: no retries)"),
    "retry_http_codes": _scrapy(
        "none: 429 and 503 are retried with backoff (max_retries), other statuses are "
        "recorded; a rerun of the crawl tries its 5xx and 429 again"
    ),
    "depth_priority": _scrapy('ordering = "bfs" (breadth first; the default ranks by OPIC cash)'),
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
    "--loglevel": _scrapy("--log-level {value}", takes_value=True),
    "--nolog": _scrapy("-q (errors and the summary only; no flag silences them)"),
    "-a": _scrapy(
        "none, crawldeck has no spiders to take arguments (settings: -s KEY=VALUE)",
        takes_value=True,
    ),
    "--overwrite-output": _OVERWRITE_OUTPUT,
    "--output-format": _FEED_FORMAT,
    "-O": replace(_OUTPUT_DOCUMENT, other=_OVERWRITE_OUTPUT),
    "--output-document": _OUTPUT_DOCUMENT,
    "-L": replace(_RELATIVE, other=_LOG_LEVEL),
    "--relative": _RELATIVE,
    "-nv": _wget(_NO_VERBOSE, takes_value=False),
    "-d": _wget("-v (every fetch, and crawldeck's debug lines)", takes_value=False),
    "--debug": _wget("-v (every fetch, and crawldeck's debug lines)", takes_value=False),
    "--no-verbose": _wget(_NO_VERBOSE, takes_value=False),
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
    "-U": _wget("--user-agent {value}", metavar="AGENT"),
    "--limit-rate": _wget("--delay-ms MS and --concurrency N (no bytes/s cap)"),
    "-t": replace(_TRIES, other=_FEED_FORMAT),
    "--tries": _TRIES,
    "-T": _wget("-s total_timeout_ms={ms}"),
    "--timeout": _wget("-s total_timeout_ms={ms}"),
    "-A": _wget("--include REGEX"),
    "--accept": _wget("--include REGEX"),
    "-R": _wget("--exclude REGEX"),
    "--reject": _wget("--exclude REGEX"),
    "-D": _wget("--scope domain, or --include REGEX"),
    "--domains": _wget("--scope domain, or --include REGEX"),
    "--span-hosts": _wget("--scope any", takes_value=False),
    "-i": _wget("the file as a SEED: crawldeck crawl {value}", metavar="FILE"),
    "--input-file": _wget("the file as a SEED: crawldeck crawl {value}", metavar="FILE"),
    "-N": _wget("crawldeck recrawl DB (conditional GET)", takes_value=False),
    "--timestamping": _wget("crawldeck recrawl DB (conditional GET)", takes_value=False),
    "--spider": _wget("crawldeck links DB --broken, after a crawl", takes_value=False),
    "-P": _wget("--db DIR/crawl.db, and crawldeck export DB --mirror DIR"),
    "--directory-prefix": _wget("--db DIR/crawl.db, and crawldeck export DB --mirror DIR"),
    "-Q": _wget("--max-bytes {size}"),
    "--quota": _wget("--max-bytes {size}"),
    "-e": _wget("-s KEY=VALUE"),
    "--execute": _wget("-s KEY=VALUE"),
    # issue #25 trial 18: flags and settings that got no word
    "--accept-regex": _wget("--include {value}", metavar="REGEX"),
    "--reject-regex": _wget("--exclude {value}", metavar="REGEX"),
    "-x": _wget(_HOST_FOLDERS, takes_value=False),
    "--force-directories": _wget(_HOST_FOLDERS, takes_value=False),
    "-nH": _wget("none: " + _HOST_FOLDERS, takes_value=False),
    "--no-host-directories": _wget("none: " + _HOST_FOLDERS, takes_value=False),
    "-p": _wget(_HTML_ONLY, takes_value=False),
    "--page-requisites": _wget(_HTML_ONLY, takes_value=False),
    # issue #25 trial 20: more that got a plain "unrecognized arguments"
    "--no-robots": _wget(ROBOTS_ALWAYS, takes_value=False),
    "--ignore-robots": _wget(ROBOTS_ALWAYS, takes_value=False),
    "-nc": _wget(_RESUME, takes_value=False),
    "--no-clobber": _wget(_RESUME, takes_value=False),
    "-E": _wget("crawldeck export DB --mirror DIR -E", takes_value=False),
    "--adjust-extension": _wget("crawldeck export DB --mirror DIR -E", takes_value=False),
    "-c": _wget(_RESUME, takes_value=False),
    "--continue": _wget(_RESUME, takes_value=False),
    "--no-check-certificate": _wget(
        "none: certificates are always checked; trust a private CA with "
        "SSL_CERT_FILE=ca.pem (docs/crawling.md, HTTPS)",
        takes_value=False,
    ),
    "autothrottle_enabled": _scrapy(
        "adaptive_delay_factor = N (on: a host's delay follows its answer times; 0 turns it off)"
    ),
    "allowed_domains": _scrapy(
        'scope = "domain" (the seeds\' registered domains, the default), or include = [REGEX]'
    ),
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


def _as_size(value: object) -> str:
    """wget's quota (``-Q``) as ``--max-bytes``' size: its ``k``/``m``/``g`` are binary
    (``10m`` -> ``10MiB``: 10 485 760 bytes, where crawldeck's ``10m`` is 10 000 000),
    a bare number is bytes; ``SIZE`` when it is neither (or none)."""
    match = re.fullmatch(r"(\d+)([kmg]?)", str(value).strip().lower())
    if value is None or match is None:
        return "SIZE"
    return match.group(1) + {"": "", "k": "KiB", "m": "MiB", "g": "GiB"}[match.group(2)]


def _as_retries(value: object) -> str:
    """wget's ``-t`` tries as crawldeck's ``max_retries``, the tries after the first
    (``3`` -> ``2``); ``N`` for no number or wget's unlimited (``0``, ``inf``)."""
    text = str(value).strip()
    return str(int(text) - 1) if text.isdigit() and int(text) > 0 else "N"


def _fits(entry: Equivalent, value: object) -> bool:
    """Whether ``value`` is one of ``entry``'s flag's values (``Equivalent.fits``)."""
    return (
        bool(entry.fits)
        and value is not None
        and (re.fullmatch(entry.fits, str(value), re.IGNORECASE) is not None)
    )


def _ours(entry: Equivalent, value: object, shown: str | None = None) -> str:
    """``entry.ours`` with ``value`` put in, written as ``shown`` (default: as text;
    ``entry.metavar`` for no value)."""
    if shown is None:
        shown = entry.metavar if value is None else str(value)
    return entry.ours.format(
        value=shown, ms=_as_ms(value), retries=_as_retries(value), size=_as_size(value)
    )


def _either_hint(name: str, entry: Equivalent, other: Equivalent, value: object) -> str:
    """The hint for a flag wget and Scrapy mean two things by (``Equivalent.other``):
    the meaning ``value`` fits alone, as ``other_crawler_hint`` words one, else both,
    each with crawldeck's equivalent: ``-O x is wget's ..., in crawldeck ...; or
    Scrapy's ..., in crawldeck ...``."""
    given = "" if value is None else f" {value}"
    fitting = [e for e in (entry, other) if _fits(e, value)]
    if len(fitting) == 1:
        return f"{fitting[0].whose}'s {name}{given}; in crawldeck: {_ours(fitting[0], value)}"
    said = [f"{e.whose}'s {e.what}, in crawldeck {_ours(e, None)}" for e in (entry, other)]
    return f"{name}{given} is {said[0]}; or {said[1]}"


def other_crawler_hint(name: str, value: object = None, *, flag: bool = False) -> str | None:
    """What crawldeck has for another crawler's setting or flag ``name`` given
    ``value`` (``None``: none given), in a few words for a one-line error; ``None``
    when ``OTHER_CRAWLERS`` does not know it.

    ``flag``: ``name`` is a command-line flag (wget's or Scrapy's, as typed: ``-w``,
    ``--wait``, ``--nolog``) and ``value`` its text (a flag both crawlers have: the
    meaning the value fits, else both: ``-t json`` Scrapy's feed format, ``-t 3``
    wget's tries, ``-O FILE`` either); else a config key (Scrapy's setting, in any
    case), its value typed as TOML gives it. ``DOWNLOAD_DELAY`` 2 gives ``Scrapy's
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
    if flag and entry.other is not None:
        return _either_hint(name, entry, entry.other, value)
    if value is None or flag:
        given = "" if value is None else f" {value}"
        ours = _ours(entry, value)
    else:
        given = f" = {_toml_value(value)}"
        ours = _ours(entry, value, _toml_value(value))
    return f"{entry.whose}'s {name}{given}; in crawldeck: {ours}"


def _toml_value(value: object) -> str:
    """``value`` as TOML writes it: ``true``, ``2``, ``"text"``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


__all__ = ["OTHER_CRAWLERS", "ROBOTS_ALWAYS", "Equivalent", "other_crawler_hint"]
