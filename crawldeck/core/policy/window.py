"""The frontier window: a bounded in-memory frontier over its SQLite tail.

After Mercator's disk-backed back queues (Heydon & Najork 1999, §3.2): memory holds at
most ``frontier_window`` queued URLs, one host at most an eighth of them; the others
wait in the store only (frontier state ``spilled``) and come back per host, when its
in-memory queue is half empty, so a slow host (Crawl-delay, backoff) never fills
memory and starves the others (issue #6). They come back best priority first, oldest
first within one (``Store.load_spilled``'s (priority, seq) position), so the crawl's
ordering (``core.policy.prioritizer``) holds beyond the window too, and the frontier knows how
many URLs of each host are spilled (``Frontier.set_beyond``: ``larger-sites-first``
ranks a host by all of its pending URLs). The engine sees one frontier:
``FrontierWindow`` wraps ``core.policy.frontier.Frontier`` (pure, in memory) and reads the
tail through the small ``core.protocols.SpillStore`` protocol, and holds every spill
counter itself.

Reads are tasks awaiting the store (``SpillStore.read_spilled``: SQLite reads in a
thread of its own, never on the event loop, issue #11 item 4; the cluster's on the
loop): ``pop`` and ``bring_in`` start them and return at once; a read's rows are added
when it returns (``read_back`` is then called, and wakes the workers), and ``drain``
awaits them. Until then the rows a read asked for are reserved: memory plus
reservations stay within the window. One read per host is in flight at a time, and the
store runs them one after the other.

A read sees the writes made before it (the SQLite store commits its queued writes
first when a read comes back short). A host's read-back cursor never goes back: rows
read back stay ``spilled`` in SQLite until their pages are recorded, and a later read
must not return them again.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from crawldeck.core.policy.frontier import Frontier
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.prioritizer import Prioritizer
from crawldeck.core.protocols import SpillStore
from crawldeck.core.records import SPILL_SEQ_SPAN, FrontierRow

#: Credited URLs popped before their cash and in-links are written in one go
#: (``FrontierWindow.credit``).
KEEP_BATCH: Final = 256


class _Read:
    """One read-back in flight: ``want`` rows of ``host`` reserved in the window."""

    __slots__ = ("host", "task", "want")

    def __init__(self, host: str, want: int) -> None:
        self.host = host
        self.want = want
        self.task: asyncio.Task[None] | None = None


@dataclass(frozen=True, slots=True)
class WindowStatistics:
    """The window at one moment (immutable, named fields).

    Attributes:
        in_memory: URLs queued in memory (front and back queues).
        spilled: URLs waiting only in the store.
        spilled_hosts: hosts with URLs waiting only in the store.
        waiting_hosts: hosts whose URLs all wait in the store (none in memory).
        read_back: spilled URLs read back into memory so far (this run).
        window: ``frontier_window``, the in-memory bound.
        host_share: ``frontier_window // 8``, one host's in-memory bound.
    """

    in_memory: int
    spilled: int
    spilled_hosts: int
    waiting_hosts: int
    read_back: int
    window: int
    host_share: int


class FrontierWindow:
    """One frontier for the engine: ``Frontier`` in memory, the rest in a ``SpillStore``.

    Args:
        window: ``frontier_window``, the most URLs kept in memory (each host at most
            ``window // 8``, at least 1).
        store: where spilled URLs wait.
        read_back: called with the rows of each read back from the store (before their
            entries are handed out), so the caller can restore what it keeps of them
            (a seed's scope, a host first seen in this run).
        spill_all: every URL placed goes to the store, whatever the room (a frontier
            shared by workers: its store decides which URLs are new, and they come
            back through reads, ``core.cluster``).
        prioritizer: the crawl's ordering (``core.policy.prioritizer``; default ``bfs``): the
            in-memory frontier's, and the priority of the URLs read back.
        keep_credits: where the cash and in-links a URL gathered in memory are written
            when it leaves memory (``Store.set_scores``; ``(key, cash, inlinks)``
            triples), ``None``: its credits are written as they come (``credit``).

    Times are epoch seconds (``float``), as ``Frontier``'s. ``pop``, ``bring_in`` and
    ``drain`` run on an event loop (reads are tasks of the running loop); a read that
    failed raises its ``StoreError`` from the next of them.
    """

    __slots__ = (
        "_cursor",
        "_failure",
        "_frontier",
        "_host_cap",
        "_keep",
        "_kept",
        "_prioritizer",
        "_read_back",
        "_reads",
        "_reserved",
        "_spill_all",
        "_spilled",
        "_spilled_total",
        "_store",
        "_waiting",
        "_window",
        "read_back_total",
    )

    def __init__(
        self,
        window: int,
        store: SpillStore,
        read_back: Callable[[Sequence[FrontierRow]], None] | None = None,
        *,
        spill_all: bool = False,
        prioritizer: Prioritizer | None = None,
        keep_credits: Callable[[Sequence[tuple[str, float, int]]], None] | None = None,
    ) -> None:
        self._prioritizer = prioritizer = prioritizer or Prioritizer()
        self._frontier = Frontier(prioritizer.priorities, ordering=prioritizer.ordering)
        self._spill_all = spill_all
        self._store = store
        self._keep = keep_credits
        self._kept: list[tuple[str, float, int]] = []  # popped credited URLs, not written
        self._window = window
        self._host_cap = max(1, window // 8)
        self._read_back = read_back
        self._spilled: Counter[str] = Counter()
        self._spilled_total = 0
        self._cursor: dict[str, int] = {}  # read-back position per host
        self._waiting: dict[str, None] = {}  # hosts with none in memory, in FIFO order
        self._reads: dict[str, _Read] = {}  # in flight, by host
        self._reserved = 0  # rows the reads in flight may bring in
        self._failure: Exception | None = None
        self.read_back_total = 0

    # ------------------------------------------------------------- admission

    def place(self, host: str, *, spill: bool = True) -> bool:
        """Where a newly admitted URL of ``host`` goes: ``True`` for memory (the
        caller then calls :meth:`add`), ``False`` for the store only (counted here as
        spilled; the caller writes its row with state ``spilled``). ``spill=False``
        keeps it in memory whatever the window (a redirect hop carries its chain's
        cookies, which the store does not keep), unless ``spill_all``. A host with
        spilled URLs spills the next ones too (FIFO per host). The host's spilled count
        goes to the frontier too (``Frontier.set_beyond``)."""
        in_memory = self._frontier.queued(host)
        if self._spill_all or (
            spill
            and (
                in_memory >= self._host_cap
                or len(self._frontier) + self._reserved >= self._window
                or host in self._spilled
            )
        ):
            self._spilled[host] += 1
            self._spilled_total += 1
            self._frontier.set_beyond(host, self._spilled[host])
            if not in_memory:
                self._waiting[host] = None
            return False
        return True

    def spill_priority(self, host: str, priority: int) -> int:
        """The priority to store a URL of ``host`` that :meth:`place` spilled with: its
        own, or the priority of the host's read-back position if that is lower (a
        position never goes back, so a row before it would never be read back; the
        row's score keeps its cash, which gives it its priority when it is read back
        under ``opic``)."""
        return max(priority, self._cursor.get(host, 0) // SPILL_SEQ_SPAN)

    def add(self, entry: FrontierEntry) -> None:
        """Queue ``entry`` in memory (``Frontier.add``)."""
        self._frontier.add(entry)

    def entry_of(self, row: FrontierRow) -> FrontierEntry:
        """The frontier entry of a stored ``row`` (read back, or loaded on resume), its
        priority as the ordering gives it (``Prioritizer.restored``), its redirect chain
        as stored (a chain cut by a stop goes on from its hop, without cookies: a chain
        that had some was stored without it, ``Recorder.queue``)."""
        return FrontierEntry(
            row.url, row.key, row.host, row.depth,
            self._prioritizer.restored(row.priority, row.score, row.inlinks), row.attempts,
            row.redirects, row.via, score=row.score, inlinks=row.inlinks,
        )  # fmt: skip

    def credit(self, key: str, cash: float) -> bool:
        """``Frontier.credit``: ``cash`` and one in-link more for the URL ``key`` if it
        is queued in memory (a cash ordering); whether it is. With ``keep_credits``
        the caller writes only the credits this refuses (URLs spilled, or not queued
        here), and the window writes the cash and in-links a URL gathered in memory
        when it leaves memory: popped (a fetch cut by a stop, or failed, leaves it
        queued; written ``KEEP_BATCH`` at a time), dropped with its host, or still
        queued when the run ends (``save_credits``). One write per credited URL, not
        one per credit: a page's links are credited a few dozen at a time, each an
        SQLite ``UPDATE`` of about 6 us (benchmarks/RESULTS.md, "Crawl ordering"). A
        crawl killed with SIGKILL loses the credits its URLs gathered in memory since
        they were queued: their rows keep the cash and in-links they were queued with,
        so a resumed crawl's order is close to, not the same as, an uninterrupted
        one's; no URL is lost."""
        return self._frontier.credit(key, cash)

    def credit_all(self, scores: Sequence[tuple[str, float, str]]) -> list[tuple[str, float]]:
        """``credit`` for each ``(key, cash, host)`` of one page's outlinks, in one call
        (``Frontier.credit_all``).

        Returns:
            ``(key, cash)`` of the credits not taken in memory whose host has URLs
            spilled (``spills``): the ones the caller writes to the store.
        """
        spilled = self._spilled
        missed = self._frontier.credit_all(scores)
        return [(key, cash) for key, cash, host in missed if spilled.get(host, 0) > 0]

    def spills(self, host: str) -> bool:
        """Whether ``host`` has URLs waiting in the store only (spilled)."""
        return self._spilled.get(host, 0) > 0

    def save_credits(self, host: str | None = None) -> None:
        """Write the cash and in-links of the URLs credited in memory (of ``host``, or
        all: the run ends), and those of the credited URLs popped since the last
        write, to the store (``keep_credits``; nothing without it)."""
        if self._keep is not None:
            kept = self._kept + [(e.key, e.score, e.inlinks) for e in self._frontier.credited(host)]
            self._kept = []
            if kept:
                self._keep(kept)

    def restore(self, spilled: dict[str, int]) -> None:
        """Count the URLs an earlier run left spilled (``Store.spilled_counts``), after
        the queued ones were added: hosts with none in memory wait to be read back."""
        self._spilled.update(spilled)
        self._spilled_total = self._spilled.total()
        for host, n in self._spilled.items():
            self._frontier.set_beyond(host, n)
        self._waiting.update((h, None) for h in self._spilled if not self._frontier.queued(h))

    # -------------------------------------------------------------- dispatch

    def pop(self, now: float) -> FrontierEntry | None:
        """The next URL whose host is ready at ``now``, or ``None``; starts reading
        spilled URLs back while memory is at most half full, and after the pop when the
        host's in-memory queue is at most half its share.

        Raises:
            StoreError: an earlier read failed.
        """
        if self._failure is not None:  # no call while nothing failed (a few a page)
            self._raise()
        if self._waiting and len(self._frontier) + self._reserved <= self._window // 2:
            self._read_waiting()
        entry = self._frontier.pop(now)
        if entry is not None:
            if self._keep is not None and entry.inlinks > 1:
                kept = self._kept
                kept.append((entry.key, entry.score, entry.inlinks))
                if len(kept) >= KEEP_BATCH:  # one write for many: the store's queue
                    self._kept = []
                    self._keep(kept)
            host = entry.host
            if host in self._spilled and self._frontier.queued(host) <= self._host_cap // 2:
                self._read(host)
                if not self._frontier.queued(host) and host not in self._reads:
                    self._waiting[host] = None  # the window was full: read back later
        return entry

    def bring_in(self) -> None:
        """Nothing is ready: start reading back hosts whose URLs all wait in the store
        while the window has room (their URLs come in when the reads return).

        Raises:
            StoreError: an earlier read failed.
        """
        if self._failure is not None:  # no call while nothing failed (a few a page)
            self._raise()
        if self._waiting and len(self._frontier) + self._reserved < self._window:
            self._read_waiting()

    async def drain(self) -> bool:
        """Memory is empty and nothing is in flight: read back every host that still has
        spilled URLs, and wait for the reads. Returns ``False`` when none could be read
        back (the spilled count is off: only after a crash or a kill).

        Raises:
            StoreError: a read failed.
        """
        self._raise()
        self._waiting.update((host, None) for host in self._spilled)
        self._read_waiting()
        await self.settle()
        self._raise()
        return len(self._frontier) > 0

    async def settle(self) -> None:
        """Wait until no read is in flight (reads started meanwhile included)."""
        while self._reads:
            tasks = [read.task for read in self._reads.values() if read.task is not None]
            await asyncio.wait(tasks)

    def _raise(self) -> None:
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def _read(self, host: str) -> None:
        """Start reading ``host``'s spilled URLs back, best priority first and oldest
        first within one, up to its share of the window and the window itself (one
        indexed range read, in a thread); nothing when one is in flight or there is no
        room."""
        if host in self._reads:
            return
        frontier = self._frontier
        want = min(
            self._host_cap - frontier.queued(host),
            self._window - len(frontier) - self._reserved,
            self._spilled[host],
        )
        if want <= 0:
            return
        read = _Read(host, want)
        self._reads[host] = read
        self._reserved += want
        read.task = asyncio.get_running_loop().create_task(self._run(read))

    async def _run(self, read: _Read) -> None:
        """Do ``read`` in a thread, then add its rows (unless its host was dropped)."""
        host = read.host
        after = self._cursor.get(host, 0)
        try:
            rows, last = await self._rows(host, after, read.want)
        except Exception as exc:  # a StoreError: raised from the next pop/bring_in/drain
            self._failure = exc
            return
        finally:
            mine = self._reads.get(host) is read  # else its host was dropped meanwhile
            if mine:
                del self._reads[host]
                self._reserved -= read.want
        if mine:
            self._take(host, read.want, rows, last)

    async def _rows(self, host: str, after: int, want: int) -> tuple[list[FrontierRow], int]:
        """A read's rows and last position (``SpillStore.read_spilled``)."""
        return await self._store.read_spilled(host, after, want)

    def _take(self, host: str, want: int, rows: list[FrontierRow], last: int) -> None:
        """Add the rows a read of ``want`` rows of ``host`` returned, each moving from
        the host's spilled count to its in-memory queue (``add(entry, beyond=True)``);
        the frontier then gets the count left (fewer rows than counted: none)."""
        frontier = self._frontier
        self._cursor[host] = last
        if rows and self._read_back is not None:
            self._read_back(rows)
        for row in rows:
            frontier.add(self.entry_of(row), beyond=True)
        count = len(rows)
        left = self._spilled[host] - count
        if left > 0 and count == want:
            self._spilled[host] = left
        else:  # all back (the count can only be off after a crash or a kill)
            self._spilled_total -= self._spilled.pop(host) - count
        self._spilled_total -= count
        self.read_back_total += count
        frontier.set_beyond(host, self._spilled.get(host, 0))
        if count:
            self._waiting.pop(host, None)

    def _read_waiting(self) -> None:
        """Start reading back hosts whose URLs all wait in the store, in the order they
        started waiting, until the window (with the reads in flight) is full."""
        for host in list(self._waiting):
            if len(self._frontier) + self._reserved >= self._window:
                return
            if host in self._spilled:
                self._read(host)
            self._waiting.pop(host, None)

    # ------------------------------------------------ passed to the frontier

    def release(self, host: str, at: float) -> None:
        """``Frontier.release``: ``host`` may be popped again from ``at`` (epoch s)."""
        self._frontier.release(host, at)

    def push_front(self, entry: FrontierEntry) -> None:
        """``Frontier.push_front``: ``entry`` goes first in its host's queue.

        Never refused and never spilled (a retry keeps its place and its cookies), so
        memory and a host's queue may exceed the window and the host's share by the
        URLs pushed back; reads back and :meth:`place` then wait for room."""
        self._frontier.push_front(entry)

    def push_back(self, entry: FrontierEntry) -> None:
        """``Frontier.push_back``: ``entry`` (a retry) goes last in its host's queue.

        Never refused and never spilled, as :meth:`push_front`."""
        self._frontier.push_back(entry)

    def demote(self, host: str) -> None:
        """``Frontier.demote``: ``host``'s queued URLs go to the lowest priority."""
        self._frontier.demote(host)

    def drop_host(self, host: str) -> int:
        """Forget every queued URL of ``host``, in memory and spilled (they stay in the
        store for the next run); the number forgotten."""
        self.save_credits(host)
        spilled = self._spilled.pop(host, 0)
        self._spilled_total -= spilled
        self._frontier.set_beyond(host, 0)
        self._waiting.pop(host, None)
        read = self._reads.pop(host, None)
        if read is not None:  # its rows are dropped when it returns
            self._reserved -= read.want
        return self._frontier.drop_host(host) + spilled

    def next_ready_at(self) -> float | None:
        """``Frontier.next_ready_at``: the earliest ready time in memory (epoch s)."""
        return self._frontier.next_ready_at()

    # --------------------------------------------------------------- figures

    def __len__(self) -> int:
        """URLs queued in memory."""
        return len(self._frontier)

    @property
    def spilled(self) -> int:
        """URLs waiting only in the store."""
        return self._spilled_total

    def total(self) -> int:
        """URLs queued, in memory and spilled."""
        return len(self._frontier) + self._spilled_total

    def by_priority(self) -> tuple[int, ...]:
        """``Frontier.by_priority``: URLs queued in memory per priority (0 = highest);
        spilled URLs are counted in :attr:`spilled` only."""
        return self._frontier.by_priority()

    def queued(self, host: str) -> int:
        """URLs of ``host`` waiting, in memory and spilled."""
        return self._frontier.queued(host) + self._spilled.get(host, 0)

    def in_memory(self, host: str) -> int:
        """URLs of ``host`` queued in memory."""
        return self._frontier.queued(host)

    def hosts_active(self, busy: set[str]) -> int:
        """Hosts with URLs queued (in memory or spilled) or a fetch in flight (``busy``)."""
        frontier = self._frontier
        active = frontier.hosts() + sum(1 for host in busy if not frontier.queued(host))
        if self._spilled:
            active += sum(
                1 for host in self._spilled if not frontier.queued(host) and host not in busy
            )
        return active

    def soonest(self, n: int) -> list[str]:
        """``Frontier.soonest``: the ``n`` hosts next in the ready heap."""
        return self._frontier.soonest(n)

    def peek(self, host: str, n: int) -> list[FrontierEntry]:
        """``Frontier.peek``: the first ``n`` in-memory URLs of ``host``."""
        return self._frontier.peek(host, n)

    def statistics(self) -> WindowStatistics:
        """The window's figures now."""
        return WindowStatistics(
            in_memory=len(self._frontier),
            spilled=self._spilled_total,
            spilled_hosts=len(self._spilled),
            waiting_hosts=len(self._waiting),
            read_back=self.read_back_total,
            window=self._window,
            host_share=self._host_cap,
        )


__all__ = ["FrontierWindow", "WindowStatistics"]
