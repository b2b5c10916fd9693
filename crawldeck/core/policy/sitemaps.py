"""Sitemaps (sitemaps.org protocol 0.9) as a pure parser: bytes in, URLs and a reason out.

No I/O, no clock, no asyncio: ``SitemapStream`` reads one sitemap file as it arrives
(``feed`` the bytes fetched, ``pump`` them in steps, ``take`` the entries, ``close``),
holding neither the file nor its entries; ``parse_sitemap(body)`` is the same over a
body held whole. ``declared_sitemaps`` reads the ``Sitemap:`` lines of a robots.txt
body; ``Location`` is the protocol's rule of which URLs a sitemap may list.
``core.crawl.sitemaps`` is the driver that fetches, streams and admits the URLs. The
protocol: https://www.sitemaps.org/protocol.html.

Shapes read:

* ``<urlset>`` of ``<url>`` (``<loc>``, ``<lastmod>``, ``<changefreq>``, ``<priority>``)
  and ``<sitemapindex>`` of ``<sitemap>`` (``<loc>``, ``<lastmod>``). Namespace-tolerant:
  the root may be in the sitemaps.org namespace, in none, or in another (old Google
  ``0.84`` files); its children count only in the root's own namespace, so extension
  elements (``<image:loc>`` inside a ``<url>``) never pass for a ``<loc>``.
* gzip, known by its magic bytes (``.gz`` files, or gzip bytes under any name; a body
  the server sent with ``Content-Encoding: gzip`` arrives decoded already), several
  members included. One such layer: a gzip file inside it is ``nested_gzip``, refused
  (each layer multiplies a bomb; no generator writes one).
* text sitemaps: one absolute http(s) URL per line, UTF-8 (a line that is not UTF-8,
  or not such a URL, is skipped and counted).

Hardened (the protocol's caps, and XML that cannot cost more than its bytes):

* parsed with ``defusedxml`` over expat, streamed: decoded and fed in ``STEP_BYTES``
  (16 KiB) steps to a target that keeps only the text of the current entry's fields
  (no tree, no text between elements), the entries taken by the caller as they come,
  so a 50 MB file is never held in memory, as bytes, a tree, text or entries. A
  document type declaration is refused: an entity declaration (billion laughs) as
  ``xml_entities``, an external entity or external DTD as ``xml_external``, any other
  DTD as ``xml_dtd``; what was read before it is dropped. Elements nested deeper than
  ``MAX_NESTING`` (64) are ``too_deep``; more than ``MAX_MARKUP_BYTES`` (1 MiB) that
  expat must hold whole (one tag with its attributes, a comment, a declaration), or
  in the start tags of the elements open at once (expat keeps their names and
  namespaces), is ``huge_markup``; a text line too long to be a URL is dropped to
  its end.
* ``MAX_BYTES`` (50 MiB, "50MB (52,428,800 bytes)") uncompressed: decompression
  is done in steps bounded by what is left of the cap, so a gzip bomb costs at most
  the cap in time and a step in memory; past it, ``too_large`` and the entries read
  so far are kept.
* ``MAX_URLS`` (50 000) entries per file: the rest is ignored, ``too_many_urls``.
* ``<loc>`` of at most ``MAX_LOC_CHARS`` (2 047: "less than 2,048 characters").
* ``lastmod`` in W3C Datetime (a date, or a date and time; a time without a zone is
  read as UTC, as search engines do), ``changefreq`` one of the seven words,
  ``priority`` a number in [0.0, 1.0]: a bad value is dropped, its URL kept.

A file that is not well-formed keeps the entries read before the error
(``malformed``), as a cut robots.txt keeps its whole lines.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Final, Literal
from urllib.parse import urlsplit
from xml.etree.ElementTree import ParseError

from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from defusedxml.ElementTree import DefusedXMLParser

from crawldeck.core.errors import UrlError
from crawldeck.core.policy import urls
from crawldeck.core.policy.robots import robots_lines

#: Uncompressed bytes per sitemap file (the protocol's "50MB (52,428,800 bytes)").
MAX_BYTES: Final = 52_428_800
#: URLs per urlset, sitemaps per index (the protocol's 50,000).
MAX_URLS: Final = 50_000
#: The longest ``<loc>`` (the protocol: "less than 2,048 characters").
MAX_LOC_CHARS: Final = 2047
#: The ``changefreq`` values of the protocol.
CHANGEFREQS: Final = frozenset(
    {"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"}
)
#: The ``Sitemap:`` lines read from one robots.txt (more are ignored).
MAX_DECLARED: Final = 1000

SitemapKind = Literal["urlset", "sitemapindex", "text"]
_ROOTS: Final = {"urlset": "url", "sitemapindex": "sitemap"}
_READ_BYTES: Final = 64 * 1024
_HEAD_BYTES: Final = 1024  # blank bytes past which a file is taken for XML
_LINE_BYTES: Final = 4 * MAX_LOC_CHARS + 16  # a longer text line is no URL: dropped
#: Uncompressed bytes decoded and parsed in one step of ``SitemapStream.pump``.
STEP_BYTES: Final = 16 * 1024
#: Bytes expat may hold of one unfinished tag, comment or declaration (a ``<loc>`` of
#: 2 047 characters is text, passed on as it comes): more is ``huge_markup``.
MAX_MARKUP_BYTES: Final = 1024 * 1024
#: Elements nested deeper than this are ``too_deep`` (a sitemap needs 3, extensions 5).
MAX_NESTING: Final = 64
_GZIP_MAGIC: Final = b"\x1f\x8b"
_W3C_DATETIME: Final = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})"
    r"(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2})?)?)?)?"
)


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One ``<url>`` of a urlset (or line of a text sitemap), or one ``<sitemap>`` of an
    index.

    Attributes:
        loc: the ``<loc>`` text, stripped (not yet cleaned or checked: ``Location``).
        lastmod: ``<lastmod>`` as epoch seconds (UTC), ``None`` when absent or bad.
        changefreq: one of ``CHANGEFREQS`` (lowercased), ``None`` when absent or bad.
        priority: in [0.0, 1.0], ``None`` when absent or bad (never for an index).
    """

    loc: str
    lastmod: float | None = None
    changefreq: str | None = None
    priority: float | None = None


@dataclass(frozen=True, slots=True)
class SitemapFile:
    """What one sitemap file lists.

    Attributes:
        kind: ``urlset``, ``sitemapindex``, ``text``, or ``None`` when nothing could be
            read (refused or not a sitemap).
        entries: the URLs of a urlset or text sitemap, the sitemaps of an index, in
            file order, at most ``MAX_URLS``.
        error: ``"reason: detail"`` when the file was refused or cut (``xml_entities``,
            ``xml_external``, ``xml_dtd``, ``malformed``, ``too_large``,
            ``too_many_urls``, ``bad_gzip``, ``not_a_sitemap``), else ``None``.
        skipped: entries dropped (no ``<loc>``, a ``<loc>`` too long; lines of a text
            sitemap that are no URL or not UTF-8).
        bytes: uncompressed bytes read.
    """

    kind: SitemapKind | None
    entries: tuple[SitemapEntry, ...]
    error: str | None = None
    skipped: int = 0
    bytes: int = 0


class _TooLarge(Exception):
    """The uncompressed input passed its cap."""


class _BadGzip(Exception):
    """The gzip stream is corrupt."""


class _Parser(DefusedXMLParser):
    """defusedxml's expat parser with entities and external references refused, and a
    document type declaration refused at its end (so the reason names what it held:
    an entity declaration raises first, ``EntitiesForbidden``)."""

    def __init__(self, target: _Target) -> None:
        super().__init__(
            target=target, forbid_dtd=False, forbid_entities=True, forbid_external=True
        )
        self._dtd: tuple[str, str | None, str | None] | None = None
        expat = self.parser
        expat.StartDoctypeDeclHandler = self._start_doctype
        expat.EndDoctypeDeclHandler = self._end_doctype

    def _start_doctype(
        self, name: str, sysid: str | None, pubid: str | None, has_internal_subset: bool
    ) -> None:
        self._dtd = (name, sysid, pubid)

    def _end_doctype(self) -> None:
        assert self._dtd is not None
        name, sysid, pubid = self._dtd
        if sysid is not None or pubid is not None:
            raise ExternalReferenceForbidden(name, "", sysid or "", pubid or "")
        raise DTDForbidden(name, sysid, pubid)


def parse_lastmod(text: str) -> float | None:
    """A W3C Datetime (https://www.w3.org/TR/NOTE-datetime: ``YYYY``, ``YYYY-MM``,
    ``YYYY-MM-DD``, ``YYYY-MM-DDThh:mm[:ss[.s]]TZD``) as epoch seconds; a time with no
    zone is read as UTC. ``None`` for anything else (an out-of-range field too)."""
    m = _W3C_DATETIME.fullmatch(text.strip())
    if m is None:
        return None
    year, month, day, hour, minute, second, frac, zone = m.groups()
    try:
        tz: timezone = UTC
        if zone is not None and zone != "Z":
            sign = 1 if zone[0] == "+" else -1
            hours, minutes = int(zone[1:3]), int(zone[4:6])
            if hours > 23 or minutes > 59:
                return None
            tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
        moment = datetime(
            int(year),
            int(month or 1),
            int(day or 1),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((frac or "0").ljust(6, "0")[:6]),
            tzinfo=tz,
        )
        stamp = moment.timestamp()
        datetime.fromtimestamp(stamp, UTC)  # its UTC date exists (year 1 at +14:00 does not)
    except (ValueError, OverflowError, OSError):
        return None
    return stamp


def _priority(text: str) -> float | None:
    """``<priority>``: a number in [0.0, 1.0], else ``None``."""
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def _changefreq(text: str) -> str | None:
    word = text.strip().lower()
    return word if word in CHANGEFREQS else None


def _split(tag: str) -> tuple[str, str]:
    """``(namespace, local name)`` of an ElementTree tag (``{ns}name``)."""
    if tag.startswith("{"):
        ns, _, local = tag[1:].partition("}")
        return ns, local
    return "", tag


class _Stop(Exception):
    """Reading ends here (the cap of entries, or not a sitemap): ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_FIELDS: Final = frozenset({"loc", "lastmod", "changefreq", "priority"})
#: Characters kept of one field's text (a longer ``<loc>`` is skipped anyway).
_FIELD_CHARS: Final = MAX_LOC_CHARS + 1


class _Target:
    """The parser's target: keeps only the text of the fields of each entry (no tree,
    no text between elements), so memory holds one entry at a time."""

    def __init__(self, out: SitemapStream, max_urls: int) -> None:
        self._out = out
        self._max = max_urls
        self.expat: Any = None  # the expat parser, for the byte index of each event
        self.at = 0  # the byte index of the last event: expat holds what follows it
        self._starting = False  # the last event was a start tag, not yet measured
        self._tags: list[int] = []  # the bytes of each open element's start tag
        self._open = 0  # their sum: expat keeps their names and namespaces
        self._depth = 0
        self._ns = ""
        self._item = ""
        self._in_item = False
        self._fields: dict[str, str] = {}
        self._field: str | None = None
        self._text: list[str] = []
        self._size = 0

    def _event(self) -> None:
        """An event at expat's byte index: note it, and the size of the start tag
        before it if it was one (it ends where this event begins)."""
        at = self.expat.CurrentByteIndex
        if self._starting:
            self._starting = False
            self._tags.append(at - self.at)
            self._open += at - self.at
            if self._open > MAX_MARKUP_BYTES:
                raise _Stop(
                    f"huge_markup: over {MAX_MARKUP_BYTES} bytes in the start tags of the"
                    " open elements, the rest ignored"
                )
        self.at = at

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        """An element opens (ElementTree's target interface)."""
        self._event()
        self._starting = True
        self._depth += 1
        if self._depth > MAX_NESTING:
            raise _Stop(f"too_deep: elements nested over {MAX_NESTING} levels, the rest ignored")
        if self._depth == 1:
            self._ns, local = _split(tag)
            if local not in _ROOTS:
                raise _Stop(f"not_a_sitemap: the root element is <{local[:40]}>")
            self._out.kind = "urlset" if local == "urlset" else "sitemapindex"
            self._item = _ROOTS[local]
        elif self._depth == 2:
            self._in_item = _split(tag) == (self._ns, self._item)
            self._fields = {}
        elif self._depth == 3 and self._in_item:
            ns, local = _split(tag)
            if ns == self._ns and local in _FIELDS and local not in self._fields:
                self._field, self._text, self._size = local, [], 0

    def data(self, text: str) -> None:
        """Character data: kept only inside a field, up to ``_FIELD_CHARS``."""
        self._event()
        if self._field is not None and self._size <= _FIELD_CHARS:
            self._text.append(text)
            self._size += len(text)

    def end(self, tag: str) -> None:
        """An element closes: a field's text is kept, an entry is made."""
        self._event()
        self._open -= self._tags.pop()
        if self._depth == 3 and self._field is not None:
            self._fields[self._field] = "".join(self._text)
            self._field = None
        elif self._depth == 2 and self._in_item:
            out = self._out
            if out.count >= self._max:
                raise _Stop(f"too_many_urls: more than {self._max} entries, the rest ignored")
            found = _entry(self._fields, out.kind == "sitemapindex")
            if found is None:
                out.skipped += 1
            else:
                out.add(found)
        self._depth -= 1

    def close(self) -> None:
        """The document ended."""


def _entry(fields: dict[str, str], index: bool) -> SitemapEntry | None:
    """The entry of an item's field texts, ``None`` without a usable ``<loc>``."""
    loc = fields.get("loc", "").strip()
    if not loc or len(loc) > MAX_LOC_CHARS:
        return None
    lastmod = parse_lastmod(fields["lastmod"]) if "lastmod" in fields else None
    if index:
        return SitemapEntry(loc, lastmod)
    changefreq = _changefreq(fields["changefreq"]) if "changefreq" in fields else None
    priority = _priority(fields["priority"]) if "priority" in fields else None
    return SitemapEntry(loc, lastmod, changefreq, priority)


#: What ends a reading, each with its reason (``SitemapStream._fail``).
_FAILURES: Final = (
    _Stop,
    _TooLarge,
    _BadGzip,
    EntitiesForbidden,
    ExternalReferenceForbidden,
    DTDForbidden,
    ParseError,
)


class SitemapStream:
    """One sitemap file read as it arrives: bytes in, entries out, holding neither the
    file nor its entries (see the module for the shapes and the caps).

    ``feed`` takes the next bytes fetched; ``pump`` decodes and parses them in steps
    of ``STEP_BYTES`` uncompressed bytes until they are used up or ``max_entries``
    entries wait; ``take`` hands those entries over; ``close`` ends the file. Memory
    holds one fed chunk, one step, what expat holds of an unfinished tag (at most
    ``MAX_MARKUP_BYTES``) and the entries not yet taken. Once ``done`` (an error or a
    cap), the rest is ignored: the caller stops reading.

    Layers: the file may be gzip (one layer: a ``.xml.gz``, the HTTP content coding
    already undone by the fetcher, several members included); a gzip file inside it
    is refused as ``nested_gzip`` (each layer multiplies a bomb, and no generator
    writes one).

    Args:
        max_bytes: the cap on uncompressed bytes (``MAX_BYTES``, the protocol's).
        max_urls: the cap on entries (``MAX_URLS``, the protocol's).

    Attributes:
        kind: ``urlset``, ``sitemapindex``, ``text``, ``None`` until known (or when
            refused).
        error: ``"reason: detail"`` once refused or cut (see ``SitemapFile``).
        count: entries read so far (taken or not).
        skipped: entries dropped (see ``SitemapFile``).
        bytes: uncompressed bytes read.
        held: the most bytes it held at once (input not decoded, the step, the
            head kept to tell XML from text, expat's unfinished markup, a text line):
            what the parse costs in memory, for the tests.
    """

    def __init__(self, *, max_bytes: int = MAX_BYTES, max_urls: int = MAX_URLS) -> None:
        self._max_bytes = max_bytes
        self._max_urls = max_urls
        self.kind: SitemapKind | None = None
        self.error: str | None = None
        self.count = 0
        self.skipped = 0
        self.bytes = 0
        self.held = 0
        self._entries: list[SitemapEntry] = []
        self._input = b""  # fed, not decoded yet
        self._closing = False
        self._layer: Literal["plain", "gzip", "junk"] | None = None
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._open = False  # a gzip member is begun and not ended
        self._head = b""  # the first uncompressed bytes, until XML is told from text
        self._content: Literal["xml", "text"] | None = None
        self._target = _Target(self, max_urls)
        self._parser: _Parser | None = None
        self._parsed = 0  # bytes fed to expat
        self._rest = b""  # text: the line not ended yet
        self._long = False  # text: in a line too long to be a URL, dropped

    @property
    def done(self) -> bool:
        """Whether reading is over (refused or cut): bytes fed now are ignored."""
        return self.error is not None

    def add(self, entry: SitemapEntry) -> None:
        """An entry was read (the XML target's call)."""
        self._entries.append(entry)
        self.count += 1

    def feed(self, data: bytes) -> None:
        """The next bytes of the file, as fetched (parse them with ``pump``)."""
        if not self.done:
            self._input = self._input + data if self._input else data
            self.held = max(self.held, len(self._input))

    def take(self) -> list[SitemapEntry]:
        """The entries read since the last call, in file order."""
        entries, self._entries = self._entries, []
        return entries

    @property
    def waiting(self) -> int:
        """Entries read and not taken yet."""
        return len(self._entries)

    def pump(self, max_entries: int = MAX_URLS, max_steps: int | None = None) -> bool:
        """Decode and parse the bytes fed, step by step, until none is left, reading
        is over, ``max_entries`` entries wait, or ``max_steps`` steps were taken;
        whether it stopped for the entries or the steps (``take`` the entries and call
        again). Never raises: a hostile file sets ``error``."""
        steps = 0
        try:
            while not self.done:
                if len(self._entries) >= max_entries or steps == max_steps:
                    return True
                steps += 1
                out = self._decode(STEP_BYTES)
                if not out:
                    return False
                self.held = max(self.held, len(self._input) + len(out) + len(self._head))
                over = self.bytes > self._max_bytes
                if over:  # what fits the cap is read, then the rest is ignored
                    out = out[: len(out) - (self.bytes - self._max_bytes)]
                    self._closing = True  # the head is read as it is
                self._parse(out)
                if over:
                    raise _TooLarge
        except _FAILURES as exc:
            self._fail(exc)
        return False

    def close(self) -> None:
        """The file ended: parse what is left and check it ended well (``error``).
        Never raises."""
        if self.done:
            return
        self._closing = True
        while self.pump():
            pass  # the caller takes the entries after close
        if self.done:
            return
        try:
            if self._content is None:
                head, self._head = self._head, b""
                self._parse(head)
            if self._layer == "gzip" and self._open:
                raise _BadGzip("the gzip stream ends early")
            if self._parser is not None:
                self._parser.close()
            elif self._content == "text":
                self._line(self._rest)
                self._rest = b""
                if not self.count:
                    self.error = "not_a_sitemap: no URL line in the text"
        except _FAILURES as exc:
            self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        """Reading ends on ``exc`` (one of ``_FAILURES``): its reason in ``error``."""
        self._input = b""
        if isinstance(exc, _Stop):
            self.error = exc.reason
        elif isinstance(exc, _TooLarge):
            self.error = f"too_large: over {self._max_bytes} bytes uncompressed, the rest ignored"
        elif isinstance(exc, _BadGzip):
            self.error = f"bad_gzip: {exc}"
        elif isinstance(exc, EntitiesForbidden):
            self._refused()
            if exc.sysid is not None or exc.pubid is not None:
                self.error = f"xml_external: external entity {exc.name!r} refused"
            else:
                self.error = f"xml_entities: entity declaration {exc.name!r} refused"
        elif isinstance(exc, ExternalReferenceForbidden):
            self._refused()
            where = str(exc.sysid or exc.pubid)[:80]
            self.error = f"xml_external: external reference {where!r} refused"
        elif isinstance(exc, DTDForbidden):
            self._refused()
            self.error = f"xml_dtd: document type declaration {exc.name!r} refused"
        else:
            self.error = f"malformed: {exc}"[:200]

    def result(self, entries: tuple[SitemapEntry, ...] = ()) -> SitemapFile:
        """What was read, as a ``SitemapFile`` holding ``entries``."""
        return SitemapFile(self.kind, entries, self.error, self.skipped, self.bytes)

    def _refused(self) -> None:
        """A document type declaration was refused: nothing of the file counts."""
        self.kind = None
        self._entries = []

    def _decode(self, size: int) -> bytes:
        """Up to ``size`` uncompressed bytes of the input (``b""``: none yet), one more
        than the cap leaves at most (``pump`` cuts it). Raises ``_BadGzip``."""
        if self._layer is None:
            if len(self._input) < 2 and not self._closing:
                return b""
            self._layer = "gzip" if self._input[:2] == _GZIP_MAGIC else "plain"
        room = min(size, self._max_bytes - self.bytes + 1)
        if self._layer == "plain":
            out, self._input = self._input[:room], self._input[room:]
        else:
            out = self._inflate(room)
        self.bytes += len(out)
        return out

    def _inflate(self, room: int) -> bytes:
        """Up to ``room`` bytes out of the gzip members of the input."""
        while self._layer == "gzip":
            z = self._z
            if z.unconsumed_tail:
                data = z.unconsumed_tail
            elif not self._open and self._input[:2] != _GZIP_MAGIC:
                if len(self._input) < 2 and not self._closing:
                    return b""  # the next member's magic may come
                if self._input:  # trailing bytes that are no member: ignored, as gzip(1)
                    self._layer = "junk"
                self._input = b""
                return b""
            elif self._input:
                data, self._input = self._input, b""
            else:
                return b""
            try:
                out = z.decompress(data, room)
            except zlib.error as exc:
                raise _BadGzip(str(exc)) from None
            self._open = True
            if z.eof:  # a member ended; another may follow (RFC 1952 §2.2)
                self._input = z.unused_data + self._input
                self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self._open = False
            if out:
                return out
        self._input = b""
        return b""

    def _parse(self, data: bytes) -> None:
        """Parse the next uncompressed bytes (XML or text, told from the first 1 KiB)."""
        if self._content is None:
            self._head += data
            start = self._head[:_HEAD_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
            known = len(self._head) >= _HEAD_BYTES or (start and len(self._head) > 1)
            if not known and not self._closing:
                return  # a drip's first bytes: read as soon as they tell
            if self._layer == "gzip" and self._head[:2] == _GZIP_MAGIC:
                raise _Stop("nested_gzip: a gzip file inside the gzip file, refused")
            self._content = "xml" if start.startswith(b"<") or not start else "text"
            data, self._head = self._head, b""
            if self._content == "xml":
                self._parser = _Parser(self._target)
                self._target.expat = self._parser.parser
            else:
                self.kind = "text"
        if self._parser is not None:
            self._parser.feed(data)
            self._parsed += len(data)
            unfinished = self._parsed - self._target.at
            self.held = max(self.held, unfinished)
            if unfinished > MAX_MARKUP_BYTES:
                raise _Stop(
                    f"huge_markup: over {MAX_MARKUP_BYTES} bytes in one tag, comment or"
                    " declaration, the rest ignored"
                )
            return
        if self._long:  # in a line too long to be a URL: dropped to its end
            end = data.find(b"\n")
            if end < 0:
                return
            data, self._long = data[end + 1 :], False
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()
        for raw in lines:
            self._line(raw)
        if len(self._rest) > _LINE_BYTES:
            self._rest, self._long = b"", True
            self.skipped += 1
        self.held = max(self.held, len(self._rest))

    def _line(self, raw: bytes) -> None:
        """One line of a text sitemap: a URL entry, skipped, or blank."""
        try:
            line = raw.decode("utf-8").strip().removeprefix("\ufeff")
        except UnicodeDecodeError:
            self.skipped += 1
            return
        if not line:
            return
        if not line.lower().startswith(("http://", "https://")) or len(line) > MAX_LOC_CHARS:
            self.skipped += 1
            return
        if self.count >= self._max_urls:
            raise _Stop(f"too_many_urls: more than {self._max_urls} entries, the rest ignored")
        self.add(SitemapEntry(line))


def parse_sitemap(
    body: bytes, *, max_bytes: int = MAX_BYTES, max_urls: int = MAX_URLS
) -> SitemapFile:
    """Parse one sitemap file held whole (``SitemapStream`` over ``body``, in 64 KiB
    chunks; see the module for the shapes and the caps).

    Args:
        body: the bytes fetched (gzip or not, XML or text).
        max_bytes: the cap on uncompressed bytes (``MAX_BYTES``, the protocol's).
        max_urls: the cap on entries (``MAX_URLS``, the protocol's).

    Returns:
        the entries read and the reason the file was refused or cut, if it was. Never
        raises: every hostile input is a ``SitemapFile`` with an ``error``.
    """
    stream = SitemapStream(max_bytes=max_bytes, max_urls=max_urls)
    entries: list[SitemapEntry] = []
    view = memoryview(body)
    for start in range(0, len(body), _READ_BYTES):
        stream.feed(bytes(view[start : start + _READ_BYTES]))
        while stream.pump():
            entries += stream.take()
        entries += stream.take()
        if stream.done:
            break
    stream.close()
    entries += stream.take()
    return stream.result(tuple(entries))


def declared_sitemaps(body: bytes, *, limit: int = MAX_DECLARED) -> tuple[str, ...]:
    """The ``Sitemap:`` URLs of a robots.txt body, in file order, each once, at most
    ``limit``: lines whose field is ``sitemap`` (case-insensitive, anywhere in the file:
    the record is not part of any group, RFC 9309 §2.2.4; protego's ``sitemaps`` reads
    the same lines) with an absolute http(s) URL. Lines are read as for the groups
    (``core.policy.robots.robots_lines``: CR, LF, CR LF; control characters removed).
    Never raises."""
    found: dict[str, None] = {}
    for raw in robots_lines(body.decode("utf-8", errors="replace")):
        name, sep, value = raw.split("#", 1)[0].partition(":")
        if not sep or name.replace("\ufffd", "").strip().lower() != "sitemap":
            continue
        url = value.strip()
        if url.lower().startswith(("http://", "https://")) and len(url) <= MAX_LOC_CHARS:
            found[url] = None
            if len(found) >= limit:
                break
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Location:
    """Which URLs a sitemap may list (the protocol's "Sitemap file location").

    A sitemap at ``http://h/a/s.xml`` may list only ``http://h/a/...`` URLs (same
    scheme, host and port, under its directory). A sitemap named by the ``Sitemap:``
    line of the robots.txt of origin ``granted`` may list any URL of that origin too,
    wherever it is (the protocol's "Sitemaps & Cross Submits": the robots.txt proves
    the site owner asked for it); the sitemaps of an index inherit that grant.

    Attributes:
        origin: ``scheme://host[:port]`` of the sitemap (``core.policy.urls.origin``).
        directory: the sitemap's path up to its last ``/``.
        granted: the origin whose robots.txt named the sitemap (or its index), or
            ``None``.
    """

    origin: str
    directory: str
    granted: str | None = None

    @classmethod
    def of(cls, sitemap_url: str, granted: str | None = None) -> Location:
        """The location rule of the sitemap at the cleaned URL ``sitemap_url``.

        Raises:
            UrlError: ``sitemap_url`` is not an http(s) URL with a host.
        """
        path = urlsplit(sitemap_url).path or "/"
        return cls(urls.origin(sitemap_url), path[: path.rfind("/") + 1], granted)

    def allows(self, url: str) -> bool:
        """Whether the sitemap may list the cleaned URL ``url``."""
        try:
            where = urls.origin(url)
        except UrlError:
            return False
        if where == self.granted:
            return True
        return where == self.origin and (urlsplit(url).path or "/").startswith(self.directory)

    def same_site(self, url: str) -> bool:
        """Whether the cleaned URL ``url`` is on the sitemap's own origin (where the
        sitemaps of an index must be: "Sitemap index files may only specify Sitemaps
        that are found on the same site as the sitemap index file")."""
        try:
            return urls.origin(url) == self.origin
        except UrlError:
            return False


__all__ = [
    "CHANGEFREQS",
    "MAX_BYTES",
    "MAX_DECLARED",
    "MAX_LOC_CHARS",
    "MAX_MARKUP_BYTES",
    "MAX_NESTING",
    "MAX_URLS",
    "STEP_BYTES",
    "Location",
    "SitemapEntry",
    "SitemapFile",
    "SitemapKind",
    "SitemapStream",
    "declared_sitemaps",
    "parse_lastmod",
    "parse_sitemap",
]
