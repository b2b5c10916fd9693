"""The recrawl's pure parts (``crawldeck.core.crawl.recrawl``): ``--older-than`` durations, Cho
and Garcia-Molina's change-rate estimator and the visits it reads, the order of a
recrawl, the conditional headers and the fetcher that adds them."""

from __future__ import annotations

import asyncio
import math
import tracemalloc
from collections.abc import Callable, Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from crawldeck.core.crawl.recrawl import (
    Candidate,
    ConditionalFetcher,
    Observation,
    Validators,
    Visit,
    change_rate,
    observe,
    order,
    parse_duration,
    pooled_prior,
)
from crawldeck.core.errors import ConfigError
from crawldeck.core.records import BodySink, FetchResult

# ------------------------------------------------------------------ durations


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30.0), ("2h", 7200.0), ("7d", 604_800.0), ("1.5m", 90.0), ("2w", 1_209_600.0),
     ("0", 0.0), ("45", 45.0), (" 10m ", 600.0), ("1h30m", 5400.0), ("3h2m", 10_920.0),
     ("1d12h", 129_600.0)],
)  # fmt: skip
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "-1d", "2 days", "d", "1y", "1e3s", "nan", "1h30", "h30m"])
def test_parse_duration_refuses_with_one_line(text: str) -> None:
    with pytest.raises(ConfigError, match="bad duration") as caught:
        parse_duration(text)
    assert "\n" not in str(caught.value)


# ------------------------------------------------------------------ the estimator


def test_change_rate_known_values() -> None:
    # every one of 1 interval of 100 s changed: -ln(0.5 / 1.5) / 100 = ln 3 / 100
    assert change_rate(1, 1, 100.0, prior=9.0) == pytest.approx(math.log(3) / 100)
    # 2 of 4 intervals of 100 s: -ln(2.5 / 4.5) / 100
    assert change_rate(4, 2, 400.0, prior=9.0) == pytest.approx(-math.log(2.5 / 4.5) / 100)
    assert change_rate(4, 2, 400.0, prior=9.0) == pytest.approx(0.0058778666)
    # X = n stays finite: ln(2n + 1) / I
    assert change_rate(10, 10, 1000.0, prior=9.0) == pytest.approx(math.log(21) / 100)
    assert change_rate(4, 0, 400.0, prior=9.0) == 0.0


def test_a_page_seen_once_gets_the_prior_and_nothing_divides_by_zero() -> None:
    assert change_rate(0, 0, 0.0, prior=0.25) == 0.25
    assert change_rate(3, 1, 0.0, prior=0.25) == 0.25  # three visits in the same instant
    assert change_rate(3, 1, -5.0, prior=0.25) == 0.25  # a clock that went back
    with pytest.raises(ValueError, match="changes"):
        change_rate(2, 3, 10.0, prior=0.0)
    with pytest.raises(ValueError, match="changes"):
        change_rate(2, -1, 10.0, prior=0.0)


@given(
    n=st.integers(1, 500),
    data=st.data(),
    span=st.floats(1e-3, 1e9, allow_nan=False, allow_infinity=False),
)
def test_change_rate_grows_with_the_changes_seen(n: int, data: st.DataObject, span: float) -> None:
    x = data.draw(st.integers(0, n - 1))
    lower, higher = change_rate(n, x, span, 0.0), change_rate(n, x + 1, span, 0.0)
    assert 0.0 <= lower < higher < math.inf
    # the same changes over a longer time are a lower rate
    assert change_rate(n, x + 1, span * 2, 0.0) < higher


def test_the_estimator_is_close_to_the_rate_on_poisson_changes() -> None:
    # Visits every 10 s of a page changing at 0.05/s: P(change in an interval) =
    # 1 - exp(-0.5); with the expected X the estimate is the rate up to the 0.5 terms.
    n, interval, rate = 1000, 10.0, 0.05
    x = round(n * (1 - math.exp(-rate * interval)))
    assert change_rate(n, x, n * interval, 0.0) == pytest.approx(rate, rel=0.01)


# ------------------------------------------------------------------ visits


def test_observe_counts_intervals_and_changes_by_digest() -> None:
    visits = [
        Visit(100.0, 200, "sha1:A"),
        Visit(150.0, 503, None),  # an error observes nothing
        Visit(200.0, 304, None),  # not modified: no change, digest kept
        Visit(300.0, 200, "sha1:B"),  # changed
        Visit(400.0, 200, "sha1:B"),  # the same bytes sent again: no change
        Visit(500.0, 301, None),
    ]
    assert observe(visits) == Observation(intervals=3, changes=1, span_s=300.0, last_visit=500.0)
    assert observe([Visit(7.0, 200, "sha1:A")]) == Observation(0, 0, 0.0, 7.0)
    assert observe([Visit(7.0, 404, None)]) == Observation(0, 0, 0.0, 7.0)
    with pytest.raises(ValueError, match="without a visit"):
        observe([])


def test_a_page_that_changed_at_every_visit() -> None:
    visits = [Visit(float(t), 200, f"sha1:{t}") for t in (0, 60, 120)]
    seen = observe(visits)
    assert (seen.intervals, seen.changes) == (2, 2)
    assert change_rate(seen.intervals, seen.changes, seen.span_s, 0.0) == pytest.approx(
        math.log(5) / 60
    )


def test_pooled_prior() -> None:
    pages = [Observation(2, 2, 200.0, 0.0), Observation(2, 0, 200.0, 0.0), Observation(0, 0, 0, 0)]
    assert pooled_prior(pages) == pytest.approx(-math.log(2.5 / 4.5) / 100)
    assert pooled_prior([Observation(0, 0, 0.0, 5.0)]) == 0.0
    assert pooled_prior([]) == 0.0


# ------------------------------------------------------------------ order


def test_order_puts_often_changing_pages_first_then_the_oldest_visit() -> None:
    pages = [
        Candidate("http://a/never", "k1", 0.0, 10.0),
        Candidate("http://a/old-never", "k2", 0.0, 5.0),
        Candidate("http://a/always", "k3", 0.02, 50.0),
        Candidate("http://a/sometimes", "k4", 0.01, 1.0),
        Candidate("http://a/b-tie", "k5", 0.0, 5.0),
    ]
    assert [c.url for c in order(pages)] == [
        "http://a/always",
        "http://a/sometimes",
        "http://a/b-tie",
        "http://a/old-never",
        "http://a/never",
    ]


# ------------------------------------------------------------------ conditional requests


def test_validators_headers() -> None:
    both = Validators('"abc"', "Tue, 14 Nov 2023 22:13:20 GMT")
    assert both.headers() == {
        "If-None-Match": '"abc"',
        "If-Modified-Since": "Tue, 14 Nov 2023 22:13:20 GMT",
    }
    assert Validators('W/"x"', None).headers() == {"If-None-Match": 'W/"x"'}
    assert Validators(None, "Tue, 14 Nov 2023 22:13:20 GMT").headers() == {
        "If-Modified-Since": "Tue, 14 Nov 2023 22:13:20 GMT"
    }
    assert Validators("", None).headers() == {}


class _Recorder:
    """A ``Fetcher`` that answers 304 and keeps the headers of each request."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, str] | None]] = []
        self.closed = False

    async def fetch(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        headers: Mapping[str, str] | None = None,
        want_body: Callable[[str], bool] | None = None,
        on_body: BodySink | None = None,
    ) -> FetchResult:
        self.sent.append((url, None if headers is None else dict(headers)))
        return FetchResult(url, 304, CIMultiDictProxy(CIMultiDict()), b"", "", 1.0, False)

    async def aclose(self) -> None:
        self.closed = True


def test_conditional_fetcher_adds_the_validators_of_known_urls_only() -> None:
    inner = _Recorder()
    fetcher = ConditionalFetcher(inner, {"http://a/p": Validators('"t"', None)})

    async def go() -> None:
        assert (await fetcher.fetch("http://a/p")).status == 304
        await fetcher.fetch("http://a/p", headers={"Cookie": "c=1", "If-None-Match": '"mine"'})
        await fetcher.fetch("http://a/robots.txt")
        await fetcher.fetch("http://a/new", headers={"Cookie": "c=1"})
        await fetcher.aclose()

    asyncio.run(go())
    assert inner.sent == [
        ("http://a/p", {"If-None-Match": '"t"'}),
        ("http://a/p", {"If-None-Match": '"mine"', "Cookie": "c=1"}),
        ("http://a/robots.txt", None),
        ("http://a/new", {"Cookie": "c=1"}),
    ]
    assert inner.closed


def test_the_validators_map_costs_about_300_bytes_per_page() -> None:
    count = 20_000
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = {
            f"http://127.78.0.1:8780/library/some-module-name-{i:08d}.html": Validators(
                f'"{i:032x}"', "Tue, 14 Nov 2023 22:13:20 GMT"
            )
            for i in range(count)
        }
        per_page = (tracemalloc.get_traced_memory()[0] - before) / count
    finally:
        tracemalloc.stop()
    assert len(kept) == count
    assert 200 < per_page < 350, per_page
