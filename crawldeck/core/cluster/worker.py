"""A fetch worker of a cluster crawl: an ``Engine`` over the frontier in Redis.

The worker runs the single-process engine unchanged on three seams (issue #11's):
its store is a ``ClusterStore`` (results and URLs to Redis), its frontier window a
``SharedWindow`` (URLs only of the hosts it owns), and ``bind`` lets it put a claimed
host's saved politeness into the engine's gate. Around the engine it keeps a
heartbeat, every ``cluster_lease_ms / 4``:

* renew its hosts' leases (a host whose lease is gone is dropped: ``Leases``), and
  read back URLs other workers queued for them;
* recover the hosts of dead workers (``RECOVER``: leases past their deadline);
* give back hosts it has nothing left of, and, above its fair share (hosts with work
  over live workers), hosts it has not started, so a worker that joins gets some;
* claim hosts up to its share, taking each host's saved state: the delay since its
  last request, and a full delay from now when its previous owner did not release it
  (it died or froze: its last request may have been just before the claim);
* follow the crawl's control (pause, resume, stop) and its seed list (seeds added
  while the crawl runs), and publish its heartbeat (the console's Workers panel).

Per-host politeness then needs no round trip per request: the host is this worker's
alone while it holds the lease (issue #12 item 2).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import random
import socket
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawldeck.core.clock import LoopClock
from crawldeck.core.cluster.addresses import STALE_S, SharedIpLimit
from crawldeck.core.cluster.keys import SHARDS, Keyspace, decode_robots, shard_of
from crawldeck.core.cluster.leases import RENEW_SHARE, Leases
from crawldeck.core.cluster.link import LINGER_S, Command, RedisLink
from crawldeck.core.cluster.store import ClusterStore
from crawldeck.core.cluster.window import SharedWindow
from crawldeck.core.config import CrawlConfig, asdict, build_config
from crawldeck.core.crawl.assembly import Parts
from crawldeck.core.crawl.engine import CrawlResult, Engine
from crawldeck.core.errors import ClusterError, ConfigError, CrawldeckError
from crawldeck.core.net.dns import DnsCache
from crawldeck.core.policy.gate import AddressLimit
from crawldeck.core.policy.ip_limits import IpLimiter
from crawldeck.core.policy.prioritizer import CASH_ORDERINGS, Prioritizer
from crawldeck.core.policy.robots import RobotsEntry
from crawldeck.core.policy.window import FrontierWindow
from crawldeck.core.protocols import Clock, Fetcher, SpillStore
from crawldeck.core.records import FrontierRow, HostRecord
from crawldeck.core.storage.archive import WarcHome
from crawldeck.core.storage.warc_reader import warc_files

log = logging.getLogger("crawldeck.cluster")

#: Seconds between two looks for claimable hosts while a worker has none, at most.
IDLE_POLL_MAX_S = 0.5


@dataclass(frozen=True, slots=True)
class Claimed:
    """A host this worker just took: its lease ``epoch``, ``queued`` URLs, its saved
    state (``rec``, ``last`` request start in epoch s), whether its previous owner
    released it (``clean``), its robots.txt entry if its TTL still runs and the
    ``pages`` committed for it so far in this crawl (under every lease)."""

    host: str
    epoch: int
    queued: int
    rec: HostRecord | None
    last: float | None
    clean: bool
    robots: RobotsEntry | None = None
    pages: int = 0


def _text(value: Any) -> str | None:
    if value is None or value is False:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_claim(reply: Sequence[Any]) -> Claimed:
    """A ``CLAIM`` reply row ``[host, epoch, queued, rec, last, clean, robots, pages]``."""
    host, epoch, queued, rec, last, clean, robots, pages = (list(reply) + [None] * 8)[:8]
    record = None
    rec_text = _text(rec)
    if rec_text:
        record = HostRecord(*json.loads(rec_text))
    last_text = _text(last)
    return Claimed(
        host=str(_text(host)),
        epoch=int(epoch),
        queued=int(queued),
        rec=record,
        last=float(last_text) if last_text else None,
        clean=_text(clean) != "0",
        robots=decode_robots(robots) if robots else None,
        pages=int(_text(pages) or 0),
    )


def warc_suffix(directory: Path | None, crawl_id: str) -> str:
    """A worker's random suffix, 8 hex digits (``uuid4``), that no WARC file of crawl
    ``crawl_id`` in ``directory`` has yet (``<crawl id>-SUFFIX-NNNNN.warc.gz``): a
    worker, restarted or not, starts files of its own, never another's."""
    while True:
        suffix = uuid.uuid4().hex[:8]
        if directory is None or not warc_files(directory, f"{crawl_id}-{suffix}"):
            return suffix


def claim_plan(ready: Sequence[int], want: int, start: int) -> list[tuple[int, int]]:
    """How many hosts to claim from each shard, ``(shard, count)``: ``ready[s]`` hosts
    are claimable in shard ``s`` (the last survey's count), each shard with some asks
    for its part of ``want`` in proportion (at least 1), and the counts add up to at
    most ``want``, the shards taken from ``start`` on (wrapping): when fewer hosts are
    wanted than shards have some, workers claiming at once start at different shards
    and a worker never takes one host of every shard past its share."""
    total = sum(ready)
    plan: list[tuple[int, int]] = []
    left = want
    for i in range(len(ready)):
        shard = (start + i) % len(ready)
        if ready[shard] and left > 0:
            take = min(left, max(1, math.ceil(want * ready[shard] / total)))
            plan.append((shard, take))
            left -= take
    return plan


def survey_commands(keys: Keyspace, *, cluster: bool, now: float) -> list[Command]:
    """The ``SURVEY`` calls that recover dead owners' hosts and count every shard's
    claimable and owned hosts: one per shard on Redis Cluster, else one for all."""
    now_ms = int(now * 1000)
    if cluster:
        return [
            ("script", "survey", [keys.stream(s)], [json.dumps([keys.tag(s)]), now_ms, now])
            for s in range(SHARDS)
        ]
    tags = json.dumps([keys.tag(s) for s in range(SHARDS)])
    return [("script", "survey", [keys.stream(0)], [tags, now_ms, now])]


def survey_counts(replies: Sequence[Any]) -> list[tuple[int, int]]:
    """``(claimable, owned)`` by shard from the replies of ``survey_commands``."""
    return [(int(r), int(o)) for reply in replies for r, o, _n, _c in reply]


def survey_totals(replies: Sequence[Any]) -> dict[str, int]:
    """The crawl's counters in Redis (pages, bytes, status classes, ``blocked:REASON``:
    what the owners committed, all runs) from the replies of ``survey_commands``."""
    totals: dict[str, int] = {}
    for reply in replies:
        for *_counts, flat in reply:
            for field, value in zip(flat[::2], flat[1::2], strict=True):
                name = field.decode() if isinstance(field, bytes) else str(field)
                totals[name] = totals.get(name, 0) + int(value)
    return totals


async def publish_crawl(
    link: RedisLink,
    keys: Keyspace,
    config: CrawlConfig,
    seeds: Sequence[str],
    *,
    workers: int = 0,
) -> None:
    """Put a crawl's config and seeds in Redis and mark it running (the first
    process does this; workers read them). Seeds already listed are not added again.
    ``workers``: how many the first process starts: each counts the others from the
    start when it takes its share of the hosts (else the first one up took them all).

    Raises:
        ClusterError: see ``RedisLink.batch``.
    """
    (known,) = await link.batch([("LRANGE", keys.seeds, 0, -1)])
    have = {_text(s) for s in known}
    fresh = [s for s in dict.fromkeys(seeds) if s not in have]
    commands: list[Command] = [
        ("SET", keys.config, json.dumps(asdict(config))),
        ("HSET", keys.control, "state", "running", "workers", workers),
    ]
    if fresh:
        commands.append(("RPUSH", keys.seeds, *fresh))
    await link.batch(commands)


async def read_config(link: RedisLink, keys: Keyspace) -> CrawlConfig:
    """The config of a crawl published by ``publish_crawl``.

    Raises:
        ClusterError: no crawl ``keys.crawl_id`` in that Redis, or an unusable config.
    """
    (text,) = await link.batch([("GET", keys.config)])
    if text is None:
        raise ClusterError(
            f"no crawl {keys.crawl_id!r} in this Redis: start it with crawldeck crawl first"
        )
    try:
        return build_config(json.loads(text))
    except (ValueError, ConfigError) as exc:
        raise ClusterError(f"crawl {keys.crawl_id!r}: bad config in Redis: {exc}") from None


class Worker:
    """One worker process's crawl (see the module).

    Args:
        link: the Redis connection (scripts loaded by ``run``; its owner closes it).
        keys: the crawl's key layout.
        config: the crawl's config (``read_config``); its ``max_pages`` counts over
            the whole crawl (every worker's pages: ``ClusterStore``'s count), not this
            worker's alone; ``sitemaps`` is off in a worker (see ``__init__``).
        clock: the one clock, epoch seconds (default ``core.clock.LoopClock``: the
            loop's, so leases, politeness and the engine's timers agree; issue #24
            item 6): the engine's, the leases', the Redis bookkeeping's.
        fetcher, dns: as ``Engine``'s (tests pass loopback ones).
        worker_id: this worker's id (default ``machine:pid:SUFFIX``).
        warc_dir: where this worker writes its WARC files when the crawl's ``warc``
            is on (``None``: it writes none): ``<crawl id>-SUFFIX-NNNNN.warc.gz``,
            ``SUFFIX`` 8 random hex digits drawn at start (``warc_suffix``), so two
            workers, or two runs of one, never write one file. The page rows name
            the file only (``warc_file``): ``crawldeck show`` and ``export
            --with-body`` look for it beside the crawl file.
    """

    def __init__(
        self,
        link: RedisLink,
        keys: Keyspace,
        config: CrawlConfig,
        *,
        clock: Clock | None = None,
        fetcher: Fetcher | None = None,
        dns: DnsCache | None = None,
        worker_id: str | None = None,
        warc_dir: Path | None = None,
    ) -> None:
        self.machine = socket.gethostname()
        suffix = warc_suffix(warc_dir, keys.crawl_id)
        self.id = worker_id or f"{self.machine}:{os.getpid()}:{suffix}"
        self.link = link
        clock = clock or LoopClock()
        self._link, self._keys, self._clock = link, keys, clock
        self._lease_ms = config.cluster_lease_ms
        self.leases = Leases(self._lease_ms, clock=clock, on_lost=self._lost)
        self.store = ClusterStore(
            keys, link, self.id, self.leases, clock=clock, hot_queue=config.cluster_hot_queue,
            max_pages=config.max_pages,
            cash_queues=config.front_queues if config.ordering in CASH_ORDERINGS else 0,
            inlinks=config.ordering == "opic-inlinks",
        )  # fmt: skip
        if warc_dir is not None:
            self.store.warc_home = WarcHome(warc_dir, f"{keys.crawl_id}-{suffix}", keys.crawl_id)
        self.store.on_cap = self._cap_reached
        self._window: SharedWindow | None = None
        self._parts: Parts | None = None
        self._finished = False
        self._failure: CrawldeckError | None = None
        self._quiet = False  # the last beat saw nothing claimable or owned anywhere
        self._stop = asyncio.Event()
        self._seeking: asyncio.Task[None] | None = None
        self._poked = False
        self._seed_cursor = 0
        self._share = 1
        self._ready_by_shard = [0] * SHARDS
        self._live = 1
        self._born = clock()
        self._state = "starting"
        self._rate: tuple[float, int] = (self._born, 0)
        self.pages_per_s = 0.0
        self._config = config
        self.addresses: SharedIpLimit | None = None
        # No sitemaps in a cluster crawl yet: a reading would run in the worker that
        # fetched robots.txt, outside the host's lease, untested with hosts changing
        # hands (docs/cluster.md).
        self.engine = Engine(
            config.replace(max_pages=None, sitemaps=False), self.store, clock=clock,
            fetcher=fetcher, dns=dns, cluster=self,
        )  # fmt: skip

    # ------------------------------------------------------- ClusterHooks

    def make_window(
        self,
        window: int,
        store: SpillStore,
        read_back: Callable[[Sequence[FrontierRow]], None],
        prioritizer: Prioritizer,
    ) -> FrontierWindow:
        """The engine's window: a ``SharedWindow`` over the worker's leases, in the
        crawl's ordering, reading its ``ClusterStore`` (``store`` is that store)."""
        self._window = SharedWindow(
            window, self.store, read_back, leases=self.leases, source=self,
            prioritizer=prioritizer,
        )  # fmt: skip
        return self._window

    def address_limit(self, local: IpLimiter, wake: Callable[[], None]) -> AddressLimit:
        """The per-IP limit held in Redis across workers (``SharedIpLimit``).

        Its hold (s): the longer of the delay plus 5 s (a request's end normally comes
        first), capped by the fetch's whole budget, and what a booking must cover for
        the next one to start a delay after the holder's last possible send: the
        delay, ``STALE_S`` and the connection's set-up between the gate's check and
        the first byte (``connect_timeout_ms``, within ``total_timeout_ms``)."""
        config = self._config
        delay_s = (config.delay_ms if config.ip_delay_ms is None else config.ip_delay_ms) / 1000
        total_s = config.total_timeout_ms / 1000
        send_s = min(config.connect_timeout_ms / 1000, total_s)
        hold_s = max(min(total_s, delay_s + 5.0), delay_s + STALE_S + send_s)
        self.addresses = SharedIpLimit(
            local, self._link, self._keys, delay_s, clock=self._clock, wake=wake,
            worker=self.id, hold_s=hold_s,
        )  # fmt: skip
        return self.addresses

    def bind(self, parts: Parts) -> None:
        """Keep the engine's parts (a claimed host's politeness goes into its gate, its
        robots.txt into the cache) and keep each robots.txt fetched in Redis."""
        self._parts = parts
        parts.robots.stored = self.store.save_robots

    # --------------------------------------------------------- WorkSource

    @property
    def finished(self) -> bool:
        """The whole crawl is over (nothing claimable or owned in any shard)."""
        return self._finished

    def poke(self) -> None:
        """Claim more hosts soon (once per poke, without waiting)."""
        if not self._poked and len(self.leases) < self._share and not self._stop.is_set():
            self._poked = True
            asyncio.get_running_loop().create_task(self._claim_poked())

    def read_wait_s(self, host: str) -> float:
        """Half ``host``'s politeness delay (s): a read of its URLs started as one is
        handed out is not needed before the fetch's end plus the delay."""
        if self._parts is None:
            return 0.0
        return self._parts.gate.delay_s(host) / 2

    async def wait_for_work(self) -> None:
        """Wait until hosts were claimed, the crawl finished or a stop was asked; the
        engine's many tasks share one search."""
        if self._seeking is None:
            self._seeking = asyncio.get_running_loop().create_task(self._seek())
        await asyncio.shield(self._seeking)

    # ---------------------------------------------------------------- run

    async def run(self) -> CrawlResult:
        """Crawl until the whole crawl is finished or stopped, then give every host
        back and leave the heartbeat list.

        Raises:
            ClusterError: Redis stayed unreachable past ``redis_outage_s``.
            StoreError: the same, met by a write.
        """
        await self._link.load_scripts()
        self.store.start()
        seeds = await self._link.batch([("LRANGE", self._keys.seeds, 0, -1)])
        first = [str(_text(s)) for s in seeds[0]]
        self._seed_cursor = len(first)
        await self._beat()
        self.engine.add_seeds(first)
        heart = asyncio.get_running_loop().create_task(self._heartbeat())
        try:
            result = await self.engine.run()
        finally:
            heart.cancel()
            await asyncio.gather(heart, return_exceptions=True)
            self._stop.set()
            await self._leave()
        if self._failure is not None:
            raise self._failure
        return result

    async def _leave(self) -> None:
        """Flush, give every host back (its URLs claimable at its politeness deadline)
        and drop the heartbeat. Not when Redis is gone (the leases run out and the
        others recover the hosts)."""
        if self._failure is not None or self._link.down:
            log.warning("worker %s left without giving its hosts back: Redis is gone", self.id)
            return
        try:
            await self.store.aclose()
            await self._release([(h, True) for h in self.leases])
            await self._link.batch([("HDEL", self._keys.workers, self.id)])
        except Exception as exc:  # Redis gone: the leases run out, the reaper recovers
            log.warning("worker %s left without giving its hosts back: %s", self.id, exc)

    # ----------------------------------------------------------- heartbeat

    async def _heartbeat(self) -> None:
        """Beat (renew, survey, publish) every quarter lease; Redis gone for good
        stops the crawl here (the error is raised from ``run``)."""
        interval = self._lease_ms / 1000 * RENEW_SHARE
        housekeeping = asyncio.get_running_loop().create_task(self._housekeeping(interval))
        try:
            while True:
                await asyncio.sleep(interval)
                if self.addresses is not None:  # a worker idle there still frees them
                    self.addresses.give_back_stale()
                await self._beat(LINGER_S)
        except CrawldeckError as exc:
            self._failure = exc
            self._stop.set()
            self.engine.request_stop()
        finally:
            housekeeping.cancel()
            await asyncio.gather(housekeeping, return_exceptions=True)

    async def _housekeeping(self, interval: float) -> None:
        """Give back idle hosts and claim up to the share, beside the heartbeat (whose
        renewals must never wait for a flush)."""
        while True:
            await asyncio.sleep(interval)
            await self._release_idle()
            await self._claim()

    async def _beat(self, within_s: float = 0.0) -> None:
        """Renew, recover, read the crawl's state and publish the heartbeat (one batch,
        sent within ``within_s``: the periodic beat waits up to ``LINGER_S`` to ride on
        another round trip of the worker's; one the crawl waits on, at start and while
        seeking hosts, goes at once)."""
        k, now = self._keys, self._clock()
        sent = now
        now_ms = int(now * 1000)
        self.leases.expire_due()
        held = self.leases.held()
        by_shard: dict[int, list[list[Any]]] = {}
        for lease in held:
            by_shard.setdefault(shard_of(lease.host), []).append([lease.host, lease.epoch])
        commands: list[Command] = []
        for shard, hosts in by_shard.items():
            commands.append((
                "script", "renew", [k.stream(shard)],
                [k.tag(shard), self.id, self._lease_ms, now_ms, json.dumps(hosts)],
            ))  # fmt: skip
        renews = len(commands)
        survey = survey_commands(k, cluster=self._link.cluster, now=now)
        commands += survey
        commands += [
            ("HSET", k.workers, self.id, json.dumps(self._heartbeat_record(now))),
            ("HMGET", k.control, "state", "workers"),
            ("LLEN", k.seeds),
            ("HVALS", k.workers),
        ]
        replies = await self._link.send(commands, within_s=within_s)
        for reply in replies[:renews]:
            for host_b, ok, queued, credits in reply:
                host = str(_text(host_b))
                epoch = self.leases.epoch(host)
                if not ok:
                    self.leases.lose(host)
                elif epoch is not None:
                    self.leases.renewed(host, epoch, sent)
                    if self._window is not None:
                        if queued:
                            self._window.adopt(host, int(queued))
                        for key, cash in self.store.held_credits(credits):
                            self._window.credit(key, cash)
        counts = survey_counts(replies[renews : renews + len(survey)])
        self._ready_by_shard = [r for r, _o in counts]
        ready = sum(self._ready_by_shard)
        owned = sum(o for _r, o in counts)
        (control, expected), seeds_len, beats = replies[-3], replies[-2], replies[-1]
        live = sum(1 for b in beats if self._alive(b, now))
        if self._clock() - self._born < self._lease_ms / 1000:  # the others are starting
            live = max(live, int(expected or 0))
        self._live = max(1, live)
        self._share = max(1, math.ceil((ready + owned) / self._live))
        self._quiet = ready == 0 and owned == 0
        self._follow_control(_text(control))
        if int(seeds_len) > self._seed_cursor:
            await self._new_seeds(int(seeds_len))

    def _alive(self, beat: Any, now: float) -> bool:
        try:
            return float(json.loads(beat)["at"]) > now - self._lease_ms / 1000
        except (ValueError, KeyError, TypeError):
            return False

    def _heartbeat_record(self, now: float) -> dict[str, Any]:
        mono = self._clock()
        pages = self.store.pages_added().get("pages", 0)
        then, before = self._rate
        if mono - then >= 1.0:
            self.pages_per_s = (pages - before) / (mono - then)
            self._rate = (mono, pages)
        return {
            "machine": self.machine,
            "pid": os.getpid(),
            "hosts": len(self.leases),
            "pages": pages,
            "pages_per_s": round(self.pages_per_s, 1),
            "at": now,
            "state": self._state,
            "redis_down": self._link.down,
        }

    def _cap_reached(self) -> None:
        """The crawl's pages reached ``max_pages``: stop here, and have every worker
        stop (the control says ``stopping``); fetches in flight still land."""
        if not self._stop.is_set():
            self._stop.set()
            self.engine.request_stop()
            asyncio.get_running_loop().create_task(
                self._link.batch([("HSET", self._keys.control, "state", "stopping")])
            )

    def _follow_control(self, state: str | None) -> None:
        engine = self.engine
        if state == "stopping" and not self._stop.is_set():
            self._stop.set()
            engine.request_stop()
        elif state == "paused":
            engine.pause()
        elif state == "running":
            engine.resume()
        self._state = (
            "paused" if engine.paused else "stopping" if self._stop.is_set() else "running"
        )

    async def _new_seeds(self, length: int) -> None:
        (seeds,) = await self._link.batch(
            [("LRANGE", self._keys.seeds, self._seed_cursor, length - 1)]
        )
        self._seed_cursor = length
        await self.engine.add_seeds_live([str(_text(s)) for s in seeds])

    # ------------------------------------------------------ hosts in, out

    async def _claim_poked(self) -> None:
        try:
            await self._claim()
        finally:
            self._poked = False

    async def _seek(self) -> None:
        """Look for hosts until some were claimed, the crawl finished or stopped."""
        poll = 0.05
        try:
            while not self._stop.is_set():
                await self.store.drain()  # the URLs found so far are in Redis
                await self._release_idle()
                await self._beat()
                window = self._window
                if await self._claim() or (window is not None and window.owned_spilled()):
                    return
                if self._quiet and not self.leases:
                    self._finished = True
                    return
                await asyncio.sleep(poll)
                poll = min(IDLE_POLL_MAX_S, poll * 2)
        finally:
            self._seeking = None

    async def _claim(self) -> int:
        """Claim hosts up to this worker's share, from the shards that have claimable
        ones (``claim_plan``, from a random shard on); the number claimed."""
        want = self._share - len(self.leases)
        total = sum(self._ready_by_shard)
        if want <= 0 or total == 0 or self._stop.is_set():
            return 0
        k, now = self._keys, self._clock()
        sent = now
        commands: list[Command] = [
            ("script", "claim", [k.stream(shard)],
             [k.tag(shard), self.id, self._lease_ms, now, int(now * 1000), take])
            for shard, take in claim_plan(self._ready_by_shard, want, random.randrange(SHARDS))
        ]  # fmt: skip
        replies = await self._link.batch(commands)
        claimed = 0
        for reply in replies:
            for row in reply:
                self._adopt(parse_claim(row), now, sent)
                claimed += 1
        if claimed == 0:
            self._ready_by_shard = [0] * SHARDS  # nothing claimable now: the beat recounts
        return claimed

    def _adopt(self, claim: Claimed, now: float, sent: float) -> None:
        """Take ``claim``'s host: its lease, its saved politeness, its queued URLs."""
        host = claim.host
        self.leases.take(host, claim.epoch, sent)
        parts = self._parts
        if parts is not None:
            rec, last = claim.rec, claim.last
            if not claim.clean:  # its owner died or froze: it may have just sent one
                last = now if last is None or last < now else last
            parts.gate.restore(host, rec, last_request=last)
            if claim.robots is not None:
                parts.robots.adopt(claim.robots)
            if rec is not None or claim.pages:
                # the host's page count goes on from its last owner's row, or from the
                # pages committed for it if more (an owner killed or cut off from Redis
                # after a page's commit and before the row counting it; issue #22 item 5)
                origin = claim.robots.origin if claim.robots is not None else None
                stats = parts.observer.stats(host, origin)
                saved = rec.pages_fetched if rec is not None else 0
                stats.fetched = max(stats.fetched, saved, claim.pages)
        if self._window is not None:
            self._window.adopt(host, claim.queued)

    def _lost(self, host: str) -> None:
        """``host`` is not this worker's any more: forget its URLs here."""
        if self._window is not None:
            self._window.drop_host(host)
        self.store.forget_host(host)

    async def _release_idle(self) -> None:
        """Give back hosts with nothing left here, and those above the fair share.

        Their last state and pages go to Redis first; then, with no await until the
        release is sent, a host counts only if no URL of it is being processed, no
        write of it is buffered or on its way (its acks must land before RELEASE gives
        its handed-out URLs back, or another worker would fetch them again) and its
        state did not change since that flush (a URL that ended during the drain: its
        page is in Redis, but the host's page count that goes with it is not, and the
        next owner would go on from the count without it; issue #22 item 5)."""
        window, parts = self._window, self._parts
        if window is None or parts is None or not self.leases:
            return
        observer = parts.observer
        observer.flush_hosts()  # the hosts' last state, under their leases
        await self.store.drain()  # and their pages
        busy, store = observer.busy, self.store
        free = [
            h
            for h in self.leases
            if h not in busy and not store.has_pending(h) and not observer.unsaved(h)
        ]
        idle = [h for h in free if not window.queued(h)]
        extra = len(self.leases) - len(idle) - math.ceil(self._share * 1.25)
        spare: list[str] = []
        if extra > 0:  # a worker joined: hand over hosts not started yet
            spare = sorted((h for h in free if window.queued(h)), key=window.queued)[:extra]
        await self._release([(h, True) for h in spare] + [(h, False) for h in idle])

    async def _release(self, hosts: list[tuple[str, bool]]) -> None:
        """``RELEASE`` each ``(host, force)`` (see the script): a forced host is given
        up here before the request goes (no URL of it starts meanwhile); one kept gets
        its new URLs read back."""
        k, now = self._keys, self._clock()
        gate = self._parts.gate if self._parts is not None else None
        by_shard: dict[int, list[list[Any]]] = {}
        for host, force in hosts:
            epoch = self.leases.epoch(host)
            if epoch is None:
                continue
            at = gate.next_fetch_at(host, now) if gate is not None else now
            by_shard.setdefault(shard_of(host), []).append([host, epoch, 1 if force else 0, at])
            if force:
                self.leases.give_up(host)
                self._lost(host)
        if not by_shard:
            return
        commands: list[Command] = [
            ("script", "release", [k.stream(s)], [k.tag(s), self.id, json.dumps(rows)])
            for s, rows in by_shard.items()
        ]
        for reply in await self._link.batch(commands):
            for host_b, outcome, queued in reply:
                host = str(_text(host_b))
                if outcome == 1:
                    self.leases.give_up(host)
                    self._lost(host)
                elif outcome == 0 and self._window is not None:
                    self._window.adopt(host, int(queued))
                elif outcome == -1:
                    self.leases.lose(host)


__all__ = [
    "Claimed",
    "Worker",
    "claim_plan",
    "parse_claim",
    "publish_crawl",
    "read_config",
    "survey_commands",
    "survey_counts",
    "survey_totals",
    "warc_suffix",
]
