"""The aiohttp internals ``core.net.fetcher`` relies on (``AiohttpInternals``, in
``core.net.aiohttp_internals``), checked against the installed aiohttp: each test fails with
a message naming the member.

* the installed aiohttp is within ``pyproject.toml``'s pin;
* every method in ``AiohttpInternals.OVERRIDDEN`` still exists on aiohttp's class with
  the parameters we override it with;
* no underscore attribute of aiohttp's is used in the fetcher's modules
  (``core/net/fetcher.py``, ``core/net/aiohttp_internals.py``, ``core/net/body_reader.py``,
  ``core/net/fetch_errors.py``) or ``core/net/transport.py`` outside ``AiohttpInternals``, every
  one used inside it is in its tables, and none of our own attributes on aiohttp's
  classes takes a name aiohttp uses (read from aiohttp's source);
* on real requests to loopback servers, aiohttp calls each override and each private
  attribute in ``AiohttpInternals.READ`` is there with the shape we read.
"""

from __future__ import annotations

import io
import socket
import threading
from collections.abc import Callable, Iterator

import pytest
from httpserver import HTTPTestServer, Request, Response
from rawserver import RawServer, reset

from crawldeck.core.config import CrawlConfig, build_config
from crawldeck.core.errors import ConnectionLost, FetchError, ProtocolViolation
from crawldeck.core.net import fetcher as fetcher_module
from crawldeck.core.net.aiohttp_internals import AiohttpInternals
from crawldeck.core.net.dns import DnsCache, DnsSettings
from crawldeck.core.net.fetcher import AiohttpFetcher
from crawldeck.core.net.transport import PinningResolver
from crawldeck.core.policy.address_policy import AddressPolicy, AddressPolicySettings


def config(**overrides: object) -> CrawlConfig:
    values: dict[str, object] = {
        "connect_timeout_ms": 1000,
        "read_timeout_ms": 1000,
        "total_timeout_ms": 3000,
    }
    values.update(overrides)
    return build_config(values)


# ----------------------------------------------------------------- on real requests


@pytest.fixture
def srv() -> Iterator[HTTPTestServer]:
    with HTTPTestServer() as server:
        server.set("/", Response(200, {"Content-Type": "text/plain"}, b"ok"))
        server.set("/empty", Response(204, {}, b""))
        yield server


async def test_the_connector_and_the_protocol_have_what_we_read(srv: HTTPTestServer) -> None:
    async with AiohttpFetcher(config()) as fetcher:
        result = await fetcher.fetch(srv.url("/"))
        connector = fetcher._connector
        assert result.body == b"ok" and connector is not None
        assert fetcher.statistics().connects == 1, (
            "TCPConnector._create_connection override not called by aiohttp"
        )
        assert "_conns" in vars(connector), "TCPConnector._conns is gone"
        pooled = {key: list(idle) for key, idle in connector._conns.items() if idle}
        assert len(pooled) == 1, f"TCPConnector._conns holds {connector._conns!r}"
        [(key, idle)] = pooled.items()
        [(protocol, since)] = idle
        assert isinstance(since, float), f"TCPConnector._conns values: {idle!r}"
        assert isinstance(protocol, AiohttpInternals.Protocol), (
            "TCPConnector._factory is ignored: the pool holds plain ResponseHandlers"
        )
        assert key in connector._idle_hosts, "TCPConnector._release override not called"
        assert protocol.responses == 1, "ClientResponse.start override not called"
        assert "_payload" in vars(protocol), "ResponseHandler._payload is gone"
        assert fetcher.statistics().idle == 1


async def test_the_payload_we_read_is_the_body_being_fed(srv: HTTPTestServer) -> None:
    held = threading.Event()

    def half_then_rest(request: Request, out: io.BufferedIOBase) -> None:
        out.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab")
        out.flush()
        held.wait(5)
        out.write(b"cd")
        out.flush()

    srv.set_raw("/half", half_then_rest)
    async with AiohttpFetcher(config()) as fetcher:
        await fetcher.fetch(srv.url("/"))
        assert fetcher._session is not None
        async with fetcher._session.get(srv.url("/half")) as response:
            assert isinstance(response, AiohttpInternals.Response), "response_class ignored"
            assert response.connection is not None
            protocol = response.connection.protocol
            assert protocol is not None
            assert protocol._payload is response.content, (
                "ResponseHandler._payload is not the stream of the body being received"
            )
            held.set()
            assert await response.read() == b"abcd"


async def test_a_204_connection_is_not_kept(srv: HTTPTestServer) -> None:
    async with AiohttpFetcher(config()) as fetcher:
        assert (await fetcher.fetch(srv.url("/empty"))).status == 204
        assert fetcher.statistics().idle == 0, (
            "ClientResponse.start override no longer closes a 204's connection"
        )
        await fetcher.fetch(srv.url("/"))
        assert fetcher.statistics().idle == 1


async def test_the_idle_cap_closes_the_least_recently_used_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fetcher_module, "idle_connections", lambda: 1)
    with HTTPTestServer() as one, HTTPTestServer() as two:
        one.set("/", Response(200, {}, b"1"))
        two.set("/", Response(200, {}, b"2"))
        async with AiohttpFetcher(config()) as fetcher:
            await fetcher.fetch(one.url("/"))
            await fetcher.fetch(two.url("/"))
            assert fetcher.statistics().idle == 1, (
                "TCPConnector._release/_conns: the idle cap kept "
                f"{fetcher.statistics().idle} connections"
            )
            await fetcher.fetch(two.url("/"))
            assert fetcher.statistics().connects == 2  # two's connection was kept


async def test_a_new_connection_pins_the_host_to_its_peer(srv: HTTPTestServer) -> None:
    # localhost answers ::1 first (dns_prefer ipv6) without a query; the server listens
    # on 127.0.0.1 only, so the connection falls over and the pin must say 127.0.0.1.
    cfg = config(dns_prefer="ipv6", allow_private=True)
    dns = DnsCache(DnsSettings.from_config(cfg))
    resolver = PinningResolver(dns, AddressPolicy(AddressPolicySettings.from_config(cfg)))
    assert dns.pinned("localhost") == "::1"
    async with AiohttpFetcher(cfg, resolver=resolver) as fetcher:
        assert (await fetcher.fetch(f"http://localhost:{srv.port}/")).body == b"ok"
    assert dns.pinned("localhost") == "127.0.0.1", (
        "TCPConnector._create_connection override not called: no pin from the socket"
    )
    await dns.aclose()


def _raw(handler: Callable[[socket.socket, int], object]) -> RawServer:
    return RawServer(handler)


async def _error(url: str) -> FetchError:
    async with AiohttpFetcher(config()) as fetcher:
        try:
            result = await fetcher.fetch(url)
        except FetchError as exc:
            return exc
    raise AssertionError(f"no error: {result.status} {result.body!r}")


async def test_connection_lost_tells_a_reset_body_from_a_whole_one() -> None:
    def reset_mid_body(conn: socket.socket, n: int) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\nhalf a page")
        threading.Event().wait(0.05)
        reset(conn)

    server = _raw(reset_mid_body)
    try:
        error = await _error(server.url())
    finally:
        server.close()
    assert isinstance(error, ConnectionLost), (
        f"ResponseHandler.connection_lost override not called: {error!r}"
    )


async def test_data_received_fails_a_body_malformed_after_the_head() -> None:
    def bad_chunk_later(conn: socket.socket, n: int) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
        threading.Event().wait(0.05)
        conn.sendall(b"zz\r\n")

    server = _raw(bad_chunk_later)
    try:
        error = await _error(server.url())
    finally:
        server.close()
    assert isinstance(error, ProtocolViolation), (
        f"ResponseHandler.data_received override not called or _payload not fed: {error!r}"
    )
