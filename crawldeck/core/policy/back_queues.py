"""A host's back queue under a cash ordering: one FIFO per priority (pure).

In the Mercator frontier (``core.policy.frontier``) each host has at most one back queue. Under
``bfs`` and ``larger-sites-first`` it is a ``deque`` of the host's entries, in the order
they came; under ``opic`` and ``opic-inlinks`` (``core.policy.prioritizer.CASH_ORDERINGS``) it
is a :class:`Buckets`: one FIFO per priority, taken best priority first, in which a URL
whose cash rose is copied to the better FIFO and its old copy skipped when it comes up
(a copy is valid only in the FIFO of its entry's ``priority``). ``BackQueue`` names
either.

Separate from ``core.policy.frontier`` because it is a structure with its own invariant, which
the frontier drives but does not look into (it asks ``top``, ``append``, ``move``,
``popleft``); the frontier's docstring says how the orderings use it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from crawldeck.core.policy.frontier_entry import FrontierEntry


class Buckets:
    """A host's back queue under ``opic``: one FIFO per priority, made on first use.

    An entry is valid in the FIFO of its own ``priority`` only; copies elsewhere are
    stale (its priority rose, or it was popped) and are skipped. ``n`` counts the valid
    entries; no FIFO below ``best`` holds one.
    """

    __slots__ = ("best", "n", "queues")

    def __init__(self, priorities: int) -> None:
        """Room for priorities ``0 .. priorities - 1``, each FIFO made on first use."""
        self.queues: list[deque[FrontierEntry] | None] = [None] * priorities
        self.n = 0
        self.best = priorities

    def __len__(self) -> int:
        """The valid entries held."""
        return self.n

    def __bool__(self) -> bool:
        """Whether it holds a valid entry."""
        return self.n > 0

    def _queue(self, p: int) -> deque[FrontierEntry]:
        q = self.queues[p]
        if q is None:
            q = self.queues[p] = deque()
        if p < self.best:
            self.best = p
        return q

    def append(self, entry: FrontierEntry) -> None:
        """``entry`` (priority in range) last in its priority's FIFO."""
        self._queue(entry.priority).append(entry)
        self.n += 1

    def append_again(self, entry: FrontierEntry) -> None:
        """``entry`` (priority in range), popped before, last in its priority's FIFO,
        where a stale copy of it may have stayed (it sat there before a credit raised
        it): that copy is dropped, or it would be valid again beside this one. O(FIFO)
        when the FIFO holds such a copy (a retry put back at the lowest priority)."""
        q = self._queue(entry.priority)
        if any(e is entry for e in q):
            q = self.queues[entry.priority] = deque(e for e in q if e is not entry)
        q.append(entry)
        self.n += 1

    def appendleft(self, entry: FrontierEntry) -> None:
        """``entry`` (priority in range) first in its priority's FIFO."""
        self._queue(entry.priority).appendleft(entry)
        self.n += 1

    def move(self, entry: FrontierEntry) -> None:
        """A valid ``entry``'s priority rose: a copy at the end of its new FIFO."""
        self._queue(entry.priority).append(entry)

    def top(self) -> int:
        """The priority of the next valid entry (stale heads are dropped); the number
        of FIFOs when there is none."""
        queues = self.queues
        b = self.best
        while b < len(queues):
            q = queues[b]
            if q:
                if q[0].priority == b:
                    break
                q.popleft()
                continue
            queues[b] = None
            b += 1
        self.best = b
        return b

    def popleft(self) -> FrontierEntry:
        """Take the next valid entry (there is one)."""
        q = self.queues[self.top()]
        assert q is not None
        self.n -= 1
        return q.popleft()

    def __iter__(self) -> Iterator[FrontierEntry]:
        """The valid entries, next to be taken first."""
        for b, q in enumerate(self.queues):
            if q:
                yield from (e for e in q if e.priority == b)


#: A host's back queue: a FIFO (``bfs``, ``larger-sites-first``) or ``Buckets`` (the
#: cash orderings).
BackQueue = deque[FrontierEntry] | Buckets


__all__ = ["BackQueue", "Buckets"]
