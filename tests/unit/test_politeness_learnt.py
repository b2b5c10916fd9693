"""Issue #10 items 7 and 8: a learnt rate limit (AIMD), parking, and Retry-After
measured against the response's ``Date`` (pure logic on virtual time, no sleeps).

Only names that existed before (``Politeness``, ``Outcome``, ``parse_retry_after``) are
imported, so on the old code each test fails on its own assertion.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.errors import ConfigError
from crawldeck.core.policy.backoff import parse_retry_after
from crawldeck.core.policy.politeness import Outcome, Politeness, PolitenessSettings

HOST = "a.test"


def config(**values: Any) -> CrawlConfig:
    return build_config(values)


def politeness_settings(**values: Any) -> PolitenessSettings:
    """The politeness settings of the config of ``values`` (``build_config``)."""
    return PolitenessSettings.from_config(build_config(values))


class NoJitter(random.Random):
    """An rng whose uniform() always gives the bottom of the range."""

    def uniform(self, a: float, b: float) -> float:
        return a


# -- the steady state against a server that refuses requests closer than 2 s ---------

#: The server refuses (429) a request starting less than this after the previous one.
SERVER_WINDOW_S = 2.0
SERVER_LATENCY_S = 0.020
WARM_UP = 100
MEASURED = 500


def simulate(pol: Politeness, requests: int) -> tuple[list[int], list[float]]:
    """Drive ``requests`` requests to one host on virtual time: each starts at
    ``pol.earliest``; the server answers 429 when the gap since the previous request
    start (any answer) is below ``SERVER_WINDOW_S``, else 200, after 20 ms.

    Returns the statuses and the start times, in order.
    """
    statuses: list[int] = []
    starts: list[float] = []
    now = 0.0
    for _ in range(requests):
        now = pol.earliest(HOST, now)
        pol.on_dispatch(HOST, now)
        status = 429 if starts and now - starts[-1] < SERVER_WINDOW_S else 200
        starts.append(now)
        statuses.append(status)
        now += SERVER_LATENCY_S
        pol.on_response(HOST, now, status, SERVER_LATENCY_S, None)
    return statuses, starts


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_steady_state_against_a_2s_rate_limit_is_under_10_percent_429(seed: int) -> None:
    # Old code: 66.8 % 429 (a 200 reset the backoff, a fast 429 lowered the delay).
    pol = Politeness(politeness_settings(delay_ms=500), rng=random.Random(seed))
    statuses, starts = simulate(pol, WARM_UP + MEASURED)
    measured = statuses[WARM_UP:]
    share = measured.count(429) / MEASURED
    assert share < 0.10, share
    assert share == pytest.approx(0.024, abs=0.01)  # 1 in 10 x 2 s / 500 ms + 1
    # Not bought by crawling slowly: the mean spacing stays within 1.6x the 2 s the
    # server allows (the learnt delay saws between about 2 s and 4 s).
    span = starts[-1] - starts[WARM_UP]
    assert span / (MEASURED - 1) < 1.6 * SERVER_WINDOW_S
    view = pol.view(HOST, starts[-1])
    assert SERVER_WINDOW_S - 0.1 <= view.learnt_delay_ms / 1000.0 <= 2.0 * SERVER_WINDOW_S


def test_a_success_does_not_forget_the_rate_limit() -> None:
    pol = Politeness(politeness_settings(delay_ms=1000), rng=NoJitter())
    assert pol.on_response(HOST, 10.0, 429, 0.05, None) == Outcome(True, 1.0)
    view = pol.view(HOST, 10.0)
    assert (view.learnt_delay_ms, view.delay_source, view.delay_ms) == (
        2000.0,
        "rate_limit",
        2000.0,
    )
    assert pol.earliest(HOST, 10.0) == 12.0  # 2 s learnt beats the 1 s backoff
    pol.on_dispatch(HOST, 12.0)
    assert pol.on_response(HOST, 12.05, 200, 0.05, None) == Outcome(False, 0.0)
    view = pol.view(HOST, 12.05)
    assert (view.backoff_attempts, view.backoff_until) == (0, None)  # backoff cleared
    assert view.learnt_delay_ms == pytest.approx(1900.0)  # learnt: one 100 ms step down
    assert pol.earliest(HOST, 12.05) == pytest.approx(12.05 + 1.9)
    # A second 429 doubles from where it is, not from the default.
    pol.on_response(HOST, 14.0, 429, 0.05, None)
    assert pol.view(HOST, 14.0).learnt_delay_ms == pytest.approx(3800.0)


def test_a_retrys_429_or_503_backs_off_but_leaves_the_learnt_delay() -> None:
    """A 429/503 to a retry of a URL that failed before (``repeat``) is that URL's own
    answer, not news of the host's load: the backoff counts it, the learnt delay does
    not double (issue #25: one URL's six 503s took a 200 ms delay to 6.4 s)."""
    pol = Politeness(politeness_settings(delay_ms=1000, adaptive_delay_factor=0), rng=NoJitter())
    assert pol.on_response(HOST, 10.0, 503, 0.05, None) == Outcome(True, 1.0)
    assert pol.view(HOST, 10.0).learnt_delay_ms == 2000.0
    assert pol.on_response(HOST, 20.0, 503, 0.05, None, repeat=True) == Outcome(True, 2.0)
    view = pol.view(HOST, 20.0)
    assert (view.learnt_delay_ms, view.backoff_attempts) == (2000.0, 2)
    pol.on_response(HOST, 30.0, 429, 0.05, None)  # a first try's answer: news again
    assert pol.view(HOST, 30.0).learnt_delay_ms == 4000.0


def test_learnt_delay_decays_by_a_tenth_of_delay_ms_per_success() -> None:
    pol = Politeness(politeness_settings(delay_ms=1000, adaptive_delay_factor=0), rng=NoJitter())
    pol.on_response(HOST, 0.0, 503, 0.0, None)
    seen = []
    now = 0.0
    for _ in range(21):
        now = pol.earliest(HOST, now)
        pol.on_dispatch(HOST, now)
        pol.on_response(HOST, now, 200, 0.0, None)
        seen.append(round(pol.view(HOST, now).learnt_delay_ms, 6))
    assert seen == [round(2000.0 - 100.0 * k, 6) for k in range(1, 21)] + [0.0]
    # Gone after 20 successes; from the 11th on it no longer binds (below delay_ms).
    assert pol.view(HOST, now).delay_source == "default"
    assert pol.delay_s(HOST) == 1.0


def test_learnt_delay_rises_and_decays_with_delay_ms_zero() -> None:
    # No default delay and no adaptive part: the learnt delay starts from its 10 ms
    # floor (20 ms after one 429), doubles, and steps down by 10 ms per success.
    pol = Politeness(politeness_settings(delay_ms=0, adaptive_delay_factor=0), rng=NoJitter())
    for expected_ms in (20.0, 40.0, 80.0, 160.0):
        pol.on_response(HOST, 0.0 + expected_ms, 429, 0.0, None)
        assert pol.view(HOST, 0.0).learnt_delay_ms == pytest.approx(expected_ms)
    assert pol.delay_s(HOST) == pytest.approx(0.16)
    for _ in range(16):
        pol.on_response(HOST, 1.0, 200, 0.0, None)
    assert pol.view(HOST, 1.0).learnt_delay_ms == 0.0
    assert pol.delay_s(HOST) == 0.0


def test_learnt_delay_is_capped_at_max_delay() -> None:
    pol = Politeness(politeness_settings(delay_ms=1000, max_delay_ms=5000), rng=NoJitter())
    for i in range(10):
        pol.on_response(HOST, 100.0 * i, 429, 0.0, None)
    assert pol.view(HOST, 1000.0).learnt_delay_ms == 5000.0
    assert pol.delay_s(HOST) == 5.0


def test_a_fast_error_never_lowers_the_delay() -> None:
    # A slow 200 sets the adaptive delay to 2 x 1.5 s; fast errors must not undo it.
    pol = Politeness(politeness_settings(delay_ms=500, adaptive_delay_factor=2.0), rng=NoJitter())
    pol.on_response(HOST, 10.0, 200, 1.5, None)
    assert pol.delay_s(HOST) == 3.0
    for status in (500, 502, 504, None):
        pol.on_response(HOST, 20.0, status, 0.01, None)
        assert pol.delay_s(HOST) == 3.0, status
    # 429 and 503 double the rate asked for or chosen, 2 x delay_ms, not the adaptive
    # part: a slow page's spacing is no rate to learn (issue #25 trial 11: a 429 after
    # one 4 s page left a learnt 16 s for 1 600 pages); the adaptive 3 s stays in force
    pol.on_response(HOST, 30.0, 429, 0.01, None)
    view = pol.view(HOST, 30.0)
    assert (view.delay_ms, view.learnt_delay_ms) == (3000.0, 1000.0)
    # A slow error raises the adaptive part (it never lowers it).
    pol.on_response(HOST, 40.0, 500, 5.0, None)
    view = pol.view(HOST, 40.0)
    assert (view.delay_source, view.delay_ms) == ("adaptive", 10_000.0)
    # A success sets the adaptive part again and steps the learnt one down by 50 ms.
    pol.on_response(HOST, 50.0, 200, 0.1, None)
    view = pol.view(HOST, 50.0)
    assert view.delay_source == "rate_limit"
    assert view.delay_ms == pytest.approx(950.0)


def test_429s_to_requests_sent_before_the_rise_double_once() -> None:
    # Four requests in flight at once all come back 429: one signal, not four
    # (TCP reacts once per window). A request sent after the rise doubles again.
    pol = Politeness(politeness_settings(delay_ms=1000, per_host_concurrency=4), rng=NoJitter())
    for i in range(4):
        pol.on_response(HOST, 10.0 + 0.01 * i, 429, 0.5, None)
    assert pol.view(HOST, 10.1).learnt_delay_ms == 2000.0
    pol.on_response(HOST, 13.0, 429, 0.5, None)  # sent at 12.5 s, after the rise
    assert pol.view(HOST, 13.0).learnt_delay_ms == 4000.0


def test_restore_puts_back_the_learnt_delay() -> None:
    pol = Politeness(politeness_settings(delay_ms=1000, max_delay_ms=30_000), rng=NoJitter())
    pol.restore(
        HOST,
        crawl_delay_s=None,
        backoff_attempts=0,
        backoff_until=None,
        backoff_started=None,
        learnt_delay_s=7.5,
    )
    view = pol.view(HOST, 0.0)
    assert (view.learnt_delay_ms, view.delay_source, view.delay_ms) == (
        7500.0,
        "rate_limit",
        7500.0,
    )
    pol.on_dispatch(HOST, 0.0)
    assert pol.earliest(HOST, 0.0) == 7.5
    for bad, expected in ((100.0, 30_000.0), (-1.0, 0.0), (math.nan, 0.0), (None, 0.0)):
        pol.restore(
            HOST,
            crawl_delay_s=None,
            backoff_attempts=0,
            backoff_until=None,
            backoff_started=None,
            learnt_delay_s=bad,
        )
        assert pol.view(HOST, 0.0).learnt_delay_ms == expected, bad


# -- parking ---------------------------------------------------------------------------


def test_host_answering_only_backoffs_is_parked_after_park_after_backoffs() -> None:
    pol = Politeness(politeness_settings(park_after_backoffs=3), rng=NoJitter())
    assert not pol.should_park(HOST)
    for i, status in enumerate((429, 503)):
        pol.on_response(HOST, float(i), status, 0.0, None)
        assert not pol.should_park(HOST)
    pol.on_response(HOST, 2.0, None, 0.0, None)  # no response counts too
    assert pol.should_park(HOST)
    pol.on_response(HOST, 3.0, 200, 0.0, None)  # anything else starts the count over
    assert not pol.should_park(HOST)
    pol.restore(
        HOST, crawl_delay_s=None, backoff_attempts=3, backoff_until=None, backoff_started=None
    )
    assert pol.should_park(HOST)
    assert not pol.should_park("other.test")


def test_default_parks_after_eight_straight_429s_within_minutes() -> None:
    pol = Politeness(politeness_settings(), rng=random.Random(1))
    now = 0.0
    for count in range(1, 9):
        now = pol.earliest(HOST, now)
        pol.on_dispatch(HOST, now)
        pol.on_response(HOST, now, 429, 0.0, None)
        assert pol.should_park(HOST) == (count == 8)
    # The waits before the 8th: the learnt delay (2, 4, 8, 16, 30 s) where it is longer
    # than the backoff, then the backoff (32-48 s, 60-90 s with jitter): 2.5-3.3 min,
    # where demotion takes an hour.
    assert 2 + 4 + 8 + 16 + 30 + 32 + 60 <= now <= 2 + 4 + 8 + 16 + 30 + 48 + 90


def test_a_retry_after_past_demote_after_s_parks_at_once() -> None:
    """Eight straight ``Retry-After: 3600`` answers would take 7 hours: a host that asks
    to be left alone for demote_after_s or longer is parked at the first."""
    pol = Politeness(politeness_settings(), rng=NoJitter())
    pol.on_response(HOST, 0.0, 429, 0.0, "60")
    assert not pol.should_park(HOST)
    pol.on_response(HOST, 60.0, 200, 0.0, None)
    pol.on_response(HOST, 61.0, 429, 0.0, "3600")
    assert pol.should_park(HOST)
    pol.on_response(HOST, 4000.0, 200, 0.0, None)
    assert not pol.should_park(HOST)


@pytest.mark.parametrize("value", [0, -1])
def test_park_after_backoffs_must_be_at_least_one(value: int) -> None:
    with pytest.raises(ConfigError, match=r"'park_after_backoffs': expected a value >= 1"):
        config(park_after_backoffs=value)
    assert config(park_after_backoffs=1).park_after_backoffs == 1


# -- properties of the learnt delay ----------------------------------------------------

STATUSES = [200, 204, 301, 304, 404, 410, 429, 503, 500, 502, 504, None]
ERRORS = {429, 503, 500, 502, 504, None}


@given(
    delay_ms=st.integers(0, 5000),
    max_delay_ms=st.integers(0, 60_000),
    factor=st.sampled_from([0.0, 0.5, 2.0]),
    events=st.lists(
        st.tuples(
            st.sampled_from(STATUSES),
            st.floats(0.0, 10.0),  # elapsed s
            st.floats(0.0, 100.0),  # gap before the request, s
        ),
        max_size=60,
    ),
)
def test_learnt_delay_properties(
    delay_ms: int,
    max_delay_ms: int,
    factor: float,
    events: list[tuple[int | None, float, float]],
) -> None:
    cfg = config(delay_ms=delay_ms, max_delay_ms=max_delay_ms, adaptive_delay_factor=factor)
    pol = Politeness(PolitenessSettings.from_config(cfg), rng=random.Random(0))
    now = 0.0
    for status, elapsed, gap in events:
        now += gap
        pol.on_dispatch(HOST, now)
        before_learnt = pol.view(HOST, now).learnt_delay_ms
        before_delay = pol.delay_s(HOST)
        now += elapsed
        pol.on_response(HOST, now, status, elapsed, None)
        learnt = pol.view(HOST, now).learnt_delay_ms
        assert 0.0 <= learnt <= max_delay_ms
        if status in ERRORS:
            assert learnt >= before_learnt
            assert pol.delay_s(HOST) >= before_delay
        else:
            assert learnt <= before_learnt
    # Enough successes wipe it out: max_delay / step of them, step = max(delay/10, 10 ms).
    step_ms = max(delay_ms / 10.0, 10.0)
    for _ in range(math.ceil(max_delay_ms / step_ms) + 1):
        pol.on_response(HOST, now, 200, 0.0, None)
    view = pol.view(HOST, now)
    assert view.learnt_delay_ms == 0.0
    assert pol.delay_s(HOST) == delay_ms / 1000.0
    assert view.delay_source == "default"


# -- Retry-After against the response's Date -------------------------------------------

OUR_NOW = datetime(2024, 3, 1, 12, 0, 0, tzinfo=UTC)


def imf(when: datetime) -> str:
    """IMF-fixdate (RFC 9110 §5.6.7)."""
    return format_datetime(when, usegmt=True)


def rfc850(when: datetime) -> str:
    """The obsolete RFC 850 form: ``Friday, 01-Mar-24 12:00:00 GMT``."""
    return when.strftime("%A, %d-%b-%y %H:%M:%S GMT")


def asctime(when: datetime) -> str:
    """The obsolete asctime form: ``Fri Mar  1 12:00:00 2024`` (no zone: GMT)."""
    return f"{when:%a %b} {when.day:2d} {when:%H:%M:%S %Y}"


FORMATS = [imf, rfc850, asctime]


@pytest.mark.parametrize("skew_s", [-3600.0, 3600.0])
@pytest.mark.parametrize("retry_form", FORMATS)
@pytest.mark.parametrize("date_form", FORMATS)
def test_http_date_is_measured_against_the_servers_date(
    skew_s: float, retry_form: Any, date_form: Any
) -> None:
    # The server's clock is an hour behind (or ahead of) ours; it asks for 60 s.
    server_now = OUR_NOW + timedelta(seconds=skew_s)
    retry = retry_form(server_now + timedelta(seconds=60))
    date = date_form(server_now)
    assert parse_retry_after(retry, OUR_NOW.timestamp(), date) == 60.0


def test_on_response_honours_the_servers_clock() -> None:
    pol = Politeness(politeness_settings(retry_after_max_s=600), rng=NoJitter())
    server_now = OUR_NOW - timedelta(hours=1)
    now = OUR_NOW.timestamp()
    out = pol.on_response(
        HOST, now, 503, 0.0, imf(server_now + timedelta(seconds=60)), date=imf(server_now)
    )
    assert out == Outcome(True, 60.0)
    assert pol.view(HOST, now).retry_after_s == 60.0
    assert pol.earliest(HOST, now) == now + 60.0


def test_seconds_ignore_the_date_header() -> None:
    now = OUR_NOW.timestamp()
    assert parse_retry_after("120", now, imf(OUR_NOW - timedelta(hours=1))) == 120.0
    assert parse_retry_after("120", now, "junk") == 120.0


def test_retry_date_before_the_servers_date_is_zero() -> None:
    now = OUR_NOW.timestamp()
    # A server an hour ahead whose Retry-After is 10 s before its own Date.
    server_now = OUR_NOW + timedelta(hours=1)
    retry = imf(server_now - timedelta(seconds=10))
    assert parse_retry_after(retry, now, imf(server_now)) == 0.0


@pytest.mark.parametrize("date", ["junk", "", "   ", "123", "Sun, 31 Feb 2024 12:00:00 GMT"])
def test_junk_date_header_falls_back_to_our_clock(date: str) -> None:
    now = OUR_NOW.timestamp()
    assert parse_retry_after(imf(OUR_NOW + timedelta(seconds=90)), now, date) == 90.0


@pytest.mark.parametrize("value", ["soon", "-5", "1.5", "Fri, 01 Mar", "Fri, 30 Feb 2024 1:0:0"])
def test_junk_retry_after_is_none_whatever_the_date(value: str) -> None:
    assert parse_retry_after(value, OUR_NOW.timestamp(), imf(OUR_NOW)) is None
