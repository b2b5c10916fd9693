"""The URL frontier: Mercator front and back queues with a ready heap (pure).

No I/O, no clock reads: ``pop`` takes ``now`` (wall-clock epoch seconds, ``float``)
and the engine passes each host's next allowed start to ``release`` (from
``Politeness.earliest``). Design: Heydon & Najork, "Mercator: A scalable, extensible
web crawler" (1999), and Manning et al., *Introduction to Information Retrieval*,
§20.2.3.

Structure::

    add(entry) --> front queue[priority]  (one deque per priority, 0 = highest)
                        |  refill: highest priority first, FIFO within one
                        v
                   back queue[host]       (one deque per host, at most one per host,
                        |                  at most ``max_back_queues`` of them
                        v                  unless ``push_front`` made more)
                   ready heap of (ready_at, seq, host) -> pop(now) -> checked out
                        ^                                                 |
                        +------------------ release(host, at) <----------+

Invariants (checked by ``_check`` in the tests after every operation):

1. A host's back queue is absent or non-empty; ``_nback`` counts the present ones.
2. While ``_nback < max_back_queues`` every front queue is empty: ``add`` puts a URL
   straight into a back queue when its host has one (no slot taken) or a slot is
   free, and every freed slot (a back queue emptied by ``pop``, or ``demote``) is
   refilled at once from the front queues, highest priority first (FIFO within a
   priority): a head URL whose host already has a back queue is appended there
   without taking a slot, and the refill goes on until the head URL needs a slot
   and none is free, or the front queues are empty.
3. A host has exactly one valid heap entry iff it has a back queue and is not checked
   out; its ``ready_at`` is the host's not-before time (``0.0`` until ``release``
   gives one). Stale entries are skipped lazily: an entry is valid iff its ``seq`` is
   the host's current ``seq``. Ties on ``ready_at`` go by ``seq``, i.e. FIFO.
4. ``len(frontier)`` is the number of URLs in front and back queues; a host's
   ``front`` counter is how many of its URLs wait in front queues; ``hosts()`` is the
   number of hosts with at least one queued URL; ``by_priority()[p]`` is the number of
   queued URLs (front and back queues) whose priority, clamped, is ``p``.
5. Per host, URLs are popped in the order they reached its back queue (``push_front``
   puts a URL at its head). While fewer than ``max_back_queues`` hosts have back
   queues, that is exactly the order of ``add``; under slot pressure URLs wait in
   front queues and move over in priority order.

Costs: ``add``, ``push_front``, ``release`` O(log h) (h = heap size), ``pop``
amortized O(log h), ``queued`` and ``__len__`` O(1); one small ``__slots__`` object per
host, one deque per back queue, a pointer per queued URL.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from heapq import heappop, heappush, nsmallest
from itertools import islice


@dataclass(slots=True)
class FrontierEntry:
    """One URL waiting to be fetched.

    Attributes:
        url: the URL to request (``urls.clean``).
        key: its dedupe key (``urls.normalize``).
        host: its host key (``urls.host_key``), the politeness unit.
        depth: links followed from a seed (seed = 0).
        priority: front queue index, 0 = highest; out-of-range values are clamped
            to the nearest queue.
        attempts: tries made so far, all runs (retries after 429/503/timeouts).
        redirects: the URLs requested in the redirect chain that led here (3xx
            Location or meta refresh), oldest first, exactly as sent.
        via: the URL of the page it was found on, or ``None`` for a seed.
        cookies: ``(url, Set-Cookie value)`` of each cookie the chain's responses set,
            oldest first: sent on within this chain only (``core.redirects``), never
            stored.
        spent_s: seconds its tries so far took, this run (a URL's total time is
            bounded, see ``Engine``).
    """

    url: str
    key: str
    host: str
    depth: int
    priority: int
    attempts: int = 0
    redirects: tuple[str, ...] = ()
    via: str | None = None
    cookies: tuple[tuple[str, str], ...] = ()
    spent_s: float = 0.0


class _Host:
    """Frontier state of one host.

    ``back``: its back queue or ``None``; ``front``: its URLs in front queues;
    ``not_before``: ready time for the heap (epoch s); ``out``: checked out by
    ``pop``; ``seq``: seq of its valid heap entry, ``-1`` when not in the heap.
    """

    __slots__ = ("back", "front", "not_before", "out", "seq")

    def __init__(self) -> None:
        self.back: deque[FrontierEntry] | None = None
        self.front = 0
        self.not_before = 0.0
        self.out = False
        self.seq = -1


class Frontier:
    """The crawl frontier: priorities across hosts, one host at a time per back queue.

    Args:
        priorities: number of front queues (priority ``0`` .. ``priorities - 1``,
            ``0`` is the highest), ``>= 1``.
        max_back_queues: back queue slots, i.e. hosts that can be scheduled at once
            (Mercator suggests about three per crawling thread), ``>= 1``.

    Raises:
        ValueError: ``priorities < 1`` or ``max_back_queues < 1``.

    See the module docstring for the invariants. Hosts are host keys
    (``urls.host_key``). Not thread-safe; the engine uses it from one task.
    """

    __slots__ = (
        "_active",
        "_by_priority",
        "_front",
        "_heap",
        "_hosts",
        "_len",
        "_max_back",
        "_nback",
        "_nfront",
        "_seq",
    )

    def __init__(self, priorities: int = 3, max_back_queues: int = 4096) -> None:
        if priorities < 1:
            raise ValueError(f"priorities must be >= 1, got {priorities!r}")
        if max_back_queues < 1:
            raise ValueError(f"max_back_queues must be >= 1, got {max_back_queues!r}")
        self._front: tuple[deque[FrontierEntry], ...] = tuple(deque() for _ in range(priorities))
        self._max_back = max_back_queues
        self._hosts: dict[str, _Host] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._seq = 0
        self._nback = 0  # back queues present
        self._nfront = 0  # URLs in front queues
        self._len = 0  # URLs queued in total
        self._active = 0  # hosts with at least one queued URL
        self._by_priority = [0] * priorities  # queued URLs per clamped priority

    # -- internals -------------------------------------------------------------------

    def _schedule(self, host: str, h: _Host) -> None:
        """Push ``host`` onto the ready heap at its not-before time (new valid entry)."""
        seq = self._seq
        self._seq = seq + 1
        h.seq = seq
        heappush(self._heap, (h.not_before, seq, host))

    def _clamp(self, priority: int) -> int:
        """``priority`` clamped to the front queues' range (0 .. priorities - 1)."""
        return min(max(priority, 0), len(self._front) - 1)

    def _refill(self) -> None:
        """Move front-queue URLs to back queues (invariant 2).

        Repeatedly takes the head of the highest-priority non-empty front queue: if
        its host has a back queue it is appended there (no slot taken); else, if a
        slot is free, it starts a new back queue; else the refill stops.
        """
        hosts = self._hosts
        front = self._front
        while self._nfront:
            for queue in front:
                if queue:
                    break
            entry = queue[0]
            h = hosts[entry.host]
            back = h.back
            if back is None and self._nback >= self._max_back:
                return
            queue.popleft()
            self._nfront -= 1
            h.front -= 1
            if back is not None:
                back.append(entry)
                continue
            h.back = deque((entry,))
            self._nback += 1
            if not h.out:
                self._schedule(entry.host, h)

    # -- public API ------------------------------------------------------------------

    def add(self, entry: FrontierEntry) -> None:
        """Queue a new URL (already admitted and deduplicated by the caller).

        It goes to its host's back queue if the host has one, else to a new back
        queue if a slot is free (the host then enters the heap at its not-before
        time, or 0), else to the front queue of its priority (clamped to range).
        """
        host = entry.host
        h = self._hosts.get(host)
        if h is None:
            h = self._hosts[host] = _Host()
        back = h.back
        if back is not None:
            back.append(entry)
        else:
            if not h.front:
                self._active += 1
            if self._nback < self._max_back:
                h.back = deque((entry,))
                self._nback += 1
                if not h.out:
                    seq = self._seq
                    self._seq = seq + 1
                    h.seq = seq
                    heappush(self._heap, (h.not_before, seq, host))
            else:
                self._front[self._clamp(entry.priority)].append(entry)
                h.front += 1
                self._nfront += 1
        self._len += 1
        self._by_priority[self._clamp(entry.priority)] += 1

    def push_front(self, entry: FrontierEntry) -> None:
        """Put a URL (typically a retry) at the head of its host's back queue.

        Creates the back queue if the host has none, even past ``max_back_queues``
        (a retry never waits behind the front queues).
        """
        host = entry.host
        h = self._hosts.get(host)
        if h is None:
            h = self._hosts[host] = _Host()
        back = h.back
        if back is not None:
            back.appendleft(entry)
        else:
            if not h.front:
                self._active += 1
            h.back = deque((entry,))
            self._nback += 1
            if not h.out:
                self._schedule(host, h)
        self._len += 1
        self._by_priority[self._clamp(entry.priority)] += 1

    def pop(self, now: float) -> FrontierEntry | None:
        """The next URL to fetch at ``now`` (epoch s), or ``None`` if no host is ready.

        Takes the head of the back queue of the host with the smallest ready time
        ``<= now`` (ties: the host that entered the heap first) and checks that host
        out: it gets no other URL until ``release(host, at)``. A back queue emptied
        here frees its slot, which the front queues refill at once.
        """
        heap = self._heap
        hosts = self._hosts
        while heap:
            ready_at, seq, host = heap[0]
            h = hosts[host]
            if h.seq != seq:
                heappop(heap)  # stale (demoted or rescheduled)
                continue
            if ready_at > now:
                return None
            heappop(heap)
            h.seq = -1
            h.out = True
            back = h.back
            assert back is not None  # invariant 3
            entry = back.popleft()
            self._len -= 1
            self._by_priority[self._clamp(entry.priority)] -= 1
            if not back:
                h.back = None
                self._nback -= 1
                if not h.front:
                    self._active -= 1
                if self._nfront:
                    self._refill()
            return entry
        return None

    def release(self, host: str, at: float) -> None:
        """Let ``host`` be popped again from ``at`` on (epoch s, e.g. ``Politeness.earliest``).

        Ends the check-out made by ``pop``. With URLs in its back queue the host
        enters the heap at ``at``; otherwise ``at`` is kept as its not-before time
        and it enters the heap at that time when URLs arrive. Releasing a host that
        is not checked out moves its ready time to ``at``; an unknown host is fine.
        """
        h = self._hosts.get(host)
        if h is None:
            h = self._hosts[host] = _Host()
        h.out = False
        h.not_before = at
        if h.back is not None:
            seq = self._seq
            self._seq = seq + 1
            h.seq = seq  # any older heap entry of this host is now stale
            heappush(self._heap, (at, seq, host))

    def next_ready_at(self) -> float | None:
        """The smallest ready time (epoch s) in the heap, or ``None`` if it is empty.

        ``None`` also when every host with queued URLs is checked out. The value may
        be in the past: then ``pop`` gives a URL now.
        """
        heap = self._heap
        hosts = self._hosts
        while heap:
            ready_at, seq, host = heap[0]
            if hosts[host].seq == seq:
                return ready_at
            heappop(heap)
        return None

    def demote(self, host: str) -> None:
        """Move ``host``'s back-queue URLs, in order, to the lowest-priority front queue.

        For a host in long continuous backoff (``Politeness.should_demote``): its
        slot is freed and refilled from the front queues (highest priority first),
        so other hosts take its place; its URLs come back when the refill reaches
        them. With free slots and nothing else waiting that is at once. Its
        not-before time is kept. A host without a back queue is left as it is.
        """
        h = self._hosts.get(host)
        if h is None or h.back is None:
            return
        back = h.back
        n = len(back)
        self._front[-1].extend(back)
        h.front += n
        self._nfront += n
        h.back = None
        h.seq = -1  # its heap entry, if any, is now stale
        self._nback -= 1
        self._refill()

    def drop_host(self, host: str) -> int:
        """Remove every queued URL of ``host`` (back queue and front queues); how many.

        For a parked host (``Politeness.should_park``): nothing more is fetched from it
        this run, its URLs stay queued in SQLite for the next. Its slot is freed and
        refilled; its check-out and not-before time are kept. O(front queue length)
        when it has URLs in front queues (only under slot pressure), plus O(its back
        queue) for the counts per priority.
        """
        h = self._hosts.get(host)
        if h is None:
            return 0
        dropped = 0
        by_priority = self._by_priority
        if h.front:
            for i, queue in enumerate(self._front):
                kept: deque[FrontierEntry] = deque()
                for entry in queue:
                    if entry.host != host:
                        kept.append(entry)
                    else:
                        by_priority[self._clamp(entry.priority)] -= 1
                dropped += len(queue) - len(kept)
                self._front = (*self._front[:i], kept, *self._front[i + 1 :])
            self._nfront -= h.front
            h.front = 0
        if h.back is not None:
            dropped += len(h.back)
            for entry in h.back:
                by_priority[self._clamp(entry.priority)] -= 1
            h.back = None
            h.seq = -1  # its heap entry, if any, is now stale
            self._nback -= 1
        if dropped:
            self._active -= 1
            self._len -= dropped
            self._refill()
        return dropped

    def __len__(self) -> int:
        """URLs queued (front and back queues; checked-out URLs are not counted)."""
        return self._len

    def by_priority(self) -> tuple[int, ...]:
        """Queued URLs (front and back queues) per priority, index 0 the highest; an
        entry counts at its own priority clamped to the range (``demote`` moves URLs to
        the lowest front queue without changing their priority). O(priorities)."""
        return tuple(self._by_priority)

    def queued(self, host: str) -> int:
        """URLs of ``host`` in front and back queues (0 for an unknown host)."""
        h = self._hosts.get(host)
        if h is None:
            return 0
        back = h.back
        return h.front + (len(back) if back is not None else 0)

    def peek(self, host: str, n: int) -> list[FrontierEntry]:
        """The first ``n`` entries of ``host``'s back queue, next to be fetched first.

        URLs of the host still waiting in front queues (under slot pressure) are not
        shown: finding them would mean scanning every front queue. O(n).
        """
        h = self._hosts.get(host)
        if h is None or h.back is None:
            return []
        return list(islice(h.back, n))

    def soonest(self, n: int) -> list[str]:
        """Up to ``n`` hosts of the ready heap, the soonest ready first (ties FIFO).

        Only hosts with a back queue that are not checked out are in the heap, so this
        costs O(heap size), bounded by the back queue slots, whatever the number of hosts.
        """
        hosts = self._hosts
        valid = (item for item in self._heap if hosts[item[2]].seq == item[1])
        return [host for _, _, host in nsmallest(n, valid)]

    def hosts(self) -> int:
        """The number of hosts with at least one queued URL."""
        return self._active

    def back_queues(self) -> int:
        """The number of back queues (slots in use; may exceed the limit via push_front)."""
        return self._nback

    def _check(self) -> None:
        """Assert every invariant of the module docstring (O(n); for tests)."""
        hosts = self._hosts
        nback = sum(1 for h in hosts.values() if h.back is not None)
        assert nback == self._nback
        assert all(h.back is None or h.back for h in hosts.values())
        nfront = sum(len(q) for q in self._front)
        assert nfront == self._nfront
        if self._nback < self._max_back:
            assert nfront == 0
        counts: dict[str, int] = {}
        for queue in self._front:
            for entry in queue:
                counts[entry.host] = counts.get(entry.host, 0) + 1
        for name, h in hosts.items():
            assert h.front == counts.get(name, 0), name
            if h.back is not None:
                assert all(e.host == name for e in h.back)
        valid = [(r, s, name) for r, s, name in self._heap if hosts[name].seq == s]
        assert len({name for _, _, name in valid}) == len(valid)
        in_heap = {name for _, _, name in valid}
        for name, h in hosts.items():
            should = h.back is not None and not h.out
            assert (name in in_heap) == should, name
            assert (h.seq >= 0) == should, name
        for r, _, name in valid:
            assert r == hosts[name].not_before
        total = nfront + sum(len(h.back) for h in hosts.values() if h.back is not None)
        assert total == self._len
        active = sum(1 for h in hosts.values() if h.front or h.back is not None)
        assert active == self._active
        by_priority = [0] * len(self._front)
        for h in hosts.values():
            for entry in h.back or ():
                by_priority[self._clamp(entry.priority)] += 1
        for queue in self._front:
            for entry in queue:
                by_priority[self._clamp(entry.priority)] += 1
        assert by_priority == self._by_priority


__all__ = ["Frontier", "FrontierEntry"]
