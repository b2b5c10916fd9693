"""Every way a fetch fails, against a real server on loopback: which ``core.errors``: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_failure_kinds.py``."""

from __future__ import annotations

import asyncio

import pytest
from failurekit import assert_kind, config, fetch_error

from crawldeck.core.errors import (
    FetchError,
    PrivateAddress,
    RequestInvalid,
)
from crawldeck.core.net.dns import DnsCache, DnsSettings
from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.net.transport import PinningResolver
from crawldeck.core.policy.address_policy import AddressPolicy, AddressPolicySettings


@pytest.mark.parametrize(
    "url", ["http://2130706433/", "ftp://example.test/", "http://[::1/", "http://h:99999/"]
)
def test_a_url_that_cannot_be_requested_is_not_retryable(url: str) -> None:
    exc = fetch_error(url)
    assert_kind(exc, RequestInvalid, False, f"cannot request {url!r}: ")


def test_a_private_address_is_not_retryable() -> None:
    async def go() -> FetchError:
        cfg = config()
        dns = DnsCache(DnsSettings.from_config(cfg))
        try:
            resolver = PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(cfg)))
            async with AiohttpFetcher(cfg, resolver=resolver) as fetcher:
                with pytest.raises(FetchError) as info:
                    await fetcher.fetch("http://10.11.12.13/")  # checked, never sent
                return info.value
        finally:
            await dns.aclose()

    exc = asyncio.run(go())
    assert type(exc) is PrivateAddress and exc.retryable is False
    assert len(str(exc).splitlines()) == 1
