"""The URL frontier: Mercator front and back queues with a ready heap (pure).

No I/O, no clock reads: ``pop`` takes ``now`` (wall-clock epoch seconds, ``float``)
and the engine passes each host's next allowed start to ``release`` (from
``Politeness.earliest``). Design: Heydon & Najork, "Mercator: A scalable, extensible
web crawler" (1999), and Manning et al., *Introduction to Information Retrieval*,
§20.2.3.

What it queues is ``core.policy.frontier_entry.FrontierEntry`` (one URL; most of the crawl
handles entries without the frontier), and a host's back queue under the cash
orderings is ``core.policy.back_queues.Buckets``: each in a module of its own.

Structure::

    add(entry) --> front queue[priority]  (one deque per priority, 0 = highest)
                        |  refill: highest priority first, FIFO within one
                        v
                   back queue[host]       (one deque per host, at most one per host,
                        |                  at most ``max_back_queues`` of them
                        v                  unless ``push_front``/``push_back`` made more)
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
   puts a URL at its head, ``push_back`` at its tail). While fewer than
   ``max_back_queues`` hosts have back queues, that is exactly the order of ``add``;
   under slot pressure URLs wait in front queues and move over in priority order.

Costs: ``add``, ``push_front``, ``push_back``, ``release`` O(log h) (h = heap size), ``pop``
amortized O(log h), ``queued`` and ``__len__`` O(1); one small ``__slots__`` object per
host, one deque per back queue, a pointer per queued URL.

Orderings (``core.policy.prioritizer``; the ``ordering`` argument). ``bfs`` is the structure
above. The others choose among READY hosts and within a host's queue, and never make a
host faster: a host is popped only once its ``ready_at`` (the time heap's, set by
``release``) has come, exactly as under ``bfs``.

* Among ready hosts (``opic``, ``larger-sites-first``): ``pop(now)`` first moves every
  host of the time heap whose ``ready_at <= now`` into a second heap, the ready heap,
  keyed by the host's rank (``opic``: the priority of its best queued URL;
  ``larger-sites-first``: minus the bit length of its URL count, more URLs first:
  its queued URLs and those ``set_beyond`` says wait outside memory), ties by the
  order they became ready; then pops the best. A host's rank that
  changes while it is in the ready heap pushes a new entry (the old one is stale, by
  ``seq`` as in the time heap): it improves by an ``add``, a ``push_front``, a
  ``credit`` or a larger ``set_beyond``, and worsens by a pop, which checks it out,
  or by a smaller ``set_beyond`` (URLs spilled are dropped, or fewer than counted).
* Within a host (``opic``): its back queue is one FIFO per priority, made on first
  use, taken best priority first (``core.policy.back_queues.Buckets``). ``credit(key, cash)``
  adds cash to a queued URL; when its priority rises it is appended to the better FIFO
  and its old copy becomes stale (a copy is valid iff it sits in the FIFO of its entry's
  ``priority``; cash only grows, so an entry is copied at most ``priorities`` times).
  A URL waiting in a front queue (slot pressure only) moves to the better front queue
  the same way (the refill skips stale copies). ``push_front`` puts a URL at the head
  of its host's best FIFO (its priority becomes that one's), ``push_back`` at the tail
  of the lowest priority's FIFO. ``demote`` moves the valid
  copies, in order, to the lowest front queue, as under ``bfs``, and gives them its
  priority (cash only grows them there); the refill gives them their cash's back.
* Invariant 3 then reads: a host has exactly one valid entry in the two heaps iff it has
  a back queue and is not checked out; a valid ready-heap entry's rank is the host's
  rank now. Invariant 5 holds per priority under ``opic``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from heapq import heappop, heappush, nsmallest
from itertools import islice

from crawldeck.core.policy.back_queues import BackQueue, Buckets
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.prioritizer import CASH_ORDERINGS, Ordering, priority_function


class _Host:
    """Frontier state of one host.

    ``back``: its back queue or ``None``; ``front``: its URLs in front queues;
    ``not_before``: ready time for the heap (epoch s); ``out``: checked out by
    ``pop``; ``seq``: seq of its valid heap entry, ``-1`` when in no heap; ``ready``:
    that entry is in the ready heap (not the time heap); ``rank``: its rank there;
    ``beyond``: its URLs waiting outside memory (``set_beyond``, ``larger-sites-first``
    only).
    """

    __slots__ = ("back", "beyond", "front", "not_before", "out", "rank", "ready", "seq")

    def __init__(self) -> None:
        self.back: BackQueue | None = None
        self.beyond = 0
        self.front = 0
        self.not_before = 0.0
        self.out = False
        self.seq = -1
        self.ready = False
        self.rank = 0


class Frontier:
    """The crawl frontier: priorities across hosts, one host at a time per back queue.

    Args:
        priorities: number of front queues (priority ``0`` .. ``priorities - 1``,
            ``0`` is the highest), ``>= 1`` (``>= 2`` under ``opic``); the last one
            is where ``demote`` puts a host's URLs.
        max_back_queues: back queue slots, i.e. hosts that can be scheduled at once
            (Mercator suggests about three per crawling thread), ``>= 1``.
        ordering: one of ``core.policy.prioritizer.ORDERINGS`` (default ``bfs``;
            the module docstring says what each changes).

    Raises:
        ValueError: ``priorities < 1`` (``< 2`` under ``opic``) or
            ``max_back_queues < 1``.

    See the module docstring for the invariants. Hosts are host keys
    (``urls.host_key``). Not thread-safe; the engine uses it from one task.
    """

    __slots__ = (
        "_active",
        "_backed",
        "_by_priority",
        "_front",
        "_fronted",
        "_heap",
        "_hosts",
        "_larger",
        "_len",
        "_level",
        "_max_back",
        "_nback",
        "_nfront",
        "_opic",
        "_ranked",
        "_ready",
        "_seq",
        "ordering",
    )

    def __init__(
        self, priorities: int = 3, max_back_queues: int = 4096, ordering: Ordering = "bfs"
    ) -> None:
        cash = ordering in CASH_ORDERINGS
        if priorities < (2 if cash else 1):
            raise ValueError(f"priorities must be >= 1 (2 for {ordering}), got {priorities!r}")
        if max_back_queues < 1:
            raise ValueError(f"max_back_queues must be >= 1, got {max_back_queues!r}")
        self.ordering: Ordering = ordering
        self._opic = cash
        self._level = priority_function(ordering) if cash else None
        self._ranked = ordering != "bfs"
        self._larger = ordering == "larger-sites-first"
        self._front: tuple[deque[FrontierEntry], ...] = tuple(deque() for _ in range(priorities))
        self._max_back = max_back_queues
        self._hosts: dict[str, _Host] = {}
        self._heap: list[tuple[float, int, str]] = []  # time heap: (ready_at, seq, host)
        self._ready: list[tuple[int, int, str]] = []  # ready heap: (rank, seq, host)
        self._seq = 0
        self._nback = 0  # back queues present
        self._nfront = 0  # URLs in front queues
        self._len = 0  # URLs queued in total
        self._active = 0  # hosts with at least one queued URL
        self._by_priority = [0] * priorities  # queued URLs per clamped priority
        # opic: where to find a queued URL whose cash grows (back queues, front queues)
        self._backed: dict[str, FrontierEntry] = {}
        self._fronted: dict[str, FrontierEntry] = {}

    # -- internals -------------------------------------------------------------------

    def _schedule(self, host: str, h: _Host) -> None:
        """Push ``host`` onto the time heap at its not-before time (new valid entry)."""
        seq = self._seq
        self._seq = seq + 1
        h.seq = seq
        h.ready = False
        heappush(self._heap, (h.not_before, seq, host))

    def _rank(self, h: _Host) -> int:
        """``h``'s rank among ready hosts, smaller first (it has a back queue)."""
        back = h.back
        assert back is not None
        if isinstance(back, Buckets):
            return back.top()
        return -(h.front + len(back) + h.beyond).bit_length()

    def _make_ready(self, host: str, h: _Host, rank: int) -> None:
        """Push ``host`` onto the ready heap at ``rank`` (new valid entry)."""
        seq = self._seq
        self._seq = seq + 1
        h.seq = seq
        h.ready = True
        h.rank = rank
        heappush(self._ready, (rank, seq, host))

    def _new_back(self, entry: FrontierEntry) -> BackQueue:
        """A back queue holding ``entry``."""
        if self._opic:
            back = Buckets(len(self._front))
            back.append(entry)
            self._backed[entry.key] = entry
            return back
        return deque((entry,))

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
        opic = self._opic
        while self._nfront:
            for i in range(len(front)):
                queue = front[i]
                if queue:
                    break
            entry = queue[0]
            if opic and entry.priority != i:
                queue.popleft()  # a stale copy: its cash moved it up
                continue
            h = hosts[entry.host]
            back = h.back
            if back is None and self._nback >= self._max_back:
                return
            queue.popleft()
            self._nfront -= 1
            h.front -= 1
            if opic:
                del self._fronted[entry.key]
                if i == len(front) - 1:  # demoted: its cash's priority again
                    assert self._level is not None
                    entry.priority = self._level(entry.score, entry.inlinks, len(front))
                    self._by_priority[i] -= 1
                    self._by_priority[entry.priority] += 1
            if back is not None:
                back.append(entry)
                if self._opic:
                    self._backed[entry.key] = entry
                if h.ready:
                    self._rerank(entry.host, h)
                continue
            h.back = self._new_back(entry)
            self._nback += 1
            if not h.out:
                self._schedule(entry.host, h)

    def _rerank(self, host: str, h: _Host) -> None:
        """``host`` is in the ready heap and may rank better now: a new entry if so."""
        rank = self._rank(h)
        if rank < h.rank:
            self._make_ready(host, h, rank)

    # -- public API ------------------------------------------------------------------

    def add(self, entry: FrontierEntry, *, beyond: bool = False) -> None:
        """Queue a new URL (already admitted and deduplicated by the caller).

        It goes to its host's back queue if the host has one, else to a new back
        queue if a slot is free (the host then enters the heap at its not-before
        time, or 0), else to the front queue of its priority (clamped to range).
        ``beyond``: the URL comes in from outside memory (read back from SQLite), so
        its host's ``set_beyond`` count goes down by one as its queue grows by one
        (``larger-sites-first``: the host's rank stays the same).
        """
        host = entry.host
        h = self._hosts.get(host)
        if h is None:
            h = self._hosts[host] = _Host()
        if beyond and h.beyond:
            h.beyond -= 1
        p = self._clamp(entry.priority)
        back = h.back
        if self._opic:
            entry.priority = p
        if back is not None:
            back.append(entry)
            if self._opic:
                self._backed[entry.key] = entry
            if h.ready:
                self._rerank(host, h)
        else:
            if not h.front:
                self._active += 1
            if self._nback < self._max_back:
                h.back = self._new_back(entry)
                self._nback += 1
                if not h.out:
                    seq = self._seq
                    self._seq = seq + 1
                    h.seq = seq
                    h.ready = False
                    heappush(self._heap, (h.not_before, seq, host))
            else:
                self._front[p].append(entry)
                h.front += 1
                self._nfront += 1
                if self._opic:
                    self._fronted[entry.key] = entry
        self._len += 1
        self._by_priority[p] += 1

    def push_front(self, entry: FrontierEntry) -> None:
        """Put a URL at the head of its host's back queue.

        Creates the back queue if the host has none, even past ``max_back_queues``
        (it never waits behind the front queues). Under ``opic`` it goes first in the
        host's best FIFO and takes that priority if it is higher than its own.
        """
        self._push(entry, first=True)

    def push_back(self, entry: FrontierEntry) -> None:
        """Put a URL (a retry) at the tail of its host's back queue: the host's other
        queued URLs go first, as Scrapy lowers a retried request's priority, so one URL
        that keeps failing does not hold its host in backoff (issue #25: one page always
        answering 503 stalled and then parked its host).

        Creates the back queue if the host has none, even past ``max_back_queues`` (a
        retry never waits behind the front queues). Under ``opic`` it goes last in the
        FIFO of the lowest priority, behind its host's other URLs whatever their
        priorities (cash credited to it later may raise it again).
        """
        self._push(entry, first=False)

    def _push(self, entry: FrontierEntry, *, first: bool) -> None:
        """``push_front`` (``first``) or ``push_back``."""
        host = entry.host
        h = self._hosts.get(host)
        if h is None:
            h = self._hosts[host] = _Host()
        back = h.back
        if self._opic:
            if first:
                best = back.top() if isinstance(back, Buckets) else len(self._front)
                entry.priority = min(self._clamp(entry.priority), best)
            else:
                entry.priority = len(self._front) - 1
        if back is not None:
            if first:
                back.appendleft(entry)
            elif isinstance(back, Buckets):
                back.append_again(entry)
            else:
                back.append(entry)
            if self._opic:
                self._backed[entry.key] = entry
            if h.ready:
                self._rerank(host, h)
        else:
            if not h.front:
                self._active += 1
            h.back = self._new_back(entry)
            self._nback += 1
            if not h.out:
                self._schedule(host, h)
        self._len += 1
        self._by_priority[self._clamp(entry.priority)] += 1

    def set_beyond(self, host: str, n: int) -> None:
        """``n`` (``>= 0``) URLs of ``host`` wait outside memory: spilled to SQLite by
        ``FrontierWindow``, to be read back later (``add(entry, beyond=True)``).

        Under ``larger-sites-first`` they count in the host's rank with its queued
        URLs: the order ranks a site by all of its pending pages (Castillo, "Effective
        web crawling", 2004, §4), not by the share of them the window holds. A host in
        the ready heap whose rank changes gets a new entry there. Other orderings keep
        no count (nothing is stored). O(log h).
        """
        if not self._larger:
            return
        h = self._hosts.get(host)
        if h is None:
            if not n:
                return
            h = self._hosts[host] = _Host()
        h.beyond = n
        if h.ready:
            rank = self._rank(h)
            if rank != h.rank:
                self._make_ready(host, h, rank)

    def credit(self, key: str, cash: float) -> bool:
        """Add ``cash`` and one in-link to the queued URL of dedupe key ``key`` (a cash
        ordering, ``core.policy.prioritizer.CASH_ORDERINGS``; one call per linking page): its
        score grows and, if that raises its priority (``priority_function``), it moves to the
        better FIFO of its host's back queue, or to the better front queue if it waits
        in one (a demoted URL stays in the lowest until it leaves it). O(log h).

        Returns:
            whether ``key`` is queued here (``False``: not queued in memory, or checked
            out; or not ``opic``): the caller then adds the cash where the URL is kept
            (``Store.add_scores``).
        """
        return not self.credit_all(((key, cash, ""),))

    def credit_all(self, scores: Iterable[tuple[str, float, str]]) -> list[tuple[str, float, str]]:
        """``credit`` for each ``(key, cash, host)`` of one page's outlinks, in one call
        (a page credits a few dozen URLs: one call each was about a fifth of the calls
        into ``crawldeck.core`` per page, ``tests/unit/test_costs.py``).

        Returns:
            the items whose ``key`` is not queued here, in order (``credit``'s
            ``False``), for the caller to add their cash where the URL is kept.
        """
        backed = self._backed
        fronted = self._fronted
        level = self._level
        lowest = len(self._front) - 1
        missed: list[tuple[str, float, str]] = []
        for item in scores:
            key = item[0]
            entry = backed.get(key)
            in_back = entry is not None
            if entry is None:
                entry = fronted.get(key)
                if entry is None:
                    missed.append(item)
                    continue
            entry.score += item[1]
            entry.inlinks += 1
            old = entry.priority
            assert level is not None
            new = level(entry.score, entry.inlinks, lowest + 1)
            if new < old and (in_back or old != lowest):
                self._promote(entry, old, new, in_back=in_back)
        return missed

    def _promote(self, entry: FrontierEntry, old: int, new: int, *, in_back: bool) -> None:
        """Move the credited ``entry`` from priority ``old`` to the better ``new``: in
        its host's back queue (``in_back``), or into the better front queue."""
        entry.priority = new
        self._by_priority[old] -= 1
        self._by_priority[new] += 1
        if in_back:
            h = self._hosts[entry.host]
            back = h.back
            assert isinstance(back, Buckets)
            back.move(entry)
            if h.ready:
                self._rerank(entry.host, h)
        else:
            self._front[new].append(entry)  # the copy in front[old] is stale now

    def credited(self, host: str | None = None) -> list[FrontierEntry]:
        """The URLs queued here (of ``host``, or of every host) that a credit reached
        since they were queued (``inlinks > 1``; a cash ordering: empty under the
        others), for the caller to write their cash and in-links where they are kept
        (``FrontierWindow.save_credits``). O(URLs queued in memory)."""
        found = [*self._backed.values(), *self._fronted.values()]
        return [e for e in found if e.inlinks > 1 and (host is None or e.host == host)]

    def pop(self, now: float) -> FrontierEntry | None:
        """The next URL to fetch at ``now`` (epoch s), or ``None`` if no host is ready.

        Under ``bfs``, takes the head of the back queue of the host with the smallest
        ready time ``<= now`` (ties: the host that entered the heap first); under the
        other orderings, of the best-ranked host among those ready at ``now`` (see the
        module docstring). Checks that host out: it gets no other URL until
        ``release(host, at)``. A back queue emptied here frees its slot, which the
        front queues refill at once.
        """
        heap = self._heap
        hosts = self._hosts
        if self._ranked:
            return self._pop_ranked(now)
        while heap:
            ready_at, seq, host = heap[0]
            h = hosts[host]
            if h.seq != seq:
                heappop(heap)  # stale (demoted or rescheduled)
                continue
            if ready_at > now:
                return None
            heappop(heap)
            return self._take(host, h)
        return None

    def _pop_ranked(self, now: float) -> FrontierEntry | None:
        """``pop`` under ``opic`` and ``larger-sites-first``: hosts whose time has come
        move to the ready heap, and the best-ranked one is taken."""
        heap = self._heap
        ready = self._ready
        hosts = self._hosts
        while heap:
            ready_at, seq, host = heap[0]
            h = hosts[host]
            if h.seq != seq:
                heappop(heap)
                continue
            if ready_at > now:
                break
            heappop(heap)
            self._make_ready(host, h, self._rank(h))
        while ready:
            _, seq, host = heappop(ready)
            h = hosts[host]
            if h.seq == seq:
                return self._take(host, h)
        return None

    def _take(self, host: str, h: _Host) -> FrontierEntry:
        """Check ``host`` out (its heap entry already popped) and take its next URL."""
        h.seq = -1
        h.ready = False
        h.out = True
        back = h.back
        assert back is not None  # invariant 3
        entry = back.popleft()
        self._len -= 1
        self._by_priority[self._clamp(entry.priority)] -= 1
        if self._opic:
            del self._backed[entry.key]
        if not back:
            h.back = None
            self._nback -= 1
            if not h.front:
                self._active -= 1
            if self._nfront:
                self._refill()
        return entry

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
            h.ready = False
            heappush(self._heap, (at, seq, host))

    def next_ready_at(self) -> float | None:
        """The smallest ready time (epoch s) in the heap, or ``None`` if it is empty.

        ``None`` also when every host with queued URLs is checked out. The value may
        be in the past: then ``pop`` gives a URL now (a host in the ready heap gives
        its own, past, ready time).
        """
        hosts = self._hosts
        ready = self._ready
        while ready:
            _, seq, host = ready[0]
            h = hosts[host]
            if h.seq == seq:
                return h.not_before
            heappop(ready)
        heap = self._heap
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
        # the valid entries first: giving them the lowest priority below would make a
        # stale copy of one in the lowest FIFO valid again while the FIFOs are walked
        moved = list(h.back)
        n = len(moved)
        self._front[-1].extend(moved)
        if self._opic:  # the demoted priority, until the refill takes them out
            last = len(self._front) - 1
            by_priority = self._by_priority
            for entry in moved:
                del self._backed[entry.key]
                self._fronted[entry.key] = entry
                by_priority[entry.priority] -= 1
                entry.priority = last
            by_priority[last] += n
        h.front += n
        self._nfront += n
        h.back = None
        h.seq = -1  # its heap entry, if any, is now stale
        h.ready = False
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
                    elif not self._opic or entry.priority == i:  # a stale copy: none
                        by_priority[self._clamp(entry.priority)] -= 1
                        self._fronted.pop(entry.key, None)
                        dropped += 1
                self._front = (*self._front[:i], kept, *self._front[i + 1 :])
            self._nfront -= h.front
            h.front = 0
        if h.back is not None:
            dropped += len(h.back)
            for entry in h.back:
                by_priority[self._clamp(entry.priority)] -= 1
                self._backed.pop(entry.key, None)
            h.back = None
            h.seq = -1  # its heap entry, if any, is now stale
            h.ready = False
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
        the lowest front queue without changing their priority, but under ``opic``,
        where a priority is a cash band, they take the lowest one until the refill
        takes them out). O(priorities)."""
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
        shown: finding them would mean scanning every front queue. O(n) (under
        ``opic`` plus the stale copies passed over).
        """
        h = self._hosts.get(host)
        if h is None or h.back is None:
            return []
        return list(islice(h.back, n))

    def soonest(self, n: int) -> list[str]:
        """Up to ``n`` hosts of the heaps, next to be popped first: the ready heap's by
        rank (``opic``, ``larger-sites-first``), then the time heap's, the soonest ready
        first (ties FIFO).

        Only hosts with a back queue that are not checked out are in the heaps, so this
        costs O(heap size), bounded by the back queue slots, whatever the number of hosts.
        """
        hosts = self._hosts
        ready = (item for item in self._ready if hosts[item[2]].seq == item[1])
        first = [host for _, _, host in nsmallest(n, ready)]
        valid = (item for item in self._heap if hosts[item[2]].seq == item[1])
        return first + [host for _, _, host in nsmallest(n - len(first), valid)]

    def hosts(self) -> int:
        """The number of hosts with at least one queued URL."""
        return self._active

    def back_queues(self) -> int:
        """The number of back queues (slots in use; ``push_front`` and ``push_back`` may
        make more than the limit)."""
        return self._nback

    def _check(self) -> None:
        """Assert every invariant of the module docstring (O(n); for tests)."""
        hosts = self._hosts
        nback = sum(1 for h in hosts.values() if h.back is not None)
        assert nback == self._nback
        assert all(h.back is None or h.back for h in hosts.values())
        fronts = [
            [e for e in q if not self._opic or e.priority == i] for i, q in enumerate(self._front)
        ]  # the valid copies
        nfront = sum(len(q) for q in fronts)
        assert nfront == self._nfront
        if self._nback < self._max_back:
            assert nfront == 0
        counts: dict[str, int] = {}
        for queue in fronts:
            for entry in queue:
                counts[entry.host] = counts.get(entry.host, 0) + 1
        for name, h in hosts.items():
            assert h.front == counts.get(name, 0), name
            if h.back is not None:
                assert all(e.host == name for e in h.back)
                if isinstance(h.back, Buckets):
                    assert h.back.n == sum(1 for _ in h.back)
                    assert all(e.priority >= h.back.best for e in h.back)
        valid = [(r, s, name) for r, s, name in self._heap if hosts[name].seq == s]
        ranked = [(r, s, name) for r, s, name in self._ready if hosts[name].seq == s]
        assert self._ranked or not ranked
        assert self._larger or not any(h.beyond for h in hosts.values())
        assert all(h.beyond >= 0 for h in hosts.values())
        names = [name for _, _, name in valid] + [name for _, _, name in ranked]
        assert len(set(names)) == len(names)
        for name, h in hosts.items():
            should = h.back is not None and not h.out
            assert (name in names) == should, name
            assert (h.seq >= 0) == should, name
        for r, _, name in valid:
            assert r == hosts[name].not_before
            assert not hosts[name].ready
        for r, _, name in ranked:
            h = hosts[name]
            assert h.ready and r == h.rank == self._rank(h), name
        total = nfront + sum(len(h.back) for h in hosts.values() if h.back is not None)
        assert total == self._len
        active = sum(1 for h in hosts.values() if h.front or h.back is not None)
        assert active == self._active
        # counted by raw priority, then clamped once a priority (not once a URL)
        raw: dict[int, int] = {}
        in_back: dict[str, FrontierEntry] = {}
        in_front: dict[str, FrontierEntry] = {}
        for h in hosts.values():
            for entry in h.back or ():
                raw[entry.priority] = raw.get(entry.priority, 0) + 1
                in_back[entry.key] = entry
        for queue in fronts:
            for entry in queue:
                raw[entry.priority] = raw.get(entry.priority, 0) + 1
                in_front[entry.key] = entry
        by_priority = [0] * len(self._front)
        for priority, count in raw.items():
            by_priority[self._clamp(priority)] += count
        assert by_priority == self._by_priority
        if self._opic:
            assert self._backed == in_back
            assert self._fronted == in_front
        else:
            assert not self._backed and not self._fronted


__all__ = ["Frontier"]
