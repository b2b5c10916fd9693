"""Reading one response's body: its content coding, bounded decoding (gzip, deflate,
br) in steps, and the cap on decoded bytes, held or handed to a reader as it arrives.

Separate from ``core.net.fetcher`` (the session and the request) because a body is a
concern of its own: a compression bomb must cost at most the cap plus one step, so the
decoders (``Inflater``, ``Unbrotli``) and the reader (``BodyReader``) are written
together; and a body cut short or malformed is told apart here, where the connection
is known (``BodyReader``'s errors).
"""

from __future__ import annotations

import io
import zlib

import aiohttp
import brotli
from aiohttp.http_exceptions import (
    ContentLengthError,
    HttpProcessingError,
    TransferEncodingError,
)

from crawldeck.core.errors import ConnectionLost, FetchError, ProtocolViolation
from crawldeck.core.net.aiohttp_internals import AiohttpInternals
from crawldeck.core.net.fetch_errors import one_line
from crawldeck.core.policy import sniff
from crawldeck.core.records import BodySink, Headers

#: The content codings we accept and decode (only codings whose decoding we bound).
ACCEPT_ENCODING = "gzip, deflate, br"
DECODED_CODINGS = frozenset({"gzip", "x-gzip", "deflate", "br"})
#: The size of one read from the connection, bytes.
READ_BYTES = 64 * 1024


def content_coding(headers: Headers, url: str) -> str | None:
    """The one content coding of ``headers`` (lowercase), or ``None`` for none.

    ``identity`` and empty items do not count (RFC 9110 §8.4).

    Raises:
        ProtocolViolation: more than one coding (stacked, in one header or several),
            or a coding other than gzip/x-gzip/deflate/br.
    """
    codings = [
        coding
        for value in headers.getall("content-encoding", ())
        for item in value.split(",")
        if (coding := item.strip().lower()) and coding != "identity"
    ]
    if not codings:
        return None
    if len(codings) > 1:
        listed = ", ".join(codings)[:200]
        if not listed.isprintable():
            listed = repr(listed)
        raise ProtocolViolation(f"stacked content codings {listed} refused: {url}")
    if codings[0] not in DECODED_CODINGS:
        raise ProtocolViolation(f"unknown content coding {codings[0][:100]!r} refused: {url}")
    return codings[0]


class Inflater:
    """Bounded decoding of one gzip or deflate body (RFC 9110 §8.4.1.2, §8.4.1.3).

    ``feed(data, room)`` returns at most ``room`` decoded bytes. Output that would not
    fit stays undecoded in zlib's input tail, and the caller stops there (the body is
    truncated), so a bomb never expands past what the caller still wants. ``deflate``
    is tried zlib-wrapped first (the RFC) and raw if that fails (what many servers
    send), as browsers do; the choice waits for the first two bytes (zlib's header).
    ``complete`` tells whether the compressed stream ended. Raises ``zlib.error`` on
    bad data.
    """

    def __init__(self, coding: str) -> None:
        self._deflate = coding == "deflate"
        wbits = zlib.MAX_WBITS if self._deflate else 16 + zlib.MAX_WBITS
        self._z = zlib.decompressobj(wbits)
        self._head = b""  # deflate: bytes held until the header can be judged

    def feed(self, data: bytes, room: int) -> bytes:
        """Decode ``data``; at most ``room`` (>= 1) bytes out."""
        if self._deflate:
            data = self._head + data
            if len(data) < 2:
                self._head = data
                return b""
            self._deflate = False
            self._head = b""
            try:
                return self._z.decompress(data, room)
            except zlib.error:
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)
        return self._z.decompress(data, room)

    def more(self, room: int) -> bytes:
        """Decode more of what earlier ``feed`` calls held back (the output did not
        fit their ``room``); at most ``room`` (>= 1) bytes, ``b""`` when none is held."""
        tail = self._z.unconsumed_tail
        return self._z.decompress(tail, room) if tail else b""

    @property
    def complete(self) -> bool:
        """Whether the end of the compressed stream was reached."""
        return self._z.eof


class Unbrotli:
    """Bounded decoding of one brotli body (RFC 7932; ``br``, RFC 9110 §18.6).

    ``feed(data, room)`` returns what brotli decodes of ``data`` with its output
    buffer capped at ``room`` bytes (``output_buffer_limit``, Brotli 1.2): brotli
    fills its buffer in blocks, so up to one block (about 32 KiB) past ``room``
    may come out; past ``room`` the caller cuts and stops (the body is truncated),
    so a bomb never expands past what the caller still wants plus a block. The
    decoder then holds the rest, and is not fed again. ``complete`` tells whether the
    stream ended. Raises ``brotli.error`` on bad data.
    """

    def __init__(self) -> None:
        self._decoder = brotli.Decompressor()

    def feed(self, data: bytes, room: int) -> bytes:
        """Decode ``data``; about ``room`` (>= 1) bytes out at most (see the class)."""
        out: bytes = self._decoder.process(data, output_buffer_limit=room)
        return out

    def more(self, room: int) -> bytes:
        """Decode more of what earlier ``feed`` calls held back; about ``room`` bytes
        at most, ``b""`` when none is held."""
        if self._decoder.is_finished() or self._decoder.can_accept_more_data():
            return b""
        out: bytes = self._decoder.process(b"", output_buffer_limit=room)
        return out

    @property
    def complete(self) -> bool:
        """Whether the end of the compressed stream was reached."""
        finished: bool = self._decoder.is_finished()
        return finished


class BodyReader:
    """Reads the decoded body of one response, in steps, up to ``limit`` bytes.

    ``read(upto)`` reads network chunks, decoding them (``Inflater``, ``Unbrotli``)
    in steps of at most ``READ_BYTES`` decoded bytes (and one more than what is left
    of ``limit``), until ``upto`` bytes are held (``None``: the whole body), the body
    ends, or it overflows ``limit`` (``truncated``: cut to ``limit``). The decoded bytes
    go into one growing buffer (``io.BytesIO``, whose ``getvalue`` hands over its own
    buffer without a copy), so a body costs its size once, plus one step: never a list
    of chunks and their join, nor a decoder's output of megabytes at once (a brotli or
    gzip bomb decodes a step at a time, as ``stream`` does).

    Raises (from ``read``):
        ConnectionLost: the connection was reset before the end of the body.
        ProtocolViolation: a short body (the connection closed cleanly before
            ``Content-Length`` bytes or the last chunk; a compressed stream that does
            not end), bad chunked framing, or undecodable compressed bytes.
    """

    def __init__(
        self, response: AiohttpInternals.Response, coding: str | None, limit: int, url: str
    ) -> None:
        self._response = response
        self._inflater: Inflater | Unbrotli | None = None
        if coding:
            self._inflater = Unbrotli() if coding == "br" else Inflater(coding)
        self._limit = limit
        self._url = url
        self._body = io.BytesIO()
        self._wire: io.BytesIO | None = io.BytesIO() if coding else None  # coded bytes read
        self._fed = False
        self._wire_size = 0
        self.size = 0
        self.truncated = False
        self.wire_cut = False  # streamed: more was transferred than the prefix kept
        self.ended = False

    def head(self) -> bytes:
        """The resource header: the first ``RESOURCE_HEADER_BYTES`` bytes held."""
        return self._body.getvalue()[: sniff.RESOURCE_HEADER_BYTES]

    def body(self) -> bytes:
        """Every decoded byte held (the buffer itself, not a copy: call once, at the
        end of the read)."""
        return self._body.getvalue()

    def wire(self) -> bytes | None:
        """Every byte read as transferred (content coding kept), ``None`` without a
        content coding (then it is ``body()``)."""
        return None if self._wire is None else self._wire.getvalue()

    async def read(self, upto: int | None) -> None:
        """Read until ``upto`` bytes are held (``None``: to the end or the cut)."""
        inflater = self._inflater
        while not self.ended and not self.truncated and (upto is None or self.size < upto):
            if inflater is not None and self._fed:
                held = inflater.more(self._step())  # what the last step left in the decoder
                if held:
                    self._keep(held)
                    continue
            data = await self._next_read()
            if not data:
                return
            if inflater is None:
                self._keep(data)
                continue
            assert self._wire is not None
            self._wire.write(data)
            self._fed = True
            self._keep(inflater.feed(data, self._step()))

    def _keep(self, data: bytes) -> None:
        """Hold the decoded ``data``, cut at the cap (``truncated`` past it)."""
        room = self._limit - self.size
        if len(data) > room:
            data = data[:room]
            self.truncated = True
        self._body.write(data)
        self.size += len(data)

    async def stream(self, sink: BodySink, keep: int) -> None:
        """Read the whole body (to its end or the cut), handing the decoded bytes to
        ``sink`` in steps of at most ``READ_BYTES`` instead of holding them; keep the
        first ``keep`` bytes as transferred (``wire``; ``wire_cut`` when more came).
        ``sink`` returning ``False`` stops the read (``truncated``)."""
        inflater = self._inflater
        wire = self._wire = io.BytesIO()
        while not self.ended:
            data = await self._next_read()
            if not data:
                return
            if self._wire_size < keep:
                wire.write(data[: keep - self._wire_size])
            self._wire_size += len(data)
            self.wire_cut = self._wire_size > keep
            if inflater is None:
                for start in range(0, len(data), READ_BYTES):
                    if not await self._hand(data[start : start + READ_BYTES], sink):
                        return
                continue
            self._fed = True
            out = inflater.feed(data, self._step())
            while out:
                if not await self._hand(out, sink):
                    return
                out = inflater.more(self._step())

    async def _next_read(self) -> bytes:
        """The next bytes as transferred; ``b""`` at the end of the body (``ended``).

        Raises:
            FetchError: the body was cut short or malformed (``_cut``, ``_check_end``).
        """
        try:
            data = await self._response.content.readany()
        except (aiohttp.ClientPayloadError, HttpProcessingError) as exc:
            raise self._cut(exc) from None
        if not data:
            self.ended = True
            self._check_end()
        return data

    def _step(self) -> int:
        """The most decoded bytes to take in one step: a read, and one more byte than
        the cap leaves (it tells a longer body from an exact one)."""
        return min(READ_BYTES, self._limit - self.size + 1)

    async def _hand(self, data: bytes, sink: BodySink) -> bool:
        """Give ``data`` to ``sink`` within the cap; whether to read on."""
        if self.size + len(data) > self._limit:
            data = data[: self._limit - self.size]
            self.truncated = True
        self.size += len(data)
        if data and not await sink(data):
            self.truncated = True
        return not self.truncated

    def _check_end(self) -> None:
        """At the end of the body: a reset close-delimited body, or a compressed stream
        that did not end, is not a complete body."""
        url = self._url
        lost = self._response.lost_error
        headers = self._response.headers
        delimited = (
            "content-length" in headers or "chunked" in headers.get("transfer-encoding", "").lower()
        )
        if isinstance(lost, OSError) and not delimited:
            raise ConnectionLost(
                f"connection lost before the end of the body: {one_line(lost)}: {url}"
            )
        if self._fed and self._inflater is not None and not self._inflater.complete:
            raise ProtocolViolation(f"invalid HTTP response: compressed body cut short: {url}")

    def _cut(self, exc: aiohttp.ClientPayloadError | HttpProcessingError) -> FetchError:
        """The error for a body aiohttp found incomplete or malformed."""
        url = self._url
        lost = self._response.lost_error
        if isinstance(lost, OSError):
            return ConnectionLost(
                f"connection lost before the end of the body: {one_line(lost)}: {url}"
            )
        cause = exc if isinstance(exc, HttpProcessingError) else exc.__cause__
        if isinstance(cause, ContentLengthError | TransferEncodingError) and (
            "not enough data" in str(cause.message).lower()
        ):
            return ProtocolViolation(f"short body: {one_line(cause.message)}: {url}")
        detail = (
            one_line(cause.message) if isinstance(cause, HttpProcessingError) else one_line(exc)
        )
        return ProtocolViolation(f"invalid HTTP response: {detail}: {url}")


__all__ = [
    "ACCEPT_ENCODING",
    "DECODED_CODINGS",
    "READ_BYTES",
    "BodyReader",
    "Inflater",
    "Unbrotli",
    "content_coding",
]
