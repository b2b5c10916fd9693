"""The typed config: defaults < file < flags, unknown keys and bad values rejected."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawldeck.core.config import CrawlConfig, asdict, build_config, load_config
from crawldeck.core.errors import ConfigError


def test_defaults_are_the_designs() -> None:
    c = CrawlConfig()
    assert (c.delay_ms, c.per_host_concurrency, c.bucket_capacity) == (1000, 1, 5)
    assert (c.backoff_base_ms, c.backoff_max_ms, c.demote_after_s) == (1000, 60_000, 3600)
    assert (c.robots_ttl_max_s, c.robots_max_bytes, c.robots_max_redirects) == (86_400, 512_000, 5)
    assert (c.max_depth, c.max_per_host, c.scope, c.max_redirects) == (10, 500_000, "domain", 10)
    assert c.max_body_bytes == 10 * 1024 * 1024
    assert c.robots_token == "crawldeck"


def test_file_then_flags(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('delay_ms = 50\nscope = "host"\n[crawl]\nmax_depth = 3\n')
    c = load_config(path, {"delay_ms": 7, "max_pages": None})
    assert (c.delay_ms, c.scope, c.max_depth, c.max_pages) == (7, "host", 3, None)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"delay": 5}, "unknown config key 'delay'"),
        ({"delay": 5, "max_pagez": 1}, "unknown config keys 'delay', 'max_pagez'"),
        ({"user_agent": "Bót/1.0"}, "only printable ASCII is allowed in a header"),
        ({"user_agent": "Bot\r\nX-Evil: 1"}, "only printable ASCII is allowed in a header"),
        ({"delay_ms": -1}, "config key 'delay_ms': expected a value >= 0, got -1"),
        ({"concurrency": 100_000_000}, "'concurrency': expected a value <= 10000, got 100000000"),
        ({"delay_ms": "5"}, "config key 'delay_ms': expected an integer, got '5'"),
        ({"delay_ms": True}, "config key 'delay_ms': expected an integer, got True"),
        ({"scope": "web"}, "config key 'scope': expected one of 'host', 'domain', 'any'"),
        ({"strip_params": "sid"}, "config key 'strip_params': expected a list of strings"),
        ({"robots_token": "my bot"}, "only letters, '_' and '-' are allowed"),
        ({"robots_max_bytes": 1000}, "expected a value >= 512000"),
        ({"backoff_base_ms": 5000, "backoff_max_ms": 10}, "must be >= backoff_base_ms"),
    ],
)
def test_bad_values_are_one_line_errors(values: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_config(values)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_user_agent_gives_the_robots_token() -> None:
    c = build_config({"user_agent": "NiceBot/2.1 (+https://nice.example/bot)"})
    assert c.robots_token == "NiceBot"
    c = build_config({"user_agent": "NiceBot/2.1", "robots_token": "other"})
    assert c.robots_token == "other"


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("delay_ms = = 3")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_config(broken)


def test_round_trip_through_asdict() -> None:
    c = build_config({"strip_params": ["a", "b"], "max_pages": 9})
    again = build_config(asdict(c))
    assert again == c
    assert again.strip_params == ("a", "b")
    assert c.replace(max_pages=3).max_pages == 3


def test_a_key_set_at_the_top_and_under_crawl_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("delay_ms = 5\n[crawl]\ndelay_ms = 6\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"config key 'delay_ms' is set twice in {str(path)!r}: at the top and under [crawl]"
    )
