"""Assembly: the parts of one crawl, wired together (the composition root).

``assemble`` builds, for a config, a store and a clock, every part the engine drives,
each with only the settings it needs (``XSettings.from_config``), and ties their
callbacks: the address policy and the robots.txt cache write audit lines to the
observer; with ``warc`` on (and a SQLite store, or a cluster worker's store with a
WARC directory: ``core.storage.archive.warc_writer``) the fetcher is wrapped in
``core.storage.archive.ArchivingFetcher``; robots.txt is fetched
through the side requests and so through the host gate; refusals go to the observer;
spilled rows read back restore their seed's scope.
The engine (``core.crawl.engine``) runs the workers over the result and does the awaits.
Nothing here does I/O but reads of the crawl file (the validators of a recrawl's
queued pages, ``core.crawl.recrawl``; the SimHashes of the near-duplicate index): the
fetcher and the DNS cache open connections on first use.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from crawldeck.core.config import CrawlConfig
from crawldeck.core.crawl.content import ContentReader
from crawldeck.core.crawl.observer import Observer
from crawldeck.core.crawl.recording import Recorder, near_index
from crawldeck.core.crawl.recrawl import ConditionalFetcher, validators_of
from crawldeck.core.crawl.side_requests import SideRequests
from crawldeck.core.crawl.sitemaps import SITEMAP_DEPTH, SitemapReader
from crawldeck.core.net.dns import DnsCache, DnsSettings
from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.net.robots import RobotsCache, RobotsSettings
from crawldeck.core.net.transport import PinningResolver
from crawldeck.core.policy import urls
from crawldeck.core.policy.address_policy import AddressPolicy, AddressPolicySettings
from crawldeck.core.policy.admission import Admission
from crawldeck.core.policy.gate import AddressLimit, HostGate
from crawldeck.core.policy.ip_limits import IpLimiter, IpLimitSettings
from crawldeck.core.policy.politeness import Cap, Politeness, PolitenessSettings
from crawldeck.core.policy.prioritizer import Prioritizer
from crawldeck.core.policy.seen import SeenSet
from crawldeck.core.policy.traps import ScopePolicy, TrapGuard, TrapSettings, UrlPatterns
from crawldeck.core.policy.window import FrontierWindow
from crawldeck.core.protocols import Clock, CrawlStore, Fetcher, SpillStore, StoreRoles
from crawldeck.core.records import FrontierRow
from crawldeck.core.storage.archive import ArchivingFetcher, PageArchive, warc_writer


@dataclass(slots=True)
class Parts:
    """Every part of one crawl (see each module): the network edge (``dns``,
    ``policy``, ``fetcher``), the host gate and the side requests through it, the
    robots.txt cache, the frontier window, admission with its scope, trap guard and
    seen set, the recorder of results, the content reader, the observer and the
    sitemap reader."""

    dns: DnsCache
    policy: AddressPolicy
    addresses: PinningResolver
    fetcher: Fetcher
    gate: HostGate
    frontier: FrontierWindow
    side: SideRequests
    robots: RobotsCache
    observer: Observer
    scope: ScopePolicy
    guard: TrapGuard
    seen: SeenSet
    admission: Admission
    recorder: Recorder
    content: ContentReader
    sitemaps: SitemapReader
    roles: StoreRoles


class ClusterHooks(Protocol):
    """What a cluster worker (``core.cluster.worker``) adds to the parts: its frontier
    window over the shared frontier, its per-IP limit shared with the other workers,
    and a look at the parts once they are made."""

    def make_window(
        self,
        window: int,
        store: SpillStore,
        read_back: Callable[[Sequence[FrontierRow]], None],
        prioritizer: Prioritizer,
    ) -> FrontierWindow:
        """The frontier window (``FrontierWindow``'s arguments)."""
        ...

    def address_limit(self, local: IpLimiter, wake: Callable[[], None]) -> AddressLimit:
        """The gate's per-IP limit over this worker's own ``local`` one (``wake``: a
        host may be ready)."""
        ...

    def bind(self, parts: Parts) -> None:
        """The parts are made (the worker adopts hosts into their gate and observer)."""
        ...


def assemble(
    config: CrawlConfig,
    store: CrawlStore,
    *,
    clock: Clock,
    wake: Callable[[], None],
    fetcher: Fetcher | None = None,
    rng: random.Random | None = None,
    dns: DnsCache | None = None,
    cluster: ClusterHooks | None = None,
) -> Parts:
    """The parts of a crawl of ``config`` into ``store``.

    Args:
        config: the crawl's settings.
        store: the crawl's store (results, the frontier's tail); its optional roles
            (``CrawlStore.roles``, asked once here) are wired to the parts that use
            them: the runs and the history to the engine, the key store to the seen
            set (without one, every URL goes to the store, which dedupes), the cash
            sink and score keeper to the recorder and window, the history to the
            conditional fetcher, sitemaps, near duplicates and WARC writer.
        clock: the one time source (epoch s); the calendar guard's "today" is its date.
        wake: called when a URL may be ready (the engine's workers look again).
        fetcher: the HTTP edge (default: the aiohttp fetcher, pinned to ``dns``).
        rng: randomness for the backoff jitter (seeded in tests).
        dns: the DNS cache (default: one on ``config`` and ``clock``).
        cluster: a cluster worker's hooks (its window; it is shown the parts).
    """

    def audit(line: str) -> None:
        """An audit line for the observer, which is made after the parts that write
        them (they write none while being made)."""
        observer.audit(line)

    def inform(line: str) -> None:
        """An information line for the observer's log (a trusted seed host)."""
        observer.log(line)

    def capped(host: str, cap: Cap) -> None:
        """A server's value cut to a cap: the observer logs it once per host."""
        observer.capped(host, cap)

    def read_back(rows: Sequence[FrontierRow]) -> None:
        """Spilled rows came back into memory: a seed spilled before a resume gets its
        scope back, a host unseen this run its figures."""
        for row in rows:
            if row.depth == 0:
                scope.add_seed(row.url)
        if rows[0].host not in observer.hosts:
            observer.stats(rows[0].host, urls.origin(rows[0].url))
        wake()

    dns = dns or DnsCache(DnsSettings.from_config(config), clock)
    policy = AddressPolicy(AddressPolicySettings.from_config(config), inform=inform)
    addresses = PinningResolver(dns, policy, capacity=config.dns_cache_size)
    fetcher = fetcher or AiohttpFetcher(config, resolver=addresses, clock=clock)
    roles = store.roles()  # asked once: the optional roles are wired below
    history = roles.history
    conditional = validators_of(history) if history is not None else None
    if conditional:  # a recrawl: its pages are asked for with their validators
        fetcher = ConditionalFetcher(fetcher, conditional)
    writer = warc_writer(config, roles)
    archive = None
    if writer is not None:  # every fetch through the crawl's client is archived
        fetcher = ArchivingFetcher(fetcher, writer, clock)
        archive = PageArchive(writer, clock)
    ips: AddressLimit = IpLimiter(IpLimitSettings.from_config(config))
    if cluster is not None:
        ips = cluster.address_limit(IpLimiter(IpLimitSettings.from_config(config)), wake)
    politeness = Politeness(PolitenessSettings.from_config(config), rng, hosts=config.hosts)
    gate = HostGate(politeness, ips, config.per_host_concurrency, capped=capped)
    prioritizer = Prioritizer(config.ordering, config.front_queues)
    if cluster is None:
        keep = roles.scores.set_scores if roles.scores is not None and prioritizer.by_cash else None
        # A store without a key store dedupes what it is sent: every URL goes to it
        # and comes back through its reads, as in a cluster (``core.policy.seen``).
        frontier = FrontierWindow(
            config.frontier_window, store, read_back, prioritizer=prioritizer,
            keep_credits=keep, spill_all=roles.keys is None,
        )  # fmt: skip
    else:
        frontier = cluster.make_window(config.frontier_window, store, read_back, prioritizer)
    side = SideRequests(clock, fetcher, addresses, gate, frontier, config.robots_token, wake)
    robots = RobotsCache(side, RobotsSettings.from_config(config), clock, audit)
    observer = Observer(config, clock, store, gate, frontier, robots, dns)
    scope = ScopePolicy(config.scope)
    today = datetime.fromtimestamp(clock(), UTC).date()
    guard = TrapGuard(
        TrapSettings.from_config(config), scope, today,
        patterns=UrlPatterns.from_config(config), hosts=config.hosts,
    )  # fmt: skip
    seen = SeenSet(roles.keys)
    admission = Admission(config.strip_params, guard, seen, observer.block)
    side.bind(observer, admission, robots)
    recorder = Recorder(
        config, store, observer, admission, frontier, seen, wake, archive, near_index(history),
        prioritizer, roles,
    )  # fmt: skip
    content = ContentReader(
        config, side.render_gate, side.render_report, observer.log, audit, clock
    )
    # a sitemap's URLs are at SITEMAP_DEPTH: under a lower max_depth each would be
    # refused (depth), so none is asked for (issue #25 trial 8: three requests for nothing)
    reads_sitemaps = config.sitemaps and config.max_depth >= SITEMAP_DEPTH
    sitemaps = SitemapReader(
        side, robots, admission, recorder, store, seen, scope, observer, clock, wake,
        max_redirects=config.max_redirects,
        read_before=None if history is None else history.sitemaps_read,
        unread=history.hosts_without_sitemaps if history is not None and reads_sitemaps else None,
    )  # fmt: skip
    if reads_sitemaps:
        robots.settled = sitemaps.robots_known
    parts = Parts(dns, policy, addresses, fetcher, gate, frontier, side, robots, observer,
                  scope, guard, seen, admission, recorder, content, sitemaps, roles)  # fmt: skip
    if cluster is not None:
        cluster.bind(parts)
    return parts


__all__ = ["ClusterHooks", "Parts", "assemble"]
