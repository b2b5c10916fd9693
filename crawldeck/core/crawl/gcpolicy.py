"""The cyclic garbage collector while a crawl runs (issue #23).

A crawl allocates many short-lived containers (records, rows, parameter tuples, parsed
links) and keeps a growing population of long-lived ones (the frontier, the seen set,
the caches). With CPython's default thresholds ``(700, 10, 10)`` the youngest
generation is collected every 700 net allocations of tracked objects, and every tenth
of those passes walks generation 1 too: on ``benchmarks/``'s nginx web these passes took
about 5 % of a default crawl's CPU. With ``GC_GEN0_THRESHOLD`` they took about 1 %, and
the CPU per page fell to about 0.91x (the same web, before and after, issue #23).

``fewer_gc_passes`` raises the youngest generation's threshold for as long as one of
its users runs (``Engine.run``, the cluster's ``Collector.run``; a cluster worker's run
goes through ``Engine.run``) and restores the thresholds it found when the last of them
returns, raises or is cancelled. Cyclic garbage is still found, only later: as
Instagram's servers did ("Dismissing Python Garbage Collection at Instagram", 2017),
less often rather than never. ``tests/unit/test_costs.py`` counts the passes per page.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator
from typing import Final

#: Net allocations of tracked objects between two passes over the youngest generation
#: while a crawl runs (CPython's default is 700); the older generations keep theirs.
GC_GEN0_THRESHOLD: Final = 50_000

_lock: Final = threading.Lock()
#: Users inside ``fewer_gc_passes`` now, and the thresholds found by the first of them.
_users = 0
_saved: tuple[int, int, int] = gc.get_threshold()


@contextlib.contextmanager
def fewer_gc_passes() -> Iterator[None]:
    """Inside the block, the cyclic GC's generation-0 threshold is at least
    ``GC_GEN0_THRESHOLD`` (allocations); the first of nested or concurrent users (two
    engines on one loop, threads) saves the process's thresholds, the last one out
    restores them, also when its block raises or is cancelled. The thresholds are the
    process's: a change made by other code inside the block is undone at its end.

    Raises:
        nothing of its own; the block's exceptions propagate.
    """
    global _users, _saved
    with _lock:
        if _users == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(max(_saved[0], GC_GEN0_THRESHOLD), *_saved[1:])
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                gc.set_threshold(*_saved)


__all__ = ["GC_GEN0_THRESHOLD", "fewer_gc_passes"]
