"""The observer (``core.crawl.observer.Observer``) on its own, over a real ``Store`` on
``tmp_path`` and the real gate, window, robots.txt cache and DNS cache, on a fake clock.

Each test feeds it what the engine reports (hosts seen, fetches started and ended,
refusals, an earlier run's totals) and checks the figures, the ``hosts`` rows written
and the pictures (host rows, the detail view, snapshots) value by value. Nothing is
fetched or resolved; one test runs a robots.txt check on an in-process fetcher.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakeclock import EPOCH, FakeClock
from multidict import CIMultiDict, CIMultiDictProxy

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.crawl.observer import RECENT_RESPONSES, HostStats, Observer, ObserverStatistics
from crawldeck.core.crawl.snapshot import BackoffRow, BlockedRow, Counters, HostRow, ResponseRow
from crawldeck.core.crawl.stats import RunFigures
from crawldeck.core.net.dns import DnsCache, DnsSettings
from crawldeck.core.net.robots import RobotsCache, RobotsSettings
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.gate import HostGate
from crawldeck.core.policy.ip_limits import IpLimiter, IpLimitSettings
from crawldeck.core.policy.politeness import Politeness, PolitenessSettings
from crawldeck.core.policy.traps import BlockReason, Verdict
from crawldeck.core.policy.window import FrontierWindow
from crawldeck.core.records import BlockedRecord, FetchResult, HostRecord
from crawldeck.core.storage.store import Store

T = EPOCH
ROBOTS = b"User-agent: *\nDisallow: /private\nCrawl-delay: 2\n"


class RobotsSite:
    """A ``RobotsFetcher`` answering every robots.txt with ``ROBOTS``."""

    async def fetch(self, url: str, *, max_bytes: int | None = None) -> FetchResult:
        return FetchResult(
            url=url,
            status=200,
            headers=CIMultiDictProxy(CIMultiDict()),
            body=ROBOTS,
            content_type="text/plain",
            elapsed_ms=1.0,
            truncated=False,
        )


@dataclass
class Rig:
    config: CrawlConfig
    clock: FakeClock
    store: Store
    gate: HostGate
    window: FrontierWindow
    robots: RobotsCache
    dns: DnsCache
    obs: Observer

    def queue(self, host: str, n: int) -> None:
        """Queue ``n`` URLs of ``host`` in memory."""
        for i in range(n):
            u = f"http://{host}/{i}"
            self.window.add(FrontierEntry(u, u, host, 1, 1))

    def saved(self) -> dict[str, HostRecord]:
        self.store.flush()
        return self.store.load_hosts()


def make_rig(path: Path, **config: object) -> Rig:
    cfg = build_config({"delay_ms": 1000, "adaptive_delay_factor": 0, "max_pages": 500, **config})
    clock = FakeClock()
    store = Store(path, flush_interval_ms=0, clock=clock)
    gate = HostGate(
        Politeness(PolitenessSettings.from_config(cfg), random.Random(0)),
        IpLimiter(IpLimitSettings.from_config(cfg)),
        cfg.per_host_concurrency,
    )
    window = FrontierWindow(cfg.frontier_window, store)
    robots = RobotsCache(RobotsSite(), RobotsSettings.from_config(cfg), clock, lambda line: None)
    dns = DnsCache(DnsSettings.from_config(cfg), clock)
    obs = Observer(cfg, clock, store, gate, window, robots, dns)
    return Rig(cfg, clock, store, gate, window, robots, dns, obs)


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    made = make_rig(tmp_path / "crawl.db")
    yield made
    made.store.close()


def test_stats_are_made_on_first_sight_and_a_seed_sets_the_origin(rig: Rig) -> None:
    stats = rig.obs.stats("a.test", None)
    assert stats == HostStats("http://a.test")
    assert rig.obs.stats("a.test", "https://a.test") is stats
    assert stats.origin == "https://a.test"  # nothing fetched yet: the seed's scheme
    stats.fetched = 1
    rig.obs.stats("a.test", "http://a.test")
    assert stats.origin == "https://a.test"  # fetched: it stays


def test_start_and_end_count_urls_in_flight_and_busy_hosts(rig: Rig) -> None:
    obs = rig.obs
    a = obs.stats("a.test", None)
    obs.start("a.test", a)
    obs.start("a.test", a)
    assert (a.in_flight, obs.in_flight, obs.busy) == (2, 2, {"a.test"})
    obs.end("a.test", a)
    assert (a.in_flight, obs.in_flight, obs.busy) == (1, 1, {"a.test"})
    obs.end("a.test", a)
    assert (a.in_flight, obs.in_flight, obs.busy) == (0, 0, set())
    obs.flush_hosts()  # end() marked it changed
    assert list(rig.saved()) == ["a.test"]


def test_a_refusal_goes_to_blocked_and_the_recent_list(rig: Rig) -> None:
    rig.clock.advance(3)
    verdict = Verdict(BlockReason.ROBOTS, "disallowed for 'crawldeck'")
    rig.obs.block("http://a.test/private", "a.test", verdict)
    rig.obs.block("http://a.test/private", "a.test", verdict)  # the store keeps one
    rig.store.flush()
    snap = rig.obs.snapshot("running", None)
    assert snap.blocked == (BlockedRow(T + 3, "robots", "a.test", "http://a.test/private"),) * 2
    assert snap.counters.blocked == {"robots": 1}
    assert rig.store.recent_blocked(5) == [
        BlockedRecord("http://a.test/private", "a.test", "robots", verdict.detail, T + 3)
    ]


def test_restore_takes_an_earlier_runs_totals_and_recent_refusals(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    with Store(db, flush_interval_ms=0) as earlier:
        earlier.record_blocked(BlockedRecord("http://a.test/x", "a.test", "depth", "d", T - 60))
    rig = make_rig(db)
    try:
        recent = rig.store.recent_blocked(200)
        rig.obs.restore({"pages": 7, "blocked": {"depth": 1}}, {"2xx": 6, "error": 1}, 1234, recent)
        assert (rig.obs.pages, rig.obs.bytes) == (7, 1234)
        counters = rig.obs.counters()
        assert counters == Counters(
            pages=7,
            bytes=1234,
            errors=1,
            queued=0,
            in_flight=0,
            hosts_known=0,
            hosts_active=0,
            hosts_backoff=0,
            blocked={"depth": 1},
            status_mix={"2xx": 6, "error": 1},
            dns_lookups=0,
            dns_queries=0,
            dns_hit_ratio=0.0,
            queued_by_priority=(0, 0, 0),
        )
        snap = rig.obs.snapshot("running", None)
        assert snap.blocked == (BlockedRow(T - 60, "depth", "a.test", "http://a.test/x"),)
    finally:
        rig.store.close()


@pytest.mark.parametrize(
    ("flags", "final", "left", "backoff", "state"),
    [
        ({"dead": True, "dns_failing": True, "parked": True}, False, True, True, "dead"),
        ({"dns_failing": True, "parked": True}, True, False, False, "dns_failing"),
        ({"parked": True, "demoted": True}, True, False, True, "parked"),
        ({"demoted": True}, True, False, True, "done"),  # nothing left: done, backoff or not
        ({"demoted": True}, False, True, True, "demoted"),
        ({}, False, True, True, "backoff"),
        ({}, False, False, False, "active"),
        ({}, True, True, False, "queued"),
        ({"cut": True}, True, False, False, "queued"),  # a fetch cut by a stop stays queued
    ],
)
def test_host_state_by_precedence(
    rig: Rig, flags: dict[str, bool], final: bool, left: bool, backoff: bool, state: str
) -> None:
    stats = rig.obs.stats("a.test", None)
    for name, value in flags.items():
        setattr(stats, name, value)
    if left:
        rig.queue("a.test", 1)
    if backoff:
        rig.gate.learn("a.test", T, 503, 0.1, "60")
    assert rig.obs.host_state("a.test", stats, T + 1, final=final) == state


def test_flush_hosts_writes_changed_rows_and_at_the_end_the_live_ones(rig: Rig) -> None:
    obs = rig.obs
    a = obs.stats("a.test", None)
    a.fetched = 3
    rig.gate.note_address("a.test", "192.0.2.1")
    rig.dns.note_connected("a.test", "192.0.2.1")
    rig.gate.learn("a.test", T, 429, 0.1, "30")
    obs.changed("a.test")
    done = obs.stats("done.test", None)
    done.saved = HostRecord(
        "done.test", "192.0.2.9", "ok", T + 99, 500.0, 1000.0, 0, None, 4, "done"
    )
    killed = obs.stats("killed.test", None)  # an earlier run was killed while it was active
    killed.saved = HostRecord(
        "killed.test", "192.0.2.8", "missing", T + 50, None, 1000.0, 0, None, 2, "active"
    )
    killed.fetched = 2
    obs.flush_hosts()
    saved = rig.saved()
    assert saved == {
        "a.test": HostRecord(
            host="a.test",
            ip="192.0.2.1",
            robots_status=None,
            robots_expires_at=None,
            crawl_delay_ms=None,
            delay_ms=30_000.0,  # the backoff wait is the largest part
            backoff_attempts=1,
            backoff_until=T + 30,
            pages_fetched=3,
            state="backoff",
            backoff_started=T,
            learnt_delay_ms=2000.0,  # 2 x the delay in force on a 429
        )
    }
    obs.flush_hosts(final=True)
    saved = rig.saved()
    assert set(saved) == {"a.test", "killed.test"}  # done.test keeps its row (none here)
    assert saved["killed.test"] == HostRecord(
        "killed.test", "192.0.2.8", "missing", T + 50, None, 1000.0, 0, None, 2, "done"
    )
    assert saved["a.test"].state == "done"  # nothing left of it


def test_host_row_shows_the_politeness_wait_while_a_fetch_is_in_flight(rig: Rig) -> None:
    """With its one slot taken the gate has no deadline for the host (``ready_at`` is
    ``None``), yet its next fetch is not "now": the row shows its politeness time."""
    obs = rig.obs
    a = obs.stats("a.test", None)
    rig.queue("a.test", 2)
    obs.start("a.test", a)
    rig.gate.start_page("a.test", T)
    rig.clock.advance(0.25)
    assert obs.host_row("a.test", rig.clock.now) == HostRow(
        host="a.test",
        queued=2,
        in_flight=1,
        fetched=0,
        errors=0,
        delay_ms=1000.0,
        delay_source="default",
        tokens=4.25,  # bucket_capacity 5, one taken 0.25 s ago
        next_fetch_in_s=0.75,
        robots_status="unknown",
        ip=None,
        state="active",
    )
    rig.gate.end_page("a.test", T + 0.5)
    rig.gate.learn("a.test", T + 0.5, 200, 0.5, None)
    assert obs.host_row("a.test", T + 0.5).next_fetch_in_s == 1.0


def test_host_row_counts_a_page_rendering_apart_from_the_fetches(rig: Rig) -> None:
    """issue #25 item 7: the hosts table counted a page rendering as a fetch in flight
    while the header did not; the row now carries the fetches and the renders apart."""
    obs = rig.obs
    a = obs.stats("a.test", None)
    obs.start("a.test", a)
    obs.start("a.test", a)
    a.rendering += 1  # one of the two is past its fetch (``ContentReader.read``)
    row = obs.host_row("a.test", rig.clock.now)
    assert (row.in_flight, row.rendering) == (1, 1)
    assert obs.query_hosts() == (row,)  # busy all the same


def test_query_hosts_ranks_the_busiest_first_and_filters_by_text(rig: Rig) -> None:
    obs = rig.obs
    for host, in_flight, queued, fetched in [
        ("a.test", 0, 5, 1),
        ("b.test", 1, 0, 0),
        ("c.example", 0, 5, 9),
        ("d.test", 0, 0, 0),
    ]:
        stats = obs.stats(host, None)
        stats.in_flight = in_flight
        stats.fetched = fetched
        rig.queue(host, queued)
    ranked = [row.host for row in obs.query_hosts()]
    assert ranked == ["b.test", "c.example", "a.test", "d.test"]
    assert [row.host for row in obs.query_hosts("TEST", limit=2)] == ["b.test", "a.test"]
    assert obs.query_hosts("nothing") == ()


def test_host_detail_before_and_after_robots_txt(rig: Rig) -> None:
    obs = rig.obs
    assert obs.host_detail("never.test") is None
    stats = obs.stats("a.test", None)
    rig.queue("a.test", 3)
    for n in range(RECENT_RESPONSES + 2):
        stats.remember(ResponseRow(T + n, f"http://a.test/{n}", 200, 5.0, None))
    detail = obs.host_detail("a.test", queue_head=2)
    assert detail is not None
    assert detail.queue_head == ("http://a.test/0", "http://a.test/1")
    assert (detail.robots_why, detail.robots_http, detail.robots_expires_in_s) == (None,) * 3
    assert (detail.robots_rules, detail.crawl_delay_s) == ((), None)
    assert [r.url for r in detail.responses] == [f"http://a.test/{n}" for n in range(2, 12)]
    decision = asyncio.run(rig.robots.check("http://a.test/0"))
    assert (decision.allowed, decision.crawl_delay_s, decision.fetched) == (True, 2.0, True)
    rig.clock.advance(100)
    detail = obs.host_detail("a.test")
    assert detail is not None
    assert detail.robots_rules == (("disallow", "/private"),)
    assert detail.crawl_delay_s == 2.0
    assert (detail.robots_why, detail.robots_http, detail.robots_expires_in_s) == (
        "200",
        200,
        86300.0,
    )
    assert detail.row.robots_status == "ok"


def test_a_snapshot_measures_throughput_over_the_last_10_s(rig: Rig) -> None:
    obs = rig.obs
    obs.begin()
    rig.clock.advance(2)
    obs.pages += 5
    obs.bytes += 5000
    snap = obs.snapshot("running", None)
    assert (snap.at, snap.started_at, snap.pages_per_s, snap.bytes_per_s) == (T + 2, T, 2.5, 2500.0)
    assert (snap.pages_this_run, snap.max_pages, snap.window_s) == (5, 500, 10.0)
    rig.clock.advance(9)  # the first sample (T) is now 11 s old and dropped
    obs.pages += 9
    snap = obs.snapshot("paused", None)
    assert (snap.state, snap.pages_per_s) == ("paused", 1.0)  # 9 pages in 9 s since T + 2


def test_a_snapshot_shows_busy_and_next_hosts_and_the_backoff_rows(rig: Rig) -> None:
    obs = rig.obs
    busy = obs.stats("busy.test", None)
    obs.start("busy.test", busy)
    obs.stats("next.test", None)
    rig.queue("next.test", 2)
    obs.stats("slow.test", None)
    rig.gate.learn("slow.test", T, 503, 0.1, "20")
    obs.hosts["slow.test"].demoted = True
    rig.gate.learn("over.test", T, 429, 0.1, None)
    rig.gate.learn("over.test", T, 200, 0.1, None)  # the backoff ended
    obs.stats("over.test", None)
    snap = obs.snapshot("running", None)
    assert [row.host for row in snap.hosts] == ["busy.test", "next.test"]
    assert snap.backoff == (BackoffRow("slow.test", 1, 503, 20.0, T + 20, True, False),)
    assert snap.counters.hosts_active == 2
    assert snap.counters.hosts_backoff == 1
    assert snap.counters.in_flight == 1
    assert snap.counters.hosts_known == 4


def test_log_lines_are_stamped_by_the_engines_clock(rig: Rig) -> None:
    """The one time source: on a fake clock the stamp is the fake time's."""
    rig.clock.advance(3725)  # EPOCH is 22:13:20 UTC
    rig.obs.log("one")
    rig.obs.audit("two")
    assert rig.obs.snapshot("running", None).log == ("23:15:25 one", "23:15:25 two")


def test_statistics_count_what_the_observer_holds(rig: Rig) -> None:
    obs = rig.obs
    assert obs.statistics() == ObserverStatistics(0, 0, 0, 0, 0, 0, 0, 0)
    a, b = obs.stats("a.test", None), obs.stats("b.test", None)
    obs.start("a.test", a)
    obs.start("a.test", a)
    obs.start("b.test", b)
    obs.end("b.test", b)
    obs.log("one line")
    obs.block("http://a.test/x", "a.test", Verdict(BlockReason.DEPTH, "depth 9 > 8"))
    obs.pages, obs.bytes = 3, 300
    rig.store.flush()  # the refusal committed: the run's figures count it
    assert obs.statistics() == ObserverStatistics(
        hosts=2, busy_hosts=1, in_flight=2, pages=3, bytes=300, changed_hosts=1,
        recent_blocked=1, log_lines=1,
        run=RunFigures(pages=3, body_bytes=300, blocked=(("depth", 1),)),
    )  # fmt: skip
    obs.flush_hosts()
    assert obs.statistics().changed_hosts == 0
