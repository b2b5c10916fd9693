"""The request keys (issue #14 item 5) as pure logic: ``header``, ``proxy``, ``auth``,
``trust_env``, ``netrc`` checked and typed as the TOML gives them, saved and read back
as JSON; ``NO_PROXY`` matching; credentials and proxies chosen per URL."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.config import CrawlConfig, asdict, build_config, load_config
from crawldeck.core.errors import ConfigError
from crawldeck.core.net.request_options import Proxy, RequestOptions, bypasses, origin_key
from crawldeck.core.policy.request_checks import REFUSED_HEADERS, check_header


def test_the_toml_shapes_load_and_round_trip_through_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        'header = {"Accept-Language" = "en", From = "me@example.org"}\n'
        'proxy = "http://proxy.internal:3128"\n'
        'render = "never"\n'
        "trust_env = true\n"
        "netrc = false\n"
        '[auth."https://Docs.Example.org:443/"]\n'
        'user = "me"\n'
        'password_env = "DOCS_PW"\n'
    )
    config = load_config(path)
    assert config.header == (("Accept-Language", "en"), ("From", "me@example.org"))
    assert config.proxy == "http://proxy.internal:3128"
    assert config.trust_env is True
    assert config.auth == (("https://Docs.Example.org:443/", "me", "DOCS_PW"),)
    saved = json.loads(json.dumps(asdict(config)))  # as runs.config and Redis hold it
    assert saved["header"] == {"Accept-Language": "en", "From": "me@example.org"}
    assert saved["auth"] == {
        "https://Docs.Example.org:443/": {"user": "me", "password_env": "DOCS_PW"}
    }
    again = build_config(saved)
    assert again == config
    assert hash(again) == hash(config)
    # the password is read from the environment, and the origin matched normalized
    monkeypatch.setenv("DOCS_PW", "pw")
    options = RequestOptions.from_config(config)
    assert options.credentials_for("https", "docs.example.org", 443) == ("me", "pw")
    assert options.credentials_for("http", "docs.example.org", 80) is None
    assert options.credentials_for("https", "docs.example.org", 8443) is None
    assert options.credentials_for("https", "www.docs.example.org", 443) is None


def test_the_defaults_send_nothing_more() -> None:
    config = CrawlConfig()
    assert (config.header, config.proxy, config.trust_env, config.netrc, config.auth) == (
        (),
        None,
        False,
        False,
        (),
    )
    assert RequestOptions.from_config(config) == RequestOptions()


@pytest.mark.parametrize("name", sorted(REFUSED_HEADERS))
def test_each_refused_header_is_one_line_naming_it(name: str) -> None:
    spelt = "-".join(part.capitalize() for part in name.split("-"))
    with pytest.raises(ConfigError) as info:
        build_config({"header": {spelt: "x"}})
    message = str(info.value)
    assert message == f"config key 'header': {spelt!r} is refused: {REFUSED_HEADERS[name]}"
    assert "\n" not in message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"X-Count": 5}, "config key 'header': the value of 'X-Count' must be a string, got 5"),
        ({"X-A": "a\r\nX-Evil: 1"}, "config key 'header': the value of 'X-A' may hold only"),
        ({"X-A": "caf\u00e9"}, "config key 'header': the value of 'X-A' may hold only"),
        ({"Bad Name": "x"}, "config key 'header': 'Bad Name' is not a header name"),
        ({"": "x"}, "config key 'header': '' is not a header name"),
        ({"X-A": "1", "x-a": "2"}, "config key 'header': 'x-a' is given twice"),
        ("Accept-Language: en", "config key 'header': expected a table of name = value"),
        (["Accept-Language"], "config key 'header': expected a table of name = value"),
    ],
)
def test_bad_headers_are_one_line(value: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_config({"header": value})
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ftp://proxy:21", "expected an http:// proxy URL such as 'http://127.0.0.1:3128'"),
        ("https://proxy:443", "expected an http:// proxy URL such as"),
        ("socks5://127.0.0.1:1080", "expected an http:// proxy URL such as"),
        ("http://", "expected an http:// proxy URL such as"),
        ("http://proxy:99999", "expected an http:// proxy URL such as"),
        ("http://proxy:3128/path", "expected an http:// proxy URL such as"),
        ("proxy:3128", "expected an http:// proxy URL such as"),
        ("http://user:pw@proxy:3128", "no credentials in the URL (the config is saved"),
        (3128, "expected a non-empty string, got 3128"),
    ],
)
def test_bad_proxies_are_one_line(value: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_config({"proxy": value, "render": "never"})
    assert str(info.value).startswith("config key 'proxy': ")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"docs.example.org": {"user": "u", "password_env": "P"}}, "is not an origin such as"),
        ({"https://a.org/docs": {"user": "u", "password_env": "P"}}, "is not an origin such as"),
        ({"https://u@a.org": {"user": "u", "password_env": "P"}}, "is not an origin such as"),
        ({"https://a.org": {"user": "u", "password": "hunter2"}}, "no password in the config"),
        ({"https://a.org": {"user": "u"}}, "no password_env (expected user and password_env)"),
        ({"https://a.org": {"user": "u", "password_env": "P", "realm": "x"}}, "unknown field"),
        ({"https://a.org": {"user": "a:b", "password_env": "P"}}, "without ':' (RFC 7617"),
        ({"https://a.org": {"user": "", "password_env": "P"}}, "user must be a printable"),
        ({"https://a.org": {"user": "u", "password_env": "1X"}}, "password_env must name"),
        ({"https://a.org": "u:p"}, "expected a table with user and password_env"),
        ("https://a.org", "expected tables such as [auth."),
    ],
)
def test_bad_auth_entries_are_one_line(value: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_config({"auth": value})
    assert str(info.value).startswith("config key 'auth': ")
    assert message in str(info.value)
    assert "hunter2" not in str(info.value)
    assert "\n" not in str(info.value)


def test_the_bool_keys_are_typed() -> None:
    for key in ("trust_env", "netrc"):
        with pytest.raises(ConfigError) as info:
            build_config({key: "yes"})
        assert str(info.value) == f"config key {key!r}: expected true or false, got 'yes'"


@pytest.mark.parametrize(
    ("no_proxy", "host", "port", "expected"),
    [
        ("*", "anything.example", 80, True),
        ("example.org", "example.org", 80, True),
        ("example.org", "docs.example.org", 443, True),
        (".example.org", "docs.example.org", 443, True),
        ("*.example.org", "docs.example.org", 443, True),
        ("example.org", "badexample.org", 80, False),
        ("example.org:8080", "example.org", 8080, True),
        ("example.org:8080", "example.org", 80, False),
        ("127.0.0.2", "127.0.0.2", 8080, True),
        ("127.0.0.2", "127.0.0.3", 8080, False),
        ("127.0.0.0/8", "127.9.9.9", 80, True),
        ("10.0.0.0/8", "127.0.0.1", 80, False),
        ("::1", "::1", 80, True),
        ("[::1]:8080", "::1", 8080, True),
        ("[::1]:8080", "::1", 80, False),
        ("a.org, b.org c.org", "c.org", 80, True),
        ("", "a.org", 80, False),
        ("a.org,,", "b.org", 80, False),
    ],
)
def test_no_proxy_is_read_as_curl_reads_it(
    no_proxy: str, host: str, port: int, expected: bool
) -> None:
    assert bypasses(no_proxy, host, port) is expected


@given(st.from_regex(r"[a-z0-9.,:*/\[\] -]{0,40}", fullmatch=True), st.integers(1, 65535))
def test_no_proxy_never_raises(no_proxy: str, port: int) -> None:
    for host in ("a.example.org", "127.0.0.1", "::1"):
        assert bypasses(no_proxy, host, port) in (True, False)


def test_the_proxy_is_chosen_per_scheme_and_no_proxy() -> None:
    proxy = Proxy("http://127.0.0.1:3128", "127.0.0.1")
    options = RequestOptions(proxies={"http": proxy}, no_proxy="internal.example")
    assert options.proxy_for("http", "a.example", 80) == proxy
    assert options.proxy_for("https", "a.example", 443) is None  # no HTTPS_PROXY
    assert options.proxy_for("http", "wiki.internal.example", 80) is None
    assert options.proxy_hosts == frozenset({"127.0.0.1"})


def test_the_environment_is_read_only_with_trust_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "proxy.internal:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://u:p%3Aq@proxy.internal:3129")
    monkeypatch.setenv("NO_PROXY", "localhost")
    assert RequestOptions.from_config(CrawlConfig()).proxies is None
    options = RequestOptions.from_config(CrawlConfig(trust_env=True))
    assert options.proxies == {
        "http": Proxy("http://proxy.internal:3128", "proxy.internal"),
        "https": Proxy("http://proxy.internal:3129", "proxy.internal", "u", "p:q"),
    }
    assert options.no_proxy == "localhost"
    # the config's proxy wins over the environment's, for both schemes
    both = RequestOptions.from_config(
        CrawlConfig(trust_env=True, proxy="http://10.0.0.1:8080", render="never")
    )
    assert both.proxies is not None
    assert {p.url for p in both.proxies.values()} == {"http://10.0.0.1:8080"}
    assert both.no_proxy == "localhost"


def test_netrc_entries_by_host_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text(
        "machine Docs.Example.org login alice password wonder\n"
        "machine nologin.example password x\n"
        "default login anyone password everywhere\n"
    )
    monkeypatch.setenv("NETRC", str(netrc))
    options = RequestOptions.from_config(CrawlConfig(netrc=True))
    assert options.netrc == {"docs.example.org": ("alice", "wonder")}
    assert options.credentials_for("http", "docs.example.org", 8080) == ("alice", "wonder")
    assert options.credentials_for("https", "other.example", 443) is None


def test_origin_keys_drop_default_ports() -> None:
    assert origin_key("HTTPS", "Docs.Example.org.", 443) == "https://docs.example.org"
    assert origin_key("http", "a.org", 8080) == "http://a.org:8080"
    assert origin_key("http", "::1", 80) == "http://[::1]"
    assert origin_key("https", "a.org", None) == "https://a.org"


def test_check_header_keeps_the_order_and_trims_values() -> None:
    assert check_header({"B": " 2 ", "A": "1"}) == (("B", "2"), ("A", "1"))
    assert check_header([["B", "2"], ["A", "1"]]) == (("B", "2"), ("A", "1"))


def test_no_key_turns_robots_txt_off() -> None:
    # the switches other crawlers have (Scrapy's ROBOTSTXT_OBEY, wget's robots=off)
    for key in ("robotstxt_obey", "robots", "obey_robots", "ignore_robots"):
        with pytest.raises(ConfigError) as info:
            build_config({key: False})
        assert str(info.value) == (
            f"unknown config key {key!r} (robots.txt is always obeyed: no key turns it off)"
        )
    robots_keys = {f.name: f.type for f in fields(CrawlConfig) if "robots" in f.name}
    assert robots_keys  # and none of them is a switch
    assert all("bool" not in str(kind) for kind in robots_keys.values()), robots_keys


def test_a_proxy_is_refused_while_pages_may_be_rendered() -> None:
    # Chromium's sub-requests are sent by the browser, which does not use the proxy
    message = (
        "config key 'proxy': the browser that renders pages would not go through it "
        '(its sub-requests connect directly): set render = "never" with a proxy'
    )
    for values in (
        {"proxy": "http://127.0.0.1:3128"},
        {"proxy": "http://127.0.0.1:3128", "render": "always"},
        {
            "proxy": "http://127.0.0.1:3128",
            "render": "never",
            "hosts": {"a.org": {"render": "auto"}},
        },
    ):
        with pytest.raises(ConfigError) as info:
            build_config(values)
        assert str(info.value) == message
    assert build_config({"proxy": "http://127.0.0.1:3128", "render": "never"}).proxy
