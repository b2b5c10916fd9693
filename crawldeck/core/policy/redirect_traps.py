"""Redirect traps: a redirect hop that grows the URL (pure: no I/O, no clock).

:func:`redirect_grows` says whether one hop of a redirect chain grows the URL by
repeating or nesting what its source held (issue #10 item 3); ``core.net.redirects`` cuts a
chain at its second growing hop with ``core.policy.traps.BlockReason.REDIRECT_TRAP``, before
its hop cap (docs/architecture.md, "Trap decisions").

Separate from ``core.policy.traps``, whose guard judges one URL by its shape: this judges a
pair of URLs, a hop, and only ``core.net.redirects`` asks it.
"""

from __future__ import annotations

import re
from collections import Counter
from urllib.parse import unquote

#: Where a URL's authority ends: its path or its query.
_AUTHORITY_END = re.compile(r"[/?]")


def _path_and_query(url: str) -> tuple[str, str]:
    """The path and the query (without ``?``) of the absolute ``url``."""
    scheme_end = url.find("://")
    start = scheme_end + 3 if scheme_end >= 0 else 0
    end = _AUTHORITY_END.search(url, start)
    if end is None:
        return "", ""
    path, _, query = url[end.start() :].partition("#")[0].partition("?")
    return path, query


def _grows_by_repeats(old: list[str], new: list[str]) -> bool:
    """Whether ``new`` holds every item of ``old`` as often and one of them more often."""
    if len(new) <= len(old) or not old:
        return False
    old_counts = Counter(old)
    new_counts = Counter(new)
    return all(new_counts[item] >= count for item, count in old_counts.items()) and any(
        new_counts[item] > count for item, count in old_counts.items()
    )


def _first_values(query: str) -> dict[str, str]:
    """Each parameter name of ``query`` with its first value."""
    values: dict[str, str] = {}
    for piece in query.split("&"):
        name, _, value = piece.partition("=")
        values.setdefault(name, value)
    return values


def _holds(old: str, new: str) -> bool:
    """Whether ``new``, as written or percent-decoded once or twice, is longer than
    ``old`` and contains it."""
    for _ in range(3):
        if len(new) > len(old) and old in new:
            return True
        if "%" not in new:
            return False
        new = unquote(new)
    return False


def _segments_grow(old: list[str], new: list[str]) -> bool:
    """Whether ``new`` has as many segments as ``old``, each starting or ending with
    the one of ``old`` at its place, and one of them longer (``/a`` -> ``/aa``,
    ``/x/p`` -> ``/x/p.html``, ``/p`` -> ``/www.p``)."""
    return (
        len(new) == len(old)
        and any(len(grown) > len(segment) for segment, grown in zip(old, new, strict=True))
        and all(
            grown.startswith(segment) or grown.endswith(segment)
            for segment, grown in zip(old, new, strict=True)
        )
    )


#: A run of slashes in a path.
_SLASHES = re.compile(r"//+")


def _extra_slashes(path: str) -> int:
    """The slashes of ``path`` that repeat the one before them (``/x//`` has one)."""
    return len(path) - len(_SLASHES.sub("/", path))


#: Where a query starts in a decoded URL, its own or a nested URL's: ``?name=``.
_QUERY_START = re.compile(r"\?[^?&=#/]*=")
#: Percent-decodings tried on a URL nested in a query (each nesting escapes once more;
#: a chain is cut long before ten levels).
_MAX_DECODES = 10


def _decoded(text: str) -> str:
    """``text`` percent-decoded until nothing changes (at most :data:`_MAX_DECODES` times)."""
    for _ in range(_MAX_DECODES):
        if "%" not in text:
            break
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    return text


def _nests_deeper(source: str, old_path: str, old_query: str, new_query: str) -> bool:
    """Whether ``new_query``, decoded, holds the decoded path and query of ``source``,
    which already nests a URL with a query of its own (two ``?name=`` once decoded):
    a third level of nesting, under any names."""
    if "?" not in source:
        return False
    nested = _decoded(old_path + "?" + old_query)
    starts = _QUERY_START.finditer(nested)
    if next(starts, None) is None or next(starts, None) is None:
        return False
    return nested in _decoded(new_query)


def redirect_grows(source: str, target: str) -> bool:
    """Whether the redirect hop ``source`` -> ``target`` grows the URL by repeating or
    nesting what ``source`` already holds (the shape of a redirect trap, issue #10).

    True exactly when ``target`` is longer than ``source`` (in characters) and one of:

    1. path repetition: the non-empty path segments of ``target`` hold every segment
       of ``source``'s at least as often and one of them more often (``/a/b`` ->
       ``/a/b/b``, ``/a/b`` -> ``/a/b/a/b``, ``/a/`` -> ``/a/a/``);
    2. segment growth: ``target`` has as many non-empty path segments as ``source``,
       each starting or ending with the one at its place in ``source``, and one of
       them longer (``/a`` -> ``/aa`` -> ``/aaa``, ``/p`` -> ``/p.html`` ->
       ``/p.html.html``);
    3. slash growth: the same non-empty segments with more repeated slashes
       (``/x/`` -> ``/x//`` -> ``/x///``);
    4. query repetition: the non-empty ``&`` pieces of ``target``'s query hold every
       piece of ``source``'s at least as often and one of them more often
       (``?x=1`` -> ``?x=1&x=1``);
    5. value growth: a parameter that ``source`` has with a non-empty value ``v`` has
       in ``target`` a value (the first of that name in each) that contains ``v`` and
       is longer, as written or percent-decoded once or twice (``?r=abc`` ->
       ``?r=abcabc``; ``/login?next=/x`` -> ``/login?next=/login%3Fnext%3D/x``, where
       the value nests the whole source URL);
    6. deeper nesting: ``source``, percent-decoded until it no longer changes, nests
       a URL with a query (it holds two ``?name=``), and ``target``'s query, decoded
       the same way, holds ``source``'s decoded path and query, under any parameter
       name and on any host (the single sign-on ping-pong
       ``https://sso/login?service=https://app/cb?back=https://sso/login?service=...``,
       whose names alternate).

    Comparisons are case-sensitive and byte for byte; scheme and host are ignored.
    Not growing: a new segment or parameter (``/`` -> ``/en/`` -> ``/en/home``; a
    consent redirect adding ``?consent=1``), ``http`` -> ``https``, ``/a`` -> ``/a/``,
    a first and a second nesting under new names (``/x`` -> ``/login?next=/x`` ->
    ``https://idp/login?service=http://a/login?next=/x``: a single sign-on detour)
    and every hop that shortens the URL (``/login?next=/`` -> ``/``). So a nesting
    loop under one name grows from its second hop on, under changing names from its
    third, and a legitimate chain grows at most once (a value or a segment made
    longer once, such as ``?lang=en`` -> ``?lang=en-US`` or ``/docs`` ->
    ``/docs.html``); the engine cuts a chain at its second growing hop
    (``redirect_trap``).

    Args:
        source: the URL that answered with the redirect, as sent (``urls.clean``).
        target: its ``Location`` resolved against ``source`` (``urls.clean``).

    Returns:
        The verdict; never raises (text that is not a URL has an empty path and query).
    """
    if len(target) <= len(source):
        return False
    old_path, old_query = _path_and_query(source)
    new_path, new_query = _path_and_query(target)
    old_segments = [segment for segment in old_path.split("/") if segment]
    new_segments = [segment for segment in new_path.split("/") if segment]
    if _grows_by_repeats(old_segments, new_segments) or _segments_grow(old_segments, new_segments):
        return True
    if old_segments == new_segments and _extra_slashes(new_path) > _extra_slashes(old_path):
        return True
    old_pieces = [piece for piece in old_query.split("&") if piece]
    new_pieces = [piece for piece in new_query.split("&") if piece]
    if _grows_by_repeats(old_pieces, new_pieces):
        return True
    if not old_pieces or not new_pieces:
        return False
    new_values = _first_values(new_query)
    for name, value in _first_values(old_query).items():
        grown = new_values.get(name)
        if value and grown is not None and _holds(value, grown):
            return True
    return _nests_deeper(source, old_path, old_query, new_query)


__all__ = ["redirect_grows"]
