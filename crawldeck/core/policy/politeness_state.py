"""One host's politeness state and the read-only picture of it (pure: plain data).

``HostPolitenessState`` is what ``core.policy.politeness.Politeness`` keeps per host: its
token bucket (``core.policy.token_bucket``) and the parts of its delay, its backoff and what
the last response said, one ``__slots__`` object per host created at the first write.
``HostPolitenessView`` is what it shows of that state (the console's host detail, the
``hosts`` table, ``restore`` on resume), with ``DelaySource`` naming which part of the
delay is in force.

Separate from ``core.policy.politeness``: the state is data the decisions read and write, and
the view crosses to the gate, the store and the console, which need no decisions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from crawldeck.core.policy.token_bucket import TokenBucket

#: Which part of a host's delay is in force (``HostPolitenessView.delay_source``).
DelaySource = Literal["default", "override", "crawl_delay", "adaptive", "rate_limit", "backoff"]


@dataclass(frozen=True, slots=True)
class HostPolitenessView:
    """A read-only picture of one host's politeness state (console, ``hosts`` table).

    Attributes:
        delay_ms: the largest spacing part in force now, in ms (float): the backoff
            wait while backing off if it is the largest, else the politeness delay.
        delay_source: which part that is: ``default`` (``delay_ms``), ``override``
            (the host's own ``delay_ms``, from its ``[hosts."..."]`` table), ``crawl_delay``
            (robots.txt), ``adaptive`` (factor x response time), ``rate_limit`` (the
            learnt delay) or ``backoff``; a part must exceed the ones before it in this
            list strictly to be named.
        tokens: tokens in the bucket now (float, negative when in debt).
        backoff_attempts: consecutive backoff responses (0 when not backing off).
        backoff_until: epoch s before which the host is not fetched, or ``None``.
        last_status: the last HTTP status, ``None`` when there was no response yet
            or the last try got none (timeout, connection lost).
        retry_after_s: the last response's valid Retry-After in s (before the cap),
            or ``None``.
        demoted: the host has been in continuous backoff for ``demote_after_s``.
        crawl_delay_s: robots.txt Crawl-delay in s after the cap, or ``None``
            (for the ``hosts`` table and ``restore``).
        backoff_started: epoch s of the first backoff of the current continuous
            backoff, or ``None`` (for ``restore``).
        learnt_delay_ms: the learnt rate-limit delay in ms (float, ``0.0`` when none;
            it may be below the delay in force and then does not bind; for ``restore``).
    """

    delay_ms: float
    delay_source: DelaySource
    tokens: float
    backoff_attempts: int
    backoff_until: float | None
    last_status: int | None
    retry_after_s: float | None
    demoted: bool
    crawl_delay_s: float | None = None
    backoff_started: float | None = None
    learnt_delay_ms: float = 0.0


class HostPolitenessState(TokenBucket):
    """All politeness state of one host: its token bucket plus the fields below.

    ``default_s`` is the host's floor (``delay_ms`` or its own, s); ``want`` is the
    bucket interval the delay calls for; the bucket's own interval
    follows it at the next call that has a ``now`` (``Politeness._sync``). ``learnt_s``
    is the learnt delay (s), ``raised_at`` the epoch s of its last rise.
    """

    __slots__ = (
        "adaptive_s",
        "attempts",
        "backoff_started",
        "backoff_until",
        "backoff_wait_s",
        "crawl_delay_s",
        "default_s",
        "delay_s",
        "last_at",
        "last_status",
        "learnt_s",
        "raised_at",
        "retry_after_s",
        "want",
    )

    def __init__(self, capacity: int, delay_s: float, interval: float) -> None:
        """A full bucket of ``capacity`` tokens refilled one per ``interval`` s, and the
        delay floor ``delay_s`` (s); no delay part, backoff or response known yet."""
        self.capacity = capacity
        self._interval = interval
        self._tat = -math.inf  # full, whatever ``now`` is
        self.want = interval
        self.default_s = delay_s
        self.delay_s = delay_s
        self.crawl_delay_s: float | None = None
        self.adaptive_s = 0.0
        self.learnt_s = 0.0
        self.raised_at = -math.inf
        self.last_at: float | None = None
        self.attempts = 0
        self.backoff_until: float | None = None
        self.backoff_started: float | None = None
        self.backoff_wait_s = 0.0
        self.last_status: int | None = None
        self.retry_after_s: float | None = None


__all__ = ["DelaySource", "HostPolitenessState", "HostPolitenessView"]
