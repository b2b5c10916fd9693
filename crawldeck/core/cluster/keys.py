"""The key layout of a cluster crawl in Redis (issue #12), and the forms of what it keeps:
a frontier entry, a robots.txt entry, a URL's path prefix.

Every key of crawl ``C`` starts with ``cd:``. Hosts are spread over ``SHARDS`` shards by
CRC-32 of the host key; every key of one host, and its shard's result stream, carry the
shard's hash tag ``{C:NN}``, so one Lua script can check a host's lease epoch, take its
URLs and append its results atomically on Redis Cluster too (a script may only touch
keys of one hash slot: "Redis cluster specification", *Hash tags*). The shards spread
the hosts over the cluster's nodes (64 tags over 3 masters: about 21 each).

Per host ``H`` (base ``cd:{C:NN}:h:H``):

* ``:q``   sorted set, the queued URLs by their seen member (``seen_member``, in
  decimal); score ``priority * 10^13 + push time in ms``, so front queue first, then
  first in first out. A hot host's queue is split into path-prefix sub-queues
  ``:q:P`` listed in ``:subs`` (hot spot rule of the design card; ``P`` is
  ``path_prefix``).
* ``:e``   hash seen member -> entry (``encode_entry``) of every URL in ``:q`` or a
  sub-queue: a member's entry can be found, and its OPIC cash raised, without knowing
  where it was pushed from (issue #15).
* ``:inf`` hash seen member -> entry: URLs handed to the host's owner and not yet
  done; they go back to ``:q`` (head of their priority) when the owner releases the
  host or dies.
* ``:cr``  hash seen member -> cash: OPIC credits other workers made to URLs in
  ``:inf``, for the owner to add to its copies in memory (its next renewal takes
  them).
* ``:seen`` set of 63-bit integers, the dedupe keys ever admitted for the host
  (``seen_member``); small sets stay intsets (8 bytes a member).
* ``:lease`` ``"<worker> <epoch>"`` with a TTL (``PX``): the host's owner.
* ``:ep``  the lease epoch, incremented on every claim: the fencing token.
* ``:st``  hash: ``rec`` the host's saved state (a ``HostRecord`` as JSON), ``last``
  the last request's start (epoch s), ``clean`` 1 when the last owner released it,
  ``pages`` the pages committed for the host under every lease.
* ``:robots`` the host's robots.txt as the cache keeps it (``encode_robots``), with its
  TTL.

Per shard (tagged too): ``cd:{C:NN}:out`` the result stream (entries ``w`` worker,
``h`` host, ``e`` epoch, ``m`` the ops, ``core.cluster.wire``); ``:ready`` sorted set
host -> epoch s from which it may be claimed (hosts with URLs and no owner); ``:owned``
sorted set host -> lease deadline in epoch ms (the reaper's list). Keeping them in the
shard's slot lets the scripts move a host between "claimable", "owned" and "recovered"
atomically: no crash between two commands can leave a host with URLs but in neither.

Per crawl, untagged (one key each): ``cd:C:pages`` the pages sent for commit, all runs
(what ``max_pages`` counts); ``cd:C:workers`` hash worker -> heartbeat JSON;
``cd:C:ctl`` hash (``state``: ``running``/``paused``/``stopping``); ``cd:C:config`` the
crawl's config (JSON); ``cd:C:seeds`` list of seed URLs (workers admit each in order);
``cd:{C:ip:A}`` the next time (epoch s) address ``A`` may be sent a request and
``cd:{C:ip:A}:busy`` the booked request whose end is not known yet (per-IP politeness
across workers, ``core.cluster.addresses``).
"""

from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import dataclass, fields
from typing import Any, Final

from crawldeck.core.errors import CrawldeckError
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.robots import RobotsEntry
from crawldeck.core.records import FrontierRow

#: Shards (hash tags) the hosts are spread over.
SHARDS: Final = 64
#: The score of a queued URL: ``priority * PRIORITY_SPAN + push time in ms``.
PRIORITY_SPAN: Final = 10**13
#: The longest path prefix (characters) naming a hot host's sub-queue.
PREFIX_CHARS = 40


class KeyspaceError(CrawldeckError):
    """A crawl id that cannot name keys (empty, too long, or with ``{}`` or spaces)."""


def check_crawl_id(crawl_id: str) -> str:
    """``crawl_id`` if it can be part of every key: 1-64 characters of letters,
    digits, ``-``, ``_`` and ``.``.

    Raises:
        KeyspaceError: with a one-line reason.
    """
    ok = 0 < len(crawl_id) <= 64 and all(c.isalnum() or c in "-_." for c in crawl_id)
    if not ok or not crawl_id.isascii():
        raise KeyspaceError(f"crawl id {crawl_id!r}: use 1-64 letters, digits, '-', '_' or '.'")
    return crawl_id


def shard_of(host: str) -> int:
    """The shard of ``host`` (CRC-32 of its key, modulo ``SHARDS``)."""
    return zlib.crc32(host.encode("utf-8", "surrogatepass")) % SHARDS


def seen_member(key: str) -> int:
    """The seen set's member for dedupe key ``key``: its BLAKE2b digest cut to 63 bits
    (a positive signed 64-bit integer, so small sets stay Redis intsets). Two keys of
    one host collide with probability about ``n^2 / 2^64`` for ``n`` keys."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


@dataclass(frozen=True, slots=True)
class Keyspace:
    """The keys of crawl ``crawl_id`` (see the module).

    Raises:
        KeyspaceError: from ``check_crawl_id``.
    """

    crawl_id: str

    def __post_init__(self) -> None:
        check_crawl_id(self.crawl_id)

    def tag(self, shard: int) -> str:
        """The hash-tagged prefix of ``shard``'s keys."""
        return f"cd:{{{self.crawl_id}:{shard:02d}}}"

    def host(self, host: str) -> str:
        """The base key of ``host`` (its keys append ``:q``, ``:inf`` ...)."""
        return f"{self.tag(shard_of(host))}:h:{host}"

    def stream(self, shard: int) -> str:
        """The result stream of ``shard``."""
        return f"{self.tag(shard)}:out"

    def streams(self) -> list[str]:
        """Every shard's result stream, by shard."""
        return [self.stream(s) for s in range(SHARDS)]

    def _g(self, name: str) -> str:
        return f"cd:{self.crawl_id}:{name}"

    @property
    def pages(self) -> str:
        """Pages sent for commit over the whole crawl, all runs (the ``max_pages`` count)."""
        return self._g("pages")

    @property
    def workers(self) -> str:
        """The heartbeats: worker id -> JSON."""
        return self._g("workers")

    @property
    def control(self) -> str:
        """The crawl's control hash (``state``)."""
        return self._g("ctl")

    @property
    def config(self) -> str:
        """The crawl's config as JSON."""
        return self._g("config")

    @property
    def seeds(self) -> str:
        """The seed URLs, in the order given."""
        return self._g("seeds")

    def ip_next(self, address: str) -> str:
        """When ``address`` may next be sent a request (epoch s); beside it (same hash
        tag) ``:busy`` marks a booked request whose end is not known yet (its fencing
        token and worker), ``:tok`` counts the tokens and ``:want`` names the worker
        first in line (``core.cluster.scripts.IP_BOOK``)."""
        return f"cd:{{{self.crawl_id}:ip:{address}}}"


def encode_entry(entry: FrontierEntry) -> str:
    """A frontier entry as the JSON array kept in ``:e`` and ``:inf``: ``[url, key,
    depth, attempts, redirects, via, priority, cash, inlinks]``, ``key`` ``null`` when
    it is the URL itself (the host is not kept: it names the keys the entry is in). Its cookies
    are not kept: they live for one redirect chain in one process. The priority, the
    OPIC cash (``score``, ``core.policy.prioritizer``) and the in-links come last, so the
    scripts rewrite them as the text's tail when a credit raises the cash
    (``scripts._CREDIT``, issue #15)."""
    return json.dumps(
        [entry.url, None if entry.key == entry.url else entry.key, entry.depth,
         entry.attempts, list(entry.redirects), entry.via, entry.priority, entry.score,
         entry.inlinks],
        separators=(",", ":"),
        ensure_ascii=False,
    )  # fmt: skip


def encode_row(row: FrontierRow) -> str:
    """``encode_entry`` of the entry of frontier row ``row`` (the same JSON)."""
    return json.dumps(
        [row.url, None if row.key == row.url else row.key, row.depth, row.attempts,
         list(row.redirects), row.via, row.priority, row.score, row.inlinks],
        separators=(",", ":"),
        ensure_ascii=False,
    )  # fmt: skip


def decode_entry(text: str | bytes, host: str) -> FrontierEntry:
    """The frontier entry of ``encode_entry``'s JSON, kept under ``host``'s keys (a
    cash the scripts rewrote is written with 17 significant digits: the same
    ``float``).

    Raises:
        KeyspaceError: not such an array.
    """
    try:
        value: Any = json.loads(text)
        url, key, depth, attempts, hops, via, priority, cash, inlinks = value
        return FrontierEntry(
            str(url), str(url if key is None else key), host, int(depth), int(priority),
            int(attempts), tuple(str(u) for u in hops), None if via is None else str(via),
            score=float(cash), inlinks=int(inlinks),
        )  # fmt: skip
    except (ValueError, TypeError) as exc:
        raise KeyspaceError(f"not a frontier entry: {exc}") from None


def score(priority: int, now_ms: int) -> int:
    """The queue score of a URL of ``priority`` pushed at ``now_ms`` (epoch ms)."""
    return priority * PRIORITY_SPAN + now_ms


def path_prefix(url: str) -> str:
    """The first path segment of ``url``, a cleaned absolute URL (``core.policy.urls.clean``:
    ``http://h/docs/a?q`` -> ``docs``; ``""`` at the root): the sub-queue of a hot host
    it goes to (issue #12 item 5). A split, not a parse: it runs for every URL found."""
    parts = url.split("/", 4)
    if len(parts) < 4:
        return ""
    segment = parts[3]
    for mark in "?#":
        segment = segment.split(mark, 1)[0]
    return segment[:PREFIX_CHARS]


def encode_robots(view: RobotsEntry) -> str:
    """A robots.txt entry as JSON (its fields in order)."""
    return json.dumps([getattr(view, f.name) for f in fields(view)], separators=(",", ":"),
                      ensure_ascii=False)  # fmt: skip


def decode_robots(text: str | bytes) -> RobotsEntry | None:
    """The entry of ``encode_robots``'s JSON; ``None`` if it is not one."""
    try:
        values = json.loads(text)
        names = [f.name for f in fields(RobotsEntry)]
        args = dict(zip(names, values, strict=True))
        args["rules"] = tuple((str(kind), str(pattern)) for kind, pattern in args["rules"])
        return RobotsEntry(**args)
    except (ValueError, TypeError):
        return None


__all__ = [
    "PREFIX_CHARS",
    "PRIORITY_SPAN",
    "SHARDS",
    "Keyspace",
    "KeyspaceError",
    "check_crawl_id",
    "decode_entry",
    "decode_robots",
    "encode_entry",
    "encode_robots",
    "encode_row",
    "path_prefix",
    "score",
    "seen_member",
    "shard_of",
]
