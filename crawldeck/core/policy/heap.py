"""Giving the memory of one big job back to the system (issue #22 item 1).

glibc's malloc keeps what a process frees for its next allocations, and after the
first large block is freed it raises its mmap and trim thresholds (up to 32 and 64 MiB,
mallopt(3)), so a process that once parsed a hostile page (lexbor's tree of 256 KiB of
links: 8-11 MiB) or archived a 10 MiB payload holds that memory for the rest of the
crawl, beside the crawl's own peak: the process tree's peak RSS grows by it.
``give_back`` asks glibc to return the free memory of the heap (``malloc_trim(0)``,
malloc_trim(3)); a parse worker calls it after a job of at least ``GIVE_BACK_AFTER_BYTES``
and the WARC writer after a payload by file, so the cost (the next job faults its pages
in again: about 10 ms after a 256 KiB page of links) is paid after big jobs only. Fixing
the thresholds for the whole process instead (``GLIBC_TUNABLES``) doubled a worker's CPU
time on ordinary 100 KB pages (1.1 -> 2.2 s for 300 pages), each parse faulting its
tree's memory in anew.

Without glibc (``malloc_trim`` not found) nothing is done. Imports only ``ctypes``
(0.2 MiB in a parse worker).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Final

#: The smallest parse job (bytes of markup) after which a parse worker gives memory back.
GIVE_BACK_AFTER_BYTES: Final = 128 * 1024


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` from the process's own symbols, ``None`` without it."""
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return None
    return trim


_TRIM: Final = _malloc_trim()


def give_back() -> bool:
    """Return the heap's free memory to the system (glibc ``malloc_trim(0)``); whether
    any was returned (``False`` without glibc). Never raises."""
    return _TRIM is not None and bool(_TRIM(0))


__all__ = ["GIVE_BACK_AFTER_BYTES", "give_back"]
