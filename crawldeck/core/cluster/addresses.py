"""The per-IP limit of a cluster worker: one address's pace held across workers.

Hosts that share an address may be owned by different workers (issue #12 item 2):
each worker's ``IpLimiter`` sees only its own requests, so the address's next slot is
kept in Redis (``Keyspace.ip_next``) and every request to an address is *booked*
there first (``IP_BOOK``: the slot ``max(wanted, next free)``, the next free slot a
delay later), and the end of each request moves the next free slot to at least a
delay after it (``IP_END``), as ``IpLimiter`` counts the delay from the end. While one
worker's booked request has not ended, another worker's booking waits (it asks again
every ``WAIT_POLL_S``, for at most the hold): the server then sees a delay between the
end of one request and the start of the next, whatever the latencies of the two
workers' connections.

A booking is a fencing token (Kleppmann, "How to do distributed locking", 2016, as
the host leases of ``core.cluster.leases``): the address stays busy under the token
of the worker's last booking, and only the end of *that* booking frees it, sent when
no other request of the worker to the address is in flight or booked (issue #22 item
4: the end of an earlier request freed a later booking not sent yet, and the other
worker's request then came a delay after the booked start, less than a delay after
the late send). The busy mark lives as long as Redis's own clock says (``PX``), so no
worker's clock decides when another's booking may be taken over. A refused worker is
first in line (``:want``) for the next booking: one worker with two hosts there cannot
keep the address.

When a holder may still send: the gate checks a booking right before its request
starts (``earliest``: at most ``STALE_S`` past the booked start, else the booking is
given back and booked again, so a worker that woke late never sends on an old slot;
a booking nothing asks for again, its host handed over or out of URLs, is given back
by the next send or heartbeat past that, ``give_back_stale``), and from that check
to the request's first byte there is only the connection's set-up, bounded by
``connect_timeout_ms``. The hold (``hold_s``, ``Worker.address_limit``) covers that:
another worker's booking after the hold runs out starts at least a delay after the
last moment the holder can send. A process frozen (``SIGSTOP``) between the
check and the connection's end is not bounded by any timeout; a freeze anywhere else is
(the booking is checked again on waking).

``SharedIpLimit`` keeps the gate's interface (``core.policy.gate.AddressLimit``) and its
synchronous answers: ``earliest`` answers from the local limiter and the booking it
holds; when it holds none (or one it can no longer use on time), it asks for one in
the background and answers "a moment from now"; the booking's reply wakes the
engine, whose host then waits for its booked start. Bookings of many addresses go
to Redis together, one pipeline per loop turn with whatever else the worker sends
then (``RedisLink.send``): no round trip on a fetch's path; ends wait up to
``LINGER_S`` for another round trip to ride on.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from crawldeck.core.cluster.keys import Keyspace
from crawldeck.core.cluster.link import LINGER_S, Command, RedisLink
from crawldeck.core.errors import CrawldeckError
from crawldeck.core.policy.ip_limits import IpLimiter
from crawldeck.core.protocols import Clock

log = logging.getLogger("crawldeck.cluster")

#: Seconds ``earliest`` asks the engine to wait while a booking is on its way.
PENDING_S: Final = 0.005
#: Seconds past its booked start a booking may still be used.
STALE_S: Final = 0.05
#: Seconds before a booking refused (another worker's request there has not ended) is
#: asked again, at most.
WAIT_POLL_S: Final = 0.01
#: Milliseconds a refused worker stays first in line for the address unless it asks
#: again (it asks every ``WAIT_POLL_S``).
LINE_MS: Final = 100


@dataclass(slots=True)
class _Booking:
    """An address's booking: ``start`` (epoch s) once booked, ``None`` while asked
    (its fencing token is the worker's last for the address, ``SharedIpLimit._token``)."""

    start: float | None = None


class SharedIpLimit:
    """The gate's per-IP limit for a cluster worker (see the module).

    Args:
        local: this worker's own ``IpLimiter`` (its bucket and in-flight rule).
        link: the Redis connection.
        keys: the crawl's key layout.
        delay_s: the per-IP delay in s (``ip_delay_ms`` / 1000; 0: no limit).
        clock: epoch seconds.
        wake: called when a booking came back (a host may be ready).
        worker: this worker's id (its own bookings never wait for each other).
        hold_s: how long past its booked start a booked request holds the address for
            the other workers before its end is known (s; then its start plus the
            delay counts). It must cover the delay plus the longest a holder may
            still send after its check (``STALE_S`` and the connection's set-up).
    """

    def __init__(
        self,
        local: IpLimiter,
        link: RedisLink,
        keys: Keyspace,
        delay_s: float,
        *,
        clock: Clock,
        wake: Callable[[], None],
        worker: str,
        hold_s: float,
    ) -> None:
        self._local = local
        self._worker = worker
        self._hold_s = hold_s
        self._link = link
        self._keys = keys
        self._delay_s = delay_s
        self._clock = clock
        self._wake = wake
        self._bookings: dict[str, _Booking] = {}
        self._token: dict[str, int] = {}  # address -> this worker's last token there
        self._flying: Counter[str] = Counter()  # address -> requests in flight
        self._asked: dict[str, float] = {}  # address -> wanted start, to send
        self._ended: dict[str, float] = {}  # address -> last end, to send
        self._retry: dict[str, float] = {}  # address -> when to ask again (epoch s)
        self._sender: asyncio.Task[None] | None = None
        self.booked = 0
        self.waited = 0
        self.given_back = 0

    def earliest(self, ip: str, now: float) -> float:
        """When ``ip`` may get its next request (epoch s, ``>= now``; ``now`` may be
        the host's own earliest): the later of the local limit and the booked start.
        A booking more than ``STALE_S`` behind is given back and booked again."""
        at = self._local.earliest(ip, now)
        if self._delay_s <= 0.0:
            return at
        retry = self._retry.get(ip)
        if retry is not None:
            if retry > self._clock():
                return max(at, retry)
            del self._retry[ip]
        booking = self._bookings.get(ip)
        if booking is not None and booking.start is not None:
            if booking.start + STALE_S >= at:
                return max(at, booking.start)
            # too late to use (the host's politeness held it, or this process woke
            # late): nothing is sent on it; it is given back and booked again from ``at``
            del self._bookings[ip]
            self._end_soon(ip, booking.start)
            self.given_back += 1
            booking = None
        if booking is None:
            self._bookings[ip] = _Booking()
            self._asked[ip] = at
            self._send_soon()
        return max(at, self._clock() + PENDING_S)

    def shown(self, ip: str, now: float) -> float:
        """What the console shows: the local limit and a booking held, nothing asked."""
        at = self._local.earliest(ip, now)
        booking = self._bookings.get(ip)
        if booking is not None and booking.start is not None:
            return max(at, booking.start)
        return at

    def on_dispatch(self, ip: str, now: float) -> None:
        """A request to ``ip`` starts at ``now``: it uses its booking."""
        self._local.on_dispatch(ip, now)
        self._bookings.pop(ip, None)
        self._flying[ip] += 1

    def on_end(self, ip: str, now: float) -> None:
        """A request to ``ip`` ended at ``now``: the next slot is a delay after it."""
        self._local.on_end(ip, now)
        if self._flying[ip] > 1:
            self._flying[ip] -= 1
        else:
            del self._flying[ip]
        if self._delay_s > 0.0:
            self._end_soon(ip, now)

    def give_back_stale(self) -> None:
        """Give back every booking more than ``STALE_S`` past its start (by this
        worker's clock): ``earliest`` would not use it any more, and its host may never
        ask again (handed to another worker, or out of URLs once its refill came back;
        ``Gate.ready_at`` books as a host enters the ready heap). Its hold would keep
        the address from the other workers until it ran out (``hold_s``, 10 s with the
        default connect timeout), one of them asking every ``WAIT_POLL_S``: 856 round
        trips for 96 pages in a suite run of ``test_cluster_costs`` (issue #24 item 8).
        Called by each send and by the worker's heartbeat, never between the gate's
        check and its dispatch (``Gate.acquire`` does both in one step)."""
        now = self._clock()
        stale = [
            (ip, b.start)
            for ip, b in self._bookings.items()
            if b.start is not None and b.start + STALE_S < now
        ]
        for ip, start in stale:
            del self._bookings[ip]
            self._end_soon(ip, start)
            self.given_back += 1

    def _end_soon(self, ip: str, at: float) -> None:
        self._ended[ip] = max(at, self._ended.get(ip, 0.0))
        self._send_soon()

    def _releasing(self, ip: str) -> int:
        """The token whose busy mark an end sent now frees: this worker's last one if
        nothing of it is in flight or held for ``ip`` (a booking asked in the same
        batch comes after the end), else 0 (the end frees nothing)."""
        booking = self._bookings.get(ip)
        if self._flying[ip] or (booking is not None and booking.start is not None):
            return 0
        return self._token.get(ip, 0)

    def _send_soon(self) -> None:
        if self._sender is None:
            self._sender = asyncio.get_running_loop().create_task(self._send())

    async def _send(self) -> None:
        """Send every booking asked and every end noted since the last send, within
        ``_within`` (other commands of the worker's join them, ``RedisLink.send``):
        ends alone ride on the worker's next round trip (an end sent later only keeps
        the address a little longer from the other workers).
        A send that is waiting does not hold back the next one: both go in order."""
        await asyncio.sleep(0)  # let this loop turn's other asks join
        self.give_back_stale()
        self._sender = None
        asked, self._asked = self._asked, {}
        ended, self._ended = self._ended, {}
        if not asked and not ended:
            return
        k, delay = self._keys, self._delay_s
        now, me = self._clock(), self._worker
        commands: list[Command] = [
            ("script", "ip_end", [k.ip_next(ip)], [f"{t:.6f}", delay, me, self._releasing(ip)])
            for ip, t in ended.items()
        ]
        commands += [
            ("script", "ip_book", [k.ip_next(ip)],
             [f"{t:.6f}", delay, f"{now:.6f}", me, self._hold_s, LINE_MS])
            for ip, t in asked.items()
        ]  # fmt: skip
        try:
            replies = await self._link.send(commands, within_s=self._within(asked, now))
        except CrawldeckError as exc:  # Redis gone for good: the store stops too
            log.warning("per-IP bookings failed: %s", exc)
            for ip in asked:
                self._bookings.pop(ip, None)
            return
        for ip, reply in zip(asked, replies[len(ended) :], strict=True):
            self._booked(ip, reply, now)
        if asked:
            self._wake()

    def _within(self, asked: dict[str, float], now: float) -> float:
        """How long (s) a send may wait for other commands: ``LINGER_S`` for ends
        alone, else half the time to the soonest start asked (a booking asked for a
        slot a delay ahead, at a request's end, rides on another round trip; one for
        now goes at once)."""
        if not asked:
            return LINGER_S
        return max(0.0, min(LINGER_S, (min(asked.values()) - now) / 2))

    def _booked(self, ip: str, reply: list[bytes | str | int], now: float) -> None:
        """``IP_BOOK``'s ``reply`` for ``ip``, asked at ``now`` (epoch s)."""
        kind, at = _text(reply[0]), reply[1]
        booking = self._bookings.get(ip)
        if kind != "ok":  # another worker's request there has not ended: ask again soon
            if booking is not None and booking.start is None:
                del self._bookings[ip]
            wait_s = max(0.001, int(at) / 1000)
            self._retry[ip] = now + min(wait_s, WAIT_POLL_S)
            self.waited += 1
            return
        token = int(reply[2])
        self._token[ip] = token
        if booking is None or booking.start is not None:  # not wanted any more: give back
            self._end_soon(ip, float(at))
            return
        booking.start = float(at)
        self.booked += 1


def _text(value: bytes | str | int) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


__all__ = ["LINE_MS", "PENDING_S", "STALE_S", "WAIT_POLL_S", "SharedIpLimit"]
