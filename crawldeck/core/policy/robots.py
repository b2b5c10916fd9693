"""robots.txt as a pure policy (RFC 9309): one fetch outcome in, the next step out.

No I/O, no clock reads, no asyncio: ``interpret`` takes one response to a robots.txt
request (or the network error instead of one), the time ``now``, the origin, how many
redirect hops came before it, the origin's last good state and the settings, and
returns either the next hop (``RedirectHop``) or the origin's new cache state with the
audit line to record (``CacheUpdate``). ``core.net.robots.RobotsCache`` is the driver that
fetches, calls it and follows the hops. What an outcome means:

==================  =====================  ===========================================
outcome             status                 rules applied
==================  =====================  ===========================================
2xx                 ``ok``                 the file (parsed by protego, our group)
4xx (401/403 too)   ``missing``            none: allow all (§2.3.1.3)
> N redirects, or   ``redirect_limit``     none: allow all (§2.3.1.2, see below)
a redirect loop
429, 5xx, network   ``unreachable``        last good copy (the last 2xx/4xx answer,
error                                      however old: §2.4 allows a stale copy when
                                           the file is unreachable); else allow all, or
                                           disallow all when ``robots_on_failure`` is
                                           ``disallow`` (§2.3.1.4); audited; retried
                                           after ``robots_retry_s``
==================  =====================  ===========================================

Redirects (301, 302, 303, 307, 308) are followed, across hosts too, up to
``robots_max_redirects`` hops (§2.3.1.2: "at least five"). When the answer after that
many hops is still a redirect, RFC 9309 says a crawler MAY assume the file unavailable;
we do, and "unavailable" is the 4xx case of §2.3.1.3: allow all, status
``redirect_limit``, cached like a 4xx, and audited. A redirect to a URL already
requested for this file (a loop, ``A -> B -> A``) can never reach a file however many
hops are followed, so it is that same case decided at the first repeat, without
requesting the repeated URL again (detail ``redirect loop: ...``). A redirect without a usable
``Location`` is treated as a 4xx too. Any other status (1xx, 300, 304, >= 600) is a 4xx.

The body is read up to ``robots_max_bytes`` (§2.5 asks for at least 500 KiB); a longer
file is parsed from that prefix without its last, cut-off line (a cut ``Disallow:
/private`` must not become ``Disallow: /``). Bytes that are not UTF-8 are replaced
(§2.2: the file is UTF-8); anything unparseable (an HTML page) just has no rules
(§2.3.1.5: a crawler parses what it can).

Cache lifetime (§2.4): ``Cache-Control: max-age`` (``no-cache``/``no-store`` count as
0), else ``Expires`` (relative to ``Date`` when present), else ``robots_ttl_max_s``;
never more than ``robots_ttl_max_s`` and never less than one minute (or
``robots_ttl_max_s`` if smaller), so a ``max-age=0`` file does not cost one robots.txt
request per page. An ``unreachable`` entry lives ``robots_retry_s``.

Group matching (§2.2.1) is done here (``select_group``): the groups whose user-agent
product token equals ``robots_token`` case-insensitively, else the ``*`` groups; protego
then matches paths against that group's rules (``RobotsState.allows``). (protego's own
group choice is a prefix match, ``User-agent: crawl`` would apply to ``crawldeck``, so
it is not used.)
"""

from __future__ import annotations

import contextlib
import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Literal
from urllib.parse import urlsplit

from protego import Protego

from crawldeck.core.config import CrawlConfig, RobotsFailureMode
from crawldeck.core.errors import UrlError
from crawldeck.core.policy.backoff import delta_seconds
from crawldeck.core.policy.urls import clean

RobotsStatus = Literal["ok", "missing", "unreachable", "redirect_limit"]
RuleKind = Literal["allow", "disallow"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MIN_TTL_S = 60.0
_UA_FIELDS = frozenset({"user-agent", "useragent", "user agent"})
_SITE_WIDE_FIELDS = frozenset({"sitemap", "sitemaps", "site-map", "host"})
_DISALLOW_FIELDS = frozenset(
    {"disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"}
)
_DELAY_FIELDS = frozenset({"crawl-delay", "crawl delay"})
_PRODUCT_TOKEN = re.compile(r"\*|[A-Za-z_-]+")
_KNOWN_FIELDS = _UA_FIELDS | _DISALLOW_FIELDS | _DELAY_FIELDS | {"allow"}
#: What a byte that is not UTF-8 decodes to: the mark of a damaged line.
_REPLACED = "\ufffd"
#: RFC 9309 §2.2's EOL: CR LF, or CR or LF alone.
_EOL = re.compile(r"\r\n|\r|\n")
#: Control characters no robots.txt line holds: C0 but TAB, DEL, C1.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class RobotsEntry:
    """The cached state of one origin, for the console and the ``hosts`` table.

    Attributes:
        origin: ``scheme://host[:port]``.
        status: ``ok``, ``missing``, ``unreachable`` or ``redirect_limit`` (see module).
        http_status: the status of the last response (after redirects), ``None`` after a
            network error; 429 and 503 are kept here so the engine can back the host
            off (``Politeness.on_response``) although the status is ``unreachable``.
        detail: why: the HTTP status, an error reason (``timeout``, ``connect``,
            ``protocol``) or ``"N redirects"``.
        fetched_at, expires_at: clock seconds of the fetch and of expiry.
        crawl_delay_s: ``Crawl-delay`` of our group in seconds, or ``None``.
        rules: the ``(allow|disallow, pattern)`` lines of our group in file order
            (``(("disallow", "/"),)`` for a strict-mode disallow-all; empty when
            everything is allowed).
        allow_all, disallow_all: no rules apply / everything is refused.
        from_last_good: the rules are those of an earlier fetch (the file is unreachable).
        refreshing: a background refresh is in flight.
        retry_after: the raw ``Retry-After`` header of the last response (any status),
            ``None`` when absent or after a network error; with ``http_status`` it is
            what ``Politeness.on_response`` takes.
    """

    origin: str
    status: RobotsStatus
    http_status: int | None
    detail: str
    fetched_at: float
    expires_at: float
    crawl_delay_s: float | None
    rules: tuple[tuple[RuleKind, str], ...]
    allow_all: bool
    disallow_all: bool
    from_last_good: bool
    refreshing: bool = False
    retry_after: str | None = None


@dataclass(frozen=True, slots=True)
class RobotsState:
    """One origin's cached robots.txt: its view and the matcher of its rules.

    Attributes:
        view: the ``RobotsEntry`` shown to the console and the ``hosts`` table.
        parser: protego over our group's rules alone (``None`` when no rule applies
            or everything is refused: then ``view.allow_all``/``view.disallow_all``
            decide).
    """

    view: RobotsEntry
    parser: Protego | None

    def allows(self, url: str, token: str) -> bool:
        """May ``token`` fetch ``url`` (an http(s) URL of this origin)? (§2.2.2-§2.2.3)

        ``/robots.txt`` itself is always allowed. protego failing on a pathological
        URL counts as no matching rule: allowed. Never raises.
        """
        view = self.view
        if view.disallow_all:
            allowed = False
        elif view.allow_all or self.parser is None:
            allowed = True
        else:
            try:
                allowed = self.parser.can_fetch(url, token)
            except Exception:  # protego on a pathological URL: fail open, like no rule
                allowed = True
        return allowed or urlsplit(url).path == "/robots.txt"


def ttl_s(headers: Mapping[str, str], now: float, max_s: float) -> float:
    """The cache lifetime in seconds of a robots.txt response (RFC 9309 §2.4, RFC 9111).

    Args:
        headers: the response headers (case-insensitive mapping, e.g. ``FetchResult.headers``).
        now: clock seconds, the base of an ``Expires`` without a ``Date``.
        max_s: the cap (``robots_ttl_max_s``).

    ``max-age`` wins over ``Expires``; ``no-cache``/``no-store``, an invalid
    ``max-age`` (not digits) and an unparseable ``Expires`` count as 0; a huge
    ``max-age`` counts as ``2**31`` s (RFC 9111 §1.2.2) and is capped. The result is
    within ``[min(60, max_s), max_s]``; with no freshness information it is ``max_s``.
    Never raises.
    """
    floor = min(_MIN_TTL_S, max_s)
    h = headers
    ttl: float | None = None
    for directive in h.get("cache-control", "").split(","):
        name, _, value = directive.strip().partition("=")
        name = name.strip().lower()
        if name in ("no-cache", "no-store"):
            ttl = 0.0
            break
        if name == "max-age":
            # digits only, a huge value read as 2**31 without converting it (RFC 9111
            # §1.2.2); an invalid one makes the copy stale (§4.2.1): 0
            ttl = delta_seconds(value.strip().strip('"')) or 0.0
    if ttl is None and "expires" in h:
        ttl = 0.0
        with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
            expires = parsedate_to_datetime(h["expires"]).timestamp()
            base = now
            if "date" in h:
                with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
                    base = parsedate_to_datetime(h["date"]).timestamp()
            ttl = expires - base
    if ttl is None or not math.isfinite(ttl):
        return float(max_s)
    return max(floor, min(float(max_s), ttl))


@dataclass(frozen=True, slots=True)
class RobotsGroup:
    """The rules our product token obeys in one robots.txt.

    Attributes:
        agent: the matched user-agent, lowercased: our token, ``"*"``, or ``None`` when
            no group applies (then nothing is disallowed).
        rules: the ``(allow|disallow, pattern)`` lines of the matched groups, in file
            order (empty patterns such as ``Disallow:`` are no rules, but their group
            still applies: see ``select_group``).
        crawl_delay_s: the last valid ``Crawl-delay`` of the matched groups, seconds.
    """

    agent: str | None
    rules: tuple[tuple[RuleKind, str], ...]
    crawl_delay_s: float | None


def select_group(text: str, token: str) -> RobotsGroup:
    """The group of ``text`` (a robots.txt) that ``token`` obeys (RFC 9309 §2.1, §2.2.1).

    Grouping: one or more consecutive ``User-agent`` lines open a group, which runs
    until the next ``User-agent`` line that follows a rule; ``Sitemap`` lines belong to
    no group; comments (``#``) and lines before the first group are ignored. Matching:
    the product token of a ``User-agent`` value (its leading letters, ``_`` and ``-``,
    so ``CrawlDeck/2.0`` names ``crawldeck``) equal to ``token``, case-insensitively;
    else ``*``. All groups naming the match are combined (§2.2.1). A group applies
    because it names the agent, whatever its rules: one with only an empty
    ``Disallow:`` (which disallows nothing, §2.2.2) or with no rule at all still
    applies, so the "allow only this bot" idiom (``User-agent: crawldeck`` /
    ``Disallow:`` then ``User-agent: *`` / ``Disallow: /``) lets us crawl everything
    and ``*`` does not apply to us. Field names are case-insensitive and protego's
    common misspellings (``dissallow``) are accepted. Never raises.

    Damage (§2.2: "parse errors are ignored", line by line): lines are read by
    ``robots_lines`` (control characters removed, CR/LF/CR LF mixed); U+FFFD (a byte
    that is not UTF-8) is dropped from field names and ``User-agent`` values, so a bad
    byte inserted there costs nothing. A line whose field is still unknown is lost and
    the group goes on (an unknown line neither closes nor opens a group, as in
    Google's parser), except that an unknown line where a group may start which looks
    like a ``User-agent`` line (``_looks_like_user_agent``) closes the group before it:
    the rules under a lost ``User-agent`` line belong to no group rather than to the
    group before. So damage to one line changes no other group's rules.
    """
    token = token.strip().lower()
    rules: dict[str, list[tuple[RuleKind, str]]] = {}
    delays: dict[str, float] = {}
    named: set[str] = set()  # agents some group names: that group applies to them
    current: list[str] = []
    in_rules = True  # the next User-agent line opens a new group
    for raw in robots_lines(text):
        line = raw.split("#", 1)[0].strip()
        field, sep, value = line.partition(":")
        if not sep:  # tolerate "Disallow /x" (no colon) as protego does
            field, _, value = line.partition(" ")
        field = field.replace(_REPLACED, "").strip().lower()
        value = value.strip()
        if not field or field in _SITE_WIDE_FIELDS:
            continue
        if field not in _KNOWN_FIELDS:
            if in_rules and _looks_like_user_agent(field):
                current = []  # a lost User-agent line: its rules belong to no group
            continue  # an unknown or damaged line is lost, the group goes on (§2.2)
        if field in _UA_FIELDS:
            value = value.replace(_REPLACED, "")
            if in_rules:
                current, in_rules = [], False
            match = _PRODUCT_TOKEN.match(value)
            agent = match.group(0).lower() if match else ""
            if agent and agent not in current:
                current.append(agent)
                named.add(agent)
            continue
        in_rules = True
        if not value or not current:
            continue
        if field in _DELAY_FIELDS:
            try:
                delay = float(value)
            except ValueError:
                continue
            if math.isfinite(delay) and delay >= 0:
                for agent in current:
                    delays[agent] = delay
            continue
        kind: RuleKind | None = (
            "allow" if field == "allow" else "disallow" if field in _DISALLOW_FIELDS else None
        )
        if kind is not None:
            for agent in current:
                rules.setdefault(agent, []).append((kind, value))
    for agent in (token, "*"):
        if agent in named:
            return RobotsGroup(agent, tuple(rules.get(agent, ())), delays.get(agent))
    return RobotsGroup(None, (), None)


def robots_lines(text: str) -> list[str]:
    """The lines of a robots.txt ``text`` as RFC 9309 §2.2 reads them, cleaned of
    byte-level damage so that a damaged line is all that is lost, never a group.

    Lines end at CR LF, CR or LF alone, mixed in any order (the RFC's ``EOL``); no other
    character ends one (``str.splitlines`` would also split at VT, FF, FS, GS, RS,
    NEL, LS and PS, cutting a line in two). A byte-order mark at the start is dropped.
    Control characters (C0 but TAB, DEL, C1: a NUL, a stray ``\x1c``) are removed
    wherever they are: no robots.txt token or path holds one. U+FFFD (what ``_parse``
    decodes a byte that is not UTF-8 to) is kept here; ``select_group`` drops it from
    field names and ``User-agent`` values.

    Example: ``"\ufeffUser-agent: *\rDis\x00allow: /a\r\n"`` ->
    ``["User-agent: *", "Disallow: /a", ""]``. Never raises.
    """
    return [_CONTROL.sub("", line) for line in _EOL.split(text.removeprefix("\ufeff"))]


def _looks_like_user_agent(field: str) -> bool:
    """Whether an unknown field name (damage removed, lowercased) is a damaged
    ``user-agent``: it names a part of it, or is at least 75 % alike (difflib)."""
    if "agent" in field or "user" in field:
        return True
    return difflib.SequenceMatcher(None, field, "user-agent").ratio() >= 0.75


def _decode(body: bytes) -> str:
    """A robots.txt body as text: UTF-8 (§2.2), a byte that is not UTF-8 as U+FFFD, a
    whole or partial byte-order mark at the start (``EF BB BF``, ``EF BB``, ``EF``
    before a byte that cannot continue it) dropped."""
    if body.startswith(b"\xef"):
        cut = 3 if body.startswith(b"\xef\xbb\xbf") else 2 if body.startswith(b"\xef\xbb") else 1
        if cut < 3 and len(body) > cut and 0x80 <= body[cut] <= 0xBF:
            cut = 0  # EF then a continuation: a real character, not a cut BOM
        body = body[cut:]
    return body.decode("utf-8", errors="replace")


def _parse(body: bytes, truncated: bool, token: str) -> tuple[Protego | None, RobotsGroup]:
    """Our group of a robots.txt body, and a protego matcher for its rules.

    A truncated body loses its last, cut-off line (§2.5); bytes that are not UTF-8
    become U+FFFD, a whole or partial BOM is dropped (§2.2), and the lines are read by
    ``robots_lines`` (byte-level damage costs a line, never a group). The group is chosen by
    ``select_group`` (protego's own choice is a prefix match: its group ``crawl``
    would apply to ``crawldeck``); protego gets that group alone, as ``User-agent: *``,
    and does the path matching (``*``, ``$``, longest match, percent-encoding,
    §2.2.2-§2.2.3). ``None`` when there are no rules. Never raises.
    """
    if truncated:
        cut = max(body.rfind(b"\n"), body.rfind(b"\r"))
        body = body[: cut + 1] if cut >= 0 else b""
    group = select_group(_decode(body), token)
    if not group.rules:
        return None, group
    lines = ["User-agent: *", *(f"{kind}: {pattern}" for kind, pattern in group.rules)]
    try:
        return Protego.parse("\n".join(lines)), group
    except Exception:  # protego must never raise out of this module: no usable rules
        return None, RobotsGroup(group.agent, (), group.crawl_delay_s)


def _redirect_target(url: str, location: str | None) -> str | None:
    """``Location`` resolved against ``url`` by ``core.policy.urls.clean`` (fragment dropped),
    or ``None`` when it is missing or not an http(s) URL."""
    if not location or not location.strip():
        return None
    try:
        return clean(location, url)
    except UrlError:
        return None


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class RobotsSettings:
    """The settings ``RobotsCache`` uses, named and counted as ``CrawlConfig``'s keys.

    Attributes:
        robots_token: the product token groups are matched against (RFC 9309 §2.2.1).
        robots_max_bytes: robots.txt is parsed from at most this many bytes.
        robots_max_redirects: redirect hops followed (RFC 9309 §2.3.1.2).
        robots_ttl_max_s: the longest a robots.txt is cached (s; RFC 9309 §2.4).
        robots_retry_s: when an unreachable robots.txt is asked for again (s).
        robots_on_failure: ``allow`` or ``disallow`` while unreachable with no
            last good copy (RFC 9309 §2.3.1.4).

    Not checked here: ``from_config`` takes them from a ``CrawlConfig``, which
    checked their ranges and the token's characters.
    """

    robots_token: str
    robots_max_bytes: int
    robots_max_redirects: int
    robots_ttl_max_s: int
    robots_retry_s: int
    robots_on_failure: RobotsFailureMode

    @classmethod
    def from_config(cls, config: CrawlConfig) -> RobotsSettings:
        """The robots.txt settings of ``config`` (its keys of the same names)."""
        return cls(
            robots_token=config.robots_token,
            robots_max_bytes=config.robots_max_bytes,
            robots_max_redirects=config.robots_max_redirects,
            robots_ttl_max_s=config.robots_ttl_max_s,
            robots_retry_s=config.robots_retry_s,
            robots_on_failure=config.robots_on_failure,
        )


@dataclass(frozen=True, slots=True)
class RobotsResponse:
    """One response to a robots.txt request, as ``interpret`` reads it.

    Attributes:
        url: the URL requested (``ORIGIN/robots.txt`` or a redirect hop's target).
        status: the HTTP status code.
        headers: the response headers, a case-insensitive mapping (e.g.
            ``FetchResult.headers``; a plain ``dict`` with lower-case keys works too).
        body: the body bytes read, at most ``robots_max_bytes``.
        truncated: the body was cut at ``robots_max_bytes``.
    """

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes
    truncated: bool


@dataclass(frozen=True, slots=True)
class NetworkFailure:
    """No response to a robots.txt request.

    Attributes:
        reason: the ``FetchError.reason`` token (``timeout``, ``connect``, ...).
    """

    reason: str


@dataclass(frozen=True, slots=True)
class RedirectHop:
    """Follow a redirect: request ``url`` next (RFC 9309 §2.3.1.2).

    Attributes:
        url: the cleaned ``Location`` target (``core.policy.urls.clean``), any http(s) host.
    """

    url: str


@dataclass(frozen=True, slots=True)
class CacheUpdate:
    """The origin's new cached state, and what to audit about it.

    Attributes:
        state: the new ``RobotsState``.
        audit: one line for the audit log (unreachable, or past the redirect limit),
            else ``None``.
        capped: the line saying the file was cut at ``robots_max_bytes`` (the size
            the server gave and the size read), else ``None``; the driver logs it
            once per origin (issue #22 item 8).
    """

    state: RobotsState
    audit: str | None
    capped: str | None = None


def interpret(
    outcome: RobotsResponse | NetworkFailure,
    *,
    origin: str,
    hops: int,
    now: float,
    last_good: RobotsState | None,
    settings: RobotsSettings,
    visited: frozenset[str] = frozenset(),
) -> RedirectHop | CacheUpdate:
    """What one robots.txt fetch outcome means (RFC 9309 §2.3.1, §2.4, §2.5).

    Args:
        outcome: the response, or the network error instead of one.
        origin: ``scheme://host[:port]`` whose robots.txt this is (redirects may have
            led to another host; the state is still this origin's).
        hops: redirects followed before this response (0 for ``ORIGIN/robots.txt``).
        now: clock seconds; ``fetched_at`` of the new state and the base of its expiry.
        last_good: the origin's last ``ok``/``missing``/``redirect_limit`` state
            however old, or ``None``; used only when the file is unreachable.
        settings: the token, caps, lifetimes and failure mode.
        visited: the URLs requested so far for this file (``ORIGIN/robots.txt`` and
            the hops before this response; empty: none known).

    Returns:
        ``RedirectHop`` for a 301/302/303/307/308 with a usable ``Location`` not in
        ``visited`` while ``hops < robots_max_redirects``; else ``CacheUpdate`` (see
        the module's table; a loop is ``redirect_limit`` at its first repeat).
        CPU only, no I/O; a big 2xx body takes a while to parse (about 0.5 s for
        500 KiB), so the caller may run it in a thread. Never raises.
    """
    if isinstance(outcome, NetworkFailure):
        return _unreachable(origin, None, outcome.reason, None, now, last_good, settings)
    status = outcome.status
    ttl = ttl_s(outcome.headers, now, settings.robots_ttl_max_s)
    if status in _REDIRECTS:  # §2.3.1.2
        target = _redirect_target(outcome.url, outcome.headers.get("location"))
        if target is None:
            detail = f"{status} without a usable Location"
            return CacheUpdate(_blanket(origin, outcome, "missing", detail, now, ttl), None)
        if target in visited:
            detail = f"redirect loop: redirect {hops + 1} goes back to {target}"
        elif hops >= settings.robots_max_redirects:
            detail = f"more than {settings.robots_max_redirects} redirects"
        else:
            return RedirectHop(target)
        line = f"robots.txt of {origin}: {detail}: allowing all, retry in {ttl:.0f} s"
        return CacheUpdate(_blanket(origin, outcome, "redirect_limit", detail, now, ttl), line)
    if 200 <= status < 300:  # §2.3.1.1, parsed within the §2.5 limit
        parser, group = _parse(outcome.body, outcome.truncated, settings.robots_token)
        view = RobotsEntry(
            origin=origin,
            status="ok",
            http_status=status,
            detail=str(status),
            fetched_at=now,
            expires_at=now + ttl,
            crawl_delay_s=group.crawl_delay_s,
            rules=group.rules,
            allow_all=parser is None,
            disallow_all=False,
            from_last_good=False,
            retry_after=outcome.headers.get("retry-after"),
        )
        capped = _size_cap_line(origin, outcome, settings) if outcome.truncated else None
        return CacheUpdate(RobotsState(view, parser), None, capped)
    if status == 429 or 500 <= status < 600:  # §2.3.1.4
        retry_after = outcome.headers.get("retry-after")
        return _unreachable(origin, status, str(status), retry_after, now, last_good, settings)
    return CacheUpdate(_blanket(origin, outcome, "missing", str(status), now, ttl), None)


def _size_cap_line(origin: str, response: RobotsResponse, settings: RobotsSettings) -> str:
    """The line for a robots.txt cut at ``robots_max_bytes`` (RFC 9309 §2.5): the size
    asked (its ``Content-Length`` when the body is not content-coded, else "more
    than" the cap) and the size used."""
    cap = settings.robots_max_bytes
    length = response.headers.get("content-length", "").strip()
    coded = response.headers.get("content-encoding", "identity").strip().lower()
    if length.isdigit() and int(length) > cap and coded in ("", "identity"):
        asked = f"{int(length)} bytes"
    else:
        asked = f"more than {cap} bytes"
    return (
        f"robots.txt of {origin}: {asked} served, {cap} bytes read (robots_max_bytes); "
        "the lines after the cut are not read"
    )


def _blanket(
    origin: str,
    response: RobotsResponse,
    status: RobotsStatus,
    detail: str,
    now: float,
    ttl: float,
) -> RobotsState:
    """Allow all: a 4xx, a useless redirect or too many redirects (§2.3.1.3)."""
    view = RobotsEntry(
        origin=origin,
        status=status,
        http_status=response.status,
        detail=detail,
        fetched_at=now,
        expires_at=now + ttl,
        crawl_delay_s=None,
        rules=(),
        allow_all=True,
        disallow_all=False,
        from_last_good=False,
        retry_after=response.headers.get("retry-after"),
    )
    return RobotsState(view, None)


def _unreachable(
    origin: str,
    http_status: int | None,
    why: str,
    retry_after: str | None,
    now: float,
    last_good: RobotsState | None,
    settings: RobotsSettings,
) -> CacheUpdate:
    """429, 5xx or a network error: last good copy, else allow/disallow all (§2.3.1.4).

    ``http_status`` and ``retry_after`` (the raw header) are kept in the entry; it
    lives ``robots_retry_s``.
    """
    retry_s = settings.robots_retry_s
    base = RobotsEntry(
        origin=origin,
        status="unreachable",
        http_status=http_status,
        detail=why,
        fetched_at=now,
        expires_at=now + retry_s,
        crawl_delay_s=None,
        rules=(),
        allow_all=True,
        disallow_all=False,
        from_last_good=False,
        retry_after=retry_after,
    )
    prefix = f"robots.txt of {origin} unreachable ({why})"
    if last_good is not None:  # §2.4: a stale copy while unreachable
        g = last_good.view
        view = replace(
            base,
            crawl_delay_s=g.crawl_delay_s,
            rules=g.rules,
            allow_all=g.allow_all,
            from_last_good=True,
        )
        line = f"{prefix}: using the copy fetched at {_iso(g.fetched_at)}, retry in {retry_s} s"
        return CacheUpdate(RobotsState(view, last_good.parser), line)
    if settings.robots_on_failure == "disallow":
        view = replace(base, allow_all=False, disallow_all=True, rules=(("disallow", "/"),))
        line = f"{prefix}: disallowing all (strict mode), retry in {retry_s} s"
        return CacheUpdate(RobotsState(view, None), line)
    return CacheUpdate(RobotsState(base, None), f"{prefix}: allowing all, retry in {retry_s} s")


def state_of(view: RobotsEntry) -> RobotsState:
    """The state of ``view`` alone, its matcher rebuilt from its rules (our group as
    ``_parse`` gives it to protego): what a worker of a cluster crawl gets from the
    robots.txt cache in Redis (issue #12). Never raises (unusable rules: no matcher)."""
    if not view.rules or view.allow_all or view.disallow_all:
        return RobotsState(view, None)
    lines = ["User-agent: *", *(f"{kind}: {pattern}" for kind, pattern in view.rules)]
    try:
        return RobotsState(view, Protego.parse("\n".join(lines)))
    except Exception:  # protego must never raise out of this module: no usable rules
        return RobotsState(view, None)


__all__ = [
    "CacheUpdate",
    "NetworkFailure",
    "RedirectHop",
    "RobotsEntry",
    "RobotsGroup",
    "RobotsResponse",
    "RobotsSettings",
    "RobotsState",
    "RobotsStatus",
    "RuleKind",
    "interpret",
    "robots_lines",
    "select_group",
    "state_of",
    "ttl_s",
]
