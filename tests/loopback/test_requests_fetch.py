"""Requests as users need them (issue #14 item 5), at the fetcher against real loopback
servers: the config's headers, Basic credentials per origin and from netrc, an HTTP
proxy (the config's, the environment's with ``trust_env``, ``NO_PROXY``), brotli."""

from __future__ import annotations

import base64
import http.server
import ssl
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import brotli
import pytest
from forwardproxy import ForwardProxy
from httpserver import HTTPTestServer, Response
from requestkit import UA, make_config

from crawldeck.core.config import CrawlConfig
from crawldeck.core.errors import ConnectFailed, PrivateAddress, ProtocolViolation
from crawldeck.core.net.dns import DnsCache, DnsSettings
from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.net.transport import PinningResolver
from crawldeck.core.policy.address_policy import AddressPolicy, AddressPolicySettings


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def site() -> Iterator[HTTPTestServer]:
    with HTTPTestServer() as server:
        server.set("/", Response(200, {"Content-Type": "text/html"}, b"<p>a</p>"))
        yield server


@pytest.fixture
def other() -> Iterator[HTTPTestServer]:
    """A server on another host, 127.0.0.2."""
    with HTTPTestServer("127.0.0.2") as server:
        server.set("/", Response(200, {"Content-Type": "text/html"}, b"<p>b</p>"))
        yield server


@pytest.fixture
def proxy() -> Iterator[ForwardProxy]:
    with ForwardProxy() as forward:
        yield forward


async def fetch(config: CrawlConfig, url: str, **kwargs: object) -> bytes:
    async with AiohttpFetcher(config, **kwargs) as fetcher:  # type: ignore[arg-type]
        return (await fetcher.fetch(url)).body


# -- headers


async def test_the_configs_headers_reach_the_server(site: HTTPTestServer) -> None:
    config = make_config(header={"Accept-Language": "en, de;q=0.5", "From": "me@example.org"})
    async with AiohttpFetcher(config) as fetcher:
        result = await fetcher.fetch(site.url("/"))
    [request] = site.requests
    assert request.headers["accept-language"] == "en, de;q=0.5"
    assert request.headers["from"] == "me@example.org"
    assert request.headers["user-agent"] == UA
    assert request.headers["accept-encoding"] == "gzip, deflate, br"
    sent = dict(result.request_headers)
    assert sent["Accept-Language"] == "en, de;q=0.5"
    assert sent["From"] == "me@example.org"


async def test_a_configured_accept_replaces_the_default(site: HTTPTestServer) -> None:
    await fetch(make_config(header={"Accept": "text/html"}), site.url("/"))
    [request] = site.requests
    assert request.headers["accept"] == "text/html"


# -- credentials


async def test_auth_goes_to_its_origin_only(
    site: HTTPTestServer, other: HTTPTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SITE_PW", "s3cret é")
    config = make_config(auth={site.origin: {"user": "crawler", "password_env": "SITE_PW"}})
    with HTTPTestServer() as same_host_other_port:
        same_host_other_port.set("/", Response(204))
        async with AiohttpFetcher(config) as fetcher:
            ours = await fetcher.fetch(site.url("/"))
            await fetcher.fetch(other.url("/"))
            await fetcher.fetch(same_host_other_port.url("/"))
            await fetcher.fetch(site.url("/").replace("http://", "http://") + "?again")
        assert "authorization" not in same_host_other_port.requests[0].headers
    assert [r.headers["authorization"] for r in site.requests] == [basic("crawler", "s3cret é")] * 2
    assert "authorization" not in other.requests[0].headers
    # what is recorded (and so written to WARC) holds no credentials
    assert all(name.lower() != "authorization" for name, _ in ours.request_headers)


async def test_netrc_credentials_go_to_their_host_name_only(
    site: HTTPTestServer,
    other: HTTPTestServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text(
        "machine 127.0.0.1 login alice password wonder\ndefault login any password leak\n"
    )
    monkeypatch.setenv("NETRC", str(netrc))
    async with AiohttpFetcher(make_config(netrc=True)) as fetcher:
        await fetcher.fetch(site.url("/"))
        await fetcher.fetch(other.url("/"))
    assert site.requests[0].headers["authorization"] == basic("alice", "wonder")
    assert "authorization" not in other.requests[0].headers  # nor the default entry's
    # netrc off: the same file is not read
    await fetch(make_config(), site.url("/"))
    assert "authorization" not in site.requests[1].headers


async def test_auth_wins_over_netrc_for_its_origin(
    site: HTTPTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login alice password wonder\n")
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("PW", "pw")
    config = make_config(netrc=True, auth={site.origin: {"user": "bob", "password_env": "PW"}})
    await fetch(config, site.url("/"))
    assert site.requests[0].headers["authorization"] == basic("bob", "pw")


# -- brotli


async def test_a_brotli_body_is_decoded(site: HTTPTestServer) -> None:
    page = b"<html><body>" + b"<a href='/x'>x</a>" * 2000 + b"</body></html>"
    wire = brotli.compress(page)
    site.set("/br", Response(200, {"Content-Type": "text/html", "Content-Encoding": "br"}, wire))
    async with AiohttpFetcher(make_config()) as fetcher:
        result = await fetcher.fetch(site.url("/br"))
    assert result.body == page
    assert result.wire_body == wire  # the WARC keeps the body as transferred
    assert result.truncated is False
    assert result.content_type == "text/html"


async def test_a_brotli_bomb_is_cut_in_bounded_memory(site: HTTPTestServer) -> None:
    bomb = brotli.compress(b"\0" * (128 << 20), quality=5)  # 128 MiB of zeros
    assert len(bomb) < 1_000_000
    site.set("/bomb", Response(200, {"Content-Encoding": "br"}, bomb))
    async with AiohttpFetcher(make_config()) as fetcher:
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            result = await fetcher.fetch(site.url("/bomb"), max_bytes=1_000_000)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert result.truncated is True
    assert result.body == b"\0" * 1_000_000
    assert peak < 16 << 20, f"peak {peak / 2**20:.0f} MiB"


async def test_bad_or_short_brotli_is_a_protocol_violation(site: HTTPTestServer) -> None:
    whole = brotli.compress(b"hello brotli " * 1000)
    site.set("/junk", Response(200, {"Content-Encoding": "br"}, b"this is not brotli at all"))
    site.set("/short", Response(200, {"Content-Encoding": "br"}, whole[: len(whole) // 2]))
    async with AiohttpFetcher(make_config()) as fetcher:
        with pytest.raises(ProtocolViolation) as junk:
            await fetcher.fetch(site.url("/junk"))
        with pytest.raises(ProtocolViolation) as short:
            await fetcher.fetch(site.url("/short"))
    assert str(junk.value).startswith("invalid HTTP response: ")
    assert junk.value.retryable is False
    assert str(short.value) == (
        f"invalid HTTP response: compressed body cut short: {site.url('/short')}"
    )


# -- proxy


async def test_the_configs_proxy_carries_every_request(
    other: HTTPTestServer, proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PW", "pw")
    config = make_config(
        proxy=proxy.url,
        header={"Accept-Language": "en"},
        auth={other.origin: {"user": "u", "password_env": "PW"}},
        allow_networks=["127.0.0.2/32"],
    )
    dns = DnsCache(DnsSettings.from_config(config))
    resolver = PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(config)))
    try:
        async with AiohttpFetcher(config, resolver=resolver) as fetcher:
            result = await fetcher.fetch(other.url("/?q=1"))
    finally:
        await dns.aclose()
    assert result.body == b"<p>b</p>"
    [relayed] = proxy.requests
    assert relayed.method == "GET"
    assert relayed.target == other.url("/?q=1")  # absolute form: the proxy connects
    assert relayed.headers["accept-language"] == "en"
    assert relayed.headers["authorization"] == basic("u", "pw")
    [served] = other.requests
    assert served.path == "/?q=1"
    assert served.headers["user-agent"] == UA
    # the socket went to the proxy: that is not the host's address
    assert dns.pinned("127.0.0.2") == "127.0.0.2"


async def test_through_a_proxy_the_address_policy_still_holds(proxy: ForwardProxy) -> None:
    # 127.0.0.3 is neither trusted nor allowed: refused before anything is sent
    config = make_config(proxy=proxy.url)
    dns = DnsCache(DnsSettings.from_config(config))
    resolver = PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(config)))
    try:
        async with AiohttpFetcher(config, resolver=resolver) as fetcher:
            with pytest.raises(PrivateAddress):
                await fetcher.fetch("http://127.0.0.3:9/")
    finally:
        await dns.aclose()
    assert proxy.requests == []


async def test_a_named_proxy_is_resolved_by_the_system_not_the_policy(
    other: HTTPTestServer, proxy: ForwardProxy
) -> None:
    # the policy allows 127.0.0.2 only; the proxy's name, localhost, is 127.0.0.1
    named = proxy.url.replace("127.0.0.1", "localhost")
    config = make_config(proxy=named, allow_networks=["127.0.0.2/32"])
    dns = DnsCache(DnsSettings.from_config(config))
    resolver = PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(config)))
    try:
        assert await fetch(config, other.url("/"), resolver=resolver) == b"<p>b</p>"
    finally:
        await dns.aclose()
    assert [r.target for r in proxy.requests] == [other.url("/")]
    assert resolver.statistics().connections == 0  # the crawl's resolver was not asked


async def test_a_dead_proxy_is_a_connect_failure(site: HTTPTestServer) -> None:
    with ForwardProxy() as gone:
        url = gone.url
    with pytest.raises(ConnectFailed) as info:
        await fetch(make_config(proxy=url), site.url("/"))
    assert info.value.retryable is True
    assert site.requests == []


async def test_https_goes_through_the_proxy_in_a_connect_tunnel(
    proxy: ForwardProxy, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str | None] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            seen.append(self.headers["Authorization"])
            self.send_response(200)
            self.send_header("Content-Length", "6")
            self.end_headers()
            self.wfile.write(b"secret")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    port = httpd.server_address[1]
    monkeypatch.setenv("PW", "pw")
    origin = f"https://127.0.0.1:{port}"
    config = make_config(proxy=proxy.url, auth={origin: {"user": "u", "password_env": "PW"}})
    try:
        client = ssl.create_default_context(cafile=str(certificate[0]))
        body = await fetch(config, f"{origin}/s", ssl_context=client)
    finally:
        httpd.shutdown()
        thread.join()
        httpd.server_close()
    assert body == b"secret"
    [tunnel] = proxy.requests
    assert tunnel.method == "CONNECT"
    assert tunnel.target == f"127.0.0.1:{port}"
    assert "authorization" not in tunnel.headers  # inside the tunnel only
    assert seen == [basic("u", "pw")]


async def test_an_https_proxys_credentials_go_on_the_connect_only(
    proxy: ForwardProxy, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    monkeypatch.setenv("HTTPS_PROXY", proxy.url.replace("://", "://px:pw@"))
    try:
        client = ssl.create_default_context(cafile=str(certificate[0]))
        url = f"https://127.0.0.1:{httpd.server_address[1]}/"
        body = await fetch(make_config(trust_env=True), url, ssl_context=client)
    finally:
        httpd.shutdown()
        thread.join()
        httpd.server_close()
    assert body == b"ok"
    [tunnel] = proxy.requests
    assert tunnel.method == "CONNECT"
    assert tunnel.headers["proxy-authorization"] == basic("px", "pw")
    assert _Quiet.seen == [None]  # the server inside the tunnel never sees it


class _Quiet(http.server.BaseHTTPRequestHandler):
    """Answers ``ok``; records each request's Proxy-Authorization in ``seen``."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        _Quiet.seen.append(self.headers["Proxy-Authorization"])
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def test_the_environment_proxy_only_with_trust_env(
    site: HTTPTestServer, proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    await fetch(make_config(), site.url("/"))
    assert proxy.requests == []  # trust_env is off by default
    assert len(site.requests) == 1
    await fetch(make_config(trust_env=True), site.url("/"))
    assert [r.target for r in proxy.requests] == [site.url("/")]


async def test_no_proxy_names_the_hosts_reached_directly(
    site: HTTPTestServer,
    other: HTTPTestServer,
    proxy: ForwardProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("http_proxy", proxy.url)
    monkeypatch.setenv("NO_PROXY", "localhost, 127.0.0.2")
    async with AiohttpFetcher(make_config(trust_env=True)) as fetcher:
        await fetcher.fetch(site.url("/"))
        await fetcher.fetch(other.url("/"))
    assert [r.target for r in proxy.requests] == [site.url("/")]
    assert len(other.requests) == 1  # straight from us
    # NO_PROXY applies to the config's proxy too, with trust_env
    async with AiohttpFetcher(make_config(trust_env=True, proxy=proxy.url)) as fetcher:
        await fetcher.fetch(other.url("/"))
    assert len(proxy.requests) == 1
    assert len(other.requests) == 2


async def test_an_environment_proxy_may_carry_credentials(
    site: HTTPTestServer, proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("://", "://pxuser:px%40pw@"))
    await fetch(make_config(trust_env=True), site.url("/"))
    [relayed] = proxy.requests
    assert relayed.headers["proxy-authorization"] == basic("pxuser", "px@pw")
    assert "proxy-authorization" not in site.requests[0].headers  # the proxy's alone
