"""The one fake clock of the tests: a time source that moves only when a test moves it.

Every part that takes a clock (``core.net.dns.DnsCache``, ``core.net.robots.RobotsCache``,
``core.storage.store.Store``, the render session, the memory monitor) takes a callable
returning seconds as ``float``; a ``FakeClock`` is one::

    clock = FakeClock()          # reads EPOCH
    cache = DnsCache(settings, clock, resolver)
    clock.advance(4.9)           # or: clock.now = EPOCH + 3600

It stands for the wall clock (epoch seconds, the default start) as well as for a
monotonic one (start it anywhere: ``FakeClock(100.0)``). The engine's tests run on
virtual loop time instead (``tests/virtualtime.py``), where asyncio's timers must agree
with the clock; a part called outside an event loop gets this one.
"""

from __future__ import annotations

#: The default first reading: 2023-11-14T22:13:20Z, so stored timestamps look real.
EPOCH = 1_700_000_000.0


class FakeClock:
    """A settable clock: ``clock()`` returns ``clock.now`` (seconds, ``float``).

    Args:
        now: the first reading, seconds (default ``EPOCH``).
    """

    def __init__(self, now: float = EPOCH) -> None:
        self.now = float(now)

    def __call__(self) -> float:
        """The current reading, seconds."""
        return self.now

    def advance(self, seconds: float) -> float:
        """Move the clock ``seconds`` ahead and return the new reading.

        Raises:
            ValueError: ``seconds`` is negative (a clock the parts read never goes
                back; set ``now`` to test a clock that does).
        """
        if seconds < 0:
            raise ValueError(f"a clock moves forward, not by {seconds} s")
        self.now += seconds
        return self.now
