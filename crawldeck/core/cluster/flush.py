"""What one flush of a cluster worker's store sends to Redis, and how its replies line up.

A ``core.cluster.store.ClusterStore`` buffers every write (``Buffer``: pushes, OPIC
credits, commits by host and epoch, and the reads of queued URLs waiting for it) and its
flusher sends each buffer as one pipeline. This module holds that pipeline's form, apart
from the store's calls and bookkeeping (issue #24 item 2: ``store.py`` had grown past 800
lines): the buffered records, ``Planner`` (a buffer to its commands, in the order they go:
``PUSH`` per shard, ``COMMIT`` per shard and fence, the pages' ``INCRBY``, the ``PULL``
reads), ``deliver`` (one round trip; two on Redis Cluster, three with a replay),
``unpack`` (the replies, by that same order) and ``Replay`` (what is sent again after a
Redis outage).

A flush's steps, in order (the reads of queued URLs come after them, so they see the
URLs just sent):

1. the URLs found (frontier rows) go to their hosts' queues through ``push``: the
   host's seen set decides, atomically, which are new for the whole crawl; a host
   without an owner becomes claimable. Under ``opic`` the same call makes the OPIC
   credits (issue #15): a row whose URL Redis has seen already gives its cash to that
   URL, and so does each ``add_scores`` pair (a URL this worker sent before); the URL
   moves up to its new cash band in its queue (``scripts.PUSH``);
2. then the results go through ``commit``, per host: the host's lease epoch is checked
   (fencing), the URLs done are dropped from ``:inf``, the host's state saved, and the
   ops (``core.cluster.wire``) appended to the shard's stream, which the collector
   writes to the crawl's one SQLite file.

The order matters when a worker dies: a page's outlinks are queued before the page is
acknowledged, so a kill loses neither (on Redis Cluster the two steps are two round
trips, as one pipeline's nodes are not ordered).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from crawldeck.core.cluster import wire
from crawldeck.core.cluster.keys import Keyspace, shard_of
from crawldeck.core.cluster.link import Command, RedisLink
from crawldeck.core.errors import StoreError

#: Seconds of pushes and unfenced commits kept to be sent again after an outage (more
#: than what ``appendfsync everysec`` may lose: about one second, two at worst).
REPLAY_S = 3.0


@dataclass(slots=True)
class Commit:
    """What one flush commits for one host under one epoch (0: unfenced): the seen
    members acknowledged (``acks``), the last request's start (``last``, epoch s), the
    host's state as JSON (``rec``), a robots.txt entry to keep (``robots``), the ops
    (``core.cluster.wire``) and the counters it adds (``pages``, ``blocked``)."""

    acks: list[str] = field(default_factory=list)
    last: float | None = None
    rec: str | None = None
    robots: tuple[str, int] | None = None  # the entry as JSON, its TTL in ms
    ops: list[list[Any]] = field(default_factory=list)
    pages: Counter[str] = field(default_factory=Counter)
    blocked: Counter[str] = field(default_factory=Counter)


@dataclass(slots=True)
class Pull:
    """A read of queued URLs waiting for its flush: ``host`` under lease ``epoch``, at
    most ``limit`` URLs, its reply (``PULL``'s) set on ``reply``."""

    host: str
    epoch: int
    limit: int
    reply: asyncio.Future[Any]


@dataclass(slots=True)
class Buffer:
    """One flush: pushes and credits by shard and host, commits by shard and ``(host,
    epoch)``, and the reads (``pulls``) sent after them; ``ops`` the writes buffered,
    ``serial`` its place in the order buffers are sent (from 1)."""

    pushes: dict[int, dict[str, list[list[Any]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    credits: dict[int, dict[str, list[list[Any]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    commits: dict[int, dict[tuple[str, int], Commit]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    pulls: list[Pull] = field(default_factory=list)
    ops: int = 0
    serial: int = 1  # buffers are sent in serial order

    def has_host(self, host: str) -> bool:
        """Whether a push or a commit about ``host`` is in the buffer."""
        return host in self.pushes.get(shard_of(host), ()) or any(
            h == host for h, _e in self.commits.get(shard_of(host), ())
        )


@dataclass(slots=True)
class Sent:
    """A flush's commands, in the order they go: ``replay`` (``Replay``), ``pushes``,
    ``commits`` (with ``order``, the hosts of each), ``counted`` (the pages' count)
    and ``reads`` (the pulls)."""

    replay: list[Command] = field(default_factory=list)
    pushes: list[Command] = field(default_factory=list)
    commits: list[Command] = field(default_factory=list)
    order: list[list[tuple[tuple[str, int], Commit]]] = field(default_factory=list)
    counted: list[Command] = field(default_factory=list)
    reads: list[Command] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Planner:
    """Turns a worker's buffers into their commands (``plan``).

    Args:
        keys: the crawl's key layout.
        worker: this worker's id.
        hot_queue: queued URLs past which a host's new URLs go to path-prefix
            sub-queues (``cluster_hot_queue``).
        cash_queues: the front queues of the crawl's cash ordering; 0: no credits.
        inlinks: ``"1"`` when the cash bands are those of cash and in-links
            (``opic-inlinks``), else ``"0"``.
        count_pages: add each flush's pages to the crawl's count (``Keyspace.pages``:
            the crawl has a page cap).
    """

    keys: Keyspace
    worker: str
    hot_queue: int
    cash_queues: int
    inlinks: str
    count_pages: bool

    def plan(self, buf: Buffer, now: float) -> tuple[Sent, list[Command]]:
        """One flush's commands at ``now`` (epoch s): pushes, then commits (see
        ``core.cluster.store``), the pages' count, then the reads; ``replay`` left
        empty. With them, what may be sent twice after an outage (``Replay.again``):
        the pushes, without their credits, and the unfenced commits."""
        k = self.keys
        now_ms = int(now * 1000)
        sent = Sent()
        again: list[Command] = []  # what may be sent twice: pushes and unfenced commits
        for shard in buf.pushes.keys() | buf.credits.keys():
            rows, credits = buf.pushes.get(shard, {}), buf.credits.get(shard, {})
            arg = json.dumps(
                [[h, rows.get(h, []), credits.get(h, [])] for h in rows.keys() | credits.keys()],
                separators=(",", ":"),
            )
            head: list[Any] = [k.tag(shard), arg, self.hot_queue, now, now_ms]
            sent.pushes.append(
                ("script", "push", [k.stream(shard)],
                 [*head, self.cash_queues, self.worker, self.inlinks])
            )  # fmt: skip
            again.append(  # no credit twice
                ("script", "push", [k.stream(shard)], [*head, 0, self.worker, self.inlinks])
            )
        for shard, by_host in buf.commits.items():
            fenced = [item for item in by_host.items() if item[0][1] != 0]
            free = [item for item in by_host.items() if item[0][1] == 0]
            for group in (fenced, free):
                if group:
                    command = self.commit_command(shard, group)
                    sent.commits.append(command)
                    sent.order.append(group)
                    if group is free:
                        again.append(command)
        pages = sum(c.pages["pages"] for group in sent.order for _k, c in group)
        if pages and self.count_pages:
            sent.counted.append(("INCRBY", k.pages, pages))
        sent.reads = [
            ("script", "pull", [k.stream(shard_of(p.host))],
             [k.tag(shard_of(p.host)), self.worker, json.dumps([p.host, p.epoch, p.limit])])
            for p in buf.pulls
        ]  # fmt: skip
        return sent, again

    def commit_command(self, shard: int, group: list[tuple[tuple[str, int], Commit]]) -> Command:
        """The ``COMMIT`` call of ``group``'s hosts of ``shard``."""
        payload = [
            [host, epoch, c.acks, c.last if c.last is not None else False,
             c.rec if c.rec is not None else False, wire.encode_ops(c.ops),
             c.robots[0] if c.robots else False, c.robots[1] if c.robots else 0, counts(c)]
            for (host, epoch), c in group
        ]  # fmt: skip
        arg = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        k = self.keys
        cash = "1" if self.cash_queues else "0"
        return ("script", "commit", [k.stream(shard)], [k.tag(shard), self.worker, arg, cash])


def counts(commit: Commit) -> dict[str, int]:
    """What ``commit`` adds to the crawl's counters in Redis (``COMMIT``'s ``counts``)."""
    found = {k: v for k, v in commit.pages.items() if v}
    found.update((f"blocked:{reason}", n) for reason, n in commit.blocked.items() if n)
    return found


async def deliver(link: RedisLink, sent: Sent) -> list[Any]:
    """Send ``sent``'s commands over ``link``; the replies of all but the replayed ones
    on Redis Cluster, of all of them on a single Redis (``unpack`` takes either). On
    Redis Cluster the replay, the pushes and the rest are three round trips (its
    pipelines are not ordered across nodes).

    Raises:
        CrawldeckError: from ``RedisLink`` (Redis gone past its outage time).
    """
    if link.cluster:
        if sent.replay:
            await link.batch(sent.replay)
        replies = await link.batch(sent.pushes)
        return replies + await link.batch(sent.commits + sent.counted + sent.reads)
    return await link.send(sent.replay + sent.pushes + sent.commits + sent.counted + sent.reads)


def unpack(
    buf: Buffer, sent: Sent, replies: list[Any], *, replayed: bool
) -> tuple[list[Any], list[Any], int | None]:
    """Take a flush's ``replies`` (``sent``'s commands, the replayed ones first when
    ``replayed``: ``deliver`` on a single Redis): the reads' replies go to their pulls
    (``buf.pulls``, a pull already done is left alone). Returns the ``PUSH`` replies
    (one a shard), the ``COMMIT`` replies (one a group of ``sent.order``: the refused
    hosts) and the crawl's page count after the flush (``None``: not counted)."""
    if replayed:
        replies = replies[len(sent.replay) :]
    reads = len(sent.reads)
    for pull, reply in zip(buf.pulls, replies[len(replies) - reads :], strict=True):
        if not pull.reply.done():
            pull.reply.set_result(reply)
    del replies[len(replies) - reads :]
    total = int(replies.pop()) if sent.counted else None
    pushes = len(sent.pushes)
    return replies[:pushes], replies[pushes:], total


def fail_pulls(buf: Buffer, error: StoreError) -> None:
    """Raise ``error`` in the reads of ``buf`` still waiting."""
    for pull in buf.pulls:
        if not pull.reply.done():
            pull.reply.set_exception(error)


class Replay:
    """The pushes and unfenced commits of the last ``REPLAY_S``, sent again after an
    outage (``again``).

    Attributes:
        replayed: the commands sent again so far.
    """

    def __init__(self) -> None:
        self._recent: deque[tuple[float, list[Command]]] = deque()  # (monotonic s, sent)
        self._outages = 0
        self.replayed = 0

    def again(self, sent: list[Command], outages: int) -> list[Command]:
        """Keep ``sent`` for ``REPLAY_S`` and return what to send again first: after
        Redis came back from an outage (``outages``, ``RedisLink.outages``, grew: a
        restart from an append-only file written with ``appendfsync everysec`` lacks
        up to its last second or two), the pushes and unfenced commits (frontier rows,
        refusals) of the ``REPLAY_S`` before it. Both are safe twice (the seen set,
        INSERT OR IGNORE); what a fenced commit acknowledged and a restart lost goes
        back to its queue and is fetched again. The pushes go again without their OPIC
        credits (a credit twice would add its cash twice): the credits a restart lost
        are lost."""
        recent = self._recent
        again: list[Command] = []
        if outages != self._outages:
            self._outages = outages
            again = [command for _at, batch in recent for command in batch]
            self.replayed += len(again)
        # real time: the window is what a restarted Redis (another process, its
        # appendfsync once a second) may have lost, whatever the loop's clock does
        recent.append((time.monotonic(), sent))
        while recent and recent[0][0] < recent[-1][0] - REPLAY_S:
            recent.popleft()
        return again


__all__ = [
    "REPLAY_S",
    "Buffer",
    "Commit",
    "Planner",
    "Pull",
    "Replay",
    "Sent",
    "counts",
    "deliver",
    "fail_pulls",
    "unpack",
]
