"""The local multi-host web: nine hosts on loopback addresses, and its ground truth.

>>> with LocalWeb(delay_scale=0.1) as web:          # doctest: +SKIP
...     web.hosts["www"]                             # 'http://127.77.0.1:40123'
...     web.seeds()                                  # the nine home pages
...     web.expected.good["www"]                     # URLs a correct crawler must fetch

Hosts (the keys of :attr:`LocalWeb.hosts`, in address order ``<prefix>.1`` .. ``.9``):

========  ==========================================================================
www       company site: robots.txt with a ``*`` group and a different ``crawldeck``
          group, Allow/Disallow with ``*`` and ``$``, Crawl-delay; nofollow (meta
          and rel), ``X-Robots-Tag: noindex``, ``<base href>``, non-HTML files
traps     calendar, session ids (``sid``, ``PHPSESSID``), ``./a/`` repeating path,
          redirect loop, 25-hop redirect chain, pagination, a URL over 2048 chars
norobots  ``/robots.txt`` answers 404
flaky     ``/robots.txt`` answers 503, always
moved     ``/robots.txt`` answers 301 to ``/real-robots.txt`` (``Disallow: /hidden/``)
busy      429 + ``Retry-After`` for the first ``busy_429_count`` requests (robots.txt
          excluded), then 200
slow      every response delayed by ``slow_s * delay_scale`` seconds
spa       single-page-app shells: links built by inline JavaScript, a hash router,
          ``fetch()`` of a JSON link list, an XHR robots.txt disallows, a page that
          never settles (see :class:`localweb.sites.SpaSite`)
sitemap   pages with no links between them, reachable only through the sitemap index
          its robots.txt names: two urlsets, one gzipped (:class:`localweb.sites.SitemapSite`)
========  ==========================================================================
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, TracebackType
from typing import Self
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from crawldeck.localweb.server import (
    Access,
    Handler,
    HostServer,
    Request,
    Response,
    start_hosts,
    stop_all,
)
from crawldeck.localweb.sites import (
    BusySite,
    FlakySite,
    MovedSite,
    NoRobotsSite,
    Site,
    SitemapSite,
    SlowSite,
    SpaSite,
    TrapsSite,
    WwwSite,
    format_seconds,
)

__all__ = ["HOST_NAMES", "SESSION_PARAMS", "Expected", "LocalWeb"]

HOST_NAMES: tuple[str, ...] = (
    "www",
    "traps",
    "norobots",
    "flaky",
    "moved",
    "busy",
    "slow",
    "spa",
    "sitemap",
)
"""The host names, in address order: ``www`` is ``<prefix>.1``, ``sitemap`` is ``<prefix>.9``."""

SESSION_PARAMS: frozenset[str] = frozenset({"sid", "phpsessid"})
"""Query parameters (lower-cased) that carry the ``traps`` shop's session ids."""

TRAP_REASONS: Mapping[str, str | None] = MappingProxyType(
    {
        "calendar": "calendar",
        "session": None,
        "session_phpsessid": None,
        "repeat": "repeating_path",
        "redirect_loop": "redirect_loop",
        "redirect_chain": "too_many_redirects",
        "pagination": "pagination",
        "long_url": "url_length",
    }
)
"""Trap kind -> the crawldeck ``BlockReason`` value that ends it with the default limits
(``None``: no block, the session parameters are stripped by normalization so the trap
collapses to a few pages)."""

_Sets = Mapping[str, frozenset[str]]


def _freeze(mapping: dict[str, frozenset[str]]) -> _Sets:
    return MappingProxyType(mapping)


@dataclass(frozen=True)
class Expected:
    """What a correct crawler does on the local web: the ground truth tests assert on.

    Every URL is absolute (``http://127.77.0.1:PORT/path?query``), spelled as the
    pages link it. Per-host mappings are keyed by host name and have every name of
    :data:`HOST_NAMES` (an empty set when nothing applies). "Correct crawler" means:
    robots token :attr:`robots_token`, robots 5xx -> allow all (the default, audited
    mode), crawldeck's default trap limits (max_depth 10, max_segment_repeats 2,
    max_page_param 1000, calendar_window_years 2, max_url_length 2048, max_redirects 20)
    and ``sid``/``PHPSESSID`` in the normalization strip list.

    Attributes:
        robots_token: the product token the robots expectations are computed for.
        crawl_delay_s: the ``Crawl-delay`` in ``www``'s robots.txt (both groups) and in
            ``spa``'s, seconds.
        retry_after_s: the ``Retry-After`` of ``busy``'s 429 answers, whole seconds.
        busy_429_count: how many requests to ``busy`` answer 429 (robots.txt excluded).
        slow_delay_s: the delay of every ``slow`` response, seconds (already scaled).
        chain_hops: redirects from the ``redirect_chain`` entry to its final page (25).
        robots_status: host name -> status of ``GET /robots.txt`` (200, 404, 503, 301).
        good: host name -> HTML pages that must be fetched; each is reachable within
            depth 5 of :meth:`LocalWeb.seeds` without crossing a disallowed or nofollow
            link. The ``traps`` shop pages are listed without their session parameter:
            compare with :meth:`canonical`.
        files: host name -> non-HTML URLs that must be fetched (CSV, PNG, text, and a
            PDF whose URL has a query, so ``Disallow: /*.pdf$`` does not match it).
        disallowed: host name -> URLs a naive crawler finds that robots.txt forbids to
            :attr:`robots_token`; they must never be requested (``blocked`` reason
            ``robots``).
        disallowed_other_agents: host name -> URLs forbidden by the ``*`` group but
            allowed to :attr:`robots_token` (a crawler obeying the wrong group skips them).
        nofollow: URLs linked only by ``rel="nofollow"`` or from a page with
            ``<meta name="robots" content="nofollow">``; must never be requested.
        noindex: good pages answered with ``X-Robots-Tag: noindex``.
        wrong_base: URLs a crawler ignoring ``<base href>`` would request (they 404).
        traps: trap kind -> entry URL (``calendar``, ``session``, ``session_phpsessid``,
            ``repeat``, ``redirect_loop``, ``redirect_chain``, ``pagination``,
            ``long_url``); the entries of the two session traps are canonical.
        trap_reasons: trap kind -> the ``BlockReason`` value that must end it, or
            ``None`` when nothing is blocked (see :data:`TRAP_REASONS`).
        long_url: the over-long URL linked from the ``long_url`` entry (> 2048 chars).
        redirects: URL -> ``Location`` header as sent, for every fixed redirect.
        shells: shell kind -> URL of the ``spa`` host's JavaScript shells
            (``inline``, ``hash``, ``fetch``, ``private``, ``never``, ``spin``; all
            but ``spin`` are linked from ``spa``'s home and are in :attr:`good`).
        rendered_only: HTML pages linked only from the rendered DOM of a shell: a
            crawler that renders the shells must fetch them, one that does not
            never finds them (they are not in :attr:`good`).
        render_disallowed: URLs a shell's scripts ask for that robots.txt forbids
            (``/private-api/...``); a polite renderer aborts them: never requested.
        render_unreachable: pages that exist but a correct rendering crawler never
            finds: shown only under a non-default hash route (``#/about``; the
            crawler drops fragments, so it renders the default view only) or only
            from the data of a disallowed API.
        render_resources: the image, font and video the shells ask for; never
            requested while those resource types are blocked (the default).
    """

    robots_token: str
    crawl_delay_s: float
    retry_after_s: int
    busy_429_count: int
    slow_delay_s: float
    chain_hops: int
    robots_status: Mapping[str, int]
    good: _Sets
    files: _Sets
    disallowed: _Sets
    disallowed_other_agents: _Sets
    nofollow: frozenset[str]
    noindex: frozenset[str]
    wrong_base: frozenset[str]
    traps: Mapping[str, str]
    trap_reasons: Mapping[str, str | None]
    long_url: str
    redirects: Mapping[str, str]
    shells: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    rendered_only: frozenset[str] = frozenset()
    render_disallowed: frozenset[str] = frozenset()
    render_unreachable: frozenset[str] = frozenset()
    render_resources: frozenset[str] = frozenset()

    @property
    def all_good(self) -> frozenset[str]:
        """Every host's :attr:`good` pages together."""
        return frozenset().union(*self.good.values())

    @property
    def all_files(self) -> frozenset[str]:
        """Every host's :attr:`files` together."""
        return frozenset().union(*self.files.values())

    @property
    def all_disallowed(self) -> frozenset[str]:
        """Every host's :attr:`disallowed` URLs together."""
        return frozenset().union(*self.disallowed.values())

    @property
    def must_not_fetch(self) -> frozenset[str]:
        """URLs a correct crawler never requests: disallowed, nofollow, wrong base."""
        return self.all_disallowed | self.nofollow | self.wrong_base

    @staticmethod
    def canonical(url: str) -> str:
        """``url`` without its session parameters (:data:`SESSION_PARAMS`, any case).

        ``http://h/shop/product/2?sid=9f..`` -> ``http://h/shop/product/2``; other
        URLs come back unchanged.
        """
        parts = urlsplit(url)
        if not parts.query:
            return url
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        kept = [(k, v) for k, v in pairs if k.lower() not in SESSION_PARAMS]
        if len(kept) == len(pairs):
            return url
        return urlunsplit(parts._replace(query=urlencode(kept)))


class LocalWeb:
    """Nine HTTP/1.1 hosts on loopback addresses sharing one port (see the module doc).

    ``start()`` binds ``<addresses_prefix>.1`` .. ``.9`` on a common free port and
    serves them in background threads; ``stop()`` (or leaving the ``with`` block)
    closes every socket and joins every thread. A stopped web cannot restart.
    """

    def __init__(
        self,
        *,
        delay_scale: float = 1.0,
        busy_429_count: int = 3,
        retry_after_s: int = 1,
        slow_s: float = 0.5,
        crawl_delay_s: float = 1.0,
        addresses_prefix: str = "127.77.0",
        today: datetime.date | None = None,
        port: int = 0,
        names: Mapping[str, str] | None = None,
    ) -> None:
        """Configure the web (nothing is bound until :meth:`start`).

        Args:
            delay_scale: multiplies the slow host's delay and the Crawl-delay written
                in ``www``'s and ``spa``'s robots.txt (``0.1`` makes a test ten times
                faster).
                Retry-After is whole seconds and is not scaled.
            busy_429_count: requests to ``busy`` (robots.txt excluded) answered 429.
            retry_after_s: the ``Retry-After`` of those 429 answers, whole seconds.
            slow_s: the delay of every ``slow`` response before scaling, seconds.
            crawl_delay_s: ``www``'s and ``spa``'s Crawl-delay before scaling, seconds.
            addresses_prefix: the first three octets of the hosts' addresses; host
                ``i`` (1-based, :data:`HOST_NAMES` order) is ``<prefix>.i``.
            today: the calendar trap's starting month (default: today, local time).
            port: the TCP port every host listens on; ``0`` picks a free one.
            names: host name -> a DNS name for it (e.g. ``{"www": "www.localweb.test"}``,
                served by a DNS server the caller runs); the pages then link by these
                names instead of by address. Hosts not named keep their address.
        """
        if delay_scale < 0 or slow_s < 0 or crawl_delay_s < 0:
            raise ValueError("delay_scale, slow_s and crawl_delay_s must be >= 0")
        if busy_429_count < 0 or retry_after_s < 0:
            raise ValueError("busy_429_count and retry_after_s must be >= 0")
        self.delay_scale = delay_scale
        self.busy_429_count = busy_429_count
        self.retry_after_s = retry_after_s
        self.slow_s = slow_s
        self.crawl_delay_s = crawl_delay_s
        self.addresses_prefix = addresses_prefix
        self.today = today or datetime.date.today()
        self.requested_port = port
        self._names = dict(names or {})
        self._servers: dict[str, HostServer] = {}
        self._sites: dict[str, Site] = {}
        self._expected: Expected | None = None
        self._stopped = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Bind and serve every host; returns ``self``. Raises ``OSError`` if no
        common port is free, ``RuntimeError`` if already started or stopped."""
        if self._servers or self._stopped:
            raise RuntimeError("LocalWeb.start(): already started")
        addresses = [f"{self.addresses_prefix}.{i}" for i in range(1, len(HOST_NAMES) + 1)]
        handlers = [self._handler(name) for name in HOST_NAMES]
        # Bind first (the port is chosen there), then build the sites, which need
        # every base URL; a request arriving in between gets a 503.
        servers = start_hosts(addresses, handlers, names=list(HOST_NAMES), port=self.requested_port)
        self._servers = dict(zip(HOST_NAMES, servers, strict=True))
        bases = {name: self._base(name) for name in self._servers}
        home = {name: f"{base}/" for name, base in bases.items()}
        www_home = home["www"]
        others = {name: url for name, url in home.items() if name != "www"}
        self._sites = {
            "www": WwwSite(bases["www"], www_home, others, self._crawl_delay_text()),
            "traps": TrapsSite(bases["traps"], www_home, self.today),
            "norobots": NoRobotsSite(bases["norobots"], www_home),
            "flaky": FlakySite(bases["flaky"], www_home),
            "moved": MovedSite(bases["moved"], www_home),
            "busy": BusySite(bases["busy"], www_home, self.busy_429_count, self.retry_after_s),
            "slow": SlowSite(bases["slow"], www_home, self.slow_delay_s),
            "spa": SpaSite(bases["spa"], www_home, self._crawl_delay_text()),
            "sitemap": SitemapSite(bases["sitemap"], www_home),
        }
        self._expected = self._build_expected()
        return self

    def stop(self) -> None:
        """Stop every host and release its sockets and threads (idempotent)."""
        self._stopped = True
        stop_all(self._servers.values())

    def __enter__(self) -> Self:
        """Start and return ``self``."""
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop."""
        self.stop()

    # ------------------------------------------------------------------ views

    @property
    def slow_delay_s(self) -> float:
        """The delay of every ``slow`` response, seconds (``slow_s * delay_scale``)."""
        return self.slow_s * self.delay_scale

    @property
    def effective_crawl_delay_s(self) -> float:
        """``www``'s Crawl-delay as written in robots.txt, seconds (scaled)."""
        return float(self._crawl_delay_text())

    @property
    def hosts(self) -> dict[str, str]:
        """Host name -> base URL without a trailing slash, e.g.
        ``{"www": "http://127.77.0.1:40123", ...}`` (a copy)."""
        return {name: self._base(name) for name in self._started()}

    @property
    def host_keys(self) -> dict[str, str]:
        """Host name -> crawldeck host key, e.g. ``{"www": "127.77.0.1:40123", ...}``."""
        return {name: self._key(name) for name in self._started()}

    def _key(self, name: str) -> str:
        """The host key of host ``name``: its DNS name (if given) or address, and port."""
        server = self._servers[name]
        dns_name = self._names.get(name)
        return server.host_key if dns_name is None else f"{dns_name}:{server.port}"

    def _base(self, name: str) -> str:
        """The base URL of host ``name`` (``http://KEY``, no trailing slash)."""
        return f"http://{self._key(name)}"

    @property
    def port(self) -> int:
        """The TCP port every host listens on."""
        return next(iter(self._started().values())).port

    @property
    def expected(self) -> Expected:
        """The ground truth (see :class:`Expected`); available once started."""
        self._started()
        assert self._expected is not None
        return self._expected

    def url(self, name: str, target: str = "/") -> str:
        """The absolute URL of ``target`` (path with query) on host ``name``."""
        self._started()
        return self._base(name) + target

    def seeds(self) -> list[str]:
        """The home page of every host, in :data:`HOST_NAMES` order (each host is its
        own registered domain, so every host needs a seed to be in scope)."""
        return [self.url(name) for name in HOST_NAMES]

    def name_of(self, host_key: str) -> str:
        """The host name of a host key (``"127.77.0.3:40123"`` -> ``"norobots"``);
        ``KeyError`` if it is not one of this web's hosts."""
        for name in self._started():
            if self._key(name) == host_key:
                return name
        raise KeyError(host_key)

    def access_log(self, name: str) -> list[Access]:
        """Every request host ``name`` answered so far, in the order the answers started
        (``Access.at`` is the arrival time, so overlapping requests may interleave)."""
        return self._started()[name].log.entries()

    def clear_logs(self) -> None:
        """Forget every host's access log."""
        for server in self._started().values():
            server.log.clear()

    def errors(self) -> list[str]:
        """Exceptions raised while answering (should stay empty), ``"host: ..."`` lines."""
        return [f"{n}: {e}" for n, s in self._started().items() for e in s.errors]

    # ------------------------------------------------------------------ internals

    def _started(self) -> dict[str, HostServer]:
        if not self._servers:
            raise RuntimeError("LocalWeb is not started")
        return self._servers

    def _crawl_delay_text(self) -> str:
        return format_seconds(self.crawl_delay_s * self.delay_scale)

    def _handler(self, name: str) -> Handler:
        def handle(request: Request) -> Response:
            site = self._sites.get(name)
            if site is None:
                return Response.error(503, [("Retry-After", "1")])
            return site(request)

        return handle

    def _build_expected(self) -> Expected:
        sites = self._sites
        urls = {name: self._base(name) for name in self._servers}

        def absolute(name: str, targets: set[str]) -> frozenset[str]:
            return frozenset(urls[name] + t for t in targets)

        def per_host(attr: str) -> _Sets:
            return _freeze({n: absolute(n, getattr(sites[n], attr)) for n in HOST_NAMES})

        def merged(attr: str) -> frozenset[str]:
            return frozenset().union(*per_host(attr).values())

        traps = sites["traps"]
        assert isinstance(traps, TrapsSite)
        t = urls["traps"]
        redirects = {f"{t}/loop/a": "/loop/b", f"{t}/loop/b": "/loop/a"}
        for n in range(1, traps.CHAIN_HOPS):
            redirects[f"{t}/chain/{n}"] = f"/chain/{n + 1}"
        redirects[f"{t}/chain/{traps.CHAIN_HOPS}"] = "/chain/final"
        redirects[f"{urls['moved']}/robots.txt"] = f"{urls['moved']}/real-robots.txt"
        spa = sites["spa"]
        assert isinstance(spa, SpaSite)
        s = urls["spa"]
        return Expected(
            robots_token="crawldeck",
            crawl_delay_s=self.effective_crawl_delay_s,
            retry_after_s=self.retry_after_s,
            busy_429_count=self.busy_429_count,
            slow_delay_s=self.slow_delay_s,
            chain_hops=traps.CHAIN_HOPS,
            robots_status=MappingProxyType(
                {
                    "www": 200,
                    "traps": 200,
                    "norobots": 404,
                    "flaky": 503,
                    "moved": 301,
                    "busy": 200,
                    "slow": 200,
                    "spa": 200,
                    "sitemap": 200,
                }
            ),
            good=per_host("good"),
            files=per_host("files"),
            disallowed=per_host("disallowed"),
            disallowed_other_agents=per_host("disallowed_other_agents"),
            nofollow=merged("nofollow"),
            noindex=merged("noindex"),
            wrong_base=merged("wrong_base"),
            traps=MappingProxyType({kind: t + target for kind, target in traps.entries.items()}),
            trap_reasons=TRAP_REASONS,
            long_url=t + traps.long_target,
            redirects=MappingProxyType(redirects),
            shells=MappingProxyType({kind: s + target for kind, target in spa.shells.items()}),
            rendered_only=absolute("spa", spa.rendered_only),
            render_disallowed=absolute("spa", spa.render_disallowed),
            render_unreachable=absolute("spa", spa.render_unreachable),
            render_resources=absolute("spa", spa.render_resources),
        )
