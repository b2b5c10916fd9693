"""Per-host politeness: spacing, a token bucket, a learnt rate limit, backoff, Retry-After.

Pure: no I/O, no clock reads, no asyncio. Every method takes ``now`` (wall-clock epoch
seconds, ``float``) and returns a decision; the engine does the waiting.

The rules (``docs/architecture.md``; defaults in ``shared/design.md``, "Defaults";
every number comes from ``PolitenessSettings``, built from ``CrawlConfig``). A
*success* is any response that is not 429, 503, another status >= 500, or no response
at all (timeout, connection lost, ``status=None``); an *error* is any of those.

* **Politeness delay** of a host, the least time from the end of its last fetch (and
  from the start of any fetch still in flight) to the start of its next one (see
  "Earliest start")::

      delay = max(delay_ms,                         # or the host's own (hosts)
                  min(Crawl-delay, max_delay_ms),                      # robots.txt
                  min(adaptive_delay_factor x response time, max_delay_ms),
                  learnt)                                              # rate limit

  Crawl-delay is not in RFC 9309; it is the de-facto extension honoured by most
  crawlers. A host with a ``[hosts."..."]`` ``delay_ms`` has that in place of
  ``delay_ms`` (a floor: Crawl-delay may still raise it, and ``max_delay_ms`` does
  not cap it). The adaptive part is set by each success; an error may raise it but
  never lowers it (a fast 429 must not make us faster; a slow 500 makes us slower).
* **Learnt delay** (AIMD, as TCP congestion control, RFC 5681 §3.1: multiplicative
  decrease of the rate on a congestion signal, additive increase otherwise). On 429 or
  503, ``learnt = min(max_delay_ms, 2 x max(learnt, delay_ms, Crawl-delay, step))``:
  the adaptive part is not doubled (it follows the server's response time and falls
  with the next fast answer: a 429 after one 4 s page doubled its 8 s into a learnt
  16 s that 1 600 successes took back, issue #25 trial 11); on each success it steps
  down by ``step = max(delay_ms / 10, 10 ms)`` (the host's own ``delay_ms`` when it has
  one) until it is 0. Other errors leave it alone. A 429/503 to a request sent before the
  last rise (``now - elapsed_s`` earlier than it) does not double it again: it is no
  news about the risen delay (TCP likewise reacts once per window of data); nor does
  one to a retry of a URL that failed before (``repeat``): one URL that always answers
  503 says nothing of the host's load (issue #25: a trial's one such URL doubled a
  200 ms delay to 6.4 s in six tries, 300 pages' worth of steps, and the next run
  began with it). The
  backoff below is cleared by a success, the learnt delay is not: it is *learnt*.
  With a server that refuses requests closer than ``W`` s, the delay climbs to about
  ``2 W`` and takes ``W / step`` successes to sink back to ``W``, so one request in
  roughly ``10 W / delay_ms + 1`` is refused (2.4 % at ``W = 2 s``, 500 ms).
* **Token bucket** per host of ``bucket_capacity`` tokens, refilled at one token per
  politeness delay, or at ``bucket_rate_per_s`` when that is lower. The delay bounds
  the spacing of a burst, the bucket the long-run average.
* **Backoff** on 429, 503 and on no response at all: ``attempt += 1``,
  ``wait = backoff_s(attempt, ...)`` and, when a valid Retry-After came (RFC 9110
  §10.2.3), ``max(wait, min(retry_after, retry_after_max_s))``. An HTTP-date
  Retry-After is measured against the response's own ``Date`` (the server's clock,
  RFC 9110 §6.6.1) when that is valid, else against ``now``. Any other status ends the
  backoff (the learnt delay stays).
* **Earliest start**: ``max(last_at + delay, bucket ready time, backoff_until)``,
  never before ``now``, where ``last_at`` is the later of the last request's start
  (``on_dispatch``) and the last end of one (``on_response`` / ``on_end``). The delay
  runs from the end of a fetch, as Heritrix and ``wget --wait`` count it, so the
  spacing of two requests *as the server sees them* is at least the delay even when a
  connection is slow to open; it is not start-to-start: with one fetch in flight at a
  time, two starts are the delay plus the first fetch's duration apart.
* **Demotion**: a host in continuous backoff (no other status since its first backoff)
  for ``demote_after_s`` or longer should leave the high-priority front queues.
* **Parking**: a host whose last ``park_after_backoffs`` responses were all backoff
  responses (429, 503, none), or whose backoff spans ``demote_after_s``, should be
  parked by the engine (``should_park``; ``park_reason`` says which, with its values).
* **Caps**: a Crawl-delay over ``max_delay_ms`` and a Retry-After over
  ``retry_after_max_s`` are cut, and the cut is returned (``Cap``: the value asked and
  the value used) for the engine to log once per host (issue #22 item 8).

State is one ``__slots__`` object per host (``core.policy.politeness_state``), created on the
first write (dispatch, response, Crawl-delay, restore); reads of an unknown host answer
with the defaults and create nothing.

The pieces this module puts together live in modules of their own: the token bucket
(``core.policy.token_bucket``, which ``core.policy.ip_limits`` uses too), the backoff wait and the
Retry-After value (``core.policy.backoff``), and the per-host state with the view of it
(``core.policy.politeness_state``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from dataclasses import dataclass

from crawldeck.core.config import CrawlConfig
from crawldeck.core.config_checks import HostOverride
from crawldeck.core.policy.backoff import BACKOFF_STATUSES, backoff_s, parse_retry_after
from crawldeck.core.policy.politeness_state import (
    DelaySource,
    HostPolitenessState,
    HostPolitenessView,
)

#: The least step (s) by which a learnt delay sinks per success, so that it decays even
#: with ``delay_ms = 0``; also the least learnt delay after a 429/503. 10 ms is below
#: the round-trip time of any real server beyond the local network.
LEARNT_STEP_MIN_S = 0.010


def seconds_text(seconds: float) -> str:
    """``seconds`` for a log line: at most 3 decimals, no trailing zeros (``999999``,
    ``0.25``, ``1``), a huge value in exponent form (``1e+300``)."""
    if not math.isfinite(seconds) or abs(seconds) >= 1e12:
        return f"{seconds:.3g}"
    return f"{seconds:.3f}".rstrip("0").rstrip(".")


@dataclass(frozen=True, slots=True)
class Cap:
    """A value a server asked for that politeness cut to one of the crawl's caps
    (issue #22 item 8: each is logged once per host with both values).

    Attributes:
        what: what the server said: ``"robots.txt Crawl-delay"`` or ``"Retry-After"``.
        asked_s: the value it asked for, s (a Retry-After HTTP-date as s from now).
        used_s: the value used, s (the cap).
        setting: the config key of the cap: ``max_delay_ms`` or ``retry_after_max_s``.
        limit: that key's value, in its own unit (ms or s).
    """

    what: str
    asked_s: float
    used_s: float
    setting: str
    limit: int

    def line(self, host: str) -> str:
        """The log line of this cap on ``host``, e.g. ``"a.test: robots.txt Crawl-delay
        of 100 s cut to 1 s (max_delay_ms = 1000)"``."""
        return (
            f"{host}: {self.what} of {seconds_text(self.asked_s)} s cut to "
            f"{seconds_text(self.used_s)} s ({self.setting} = {self.limit})"
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """What ``Politeness.on_response`` decided about one response.

    Attributes:
        retry: the URL should be tried again (429, 503, timeout, connection lost);
            the engine checks its try count against ``max_retries``.
        backoff_s: the host's backoff wait from now in s (``0.0`` when none).
        capped: the response's Retry-After cut at ``retry_after_max_s``, else ``None``.
    """

    retry: bool
    backoff_s: float
    capped: Cap | None = None


_NO_RETRY = Outcome(retry=False, backoff_s=0.0)


@dataclass(frozen=True, slots=True)
class PolitenessSettings:
    """The settings ``Politeness`` uses, named and counted as ``CrawlConfig``'s keys.

    Attributes:
        delay_ms: the default politeness delay (ms, ``>= 0``), end of the last fetch
            to the next start (module doc, "Earliest start").
        bucket_capacity: tokens of each host's bucket (``>= 1``).
        bucket_rate_per_s: a cap on each host's long-run rate (requests/s, ``> 0``);
            ``None``: one token per politeness delay.
        adaptive_delay_factor: delay >= this x the last fetch's duration (0: off).
        max_delay_ms: cap (ms) on the Crawl-delay, adaptive and learnt parts.
        backoff_base_ms, backoff_max_ms: the backoff ``min(max, base x 2^(n-1))``
            plus jitter up to half of it (ms).
        retry_after_max_s: a Retry-After longer than this (s) is cut to it.
        demote_after_s: continuous backoff (s) after which a host is demoted, and
            which a host's backoff may not span without it being parked.
        park_after_backoffs: straight backoff responses after which a host is parked.

    Not checked here: ``from_config`` takes them from a ``CrawlConfig``, which
    checked their ranges.
    """

    delay_ms: int
    bucket_capacity: int
    bucket_rate_per_s: float | None
    adaptive_delay_factor: float
    max_delay_ms: int
    backoff_base_ms: int
    backoff_max_ms: int
    retry_after_max_s: int
    demote_after_s: int
    park_after_backoffs: int

    @classmethod
    def from_config(cls, config: CrawlConfig) -> PolitenessSettings:
        """The politeness settings of ``config`` (its keys of the same names)."""
        return cls(
            delay_ms=config.delay_ms,
            bucket_capacity=config.bucket_capacity,
            bucket_rate_per_s=config.bucket_rate_per_s,
            adaptive_delay_factor=config.adaptive_delay_factor,
            max_delay_ms=config.max_delay_ms,
            backoff_base_ms=config.backoff_base_ms,
            backoff_max_ms=config.backoff_max_ms,
            retry_after_max_s=config.retry_after_max_s,
            demote_after_s=config.demote_after_s,
            park_after_backoffs=config.park_after_backoffs,
        )


class Politeness:
    """Per-host politeness decisions for a whole crawl (pure; ``now`` passed in).

    Args:
        settings: the delays, bucket, backoff and parking numbers
            (``PolitenessSettings.from_config(config)``).
        rng: the source of backoff jitter (default: a fresh ``random.Random()``).
        hosts: the crawl's per-host settings (``CrawlConfig.hosts``): a host whose
            entry has a ``delay_ms`` has it as its delay floor in place of
            ``settings.delay_ms``.

    Hosts are host keys (``urls.host_key``); unknown hosts are fine everywhere. In-flight
    counts (``per_host_concurrency``) are the engine's business, not this class's.
    Nothing here raises.
    """

    __slots__ = (
        "_backoff_base_s",
        "_backoff_max_s",
        "_capacity",
        "_default_s",
        "_demote_after_s",
        "_factor",
        "_host_default_s",
        "_hosts",
        "_learnt_step_s",
        "_max_delay_ms",
        "_max_delay_s",
        "_min_interval_s",
        "_park_after",
        "_retry_after_max_s",
        "_rng",
    )

    def __init__(
        self,
        settings: PolitenessSettings,
        rng: random.Random | None = None,
        *,
        hosts: Iterable[HostOverride] = (),
    ) -> None:
        self._rng = rng if rng is not None else random.Random()
        self._default_s = settings.delay_ms / 1000.0
        self._max_delay_ms = settings.max_delay_ms
        self._max_delay_s = settings.max_delay_ms / 1000.0
        self._factor = settings.adaptive_delay_factor
        self._capacity = settings.bucket_capacity
        rate = settings.bucket_rate_per_s
        self._min_interval_s = 1.0 / rate if rate is not None else 0.0
        self._backoff_base_s = settings.backoff_base_ms / 1000.0
        self._backoff_max_s = settings.backoff_max_ms / 1000.0
        self._retry_after_max_s = float(settings.retry_after_max_s)
        self._demote_after_s = float(settings.demote_after_s)
        self._park_after = settings.park_after_backoffs
        step = self._default_s / 10.0
        self._learnt_step_s = step if step > LEARNT_STEP_MIN_S else LEARNT_STEP_MIN_S
        self._host_default_s = {
            entry.host: entry.delay_ms / 1000.0 for entry in hosts if entry.delay_ms is not None
        }
        self._hosts: dict[str, HostPolitenessState] = {}

    # -- state helpers ---------------------------------------------------------------

    def _state(self, host: str) -> HostPolitenessState:
        """The host's state, created on first use."""
        state = self._hosts.get(host)
        if state is None:
            delay = self._host_default_s.get(host, self._default_s)
            state = HostPolitenessState(self._capacity, delay, max(delay, self._min_interval_s))
            self._hosts[host] = state
        return state

    def _recompute(self, state: HostPolitenessState) -> None:
        """Refresh the cached delay (s) and the bucket interval it calls for."""
        delay = state.default_s  # inlined: this runs once per response
        crawl = state.crawl_delay_s
        if crawl is not None and crawl > delay:
            delay = crawl
        if state.adaptive_s > delay:
            delay = state.adaptive_s
        if state.learnt_s > delay:
            delay = state.learnt_s
        state.delay_s = delay
        state.want = delay if delay > self._min_interval_s else self._min_interval_s

    @staticmethod
    def _sync(state: HostPolitenessState, now: float) -> None:
        """Bring the bucket's refill rate in line with the delay, keeping its tokens."""
        if state.want != state._interval:
            state._set_interval(state.want, now)

    # -- inputs ----------------------------------------------------------------------

    def set_crawl_delay(self, host: str, seconds: float | None) -> Cap | None:
        """Record robots.txt's Crawl-delay for ``host`` in s (``None``: none given).

        Capped at ``max_delay_ms``; negative or NaN values count as none. Crawl-delay
        is not part of RFC 9309; it is the de-facto extension most crawlers honour.
        The bucket's refill rate follows at the next call that passes ``now``.

        Returns:
            the ``Cap`` (asked, used) when ``seconds`` is over ``max_delay_ms``, else
            ``None``; every call with such a value returns one (the caller logs it
            once per host).
        """
        state = self._state(host)
        capped = self._cap_delay(seconds)
        state.crawl_delay_s = capped
        self._recompute(state)
        if seconds is not None and capped is not None and seconds > capped:
            limit = self._max_delay_ms
            return Cap("robots.txt Crawl-delay", seconds, capped, "max_delay_ms", limit)
        return None

    def _cap_delay(self, seconds: float | None) -> float | None:
        """A delay in s capped at ``max_delay_ms``; ``None`` for none/negative/NaN."""
        if seconds is None or not seconds >= 0.0:
            return None
        return seconds if seconds < self._max_delay_s else self._max_delay_s

    def on_dispatch(self, host: str, now: float) -> None:
        """A request to ``host`` starts at ``now`` (epoch s): record it, take a token."""
        state = self._state(host)
        if state.want != state._interval:
            state._set_interval(state.want, now)
        state.last_at = now
        state.take(now)

    def on_end(self, host: str, now: float) -> None:
        """A request to ``host`` ended at ``now`` (epoch s): the delay runs from here.

        ``on_response`` does this too; use ``on_end`` alone where nothing else is to
        be learnt (a request that failed in a way that says nothing of the server's
        load).
        """
        state = self._state(host)
        if state.last_at is None or now > state.last_at:
            state.last_at = now

    def on_response(
        self,
        host: str,
        now: float,
        status: int | None,
        elapsed_s: float,
        retry_after: str | None,
        *,
        date: str | None = None,
        repeat: bool = False,
    ) -> Outcome:
        """Learn from the end of a request to ``host`` at ``now`` (epoch s).

        Args:
            status: the HTTP status, or ``None`` when no response came (timeout,
                connection lost).
            elapsed_s: the request's duration in s (negative counts as 0). After a
                success (not 429, 503, another status >= 500 or ``None``) the adaptive
                delay becomes ``min(max_delay, factor x elapsed_s)``; after an error it
                becomes that only if it is larger (an error never lowers a delay).
            retry_after: the raw ``Retry-After`` header value, if any.
            date: the raw ``Date`` header value, if any: an HTTP-date Retry-After is
                measured against it (see ``backoff.parse_retry_after``).
            repeat: the request retried a URL that failed before: its 429/503 backs
                the host off but leaves the learnt delay alone (module doc).

        Returns:
            ``Outcome(retry=True, backoff_s=wait)`` for 429, 503 and ``None``: the
            backoff attempt count goes up and the host waits ``wait`` s, which is
            ``backoff_s(attempt, backoff_base, backoff_max)`` or the Retry-After (capped
            at ``retry_after_max_s``) if that is longer (RFC 9110 §10.2.3, §15.6.4;
            RFC 6585 §4); 429 and 503 also double the learnt delay (module doc).
            ``capped`` is the ``Cap`` when that Retry-After was over the cap.
            ``Outcome(False, 0.0)`` for any other status, which also ends the backoff;
            a success also steps the learnt delay down.
        """
        state = self._state(host)
        state.last_status = status
        if state.last_at is None or now > state.last_at:
            state.last_at = now
        success = status is not None and status < 500 and status != 429
        changed = False
        if self._factor > 0.0:
            adaptive = self._factor * elapsed_s if elapsed_s > 0.0 else 0.0
            if adaptive > self._max_delay_s:
                adaptive = self._max_delay_s
            # A success sets it; an error may only raise it (a fast 429 is no reason
            # to go faster, a slow 500 is one to go slower).
            if adaptive > state.adaptive_s or (success and adaptive != state.adaptive_s):
                state.adaptive_s = adaptive
                changed = True
        if success:
            if state.learnt_s > 0.0:
                learnt = state.learnt_s - self._learnt_step(state)
                # Float rounding may leave a few ns of the last step: that is gone too.
                state.learnt_s = learnt if learnt > 1e-9 else 0.0
                changed = True
        elif (
            status in BACKOFF_STATUSES and not repeat and self._raise_learnt(state, now, elapsed_s)
        ):
            changed = True
        if changed:
            self._recompute(state)
        if state.want != state._interval:
            state._set_interval(state.want, now)
        retry_after_s = (
            parse_retry_after(retry_after, now, date) if retry_after is not None else None
        )
        state.retry_after_s = retry_after_s
        if status is None or status in BACKOFF_STATUSES:
            state.attempts += 1
            wait = backoff_s(state.attempts, self._backoff_base_s, self._backoff_max_s, self._rng)
            capped: Cap | None = None
            if retry_after_s is not None:
                honoured = min(retry_after_s, self._retry_after_max_s)
                if honoured > wait:
                    wait = honoured
                if retry_after_s > honoured:
                    limit = int(self._retry_after_max_s)
                    capped = Cap("Retry-After", retry_after_s, honoured, "retry_after_max_s", limit)
            state.backoff_until = now + wait
            state.backoff_wait_s = wait
            if state.backoff_started is None:
                state.backoff_started = now
            return Outcome(retry=True, backoff_s=wait, capped=capped)
        if state.attempts or state.backoff_until is not None or state.backoff_started is not None:
            state.attempts = 0
            state.backoff_until = None
            state.backoff_started = None
            state.backoff_wait_s = 0.0
        return _NO_RETRY

    def _learnt_step(self, state: HostPolitenessState) -> float:
        """The step (s) of the host's learnt delay: a tenth of its floor, >= 10 ms."""
        if state.default_s == self._default_s:
            return self._learnt_step_s
        step = state.default_s / 10.0
        return step if step > LEARNT_STEP_MIN_S else LEARNT_STEP_MIN_S

    def _raise_learnt(self, state: HostPolitenessState, now: float, elapsed_s: float) -> bool:
        """Double the learnt delay on a 429/503 ending at ``now`` (module doc, AIMD).

        Skipped for a request sent (``now - elapsed_s``) before the last rise: it was
        spaced by the old delay, so it tells nothing about the new one. Returns whether
        the learnt delay rose (the caller then recomputes the delay).
        """
        sent = now - elapsed_s if elapsed_s > 0.0 else now
        if sent < state.raised_at:
            return False
        learnt = state.learnt_s
        base = state.default_s  # the rate asked for or chosen: not the adaptive part
        crawl = state.crawl_delay_s
        if crawl is not None and crawl > base:
            base = crawl
        if base > learnt:
            learnt = base
        step = self._learnt_step(state)
        if step > learnt:
            learnt = step
        learnt *= 2.0
        state.learnt_s = learnt if learnt < self._max_delay_s else self._max_delay_s
        state.raised_at = now
        return True

    def restore(
        self,
        host: str,
        *,
        crawl_delay_s: float | None,
        backoff_attempts: int,
        backoff_until: float | None,
        backoff_started: float | None,
        learnt_delay_s: float | None = None,
    ) -> None:
        """Put back a host's saved state on resume (values from the ``hosts`` table).

        ``crawl_delay_s`` is capped as in ``set_crawl_delay``; a negative attempt count
        counts as 0; ``learnt_delay_s`` (s, ``None`` for none) is capped at
        ``max_delay_ms``, and a negative or NaN one counts as none. The bucket starts
        full and no last start is known.
        """
        state = self._state(host)
        state.crawl_delay_s = self._cap_delay(crawl_delay_s)
        learnt = self._cap_delay(learnt_delay_s)
        state.learnt_s = 0.0 if learnt is None else learnt
        state.attempts = backoff_attempts if backoff_attempts > 0 else 0
        state.backoff_until = backoff_until
        state.backoff_started = backoff_started
        # The jittered wait itself is not saved; its nominal value is close enough
        # for ``view``'s delay_ms.
        state.backoff_wait_s = (
            min(self._backoff_max_s, self._backoff_base_s * 2.0 ** min(state.attempts - 1, 1000))
            if state.attempts > 0 and backoff_until is not None
            else 0.0
        )
        self._recompute(state)

    # -- decisions -------------------------------------------------------------------

    def delay_s(self, host: str) -> float:
        """The politeness delay of ``host`` in s (without backoff), see module doc."""
        state = self._hosts.get(host)
        if state is None:
            return self._host_default_s.get(host, self._default_s)
        return state.delay_s

    def earliest(self, host: str, now: float) -> float:
        """The earliest start (epoch s, ``>= now``) of the next fetch on ``host``.

        ``max(now, last_at + delay, bucket ready time, backoff_until)``.
        """
        state = self._hosts.get(host)
        if state is None:
            return now
        if state.want != state._interval:
            state._set_interval(state.want, now)
        at = state.ready_at(now)
        last = state.last_at
        if last is not None and last + state.delay_s > at:
            at = last + state.delay_s
        until = state.backoff_until
        if until is not None and until > at:
            at = until
        return at

    def should_demote(self, host: str, now: float) -> bool:
        """Whether ``host`` has been in continuous backoff for ``>= demote_after_s``.

        Continuous: no response other than 429/503/none since its first backoff.
        """
        state = self._hosts.get(host)
        if state is None or state.backoff_started is None:
            return False
        return now - state.backoff_started >= self._demote_after_s

    def should_park(self, host: str) -> bool:
        """Whether ``host`` should be parked: its last ``park_after_backoffs`` responses
        were all backoff responses (429, 503 or none at all) with nothing else in
        between, or its continuous backoff, up to the end of the wait it is in now,
        spans ``demote_after_s`` or more (a ``Retry-After: 3600`` parks at once instead
        of after 8 hours).

        The engine parks such a host (it stops fetching it this run); the count survives
        a resume through ``restore``'s ``backoff_attempts``.
        """
        return self.park_reason(host) is not None

    def park_reason(self, host: str) -> str | None:
        """Why ``host`` should be parked (``should_park``), naming the cause and its
        values, or ``None`` when it should not be:

        * ``"8 straight 429/503 or no answer (park_after_backoffs = 8)"``;
        * ``"Retry-After of 999999 s cut to 3600 s (retry_after_max_s = 3600): a
          backoff of 3600 s, at least demote_after_s = 3600 s"`` when the last
          response's Retry-After set the wait that made the backoff that long;
        * ``"a backoff of 4000 s since its first 429/503 or no answer, at least
          demote_after_s = 3600 s"`` otherwise (backoff_max_ms grown waits).
        """
        state = self._hosts.get(host)
        if state is None or not state.attempts:
            return None
        if state.attempts >= self._park_after:
            return (
                f"{state.attempts} straight 429/503 or no answer "
                f"(park_after_backoffs = {self._park_after})"
            )
        started, until = state.backoff_started, state.backoff_until
        if started is None or until is None or until - started < self._demote_after_s:
            return None
        span = seconds_text(until - started)
        floor = f"at least demote_after_s = {seconds_text(self._demote_after_s)} s"
        asked = state.retry_after_s
        if asked is not None and min(asked, self._retry_after_max_s) >= state.backoff_wait_s:
            used = min(asked, self._retry_after_max_s)
            said = f"Retry-After of {seconds_text(asked)} s"
            if asked > used:
                limit = int(self._retry_after_max_s)
                said += f" cut to {seconds_text(used)} s (retry_after_max_s = {limit})"
            return f"{said}: a backoff of {span} s, {floor}"
        return f"a backoff of {span} s since its first 429/503 or no answer, {floor}"

    def view(self, host: str, now: float) -> HostPolitenessView:
        """A ``HostPolitenessView`` of ``host`` at ``now`` (epoch s); never creates state."""
        state = self._hosts.get(host)
        own = host in self._host_default_s
        if state is None:
            return HostPolitenessView(
                delay_ms=self._host_default_s.get(host, self._default_s) * 1000.0,
                delay_source="override" if own else "default",
                tokens=float(self._capacity),
                backoff_attempts=0,
                backoff_until=None,
                last_status=None,
                retry_after_s=None,
                demoted=False,
            )
        self._sync(state, now)
        source: DelaySource = "override" if own else "default"
        delay = state.default_s
        crawl = state.crawl_delay_s
        if crawl is not None and crawl > delay:
            source, delay = "crawl_delay", crawl
        if state.adaptive_s > delay:
            source, delay = "adaptive", state.adaptive_s
        if state.learnt_s > delay:
            source, delay = "rate_limit", state.learnt_s
        until = state.backoff_until
        if until is not None and until > now and state.backoff_wait_s > delay:
            source, delay = "backoff", state.backoff_wait_s
        return HostPolitenessView(
            delay_ms=delay * 1000.0,
            delay_source=source,
            tokens=state.tokens(now),
            backoff_attempts=state.attempts,
            backoff_until=until,
            last_status=state.last_status,
            retry_after_s=state.retry_after_s,
            demoted=self.should_demote(host, now),
            crawl_delay_s=crawl,
            backoff_started=state.backoff_started,
            # Rounded to ns so that s -> ms does not show a cap as a hair above it.
            learnt_delay_ms=round(state.learnt_s * 1000.0, 6),
        )

    def hosts(self) -> int:
        """The number of hosts with state (created by a write, never by a read)."""
        return len(self._hosts)


__all__ = [
    "LEARNT_STEP_MIN_S",
    "Cap",
    "Outcome",
    "Politeness",
    "PolitenessSettings",
    "seconds_text",
]
