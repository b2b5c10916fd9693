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
