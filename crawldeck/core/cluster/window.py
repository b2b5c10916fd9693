"""The frontier window of a cluster worker: Mercator's queues for the hosts it owns.

``SharedWindow`` is a ``core.policy.window.FrontierWindow`` whose store is the worker's
``ClusterStore``: every admitted URL goes to Redis (``spill_all``), and URLs come back
only for hosts the worker owns, through reads that hand them out under the host's
lease (``ClusterStore.pull``, awaited on the loop: no thread). What the engine sees is
unchanged: ``pop`` gives the next ready URL of an owned host, and when nothing is left
here ``drain`` waits for the worker to claim more hosts, or for the whole crawl to end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from crawldeck.core.cluster.leases import Leases
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.prioritizer import Prioritizer
from crawldeck.core.policy.window import FrontierWindow
from crawldeck.core.protocols import SpillStore
from crawldeck.core.records import FrontierRow


class WorkSource(Protocol):
    """Where a worker's hosts come from (``core.cluster.worker.Worker``)."""

    @property
    def finished(self) -> bool:
        """The whole crawl has nothing queued, handed out or owned any more."""
        ...

    def poke(self) -> None:
        """Nothing is ready here: claim more hosts soon (without waiting)."""
        ...

    async def wait_for_work(self) -> None:
        """Return when hosts were claimed, the crawl finished, or a stop was asked."""
        ...

    def read_wait_s(self, host: str) -> float:
        """How long (s) a read of ``host``'s queued URLs, started as one of its URLs is
        handed out, may wait for another round trip to ride on."""
        ...


class SharedWindow(FrontierWindow):
    """A ``FrontierWindow`` over the shared frontier (see the module).

    Args:
        window, store, read_back: as ``FrontierWindow``'s (``store`` is the
            worker's ``ClusterStore``, read with ``pull``).
        leases: the hosts this worker owns.
        source: the worker, which claims hosts and knows when the crawl is over.
        prioritizer: the crawl's ordering (``FrontierWindow``'s): the order of the
            owned hosts' URLs once read back (Redis hands them out best priority first).
    """

    def __init__(
        self,
        window: int,
        store: SpillStore,
        read_back: Callable[[Sequence[FrontierRow]], None],
        *,
        leases: Leases,
        source: WorkSource,
        prioritizer: Prioritizer | None = None,
    ) -> None:
        super().__init__(window, store, read_back, spill_all=True, prioritizer=prioritizer)
        self._leases = leases
        self._source = source
        self._fresh: set[str] = set()  # hosts whose read the current pop started
        self._patient: dict[str, float] = {}  # host -> how long (s) its new read may wait

    def _read(self, host: str) -> None:
        """``FrontierWindow._read``, noting a read started (for ``pop``)."""
        had = host in self._reads
        super()._read(host)
        if not had and host in self._reads:
            self._fresh.add(host)

    def place(self, host: str, *, spill: bool = True) -> bool:
        """Every URL goes to Redis (``False``); it is counted as spilled here only for
        an owned host, whose URLs this worker reads back."""
        if not self._leases.owns(host):
            return False
        return super().place(host, spill=spill)

    def adopt(self, host: str, queued: int) -> None:
        """``host`` is owned now (claimed, or URLs arrived for it): ``queued`` of its
        URLs wait in Redis, to be read back."""
        have = self._spilled.get(host, 0)
        if queued > have:
            self._spilled[host] = queued
            self._spilled_total += queued - have
        if not self._frontier.queued(host) and host not in self._reads:
            self._waiting[host] = None

    def pop(self, now: float) -> FrontierEntry | None:
        """The next URL of an owned host ready at ``now``; URLs of a host whose lease
        ran out here are dropped (the host's new owner has them in Redis) and the host
        is not left checked out. A read of the popped URL's host started by the pop
        may wait ``source.read_wait_s(host)`` for another round trip to ride on (the
        host is busy with this URL for at least its politeness delay)."""
        while True:
            self._fresh.clear()
            entry = super().pop(now)
            if entry is None or self._leases.owns(entry.host):
                if entry is not None and entry.host in self._fresh:
                    self._patient[entry.host] = self._source.read_wait_s(entry.host)
                return entry
            self.drop_host(entry.host)
            # The pop checked the host out and no fetch will give it back: were it
            # claimed here again, its URLs would wait for a release that never comes.
            self.release(entry.host, now)

    async def _rows(self, host: str, after: int, want: int) -> tuple[list[FrontierRow], int]:
        """The read on the loop (``ClusterStore.read_spilled``: ``pull``, sent in the
        flush's pipeline after its pushes, no thread): one read, no flush and second read when it
        comes back short (issue #23 item 3: one round trip, not three); one started by
        a pop waits as ``pop`` says, any other goes at the next loop turn."""
        within_s = self._patient.pop(host, 0.0)
        return await self._store.read_spilled(host, after, want, within_s=within_s)

    def bring_in(self) -> None:
        """Read owned hosts back, and have the worker claim more."""
        super().bring_in()
        self._source.poke()

    async def drain(self) -> bool:
        """Nothing here and nothing in flight: read back what owned hosts have, else
        wait for the worker to claim hosts (``True``) or the crawl to end."""
        if super().spilled and await super().drain():
            return True
        await self._source.wait_for_work()
        return True

    def owned_spilled(self) -> int:
        """URLs of owned hosts waiting in Redis to be read back here."""
        return super().spilled

    @property
    def spilled(self) -> int:
        """URLs of owned hosts waiting in Redis, or 1 while the crawl is not over (the
        engine then waits in ``drain`` instead of ending)."""
        own = super().spilled
        return own if own or self._source.finished else 1


__all__ = ["SharedWindow", "WorkSource"]
