"""robots.txt per origin (RFC 9309): fetch once, cache, decide, refresh before expiry.

``RobotsCache.check(url)`` answers whether our product token may fetch ``url``. The
first check of an origin fetches ``ORIGIN/robots.txt`` (concurrent first checks share
that one request); later checks answer from the cache. What a fetch outcome means:

==================  =====================  ===========================================
outcome             status                 rules applied
==================  =====================  ===========================================
2xx                 ``ok``                 the file (parsed by protego, our group)
4xx (401/403 too)   ``missing``            none: allow all (§2.3.1.3)
> N redirects       ``redirect_limit``     none: allow all (§2.3.1.2, see below)
429, 5xx, network   ``unreachable``        last good copy (the last 2xx/4xx answer,
error                                      however old: §2.4 allows a stale copy when
                                           the file is unreachable); else allow all, or
                                           disallow all when ``robots_on_failure`` is
                                           ``disallow`` (§2.3.1.4); audited; retried
                                           after ``robots_retry_s``
==================  =====================  ===========================================

Redirects (301, 302, 303, 307, 308) are followed here, across hosts too, up to
``robots_max_redirects`` hops (§2.3.1.2: "at least five"). When the answer after that
many hops is still a redirect, RFC 9309 says a crawler MAY assume the file unavailable;
we do, and "unavailable" is the 4xx case of §2.3.1.3: allow all, status
``redirect_limit``, cached like a 4xx, and audited. A redirect without a usable
``Location`` is treated as a 4xx too. Any other status (1xx, 300, 304, >= 600) is a 4xx.

The body is read up to ``robots_max_bytes`` (§2.5 asks for at least 500 KiB); a longer
file is parsed from that prefix without its last, cut-off line (a cut ``Disallow:
/private`` must not become ``Disallow: /``). Bytes that are not UTF-8 are replaced
(§2.2: the file is UTF-8); anything unparseable (an HTML page) just has no rules.

Cache lifetime (§2.4): ``Cache-Control: max-age`` (``no-cache``/``no-store`` count as
0), else ``Expires`` (relative to ``Date`` when present), else ``robots_ttl_max_s``;
never more than ``robots_ttl_max_s`` and never less than one minute (or
``robots_ttl_max_s`` if smaller), so a ``max-age=0`` file does not cost one robots.txt
request per page. An ``unreachable`` entry lives ``robots_retry_s``. A check that finds
less than 10 % of an entry's lifetime left starts one background refresh for the origin
and answers from the current copy; an expired entry is fetched before answering.

Group matching (§2.2.1) is done here (``select_group``): the groups whose user-agent
product token equals ``robots_token`` case-insensitively, else the ``*`` groups; protego
then matches paths against that group's rules. (protego's own group choice is a prefix
match, ``User-agent: crawl`` would apply to ``crawldeck``, so it is not used.)
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Literal, Protocol
from urllib.parse import urlsplit

from protego import Protego

from crawldeck.core.config import CrawlConfig, RobotsFailureMode
from crawldeck.core.errors import FetchError, UrlError
from crawldeck.core.fetcher import FetchResult
from crawldeck.core.politeness import delta_seconds
from crawldeck.core.urls import clean
from crawldeck.core.urls import origin as url_origin

RobotsStatus = Literal["ok", "missing", "unreachable", "redirect_limit"]
RuleKind = Literal["allow", "disallow"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_REFRESH_FRACTION = 0.1  # refresh in the background when less than this part of TTL is left
_MIN_TTL_S = 60.0
_THREAD_PARSE_BYTES = 64 * 1024  # bigger robots.txt files are parsed off the event loop
_UA_FIELDS = frozenset({"user-agent", "useragent", "user agent"})
_SITE_WIDE_FIELDS = frozenset({"sitemap", "sitemaps", "site-map", "host"})
_DISALLOW_FIELDS = frozenset(
    {"disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"}
)
_DELAY_FIELDS = frozenset({"crawl-delay", "crawl delay"})
_PRODUCT_TOKEN = re.compile(r"\*|[A-Za-z_-]+")


class RobotsFetcher(Protocol):
    """What ``RobotsCache`` fetches with: a ``core.fetcher.AiohttpFetcher``, or the
    engine's polite fetcher that waits for each host's politeness (every robots.txt
    request, redirect hops included, counts against the host it goes to)."""

    async def fetch(self, url: str, *, max_bytes: int | None = None) -> FetchResult:
        """GET ``url`` once without following redirects; raises ``FetchError``."""
        ...


@dataclass(frozen=True, slots=True)
class RobotsDecision:
    """The answer for one URL.

    Attributes:
        allowed: whether our token may fetch the URL.
        crawl_delay_s: the ``Crawl-delay`` of our group in seconds (``None`` if absent,
            or when no file applies). Not in RFC 9309; the de-facto extension.
        status: ``ok``, ``missing``, ``unreachable`` or ``redirect_limit`` (see module).
        fetched: ``True`` only for the one call that made the robots.txt request(s) to
            the host (each redirect hop is a request too); the engine counts that as a
            request for politeness. Background refreshes are not reported here.
    """

    allowed: bool
    crawl_delay_s: float | None
    status: RobotsStatus
    fetched: bool


@dataclass(frozen=True, slots=True)
class RobotsEntry:
    """The cached state of one origin, for the console and the ``hosts`` table.

    Attributes:
        origin: ``scheme://host[:port]``.
        status: as in ``RobotsDecision``.
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
class _State:
    """One origin's cached robots.txt: the parser (or a blanket answer) and its view."""

    view: RobotsEntry
    parser: Protego | None


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
    """
    token = token.strip().lower()
    rules: dict[str, list[tuple[RuleKind, str]]] = {}
    delays: dict[str, float] = {}
    named: set[str] = set()  # agents some group names: that group applies to them
    current: list[str] = []
    in_rules = True  # the next User-agent line opens a new group
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        field, sep, value = line.partition(":")
        if not sep:  # tolerate "Disallow /x" (no colon) as protego does
            field, _, value = line.partition(" ")
        field = field.strip().lower()
        value = value.strip()
        if not field or field in _SITE_WIDE_FIELDS:
            continue
        if field in _UA_FIELDS:
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


def _parse(body: bytes, truncated: bool, token: str) -> tuple[Protego | None, RobotsGroup]:
    """Our group of a robots.txt body, and a protego matcher for its rules.

    A truncated body loses its last, cut-off line (§2.5); bytes that are not UTF-8
    become U+FFFD and a BOM is dropped (§2.2). The group is chosen by
    ``select_group`` (protego's own choice is a prefix match: its group ``crawl``
    would apply to ``crawldeck``); protego gets that group alone, as ``User-agent: *``,
    and does the path matching (``*``, ``$``, longest match, percent-encoding,
    §2.2.2-§2.2.3). ``None`` when there are no rules. Never raises.
    """
    if truncated:
        cut = max(body.rfind(b"\n"), body.rfind(b"\r"))
        body = body[: cut + 1] if cut >= 0 else b""
    text = body.decode("utf-8", errors="replace").removeprefix("\ufeff")
    group = select_group(text, token)
    if not group.rules:
        return None, group
    lines = ["User-agent: *", *(f"{kind}: {pattern}" for kind, pattern in group.rules)]
    try:
        return Protego.parse("\n".join(lines)), group
    except Exception:  # protego must never raise out of this module: no usable rules
        return None, RobotsGroup(group.agent, (), group.crawl_delay_s)


def _redirect_target(url: str, location: str | None) -> str | None:
    """``Location`` resolved against ``url`` by ``core.urls.clean`` (fragment dropped),
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


class RobotsCache:
    """Per-origin robots.txt cache in front of a ``RobotsFetcher`` (RFC 9309).

    Args:
        fetcher: used for every robots.txt request, each redirect hop included (a
            ``core.fetcher.AiohttpFetcher``, or the engine's polite one); not closed by
            this class.
        settings: the token, size and redirect caps, cache lifetimes and failure
            mode (``RobotsSettings.from_config(config)``).
        clock: wall-clock seconds (``time.time`` in production, a fake in tests);
            ``fetched_at``/``expires_at`` are in its time.
        audit: called with one line each time a robots.txt is found unreachable or
            past the redirect limit (what we did instead, and when we retry).

    Call ``await cache.aclose()`` before closing the fetcher: it cancels background
    refreshes and fetches still in flight.
    """

    def __init__(
        self,
        fetcher: RobotsFetcher,
        settings: RobotsSettings,
        clock: Callable[[], float],
        audit: Callable[[str], None],
    ) -> None:
        self._fetcher = fetcher
        self._settings = settings
        self._clock = clock
        self._audit = audit
        self._token = settings.robots_token
        self._states: dict[str, _State] = {}
        self._last_good: dict[str, _State] = {}
        self._inflight: dict[str, asyncio.Task[_State]] = {}

    async def check(self, url: str) -> RobotsDecision:
        """May our token fetch ``url``? Fetches the origin's robots.txt when needed.

        ``/robots.txt`` itself is always allowed. Concurrent first checks of one origin
        wait for one shared fetch; the caller that started it gets ``fetched=True``.

        Raises:
            UrlError: ``url`` is not an http(s) URL with a host.
        """
        origin = url_origin(url)
        now = self._clock()
        state = self._states.get(origin)
        fetched = False
        if state is None or now >= state.view.expires_at:
            task = self._inflight.get(origin)
            if task is None:
                task = self._start(origin)
                fetched = True
            state = await asyncio.shield(task)
        else:
            view = state.view
            if view.expires_at - now < _REFRESH_FRACTION * (view.expires_at - view.fetched_at):
                self.refresh(origin)
        return self._decide(state, url, fetched)

    def refresh(self, origin: str) -> bool:
        """Start a background refetch of ``origin``'s robots.txt unless one is running.

        Returns ``True`` when a refresh was started. Raises ``UrlError`` for a bad origin.
        """
        origin = url_origin(origin)
        if origin in self._inflight:
            return False
        self._start(origin)
        return True

    def entry(self, origin: str) -> RobotsEntry | None:
        """The cached state of ``origin`` (any URL of it works), or ``None`` if not cached."""
        try:
            key = url_origin(origin)
        except UrlError:
            return None
        state = self._states.get(key)
        if state is None:
            return None
        return replace(state.view, refreshing=key in self._inflight)

    def origins(self) -> int:
        """How many origins have a cached robots.txt state."""
        return len(self._states)

    async def aclose(self) -> None:
        """Cancel background refreshes and fetches in flight and wait for them to end."""
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._inflight.clear()

    def _start(self, origin: str) -> asyncio.Task[_State]:
        task = asyncio.create_task(self._load(origin), name=f"robots.txt {origin}")
        self._inflight[origin] = task

        def done(t: asyncio.Task[_State]) -> None:
            if self._inflight.get(origin) is t:
                del self._inflight[origin]
            if not t.cancelled():
                t.exception()  # retrieved here so an orphaned refresh never warns

        task.add_done_callback(done)
        return task

    def _decide(self, state: _State, url: str, fetched: bool) -> RobotsDecision:
        view = state.view
        if view.disallow_all:
            allowed = False
        elif view.allow_all or state.parser is None:
            allowed = True
        else:
            try:
                allowed = state.parser.can_fetch(url, self._token)
            except Exception:  # protego on a pathological URL: fail open, like no rule
                allowed = True
        if not allowed and urlsplit(url).path == "/robots.txt":
            allowed = True
        return RobotsDecision(allowed, view.crawl_delay_s, view.status, fetched)

    async def _load(self, origin: str) -> _State:
        """Fetch, follow redirects, classify; store and return the new state."""
        state = await self._fetch_state(origin)
        self._states[origin] = state
        if state.view.status != "unreachable":
            self._last_good[origin] = state
        return state

    async def _fetch_state(self, origin: str) -> _State:
        settings = self._settings
        url = f"{origin}/robots.txt"
        hops = 0
        while True:
            try:
                result = await self._fetcher.fetch(url, max_bytes=settings.robots_max_bytes)
            except FetchError as exc:
                return self._unreachable(origin, None, exc.reason)
            status = result.status
            if status in _REDIRECTS:
                target = _redirect_target(url, result.headers.get("location"))
                if target is None:
                    return self._blanket(
                        origin, result, "missing", f"{status} without a usable Location"
                    )
                if hops >= settings.robots_max_redirects:
                    detail = f"more than {settings.robots_max_redirects} redirects"
                    self._audit(
                        f"robots.txt of {origin}: {detail}: allowing all, "
                        f"retry in {self._ttl(result):.0f} s"
                    )
                    return self._blanket(origin, result, "redirect_limit", detail)
                hops += 1
                url = target
                continue
            if 200 <= status < 300:
                return await self._parsed(origin, result)
            if status == 429 or 500 <= status < 600:
                return self._unreachable(
                    origin, status, str(status), result.headers.get("retry-after")
                )
            return self._blanket(origin, result, "missing", str(status))

    def _ttl(self, result: FetchResult) -> float:
        return ttl_s(result.headers, self._clock(), self._settings.robots_ttl_max_s)

    async def _parsed(self, origin: str, result: FetchResult) -> _State:
        """A 2xx: parse the body (in a worker thread when it is big) into a state."""
        if len(result.body) > _THREAD_PARSE_BYTES:
            # protego takes ~0.5 s on a 500 KiB file: keep the event loop free
            parser, group = await asyncio.to_thread(
                _parse, result.body, result.truncated, self._token
            )
        else:
            parser, group = _parse(result.body, result.truncated, self._token)
        now = self._clock()
        view = RobotsEntry(
            origin=origin,
            status="ok",
            http_status=result.status,
            detail=str(result.status),
            fetched_at=now,
            expires_at=now + self._ttl(result),
            crawl_delay_s=group.crawl_delay_s,
            rules=group.rules,
            allow_all=parser is None,
            disallow_all=False,
            from_last_good=False,
            retry_after=result.headers.get("retry-after"),
        )
        return _State(view, parser)

    def _blanket(
        self, origin: str, result: FetchResult, status: RobotsStatus, detail: str
    ) -> _State:
        """Allow all: a 4xx, a useless redirect or too many redirects (§2.3.1.3)."""
        now = self._clock()
        view = RobotsEntry(
            origin=origin,
            status=status,
            http_status=result.status,
            detail=detail,
            fetched_at=now,
            expires_at=now + self._ttl(result),
            crawl_delay_s=None,
            rules=(),
            allow_all=True,
            disallow_all=False,
            from_last_good=False,
            retry_after=result.headers.get("retry-after"),
        )
        return _State(view, None)

    def _unreachable(
        self, origin: str, http_status: int | None, why: str, retry_after: str | None = None
    ) -> _State:
        """429, 5xx or a network error: last good copy, else allow/disallow all (§2.3.1.4).

        ``http_status`` and ``retry_after`` (the raw header) are kept in the entry.
        """
        now = self._clock()
        retry_s = self._settings.robots_retry_s
        good = self._last_good.get(origin)
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
        if good is not None:
            g = good.view
            self._audit(
                f"{prefix}: using the copy fetched at {_iso(g.fetched_at)}, retry in {retry_s} s"
            )
            view = replace(
                base,
                crawl_delay_s=g.crawl_delay_s,
                rules=g.rules,
                allow_all=g.allow_all,
                from_last_good=True,
            )
            return _State(view, good.parser)
        if self._settings.robots_on_failure == "disallow":
            self._audit(f"{prefix}: disallowing all (strict mode), retry in {retry_s} s")
            view = replace(base, allow_all=False, disallow_all=True, rules=(("disallow", "/"),))
            return _State(view, None)
        self._audit(f"{prefix}: allowing all, retry in {retry_s} s")
        return _State(base, None)


__all__ = [
    "RobotsCache",
    "RobotsDecision",
    "RobotsEntry",
    "RobotsFetcher",
    "RobotsGroup",
    "RobotsSettings",
    "RobotsStatus",
    "select_group",
    "ttl_s",
]
