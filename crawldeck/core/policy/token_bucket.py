"""A token bucket kept as one number: GCRA, the "generic cell rate algorithm" (pure).

The bucket of each host's politeness (``core.policy.politeness``: the long-run rate, one token
per politeness delay or ``bucket_rate_per_s``) and of each address's request rate
(``core.policy.ip_limits``). ``now`` (wall-clock epoch seconds, ``float``) is passed to every call:
no clock is read, nothing waits.

Separate from ``core.policy.politeness`` because it is a rate limiter of its own, used by more
than the politeness of hosts; the per-host state (``core.policy.politeness_state``) is one.
"""

from __future__ import annotations

import math


class TokenBucket:
    """A token bucket kept as one number (GCRA, "theoretical arrival time").

    The bucket holds at most ``capacity`` tokens and gains ``rate_per_s`` tokens per
    second; it starts full. Internally it stores the emission interval
    ``1 / rate_per_s`` (s) and the time ``tat`` at which it would be full again, so
    reads are exact and never drift. ``take`` never refuses: taking from an empty
    bucket runs it into debt (``tokens`` goes below 0) and pushes ``ready_at`` out
    accordingly, so a forced request (e.g. a robots.txt fetch) still counts.

    Args:
        capacity: the most tokens held (the longest burst), ``>= 1``.
        rate_per_s: refill rate in tokens/s, ``> 0``; ``math.inf`` means no limit.
        now: the current time, epoch s (the bucket is full at ``now``).

    Raises:
        ValueError: ``capacity < 1`` or ``rate_per_s <= 0`` (or NaN).
    """

    __slots__ = ("_interval", "_tat", "capacity")

    def __init__(self, capacity: int, rate_per_s: float, now: float) -> None:
        if capacity < 1:
            raise ValueError(f"token bucket capacity must be >= 1, got {capacity!r}")
        self.capacity = capacity
        self._interval = _interval_of(rate_per_s)
        self._tat = now

    @property
    def rate_per_s(self) -> float:
        """The refill rate in tokens/s (``math.inf`` when unlimited)."""
        return math.inf if self._interval == 0.0 else 1.0 / self._interval

    def tokens(self, now: float) -> float:
        """Tokens available at ``now`` (float; ``<= capacity``, negative when in debt)."""
        interval = self._interval
        if interval == 0.0:
            return float(self.capacity)
        ahead = self._tat - now
        return self.capacity - (ahead / interval if ahead > 0.0 else 0.0)

    def ready_at(self, now: float) -> float:
        """The earliest time ``>= now`` (epoch s) at which one whole token is available."""
        ready = self._tat - (self.capacity - 1) * self._interval
        return ready if ready > now else now

    def take(self, now: float) -> None:
        """Take one token at ``now`` (epoch s); an empty bucket goes into debt."""
        tat = self._tat
        self._tat = (tat if tat > now else now) + self._interval

    def set_rate(self, rate_per_s: float, now: float) -> None:
        """Change the refill rate (tokens/s, ``> 0``, ``inf`` = unlimited) at ``now``.

        The tokens held at ``now`` are kept; only the refill from ``now`` on changes.

        Raises:
            ValueError: ``rate_per_s <= 0`` (or NaN).
        """
        self._set_interval(_interval_of(rate_per_s), now)

    def _set_interval(self, interval: float, now: float) -> None:
        """Set the emission interval (s per token) keeping the tokens held at ``now``."""
        missing = self.capacity - self.tokens(now)
        self._interval = interval
        self._tat = now + missing * interval


def _interval_of(rate_per_s: float) -> float:
    """Seconds per token for a rate in tokens/s; raises ``ValueError`` unless > 0."""
    if not rate_per_s > 0.0:
        raise ValueError(f"token bucket rate must be > 0 tokens/s, got {rate_per_s!r}")
    return 0.0 if math.isinf(rate_per_s) else 1.0 / rate_per_s


__all__ = ["TokenBucket"]
