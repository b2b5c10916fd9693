"""The typed config: defaults < file < flags, unknown keys and bad values rejected."""

from __future__ import annotations

import math
import re
from dataclasses import fields
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.config import RANGES, CrawlConfig, asdict, build_config, load_config
from crawldeck.core.errors import ConfigError


def test_defaults_are_the_designs() -> None:
    c = CrawlConfig()
    assert (c.delay_ms, c.per_host_concurrency, c.bucket_capacity) == (1000, 1, 5)
    assert (c.backoff_base_ms, c.backoff_max_ms, c.demote_after_s) == (1000, 60_000, 3600)
    assert (c.robots_ttl_max_s, c.robots_max_bytes, c.robots_max_redirects) == (86_400, 512_000, 5)
    assert (c.max_depth, c.max_per_host, c.scope, c.max_redirects) == (10, 500_000, "domain", 20)
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
        (
            {"delay": 5, "max_pagez": 1},
            "unknown config keys 'delay' (did you mean 'delay_ms'?), "
            "'max_pagez' (did you mean 'max_pages'?)",
        ),
        ({"dealy_ms": 5}, "unknown config key 'dealy_ms' (did you mean 'delay_ms'?)"),
        ({"zzzz": 5}, "unknown config key 'zzzz'"),
        ({"user_agent": "Bót/1.0"}, "only printable ASCII is allowed in a header"),
        ({"user_agent": "Bot\r\nX-Evil: 1"}, "only printable ASCII is allowed in a header"),
        ({"delay_ms": -1}, "config key 'delay_ms': expected a value >= 0, got -1"),
        ({"concurrency": 100_000_000}, "'concurrency': expected a value <= 10000, got 100000000"),
        (
            {"delay_ms": "5"},
            "config key 'delay_ms': expected an integer, got the string '5' "
            "(without the quotes it is a number)",
        ),
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
    if "zzzz" in values:  # nothing near: no guess
        assert "did you mean" not in str(info.value)


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


# ------------------------------------------------------ ranges on the type

#: Fields whose lowest value breaks a rule with another field's default, and the
#: partner value that lets it through (``backoff_max_ms >= backoff_base_ms``,
#: ``dns_max_ttl_s >= dns_min_ttl_s``).
_PARTNERS: dict[str, dict[str, int]] = {
    "backoff_max_ms": {"backoff_base_ms": 1},
    "dns_max_ttl_s": {"dns_min_ttl_s": 0},
}


#: ``CrawlConfig``'s field types, resolved once (``get_type_hints`` evaluates every
#: annotation string again at each call: some 10 ms, at each of 400 examples).
_HINTS = get_type_hints(CrawlConfig)


def _is_int_field(name: str) -> bool:
    """Whether numeric field ``name`` holds integers (``int``, ``int | None``)."""
    hint = _HINTS[name]
    return float not in {hint, *get_args(hint)}


def _out_of_range(name: str, draw: st.DrawFn) -> int | float:
    """A value of ``name``'s type below its low bound or above its high one."""
    bounds = RANGES[name]
    above = bounds.high is not None and draw(st.booleans())
    if _is_int_field(name):
        step = draw(st.integers(min_value=1, max_value=10**12))
        if above:
            assert bounds.high is not None
            return int(bounds.high) + step
        return math.ceil(bounds.low) - step
    if above:
        assert bounds.high is not None
        return draw(st.floats(min_value=bounds.high, exclude_min=True, allow_infinity=False))
    return draw(st.floats(max_value=bounds.low, exclude_max=True, allow_infinity=False))


@st.composite
def _bad_value(draw: st.DrawFn) -> tuple[str, int | float]:
    name = draw(st.sampled_from(sorted(RANGES)))
    return name, _out_of_range(name, draw)


@given(_bad_value())
def test_a_value_out_of_its_range_is_refused_by_the_type(bad: tuple[str, int | float]) -> None:
    """For every numeric field, below its low bound or above its high one:
    ``CrawlConfig(...)`` itself raises, with the very line ``build_config`` gives."""
    name, value = bad
    bounds = RANGES[name]
    fields: dict[str, Any] = {name: value}  # a field chosen at run time
    with pytest.raises(ConfigError) as direct:
        CrawlConfig(**fields)
    with pytest.raises(ConfigError) as built:
        build_config({name: value})
    assert str(direct.value) == str(built.value)
    side, bound = (">=", bounds.low) if value < bounds.low else ("<=", bounds.high)
    assert bound is not None
    assert (
        str(direct.value)
        == f"config key {name!r}: expected a value {side} {bound:g}, got {value!r}"
    )


@pytest.mark.parametrize("name", sorted(RANGES))
def test_the_bounds_themselves_are_accepted(name: str) -> None:
    bounds = RANGES[name]
    for value in (bounds.low, bounds.high):
        if value is None:
            continue
        typed = int(value) if _is_int_field(name) else value
        fields: dict[str, Any] = {name: typed, **_PARTNERS.get(name, {})}
        config = CrawlConfig(**fields)
        assert getattr(config, name) == value


def test_every_numeric_field_has_a_range_and_no_other_field_has_one() -> None:
    numeric = {
        name
        for name, hint in get_type_hints(CrawlConfig).items()
        if hint in (int, float) or set(get_args(hint)) & {int, float}
    }
    assert set(RANGES) == numeric
    assert len(RANGES) == 61


def test_the_type_checks_what_build_config_checks() -> None:
    with pytest.raises(ConfigError) as caught:
        CrawlConfig(delay_ms=-5)
    assert str(caught.value) == "config key 'delay_ms': expected a value >= 0, got -5"
    rules: list[tuple[dict[str, Any], str]] = [
        (
            {"delay_ms": "5"},
            "config key 'delay_ms': expected an integer, got the string '5' "
            "(without the quotes it is a number)",
        ),
        ({"max_pages": True}, "config key 'max_pages': expected an integer, got True"),
        ({"scope": "web"}, "config key 'scope': expected one of 'host', 'domain', 'any'"),
        ({"backoff_base_ms": 5000, "backoff_max_ms": 10}, "must be >= backoff_base_ms"),
        ({"dns_min_ttl_s": 60, "dns_max_ttl_s": 30}, "must be >= dns_min_ttl_s"),
        ({"user_agent": "Bot\r\nX-Evil: 1"}, "only printable ASCII is allowed in a header"),
        ({"robots_token": "my bot"}, "only letters, '_' and '-' are allowed"),
        ({"render_block_resources": ("image", "gif")}, "unknown resource type 'gif'"),
        ({"allow_networks": ("10.0.0.0/33",)}, "'10.0.0.0/33' is not an IP network"),
        ({"dns_nameservers": ("dns.example",)}, "'dns.example' is not 'IP', 'IP:port'"),
    ]
    for values, message in rules:
        with pytest.raises(ConfigError) as direct:
            CrawlConfig(**values)
        with pytest.raises(ConfigError) as built:
            build_config(values)
        assert message in str(direct.value)
        assert str(direct.value) == str(built.value)


def test_the_type_coerces_what_a_toml_file_gives() -> None:
    config = CrawlConfig(strip_params=["a", "b"], adaptive_delay_factor=3)  # type: ignore[arg-type]
    assert config.strip_params == ("a", "b")
    assert isinstance(config.adaptive_delay_factor, float)
    assert config == build_config({"strip_params": ["a", "b"], "adaptive_delay_factor": 3})
    assert hash(config) == hash(
        build_config({"strip_params": ["a", "b"], "adaptive_delay_factor": 3})
    )


def _reference_ranges() -> dict[str, str]:
    """Each key's cell in the range column of the config table of docs/config.md."""
    text = (Path(__file__).parents[2] / "docs" / "config.md").read_text(encoding="utf-8")
    header = "| key | default | range | meaning |\n| --- | --- | --- | --- |\n"
    assert text.count(header) == 1
    table = text[text.index(header) + len(header) :].split("\n\n", 1)[0]
    cells: dict[str, str] = {}
    for row in table.splitlines():
        key_cell, _default, range_cell, _meaning = (
            c.strip() for c in row.strip("|").split(" | ", 3)
        )
        keys = re.findall(r"`(\w+)`", key_cell)
        ranges = range_cell.split(", ")
        assert len(ranges) == len(keys), row
        cells.update(zip(keys, ranges, strict=True))
    return cells


def test_the_reference_table_gives_each_range() -> None:
    """docs/config.md's table names every key once, and its range column says what
    ``RANGES`` says (``>= low``, ``low to high``, ``—`` for a field without one)."""
    cells = _reference_ranges()
    assert set(cells) == {f.name for f in fields(CrawlConfig)}
    for name, cell in cells.items():
        bounds = RANGES.get(name)
        if bounds is None:
            assert cell == "—", name
        elif bounds.high is None:
            assert cell.startswith(">= ") and float(cell[3:]) == bounds.low, (name, cell)
        else:
            low, _, high = cell.partition(" to ")
            assert (float(low), float(high)) == (bounds.low, bounds.high), (name, cell)
    assert (cells["delay_ms"], cells["concurrency"], cells["robots_max_bytes"]) == (
        ">= 0",
        "1 to 10000",
        ">= 512000",
    )


def test_a_word_of_a_fixed_set_is_taken_in_any_case() -> None:
    """``render = "Never"`` was refused where ``--log-level info`` is taken (issue #25
    trial 18): the config's words are taken in any case, stored as the key's own."""
    config = build_config({"render": "Never", "scope": " HOST ", "dns_prefer": "IPv6"})
    assert (config.render, config.scope, config.dns_prefer) == ("never", "host", "ipv6")
    with pytest.raises(ConfigError, match="expected one of 'host', 'domain', 'any', got 'Web'"):
        build_config({"scope": "Web"})
