"""Tests of core.policy.politeness with a fake clock (plain floats, no sleeps)."""

from __future__ import annotations

import heapq
import math
import random
from collections import defaultdict
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import pytest

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.policy.backoff import backoff_s, delta_seconds, http_date, parse_retry_after
from crawldeck.core.policy.frontier import Frontier
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.politeness import Cap, Outcome, Politeness, PolitenessSettings
from crawldeck.core.policy.politeness_state import HostPolitenessView
from crawldeck.core.policy.token_bucket import TokenBucket

# Sun, 06 Nov 1994 08:49:37 GMT, the RFC 9110 example date.
RFC_DATE = datetime(1994, 11, 6, 8, 49, 37, tzinfo=UTC).timestamp()


def config(**values: Any) -> CrawlConfig:
    return build_config(values)


def politeness_settings(**values: Any) -> PolitenessSettings:
    """The politeness settings of the config of ``values`` (``build_config``)."""
    return PolitenessSettings.from_config(build_config(values))


class MaxJitter(random.Random):
    """An rng whose uniform() always gives the top of the range."""

    def uniform(self, a: float, b: float) -> float:
        return b


class NoJitter(random.Random):
    """An rng whose uniform() always gives the bottom of the range."""

    def uniform(self, a: float, b: float) -> float:
        return a


# -- backoff_s -------------------------------------------------------------------------

NOMINAL = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]


def test_backoff_sequence_with_seeded_jitter() -> None:
    rng, ref = random.Random(1234), random.Random(1234)
    waits = [backoff_s(attempt, 1.0, 60.0, rng) for attempt in range(1, 9)]
    expected = [b + ref.uniform(0.0, b / 2) for b in NOMINAL]
    assert waits == expected
    for wait, b in zip(waits, NOMINAL, strict=True):
        assert b <= wait <= 1.5 * b


def test_backoff_jitter_bounds_are_zero_and_half() -> None:
    assert [backoff_s(a, 1.0, 60.0, NoJitter()) for a in range(1, 9)] == NOMINAL
    assert [backoff_s(a, 1.0, 60.0, MaxJitter()) for a in range(1, 9)] == [1.5 * b for b in NOMINAL]


def test_backoff_huge_attempt_is_capped_and_bad_attempt_raises() -> None:
    assert backoff_s(10_000, 1.0, 60.0, NoJitter()) == 60.0
    assert backoff_s(3, 0.5, 60.0, NoJitter()) == 2.0
    with pytest.raises(ValueError, match="attempt"):
        backoff_s(0, 1.0, 60.0, NoJitter())


# -- parse_retry_after -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("120", 120.0), ("0", 0.0), ("  7 ", 7.0), ("3600", 3600.0), ("0042", 42.0)],
)
def test_retry_after_delta_seconds(value: str, expected: float) -> None:
    assert parse_retry_after(value, 1_000_000.0) == expected


@pytest.mark.parametrize(
    "value",
    [
        "Sun, 06 Nov 1994 08:49:37 GMT",  # IMF-fixdate
        "Sunday, 06-Nov-94 08:49:37 GMT",  # obsolete RFC 850
        "Sun Nov  6 08:49:37 1994",  # obsolete asctime (no zone: GMT)
    ],
)
def test_retry_after_http_date_is_relative_to_now(value: str) -> None:
    assert parse_retry_after(value, RFC_DATE - 30.0) == 30.0
    assert parse_retry_after(value, RFC_DATE) == 0.0


@pytest.mark.parametrize(
    "value",
    [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        " Sunday, 06-Nov-94 08:49:37 GMT ",
        "Sun Nov  6 08:49:37 1994",
    ],
)
def test_http_date_forms(value: str) -> None:
    # RFC 9110 §5.6.7: IMF-fixdate and the two obsolete forms, all GMT.
    assert http_date(value) == RFC_DATE


@pytest.mark.parametrize("value", ["", "junk", "784111777", "-1", "Sun, 06 Nov 1994 25:00:00 GMT"])
def test_http_date_junk_is_none(value: str) -> None:
    assert http_date(value) is None


def test_retry_after_date_in_the_past_is_zero() -> None:
    assert parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", RFC_DATE + 86_400.0) == 0.0


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        "-1",
        "-0",
        "+5",
        "1.5",
        "120s",
        "12 0",
        "soon",
        "\u0661\u0662",  # Arabic-Indic digits are not DIGIT
        "Sun, 31 Feb 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 25:49:37 GMT",
        "Sun, 06 Nov",
    ],
)
def test_retry_after_invalid_is_none(value: str) -> None:
    assert parse_retry_after(value, RFC_DATE) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("9" * 400, 2.0**31),  # float(int(...)) overflowed
        ("9" * 5000, 2.0**31),  # int() refused it (int max str digits)
        ("1" + "0" * 1_000_000, 2.0**31),
        ("99999999999", 2.0**31),
        ("2147483648", 2.0**31),
        ("2147483647", 2147483647.0),
        ("0" * 5000 + "42", 42.0),  # leading zeros are not "large"
        ("0" * 5000, 0.0),
    ],
)
def test_retry_after_huge_numbers_are_capped_never_raise(value: str, expected: float) -> None:
    # RFC 9111 §1.2.2: a delta-seconds too big to hold is read as 2**31.
    assert parse_retry_after(value, RFC_DATE) == expected
    assert delta_seconds(value) == expected


def test_huge_retry_after_backs_off_for_the_cap() -> None:
    pol = Politeness(politeness_settings(retry_after_max_s=600), rng=NoJitter())
    cap = Cap("Retry-After", 2.0**31, 600.0, "retry_after_max_s", 600)
    assert pol.on_response("a.test", 0.0, 503, 0.0, "9" * 400) == Outcome(True, 600.0, cap)
    assert (
        cap.line("a.test")
        == "a.test: Retry-After of 2147483648 s cut to 600 s (retry_after_max_s = 600)"
    )
    assert pol.view("a.test", 0.0).retry_after_s == 2.0**31


@pytest.mark.parametrize("value", ["", " 1", "+1", "-1", "1_000", "1.0", "\u0661", "12a"])
def test_delta_seconds_is_digits_only(value: str) -> None:
    assert delta_seconds(value) is None


# -- TokenBucket -----------------------------------------------------------------------


def test_bucket_burst_then_one_per_period_and_debt() -> None:
    bucket = TokenBucket(5, 2.0, now=0.0)
    assert bucket.tokens(0.0) == 5.0
    assert bucket.ready_at(0.0) == 0.0
    for _ in range(5):
        bucket.take(0.0)
    assert bucket.tokens(0.0) == 0.0
    assert bucket.ready_at(0.0) == 0.5
    assert bucket.tokens(0.25) == 0.5
    bucket.take(0.5)
    assert bucket.ready_at(0.5) == 1.0
    bucket.take(1.0)
    bucket.take(1.0)  # forced: into debt
    assert bucket.tokens(1.0) == -1.0
    assert bucket.ready_at(1.0) == 2.0
    assert bucket.tokens(100.0) == 5.0  # never more than capacity
    assert bucket.rate_per_s == 2.0


def test_bucket_set_rate_keeps_tokens() -> None:
    bucket = TokenBucket(4, 1.0, now=0.0)
    bucket.take(0.0)
    bucket.take(0.0)
    bucket.take(0.0)
    assert bucket.tokens(1.0) == 2.0
    bucket.set_rate(4.0, now=1.0)
    assert bucket.tokens(1.0) == 2.0
    assert bucket.tokens(1.25) == 3.0
    assert bucket.tokens(1.5) == 4.0


def test_bucket_unlimited_and_invalid() -> None:
    bucket = TokenBucket(2, math.inf, now=0.0)
    for _ in range(10):
        bucket.take(0.0)
    assert bucket.tokens(0.0) == 2.0
    assert bucket.ready_at(0.0) == 0.0
    assert bucket.rate_per_s == math.inf
    with pytest.raises(ValueError, match="capacity"):
        TokenBucket(0, 1.0, now=0.0)
    with pytest.raises(ValueError, match="rate"):
        TokenBucket(1, 0.0, now=0.0)
    with pytest.raises(ValueError, match="rate"):
        bucket.set_rate(math.nan, 0.0)


def drive_one_host(pol: Politeness, host: str, n: int, elapsed_s: float = 0.0) -> list[float]:
    """Dispatch n fetches to host as early as allowed; each answers 200 at once."""
    starts: list[float] = []
    now = 0.0
    for _ in range(n):
        now = pol.earliest(host, now)
        pol.on_dispatch(host, now)
        starts.append(now)
        pol.on_response(host, now, 200, elapsed_s, None)
    return starts


def test_politeness_bucket_burst_with_zero_delay() -> None:
    pol = Politeness(politeness_settings(delay_ms=0, bucket_capacity=5, bucket_rate_per_s=2.0))
    starts = drive_one_host(pol, "a.test", 9)
    assert starts == [0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 1.0, 1.5, 2.0]


def test_politeness_delay_bounds_spacing_and_bucket_the_average() -> None:
    # 250 ms spacing; the bucket refills at 2/s (lower than 1 / 250 ms), so after the
    # burst is spent the spacing becomes 500 ms.
    pol = Politeness(
        politeness_settings(
            delay_ms=250, bucket_capacity=5, bucket_rate_per_s=2.0, adaptive_delay_factor=0
        )
    )
    starts = drive_one_host(pol, "a.test", 12)
    assert starts == [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5]


def test_default_bucket_never_binds_beyond_the_delay() -> None:
    pol = Politeness(politeness_settings())  # 1000 ms, 5 tokens refilled one per delay
    starts = drive_one_host(pol, "a.test", 8, elapsed_s=0.25)
    assert starts == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert pol.view("a.test", 7.0).tokens == 4.0


# -- delays ----------------------------------------------------------------------------


def test_crawl_delay_above_default_wins() -> None:
    pol = Politeness(politeness_settings(delay_ms=1000))
    pol.set_crawl_delay("a.test", 5.0)
    pol.on_dispatch("a.test", 100.0)
    assert pol.earliest("a.test", 100.0) == 105.0
    view = pol.view("a.test", 100.0)
    assert (view.delay_ms, view.delay_source, view.crawl_delay_s) == (5000.0, "crawl_delay", 5.0)
    # Its bucket now refills one token per 5 s.
    assert view.tokens == 4.0
    assert pol.view("a.test", 102.5).tokens == 4.5


def test_crawl_delay_below_default_capped_and_cleared() -> None:
    pol = Politeness(politeness_settings(delay_ms=1000, max_delay_ms=30_000))
    pol.set_crawl_delay("a.test", 0.5)
    assert pol.view("a.test", 0.0).delay_source == "default"
    assert pol.delay_s("a.test") == 1.0
    pol.set_crawl_delay("a.test", 1000.0)
    assert pol.delay_s("a.test") == 30.0
    assert pol.view("a.test", 0.0).crawl_delay_s == 30.0
    for bad in (None, -1.0, math.nan):
        pol.set_crawl_delay("a.test", bad)
        assert pol.delay_s("a.test") == 1.0
        assert pol.view("a.test", 0.0).crawl_delay_s is None


def test_adaptive_delay_and_its_cap() -> None:
    pol = Politeness(
        politeness_settings(delay_ms=1000, adaptive_delay_factor=2.0, max_delay_ms=30_000)
    )
    pol.on_dispatch("a.test", 0.0)
    assert pol.on_response("a.test", 0.75, 200, 0.75, None) == Outcome(False, 0.0)
    assert pol.earliest("a.test", 0.75) == 0.75 + 1.5  # 2 x 0.75 s, from the response's end
    view = pol.view("a.test", 0.75)
    assert (view.delay_ms, view.delay_source, view.last_status) == (1500.0, "adaptive", 200)
    pol.on_response("a.test", 60.0, 200, 60.0, None)
    assert pol.delay_s("a.test") == 30.0
    pol.on_response("a.test", 61.0, 200, 0.1, None)  # a fast answer brings it back
    assert pol.delay_s("a.test") == 1.0
    assert pol.view("a.test", 61.0).delay_source == "default"


def test_adaptive_off_with_factor_zero() -> None:
    pol = Politeness(politeness_settings(delay_ms=1000, adaptive_delay_factor=0))
    pol.on_response("a.test", 10.0, 200, 9.0, None)
    assert pol.delay_s("a.test") == 1.0


# -- backoff ---------------------------------------------------------------------------


def test_backoff_on_429_503_and_no_response_then_reset() -> None:
    rng, ref = random.Random(7), random.Random(7)
    pol = Politeness(politeness_settings(), rng=rng)
    now = 0.0
    statuses: list[int | None] = [429, 503, None, 429, 503, 429, 503, 429]
    # 429/503 double the learnt delay up to max_delay_ms (30 s); a timeout leaves it.
    learnt = [2.0, 4.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    cases = zip(statuses, NOMINAL, learnt, strict=True)
    for attempt, (status, b, learnt_s) in enumerate(cases, start=1):
        pol.on_dispatch("a.test", now)
        outcome = pol.on_response("a.test", now, status, 0.1, None)
        wait = b + ref.uniform(0.0, b / 2)
        assert outcome == Outcome(retry=True, backoff_s=wait)
        assert pol.earliest("a.test", now) == now + max(wait, learnt_s)
        view = pol.view("a.test", now)
        assert view.backoff_attempts == attempt
        assert view.backoff_until == now + wait
        assert view.last_status == status
        assert view.backoff_started == 0.0
        assert view.learnt_delay_ms == learnt_s * 1000.0
        if wait > learnt_s:
            assert (view.delay_source, view.delay_ms) == ("backoff", wait * 1000.0)
        else:
            assert (view.delay_source, view.delay_ms) == ("rate_limit", learnt_s * 1000.0)
        now = pol.earliest("a.test", now)
    # The 404 ends the backoff but only steps the learnt delay down (by 100 ms).
    pol.on_dispatch("a.test", now)
    assert pol.on_response("a.test", now, 404, 0.1, None) == Outcome(False, 0.0)
    view = pol.view("a.test", now)
    assert (view.backoff_attempts, view.backoff_until, view.backoff_started) == (0, None, None)
    assert (view.learnt_delay_ms, view.delay_source) == (29_900.0, "rate_limit")
    assert pol.earliest("a.test", now) == now + 29.9
    # The next backoff starts again at attempt 1.
    assert pol.on_response("a.test", now, 503, 0.1, None).backoff_s == 1.0 + ref.uniform(0, 0.5)


def test_retry_after_is_honoured_when_longer_and_capped() -> None:
    pol = Politeness(politeness_settings(retry_after_max_s=600), rng=NoJitter())
    out = pol.on_response("a.test", 1000.0, 429, 0.0, "120")
    assert out == Outcome(True, 120.0)
    assert pol.earliest("a.test", 1000.0) == 1120.0
    assert pol.view("a.test", 1000.0).retry_after_s == 120.0
    # Shorter than the backoff (attempt 1: 1 s): the backoff wins.
    assert pol.on_response("b.test", 0.0, 503, 0.0, "0").backoff_s == 1.0
    # Longer than retry_after_max_s: cut to it.
    out = pol.on_response("c.test", 0.0, 503, 0.0, "7200")
    assert out == Outcome(True, 600.0, Cap("Retry-After", 7200.0, 600.0, "retry_after_max_s", 600))
    assert pol.view("c.test", 0.0).retry_after_s == 7200.0
    # HTTP-date form, relative to now.
    out = pol.on_response(
        "d.test",
        RFC_DATE - 90.0,
        503,
        0.0,
        format_datetime(datetime.fromtimestamp(RFC_DATE, UTC), usegmt=True),
    )
    assert out == Outcome(True, 90.0)
    # Invalid: ignored, plain backoff.
    out = pol.on_response("e.test", 0.0, 429, 0.0, "tomorrow")
    assert out == Outcome(True, 1.0)
    assert pol.view("e.test", 0.0).retry_after_s is None
    # Retry-After on a 200 does not start a backoff.
    assert pol.on_response("f.test", 0.0, 200, 0.0, "60") == Outcome(False, 0.0)
    assert pol.earliest("f.test", 0.0) == 1.0  # the plain delay from the response's end


def test_demotion_after_continuous_backoff() -> None:
    pol = Politeness(politeness_settings(demote_after_s=3600), rng=NoJitter())
    pol.on_response("a.test", 0.0, 503, 0.0, None)
    assert not pol.should_demote("a.test", 3599.0)
    pol.on_response("a.test", 1800.0, None, 10.0, None)
    assert not pol.should_demote("a.test", 3599.999)
    assert pol.should_demote("a.test", 3600.0)
    assert pol.view("a.test", 3600.0).demoted
    # One good response ends the continuous backoff; the clock starts over.
    pol.on_response("a.test", 3700.0, 200, 0.1, None)
    assert not pol.should_demote("a.test", 10_000.0)
    pol.on_response("a.test", 4000.0, 429, 0.1, None)
    assert pol.view("a.test", 4000.0).backoff_started == 4000.0
    assert not pol.should_demote("a.test", 7599.0)
    assert pol.should_demote("a.test", 7600.0)


def test_restore_puts_back_state() -> None:
    pol = Politeness(politeness_settings(demote_after_s=3600), rng=NoJitter())
    pol.restore(
        "a.test", crawl_delay_s=4.0, backoff_attempts=4, backoff_until=500.0, backoff_started=100.0
    )
    assert pol.earliest("a.test", 0.0) == 500.0
    assert pol.earliest("a.test", 600.0) == 600.0
    view = pol.view("a.test", 200.0)
    assert view == HostPolitenessView(
        delay_ms=8000.0,  # the nominal wait of attempt 4
        delay_source="backoff",
        tokens=5.0,
        backoff_attempts=4,
        backoff_until=500.0,
        last_status=None,
        retry_after_s=None,
        demoted=False,
        crawl_delay_s=4.0,
        backoff_started=100.0,
    )
    assert pol.should_demote("a.test", 3700.0)
    assert pol.on_response("a.test", 600.0, 503, 0.0, None).backoff_s == 16.0  # attempt 5


def test_unknown_host_reads_defaults_and_creates_nothing() -> None:
    pol = Politeness(politeness_settings(delay_ms=1500, bucket_capacity=3))
    assert pol.earliest("new.test", 42.0) == 42.0
    assert not pol.should_demote("new.test", 1e12)
    assert pol.delay_s("new.test") == 1.5
    assert pol.view("new.test", 42.0) == HostPolitenessView(
        delay_ms=1500.0,
        delay_source="default",
        tokens=3.0,
        backoff_attempts=0,
        backoff_until=None,
        last_status=None,
        retry_after_s=None,
        demoted=False,
    )
    assert pol.hosts() == 0
    pol.on_dispatch("new.test", 42.0)
    assert pol.hosts() == 1


def test_hosts_are_independent() -> None:
    pol = Politeness(politeness_settings(delay_ms=1000), rng=NoJitter())
    pol.on_dispatch("a.test", 0.0)
    pol.on_response("a.test", 0.5, 429, 0.1, None)
    pol.on_dispatch("b.test", 0.5)
    assert pol.earliest("a.test", 0.5) == 2.5  # the learnt 2 x 1 s beats the 1 s backoff
    assert pol.earliest("b.test", 0.5) == 1.5
    assert pol.earliest("c.test", 0.5) == 0.5
    assert pol.view("b.test", 0.5).backoff_attempts == 0


# -- the frontier and politeness together ----------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_dispatch_loop_never_starts_a_host_before_its_delay(seed: int) -> None:
    """An engine-like event loop over many hosts with random response times."""
    rng = random.Random(seed)
    cfg = config(
        delay_ms=500,
        adaptive_delay_factor=1.5,
        max_delay_ms=4000,
        bucket_capacity=3,
        bucket_rate_per_s=1.0,
        retry_after_max_s=20,
        max_retries=3,
    )
    pol = Politeness(PolitenessSettings.from_config(cfg), rng=random.Random(seed))
    frontier = Frontier(priorities=3, max_back_queues=12)
    hosts = [f"h{i}.test" for i in range(40)]
    crawl_delay = {h: rng.choice([None, 0.2, 1.0, 2.5, 10.0]) for h in hosts}
    for h, cd in crawl_delay.items():
        pol.set_crawl_delay(h, cd)
    for i in range(800):
        h = rng.choice(hosts)
        frontier.add(FrontierEntry(f"http://{h}/{i}", f"k{i}", h, 1, rng.randrange(3)))

    starts: dict[str, list[float]] = defaultdict(list)
    # per host: (start, earliest allowed next start given the response) per fetch
    bounds: dict[str, list[tuple[float, float]]] = defaultdict(list)
    # The rules of the module doc, kept apart from the code under test.
    adaptive: dict[str, float] = defaultdict(float)
    learnt: dict[str, float] = defaultdict(float)
    raised: dict[str, float] = defaultdict(lambda: -math.inf)
    step = 0.05  # a tenth of delay_ms
    events: list[tuple[float, int, FrontierEntry, float]] = []
    now, seq, in_flight, fetched = 0.0, 0, 0, 0
    while True:
        while in_flight < 8:
            entry = frontier.pop(now)
            if entry is None:
                break
            pol.on_dispatch(entry.host, now)
            starts[entry.host].append(now)
            elapsed = rng.uniform(0.01, 3.0)
            heapq.heappush(events, (now + elapsed, seq, entry, elapsed))
            seq += 1
            in_flight += 1
        ready = frontier.next_ready_at()
        if events and (ready is None or in_flight >= 8 or events[0][0] <= ready):
            now, _, entry, elapsed = heapq.heappop(events)
            in_flight -= 1
            status = rng.choice([200, 200, 200, 200, 404, 429, 503, 500, None])
            retry_after = rng.choice([None, None, "3", "40", "junk"])
            outcome = pol.on_response(entry.host, now, status, elapsed, retry_after)
            fetched += 1
            h = entry.host
            success = status is not None and status < 500 and status != 429
            if success or min(4.0, 1.5 * elapsed) > adaptive[h]:
                adaptive[h] = min(4.0, 1.5 * elapsed)
            # the rate asked for or chosen: the adaptive part is not doubled (issue #25 trial 11)
            base = max(0.5, min(4.0, crawl_delay[h] or 0.0))
            if success:
                learnt[h] = max(0.0, learnt[h] - step) if learnt[h] - step > 1e-9 else 0.0
            elif status in (429, 503) and now - elapsed >= raised[h]:
                learnt[h], raised[h] = min(4.0, 2 * max(learnt[h], base)), now
            assert pol.view(h, now).learnt_delay_ms == pytest.approx(learnt[h] * 1000.0)
            # The delay runs from the end of the fetch, which is now.
            bound = now + max(base, learnt[h])
            if outcome.retry:
                bound = max(bound, now + outcome.backoff_s)
                assert outcome.backoff_s >= 1.0
                if entry.attempts < cfg.max_retries:
                    entry.attempts += 1
                    frontier.push_front(entry)
            bounds[h].append((starts[h][-1], bound))
            frontier.release(h, pol.earliest(h, now))
        elif ready is not None:
            assert ready > now  # else pop would have given a URL
            now = ready
        else:
            break

    assert len(frontier) == 0 and not events and fetched >= 800
    for h, times in starts.items():
        assert times == sorted(times)
        for (start, bound), next_start in zip(bounds[h], times[1:], strict=False):
            assert next_start >= bound - 1e-9, (h, start, bound, next_start)
        # The bucket bounds the average: no window holds more than capacity + rate x span.
        for i in range(len(times)):
            for j in range(i + 1, len(times)):
                assert j - i + 1 <= 3 + (times[j] - times[i]) * 1.0 + 1e-9


def test_delay_runs_from_the_end_of_a_fetch() -> None:
    """A slow request (or a slow connect) cannot bring two arrivals closer than the delay."""
    pol = Politeness(politeness_settings(delay_ms=500, adaptive_delay_factor=0))
    pol.on_dispatch("a.test", 10.0)
    assert pol.earliest("a.test", 10.0) == 10.5
    pol.on_end("a.test", 10.4)  # the response came at 10.4 s
    assert pol.earliest("a.test", 10.4) == 10.9
    pol.on_end("a.test", 10.2)  # an earlier end (a parallel fetch) moves nothing back
    assert pol.earliest("a.test", 10.4) == 10.9
    pol.on_end("b.test", 3.0)  # unknown host: the delay runs from its end as well
    assert pol.earliest("b.test", 3.0) == 3.5


# -- caps on what a server asked for, named with both values (issue #22 item 8) -------


def test_a_crawl_delay_over_max_delay_ms_returns_its_cap() -> None:
    pol = Politeness(politeness_settings(max_delay_ms=1000))
    cap = pol.set_crawl_delay("a.test", 100.0)
    assert cap == Cap("robots.txt Crawl-delay", 100.0, 1.0, "max_delay_ms", 1000)
    assert cap.line("a.test") == (
        "a.test: robots.txt Crawl-delay of 100 s cut to 1 s (max_delay_ms = 1000)"
    )
    assert pol.delay_s("a.test") == 1.0
    assert pol.set_crawl_delay("a.test", 1.0) is None  # at the cap: nothing cut
    assert pol.set_crawl_delay("a.test", 0.25) is None
    assert pol.set_crawl_delay("a.test", None) is None
    assert pol.set_crawl_delay("a.test", float("nan")) is None


def test_a_retry_after_under_the_cap_is_not_reported() -> None:
    pol = Politeness(politeness_settings(retry_after_max_s=600), rng=NoJitter())
    assert pol.on_response("a.test", 0.0, 503, 0.0, "600").capped is None
    assert pol.on_response("a.test", 1.0, 200, 0.0, "999999").capped is None  # no backoff


def test_the_park_reason_names_a_long_retry_after_and_both_values() -> None:
    pol = Politeness(
        politeness_settings(retry_after_max_s=3600, demote_after_s=3600), rng=NoJitter()
    )
    pol.on_response("a.test", 0.0, 429, 0.0, "999999")
    assert pol.should_park("a.test")
    assert pol.park_reason("a.test") == (
        "Retry-After of 999999 s cut to 3600 s (retry_after_max_s = 3600): a backoff of "
        "3600 s, at least demote_after_s = 3600 s"
    )


def test_the_park_reason_counts_straight_backoffs() -> None:
    pol = Politeness(politeness_settings(park_after_backoffs=3), rng=NoJitter())
    for n in range(3):
        assert pol.park_reason("a.test") is None
        pol.on_response("a.test", float(n), 503, 0.0, None)
    assert pol.park_reason("a.test") == "3 straight 429/503 or no answer (park_after_backoffs = 3)"


def test_the_park_reason_of_a_long_grown_backoff_says_so() -> None:
    pol = Politeness(
        politeness_settings(demote_after_s=10, backoff_base_ms=8000, backoff_max_ms=16_000),
        rng=NoJitter(),
    )
    pol.on_response("a.test", 0.0, None, 0.0, None)
    assert pol.park_reason("a.test") is None
    pol.on_response("a.test", 8.0, None, 0.0, None)
    assert pol.park_reason("a.test") == (
        "a backoff of 24 s since its first 429/503 or no answer, at least demote_after_s = 10 s"
    )
