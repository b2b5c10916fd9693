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
from collections.abc import Callable
from typing import Any

import pytest
import virtualtime
from dnskit import CountingPolicy, addresses, make_config
from fakeclock import FakeClock

from crawldeck.core.config import build_config
from crawldeck.core.errors import (
    ConfigError,
    DnsError,
    DnsNotFound,
    DnsTemporaryFailure,
    FetchError,
    PrivateAddress,
)
from crawldeck.core.net.dns import Answer, DnsCache, DnsSettings, RecordType
from crawldeck.core.net.transport import PinningResolver, PinningStatistics
from crawldeck.core.policy.address_policy import (
    AddressPolicy,
    AddressPolicySettings,
    bare_host,
    special_purpose,
)
from crawldeck.core.policy.ip_limits import IpLimiter, IpLimitSettings

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


async def turns_until(check: Callable[[], bool], most: int = 10_000) -> None:
    """Give the loop turns until ``check()`` holds, at most ``most`` of them: counted,
    not timed (a 10 ms sleep at load 8 once woke before the lookups had started)."""
    for _ in range(most):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"not reached in {most} loop turns")


async def test_concurrent_lookups_of_one_name_share_one_query() -> None:
    gate = asyncio.Event()
    resolver = ScriptedResolver({"one.test": {"A": a("127.0.5.1"), "AAAA": NODATA}}, gate)
    dns = DnsCache(DnsSettings.from_config(make_config()), FakeClock(), lambda: resolver)
    tasks = [asyncio.create_task(dns.resolve("one.test")) for _ in range(50)]
    await turns_until(lambda: len(resolver.calls) == 2)
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
    await turns_until(lambda: resolver.active == 7)
    for _ in range(100):  # and no more, however long the others wait
        await asyncio.sleep(0)
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
    await turns_until(lambda: resolver.active > 0)
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


def pinning(script: Script, clock: FakeClock) -> tuple[DnsCache, CountingPolicy, PinningResolver]:
    """A ``PinningResolver`` over a scripted ``DnsCache`` (A records; AAAA NXDOMAIN)."""
    config = make_config(dns_min_ttl_s=1)
    resolver = ScriptedResolver(script)
    dns = DnsCache(DnsSettings.from_config(config), clock, lambda: resolver)
    policy = CountingPolicy(AddressPolicySettings.from_config(config))
    return dns, policy, PinningResolver(dns, policy)


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
