"""The store of a cluster worker: the crawl's results and frontier rows go to Redis.

``ClusterStore`` is what the engine of a worker process (``core.cluster.worker``) writes
to instead of a SQLite ``Store``: a ``core.protocols.CrawlStore`` (the ``ResultSink``
calls, none of them waiting for Redis; the frontier window's ``SpillStore`` reads,
awaited on the loop), and of the optional roles (``ClusterStore.roles``, issue #24 item
4) the ``CashSink`` under a cash ordering and a WARC home; the runs, the seen set's
exact check and the history are not a worker's. Each call is buffered and a flusher task
sends the buffer as one pipeline (``RedisLink.send``), so under load many pages share
one round trip (issue #12 item 7). The flusher waits up to ``LINGER_S`` after the first
write for more, unless ``FLUSH_OPS`` ops are buffered, a drain waits or a read
(``pull``) does: the reads of queued URLs go in the flush's pipeline, after its pushes
(so they see the URLs just sent), and whatever else the worker sends in that loop turn
(per-IP bookings, the heartbeat) joins it (issue #23 item 3: at most one round trip a
page at any page rate). A flush pushes the URLs found to their hosts' queues, then
commits the results host by host under their leases, then reads: what each step sends,
and why a page's outlinks go before the page, is ``core.cluster.flush``'s.

An op about a host this worker owns is sent fenced by its epoch; a page, a host's state
or a URL's state about a host it does not own (lost, released, or never its own: the
final host figures of a run) is dropped; refusals about another worker's host (a link
to another site) and every frontier row go unfenced. When Redis comes back from an
outage, the pushes and unfenced commits of the last ``flush.REPLAY_S`` are sent again
first (``flush.Replay``): a restart from the append-only file loses up to its last
second or two.

Every admitted URL goes through Redis, the owner's own included (``spill_all`` window):
it comes back through ``read_spilled`` (``pull``, which hands it out under the lease),
so a URL two workers found at once is queued once. The local seen set is a cache of
what this worker sent, with no exact check behind it: Redis's seen set decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

from crawldeck.core.cluster import wire
from crawldeck.core.cluster.flush import (
    Buffer,
    Commit,
    Planner,
    Pull,
    Replay,
    Sent,
    deliver,
    fail_pulls,
    unpack,
)
from crawldeck.core.cluster.keys import (
    Keyspace,
    decode_entry,
    encode_robots,
    encode_row,
    path_prefix,
    score,
    seen_member,
    shard_of,
)
from crawldeck.core.cluster.leases import Leases
from crawldeck.core.cluster.link import LINGER_S, RedisLink
from crawldeck.core.errors import CrawldeckError, StoreError
from crawldeck.core.policy import urls
from crawldeck.core.policy.robots import RobotsEntry
from crawldeck.core.protocols import Clock, StoreRoles
from crawldeck.core.records import (
    BlockedRecord,
    FrontierRow,
    FrontierState,
    HostRecord,
    PageRecord,
    SitemapRecord,
    SitemapUrlRecord,
    status_class,
)
from crawldeck.core.storage.archive import WarcHome

log = logging.getLogger("crawldeck.cluster")

#: Ops buffered before ``room`` makes the engine wait for the flusher.
MAX_PENDING = 4000
#: Ops buffered past which the flusher sends without waiting ``LINGER_S`` for more
#: (a pipeline of a few hundred ops is a few tens of KB: one round trip is enough).
FLUSH_OPS = 500


@dataclass(frozen=True, slots=True)
class ClusterStoreStatistics:
    """The cluster store's figures: ``flushes`` (pipelines of results), ``pushed``
    (URLs sent to queues), ``queued`` (of those, new to the crawl), ``committed``
    (ops accepted), ``fenced`` (ops refused: the host's lease had another epoch),
    ``dropped`` (ops of hosts already known lost, not sent), ``pulled`` (URLs handed
    to this worker), ``replayed`` (calls sent again after an outage); the OPIC credits
    (issue #15) made to a URL queued in Redis (``credited``), to a URL handed out to
    its host's owner (``credited_out``: its entry keeps the cash if the host changes
    hands, and the owner's renewal takes it to its copy in memory), and those that
    found no URL (``credits_lost``: fetched already)."""

    flushes: int
    pushed: int
    queued: int
    committed: int
    fenced: int
    dropped: int
    pulled: int
    replayed: int
    credited: int
    credited_out: int
    credits_lost: int


class ClusterStore:
    """A worker's store over Redis (see the module).

    Args:
        keys: the crawl's key layout.
        link: the Redis connection with the scripts.
        worker: this worker's id.
        leases: the hosts this worker owns.
        clock: the crawl's clock (epoch s), for queue scores and ``ready`` times.
        hot_queue: queued URLs past which a host's new URLs go to path-prefix
            sub-queues (``cluster_hot_queue``).
        max_pages: the crawl's page cap (``None``: none); each flush adds its pages
            to the crawl's count (``Keyspace.pages``) and calls ``on_cap`` once that
            count reaches the cap.
        cash_queues: the front queues of the crawl's cash ordering (``opic`` or
            ``opic-inlinks``: ``Prioritizer.priorities``), whose bands a credited URL
            moves between; 0 (another ordering): no credits are made.
        inlinks: the bands are those of cash and in-links (``opic-inlinks``:
            ``core.policy.prioritizer.importance_priority``), not of cash alone.

    Attributes:
        warc_home: where this worker's WARC files go (``core.storage.archive.warc_writer``
            reads it when the engine is assembled), ``None``: no WARC files.

    ``start`` must be called on the running loop before the first write. Writes raise
    ``StoreError`` once a flush failed for good (Redis gone past its outage time).
    """

    def __init__(
        self,
        keys: Keyspace,
        link: RedisLink,
        worker: str,
        leases: Leases,
        *,
        clock: Clock,
        hot_queue: int,
        max_pages: int | None = None,
        cash_queues: int = 0,
        inlinks: bool = False,
    ) -> None:
        self._keys = keys
        self._inlinks = "1" if inlinks else "0"
        self.warc_home: WarcHome | None = None
        self._cap = max_pages
        self.on_cap: Callable[[], None] | None = None
        self._link = link
        self._worker = worker
        self._leases = leases
        self._clock = clock
        self._hot = hot_queue
        self._cash_queues = cash_queues
        self._buf = Buffer()
        self._held: dict[str, str] = {}  # handed-out dedupe key -> host
        self._member_keys: dict[str, str] = {}  # handed-out seen member -> dedupe key
        self._by_host: dict[str, set[str]] = defaultdict(set)
        self._pages: Counter[str] = Counter()
        self._blocked: Counter[str] = Counter()
        self._kick = asyncio.Event()
        self._urgent = asyncio.Event()  # send now: a drain or a read waits, or ops are many
        self._drains: list[tuple[int, asyncio.Future[None]]] = []  # (serial, waiter)
        self._done = 0  # the serial of the last buffer sent
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._sending: Buffer | None = None  # the buffer the flusher is sending
        # a buffer put in another caller's pipeline (``_ride``), its replies' future
        self._riding: tuple[Buffer, Sent, asyncio.Future[list[Any]]] | None = None
        self._planner = Planner(
            keys, worker, hot_queue, cash_queues, self._inlinks, count_pages=bool(max_pages)
        )
        self._replay = Replay()
        self._failure: StoreError | None = None
        self._flushes = self._pushed = self._queued = self._committed = 0
        self._fenced = self._dropped = self._pulled = 0
        self._credited = [0, 0, 0]  # lost, queued, handed out (PUSH's reply order)
        self.on_fenced: Callable[[str], None] = leases.lose

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the flusher on the running loop."""
        self._loop = asyncio.get_running_loop()
        self._task = self._loop.create_task(self._flusher(), name="cluster-flusher")
        if not self._link.cluster:
            self._link.riders.append(self._ride)
        self._task.add_done_callback(lambda _task: self._wake())

    async def aclose(self) -> None:
        """Send what is buffered, then stop the flusher.

        Raises:
            StoreError: the last flush failed.
        """
        await self.drain()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        fail_pulls(self._buf, StoreError("cluster store: closed"))
        self._check()

    async def room(self) -> bool:
        """Wait while ``MAX_PENDING`` ops are buffered; ``True`` if it waited.

        Raises:
            StoreError: see the class.
        """
        self._check()
        if self._buf.ops < MAX_PENDING:
            return False
        await self.drain()
        return True

    async def drain(self) -> None:
        """Wait until everything written before the call was sent (or the flusher
        failed); writes made meanwhile are not waited for (under load the buffer is
        never empty).

        Raises:
            StoreError: the flusher has stopped (``aclose``, or its task was
                cancelled) with writes of the call's not sent.
        """
        if self._buf.ops:
            target = self._buf.serial
        elif self._sending is not None:
            target = self._sending.serial
        else:
            return
        if self._task is None or self._task.done():
            self._stopped(target)
        self._urgent.set()
        self._kick.set()
        waiter = asyncio.get_running_loop().create_future()
        self._drains.append((target, waiter))
        await waiter
        if self._done < target and self._failure is None:
            self._stopped(target)

    def _stopped(self, target: int) -> NoReturn:
        """Raise: buffers up to ``target`` will never be sent (no flusher runs); the
        failure that stopped the flusher, if one did."""
        self._check()
        raise StoreError(
            f"cluster store: the flusher has stopped with {target - self._done} "
            "buffer(s) of writes not sent"
        )

    def _wake(self) -> None:
        """Resolve the drains whose buffers were sent, and all of them once the
        flusher failed or stopped (nothing else will wake them)."""
        over = self._failure is not None or self._task is None or self._task.done()
        waiting: list[tuple[int, asyncio.Future[None]]] = []
        for target, waiter in self._drains:
            if over or self._done >= target:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                waiting.append((target, waiter))
        self._drains = waiting

    def _check(self) -> None:
        if self._failure is not None:
            raise self._failure

    # -------------------------------------------------------------- writes

    def enqueue_urls(self, rows: Sequence[FrontierRow]) -> None:
        """Queue new frontier rows (the seeds): to their hosts' queues and, as an op,
        to the crawl file's ``frontier`` table."""
        self._check()
        if not rows:
            return
        self._push(rows, credit=False)

    def record_page(
        self,
        page: PageRecord,
        *,
        key: str,
        links: Sequence[tuple[str, str]],
        new_rows: Sequence[FrontierRow],
        state: Literal["done", "failed", "queued"],
        next_url: str | None = None,
        next_host: str | None = None,
        redirects: Sequence[str] = (),
        anchors: Mapping[str, str] | None = None,
    ) -> None:
        """A fetched page (``Store.record_page``, its links' ``anchors`` with it): its
        new rows are pushed (their ``frontier`` rows go to the file with the push, not
        with the page, so a page refused by the fence leaves no URL it queued without
        its row), the page is committed under its host's lease and its URL
        acknowledged unless its redirect chain goes on (``queued``). Under ``opic`` a
        new row whose URL another worker queued first gives it its cash (``PUSH``)."""
        self._check()
        self._push(new_rows, credit=True)
        op = wire.op_record_page(
            page, key=key, links=links, new_rows=(), state=state,
            next_url=next_url, next_host=next_host, redirects=redirects, anchors=anchors,
        )  # fmt: skip
        commit = self._op(page.host, op, ack=key if state != "queued" else None)
        if commit is not None:
            commit.last = page.fetched_at
            commit.pages["pages"] += 1
            commit.pages["bytes"] += page.bytes
            commit.pages[status_class(page.status)] += 1

    def fail_urls(self, urls: Sequence[tuple[str, str]], error: str) -> None:
        """Hops of a redirect chain failed with ``error`` (``Store.fail_urls``)."""
        self._check()
        if urls:
            self._op(self._host_of(urls[0][0], urls[0][1]), wire.op_fail_urls(urls, error))

    def add_scores(self, scores: Sequence[tuple[str, float]]) -> None:
        """Add OPIC cash to URLs this worker sent to Redis before (``Store.add_scores``;
        ``(dedupe key, cash)`` pairs, cash a share of a page's, issue #15): sent with the
        next flush's ``PUSH`` of the URL's shard, no round trip of its own. A URL
        queued there gets the cash and moves up to its cash band (at its tail); a URL
        handed out to its host's owner keeps it in its entry, for the host's next
        owner, and the owner, if not this worker, gets it with its next renewal
        (``held_credits``); the cash of a URL fetched already is lost, as in the
        single process (``Store.add_scores`` adds to waiting rows only). Nothing under
        another ordering (``cash_queues`` 0).

        Raises:
            StoreError: see the class.
        """
        self._check()
        if not self._cash_queues or not scores:
            return
        credits = self._buf.credits
        for key, cash in scores:
            host = urls.host_key(key)
            credits[shard_of(host)][host].append([str(seen_member(key)), path_prefix(key), cash])
        self._buf.ops += len(scores)
        self._wrote()

    def record_blocked(self, rec: BlockedRecord) -> None:
        """A refused URL (``Store.record_blocked``): fenced when its host is this
        worker's, else unfenced (a link found here to another worker's host)."""
        self._check()
        commit = self._op(rec.host, wire.op_record_blocked(rec), must_own=False)
        if commit is not None:
            commit.blocked[rec.reason] += 1

    def mark(
        self,
        key: str,
        state: FrontierState,
        *,
        attempts: int | None = None,
        available_at: float | None = None,
    ) -> None:
        """A frontier row's new state (``Store.mark``); a URL that will not be tried
        again this run (``blocked``, ``failed``, ``done``) is acknowledged."""
        self._check()
        host = self._held.get(key)
        if host is None:
            return  # not a URL this worker holds: nothing it may change
        ack = key if state in ("blocked", "failed", "done") else None
        self._op(host, wire.op_mark(key, state, attempts, available_at), ack=ack)

    def upsert_host(self, rec: HostRecord) -> None:
        """A host's saved state (``Store.upsert_host``): also kept in its ``:st`` for the
        next owner."""
        self._check()
        commit = self._op(rec.host, wire.op_upsert_host(rec))
        if commit is not None:
            commit.rec = json.dumps(wire.values(rec), separators=(",", ":"))

    def record_sitemap(self, rec: SitemapRecord, entries: Sequence[SitemapUrlRecord]) -> None:
        """A sitemap read (``Store.record_sitemap``): fenced when its host is this
        worker's, else unfenced (a sitemap on another host, named by a robots.txt)."""
        self._check()
        self._op(rec.host, wire.op_record_sitemap(rec, entries), must_own=False)

    def save_robots(self, view: RobotsEntry) -> None:
        """Keep a robots.txt entry this worker fetched in Redis for its TTL, for the
        host's next owner (one fetch per host per TTL for the whole crawl)."""
        ttl_ms = int((view.expires_at - self._clock()) * 1000)
        if ttl_ms <= 0 or self._failure is not None:
            return
        host = urls.host_key(view.origin)
        if self._leases.epoch(host) is None:
            return  # not ours: the owner keeps it
        commit = self._commit(host, self._leases.epoch(host) or 0)
        commit.robots = (encode_robots(view), ttl_ms)
        self._kick.set()

    def pages_added(self) -> dict[str, int]:
        """Pages, bytes and status classes this worker committed (accepted by Redis)."""
        return dict(self._pages)

    def blocked_added(self) -> dict[str, int]:
        """Refused URLs this worker committed, by reason."""
        return dict(self._blocked)

    # ------------------------------------------------------------ reads

    def roles(self) -> StoreRoles:
        """The optional roles a worker's store plays (``core.protocols.StoreRoles``):
        the OPIC cash sink under a cash ordering (``cash_queues``), and ``warc_home``
        when the worker writes WARC files. No run log (the crawl's runs are its
        coordinator's rows), no key store (Redis's seen set decides at push time), no
        score keeper (every credit goes to Redis) and no history of its own."""
        return StoreRoles(cash=self if self._cash_queues else None, warc_home=self.warc_home)

    async def read_spilled(
        self, host: str, after: int, limit: int, *, within_s: float = 0.0
    ) -> tuple[list[FrontierRow], int]:
        """``core.protocols.SpillStore.read_spilled``: ``pull`` (Redis keeps no
        read-back positions: ``after`` comes back as it was given).

        Raises:
            StoreError: see the class.
        """
        return await self.pull(host, limit, within_s=within_s), after

    async def pull(self, host: str, limit: int, *, within_s: float = 0.0) -> list[FrontierRow]:
        """Move up to ``limit`` URLs of ``host`` from its queue to this worker (``:inf``),
        in the next flush's pipeline, after its pushes: the URLs buffered before the
        call are in the queue it reads. The pipeline goes at once, unless ``within_s``
        (s) is at least ``LINGER_S``: then it may wait ``LINGER_S`` for more writes and
        reads (the frontier window's read of a host busy with a fetch, whose next URL
        is not due before the host's politeness delay; issue #23 item 3).

        Raises:
            StoreError: see the class.
        """
        self._check()
        epoch = self._leases.epoch(host)
        if epoch is None or limit <= 0:
            return []
        if self._task is None or self._task.done():
            self._stopped(self._buf.serial)
        reply_to: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._buf.pulls.append(Pull(host, epoch, limit, reply_to))
        if within_s >= LINGER_S:
            self._kick.set()
        else:
            self._hurry()
        reply = await reply_to
        if reply is None:
            self._leases.lose(host)
            return []
        entries, _left = reply
        rows: list[FrontierRow] = []
        held = self._by_host[host]
        for text in entries:
            e = decode_entry(text, host)
            self._held[e.key] = host
            self._member_keys[str(seen_member(e.key))] = e.key
            held.add(e.key)
            rows.append(
                FrontierRow(e.key, e.url, host, e.depth, e.priority, "queued", 0.0,
                            e.attempts, e.redirects, e.via, e.score, e.inlinks)
            )  # fmt: skip
        self._pulled += len(rows)
        return rows

    def has_pending(self, host: str) -> bool:
        """Whether a write about ``host`` is buffered or being sent."""
        return any(buf.has_host(host) for buf in (self._buf, self._sending) if buf is not None)

    def forget_host(self, host: str) -> None:
        """``host`` is no longer this worker's: forget the URLs it held of it."""
        for key in self._by_host.pop(host, ()):
            self._held.pop(key, None)
            self._member_keys.pop(str(seen_member(key)), None)

    def held_credits(self, flat: Sequence[bytes | str]) -> list[tuple[str, float]]:
        """The ``(dedupe key, cash)`` pairs of ``RENEW``'s credits for a host, ``flat``
        ``[member, cash, ...]`` (cash as Redis writes a float): OPIC shares other
        workers' pages gave to URLs this worker holds (issue #15), for its window's
        ``credit``. A member it no longer holds is left out."""
        keys = self._member_keys
        pairs: list[tuple[str, float]] = []
        for i in range(0, len(flat) - 1, 2):
            key = keys.get(_text(flat[i]))
            if key is not None:
                pairs.append((key, float(flat[i + 1])))
        return pairs

    # ------------------------------------------------------------- buffer

    def _host_of(self, key: str, url: str) -> str:
        """The host of a held ``key``, else of ``url``."""
        host = self._held.get(key)
        if host is not None:
            return host
        return urls.host_key(url)

    def _push(self, rows: Sequence[FrontierRow], *, credit: bool) -> None:
        """Buffer ``rows`` for ``PUSH`` and their ``enqueue_urls`` op; ``credit``: a row
        whose URL is queued already gives it its cash (a page's links; not the seeds,
        which every worker pushes)."""
        if not rows:
            return
        now_ms = int(self._clock() * 1000)
        pushes = self._buf.pushes
        give = credit and self._cash_queues > 0
        for row in rows:
            pushes[shard_of(row.host)][row.host].append(
                [str(seen_member(row.key)), str(score(row.priority, now_ms)),
                 path_prefix(row.url), encode_row(row), row.score if give else -1]
            )  # fmt: skip
        by_host: dict[str, list[FrontierRow]] = defaultdict(list)
        for row in rows:
            by_host[row.host].append(row)
        for host, group in by_host.items():
            self._op(host, wire.op_enqueue(group), must_own=False, unfenced=True)
        self._pushed += len(rows)
        self._buf.ops += len(rows)
        self._wrote()

    def _op(
        self,
        host: str,
        op: list[Any],
        *,
        ack: str | None = None,
        must_own: bool = True,
        unfenced: bool = False,
    ) -> Commit | None:
        """Buffer ``op`` about ``host``: fenced by its epoch while this worker owns it;
        else dropped (``must_own``: the page, host and URL-state ops, which only the
        host's owner writes) or unfenced (refusals; frontier rows, always unfenced so
        that they can be sent again after a Redis restart, see ``flush.Replay``)."""
        epoch = None if unfenced else self._leases.epoch(host)
        if epoch is None:
            if must_own:
                self._dropped += 1
                return None
            epoch = 0
        commit = self._commit(host, epoch)
        commit.ops.append(op)
        if ack is not None and epoch:
            member = str(seen_member(ack))
            commit.acks.append(member)
            self._member_keys.pop(member, None)
            self._held.pop(ack, None)
            self._by_host[host].discard(ack)
        self._buf.ops += 1
        self._wrote()
        return commit

    def _hurry(self) -> None:
        """Have the flusher send now."""
        self._urgent.set()
        self._kick.set()

    def _wrote(self) -> None:
        """Wake the flusher for a write; at ``FLUSH_OPS`` ops it sends without waiting."""
        if self._buf.ops >= FLUSH_OPS:
            self._urgent.set()
        self._kick.set()

    def _commit(self, host: str, epoch: int) -> Commit:
        """The buffered commit of ``host`` under ``epoch``."""
        commits = self._buf.commits[shard_of(host)]
        commit = commits.get((host, epoch))
        if commit is None:
            commit = commits[(host, epoch)] = Commit()
        return commit

    # ------------------------------------------------------------ flusher

    async def _flusher(self) -> None:
        """Send the buffer whenever it has writes or reads, one buffer at a time, in
        order: ``LINGER_S`` after the first write unless it is urgent (``_urgent``),
        or as soon as another round trip of the worker's goes (``_ride``)."""
        while self._failure is None:
            await self._kick.wait()
            self._kick.clear()
            if not self._urgent.is_set() and self._riding is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._urgent.wait(), LINGER_S)
            self._urgent.clear()
            try:
                while self._riding is not None or self._buf.ops or self._buf.pulls:
                    if self._riding is not None:
                        buf, sent, future = self._riding
                        replies = await future
                    else:
                        buf = self._buf
                        self._buf = Buffer(serial=buf.serial + 1)
                        self._sending = buf
                        sent = self._prepare(buf)
                        replies = await deliver(self._link, sent)
                    self._riding = None
                    self._settle(buf, sent, replies)
                    self._sending = None
                    self._done = buf.serial
                    self._wake()
            except CrawldeckError as exc:
                self._failure = StoreError(f"cluster store: {exc}")
            except Exception as exc:  # a bug: fail the store (the engine stops), never spin
                log.exception("cluster store: flush failed")
                self._failure = StoreError(f"cluster store: flush failed: {exc!r}")
            if self._failure is not None:
                for pending in (self._sending, self._buf):
                    if pending is not None:
                        fail_pulls(pending, self._failure)
                self._wake()

    def _ride(self) -> None:
        """A pipeline of the worker's is about to go (``RedisLink.riders``): put the
        buffer in it when the flusher is waiting (not sending) and it has writes, so
        they need no round trip of their own."""
        buf = self._buf
        if self._sending is not None or self._failure is not None or not (buf.ops or buf.pulls):
            return
        if self._task is None or self._task.done():
            return
        self._buf = Buffer(serial=buf.serial + 1)
        self._sending = buf
        sent = self._prepare(buf)
        future = self._link.join(
            sent.replay + sent.pushes + sent.commits + sent.counted + sent.reads
        )
        self._riding = (buf, sent, future)
        self._urgent.set()
        self._kick.set()

    def _prepare(self, buf: Buffer) -> Sent:
        """One flush's commands (``Planner.plan``); first, after Redis came back from
        an outage, what ``flush.Replay`` sends again."""
        sent, again = self._planner.plan(buf, self._clock())
        sent.replay = self._replay.again(again, self._link.outages)
        return sent

    def _settle(self, buf: Buffer, sent: Sent, replies: list[Any]) -> None:
        """Take a flush's ``replies`` (``flush.unpack``): the reads' rows to their
        callers, the counts, the fenced."""
        pushed, committed, total = unpack(buf, sent, replies, replayed=not self._link.cluster)
        cap = self._cap
        if total is not None and cap is not None and total >= cap and self.on_cap is not None:
            self.on_cap()
        self._flushes += 1
        credited = self._credited
        for reply in pushed:
            for _host, added, queued, out, lost in reply:
                self._queued += int(added)
                credited[0] += int(lost)
                credited[1] += int(queued)
                credited[2] += int(out)
        for group, refused_hosts in zip(sent.order, committed, strict=True):
            refused = {_text(h) for h in refused_hosts}
            for (host, _epoch), commit in group:
                if host in refused:
                    self._fenced += len(commit.ops)
                    self.on_fenced(host)
                    continue
                self._committed += len(commit.ops)
                self._pages.update(commit.pages)
                self._blocked.update(commit.blocked)

    def statistics(self) -> ClusterStoreStatistics:
        """The store's figures now."""
        return ClusterStoreStatistics(
            self._flushes, self._pushed, self._queued, self._committed, self._fenced,
            self._dropped, self._pulled, self._replay.replayed, self._credited[1],
            self._credited[2], self._credited[0],
        )  # fmt: skip


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


__all__ = [
    "FLUSH_OPS",
    "MAX_PENDING",
    "ClusterStore",
    "ClusterStoreStatistics",
]
