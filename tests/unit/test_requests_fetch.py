"""Requests as users need them (issue #14 item 5), at the fetcher: the tests that need no
server, process or console (pure logic, the store, virtual time); the others are in
``tests/loopback/test_requests_fetch.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from requestkit import make_config

from crawldeck.core.errors import ConfigError
from crawldeck.core.net.fetcher import AiohttpFetcher


async def test_a_password_env_not_set_is_one_line_at_start() -> None:
    config = make_config(auth={"https://a.example": {"user": "u", "password_env": "NOT_SET_X"}})
    with pytest.raises(ConfigError) as info:
        AiohttpFetcher(config)
    assert str(info.value) == (
        "config key 'auth': 'https://a.example': the environment variable 'NOT_SET_X' "
        "(password_env) is not set"
    )


async def test_a_missing_or_bad_netrc_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NETRC", str(tmp_path / "none"))
    with pytest.raises(ConfigError) as missing:
        AiohttpFetcher(make_config(netrc=True))
    assert str(missing.value) == f"netrc file {str(tmp_path / 'none')!r} does not exist"
    bad = tmp_path / "bad"
    bad.write_text("machine a login b password c\nmachine x frob y\nmachine z login q\n")
    monkeypatch.setenv("NETRC", str(bad))
    with pytest.raises(ConfigError) as broken:
        AiohttpFetcher(make_config(netrc=True))
    assert str(broken.value).startswith(f"netrc file {str(bad)!r} line 2: ")


async def test_a_bad_environment_proxy_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(ConfigError) as info:
        AiohttpFetcher(make_config(trust_env=True))
    assert str(info.value) == (
        "environment variable HTTPS_PROXY: expected an http:// proxy URL such as "
        "'http://127.0.0.1:3128', got 'socks5://127.0.0.1:1080'"
    )
    AiohttpFetcher(make_config())  # without trust_env it is not read
