"""Every use of aiohttp's private or undocumented API, in one module: the connection
protocol, response and connector subclasses the fetcher's session is built from.

Separate from ``core.net.fetcher`` so that what depends on aiohttp's internals is one
module with one table of what breaks if aiohttp changes each member
(``AiohttpInternals``); ``tests/unit/test_aiohttp_internals.py`` checks that table against the
installed aiohttp, and that no other fetcher module reads an underscore attribute of
aiohttp's.
"""

from __future__ import annotations

import asyncio
import functools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ClientRequest, ConnectionKey
from aiohttp.connector import Connection
from aiohttp.tracing import Trace

#: Statuses that have no body (RFC 9110 §6.4.1): bytes a server sends after one would
#: be read as the next response on a kept-alive connection, so it is not kept
#: (``AiohttpInternals.Response``).
NO_BODY = frozenset({204, 304})


class LostOnFresh(Exception):
    """A new connection closed or reset before the response head: raised in place
    of aiohttp's error so that aiohttp does not send the request again (it resends
    any GET once on ``ServerDisconnectedError``/``ClientOSError``, meant for a
    kept-alive connection the server closed meanwhile, RFC 9112 §9.3.1.1; on a
    new connection it only doubles the requests to a host that drops them).
    ``AiohttpFetcher.fetch`` translates ``error`` as it would have been."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


#: Called by the connector with the URL's host, the transport of each new TCP
#: connection and whether it goes to a proxy (``AiohttpFetcher._connected``).
OnConnect = Callable[[str, asyncio.BaseTransport | None, bool], None]


class AiohttpInternals:
    """Every use of aiohttp's private or undocumented API, in one place.

    aiohttp has no public seam for what the crawler needs at four points, so three of
    its classes are subclassed here (nowhere else in ``core``), and only here is an
    underscore attribute of an aiohttp object read, written or overridden:

    ========================================  =========================================
    what (aiohttp's class: member)            what breaks if aiohttp changes it
    ========================================  =========================================
    ``ResponseHandler`` (``client_proto``,    the class is not exported: an import
    not exported), subclassed as              error (loud)
    ``Protocol``
    ``ResponseHandler.connection_lost(exc)``  not called: ``lost_error`` stays ``None``
    overridden (keeps ``exc``)                and a reset close-delimited body reads
                                              as complete (silently cut bodies)
    ``ResponseHandler.data_received(data)``   not called: a body that turns malformed
    overridden (fails the body's reader)      after the head (bad chunk framing in a
                                              later packet) hangs until the total
                                              time budget, a retryable timeout
                                              instead of a ``ProtocolViolation``
    ``ResponseHandler._payload`` read (the    renamed: ``AttributeError`` on every
    body stream being fed)                    response (loud); no longer the body's
                                              stream: as the row above
    ``ClientResponse.start(connection)``      not called: a 204/304 connection stays
    overridden as ``Response.start``          in the pool (a body sent after one
                                              fails the next URL on it), a new
                                              connection lost before the head is
                                              requested twice
    ``TCPConnector._create_connection(req,    not called: ``connects`` stays 0 and
    traces, timeout)`` overridden             ``DnsCache.pinned`` is not set from the
                                              socket's peer (per-IP politeness keyed
                                              by the DNS answer's first address)
    ``TCPConnector._release(key, protocol,    not called: idle connections are not
    *, should_close)`` overridden             capped (a socket per host fetched in the
                                              keep-alive time, descriptors run out)
    ``TCPConnector._conns`` read (``{key:     reshaped: the idle cap raises or closes
    [(protocol, released_at), ...]}``)        nothing; ``statistics().idle`` is wrong
    ``TCPConnector._factory`` written (the    ignored: plain ``ResponseHandler``s, none
    protocol factory)                         of ``Protocol``'s additions (the rows
                                              on ``connection_lost``/``data_received``)
    ========================================  =========================================

    Checked against aiohttp 3.10 to 3.14: each member above has the same name and
    signature in aiohttp's source at v3.10.0, v3.11.0, v3.12.0, v3.13.0 and v3.14.3
    (``_conns`` holds lists in 3.10 and deques from 3.11: both are read only as
    iterables of pairs), and ``tests/unit/test_aiohttp_internals.py`` passes on 3.10.11,
    3.12.15, 3.13.5, 3.14.0 and 3.14.5. The fetcher's other tests pass on 3.14.5 only
    (older ones word parser errors otherwise, 3.12 and older have no 128-header limit,
    3.14.0 fails ``test_one_known_coding_is_decoded[ deflate ]``), so ``pyproject.toml`` pins
    ``aiohttp>=3.14.5,<3.15``. ``tests/unit/test_aiohttp_internals.py`` fails, naming the
    member, when the installed aiohttp is outside that pin, when a method in
    ``OVERRIDDEN`` is missing or has another signature, when a member in ``READ`` is
    missing from a real connector, protocol or response, when aiohttp stops calling an
    override during a real request, or when an underscore attribute of aiohttp's is used
    in the fetcher's modules (``core/net/fetcher.py``, ``core/net/aiohttp_internals.py``,
    ``core/net/body_reader.py``, ``core/net/fetch_errors.py``) or ``core/net/transport.py`` outside
    this class.
    """

    class Protocol(ResponseHandler):
        """aiohttp's connection protocol, with two additions:

        * it remembers how the connection ended (``lost_error``) and how many
          responses it has begun (``responses``): a reset (TCP RST) ends a
          close-delimited body exactly like a clean close as far as aiohttp's parser
          is concerned, and only the error given to ``connection_lost`` tells a cut
          body from a whole one;
        * a body that turns malformed after the head (bad chunk framing in a later
          packet) fails the body's reader: aiohttp 3.14's C parser drops the body's
          stream without an error there, and its reader then waits forever, past the
          read timeout (only the total time budget ended it, as a retryable timeout).
        """

        lost_error: BaseException | None = None
        responses = 0

        def connection_lost(self, exc: BaseException | None) -> None:
            self.lost_error = exc
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            payload = self._payload
            super().data_received(data)
            failed = self.exception()
            if (
                payload is not None
                and failed is not None
                and payload.exception() is None
                and not payload.is_eof()
            ):
                payload.set_exception(
                    aiohttp.ClientPayloadError(f"Response payload is not completed: {failed!r}"),
                    failed,
                )

    @staticmethod
    def new_protocol(loop: asyncio.AbstractEventLoop) -> ResponseHandler:
        """The connector's protocol factory: a ``Protocol`` on ``loop``."""
        return AiohttpInternals.Protocol(loop=loop)

    class Response(aiohttp.ClientResponse):
        """aiohttp's response, with three changes:

        * the connection of a 204 or 304 is not kept alive: bytes a server sends after
          one (a body it should not have) would be read as the next response on that
          connection, failing an innocent URL. aiohttp has already put the connection
          back in its pool when ``start`` returns, so its protocol is closed there
          and the pool drops it;
        * a new connection lost before the head raises ``LostOnFresh`` (no resend);
        * ``lost_error`` tells how the connection ended (``Protocol``).
        """

        _handler: AiohttpInternals.Protocol | None = None

        async def start(self, connection: Connection) -> AiohttpInternals.Response:
            protocol = connection.protocol
            handler = protocol if isinstance(protocol, AiohttpInternals.Protocol) else None
            self._handler = handler
            fresh = handler is not None and handler.responses == 0
            if handler is not None:
                handler.responses += 1
            try:
                await super().start(connection)
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                if fresh:
                    raise LostOnFresh(exc) from None
                raise
            if self.status in NO_BODY and protocol is not None:
                protocol.close()
            return self

        @property
        def lost_error(self) -> BaseException | None:
            """The error the connection ended with (``None``: open, or closed cleanly)."""
            return self._handler.lost_error if self._handler is not None else None

    class Connector(aiohttp.TCPConnector):
        """aiohttp's connector, with ``Protocol`` connections, telling ``on_connect``
        of each new connection (to count them and to pin the host to the address the
        socket really went to), and keeping idle keep-alive connections for at most
        ``max_idle`` hosts, the least recently used closed first (aiohttp's ``limit``
        counts only connections in use: a crawl of 50 000 hosts would otherwise hold a
        socket per host fetched in the keep-alive time). Made inside the running loop.

        Args:
            on_connect: called with ``req.host``, the transport of each new
                connection and whether it is to a proxy (``req.proxy`` set).
            max_idle: the most hosts with idle connections kept (``idle_connections()``).
            kwargs: ``aiohttp.TCPConnector``'s.
        """

        def __init__(self, on_connect: OnConnect, *, max_idle: int, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._factory = functools.partial(
                AiohttpInternals.new_protocol, asyncio.get_running_loop()
            )
            self._on_connect = on_connect
            self._max_idle = max_idle
            self._idle_hosts: OrderedDict[ConnectionKey, None] = OrderedDict()

        def idle(self) -> int:
            """Idle keep-alive connections in the pool now (open ones: a closed one
            stays listed until aiohttp next looks for a connection to its host)."""
            return sum(
                protocol.is_connected()
                for pooled in self._conns.values()
                for protocol, _since in pooled
            )

        def _release(
            self, key: ConnectionKey, protocol: ResponseHandler, *, should_close: bool = False
        ) -> None:
            super()._release(key, protocol, should_close=should_close)
            idle = self._idle_hosts
            idle[key] = None
            idle.move_to_end(key)
            while len(idle) > self._max_idle:
                oldest, _ = idle.popitem(last=False)
                for old, _since in self._conns.pop(oldest, ()):
                    old.close()

        async def _create_connection(
            self,
            req: ClientRequest,
            traces: list[Trace],
            timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109 - aiohttp's interface
        ) -> ResponseHandler:
            protocol = await super()._create_connection(req, traces, timeout)
            self._on_connect(req.host, protocol.transport, req.proxy is not None)
            return protocol

    #: ``(ours, aiohttp's class, method)``: each method ours overrides, with the
    #: parameters of aiohttp's.
    OVERRIDDEN: ClassVar[tuple[tuple[type, type, str], ...]] = (
        (Protocol, ResponseHandler, "connection_lost"),
        (Protocol, ResponseHandler, "data_received"),
        (Response, aiohttp.ClientResponse, "start"),
        (Connector, aiohttp.TCPConnector, "_create_connection"),
        (Connector, aiohttp.TCPConnector, "_release"),
    )
    #: ``(aiohttp's class, attribute)``: each private attribute read or written above
    #: on an instance of that class.
    READ: ClassVar[tuple[tuple[type, str], ...]] = (
        (ResponseHandler, "_payload"),
        (aiohttp.TCPConnector, "_conns"),
        (aiohttp.TCPConnector, "_factory"),
    )


__all__ = ["NO_BODY", "AiohttpInternals", "LostOnFresh", "OnConnect"]
