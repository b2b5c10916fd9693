"""n against 10n (issue #22 item 2): a check that work on hostile input grows linearly
which a slow machine cannot fail (no wall-clock bound).

``assert_linear(make, work, n)`` times ``work`` on the input ``make(n)`` once and on
``make(n // 10)`` ten times over, each the fastest of ``RUNS`` runs, and fails when
the first took over ``MAX_GROWTH`` times the second: for linear work the two are equal,
for quadratic work (a regex that backtracks over the whole text at each position) the
first is 10 times the second. Both timings last about as long, so a loaded machine
slows them alike (a pause, a time slice lost to another process), and a pause slows
one run, not the fastest of three.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

#: Past this ratio of one run on n to ten runs on n/10 the work is taken for quadratic
#: (10). Linear work gives 1, n log n about 1.2, and up to 2.8 here where the larger
#: input leaves the CPU's caches (``clean`` refusing a host of 500 000 labels).
MAX_GROWTH = 5
#: Runs of each size; the fastest is the one compared.
RUNS = 3

_T = TypeVar("_T")


def fastest(call: Callable[[], object], runs: int = RUNS) -> float:
    """The shortest of ``runs`` timings of ``call()`` (s, ``time.perf_counter``)."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def assert_linear(make: Callable[[int], _T], work: Callable[[_T], object], n: int) -> None:
    """``work(make(n))`` takes at most ``MAX_GROWTH`` times ten ``work(make(n // 10))``.

    Raises:
        AssertionError: it took longer (the message gives both times and sizes).
    """
    small, big = make(n // 10), make(n)

    def ten_small() -> None:
        for _ in range(10):
            work(small)

    small_s = fastest(ten_small)
    big_s = fastest(lambda: work(big))
    assert big_s <= MAX_GROWTH * small_s, (
        f"{big_s:.4f} s at n={n}, {small_s:.4f} s for 10 x n={n // 10}: quadratic or worse"
    )
