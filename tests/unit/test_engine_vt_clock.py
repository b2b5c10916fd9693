"""The two test doubles of the engine tests on virtual time: ``tests/virtualtime.py``'s
loop (timers exact, the clock held while a thread works for the loop, a deadlock
reported rather than hung) and ``tests/fakesite.py``'s fetcher (timeouts at their
budget, ``want_body``, ``max_bytes``, codings, sniffing, headers as a multidict)."""

from __future__ import annotations

import asyncio
import gzip
import threading
import time
from pathlib import Path

import pytest
import virtualtime
from fakesite import (
    HANG,
    FakeFetcher,
    FakeSite,
    Reply,
    config,
    crawl,
    drip,
    links_page,
    lost,
    short_body,
    stacked_codings,
)
from multidict import CIMultiDictProxy

from crawldeck.core.errors import ConnectFailed, ConnectionLost, FetchTimeout, ProtocolViolation
from crawldeck.core.records import FetchResult

A = "http://127.0.0.1"

# ----------------------------------------------------------------- the loop


def test_timers_and_the_clock_agree_exactly() -> None:
    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        marks = []
        await asyncio.sleep(60)
        marks.append(loop.time() - t0)
        loop.call_later(0.25, lambda: marks.append(loop.time() - t0))
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(3):
                await asyncio.Event().wait()
        marks.append(loop.time() - t0)
        return marks

    assert virtualtime.run(main()) == [60.0, 60.25, 63.0]


def test_the_clock_starts_at_an_epoch_like_time() -> None:
    async def now() -> float:
        return asyncio.get_running_loop().time()

    assert virtualtime.run(now()) == virtualtime.EPOCH == 1_700_000_000.0
    assert virtualtime.run(now(), start=1_800_000_000.5) == 1_800_000_000.5


def test_the_clock_stands_still_while_a_thread_works_for_the_loop() -> None:
    """A 1 s timer is pending while ``to_thread`` and ``run_in_executor`` jobs take
    real time: the clock must not jump to the timer meanwhile."""

    async def main() -> tuple[float, float, float, int]:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        fired: list[float] = []
        loop.call_later(1.0, lambda: fired.append(loop.time() - t0))
        await asyncio.to_thread(time.sleep, 0.05)
        after_thread = loop.time() - t0
        await loop.run_in_executor(None, time.sleep, 0.05)
        after_executor = loop.time() - t0
        pending = loop.thread_jobs if isinstance(loop, virtualtime.VirtualTimeLoop) else -1
        await asyncio.sleep(2)
        return after_thread, after_executor, fired[0], pending

    assert virtualtime.run(main()) == (0.0, 0.0, 1.0, 0)


def test_a_loop_with_nothing_to_wait_for_reports_a_deadlock() -> None:
    async def stuck() -> None:
        await asyncio.Event().wait()

    def factory() -> virtualtime.VirtualTimeLoop:
        return virtualtime.VirtualTimeLoop(deadlock_s=0.05)

    with (
        asyncio.Runner(loop_factory=factory) as runner,
        pytest.raises(RuntimeError, match="the test would hang"),
    ):
        runner.run(stuck())


def test_work_from_a_thread_wakes_the_loop_without_moving_the_clock() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        done = asyncio.Event()
        t0 = loop.time()
        threading.Timer(0.05, lambda: loop.call_soon_threadsafe(done.set)).start()
        await done.wait()
        return loop.time() - t0

    assert virtualtime.run(main()) == 0.0


# -------------------------------------------------------------- the fetcher


def fetch(site: FakeSite, url: str, **kwargs: object) -> tuple[FetchResult, float]:
    """Fetch ``url`` from ``site`` once (read timeout 10 s, total 30 s); the result
    and the virtual seconds it took."""

    async def main() -> tuple[FetchResult, float]:
        loop = asyncio.get_running_loop()
        fetcher = FakeFetcher(site, config(read_timeout_ms=10_000, total_timeout_ms=30_000))
        t0 = loop.time()
        result = await fetcher.fetch(url, **kwargs)  # type: ignore[arg-type]
        return result, loop.time() - t0

    return virtualtime.run(main())


def fetch_error(site: FakeSite, url: str) -> tuple[BaseException, float]:
    """The error fetching ``url`` raises and the virtual seconds until it."""

    async def main() -> tuple[BaseException, float]:
        loop = asyncio.get_running_loop()
        fetcher = FakeFetcher(site, config(read_timeout_ms=10_000, total_timeout_ms=30_000))
        t0 = loop.time()
        try:
            await fetcher.fetch(url)
        except Exception as exc:
            return exc, loop.time() - t0
        raise AssertionError("no error")

    return virtualtime.run(main())


def test_a_reply_takes_its_scripted_time_and_is_logged() -> None:
    site = FakeSite()
    pairs = (("Content-Type", "text/html"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2"))
    site.add(A + "/", Reply(200, pairs, b"<p>hi", after_s=1.5, body_s=0.5))
    result, took = fetch(site, A + "/")
    assert took == 2.0 and result.elapsed_ms == 2000.0
    assert isinstance(result.headers, CIMultiDictProxy)
    assert result.headers.getall("SET-COOKIE") == ["a=1", "b=2"]
    (request,) = site.requests
    assert request.end is not None and request.end - request.start == 2.0
    assert (request.target, request.outcome, request.status) == ("/", "200", 200)


def test_unscripted_urls_answer_404_and_sequences_repeat_their_last_answer() -> None:
    site = FakeSite()
    site.add(A + "/s", Reply(503), Reply(200))
    assert fetch(site, A + "/nothing")[0].status == 404
    assert [fetch(site, A + "/s")[0].status for _ in range(3)] == [503, 200, 200]


def test_want_body_false_skips_the_body_and_its_time() -> None:
    site = FakeSite()
    site.add(A + "/z", Reply(200, (("Content-Type", "application/zip"),), b"PK" * 100,
                             after_s=0.1, body_s=500.0))  # fmt: skip
    seen: list[str] = []

    def want_body(media_type: str) -> bool:
        seen.append(media_type)
        return False

    result, took = fetch(site, A + "/z", want_body=want_body)
    assert seen == ["application/zip"]
    assert result.skipped and result.body == b"" and not result.truncated
    assert took == pytest.approx(0.1)


def test_max_bytes_cuts_the_decoded_body_and_its_time() -> None:
    site = FakeSite()
    body = b"<p>" + b"x" * 9997
    site.add(A + "/big", Reply(200, (("Content-Type", "text/html"), ("Content-Encoding", "gzip")),
                               gzip.compress(body), body_s=10.0))  # fmt: skip
    result, took = fetch(site, A + "/big", max_bytes=2500)
    assert result.truncated and result.body == body[:2500]
    assert took == pytest.approx(2.5)


def test_a_body_without_content_type_is_sniffed() -> None:
    site = FakeSite()
    site.add(A + "/u", Reply(200, (), b"<!DOCTYPE html><p>x"))
    result, _ = fetch(site, A + "/u")
    assert (result.content_type, result.sniffed) == ("text/html", True)


def test_timeouts_fire_at_their_budget() -> None:
    site = FakeSite()
    site.add(A + "/hang", HANG)
    site.add(A + "/drip", drip(100.0))
    exc, took = fetch_error(site, A + "/hang")
    assert isinstance(exc, FetchTimeout) and exc.retryable and took == 10.0
    assert str(exc) == f"read timeout (10000 ms): {A}/hang"
    exc, took = fetch_error(site, A + "/drip")
    assert isinstance(exc, FetchTimeout) and took == 30.0
    assert str(exc).startswith("total time budget of 30000 ms exceeded")
    assert [r.outcome for r in site.requests] == ["timeout", "timeout"]


def test_malformed_replies_raise_as_the_real_fetcher_raises_them() -> None:
    site = FakeSite()
    site.add(A + "/short", short_body())
    site.add(A + "/stacked", stacked_codings())
    site.add(A + "/lost", lost(after_s=0.5))
    exc, _ = fetch_error(site, A + "/short")
    assert isinstance(exc, ProtocolViolation) and not exc.retryable
    assert str(exc).startswith("short body: ")
    exc, _ = fetch_error(site, A + "/stacked")
    assert isinstance(exc, ProtocolViolation)
    assert str(exc) == f"stacked content codings gzip, gzip refused: {A}/stacked"
    exc, took = fetch_error(site, A + "/lost")
    assert isinstance(exc, ConnectionLost) and exc.retryable and took == 0.5
    assert exc.reason == "connection_lost"


def test_a_closed_fetcher_refuses_to_fetch() -> None:
    async def main() -> None:
        fetcher = FakeFetcher(FakeSite(), config())
        await fetcher.aclose()
        with pytest.raises(ConnectFailed, match="closed"):
            await fetcher.fetch(A + "/")

    virtualtime.run(main())


def test_a_crawl_of_an_hour_of_virtual_time_ends(tmp_path: Path) -> None:
    """Crawl-delay 600 s over seven pages: an hour of politeness, every gap exact."""
    site = FakeSite()
    site.add(A + "/robots.txt", Reply(200, (("Content-Type", "text/plain"),),
                                      b"User-agent: *\nCrawl-delay: 600\n"))  # fmt: skip
    pages = [f"/p{n}" for n in range(6)]
    site.add(A + "/", links_page(*pages))
    for page in pages:
        site.add(A + page, links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db", max_delay_ms=600_000,
              snapshot_interval_ms=60_000)  # fmt: skip
    starts = [r.start - c.started for r in site.of(A)]
    assert len(starts) == 8 and starts[-1] >= 7 * 600.0
    assert c.ended - c.started < 7 * 600.0 + 0.1
