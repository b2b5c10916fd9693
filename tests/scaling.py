"""n against 10n (issue #22 item 2): a check that work on hostile input grows linearly
which a slow machine cannot fail (no wall-clock bound).

``assert_linear(make, work, n)`` times ``work`` on the input ``make(n // 10)`` and on
``make(n)``, each the fastest of ``RUNS`` runs, and fails when the second took over
``MAX_GROWTH`` times the first: linear work grows 10 times, quadratic work (a regex
that backtracks over the whole text at each position) 100 times. A loaded machine
slows both sizes alike, and a pause slows one run, not the fastest of three.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

#: Past this growth from n/10 to n the work is taken for quadratic (100 times). Linear
#: work grows 10 times, n log n about 12, and up to 28 times here where the larger
#: input leaves the CPU's caches (``clean`` refusing a host of 500 000 labels).
MAX_GROWTH = 50
#: Runs of each size; the fastest is the one compared.
RUNS = 3
#: A tenth-size run faster than this (s) counts as this long: a few microseconds are
#: all timer and cache, and make no baseline. It only makes the check more lenient.
FLOOR_S = 0.002

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
    """``work(make(n))`` takes at most ``MAX_GROWTH`` times ``work(make(n // 10))``.

    Raises:
        AssertionError: it took longer (the message gives both times and sizes).
    """
    small, big = make(n // 10), make(n)
    small_s = max(fastest(lambda: work(small)), FLOOR_S)
    big_s = fastest(lambda: work(big))
    assert big_s <= MAX_GROWTH * small_s, (
        f"{big_s:.3f} s at n={n}, {small_s:.3f} s at n={n // 10}: quadratic or worse"
    )
