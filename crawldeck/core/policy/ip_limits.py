"""The per-IP limit (``ip_delay_ms``) shared by every host that resolves to one
address, keyed by IP address (issue #4), and its settings.

Separate from ``core.net.dns`` because it resolves nothing: it is politeness, applied to an
address instead of a host (``core.policy.gate`` asks it when an address may get its next
request; the cluster books it across workers in ``core.cluster.addresses``). Pure:
``now`` (wall-clock epoch seconds) is passed to every call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from crawldeck.core.config import CrawlConfig
from crawldeck.core.policy.token_bucket import TokenBucket


@dataclass(frozen=True, slots=True)
class IpLimitSettings:
    """The settings ``IpLimiter`` uses.

    Attributes:
        ip_delay_ms: the per-IP delay in ms (``>= 0``; 0: no per-IP limit): the
            config's ``ip_delay_ms``, or its ``delay_ms`` when that is ``None``.
        bucket_capacity: tokens of each address's bucket (``>= 1``), refilled at one
            per delay (the config's ``bucket_capacity``).
    """

    ip_delay_ms: int
    bucket_capacity: int

    @classmethod
    def from_config(cls, config: CrawlConfig) -> IpLimitSettings:
        """The per-IP settings of ``config``: ``ip_delay_ms``, else ``delay_ms``."""
        delay = config.delay_ms if config.ip_delay_ms is None else config.ip_delay_ms
        return cls(ip_delay_ms=delay, bucket_capacity=config.bucket_capacity)


class IpLimiter:
    """The per-IP limit shared by every host that resolves to one address (issue #4),
    in addition to each host's own politeness (pure; ``now`` passed in, epoch s).

    Args:
        settings: ``ip_delay_ms`` and ``bucket_capacity``
            (``IpLimitSettings.from_config(config)``).

    A request to an address starts at least ``ip_delay_ms`` after the later of the
    last start (``on_dispatch``) and the last end (``on_end``) of a request to it, and
    takes a token from the address's bucket, refilled at one token per delay: the
    spacing rule of ``core.policy.politeness`` ("Earliest start") with no adaptive part,
    Crawl-delay or backoff (those stay per host). Unknown addresses are ready at once;
    nothing here raises.
    """

    __slots__ = ("_addresses", "_capacity", "_delay_s", "_rate_per_s")

    def __init__(self, settings: IpLimitSettings) -> None:
        self._delay_s = settings.ip_delay_ms / 1000.0
        self._rate_per_s = 1.0 / self._delay_s if self._delay_s > 0.0 else math.inf
        self._capacity = settings.bucket_capacity
        self._addresses: dict[str, _Address] = {}

    def _address(self, ip: str, now: float) -> _Address:
        """``ip``'s state, made on first use (its bucket full at ``now``)."""
        state = self._addresses.get(ip)
        if state is None:
            state = self._addresses[ip] = _Address(self._capacity, self._rate_per_s, now)
        return state

    def earliest(self, ip: str, now: float) -> float:
        """The earliest start (epoch s, ``>= now``) of the next request to ``ip``:
        ``max(now, last_at + ip_delay, bucket ready time)``."""
        state = self._addresses.get(ip)
        if state is None:
            return now
        at = state.last_at + self._delay_s
        ready = state.ready_at(now)
        return at if at > ready else ready

    #: What the console shows: ``earliest`` (asking it changes nothing here).
    shown = earliest

    def on_dispatch(self, ip: str, now: float) -> None:
        """A request to ``ip`` starts at ``now`` (epoch s): record it, take a token."""
        state = self._address(ip, now)
        state.take(now)
        if now > state.last_at:
            state.last_at = now

    def on_end(self, ip: str, now: float) -> None:
        """A request to ``ip`` ended at ``now`` (epoch s): the delay runs from here
        unless a later request has started since."""
        state = self._address(ip, now)
        if now > state.last_at:
            state.last_at = now


class _Address(TokenBucket):
    """One address's bucket and ``last_at``: the later of its last request's start and
    the last end of one (epoch s)."""

    __slots__ = ("last_at",)

    def __init__(self, capacity: int, rate_per_s: float, now: float) -> None:
        super().__init__(capacity, rate_per_s, now)
        self.last_at = now


__all__ = ["IpLimitSettings", "IpLimiter"]
