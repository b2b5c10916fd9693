"""Counts in words for the lines people read (summaries, progress, headings, log lines):
``1 page``, ``2 pages`` (issue #25: "1 pages" read as a bug)."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun``, the noun in the plural unless ``count`` is 1:
    ``plural(1, "page") == "1 page"``, ``plural(2, "page") == "2 pages"``,
    ``plural(0, "entry", "entries") == "0 entries"``.

    Args:
        count: how many (any int; only 1 takes the singular, as English does).
        noun: the singular.
        many: the plural when it is not ``noun + "s"``.
    """
    if count == 1:
        return f"1 {noun}"
    return f"{count} {many if many is not None else noun + 's'}"


def spelled_size(size: int) -> str:
    """``size`` bytes as a person types it for ``--max-bytes``: in the largest decimal
    unit that spells it whole, ``4000000`` -> ``4MB``, ``5000`` -> ``5kB``, ``2500`` ->
    ``2500`` (issue #25: the way on after ``--max-bytes 2MB`` read ``--max-bytes
    4000000``). The flag reads each of these back to ``size``."""
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)


def rounded_size(size: int) -> int:
    """``size`` bytes rounded up to a whole number of the largest decimal unit it
    reaches (``spelled_size`` then spells it short): ``3794542`` -> ``4000000``,
    ``1500`` -> ``2000``, ``999`` -> ``999``; never less than ``size``."""
    for scale in (10**12, 10**9, 10**6, 10**3):
        if size >= scale:
            return -(-size // scale) * scale
    return size
