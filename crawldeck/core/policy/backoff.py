"""Backoff: how long a host waits after it said "slow down" (pure: ``now`` passed in).

A 429 (RFC 6585 §4), a 503 (RFC 9110 §15.6.4) or no response at all puts a host in
backoff (``core.policy.politeness``): the wait is :func:`backoff_s`, exponential with jitter,
or the ``Retry-After`` the response carried (:func:`parse_retry_after`, RFC 9110
§10.2.3) when that is longer. ``Retry-After`` is made of two value grammars read here:
``delta-seconds`` (:func:`delta_seconds`, RFC 9111 §1.2.2, which robots.txt's cache
lifetime reads too, ``core.policy.robots``) and ``HTTP-date`` (:func:`http_date`, RFC
9110 §5.6.7).

Separate from ``core.policy.politeness``, which decides *when* a host waits and keeps its
state: these are functions of their arguments only, which say *how long*.
"""

from __future__ import annotations

import random
from datetime import UTC
from email.utils import parsedate_to_datetime

#: HTTP statuses that mean "slow down" (RFC 6585 §4: 429, RFC 9110 §15.6.4: 503).
BACKOFF_STATUSES: frozenset[int] = frozenset({429, 503})


def backoff_s(attempt: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """The wait in seconds before try ``attempt + 1`` after ``attempt`` failures.

    ``b = min(max_s, base_s * 2**(attempt - 1))`` plus uniform jitter in ``[0, b / 2]``
    (so the result lies in ``[b, 1.5 b]``): 1, 2, 4, 8, 16, 32, 60, 60 s for attempts
    1..8 with the defaults (``shared/design.md``, "Defaults"; jitter spreads retries
    of many clients apart, the "exponential backoff and jitter" practice).

    Args:
        attempt: the number of consecutive failures so far, ``>= 1``.
        base_s: the first wait (s), ``>= 0``. max_s: the cap (s) before jitter.
        rng: the source of the jitter (seed it for reproducible tests).

    Raises:
        ValueError: ``attempt < 1``.
    """
    if attempt < 1:
        raise ValueError(f"backoff attempt must be >= 1, got {attempt!r}")
    # 2.0 ** 1000 is finite; base * that may be inf, which min() then caps.
    b = min(max_s, base_s * 2.0 ** min(attempt - 1, 1000))
    return b + rng.uniform(0.0, b / 2.0)


#: RFC 9111 §1.2.2: a delta-seconds value too large to represent is taken as 2**31.
DELTA_SECONDS_MAX = 2.0**31
_DELTA_SECONDS_MAX_DIGITS = len(str(int(DELTA_SECONDS_MAX)))


def delta_seconds(text: str) -> float | None:
    """``delta-seconds = 1*DIGIT`` (RFC 9111 §1.2.2) as seconds, capped at ``2**31``.

    Only ASCII digits count (no sign, blank, ``_`` or fraction): anything else is
    ``None``. A value above ``2**31`` (however many digits: the digit count is checked
    before any conversion, so a hostile 10 MB number costs one scan) is ``2**31``, as
    RFC 9111 §1.2.2 asks of a value too large to represent. Never raises.
    """
    if not (text.isascii() and text.isdigit()):
        return None
    significant = text.lstrip("0")
    if len(significant) > _DELTA_SECONDS_MAX_DIGITS:
        return DELTA_SECONDS_MAX
    return min(float(int(significant or "0")), DELTA_SECONDS_MAX)


def http_date(text: str) -> float | None:
    """An HTTP-date (RFC 9110 §5.6.7) as epoch s, or ``None`` if it is not one.

    IMF-fixdate and the obsolete RFC 850 and asctime forms, parsed by
    ``email.utils.parsedate_to_datetime``; a date without a zone (asctime) is GMT, as
    every HTTP-date is. Surrounding whitespace is ignored. Never raises.
    """
    text = text.strip()
    if not text or text[0] in "+-" or text[0].isdigit():
        return None  # a number, signed or not, is not a date (every form starts with a day)
    try:
        when = parsedate_to_datetime(text)
    except (ValueError, TypeError, IndexError, OverflowError):
        return None
    if when is None:  # older Pythons returned None for some garbage
        return None  # pragma: no cover
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # HTTP-dates are always GMT
    try:
        return when.timestamp()
    except (OverflowError, OSError, ValueError):  # pragma: no cover - platform limits
        return None


def parse_retry_after(value: str, now: float, date: str | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header value, or ``None`` if invalid.

    RFC 9110 §10.2.3: ``Retry-After = HTTP-date / delay-seconds`` where
    ``delay-seconds = 1*DIGIT``. A delta gives its number of seconds (a huge one
    ``2**31``, see :func:`delta_seconds`). An HTTP-date (see :func:`http_date`) is a
    time on the server's clock, so it is measured against the response's own ``Date``
    header (RFC 9110 §6.6.1, the server's clock when it made the response): the wait is
    ``retry_date - date``. Without a ``Date``, or with one that is not a valid
    HTTP-date, it is ``retry_date - now`` (our clock). A date in the past gives ``0.0``.

    Args:
        value: the Retry-After header value (surrounding whitespace ignored).
        now: the current time, epoch s.
        date: the response's raw ``Date`` header value, or ``None``.

    Returns:
        A float ``>= 0`` (s), or ``None`` for anything else: negative or fractional
        numbers, garbage, impossible dates. Never raises.
    """
    text = value.strip()
    if not text:
        return None
    seconds = delta_seconds(text)
    if seconds is not None:
        return seconds
    when = http_date(text)
    if when is None:
        return None
    sent = http_date(date) if date is not None else None
    delta = when - (now if sent is None else sent)
    return delta if delta > 0.0 else 0.0


__all__ = [
    "BACKOFF_STATUSES",
    "DELTA_SECONDS_MAX",
    "backoff_s",
    "delta_seconds",
    "http_date",
    "parse_retry_after",
]
