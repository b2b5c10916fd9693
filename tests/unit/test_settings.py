"""Each part's small settings object: built from a config, and what the part does with it.

Every part takes the few settings it needs (``XSettings.from_config(config)``), never
the whole ``CrawlConfig``; the per-IP limit is an ``IpLimiter`` of its own settings.
Pure logic on plain float times and an in-process resolver: no network, no sleeps.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.net.dns import Answer, DnsCache, DnsSettings, RecordType
from crawldeck.core.net.robots import RobotsSettings
from crawldeck.core.policy.address_policy import AddressPolicy, AddressPolicySettings
from crawldeck.core.policy.ip_limits import IpLimiter, IpLimitSettings
from crawldeck.core.policy.politeness import Politeness, PolitenessSettings
from crawldeck.core.policy.traps import BlockReason, ScopePolicy, TrapGuard, TrapSettings

#: A valid config whose every key that a settings object carries differs from its
#: default, so that a settings field read from the wrong key (or left at a default)
#: cannot pass.
CHANGED: dict[str, Any] = {
    "delay_ms": 250,
    "bucket_capacity": 3,
    "bucket_rate_per_s": 0.5,
    "adaptive_delay_factor": 1.5,
    "max_delay_ms": 9000,
    "backoff_base_ms": 200,
    "backoff_max_ms": 7000,
    "retry_after_max_s": 120,
    "demote_after_s": 600,
    "park_after_backoffs": 4,
    "dns_nameservers": ["127.0.0.1:5399"],
    "dns_prefer": "ipv6",
    "dns_min_ttl_s": 2,
    "dns_max_ttl_s": 90,
    "dns_negative_ttl_s": 30,
    "dns_cache_size": 7,
    "dns_max_in_flight": 3,
    "dns_timeout_ms": 700,
    "dns_retries": 1,
    "allow_private": True,
    "allow_networks": ["127.0.5.0/24"],
    "robots_token": "NiceBot",
    "robots_max_bytes": 600_000,
    "robots_max_redirects": 2,
    "robots_ttl_max_s": 600,
    "robots_retry_s": 60,
    "robots_on_failure": "disallow",
    "max_url_length": 300,
    "max_depth": 4,
    "max_per_host": 50,
    "max_path_depth": 6,
    "max_segment_repeats": 1,
    "max_page_param": 40,
    "calendar_window_years": 1,
    "calendar_max_dates": 30,
    "calendar_max_dates_per_host": 90,
    "calendar_max_years": 7,
    "strip_params": ["sid"],
    "ip_delay_ms": 400,
}

SETTINGS_TYPES = [
    PolitenessSettings,
    DnsSettings,
    AddressPolicySettings,
    RobotsSettings,
    TrapSettings,
]


@pytest.mark.parametrize("kind", SETTINGS_TYPES, ids=lambda kind: kind.__name__)
def test_settings_take_their_keys_from_the_config(kind: Any) -> None:
    config = build_config(CHANGED)
    made = kind.from_config(config)
    names = [f.name for f in dataclasses.fields(made)]
    default = CrawlConfig()
    for name in names:
        assert getattr(made, name) == getattr(config, name), name
        assert getattr(made, name) != getattr(default, name), f"{name} is left at its default"
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, names[0], getattr(made, names[0]))


def test_the_settings_split_the_config_between_them() -> None:
    """No key is carried by two settings objects; each carries a handful, not all 59."""
    carried = [f.name for kind in SETTINGS_TYPES for f in dataclasses.fields(kind)]
    assert len(carried) == len(set(carried))
    assert max(len(dataclasses.fields(kind)) for kind in SETTINGS_TYPES) == 11
    assert set(carried) | {"ip_delay_ms"} <= set(CHANGED)


def test_ip_limit_settings_take_ip_delay_ms_else_delay_ms() -> None:
    assert IpLimitSettings.from_config(build_config(CHANGED)) == IpLimitSettings(400, 3)
    without = build_config({**CHANGED, "ip_delay_ms": None})
    assert IpLimitSettings.from_config(without) == IpLimitSettings(250, 3)
    off = build_config({**CHANGED, "ip_delay_ms": 0})
    assert IpLimitSettings.from_config(off).ip_delay_ms == 0


# ------------------------------------------------- the parts use their settings


def test_politeness_uses_its_settings() -> None:
    pol = Politeness(PolitenessSettings.from_config(build_config(CHANGED)))
    view = pol.view("a.test", 0.0)
    assert (view.delay_ms, view.tokens) == (250.0, 3.0)
    pol.on_dispatch("a.test", 0.0)
    outcome = pol.on_response("a.test", 0.1, 503, 0.1, "60")
    assert outcome.retry and outcome.backoff_s == 60.0  # Retry-After above 200-300 ms backoff
    # the learnt delay doubles from max(delay 250 ms, adaptive 1.5 x 100 ms)
    assert pol.delay_s("a.test") == pytest.approx(0.5)


def test_address_policy_uses_its_settings() -> None:
    strict = AddressPolicy(
        AddressPolicySettings(allow_private=False, allow_networks=("127.0.5.0/24",))
    )
    assert strict.allows("a.test", "127.0.5.9")
    assert not strict.allows("a.test", "127.0.6.9")
    assert strict.allows("a.test", "93.184.215.14")
    everything = AddressPolicy(AddressPolicySettings(allow_private=True, allow_networks=()))
    assert everything.allows("a.test", "127.0.6.9")


class _OneAnswer:
    """A ``Resolver`` that answers every name with one A and one AAAA record."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self.queries: list[tuple[str, RecordType]] = []

    async def query(self, name: str, rtype: RecordType) -> Answer:
        self.queries.append((name, rtype))
        address = "93.184.215.14" if rtype == "A" else "2606:2800:21f:cb07:6820:80da:af6b:8b2c"
        return Answer("ok", (address,), self.ttl_s)

    async def close(self) -> None:
        return None


def test_dns_cache_uses_its_settings() -> None:
    """``dns_prefer`` orders the families and ``dns_max_ttl_s`` clamps a long TTL."""
    now = [1000.0]
    resolver = _OneAnswer(ttl_s=86_400)
    settings_ = DnsSettings.from_config(build_config(CHANGED))  # ipv6 first, TTL <= 90 s
    dns = DnsCache(settings_, lambda: now[0], lambda: resolver)

    async def lookups() -> tuple[list[str], list[str] | None, list[str] | None]:
        first = await dns.resolve("a.test")
        now[0] += 89.0
        fresh = dns.cached("a.test")
        now[0] += 2.0
        stale = dns.cached("a.test")
        await dns.aclose()
        return first, fresh, stale

    first, fresh, stale = asyncio.run(lookups())
    assert first == ["2606:2800:21f:cb07:6820:80da:af6b:8b2c", "93.184.215.14"]
    assert fresh == first
    assert stale is None


def test_trap_guard_uses_its_settings() -> None:
    guard = TrapGuard(
        TrapSettings.from_config(build_config(CHANGED)),
        ScopePolicy("any"),
        datetime.date(2026, 1, 1),
    )
    assert guard.admit("http://a.test/x", 4, 0) is None
    verdict = guard.admit("http://a.test/x", 5, 0)
    assert verdict is not None and verdict.reason is BlockReason.DEPTH
    verdict = guard.admit("http://a.test/?page=41", 1, 0)
    assert verdict is not None and verdict.reason is BlockReason.PAGINATION


# ------------------------------------------------------------- the per-IP limit


def _limiter(**values: Any) -> IpLimiter:
    return IpLimiter(IpLimitSettings.from_config(build_config(values)))


def test_ip_limiter_counts_from_the_end_of_the_last_request() -> None:
    limit = _limiter(delay_ms=1000, ip_delay_ms=300)
    ip = "127.0.5.2"
    assert limit.earliest(ip, 5.0) == 5.0  # an unknown address is ready at once
    limit.on_dispatch(ip, 10.0)
    assert limit.earliest(ip, 10.0) == pytest.approx(10.3)
    limit.on_end(ip, 10.5)  # a 500 ms fetch: the 300 ms run from its end
    assert limit.earliest(ip, 10.5) == pytest.approx(10.8)
    limit.on_dispatch(ip, 10.8)
    limit.on_dispatch(ip, 11.1)  # a second request in flight
    limit.on_end(ip, 11.0)  # the first ends before the second's start: no step back
    assert limit.earliest(ip, 11.1) == pytest.approx(11.4)
    assert limit.earliest("127.0.5.3", 11.1) == 11.1  # another address is its own


def test_ip_limiter_off_at_zero() -> None:
    limit = _limiter(ip_delay_ms=0)
    for _ in range(20):
        limit.on_dispatch("127.0.5.2", 3.0)
    assert limit.earliest("127.0.5.2", 3.0) == 3.0


_steps = st.lists(
    st.tuples(
        st.sampled_from(["dispatch", "end"]),
        st.sampled_from(["127.0.5.2", "127.0.5.3"]),
        st.floats(min_value=0.0, max_value=2.0, allow_nan=False),
    ),
    max_size=60,
)


@given(
    delay_ms=st.integers(min_value=0, max_value=1500),
    capacity=st.integers(min_value=1, max_value=6),
    steps=_steps,
)
def test_ip_limiter_spaces_as_host_politeness_without_its_extras(
    delay_ms: int, capacity: int, steps: list[tuple[str, str, float]]
) -> None:
    """The limiter gives the same earliest start, after any sequence of starts and
    ends (forced starts included), as a ``Politeness`` with the same delay, no
    adaptive part and one token per delay: the per-IP rule as it was built before."""
    config = build_config({"delay_ms": 9999, "ip_delay_ms": delay_ms, "bucket_capacity": capacity})
    limit = IpLimiter(IpLimitSettings.from_config(config))
    model = Politeness(
        dataclasses.replace(
            PolitenessSettings.from_config(config),
            delay_ms=delay_ms,
            adaptive_delay_factor=0.0,
            bucket_rate_per_s=None,
        )
    )
    now = 100.0
    for kind, ip, gap in steps:
        now += gap
        if kind == "dispatch":
            limit.on_dispatch(ip, now)
            model.on_dispatch(ip, now)
        else:
            limit.on_end(ip, now)
            model.on_end(ip, now)
        for address in ("127.0.5.2", "127.0.5.3"):
            assert limit.earliest(address, now) == pytest.approx(model.earliest(address, now))
