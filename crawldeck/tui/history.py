"""The rates the console's charts draw, kept as snapshots come: the last minutes'
pages/s and bytes/s (``ThroughputHistory``, the throughput panel) and the whole run's
(``CrawlHistory``, the overview of a large terminal). Pure: fed snapshots, no widget,
no clock of their own (a snapshot's ``at``, s). Both count the pages and bytes as the
crawl records them (``pages_done``, ``bytes_done``), not as the store commits them: a
commit a second drew a steady rate as full and empty points in turn (issue #25 trial
10)."""

from __future__ import annotations

import math
from collections import deque

from crawldeck.core.crawl.snapshot import CrawlSnapshot

#: Seconds of throughput history the chart shows (one point per second).
HISTORY_S = 180
#: Points the whole run's chart keeps at most (``CrawlHistory``).
RUN_POINTS = 256


class ThroughputHistory:
    """Pages/s and bytes/s, one point per second, over the last ``HISTORY_S`` seconds.

    Fed with every snapshot (not only the drawn ones) so the chart never depends on
    how the UI coalesced its refreshes.
    """

    def __init__(self, points: int = HISTORY_S) -> None:
        self.pages: deque[float] = deque([0.0] * points, maxlen=points)
        self.bytes: deque[float] = deque([0.0] * points, maxlen=points)
        self._last: tuple[float, int, int] | None = None

    def add(self, snap: CrawlSnapshot) -> None:
        """Take one snapshot; adds a point when a second or more has passed."""
        now = (snap.at, snap.pages_done, snap.bytes_done)  # as recorded, not committed
        if self._last is None:
            self._last = now
            return
        at, pages, size = self._last
        span = snap.at - at
        if span < 1.0:
            return
        self.pages.append(max(0.0, (now[1] - pages) / span))
        self.bytes.append(max(0.0, (now[2] - size) / span))
        self._last = now


class CrawlHistory:
    """Pages/s and bytes/s over the whole run the console has seen, in at most
    ``points`` buckets of ``bucket_s`` seconds each.

    Buckets start at 1 s; when the run outgrows ``points`` buckets, neighbours are
    merged in pairs and ``bucket_s`` doubles, so memory stays bounded however long the
    crawl runs (a day at most 256 points of 512 s). The growth of the pages and bytes
    counters since the previous snapshot is spread over the buckets its interval
    covers, each its share of the time: bucket ``b`` holds ``(b * bucket_s, (b + 1) *
    bucket_s]`` seconds after the first snapshot. (All of it went to the bucket the
    interval ended in: snapshots late across a bucket's end left one bucket empty and
    the next with two buckets' pages, a peak up to twice the rate; issue #25.) Fed
    with every snapshot; the rates are those of the buckets whose time is over (the
    chart changes once a bucket, not with every snapshot, and its last point is no
    part of a bucket). Each bucket also keeps its seconds of crawl time (``active``:
    an interval that ends in a paused or ended snapshot is none), so the means leave
    the pauses out, as the run's elapsed time does (``mean_pages_per_s``).
    """

    def __init__(self, points: int = RUN_POINTS) -> None:
        if points < 2:
            raise ValueError(f"points must be >= 2, got {points!r}")
        self.points = points
        self.bucket_s = 1.0
        self.pages: list[float] = []  # pages fetched in each bucket (shares of intervals)
        self.bytes: list[float] = []  # body bytes received in each bucket
        self.active: list[float] = []  # seconds of each bucket the crawl was not paused
        self._start: float | None = None
        #: The run's elapsed time at the first snapshot (s): about 0 in the crawl's
        #: own console, the time before the attach in an attached one.
        self.from_s = 0.0
        self._elapsed = 0.0  # seconds from the first snapshot to the last
        self._last: tuple[int, int] = (0, 0)

    def add(self, snap: CrawlSnapshot) -> None:
        """Take one snapshot (the first one only sets the start)."""
        done = (snap.pages_done, snap.bytes_done)  # as recorded, not as committed
        if self._start is None:
            self._start = snap.at
            self.from_s = snap.elapsed_s
            self._last = done
            return
        begin, end = self._elapsed, max(self._elapsed, snap.at - self._start)
        self._elapsed = end
        # bucket b holds (b, b + 1] buckets after the start
        index = max(0, math.ceil(end / self.bucket_s) - 1)
        while index >= self.points:
            self._halve()
            index //= 2
        while len(self.pages) <= index:
            self.pages.append(0.0)
            self.bytes.append(0.0)
            self.active.append(0.0)
        crawling = snap.state not in _IDLE_STATES
        pages, size = self._last
        grown = (max(0, done[0] - pages), max(0, done[1] - size))
        self._last = done
        if end <= begin:  # no time passed (or the clock went back): the last bucket
            self.pages[index] += grown[0]
            self.bytes[index] += grown[1]
            return
        first = max(0, math.ceil(begin / self.bucket_s) - 1)
        for b in range(first, index + 1):
            low, high = b * self.bucket_s, (b + 1) * self.bucket_s
            seconds = min(end, high) - max(begin, low)
            if seconds > 0:
                share = seconds / (end - begin)
                self.pages[b] += grown[0] * share
                self.bytes[b] += grown[1] * share
                if crawling:
                    self.active[b] += seconds

    def _halve(self) -> None:
        self.pages = [sum(self.pages[i : i + 2]) for i in range(0, len(self.pages), 2)]
        self.bytes = [sum(self.bytes[i : i + 2]) for i in range(0, len(self.bytes), 2)]
        self.active = [sum(self.active[i : i + 2]) for i in range(0, len(self.active), 2)]
        self.bucket_s *= 2

    @property
    def done(self) -> int:
        """How many buckets, from the first, are over (the last one may still grow)."""
        n = len(self.pages)
        return n if self._elapsed >= n * self.bucket_s else n - 1

    @property
    def span_s(self) -> float:
        """Seconds the buckets that are over cover."""
        return self.done * self.bucket_s

    def pages_per_s(self) -> list[float]:
        """Pages/s of each bucket that is over, oldest first."""
        return [n / self.bucket_s for n in self.pages[: self.done]]

    def bytes_per_s(self) -> list[float]:
        """Bytes/s of each bucket that is over, oldest first."""
        return [n / self.bucket_s for n in self.bytes[: self.done]]

    def mean_pages_per_s(self) -> float:
        """Pages/s over the crawl time of the buckets that are over: their pages over
        their seconds not paused (0.0 before any), not the mean of their points, which
        counts a paused minute as a minute of 0/s (the header's run average leaves the
        pauses out too)."""
        return _per_active_s(self.pages[: self.done], self.active[: self.done])

    def mean_bytes_per_s(self) -> float:
        """Body bytes/s over the same crawl time (``mean_pages_per_s``)."""
        return _per_active_s(self.bytes[: self.done], self.active[: self.done])


#: Snapshot states whose time is no crawl time (``CrawlHistory.active``).
_IDLE_STATES = frozenset({"paused", "finished", "stopped"})


def _per_active_s(amounts: list[float], seconds: list[float]) -> float:
    """``sum(amounts) / sum(seconds)``, 0.0 when no second counts."""
    total = sum(seconds)
    return sum(amounts) / total if total > 0 else 0.0


__all__ = ["HISTORY_S", "RUN_POINTS", "CrawlHistory", "ThroughputHistory"]
