"""core.net.dns, core.policy.address_policy, core.policy.ip_limits and core.net.transport:
the resolver cache,
the address policy, the per-IP limit and DNS pinning.

Three kinds of test:
* pure: ``special_purpose`` / ``AddressPolicy`` with a table of addresses (values only,
  never connected to) and ``DnsCache`` over a scripted resolver and a fake clock;
* against dnsmasq on loopback (tests/dnsserver.py): TTLs, NXDOMAIN, the in-flight cap,
  rebinding;
* pinning: real HTTP(S) servers on 127.0.5.x reached through names only dnsmasq knows.

Every name points into 127.0.0.0/8 (or ::1). ``allow_networks`` is 127.0.5.0/24; the
other loopback addresses used (127.0.6.x, 127.0.7.x) stand for "private, not allowed".
"""

from __future__ import annotations

import asyncio
import http.server
import itertools
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import virtualtime
from aiohttp.abc import ResolveResult
from dnsserver import DNSMASQ, CountingResolver, DnsmasqServer, StubDnsServer
from fakeclock import FakeClock
from httpserver import HTTPTestServer, Response

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.errors import (
    ConfigError,
    ConnectFailed,
    DnsError,
    DnsNotFound,
    DnsTemporaryFailure,
    FetchError,
    PrivateAddress,
)
from crawldeck.core.net.dns import Answer, DnsCache, DnsSettings, RecordType
from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.net.transport import PinningResolver, PinningStatistics
from crawldeck.core.policy.address_policy import (
    AddressPolicy,
    AddressPolicySettings,
    bare_host,
    special_purpose,
)
from crawldeck.core.policy.ip_limits import IpLimiter, IpLimitSettings
from crawldeck.core.policy.politeness import Politeness, PolitenessSettings

ALLOWED_NET = "127.0.5.0/24"


def make_config(**overrides: Any) -> CrawlConfig:
    values: dict[str, Any] = {
        "user_agent": "crawldeck-test/1.0",
        "connect_timeout_ms": 1000,
        "read_timeout_ms": 2000,
        "total_timeout_ms": 5000,
        "dns_timeout_ms": 500,
        "dns_retries": 0,
        "allow_networks": [ALLOWED_NET],
    }
    values.update(overrides)
    return build_config(values)


Script = dict[str, dict[str, Answer | Exception]]


class ScriptedResolver:
    """A ``Resolver`` answering from ``script[name][rtype]`` (default: NXDOMAIN).

    ``gate``: when set, every query waits for it (to hold queries in flight).
    Records every question in ``calls`` and the most concurrent ones in ``peak``.
    """

    def __init__(self, script: Script | None = None, gate: asyncio.Event | None = None) -> None:
        self.script: Script = script or {}
        self.gate = gate
        self.calls: list[tuple[str, str]] = []
        self.active = 0
        self.peak = 0
        self.closed = False

    async def query(self, name: str, rtype: RecordType) -> Answer:
        self.calls.append((name, rtype))
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            if self.gate is not None:
                await self.gate.wait()
            else:
                await asyncio.sleep(0)
            result = self.script.get(name, {}).get(rtype, Answer("nxdomain"))
            if isinstance(result, Exception):
                raise result
            return result
        finally:
            self.active -= 1

    async def close(self) -> None:
        self.closed = True


def a(*addresses: str, ttl: float = 60) -> Answer:
    return Answer("ok", addresses, ttl)


NODATA = Answer("nodata")


# ---------------------------------------------------------------- the policy


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("0.0.0.0", "reserved"),
        ("0.1.2.3", "reserved"),
        ("100.64.0.1", "private"),
        ("192.0.2.1", "reserved"),
        ("198.18.0.1", "reserved"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("::1", "loopback"),
        ("::", "reserved"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("fe80::1", "link-local"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "reserved"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped: judged as its IPv4
        ("::ffff:10.0.0.1", "private"),
        ("64:ff9b::10.0.0.1", "private"),  # NAT64 of a private address
        ("2002:0a00:0001::1", "private"),  # 6to4 of 10.0.0.1
        ("8.8.8.8", None),
        ("93.184.216.34", None),
        ("172.32.0.1", None),
        ("100.128.0.1", None),
        ("2606:4700:4700::1111", None),
        ("::ffff:8.8.8.8", None),
        ("64:ff9b::8.8.8.8", None),
    ],
)
def test_special_purpose_table(address: str, category: str | None) -> None:
    special = special_purpose(address)
    assert (special[0] if special else None) == category
    if special:
        assert "RFC" in special[1]


def test_policy_refuses_private_by_default_and_names_the_rule() -> None:
    policy = AddressPolicy(AddressPolicySettings.from_config(build_config({})))
    policy.check("example.com", "93.184.216.34")
    with pytest.raises(PrivateAddress) as info:
        policy.check("intranet.example:8080", "10.0.0.5")
    assert info.value.reason == "private_address"
    assert info.value.host == "intranet.example"
    assert info.value.address == "10.0.0.5"
    assert "RFC 1918" in str(info.value)
    assert isinstance(info.value, FetchError)


def test_policy_allow_networks_and_allow_private() -> None:
    policy = AddressPolicy(AddressPolicySettings.from_config(make_config()))
    policy.check("a.test", "127.0.5.9")
    policy.check("a.test", "::ffff:127.0.5.9")  # mapped form of an allowed address
    with pytest.raises(PrivateAddress):
        policy.check("a.test", "127.0.6.1")
    with pytest.raises(PrivateAddress):
        policy.check("a.test", "10.0.0.1")
    everything = AddressPolicy(AddressPolicySettings.from_config(make_config(allow_private=True)))
    for address in ("127.0.6.1", "10.0.0.1", "fe80::1", "::1"):
        everything.check("a.test", address)


def test_policy_trusts_seed_hosts_and_says_so_once() -> None:
    lines: list[str] = []
    policy = AddressPolicy(AddressPolicySettings.from_config(build_config({})), inform=lines.append)
    policy.trust("seed.test:8080")  # a host key: the port is ignored
    assert policy.is_trusted("SEED.test.")
    policy.check("seed.test", "127.0.7.1")
    policy.check("seed.test", "10.0.0.1")
    assert len(lines) == 1 and "seed.test" in lines[0] and "trusted" in lines[0]
    with pytest.raises(PrivateAddress):
        policy.check("other.test", "127.0.7.1")  # a link to another private host


def test_policy_select_keeps_order_and_raises_when_none_allowed() -> None:
    policy = AddressPolicy(AddressPolicySettings.from_config(make_config()))
    got = policy.select("m.test", ["10.0.0.1", "127.0.5.2", "8.8.8.8"])
    assert got == ["127.0.5.2", "8.8.8.8"]
    with pytest.raises(PrivateAddress, match=r"10\.0\.0\.1"):
        policy.select("m.test", ["10.0.0.1", "127.0.6.1"])
    with pytest.raises(PrivateAddress, match="not an IP address"):
        policy.check("m.test", "not-an-ip")
    assert policy.allows("m.test", "8.8.8.8") and not policy.allows("m.test", "10.0.0.1")


@pytest.mark.parametrize(
    ("host", "bare"),
    [
        ("Example.COM.", "example.com"),
        ("a.test:8080", "a.test"),
        ("[::1]:80", "::1"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("127.0.5.1:1234", "127.0.5.1"),
    ],
)
def test_bare_host(host: str, bare: str) -> None:
    assert bare_host(host) == bare


# ---------------------------------------------------------------- the config


def test_config_defaults_and_validation() -> None:
    config = build_config({})
    assert config.dns_nameservers == ()
    assert (config.dns_min_ttl_s, config.dns_max_ttl_s, config.dns_negative_ttl_s) == (
        5,
        3600,
        300,
    )
    assert config.allow_private is False and config.allow_networks == ()
    assert config.ip_delay_ms is None
    ok = build_config({"dns_nameservers": ["127.0.0.1:5399", "[::1]:53", "9.9.9.9"]})
    assert ok.dns_nameservers == ("127.0.0.1:5399", "[::1]:53", "9.9.9.9")
    bad: list[dict[str, Any]] = [
        {"allow_networks": ["127.0.5.0/33"]},
        {"allow_networks": ["nope"]},
        {"dns_nameservers": ["dns.example"]},
        {"dns_nameservers": ["127.0.0.1:0"]},
        {"dns_min_ttl_s": 60, "dns_max_ttl_s": 30},
        {"dns_prefer": "both"},
        {"dns_max_in_flight": 0},
        {"ip_delay_ms": -1},
    ]
    for values in bad:
        with pytest.raises(ConfigError) as info:
            build_config(values)
        assert "\n" not in str(info.value)
        assert next(iter(values)) in str(info.value) or "dns_max_ttl_s" in str(info.value)


# ---------------------------------------------------------- the cache (pure)


async def test_cache_hit_miss_and_ttl_clamps() -> None:
    clock = FakeClock()
    resolver = ScriptedResolver(
        {
            "short.test": {"A": a("127.0.5.1", ttl=1), "AAAA": NODATA},
            "long.test": {"A": a("127.0.5.2", ttl=86_400), "AAAA": NODATA},
        }
    )
    config = make_config(dns_min_ttl_s=5, dns_max_ttl_s=60)
    dns = DnsCache(DnsSettings.from_config(config), clock, lambda: resolver)
    assert await dns.resolve("short.test") == ["127.0.5.1"]
    assert await dns.resolve("SHORT.test.") == ["127.0.5.1"]  # same name, a hit
    clock.now += 4.9  # TTL 1 s, raised to the 5 s floor
    assert await dns.resolve("short.test") == ["127.0.5.1"]
    clock.now += 0.2
    assert await dns.resolve("short.test") == ["127.0.5.1"]  # expired: queried again
    await dns.resolve("long.test")
    clock.now += 59
    await dns.resolve("long.test")
    clock.now += 2  # a day's TTL, cut to the 60 s ceiling
    await dns.resolve("long.test")
    stats = dns.stats()
    assert (stats.lookups, stats.hits, stats.misses) == (7, 3, 4)
    assert stats.queries == 8  # A and AAAA per miss
    assert stats.hit_ratio == pytest.approx(3 / 7)
    await dns.aclose()
    assert resolver.closed


async def test_literals_and_localhost_need_no_query() -> None:
    resolver = ScriptedResolver()
    dns = DnsCache(
        DnsSettings.from_config(make_config(dns_prefer="ipv6")), FakeClock(), lambda: resolver
    )
    assert await dns.resolve("127.0.5.1") == ["127.0.5.1"]
    assert await dns.resolve("[::1]:8080") == ["::1"]
    assert await dns.resolve("localhost") == ["::1", "127.0.0.1"]
    assert await dns.resolve("app.localhost:3000") == ["::1", "127.0.0.1"]
    assert resolver.calls == [] and dns.stats().lookups == 0
    await dns.aclose()


async def test_prefer_orders_families() -> None:
    script: Script = {"dual.test": {"A": a("127.0.5.1"), "AAAA": a("::1")}}
    for prefer, first in (("ipv4", "127.0.5.1"), ("ipv6", "::1")):
        resolver = ScriptedResolver(script)

        def factory(r: ScriptedResolver = resolver) -> ScriptedResolver:
            return r

        dns = DnsCache(
            DnsSettings.from_config(make_config(dns_prefer=prefer)), FakeClock(), factory
        )
        got = await dns.resolve("dual.test")
        assert got[0] == first and sorted(got) == ["127.0.5.1", "::1"]
        assert dns.cached("dual.test") == got and dns.pinned("dual.test") == first
        await dns.aclose()


async def test_nxdomain_and_nodata_are_negative_cached() -> None:
    clock = FakeClock()
    resolver = ScriptedResolver(
        {
            "empty.test": {"A": NODATA, "AAAA": NODATA},
            "soa.test": {"A": Answer("nxdomain", ttl_s=30), "AAAA": Answer("nxdomain", ttl_s=30)},
        }
    )
    dns = DnsCache(
        DnsSettings.from_config(make_config(dns_negative_ttl_s=300)), clock, lambda: resolver
    )
    for _ in range(2):
        with pytest.raises(DnsNotFound, match="NXDOMAIN") as info:
            await dns.resolve("gone.test")
        assert info.value.reason == "dns"
    with pytest.raises(DnsNotFound, match="NODATA"):
        await dns.resolve("empty.test")
    with pytest.raises(DnsNotFound):
        await dns.resolve("soa.test")
    assert dns.cached("gone.test") is None
    assert len(resolver.calls) == 6
    clock.now += 31  # the SOA's negative TTL (RFC 2308 §5) is over, the default is not
    with pytest.raises(DnsNotFound):
        await dns.resolve("soa.test")
    with pytest.raises(DnsNotFound):
        await dns.resolve("gone.test")
    assert len(resolver.calls) == 8
    clock.now += 270  # 301 s: the 300 s default is over too
    with pytest.raises(DnsNotFound):
        await dns.resolve("gone.test")
    stats = dns.stats()
    assert stats.negative_hits == 2 and stats.not_found == 5
    await dns.aclose()


async def test_one_family_failing_still_gives_the_other() -> None:
    resolver = ScriptedResolver(
        {"half.test": {"A": a("127.0.5.1"), "AAAA": DnsTemporaryFailure("half.test: timeout")}}
    )
    dns = DnsCache(DnsSettings.from_config(make_config()), FakeClock(), lambda: resolver)
    assert await dns.resolve("half.test") == ["127.0.5.1"]
    await dns.aclose()


#: One family's outcome in the table below: addresses (TTL 60 s for A, 30 s for AAAA),
#: or NODATA / NXDOMAIN with a 5 s SOA TTL (shorter: a positive entry must not use it),
#: or a temporary failure.
OUTCOMES: dict[str, dict[str, Answer | Exception]] = {
    "ok": {"A": a("127.0.5.1", ttl=60), "AAAA": a("::1", ttl=30)},
    "nodata": {"A": Answer("nodata", ttl_s=5), "AAAA": Answer("nodata", ttl_s=5)},
    "nxdomain": {"A": Answer("nxdomain", ttl_s=5), "AAAA": Answer("nxdomain", ttl_s=5)},
    "temporary": {
        "A": DnsTemporaryFailure("t.test: SERVFAIL"),
        "AAAA": DnsTemporaryFailure("t.test: timeout"),
    },
}
NOT_FOUND = "not found"
TEMPORARY = "temporary"


@pytest.mark.parametrize("prefer", ["ipv4", "ipv6"])
@pytest.mark.parametrize(
    ("v4", "v6", "expected"),
    [
        # a positive answer of either family wins, whatever the other said
        ("ok", "ok", ["127.0.5.1", "::1"]),
        ("ok", "nodata", ["127.0.5.1"]),
        ("ok", "nxdomain", ["127.0.5.1"]),  # dnsmasq's --address=/name/IPv4 (RFC 4074 §4.2)
        ("ok", "temporary", ["127.0.5.1"]),
        ("nodata", "ok", ["::1"]),
        ("nxdomain", "ok", ["::1"]),
        ("temporary", "ok", ["::1"]),
        # not found only when every family says so
        ("nodata", "nodata", (NOT_FOUND, "t.test: no A or AAAA record (NODATA)")),
        ("nxdomain", "nxdomain", (NOT_FOUND, "t.test: no such domain (NXDOMAIN)")),
        ("nodata", "nxdomain", (NOT_FOUND, "(A: NODATA, AAAA: NXDOMAIN)")),
        ("nxdomain", "nodata", (NOT_FOUND, "(A: NXDOMAIN, AAAA: NODATA)")),
        # no address and a family unknown: neither found nor dead
        ("nodata", "temporary", (TEMPORARY, "timeout")),
        ("nxdomain", "temporary", (TEMPORARY, "timeout")),
        ("temporary", "nodata", (TEMPORARY, "SERVFAIL")),
        ("temporary", "nxdomain", (TEMPORARY, "SERVFAIL")),
        ("temporary", "temporary", (TEMPORARY, "SERVFAIL|timeout")),
    ],
)
async def test_every_a_and_aaaa_combination(
    v4: str, v6: str, expected: list[str] | tuple[str, str], prefer: str
) -> None:
    """A x AAAA over ok / nodata / nxdomain / temporary: the answer, and what is cached."""
    clock = FakeClock()
    resolver = ScriptedResolver({"t.test": {"A": OUTCOMES[v4]["A"], "AAAA": OUTCOMES[v6]["AAAA"]}})
    dns = DnsCache(
        DnsSettings.from_config(make_config(dns_prefer=prefer, dns_min_ttl_s=0)),
        clock,
        lambda: resolver,
    )
    if isinstance(expected, list):
        addresses = expected[::-1] if prefer == "ipv6" else expected
        assert await dns.resolve("t.test") == addresses
        clock.now += 20  # past the negative answers' 5 s, within the addresses' TTL
        assert dns.cached("t.test") == addresses
        assert await dns.resolve("t.test") == addresses
        assert len(resolver.calls) == 2  # the second lookup was a hit
        assert dns.stats().not_found == 0
    elif expected[0] == NOT_FOUND:
        for _ in range(2):
            with pytest.raises(DnsNotFound) as info:
                await dns.resolve("t.test")
            assert expected[1] in str(info.value)
        assert len(resolver.calls) == 2  # negative-cached
        assert dns.stats().not_found == 1
    else:
        with pytest.raises(DnsTemporaryFailure, match=expected[1]):
            await dns.resolve("t.test")
        with pytest.raises(DnsTemporaryFailure):
            await dns.resolve("t.test")
        assert len(resolver.calls) == 4  # never cached: asked again
        assert dns.stats().not_found == 0
    await dns.aclose()


def test_temporary_failures_are_retried_and_not_cached() -> None:
    """On virtual loop time, so the backoff is checked exactly: 0.2 s, then 0.4 s."""

    async def main() -> None:
        resolver = ScriptedResolver(
            {"flaky.test": {"A": DnsTemporaryFailure("x: SERVFAIL"), "AAAA": NODATA}}
        )
        dns = DnsCache(
            DnsSettings.from_config(make_config(dns_retries=2)), FakeClock(), lambda: resolver
        )
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(DnsTemporaryFailure, match="3 tries") as info:
            await dns.resolve("flaky.test")
        waited = loop.time() - started
        assert info.value.reason == "dns_temporary" and isinstance(info.value, DnsError)
        assert waited == pytest.approx(0.2 + 0.4, abs=virtualtime.CLOCK_RESOLUTION_S)
        assert len(resolver.calls) == 6
        resolver.script["flaky.test"]["A"] = a("127.0.5.3")
        assert await dns.resolve("flaky.test") == ["127.0.5.3"]  # the failure was not cached
        assert dns.stats().failures == 1
        await dns.aclose()

    virtualtime.run(main())


async def test_concurrent_lookups_of_one_name_share_one_query() -> None:
    gate = asyncio.Event()
    resolver = ScriptedResolver({"one.test": {"A": a("127.0.5.1"), "AAAA": NODATA}}, gate)
    dns = DnsCache(DnsSettings.from_config(make_config()), FakeClock(), lambda: resolver)
    tasks = [asyncio.create_task(dns.resolve("one.test")) for _ in range(50)]
    await asyncio.sleep(0.01)
    tasks[0].cancel()  # one impatient caller does not cancel the others' lookup
    gate.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(results[0], asyncio.CancelledError)
    assert all(r == ["127.0.5.1"] for r in results[1:])
    assert len(resolver.calls) == 2  # one A, one AAAA
    assert dns.stats().coalesced == 49
    await dns.aclose()


async def test_in_flight_cap_is_held() -> None:
    gate = asyncio.Event()
    script: Script = {f"n{i}.test": {"A": a("127.0.5.1"), "AAAA": NODATA} for i in range(100)}
    resolver = ScriptedResolver(script, gate)
    dns = DnsCache(
        DnsSettings.from_config(make_config(dns_max_in_flight=7)), FakeClock(), lambda: resolver
    )
    tasks = [asyncio.create_task(dns.resolve(f"n{i}.test")) for i in range(100)]
    await asyncio.sleep(0.01)
    assert resolver.active == 7 and dns.stats().in_flight == 7
    gate.set()
    await asyncio.gather(*tasks)
    assert resolver.peak == 7 and dns.stats().in_flight_peak == 7
    assert len(resolver.calls) == 200
    await dns.aclose()


async def test_lru_evicts_the_least_recently_used_name() -> None:
    script: Script = {n: {"A": a("127.0.5.1"), "AAAA": NODATA} for n in ("x.t", "y.t", "z.t")}
    resolver = ScriptedResolver(script)
    dns = DnsCache(
        DnsSettings.from_config(make_config(dns_cache_size=2)), FakeClock(), lambda: resolver
    )
    await dns.resolve("x.t")
    await dns.resolve("y.t")
    await dns.resolve("x.t")  # x is now the most recently used
    await dns.resolve("z.t")  # evicts y
    assert dns.cached("x.t") and dns.cached("z.t") and dns.cached("y.t") is None
    assert dns.stats().evictions == 1 and dns.stats().entries == 2
    await dns.aclose()


async def test_aclose_fails_waiters_with_a_dns_error() -> None:
    gate = asyncio.Event()
    resolver = ScriptedResolver({}, gate)
    dns = DnsCache(DnsSettings.from_config(make_config()), FakeClock(), lambda: resolver)
    task = asyncio.create_task(dns.resolve("slow.test"))
    await asyncio.sleep(0.01)
    await dns.aclose()
    with pytest.raises(DnsTemporaryFailure, match="closed"):
        await task
    with pytest.raises(DnsTemporaryFailure, match="closed"):
        await dns.resolve("other.test")


def test_ip_politeness_uses_ip_delay_or_delay() -> None:
    now = 100.0
    shared = IpLimiter(IpLimitSettings.from_config(make_config(delay_ms=800)))
    shared.on_dispatch("127.0.5.2", now)
    assert shared.earliest("127.0.5.2", now) == pytest.approx(now + 0.8)
    own = IpLimiter(IpLimitSettings.from_config(make_config(delay_ms=800, ip_delay_ms=250)))
    own.on_dispatch("127.0.5.2", now)
    assert own.earliest("127.0.5.2", now) == pytest.approx(now + 0.25)
    off = IpLimiter(IpLimitSettings.from_config(make_config(ip_delay_ms=0)))
    for _ in range(10):
        off.on_dispatch("127.0.5.2", now)
    assert off.earliest("127.0.5.2", now) == now


# ------------------------------------------------------- against dnsmasq

NAMES = {
    "a.crawl.test": ["127.0.5.1"],
    "b.crawl.test": ["127.0.5.2"],
    "c.crawl.test": ["127.0.5.2"],  # two names on one address
    "multi.crawl.test": ["127.0.5.3", "127.0.5.4"],
    "dual.crawl.test": ["127.0.5.8", "::1"],
    "ttl.crawl.test": ["127.0.5.6"],
    "outside.crawl.test": ["127.0.6.1"],  # loopback but outside allow_networks
    "seed.crawl.test": ["127.0.7.1"],  # likewise, but a seed's host in one test
}
LONG_TTL = {"long.crawl.test": (["127.0.5.7"], 300)}


def need_dnsmasq() -> None:
    if DNSMASQ is None:
        pytest.fail("dnsmasq is not installed (Debian: apt-get install dnsmasq-base; .ci/run does)")


@pytest.fixture(scope="module")
def dnsmasq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DnsmasqServer]:
    need_dnsmasq()
    with DnsmasqServer(tmp_path_factory.mktemp("dns"), NAMES, ttl_s=1, fixed=LONG_TTL) as server:
        yield server


@pytest.fixture
def fresh_dnsmasq(tmp_path: Path) -> Iterator[DnsmasqServer]:
    """A dnsmasq of its own, for tests that change its records."""
    need_dnsmasq()
    with DnsmasqServer(tmp_path, NAMES, ttl_s=1) as server:
        yield server


def live_config(server: DnsmasqServer | StubDnsServer, **overrides: Any) -> CrawlConfig:
    """A config on ``server``; generous DNS budgets so a loaded machine stays green."""
    values: dict[str, Any] = {"dns_timeout_ms": 2000, "dns_retries": 1}
    values.update(overrides)
    return make_config(dns_nameservers=[server.nameserver], **values)


@pytest.fixture
async def live_dns(dnsmasq: DnsmasqServer) -> AsyncIterator[DnsCache]:
    dns = DnsCache(DnsSettings.from_config(live_config(dnsmasq, dns_min_ttl_s=30)))
    yield dns
    await dns.aclose()


async def test_dnsmasq_hits_do_not_query_again(dnsmasq: DnsmasqServer, live_dns: DnsCache) -> None:
    before = dnsmasq.queries("long.crawl.test")
    assert await live_dns.resolve("long.crawl.test") == ["127.0.5.7"]
    assert sorted(await live_dns.resolve("multi.crawl.test")) == ["127.0.5.3", "127.0.5.4"]
    for _ in range(5):
        await live_dns.resolve("long.crawl.test")
    assert dnsmasq.queries("long.crawl.test") - before == 2  # one A, one AAAA
    stats = live_dns.stats()
    assert (stats.hits, stats.misses) == (5, 2)


async def test_dnsmasq_dual_stack_and_preference(dnsmasq: DnsmasqServer) -> None:
    for prefer, first in (("ipv4", "127.0.5.8"), ("ipv6", "::1")):
        dns = DnsCache(DnsSettings.from_config(live_config(dnsmasq, dns_prefer=prefer)))
        got = await dns.resolve("dual.crawl.test")
        assert got[0] == first and len(got) == 2
        await dns.aclose()


async def test_dnsmasq_one_second_ttl_expires_and_resolves_again(
    fresh_dnsmasq: DnsmasqServer,
) -> None:
    dns = DnsCache(DnsSettings.from_config(live_config(fresh_dnsmasq, dns_min_ttl_s=0)))
    assert await dns.resolve("ttl.crawl.test") == ["127.0.5.6"]
    fresh_dnsmasq.set("ttl.crawl.test", ["127.0.5.16"])
    assert await dns.resolve("ttl.crawl.test") == ["127.0.5.6"]  # still cached
    await asyncio.sleep(1.3)
    assert await dns.resolve("ttl.crawl.test") == ["127.0.5.16"]
    assert fresh_dnsmasq.queries("ttl.crawl.test", "A") == 2
    stats = dns.stats()
    assert (stats.hits, stats.misses) == (1, 2)
    await dns.aclose()


async def test_dnsmasq_nxdomain_is_negative_cached(
    dnsmasq: DnsmasqServer, live_dns: DnsCache
) -> None:
    for _ in range(3):
        with pytest.raises(DnsNotFound, match="NXDOMAIN"):
            await live_dns.resolve("nope.crawl.test")
    assert dnsmasq.queries("nope.crawl.test") == 2  # A and AAAA once
    assert live_dns.stats().negative_hits == 2


async def test_dnsmasq_refused_servfail_and_timeout_are_temporary(
    dnsmasq: DnsmasqServer,
) -> None:
    dns = DnsCache(DnsSettings.from_config(live_config(dnsmasq, dns_retries=1)))
    with pytest.raises(DnsTemporaryFailure, match="REFUSED"):
        await dns.resolve("elsewhere.example")  # outside dnsmasq's domain, no upstream
    await dns.aclose()
    for rcode, text in ((2, "SERVFAIL"), (None, "TIMEOUT")):
        with StubDnsServer(rcode) as stub:
            dns = DnsCache(
                DnsSettings.from_config(live_config(stub, dns_retries=1, dns_timeout_ms=200))
            )
            with pytest.raises(DnsTemporaryFailure, match=text):
                await dns.resolve("x.crawl.test")
            assert stub.questions == 4  # (A + AAAA) x (1 + 1 retry)
            await dns.aclose()


async def test_dnsmasq_in_flight_cap_is_held(dnsmasq: DnsmasqServer) -> None:
    counted: list[CountingResolver] = []

    def factory() -> CountingResolver:
        counted.append(CountingResolver(dnsmasq.nameserver, 1.0))
        return counted[0]

    dns = DnsCache(
        DnsSettings.from_config(live_config(dnsmasq, dns_max_in_flight=5)), resolver_factory=factory
    )
    names = [f"n{i}.crawl.test" for i in range(150)] + list(NAMES) * 3
    results = await asyncio.gather(*(dns.resolve(n) for n in names), return_exceptions=True)
    assert sum(isinstance(r, DnsNotFound) for r in results) == 150
    assert all(isinstance(r, list) for r in results[150:])
    assert counted[0].peak == 5 and dns.stats().in_flight_peak == 5
    await dns.aclose()


# ------------------------------------------------------------- pinning


@pytest.fixture
def web() -> Iterator[dict[str, HTTPTestServer]]:
    """HTTP servers on 127.0.5.1 (a.crawl.test) and 127.0.5.2 (b and c.crawl.test)."""
    with HTTPTestServer("127.0.5.1") as one, HTTPTestServer("127.0.5.2") as two:
        for srv in (one, two):
            srv.set(
                "/",
                lambda req: Response(200, {"Content-Type": "text/plain"}, req.path.encode()),
            )
        yield {"a": one, "b": two}


def url(name: str, srv: HTTPTestServer, path: str = "/") -> str:
    return f"http://{name}:{srv.port}{path}"


async def test_pinned_fetch_keeps_the_name_and_reuses_the_connection(
    dnsmasq: DnsmasqServer, web: dict[str, HTTPTestServer]
) -> None:
    config = live_config(dnsmasq)
    dns = DnsCache(DnsSettings.from_config(config))
    resolver = PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(config)))
    async with AiohttpFetcher(config, resolver=resolver) as fetcher:
        first = await fetcher.fetch(url("a.crawl.test", web["a"]))
        second = await fetcher.fetch(url("a.crawl.test", web["a"], "/?again"))
        connects = fetcher.statistics().connects
    assert (first.status, second.status) == (200, 200)
    hosts = [r.headers["host"] for r in web["a"].requests]
    assert hosts == [f"a.crawl.test:{web['a'].port}"] * 2  # the name, not the address
    assert connects == 1  # keep-alive: one connection, two requests
    assert resolver.statistics() == PinningStatistics(choices=1, connections=1, reused=0)
    assert dns.pinned("a.crawl.test") == "127.0.5.1"
    assert dns.pinned(f"a.crawl.test:{web['a'].port}") == "127.0.5.1"
    await dns.aclose()


async def test_a_redirect_to_another_name_goes_through_the_pinning(
    dnsmasq: DnsmasqServer, web: dict[str, HTTPTestServer]
) -> None:
    web["a"].set("/go", Response(302, {"Location": url("c.crawl.test", web["b"], "/here")}))
    web["b"].set("/here", Response(200, {}, b"arrived"))
    config = live_config(dnsmasq)
    dns = DnsCache(DnsSettings.from_config(config))
    async with AiohttpFetcher(
        config,
        resolver=PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(config))),
    ) as f:
        hop = await f.fetch(url("a.crawl.test", web["a"], "/go"))
        assert hop.status == 302  # the engine follows hops itself, each through the gates
        arrived = await f.fetch(hop.headers["location"])
    assert arrived.status == 200 and arrived.body == b"arrived"
    assert [r.headers["host"] for r in web["b"].requests] == [f"c.crawl.test:{web['b'].port}"]
    assert dns.pinned("c.crawl.test") == "127.0.5.2"
    await dns.aclose()


async def test_failures_come_out_as_our_errors(
    dnsmasq: DnsmasqServer, web: dict[str, HTTPTestServer]
) -> None:
    config = live_config(dnsmasq)
    dns = DnsCache(DnsSettings.from_config(config))
    async with AiohttpFetcher(
        config,
        resolver=PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(config))),
    ) as f:
        with pytest.raises(DnsNotFound):
            await f.fetch("http://missing.crawl.test/")
        with pytest.raises(DnsTemporaryFailure):
            await f.fetch("http://refused.example/")
        with pytest.raises(PrivateAddress) as info:
            await f.fetch(f"http://outside.crawl.test:{web['a'].port}/")
        assert info.value.address == "127.0.6.1"
        with pytest.raises(PrivateAddress):
            await f.fetch("http://10.11.12.13/")  # an IP literal is checked too (not sent)
        closed = socket.socket()
        closed.bind(("127.0.5.1", 0))
        port = closed.getsockname()[1]
        closed.close()
        with pytest.raises(ConnectFailed):
            await f.fetch(f"http://a.crawl.test:{port}/")  # allowed, but nobody listens
    await dns.aclose()


async def test_multi_address_name_falls_over_to_the_next_address(
    dnsmasq: DnsmasqServer,
) -> None:
    with HTTPTestServer("127.0.5.4") as srv:
        srv.set("/", Response(200, {}, b"four"))
        # Nothing listens on 127.0.5.3 at this port: the first address is refused.
        config = live_config(dnsmasq)
        dns = DnsCache(DnsSettings.from_config(config))
        async with AiohttpFetcher(
            config,
            resolver=PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(config))),
        ) as f:
            result = await f.fetch(url("multi.crawl.test", srv))
        assert result.body == b"four"
        assert dns.pinned("multi.crawl.test") == "127.0.5.4"
        await dns.aclose()


async def test_trusted_seed_host_may_be_private_but_its_links_may_not(
    dnsmasq: DnsmasqServer,
) -> None:
    with HTTPTestServer("127.0.7.1") as srv:
        srv.set("/", Response(200, {}, b"seed"))
        config = live_config(dnsmasq)
        dns = DnsCache(DnsSettings.from_config(config))
        lines: list[str] = []
        policy = AddressPolicy(AddressPolicySettings.from_config(config), inform=lines.append)
        policy.trust(f"seed.crawl.test:{srv.port}")
        async with AiohttpFetcher(config, resolver=PinningResolver(dns, policy)) as fetcher:
            assert (await fetcher.fetch(url("seed.crawl.test", srv))).body == b"seed"
            with pytest.raises(PrivateAddress):
                await fetcher.fetch(f"http://outside.crawl.test:{srv.port}/")
        assert len(lines) == 1 and "seed.crawl.test" in lines[0]
        await dns.aclose()


async def test_rebinding_to_an_address_outside_allow_networks_is_refused(
    fresh_dnsmasq: DnsmasqServer, web: dict[str, HTTPTestServer]
) -> None:
    port = web["a"].port
    web["a"].set("/", Response(200, {"Connection": "close"}, b"ok"))
    # A listener where the name will rebind to: it must never see a connection.
    trap = socket.socket()
    trap.bind(("127.0.6.9", port))
    trap.listen(8)
    trap.setblocking(False)
    fresh_dnsmasq.set("rebind.crawl.test", ["127.0.5.1"])
    config = live_config(fresh_dnsmasq, dns_min_ttl_s=0)
    dns = DnsCache(DnsSettings.from_config(config))
    async with AiohttpFetcher(
        config,
        resolver=PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(config))),
    ) as f:
        assert (await f.fetch(f"http://rebind.crawl.test:{port}/")).body == b"ok"
        fresh_dnsmasq.set("rebind.crawl.test", ["127.0.6.9"])
        await asyncio.sleep(1.3)  # the 1 s TTL runs out; the next lookup gets 127.0.6.9
        with pytest.raises(PrivateAddress) as info:
            await f.fetch(f"http://rebind.crawl.test:{port}/")
    assert info.value.address == "127.0.6.9"
    with pytest.raises(BlockingIOError):
        trap.accept()
    trap.close()
    assert len(web["a"].requests) == 1
    await dns.aclose()


async def test_per_ip_limit_spaces_two_names_on_one_address(
    dnsmasq: DnsmasqServer, web: dict[str, HTTPTestServer]
) -> None:
    """The engine's recipe in small: per-host Politeness plus an IpLimiter keyed by the
    pinned address; b.crawl.test and c.crawl.test share 127.0.5.2 and its limit."""
    config = live_config(dnsmasq, delay_ms=50, ip_delay_ms=300)
    dns = DnsCache(DnsSettings.from_config(config))
    hosts = Politeness(PolitenessSettings.from_config(config))
    per_ip = IpLimiter(IpLimitSettings.from_config(config))
    srv = web["b"]
    async with AiohttpFetcher(
        config,
        resolver=PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(config))),
    ) as f:
        dispatched: list[tuple[float, str]] = []

        async def crawl(name: str) -> None:
            for i in range(3):
                for _ in range(100):  # bounded: each wait is at most 0.3 s
                    ip = (await dns.resolve(name))[0]
                    now = time.time()
                    at = max(hosts.earliest(name, now), per_ip.earliest(ip, now))
                    if at <= now:
                        break
                    await asyncio.sleep(at - now)
                hosts.on_dispatch(name, now)
                per_ip.on_dispatch(ip, now)
                dispatched.append((now, name))
                await f.fetch(url(name, srv, f"/?{name}-{i}"))

        await asyncio.gather(crawl("b.crawl.test"), crawl("c.crawl.test"))
    # Every request reached the one server behind the shared address.
    assert sorted(r.path for r in srv.requests) == sorted(
        f"/?{name}-{i}" for name in ("b.crawl.test", "c.crawl.test") for i in range(3)
    )
    # The limit is on dispatch: read from the clock the limiters were given, not from the
    # server's arrival times, which a slow connection set-up under load shifts (CI saw an
    # arrival gap of 28 ms between dispatches 300 ms apart). Without the shared limit the
    # two hosts' dispatches would come in pairs (gaps ~0).
    times = [at for at, _ in dispatched]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert min(gaps) >= 0.3 - 1e-6, gaps
    assert {name for _, name in dispatched} == {"b.crawl.test", "c.crawl.test"}
    await dns.aclose()


# ------------------------------------------- pinning: one choice per new connection


class CountingPolicy(AddressPolicy):
    """An ``AddressPolicy`` that counts its ``select`` calls."""

    selects = 0

    def select(self, host: str, addresses: Iterable[str]) -> list[str]:
        self.selects += 1
        return super().select(host, addresses)


def pinning(script: Script, clock: FakeClock) -> tuple[DnsCache, CountingPolicy, PinningResolver]:
    """A ``PinningResolver`` over a scripted ``DnsCache`` (A records; AAAA NXDOMAIN)."""
    config = make_config(dns_min_ttl_s=1)
    resolver = ScriptedResolver(script)
    dns = DnsCache(DnsSettings.from_config(config), clock, lambda: resolver)
    policy = CountingPolicy(AddressPolicySettings.from_config(config))
    return dns, policy, PinningResolver(dns, policy)


def addresses(results: list[ResolveResult]) -> list[str]:
    return [result["host"] for result in results]


async def test_a_new_connection_takes_the_choice_made_before_the_request() -> None:
    clock = FakeClock()
    dns, policy, resolver = pinning({"a.test": {"A": a("127.0.5.1", ttl=60)}}, clock)
    # The engine's recipe: choose (for the per-IP gate), then the connector resolves.
    assert await resolver.choose("a.test:8080") == ["127.0.5.1"]
    assert addresses(await resolver.resolve("a.test", 8080)) == ["127.0.5.1"]
    assert (dns.stats().lookups, policy.selects) == (1, 1)  # once per new connection
    assert resolver.statistics() == PinningStatistics(choices=1, connections=1, reused=1)
    # The engine's recipe until now: its own lookup and check, and a resolver never
    # told of them resolves and checks again for the connection.
    await dns.resolve("a.test:8080")
    policy.select("a.test", ["127.0.5.1"])
    await PinningResolver(dns, policy).resolve("a.test", 8080)
    assert (dns.stats().lookups, policy.selects) == (1 + 2, 1 + 2)  # twice
    await dns.aclose()


async def test_an_answer_that_changed_before_the_connection_is_checked_again() -> None:
    # DNS rebinding between the engine's lookup and the connection: the choice was
    # made from an answer the cache no longer holds, so the connection makes its own,
    # and the policy refuses the new address.
    clock = FakeClock()
    script: Script = {"rebind.test": {"A": a("127.0.5.1", ttl=1)}}
    dns, _policy, resolver = pinning(script, clock)
    assert await resolver.choose("rebind.test") == ["127.0.5.1"]
    script["rebind.test"]["A"] = a("127.0.6.9", ttl=1)
    clock.advance(1.5)  # the answer expired
    with pytest.raises(PrivateAddress) as info:
        await resolver.resolve("rebind.test", 80)
    assert info.value.address == "127.0.6.9"
    assert resolver.statistics() == PinningStatistics(choices=2, connections=1, reused=0)
    # A refused choice is not remembered: the next connection asks again.
    with pytest.raises(PrivateAddress):
        await resolver.resolve("rebind.test", 80)
    assert resolver.statistics().choices == 3
    await dns.aclose()


async def test_a_choice_holds_only_while_the_cache_holds_its_answer() -> None:
    clock = FakeClock()
    script: Script = {"a.test": {"A": a("127.0.5.1", ttl=10)}}
    dns, policy, resolver = pinning(script, clock)
    await resolver.choose("a.test")
    clock.advance(9)
    await resolver.resolve("a.test", 80)  # still the answer chosen from
    clock.advance(2)  # expired: same addresses, but a new lookup and a new check
    await resolver.resolve("a.test", 80)
    assert resolver.statistics() == PinningStatistics(choices=2, connections=2, reused=1)
    assert (dns.stats().lookups, policy.selects) == (2, 2)
    # Another lookup of the name (the engine's next request) refreshes the answer:
    # an unchanged one keeps the choice current.
    await dns.resolve("a.test")
    await resolver.resolve("a.test", 80)
    assert resolver.statistics().reused == 2
    await dns.aclose()


async def test_the_choices_kept_are_capped_least_recent_first() -> None:
    clock = FakeClock()
    script: Script = {name: {"A": a("127.0.5.1", ttl=60)} for name in ("a.test", "b.test")}
    config = make_config()
    dns = DnsCache(DnsSettings.from_config(config), clock, lambda: ScriptedResolver(script))
    resolver = PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(config)),
                               capacity=1)  # fmt: skip
    await resolver.choose("a.test")
    await resolver.choose("b.test")  # a.test's choice is dropped
    await resolver.resolve("b.test", 80)
    await resolver.resolve("a.test", 80)
    assert resolver.statistics() == PinningStatistics(choices=3, connections=2, reused=1)
    await dns.aclose()


async def test_the_pinned_address_comes_first_in_a_choice_and_at_connection() -> None:
    clock = FakeClock()
    script: Script = {"two.test": {"A": a("127.0.5.3", "127.0.5.4", ttl=60)}}
    dns, _policy, resolver = pinning(script, clock)
    assert await resolver.choose("two.test") == ["127.0.5.3", "127.0.5.4"]
    resolver.connected("two.test", "127.0.5.4")  # the socket went to the second
    assert addresses(await resolver.resolve("two.test", 80)) == ["127.0.5.4", "127.0.5.3"]
    assert await resolver.choose("two.test") == ["127.0.5.4", "127.0.5.3"]
    await dns.aclose()


async def test_one_lookup_and_one_check_per_new_connection_on_real_sockets(
    dnsmasq: DnsmasqServer, web: dict[str, HTTPTestServer]
) -> None:
    # Every response closes its connection, so each request opens a new one: with the
    # engine's recipe (choose, then fetch) each costs one DNS lookup and one policy check.
    srv = web["a"]
    srv.set("/close", Response(200, {"Connection": "close"}, b"bye"))
    config = live_config(dnsmasq)
    dns = DnsCache(DnsSettings.from_config(config))
    policy = CountingPolicy(AddressPolicySettings.from_config(config))
    resolver = PinningResolver(dns, policy)
    async with AiohttpFetcher(config, resolver=resolver) as fetcher:
        for _ in range(3):
            assert await resolver.choose(f"a.crawl.test:{srv.port}") == ["127.0.5.1"]
            assert (await fetcher.fetch(url("a.crawl.test", srv, "/close"))).body == b"bye"
        connects = fetcher.statistics().connects
    assert connects == 3
    assert resolver.statistics() == PinningStatistics(choices=3, connections=3, reused=3)
    assert (dns.stats().lookups, policy.selects) == (3, 3)
    await dns.aclose()


async def test_rebinding_after_the_choice_is_refused_at_the_connection(
    fresh_dnsmasq: DnsmasqServer, web: dict[str, HTTPTestServer]
) -> None:
    port = web["a"].port
    trap = socket.socket()  # where the name rebinds to: it must never see a connection
    trap.bind(("127.0.6.9", port))
    trap.listen(8)
    trap.setblocking(False)
    fresh_dnsmasq.set("rebind.crawl.test", ["127.0.5.1"])
    config = live_config(fresh_dnsmasq, dns_min_ttl_s=0)
    dns = DnsCache(DnsSettings.from_config(config))
    resolver = PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(config)))
    async with AiohttpFetcher(config, resolver=resolver) as f:
        assert await resolver.choose("rebind.crawl.test") == ["127.0.5.1"]
        fresh_dnsmasq.set("rebind.crawl.test", ["127.0.6.9"])
        await asyncio.sleep(1.3)  # the 1 s TTL runs out between the choice and the connect
        with pytest.raises(PrivateAddress) as info:
            await f.fetch(f"http://rebind.crawl.test:{port}/")
    assert info.value.address == "127.0.6.9"
    with pytest.raises(BlockingIOError):
        trap.accept()
    trap.close()
    assert web["a"].requests == []
    await dns.aclose()


# ----------------------------------------------------------------- TLS SNI


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for a.crawl.test (openssl CLI)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=a.crawl.test",
            "-addext",
            "subjectAltName=DNS:a.crawl.test",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


async def test_tls_sni_and_certificate_use_the_name(
    dnsmasq: DnsmasqServer, certificate: tuple[Path, Path]
) -> None:
    cert, key = certificate
    seen_sni: list[str | None] = []
    seen_host: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            seen_host.append(self.headers["Host"])
            body = b"secure"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)

    def sni(sock: ssl.SSLObject, name: str, ctx: ssl.SSLContext) -> None:
        seen_sni.append(name)

    server_ctx.sni_callback = sni
    httpd = http.server.ThreadingHTTPServer(("127.0.5.1", 0), Handler)
    httpd.socket = server_ctx.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        config = live_config(dnsmasq)
        dns = DnsCache(DnsSettings.from_config(config))
        client_ctx = ssl.create_default_context(cafile=str(cert))
        resolver = PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(config)))
        async with AiohttpFetcher(config, resolver=resolver, ssl_context=client_ctx) as fetcher:
            result = await fetcher.fetch(f"https://a.crawl.test:{httpd.server_address[1]}/")
        assert result.body == b"secure"
        assert seen_sni == ["a.crawl.test"]  # SNI: the name, not 127.0.5.1
        assert seen_host == [f"a.crawl.test:{httpd.server_address[1]}"]
        await dns.aclose()
    finally:
        httpd.shutdown()
        thread.join()
        httpd.server_close()
