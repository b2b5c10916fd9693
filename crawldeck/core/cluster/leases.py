"""The hosts a worker owns, as it knows them: lease epochs and local deadlines.

A worker owns a host while Redis holds ``"<worker> <epoch>"`` under the host's
``:lease`` key (``core.cluster.scripts``). Redis is the judge (every write checks the
epoch), but the worker must also stop *fetching* on its own when it cannot be sure the
lease still holds: it counts a lease valid until ``sent + lease_ms * SAFETY`` on its
monotonic clock, where ``sent`` is when it sent the acquire or the last renew that
succeeded (the server's TTL started later than that). A worker frozen by ``SIGSTOP``
past that point finds, on waking, every lease expired locally and fetches nothing for
those hosts; its writes then meet another epoch in Redis and are refused.

Times: seconds of the worker's one clock (``core.clock.LoopClock``: the loop's monotonic
clock read as epoch seconds; issue #24 item 6) for deadlines; lease lengths in ms.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

#: The share of the lease a worker counts on: renewals every ``RENEW_SHARE`` of it,
#: fetching stops at ``SAFETY`` of it after the send time of the last renewal.
SAFETY: Final = 0.8
RENEW_SHARE: Final = 0.25


@dataclass(slots=True)
class Lease:
    """One owned host: its lease ``epoch`` and the local ``deadline`` (s of the clock)."""

    host: str
    epoch: int
    deadline: float


class Leases:
    """The hosts this worker owns (see the module).

    Args:
        lease_ms: the lease length in ms (``cluster_lease_ms``).
        clock: the worker's clock, seconds (a test's fake); it must not step back.
        on_lost: called with a host when its lease is found gone (expired locally,
            refused by Redis, or not renewed), once per loss.
    """

    def __init__(
        self,
        lease_ms: int,
        *,
        clock: Callable[[], float],
        on_lost: Callable[[str], None] | None = None,
    ) -> None:
        self.lease_ms = lease_ms
        self._span = lease_ms / 1000 * SAFETY
        self._now = clock
        self._owned: dict[str, Lease] = {}
        self._on_lost = on_lost
        self.lost_total = 0

    def take(self, host: str, epoch: int, sent: float) -> None:
        """``host`` was acquired with ``epoch`` by a request sent at ``sent`` (s of the clock)."""
        self._owned[host] = Lease(host, epoch, sent + self._span)

    def renewed(self, host: str, epoch: int, sent: float) -> None:
        """The renewal of ``host``'s lease sent at ``sent`` succeeded."""
        lease = self._owned.get(host)
        if lease is not None and lease.epoch == epoch:
            lease.deadline = max(lease.deadline, sent + self._span)

    def epoch(self, host: str) -> int | None:
        """The epoch of ``host``'s lease if this worker may still act for it now, else
        ``None`` (an expired lease is dropped here, and reported lost)."""
        lease = self._owned.get(host)
        if lease is None:
            return None
        if self._now() >= lease.deadline:
            self.lose(host)
            return None
        return lease.epoch

    def owns(self, host: str) -> bool:
        """Whether this worker may act for ``host`` now (``epoch`` is not ``None``)."""
        return self.epoch(host) is not None

    def lose(self, host: str) -> None:
        """``host``'s lease is gone (refused, expired, not renewed): forget it."""
        if self._owned.pop(host, None) is not None:
            self.lost_total += 1
            if self._on_lost is not None:
                self._on_lost(host)

    def give_up(self, host: str) -> None:
        """``host`` was released to Redis by this worker."""
        self._owned.pop(host, None)

    def expire_due(self) -> list[str]:
        """Drop every lease past its local deadline; the hosts dropped."""
        now = self._now()
        due = [h for h, lease in self._owned.items() if now >= lease.deadline]
        for host in due:
            self.lose(host)
        return due

    def held(self) -> list[Lease]:
        """The leases held now (expired ones are not dropped here)."""
        return list(self._owned.values())

    def __len__(self) -> int:
        """Hosts owned."""
        return len(self._owned)

    def __iter__(self) -> Iterator[str]:
        """The hosts owned."""
        return iter(list(self._owned))


__all__ = ["RENEW_SHARE", "SAFETY", "Lease", "Leases"]
