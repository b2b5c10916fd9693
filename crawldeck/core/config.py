"""One typed, frozen crawl configuration: defaults < TOML file < command-line flags.

Units are in the field names (``_ms``, ``_s``, ``_bytes``). Each numeric field states
its range in its type (``Annotated[int, Range(1, 64)]``), and ``CrawlConfig`` checks
every field's type and range and the rules between fields when it is made
(``__post_init__``), so ``CrawlConfig(delay_ms=-5)`` raises as a file would. Unknown
keys are rejected with the key's name; a bad file or flag gives one ``ConfigError``
line and never a traceback.

Each part of the crawler takes the few settings it needs, as a small frozen object
built by ``from_config`` in the part's own module (``PolitenessSettings``,
``DnsSettings``, ``AddressPolicySettings``, ``IpLimitSettings``, ``RobotsSettings``,
``TrapSettings``).

The defaults are those of the product's design (docs/architecture.md, "Defaults").

The checks ``__post_init__`` runs, and the value types they know (``Range``,
``HostOverride``), are ``core.config_checks``'s; the table of other crawlers' settings
and flags an unknown key is answered from is ``core.other_crawlers``'s.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, Literal, get_origin, get_type_hints

from crawldeck.core.config_checks import (
    HOST_KEYS,
    HostOverride,
    Range,
    RenderMode,
    check_rules,
    check_value,
)
from crawldeck.core.errors import ConfigError
from crawldeck.core.other_crawlers import other_crawler_hint
from crawldeck.core.policy.prioritizer import DEFAULT_FRONT_QUEUES, DEFAULT_ORDERING, Ordering
from crawldeck.core.policy.request_checks import AuthEntries, HeaderFields

Scope = Literal["host", "domain", "any"]
RobotsFailureMode = Literal["allow", "disallow"]

DnsPreference = Literal["ipv4", "ipv6"]

#: Query and ``;name=value`` path parameters removed from the dedupe key (session
#: ids, click trackers and referrer tags; every ``utm_`` name Google Analytics defines).
DEFAULT_STRIP_PARAMS: tuple[str, ...] = (
    "utm_*",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_term",
    "utm_content",
    "utm_id",
    "utm_source_platform",
    "utm_creative_format",
    "utm_marketing_tactic",
    "ref",
    "sid",
    "sessionid",
    "session_id",
    "phpsessid",
    "jsessionid",
    "aspsessionid",
    "fbclid",
    "gclid",
    "dclid",
    "msclkid",
    "mc_cid",
    "mc_eid",
    "_ga",
    "yclid",
)


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    """Every setting of one crawl.

    Attributes (units in the names):
        user_agent: the full User-Agent header sent with every request.
        robots_token: the product token matched against robots.txt user-agent groups (RFC
            9309 §2.2.1); default ``crawldeck``, or the product token of ``user_agent`` when
            that is set and this is not (``product_token``).
        max_pages: stop once this many fetches are made, over all the crawl file's
            runs: each page, and each retry of a failed one and each recrawl revisit
            (the console's and the summary's ``fetched``, as Heritrix's
            ``maxDocumentsDownload`` counts downloads; a rerun with the same cap fetches
            nothing new); fetches in flight count towards it, so none starts beyond it
            (``None``: no cap).
        max_time_s: stop this run once it has run this many seconds (per run: a resumed run
            has its own; time paused, ``Engine.pause``, not counted, as in Heritrix);
            fetches in flight get the stop's grace period
            (``engine.STOP_GRACE_S``, 5 s) and a cut one stays queued (``None``: no cap).
            The flag takes units: ``--max-time 90s``, ``10m``, ``2h``.
        max_bytes: stop once the pages' decoded body bytes reach this many, over all the
            crawl file's runs (as ``max_pages``; the "bytes (all runs)" figure of the
            summary); no fetch starts past it, those in flight finish, so the total may pass
            it by up to ``concurrency`` bodies (``None``: no cap). The flag takes units:
            ``--max-bytes 500MB``, ``2GiB``.
        max_depth: links followed from a seed (seed = depth 0); deeper URLs are
            blocked with reason ``depth``.
        scope: ``host`` (the seeds' hosts), ``domain`` (the seeds' registered
            domains, by the Public Suffix List) or ``any``.
        include: Python regular expressions (``re.search`` in the cleaned URL); when any is
            given, a URL found must match one of them (reason ``excluded`` otherwise). Seeds
            need not match: a seed is where the crawl starts (as ``wget --accept-regex``
            never filters its start URLs and Heritrix's seeds are in scope by their own SURT
            prefixes); the URLs it redirects to must. ``--include REGEX`` (repeatable)
            replaces the list.
        exclude: Python regular expressions; a URL matching any is refused with reason
            ``excluded``, seeds included (as a Heritrix reject rule after the seeds' accept
            rule); checked before ``include``. ``--exclude REGEX`` (repeatable) replaces the
            list; a pattern ``re`` cannot compile is one line naming it.
        hosts: per-host settings (``[hosts."docs.example.org"]`` in the TOML), one
            ``HostOverride`` per host, by host key (``core.policy.urls.host_key``: lowercase, IDNA,
            no trailing dot, ``:port`` only when not the scheme's default, so
            ``[hosts."127.0.0.1:8080"]``; another port is another host); see
            ``HostOverride``. A table may hold ``delay_ms`` (>= 0: the host's politeness
            delay floor in place of ``delay_ms``, still the larger of it and Crawl-delay),
            ``max_pages`` (>= 1: URLs admitted for the host in place of ``max_per_host``,
            each at most one page, all runs; past it ``host_cap``) and ``render`` (``auto``,
            ``always``, ``never``: in place of ``render``). A bad value names the host and
            key (``config key 'hosts."a.org".delay_ms': expected a value >= 0, got -5``);
            the console's host detail (Enter) shows them.
        concurrency: fetches in flight across all hosts; a fetch running longer than 2 s
            stops counting against it (at most 5 x this many in flight, 4 x of them slow),
            so tarpits cannot take every worker.
        per_host_concurrency: fetches in flight to one host; a second one starts only when
            the host's delay allows it, so against a slow host the adaptive delay
            (``adaptive_delay_factor`` x its fetch time) keeps it at one: set
            ``adaptive_delay_factor = 0`` to have them overlap.
        delay_ms: the default politeness delay of a host: its next fetch starts at
            least this long after the end of its last fetch (the body read, or the
            fetch given up), and after the start of any fetch still in flight
            (``core.policy.politeness``, "Earliest start"; as Heritrix and ``wget --wait``
            count it). It is not start-to-start: a fetch that takes 300 ms with the
            default 1000 ms gives starts 1.3 s apart.
        bucket_capacity: tokens of each host's token bucket: the most fetches in a
            row at the politeness delay before ``bucket_rate_per_s`` binds (unset, the
            bucket refills at one token per delay, so the delay spaces the fetches).
        bucket_rate_per_s: a cap on each host's long-run rate in requests/s, counted
            at fetch starts; ``None``: one token per politeness delay.
        adaptive_delay_factor: delay >= this x the duration of the host's last fetch
            (dispatch to end); a success sets that part, an error only raises it
            (0 turns it off).
        max_delay_ms: cap on the adaptive, Crawl-delay and learnt (429/503) parts of
            the delay.
        backoff_base_ms, backoff_max_ms: backoff on 429/503 is ``min(max, base x
            2^(attempt-1))`` plus jitter up to half of it; max >= base.
        retry_after_max_s: a Retry-After longer than this is cut to it.
        demote_after_s: a host in continuous backoff this long drops to the
            lowest-priority front queue; a host whose continuous backoff, up to the
            end of the wait it is in, spans this long is parked at once (a
            ``Retry-After: 3600``).
        park_after_backoffs: a host whose last this-many responses were all 429, 503
            or none (timeout, lost connection) is parked (8: with the defaults the
            waits before the 8th add up to 2.5-3.3 minutes, where demotion takes 1 h).
        max_retries: further tries of a URL after 429/503, a timeout or a lost
            connection, each behind its host's other queued URLs; then the URL is
            recorded as failed.
        retry_refused: retry a refused connection (``ECONNREFUSED``) to a host that has
            answered no request this run, as a timeout is; ``False`` (the default, as
            curl and wget): the URL is recorded as failed after one try and the host
            parked, its other URLs left queued for the next run (``core.crawl.retries``).
        max_per_host: URLs admitted per host (reason ``host_cap`` beyond).
        max_url_length: longest URL admitted, in characters (reason ``url_length``).
        max_path_depth: most path segments admitted (reason ``path_depth``).
        max_segment_repeats: most times one path segment may occur in a path
            (reason ``repeating_path``).
        max_page_param: highest page/offset number admitted (reason ``pagination``).
        calendar_window_years: years after today beyond which a date in a path or query is a
            calendar trap at once (reason ``calendar``; a year alone in a path segment is a
            date only with a month in the next one: ``/2031/05/``, not ``/items/2031``);
            past (and near) dates count against ``calendar_max_dates``.
        calendar_max_dates: URLs admitted per host and date template, i.e. per set of URLs
            that differ only in a date in the path or query (``/cal/{y}/{m}/``,
            ``?month={y}-{m}``; a blog post ``/2019/05/my-post`` is its own;
            ``date_templates.date_template``); one more is reason ``calendar``, into the past or the
            future; at most 65 535. 1000 lets through 83 years of monthly or 2.7 years of
            daily archive pages; an endless calendar costs at most this many requests per
            template (17 min at ``delay_ms`` 1000; about 2000 for a calendar with month and
            day views).
        calendar_max_dates_per_host: URLs admitted per host in date templates that
            already had a date, over all its templates (one calendar per venue, room
            or team; a template's first date, such as a blog post's, never counts);
            reason ``calendar`` beyond; at most 65 535.
        calendar_max_years: years a calendar may walk back from the newest date (with a
            month) seen on its host: a dated URL found on a page of its own date template (a
            "previous month" link: ``/cal/2014-05/`` on ``/cal/2014-06/``) whose year is
            more than this many years before the host's newest is a calendar trap (reason
            ``calendar``); one found on any other page (an index, an archive list, a post)
            is not, however old (``traps.TrapGuard.admit``, step 10). A year alone
            (``/2019/``) does not count.
        strip_params: query and ``;name=value`` path parameters (``/a;jsessionid=…/b``)
            removed from the dedupe key (names matched case-insensitively; a name ending in
            ``*`` is a prefix: ``utm_*``); the URL sent keeps them. A list set here replaces
            the default one.
        max_redirects: most redirect hops in one chain (reason ``too_many_redirects``);
            20, as wget's ``--max-redirect`` and Scrapy's ``REDIRECT_MAX_TIMES``.
        max_body_bytes: body cap after decoding (compressed bodies too); a longer HTML page
            is recorded with error ``body_too_large``, archived to this cap, and the links
            of its first ``parse_max_bytes`` followed.
        connect_timeout_ms, read_timeout_ms, total_timeout_ms: fetch time budgets; a URL is
            not tried again once its tries took ``total_timeout_ms`` in all.
        header: extra request header fields sent with every request, robots.txt and sitemaps
            included (a TOML table ``header = {"Accept-Language" = "en", From =
            "me@example.org"}``, kept as ``(name, value)`` pairs).
            ``core.policy.request_checks.REFUSED_HEADERS`` cannot be set, refused in one line
            naming the field: ``Host``, ``User-Agent`` (set ``user_agent``: robots.txt
            groups match its token), ``Accept-Encoding`` (the fetcher offers only what it
            decodes within ``max_body_bytes``), ``Authorization`` and ``Cookie`` (they would
            go to every host), hop-by-hop fields (``Connection``, ``TE``, ``Upgrade``, …),
            ``Content-Length``, ``Range``, ``If-None-Match`` and the other validators; names
            must be tokens, values printable ASCII.
        proxy: an ``http://host[:port]`` proxy every request goes through (``proxy =
            "http://127.0.0.1:3128"``; ``CONNECT`` for https); ``None``: direct (or the
            environment's, with ``trust_env``). Only ``http://``, and no credentials in it
            (the config is saved in the crawl file; give them in ``HTTPS_PROXY`` with
            ``trust_env``). The proxy resolves the names it connects to: crawldeck still
            resolves each name itself first, so ``allow_private``/``allow_networks`` and
            per-IP politeness act on its own DNS answer (a network where only the proxy
            resolves names is not supported, and a name the proxy resolves otherwise is not
            pinned); the proxy's own name is resolved by the system, not checked by the
            address policy. Needs ``render = "never"`` (and no host rendering): the
            browser's sub-requests would not go through it, so the pair is refused in one
            line.
        trust_env: use the ``HTTP_PROXY``/``HTTPS_PROXY`` environment variables (either
            case) where ``proxy`` is not set, and ``NO_PROXY`` for both (as curl: names and
            their subdomains, IPs, CIDR networks, ``:port``, ``*``;
            ``core.net.request_options``); false: the environment is not read.
        netrc: Basic credentials per host name from ``$NETRC`` or ``~/.netrc``: a
            ``machine`` line's login and password go to that host name (any port or scheme,
            as curl) and to no other; the ``default`` entry is ignored (it would go to every
            host).
        auth: Basic credentials per origin (``[auth."https://docs.example.org"] user = "me"
            password_env = "DOCS_PW"``, kept as ``(origin, user, password_env)``); the
            password is read from the environment variable at start, never stored (a
            password in the config is refused: the config is saved in the crawl file). Sent
            only to that scheme, host and port, robots.txt included, never after a redirect
            elsewhere; wins over ``netrc``. Each cluster worker reads the variable (and its
            netrc) on its own machine. Credentials are not written to the WARC request
            records.
        robots_max_bytes: robots.txt is parsed from at most this many bytes (RFC 9309 §2.5
            asks for at least 500 KiB); a cut file is logged once per origin with the size
            served and the size read.
        robots_max_redirects: redirect hops followed for robots.txt (RFC 9309 §2.3.1.2); a
            redirect loop (A -> B -> A) stops at its first repeat, as past the limit: allow
            all, logged.
        robots_ttl_max_s: the longest a robots.txt is cached (RFC 9309 §2.4: 24 h).
        robots_retry_s: when an unreachable robots.txt is asked for again.
        robots_on_failure: a robots.txt answering 5xx or unreachable: ``allow`` (the
            product's default: use the last good copy, else allow all and log an audit line)
            or ``disallow`` (strict: block the host while it is unreachable, as RFC 9309
            §2.3.1.4 asks).
        obey_nofollow: a page whose ``<meta name="robots">`` (or ``<meta name="TOKEN">``) or
            ``X-Robots-Tag`` header (all agents, or ``TOKEN:``) says ``nofollow`` or
            ``none`` has none of its links queued (Google's robots meta tag specification);
            ``False`` queues them anyway. ``rel=nofollow`` links are skipped either way.
            ``noindex`` is recorded (``pages.noindex``) on every response type, HTML or not.
        flush_interval_ms: the store writer commits at least this often (ms). A kill
            loses the results of at most this long, which a resume fetches again; the
            file stays consistent. 2 000 since issue #23 (500 before): a commit writes
            every page its batch dirtied, so fewer, larger batches cost the writer
            about 18 % less CPU (benchmarks/RESULTS.md).
        frontier_window: queued URLs the frontier keeps in memory, one host at most an
            eighth of them; the others wait only in SQLite (state ``spilled``) and are
            read back per host, best priority first, oldest first within one
            (docs/architecture.md, "The frontier window").
        ordering: which queued URL goes first among the hosts ready to be fetched and within
            a host (``core.policy.prioritizer``; docs/architecture.md, "The prioritizer"):
            ``opic-inlinks`` (OPIC cash times the square of the URL's in-link count so far:
            the pages many fetched pages link to, and those the important pages link to,
            first), ``bfs`` (breadth-first), ``opic`` (the most OPIC cash first, Abiteboul
            et al. 2003: each fetched page shares its cash among its links) or
            ``larger-sites-first`` (the host with the most queued URLs first, Baeza-Yates et
            al. 2005). Politeness is the same under each: no ordering makes a host faster.
            ``opic-inlinks`` is the default because ``benchmarks/ordering_bench.py`` finds
            it ahead of ``bfs`` at every checkpoint of a crawl of five Debian doc sites and
            of a synthetic web, where ``opic`` alone trails ``bfs`` in the doc sites' first
            5 % (benchmarks/RESULTS.md, "Crawl ordering").
        front_queues: priorities under ``opic`` and ``opic-inlinks``: their bands (cash down
            to 2^-30 a factor of two each; cash x in-links^2 from 2^30 down to 2^-30 a
            factor of four each) and the demoted hosts' queue; ``bfs`` and
            ``larger-sites-first`` use 3.
        snapshot_interval_ms: how often the engine publishes a ``CrawlSnapshot``.
        dns_nameservers: DNS servers as ``"IP"``, ``"IP:port"`` or ``"[IPv6]:port"``;
            empty: the system's ``/etc/resolv.conf`` (read by c-ares). A name listed in
            ``/etc/hosts`` is answered from it first, whichever servers are set, and
            no query is sent for it (the "files dns" order of getaddrinfo).
        dns_prefer: ``ipv4`` or ``ipv6``: which family's addresses are tried first
            (both A and AAAA are asked for).
        dns_min_ttl_s, dns_max_ttl_s: an answer's TTL is clamped to this range before it is
            cached (max >= min). The floor of 5 s keeps TTL-0/1 names (load balancers) to
            one query per 5 s instead of one per fetch, while a moved site is followed
            within 5 s; the ceiling bounds how stale an answer can get.
        dns_negative_ttl_s: how long NXDOMAIN / NODATA is cached when the server
            gives no SOA minimum (RFC 2308 §5; 300 s is the issue's 5 minutes).
        dns_cache_size: names kept in the LRU DNS cache.
        dns_max_in_flight: DNS queries outstanding at once (A and AAAA count apart).
        dns_timeout_ms: how long one DNS query waits for its answer.
        dns_retries: further tries of a name after a timeout / SERVFAIL / REFUSED,
            with backoff, before ``DnsTemporaryFailure``.
        allow_private: connect to loopback, private, link-local and other special
            addresses (RFC 6890) for every host; default: only seed hosts may.
        allow_networks: CIDR networks that are allowed even though special
            (``["127.0.5.0/24"]``).
        ip_delay_ms: the per-IP delay, shared by every host that resolves to one IP
            address (in addition to each host's delay): a fetch to the address starts
            at least this long after the end of the last fetch to it and after the
            start of any still in flight, counted as ``delay_ms`` is.
            ``None`` (default): the same as ``delay_ms``, so hosts sharing a server
            share the budget one host gets, and lowering ``delay_ms`` for a test or
            an own site is not silently capped; 0 turns the per-IP limit off (e.g. a
            crawl of many CDN-fronted sites that share a few edge addresses).
        render: JavaScript rendering of pages (``core.policy.shell``): ``auto`` renders an
            HTML page whose raw markup looks like a single-page-app shell (at most
            ``render_max_links`` links and a framework signature), ``always`` every
            HTML page, ``never`` none.
        render_hosts: hosts whose HTML pages are always rendered (with ``auto``);
            an entry matches a host key (``app.example.com``, ``127.0.0.8:8080``),
            the host without its port, or any subdomain of it.
        render_never_hosts: hosts never rendered, whatever ``render`` and
            ``render_hosts`` say (matched as ``render_hosts``).
        render_max_links: ``auto`` renders a page only when its raw HTML has at
            most this many followable ``<a>``/``<area>`` links.
        render_pool_size: browser render workers, each with its own Chromium.
        render_timeout_ms: the time budget of one page render (load, sub-requests
            including their politeness waits, and settling); a page still busy then
            is cut and its DOM taken as it is.
        render_idle_ms: a rendered page has settled when none of its requests has
            been in flight for this long after its load event.
        render_max_pages_per_browser: a worker's browser is closed and started
            anew after this many pages (bounds its memory growth).
        render_block_resources: Playwright resource types aborted without a request
            (default images, fonts and media; they hold no links).
        render_browser_path: the Chromium executable Playwright drives (Debian's
            ``chromium`` package: ``apt-get install chromium``); never a browser Playwright
            downloads (``playwright install``).
        parse_workers: worker processes that extract links from HTML pages off the event
            loop (``core.net.parse.ParsePool``); a page over its budget holds one until it is
            killed (2: on a 2-core machine one hostile page leaves the other worker parsing;
            one worker parses about 1 100 pages/s of 15 KB, two about 1 700).
        parse_timeout_ms: the time budget of one page's parse in a worker; a page still
            parsing then is given up (its worker is killed and replaced). 11 MB of ordinary
            markup (140 000 links) parses in 0.44 s on the 2-core machine; 40 000 nested
            elements take 3.6 s, 100 000 take 28-38 s.
        parse_max_bytes: links are extracted from at most this many bytes of an HTML body
            (its first ones; the page is fetched and archived up to ``max_body_bytes``); a
            page cut here is recorded ``parse_cut``, so the pages that lost links are listed
            and the cap can be raised. lexbor's tree costs about 35 bytes per byte of markup
            (``core.net.parse``; 512 KiB: 18-20 MB in a parse worker; 10 MiB: 57 MB of text, 306
            MB of links): with a page of 100 000 links beside a small web the crawl's
            process tree grew by 32.4 MiB at 512 KiB, 24.9 at 384 and 19.8 at 256 (the
            default), against the 32 MiB a hostile host may add (issue #22 item 1;
            ``benchmarks/hostile_memory.py``).
        max_links_per_page: links kept from one page, the first in document order after
            deduplication (Heritrix's ``maxOutlinks`` is 6 000); a page with more is
            recorded ``links_cut: kept 6000 of N links``.
        cluster_lease_ms: a cluster crawl's host lease (``core.cluster``): a worker that
            dies or freezes loses its hosts this long after its last renewal (renewals every
            quarter of it), and another worker takes them over.
        cluster_hot_queue: queued URLs past which a host's new URLs go to path-prefix
            sub-queues in Redis (a hot host, issue #12 item 5).
        redis_outage_s: how long a cluster worker waits, retrying with backoff, for a
            Redis that stopped answering before it gives up (exit 2).
        warc: write every fetch (robots.txt, redirects and sitemaps included) to WARC/1.1
            files ``<db>-NNNNN.warc.gz`` beside the crawl file (``core.storage.warc``, issue #13).
        warc_prefix: the WARC files' name stem instead of the crawl file's name
            (``<warc_prefix>-NNNNN.warc.gz``; as Heritrix's and wget's ``--warc-file``
            prefix): letters, digits, ``.``, ``_`` and ``-``, not starting with ``.``,
            at most 100 characters; ``None``: the crawl file's name. A cluster worker
            names its own files after the crawl id.
        warc_dir: the directory the WARC files go to (``--warc-dir DIR``, as a
            cluster worker's, Heritrix's ``warcWriter.storePaths``; issue #25), made
            when missing; a relative one is taken from the current directory.
            ``None``: the crawl file's directory. Each page row records its WARC file
            by its path from the crawl file's directory (``pages.warc_file``: a name
            beside it, ``DIR/NAME`` below it, else an absolute path), so ``show``,
            ``export --with-body`` and ``mirror`` find the files wherever they went.
        warc_max_bytes: a WARC file is closed and the next one started once it has
            this many bytes (compressed, as on disk; a record is never split).
        sitemaps: read the sitemaps a host publishes (its robots.txt ``Sitemap:``
            lines, else ``/sitemap.xml``) and admit their URLs like links
            (sitemaps.org protocol; ``core.policy.sitemaps``).
        metrics_port: the TCP port of the Prometheus metrics served while the run lasts
            (``--metrics-port PORT``; ``core.crawl.metrics``, issue #14 item 8; docs/results.md,
            "Stats and metrics"); 0: none served.
        metrics_address: the IP address the metrics server binds (loopback unless another is
            asked for: another address exposes the crawl's figures, its host names, to the
            network).
    """

    user_agent: str = "crawldeck/0.1 (+https://github.com/crawldeck/crawldeck)"
    robots_token: str = "crawldeck"
    max_pages: Annotated[int | None, Range(1)] = None
    max_time_s: Annotated[int | None, Range(1)] = None
    max_bytes: Annotated[int | None, Range(1)] = None
    max_depth: Annotated[int, Range(0)] = 10
    scope: Scope = "domain"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    hosts: tuple[HostOverride, ...] = ()
    concurrency: Annotated[int, Range(1, 10_000)] = 16
    per_host_concurrency: Annotated[int, Range(1, 100)] = 1
    delay_ms: Annotated[int, Range(0)] = 1000
    bucket_capacity: Annotated[int, Range(1, 10_000)] = 5
    bucket_rate_per_s: Annotated[float | None, Range(0.000001)] = None
    adaptive_delay_factor: Annotated[float, Range(0)] = 2.0
    max_delay_ms: Annotated[int, Range(0)] = 30_000
    backoff_base_ms: Annotated[int, Range(1)] = 1000
    backoff_max_ms: Annotated[int, Range(1)] = 60_000
    retry_after_max_s: Annotated[int, Range(0)] = 3600
    demote_after_s: Annotated[int, Range(1)] = 3600
    park_after_backoffs: Annotated[int, Range(1)] = 8
    max_retries: Annotated[int, Range(0)] = 5
    retry_refused: bool = False
    max_per_host: Annotated[int, Range(1)] = 500_000
    max_url_length: Annotated[int, Range(16)] = 2048
    max_path_depth: Annotated[int, Range(1)] = 20
    max_segment_repeats: Annotated[int, Range(1)] = 2
    max_page_param: Annotated[int, Range(1)] = 1000
    calendar_window_years: Annotated[int, Range(0)] = 2
    calendar_max_dates: Annotated[int, Range(1, 65_535)] = 1000
    calendar_max_dates_per_host: Annotated[int, Range(1, 65_535)] = 5000
    calendar_max_years: Annotated[int, Range(0, 1000)] = 10
    strip_params: tuple[str, ...] = DEFAULT_STRIP_PARAMS
    max_redirects: Annotated[int, Range(0)] = 20
    max_body_bytes: Annotated[int, Range(1024)] = 10 * 1024 * 1024
    connect_timeout_ms: Annotated[int, Range(1)] = 10_000
    read_timeout_ms: Annotated[int, Range(1)] = 30_000
    total_timeout_ms: Annotated[int, Range(1)] = 60_000
    header: HeaderFields = ()
    proxy: str | None = None
    trust_env: bool = False
    netrc: bool = False
    auth: AuthEntries = ()
    robots_max_bytes: Annotated[int, Range(500 * 1024)] = 500 * 1024
    robots_max_redirects: Annotated[int, Range(0)] = 5
    robots_ttl_max_s: Annotated[int, Range(0)] = 86_400
    robots_retry_s: Annotated[int, Range(1)] = 3600
    robots_on_failure: RobotsFailureMode = "allow"
    obey_nofollow: bool = True
    flush_interval_ms: Annotated[int, Range(10)] = 2000
    frontier_window: Annotated[int, Range(10)] = 200_000
    ordering: Ordering = DEFAULT_ORDERING
    front_queues: Annotated[int, Range(3, 64)] = DEFAULT_FRONT_QUEUES
    snapshot_interval_ms: Annotated[int, Range(50)] = 1000
    dns_nameservers: tuple[str, ...] = ()
    dns_prefer: DnsPreference = "ipv4"
    dns_min_ttl_s: Annotated[int, Range(0)] = 5
    dns_max_ttl_s: Annotated[int, Range(1)] = 3600
    dns_negative_ttl_s: Annotated[int, Range(0)] = 300
    dns_cache_size: Annotated[int, Range(1)] = 100_000
    dns_max_in_flight: Annotated[int, Range(1)] = 64
    dns_timeout_ms: Annotated[int, Range(10)] = 5000
    dns_retries: Annotated[int, Range(0)] = 2
    allow_private: bool = False
    allow_networks: tuple[str, ...] = ()
    ip_delay_ms: Annotated[int | None, Range(0)] = None
    render: RenderMode = "auto"
    render_hosts: tuple[str, ...] = ()
    render_never_hosts: tuple[str, ...] = ()
    render_max_links: Annotated[int, Range(0)] = 3
    render_pool_size: Annotated[int, Range(1)] = 2
    render_timeout_ms: Annotated[int, Range(100)] = 15_000
    render_idle_ms: Annotated[int, Range(0)] = 500
    render_max_pages_per_browser: Annotated[int, Range(1)] = 100
    render_block_resources: tuple[str, ...] = ("image", "font", "media")
    render_browser_path: str = "/usr/bin/chromium"
    parse_workers: Annotated[int, Range(1, 64)] = 2
    parse_timeout_ms: Annotated[int, Range(10)] = 5000
    parse_max_bytes: Annotated[int, Range(32 * 1024)] = 256 * 1024
    max_links_per_page: Annotated[int, Range(1)] = 6000
    cluster_lease_ms: Annotated[int, Range(500, 3_600_000)] = 10_000
    cluster_hot_queue: Annotated[int, Range(10)] = 10_000
    redis_outage_s: Annotated[int, Range(1, 86_400)] = 60
    warc: bool = True
    warc_prefix: str | None = None
    warc_dir: str | None = None
    warc_max_bytes: Annotated[int, Range(1024 * 1024)] = 1_000_000_000
    sitemaps: bool = True
    metrics_port: Annotated[int, Range(0, 65_535)] = 0
    metrics_address: str = "127.0.0.1"

    def __post_init__(self) -> None:
        """Check every field against its type and ``Range``, then the rules between
        fields; a list of strings becomes a tuple and an integer in a ``float`` field a
        float (a TOML file gives both).

        Raises:
            ConfigError: one line naming the key: a value of the wrong type or out of
                its ``Range``, or a rule of ``check_rules`` broken
                (``core.config_checks``).
        """
        for name, hint in _HINTS.items():
            value = getattr(self, name)
            checked = check_value(name, hint, value, RANGES.get(name))
            if checked is not value:
                object.__setattr__(self, name, checked)
        check_rules(self)

    def replace(self, **changes: Any) -> CrawlConfig:
        """A copy with ``changes`` applied and validated; raises ``ConfigError``."""
        return build_config({**asdict(self), **changes})

    def override(self, host: str) -> HostOverride | None:
        """The ``[hosts."..."]`` settings of the host key ``host``, or ``None``.

        A scan of ``hosts`` (a handful of entries); the parts that ask per URL
        (``core.policy.politeness``, ``core.policy.traps``) keep a dict of their own.
        """
        for entry in self.hosts:
            if entry.host == host:
                return entry
        return None

    def may_render(self) -> bool:
        """Whether any page may be rendered: ``render`` is not ``never``, or a host's
        own ``render`` is not (the browser pool is started only then)."""
        return self.render != "never" or any(
            entry.render not in (None, "never") for entry in self.hosts
        )


#: Each field's type, ``Annotated`` stripped (what ``check_value`` compares against).
_HINTS: dict[str, Any] = get_type_hints(CrawlConfig)

#: The ``Range`` of each numeric field, read from its ``Annotated`` type.
RANGES: dict[str, Range] = {
    name: next(extra for extra in hint.__metadata__ if isinstance(extra, Range))
    for name, hint in get_type_hints(CrawlConfig, include_extras=True).items()
    if get_origin(hint) is Annotated
}


def asdict(config: CrawlConfig) -> dict[str, Any]:
    """The config as a plain JSON-able dict (tuples become lists; ``hosts`` a dict of
    host key -> its settings that are set, as the TOML tables are written)."""
    out: dict[str, Any] = {}
    for f in fields(config):
        value = getattr(config, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    out["hosts"] = {
        entry.host: {
            key: getattr(entry, key) for key in HOST_KEYS if getattr(entry, key) is not None
        }
        for entry in config.hosts
    }
    out["header"] = dict(config.header)
    out["auth"] = {origin: {"user": user, "password_env": env} for origin, user, env in config.auth}
    return out


def product_token(user_agent: str) -> str:
    """The product token of a User-Agent: its leading run of letters, ``_`` and ``-``.

    ``"NiceBot/2.1 (+https://nice.example/bot)"`` gives ``"NiceBot"`` (RFC 9309 §2.2.1:
    crawlers match robots.txt groups with their product token). An agent that does
    not start with such a run gives ``"crawldeck"``.
    """
    match = re.match(r"[A-Za-z_-]+", user_agent.strip())
    return match.group(0) if match else "crawldeck"


def build_config(values: Mapping[str, Any]) -> CrawlConfig:
    """A validated ``CrawlConfig`` from ``values`` (missing keys take defaults).

    A ``user_agent`` given without a ``robots_token`` gives the token too
    (``product_token``).

    Raises:
        ConfigError: unknown keys (all named, each with the nearest known key, as
            git's "did you mean", or, for another crawler's setting, crawldeck's key
            with the value converted: ``other_crawler_hint``), or what ``CrawlConfig``
            raises.
    """
    known = {f.name for f in fields(CrawlConfig)}
    unknown = [key for key in values if key not in known]
    if unknown:
        named = []
        for key in unknown:  # each with its own hint (a trial's second key had none)
            # any case: -s DELAY_MS=10 is delay_ms (issue #25 trial 19)
            near = difflib.get_close_matches(key.lower(), sorted(known), n=1)
            other = other_crawler_hint(key, values[key])
            if other is not None:
                named.append(f"{key!r} ({other})")
            else:
                named.append(f"{key!r} (did you mean {near[0]!r}?)" if near else repr(key))
        plural = "s" if len(unknown) > 1 else ""
        raise ConfigError(f"unknown config key{plural} {', '.join(named)}")
    given = dict(values)
    agent = given.get("user_agent")
    if isinstance(agent, str) and "robots_token" not in given:
        given["robots_token"] = product_token(agent)
    return CrawlConfig(**given)


#: Where a key's value came from (``load_config_sources``): the defaults, the TOML
#: file, a ``-s KEY=VALUE`` setting of the command line, a flag, or (``robots_token``
#: only) the product token of the ``user_agent`` given.
Source = Literal["default", "file", "setting", "flag", "user_agent"]

#: The top-level key named by a ``ConfigError`` message (``config key 'NAME'``,
#: ``unknown config key 'NAME'``, ``unknown config keys 'NAME', ...``: the first; a
#: table's ``config key 'hosts."a.org".delay_ms'``: ``hosts``).
_NAMED_KEY = re.compile(r"config keys? '([^'.]+)((?:\.[^'.]+|\.\"[^\"]*\")*)'?")
#: The host a ``[hosts."..."]`` error names (``config_checks._host_key``'s messages).
_HOST_TABLE = re.compile(r"^config key 'hosts': '([^']*)'")
#: Where ``tomllib`` says a file went wrong, at the end of its message.
_TOML_AT = re.compile(r"^(?P<what>.*) \(at line (?P<line>\d+), column (?P<column>\d+)\)$")


def load_config(
    path: Path | None,
    overrides: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
    *,
    flag_names: Mapping[str, str] | None = None,
) -> CrawlConfig:
    """Defaults < the TOML file at ``path`` < ``settings`` (``-s KEY=VALUE``) <
    ``overrides`` (flags; ``None`` values skipped): ``load_config_sources``' config.

    Raises:
        ConfigError: as ``load_config_sources``.
    """
    return load_config_sources(path, overrides, settings, flag_names=flag_names)[0]


def load_config_sources(
    path: Path | None,
    overrides: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
    *,
    flag_names: Mapping[str, str] | None = None,
) -> tuple[CrawlConfig, dict[str, Source]]:
    """The config of defaults < the TOML file at ``path`` < ``settings`` (typed values
    of ``-s KEY=VALUE``) < ``overrides`` (flags; ``None`` values skipped), and where
    each key's value came from (every field, in field order). ``flag_names``: key of
    ``overrides`` -> the flag that set it (``{"include": "--include"}``), so that a bad
    value given by a flag is named by its flag, as argparse names one (``argument
    --include: ...``), not as a config key the user never typed (issue #25).

    The file holds top-level keys named as ``CrawlConfig``'s fields, or the same keys
    under a ``[crawl]`` table; it is UTF-8 text (a BOM allowed).

    Raises:
        ConfigError: one line that names the file (missing, a directory, unreadable,
            binary, not UTF-8, not TOML: with the line where it went wrong) or the key:
            a bad key or value of the file is prefixed with ``config file 'PATH' line
            N:`` (the line the key is set on), one of ``settings`` with ``-s:``.
    """
    values: dict[str, Any] = {}
    text = ""
    if path is not None:
        text = _config_text(path)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            at = _TOML_AT.match(str(exc))
            where = "" if at is None else f" at line {at['line']}, column {at['column']}"
            what = str(exc) if at is None else at["what"]
            raise ConfigError(
                f"config file {str(path)!r} is not valid TOML{where}: {what}"
            ) from None
        crawl = data.pop("crawl", {})
        if not isinstance(crawl, dict):
            raise ConfigError(
                f"{_file_line(path, text, 'crawl')}config key 'crawl': expected a table"
            )
        for key in sorted(data.keys() & crawl.keys()):
            raise ConfigError(
                f"config key {key!r} is set twice in {str(path)!r}: at the top and under [crawl]"
            )
        values.update(data)
        values.update(crawl)
    sources: dict[str, Source] = dict.fromkeys(values, "file")
    for key, value in (settings or {}).items():
        values[key] = value
        sources[key] = "setting"
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = value
            sources[key] = "flag"
    try:
        config = build_config(values)
    except ConfigError as exc:
        named = _NAMED_KEY.search(str(exc))
        source = None if named is None else sources.get(named[1])
        if path is not None and named is not None and source == "file":
            sub = named[2].rsplit(".", 1)[-1] if named[2].count(".") >= 2 else None
            table = _HOST_TABLE.search(str(exc)) if named[1] == "hosts" else None
            if table is not None:  # the line of the table that names it (issue #25)
                where = _table_line(path, text, "hosts", table[1])
                raise ConfigError(f"{where}{exc}") from None
            raise ConfigError(f"{_file_line(path, text, named[1], sub)}{exc}") from None
        flag = None if named is None else (flag_names or {}).get(named[1])
        if source == "flag" and flag is not None and named is not None:
            reason = str(exc)[named.end() :].removeprefix(":").strip()
            raise ConfigError(f"argument {flag}: {reason}") from None
        raise ConfigError(f"-s: {exc}" if source == "setting" else str(exc)) from None
    if "user_agent" in sources and "robots_token" not in sources:
        sources["robots_token"] = "user_agent"
    return config, {f.name: sources.get(f.name, "default") for f in fields(CrawlConfig)}


def _config_text(path: Path) -> str:
    """The text of the config file at ``path`` (UTF-8, a BOM dropped).

    Raises:
        ConfigError: the file does not exist, is a directory, cannot be read, holds NUL
            bytes (not a text file), or is not UTF-8 (the first line that is not).
    """
    shown = repr(str(path))
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file {shown} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {shown} is a directory, not a file") from None
    except OSError as exc:
        raise ConfigError(f"config file {shown} cannot be read: {exc.strerror}") from None
    if b"\0" in data:
        raise ConfigError(f"config file {shown} is not a text file (it holds NUL bytes)")
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"config file {shown} line {line}: not UTF-8 text") from None


def _table_line(path: Path, text: str, key: str, name: str) -> str:
    """``config file 'PATH' line N: ``, N the line of the table ``[key."name"]`` (or
    ``[key.name]``); ``_file_line``'s when no line says it."""
    quoted = rf"(?:\"{re.escape(name)}\"|'{re.escape(name)}'|{re.escape(name)})"
    found = re.search(rf"^[ \t]*\[[ \t]*{re.escape(key)}[ \t]*\.[ \t]*{quoted}[ \t]*\]",
                      text, re.MULTILINE)  # fmt: skip
    if found is None:
        return _file_line(path, text, key)
    return f"config file {str(path)!r} line {text.count(chr(10), 0, found.start()) + 1}: "


def _file_line(path: Path, text: str, key: str, sub: str | None = None) -> str:
    """``config file 'PATH' line N: ``, N the first line of ``text`` that sets ``key``
    (``key =``, quoted or not, or a table ``[key]``, ``[key."name"]``); for a key
    ``sub`` of such a table (``[hosts."a.org"]`` then ``delay_ms = -5``), the first
    ``sub =`` line in one of the tables; without the line when none does."""
    name = re.escape(key)
    found = re.search(
        rf"^[ \t]*(?:{name}|\"{name}\"|'{name}')[ \t]*=|^[ \t]*\[[ \t]*{name}[ \t]*[\].]",
        text,
        re.MULTILINE,
    )
    if found is not None and sub is not None and text[found.start() :].lstrip().startswith("["):
        tables = re.finditer(rf"^[ \t]*\[[ \t]*{name}[ \t]*[\].][^\n]*", text, re.MULTILINE)
        for table in tables:
            end = re.compile(r"^[ \t]*\[", re.MULTILINE).search(text, table.end())
            setting = re.compile(rf"^[ \t]*\"?{re.escape(sub)}\"?[ \t]*=", re.MULTILINE).search(
                text, table.end(), len(text) if end is None else end.start()
            )
            if setting is not None:
                found = setting
                break
    line = "" if found is None else f" line {text.count(chr(10), 0, found.start()) + 1}"
    return f"config file {str(path)!r}{line}: "


__all__ = [
    "DEFAULT_STRIP_PARAMS",
    "RANGES",
    "CrawlConfig",
    "DnsPreference",
    "RobotsFailureMode",
    "Scope",
    "Source",
    "asdict",
    "build_config",
    "load_config",
    "load_config_sources",
    "product_token",
]
