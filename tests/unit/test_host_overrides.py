"""Per-host overrides (issue #14 item 3): ``[hosts."NAME"]`` tables with ``delay_ms``,
``max_pages`` and ``render``.

Pure logic directly: the config's checks (a bad value names the host and the key),
the host key a table names, politeness with a fake clock (plain floats), the trap
guard's per-host cap, the render decision, the host detail's lines. Then one crawl
of the local web (``LocalWeb``) with an exclude, a per-host delay and a per-host cap,
whose effect is read in the server's access log (every gap between two requests to
the host at least the override) and in the crawl file.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from crawldeck.core.config import asdict, build_config, load_config
from crawldeck.core.config_checks import HostOverride
from crawldeck.core.crawl.snapshot import HostDetail, HostRow
from crawldeck.core.errors import ConfigError
from crawldeck.core.policy.politeness import Politeness, PolitenessSettings
from crawldeck.core.policy.shell import should_render
from crawldeck.core.policy.traps import BlockReason, ScopePolicy, TrapGuard, TrapSettings
from crawldeck.tui.host_detail import _detail_summary

TODAY = datetime.date(2026, 5, 15)
HTML = "text/html"
SHELL = b'<html><body><div id="root"></div><script src="/app.js"></script></body></html>'
ARTICLE = (
    b"<html><body><h1>Notes</h1><p>"
    + b"Plain text of an article. " * 40
    + b'</p><a href="/a">a</a>'
    b'<a href="/b">b</a></body></html>'
)


def politeness(hosts: dict[str, dict[str, Any]], **values: Any) -> Politeness:
    """The politeness of the config of ``values`` with ``hosts`` tables."""
    config = build_config({**values, "hosts": hosts})
    return Politeness(PolitenessSettings.from_config(config), hosts=config.hosts)


# ------------------------------------------------------------------- the config


def test_a_host_table_is_read_from_the_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "crawl.toml"
    path.write_text(
        'delay_ms = 500\n[hosts."docs.example.org"]\ndelay_ms = 5000\nmax_pages = 1000\n'
        'render = "always"\n[hosts."127.0.0.1:8080"]\nmax_pages = 3\n'
    )
    config = load_config(path)
    assert config.delay_ms == 500
    assert config.hosts == (
        HostOverride("docs.example.org", delay_ms=5000, max_pages=1000, render="always"),
        HostOverride("127.0.0.1:8080", max_pages=3),
    )
    assert config.override("docs.example.org") == config.hosts[0]
    assert config.override("docs.example.org:8443") is None
    assert config.override("example.org") is None


def test_a_bad_host_table_is_named_at_its_own_line(tmp_path: Path) -> None:
    """Not the first ``[hosts.`` table's line (issue #25 trial 7: "line 1" for the
    table on line 4)."""
    path = tmp_path / "crawl.toml"
    path.write_text('[hosts."a.org"]\ndelay_ms = 5\n\n[hosts."http://b.org/"]\ndelay_ms = 5\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"config file {str(path)!r} line 4: config key 'hosts': 'http://b.org/' is not a "
        "host name (host[:port])"
    )


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Docs.Example.ORG.", "docs.example.org"),
        ("a.test:80", "a.test"),
        ("a.test:443", "a.test"),
        ("a.test:8080", "a.test:8080"),
        ("[::1]:8080", "[::1]:8080"),
        ("bücher.example", "xn--bcher-kva.example"),
    ],
)
def test_a_table_names_a_host_key(name: str, key: str) -> None:
    config = build_config({"hosts": {name: {"delay_ms": 1}}})
    assert [entry.host for entry in config.hosts] == [key]


@pytest.mark.parametrize(
    ("hosts", "message"),
    [
        (
            {"a.org": {"delay_ms": -5}},
            "config key 'hosts.\"a.org\".delay_ms': expected a value >= 0, got -5",
        ),
        (
            {"a.org": {"max_pages": 0}},
            "config key 'hosts.\"a.org\".max_pages': expected a value >= 1, got 0",
        ),
        (
            {"a.org": {"max_pages": "9"}},
            "config key 'hosts.\"a.org\".max_pages': expected an integer, got the string '9' "
            "(without the quotes it is a number)",
        ),
        (
            {"a.org": {"render": "sometimes"}},
            "config key 'hosts.\"a.org\".render': expected one of 'auto', 'never', 'always', "
            "got 'sometimes'",
        ),
        (
            {"a.org": {"delay": 5}},
            "config key 'hosts.\"a.org\".delay': unknown "
            "(a host table holds delay_ms, max_pages, render)",
        ),
        (
            {"127": {"0": {"0": {"1": {"delay_ms": 5}}}}},  # [hosts.127.0.0.1], unquoted
            "config key 'hosts.\"127\".0': a host name with dots is quoted in TOML: "
            '[hosts."127.0.0.1"]',
        ),
        ({"a.org": 5}, "config key 'hosts.\"a.org\"': expected a table, got 5"),
        (
            {"A.org": {}, "a.org.": {}},
            "config key 'hosts.\"a.org.\"': host 'a.org' is named twice",
        ),
        ({"a.org/docs": {}}, "config key 'hosts': 'a.org/docs' is not a host name (host[:port])"),
        ({"a.org:99999": {}}, "config key 'hosts': 'a.org:99999' is not a host name: "),
        (["a.org"], "config key 'hosts': expected a table of host tables, got ['a.org']"),
    ],
)
def test_a_bad_host_table_is_one_line_naming_the_host_and_the_key(hosts: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_config({"hosts": hosts})
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_host_overrides_in_code_are_checked_as_a_file_is() -> None:
    with pytest.raises(ConfigError, match=r"'hosts\.\"a\.org\"\.delay_ms': expected a value >= 0"):
        build_config({"hosts": (HostOverride("a.org", delay_ms=-1),)})
    config = build_config({"hosts": (HostOverride("A.org", render="never"),)})
    assert config.hosts == (HostOverride("a.org", render="never"),)


def test_the_hosts_survive_the_json_a_run_and_a_cluster_crawl_save() -> None:
    config = build_config({"hosts": {"a.org": {"delay_ms": 5000}, "b.org:81": {"max_pages": 2}}})
    saved = asdict(config)
    assert saved["hosts"] == {"a.org": {"delay_ms": 5000}, "b.org:81": {"max_pages": 2}}
    assert build_config(json.loads(json.dumps(saved))) == config
    assert config.replace(delay_ms=7).hosts == config.hosts


def test_may_render_sees_a_host_that_renders() -> None:
    assert build_config({}).may_render()
    assert not build_config({"render": "never"}).may_render()
    assert build_config({"render": "never", "hosts": {"a.org": {"render": "auto"}}}).may_render()
    assert not build_config(
        {"render": "never", "hosts": {"a.org": {"render": "never", "delay_ms": 1}}}
    ).may_render()


# ------------------------------------------------------------------- politeness


def test_the_hosts_delay_takes_the_place_of_delay_ms() -> None:
    pol = politeness({"slow.test": {"delay_ms": 5000}}, delay_ms=100, adaptive_delay_factor=0)
    for host in ("slow.test", "fast.test"):
        pol.on_dispatch(host, 10.0)
        pol.on_response(host, 10.5, 200, 0.5, None)
    assert pol.earliest("slow.test", 10.5) == pytest.approx(15.5)
    assert pol.earliest("fast.test", 10.5) == pytest.approx(10.6)
    view = pol.view("slow.test", 10.5)
    assert (view.delay_ms, view.delay_source) == (5000.0, "override")
    assert pol.view("fast.test", 10.5).delay_source == "default"
    # a host never fetched yet shows its own delay, and creates no state
    fresh = politeness({"slow.test": {"delay_ms": 5000}}, delay_ms=100)
    assert fresh.delay_s("slow.test") == 5.0
    assert (fresh.view("slow.test", 0.0).delay_ms, fresh.hosts()) == (5000.0, 0)


def test_a_longer_crawl_delay_still_wins_over_the_hosts_delay() -> None:
    pol = politeness({"a.test": {"delay_ms": 2000}}, delay_ms=100, adaptive_delay_factor=0)
    pol.set_crawl_delay("a.test", 3.0)
    assert pol.delay_s("a.test") == 3.0
    assert pol.view("a.test", 0.0).delay_source == "crawl_delay"
    pol.set_crawl_delay("a.test", 1.0)  # shorter than the host's floor: the floor holds
    assert pol.delay_s("a.test") == 2.0
    assert pol.view("a.test", 0.0).delay_source == "override"


def test_a_hosts_delay_may_also_be_lower_than_delay_ms() -> None:
    pol = politeness({"mine.test": {"delay_ms": 0}}, delay_ms=1000, adaptive_delay_factor=0)
    pol.on_dispatch("mine.test", 0.0)
    pol.on_response("mine.test", 0.2, 200, 0.2, None)
    assert pol.earliest("mine.test", 0.2) == pytest.approx(0.2)


def test_the_learnt_delay_steps_down_by_a_tenth_of_the_hosts_delay() -> None:
    pol = politeness({"a.test": {"delay_ms": 2000}}, delay_ms=100, adaptive_delay_factor=0)
    pol.on_dispatch("a.test", 0.0)
    pol.on_response("a.test", 0.1, 429, 0.1, None)  # learnt: 2 x max(2 s, step) = 4 s
    assert pol.delay_s("a.test") == pytest.approx(4.0)
    pol.on_dispatch("a.test", 100.0)
    pol.on_response("a.test", 100.1, 200, 0.1, None)
    assert pol.delay_s("a.test") == pytest.approx(3.8)  # a step of 200 ms, not 10 ms


# ------------------------------------------------------------------ the page cap


def test_the_hosts_max_pages_caps_its_admitted_urls_with_host_cap() -> None:
    config = build_config(
        {"max_per_host": 10, "hosts": {"a.test": {"max_pages": 3}, "b.test": {"max_pages": 50}}}
    )
    guard = TrapGuard(
        TrapSettings.from_config(config), ScopePolicy("any"), TODAY, hosts=config.hosts
    )
    assert guard.admit("http://a.test/x", 1, 2) is None
    capped = guard.admit("http://a.test/x", 1, 3)
    assert capped is not None and capped.reason is BlockReason.HOST_CAP
    assert capped.detail == "host 'a.test' already has 3 URLs (hosts.\"a.test\".max_pages 3)"
    # in place of max_per_host: above it too
    assert guard.admit("http://b.test/x", 1, 20) is None
    other = guard.admit("http://c.test/x", 1, 10)
    assert other is not None and other.detail.endswith("(max_per_host 10)")
    # the host key, port included: another port is another host
    assert guard.admit("http://a.test:8080/x", 1, 5) is None


# ---------------------------------------------------------------------- render


def test_the_hosts_render_takes_the_place_of_render() -> None:
    config = build_config(
        {
            "render": "auto",
            "render_never_hosts": ["legacy.test"],
            "hosts": {
                "app.test": {"render": "always"},
                "plain.test": {"render": "never"},
                "legacy.test": {"render": "always"},
            },
        }
    )
    assert should_render(config, "app.test", ARTICLE, HTML, 2) == 'hosts."app.test".render = always'
    assert should_render(config, "other.test", ARTICLE, HTML, 2) is None
    assert should_render(config, "other.test", SHELL, HTML, 0) == "empty #root"
    assert should_render(config, "plain.test", SHELL, HTML, 0) is None
    assert should_render(config, "legacy.test", SHELL, HTML, 0) is None  # never_hosts wins
    never = build_config({"render": "never", "hosts": {"app.test": {"render": "auto"}}})
    assert should_render(never, "app.test", SHELL, HTML, 0) == "empty #root"
    assert should_render(never, "other.test", SHELL, HTML, 0) is None


# ------------------------------------------------------------- the host detail


def detail_lines(overrides: tuple[tuple[str, str], ...]) -> str:
    """The host detail's summary of a host with ``overrides``, as text."""
    row = HostRow(
        host="docs.example.org", queued=1, in_flight=0, fetched=2, errors=0, delay_ms=5000.0,
        delay_source="override", tokens=1.0, next_fetch_in_s=0.0, robots_status="ok",
    )  # fmt: skip
    detail = HostDetail(row, (), (), None, (), overrides)
    console = Console(width=120, record=True, color_system=None)
    console.print(_detail_summary(detail, False))
    return console.export_text()


def test_the_host_detail_shows_the_hosts_own_settings() -> None:
    text = detail_lines((("delay_ms", "5000"), ("max_pages", "1000"), ("render", "always")))
    assert "delay 5000 ms (override)" in text
    assert (
        "own settings  delay_ms 5000 · max_pages 1000 · render always "
        '(hosts."docs.example.org" in the config)'
    ) in text
    assert "own settings" not in detail_lines(())


def test_a_table_without_the_seeds_port_is_warned_about() -> None:
    """``[hosts."127.0.0.1"]`` applies to no seed of ``127.0.0.1:8761``: said before the
    crawl (issue #25 trial 7: silently unused)."""
    from crawldeck.cli.crawl import port_less_tables

    config = build_config({"hosts": {"127.0.0.1": {"delay_ms": 5}, "a.org": {"delay_ms": 5}}})
    seeds = ["http://127.0.0.1:8761/", "http://a.org/", "http://b.org:8080/"]
    assert port_less_tables(config, seeds) == [
        '[hosts."127.0.0.1"] applies to no seed: the seed\'s host is 127.0.0.1:8761 (a host '
        'has its port: [hosts."127.0.0.1:8761"])'
    ]
    assert port_less_tables(config, ["http://127.0.0.1/"]) == []
