"""Sitemaps (sitemaps.org protocol 0.9) as a pure parser: bytes in, URLs and a reason out.

No I/O, no clock, no asyncio: ``parse_sitemap(body, url)`` reads one fetched sitemap
file and returns what it lists (``SitemapFile``); ``declared_sitemaps`` reads the
``Sitemap:`` lines of a robots.txt body; ``Location`` is the protocol's rule of which
URLs a sitemap may list. ``core.sitemap_reader`` is the driver that fetches, calls
these and admits the URLs. The protocol: https://www.sitemaps.org/protocol.html.

Shapes read:

* ``<urlset>`` of ``<url>`` (``<loc>``, ``<lastmod>``, ``<changefreq>``, ``<priority>``)
  and ``<sitemapindex>`` of ``<sitemap>`` (``<loc>``, ``<lastmod>``). Namespace-tolerant:
  the root may be in the sitemaps.org namespace, in none, or in another (old Google
  ``0.84`` files); its children count only in the root's own namespace, so extension
  elements (``<image:loc>`` inside a ``<url>``) never pass for a ``<loc>``.
* gzip, known by its magic bytes (``.gz`` files, or gzip bytes under any name; a body
  the server sent with ``Content-Encoding: gzip`` arrives decoded already), several
  members included.
* text sitemaps: one absolute http(s) URL per line, UTF-8 (a line that is not UTF-8,
  or not such a URL, is skipped and counted).

Hardened (the protocol's caps, and XML that cannot cost more than its bytes):

* parsed with ``defusedxml`` over expat, streamed: fed in 64 KiB chunks to a target
  that keeps only the text of the current entry's fields (no tree, no text between
  elements), so a 50 MB file is never held in memory, as a tree or as text. A
  document type declaration is refused: an entity declaration (billion laughs) as
  ``xml_entities``, an external entity or external DTD as ``xml_external``, any other
  DTD as ``xml_dtd``; what was read before it is dropped.
* ``MAX_BYTES`` (50 MiB, "50MB (52,428,800 bytes)") uncompressed: decompression
  is done in steps bounded by what is left of the cap, so a gzip bomb costs at most
  the cap; past it, ``too_large`` and the entries read so far are kept.
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
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Final, Literal
from urllib.parse import urlsplit
from xml.etree.ElementTree import ParseError

from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from defusedxml.ElementTree import DefusedXMLParser

from crawldeck.core import urls
from crawldeck.core.errors import UrlError
from crawldeck.core.robots_policy import robots_lines

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


class _Uncompressed:
    """A file-like ``read(n)`` over ``body``, gunzipped when it starts with the gzip
    magic, that raises ``_TooLarge`` once more than ``cap`` bytes came out. Each step
    inflates at most what is left of the cap plus one byte, so a bomb costs the cap.
    ``peek`` reads the first bytes and gives them back to the next ``read``."""

    def __init__(self, body: bytes, cap: int) -> None:
        self._body = memoryview(body)
        self._pos = 0
        self._cap = cap
        self.count = 0  # uncompressed bytes read
        self._gzip = body[:2] == _GZIP_MAGIC
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._pending = b""  # compressed input not taken by the inflater yet
        self._open = False  # a gzip member is begun and not ended
        self._head = b""  # peeked bytes, given back first

    def peek(self, size: int) -> bytes:
        """The first ``size`` bytes at most, read again by the next ``read``."""
        self._head = self.read(size)
        return self._head

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` (``_READ_BYTES`` when negative) uncompressed bytes; ``b""`` at
        the end. Raises ``_TooLarge``, ``_BadGzip``."""
        if self._head:
            head, self._head = self._head, b""
            return head
        want = _READ_BYTES if size is None or size < 0 else size
        room = min(want, self._cap - self.count + 1)
        out = self._inflate(room) if self._gzip else self._plain(room)
        self.count += len(out)
        if self.count > self._cap:
            raise _TooLarge
        return out

    def _plain(self, n: int) -> bytes:
        chunk = bytes(self._body[self._pos : self._pos + n])
        self._pos += len(chunk)
        return chunk

    def _inflate(self, n: int) -> bytes:
        while True:
            if not self._pending:
                if self._pos >= len(self._body):
                    if self._open:
                        raise _BadGzip("the gzip stream ends early")
                    return b""
                self._pending = bytes(self._body[self._pos : self._pos + _READ_BYTES])
                self._pos += len(self._pending)
            try:
                out = self._z.decompress(self._pending, n)
            except zlib.error as exc:
                raise _BadGzip(str(exc)) from None
            self._open = True
            self._pending = self._z.unconsumed_tail
            if self._z.eof:  # a member ended; another may follow (RFC 1952 §2.2)
                rest = self._z.unused_data  # the input past the member (unconsumed too)
                self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self._open = False
                if rest[:2] == _GZIP_MAGIC or (not rest[1:] and rest == _GZIP_MAGIC[:1]):
                    self._pending = rest
                else:  # trailing bytes that are no member: ignored, as gzip(1) does
                    self._pending, self._pos = b"", len(self._body)
            if out:
                return out


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

    def __init__(self, out: _Progress, max_urls: int) -> None:
        self._out = out
        self._max = max_urls
        self._depth = 0
        self._ns = ""
        self._item = ""
        self._in_item = False
        self._fields: dict[str, str] = {}
        self._field: str | None = None
        self._text: list[str] = []
        self._size = 0

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        """An element opens (ElementTree's target interface)."""
        self._depth += 1
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
        if self._field is not None and self._size <= _FIELD_CHARS:
            self._text.append(text)
            self._size += len(text)

    def end(self, tag: str) -> None:
        """An element closes: a field's text is kept, an entry is made."""
        if self._depth == 3 and self._field is not None:
            self._fields[self._field] = "".join(self._text)
            self._field = None
        elif self._depth == 2 and self._in_item:
            out = self._out
            if len(out.entries) >= self._max:
                raise _Stop(f"too_many_urls: more than {self._max} entries, the rest ignored")
            found = _entry(self._fields, out.kind == "sitemapindex")
            if found is None:
                out.skipped += 1
            else:
                out.entries.append(found)
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


@dataclass(slots=True)
class _Progress:
    kind: SitemapKind | None = None
    entries: list[SitemapEntry] = field(default_factory=list)
    skipped: int = 0


def _parse_xml(source: _Uncompressed, max_urls: int, out: _Progress) -> str | None:
    """Read the XML sitemap of ``source`` into ``out``, fed to expat in chunks; the
    error, or ``None``."""
    parser = _Parser(_Target(out, max_urls))
    try:
        while chunk := source.read(_READ_BYTES):
            parser.feed(chunk)
        parser.close()
    except _Stop as stop:
        return stop.reason
    return None


def _parse_text(source: _Uncompressed, max_urls: int, out: _Progress) -> str | None:
    """Read a text sitemap (one URL per line) into ``out``; the error, or ``None``."""
    out.kind = "text"
    rest = b""
    while True:
        chunk = source.read(_READ_BYTES)
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop() if chunk else b""
        for raw in lines:
            try:
                line = raw.decode("utf-8").strip().removeprefix("\ufeff")
            except UnicodeDecodeError:
                out.skipped += 1
                continue
            if not line:
                continue
            if not line.lower().startswith(("http://", "https://")) or len(line) > MAX_LOC_CHARS:
                out.skipped += 1
                continue
            if len(out.entries) >= max_urls:
                return f"too_many_urls: more than {max_urls} entries, the rest ignored"
            out.entries.append(SitemapEntry(line))
        if not chunk:
            return None if out.entries else "not_a_sitemap: no URL line in the text"


def parse_sitemap(
    body: bytes, *, max_bytes: int = MAX_BYTES, max_urls: int = MAX_URLS
) -> SitemapFile:
    """Parse one sitemap file (see the module for the shapes and the caps).

    Args:
        body: the bytes fetched (gzip or not, XML or text).
        max_bytes: the cap on uncompressed bytes (``MAX_BYTES``, the protocol's).
        max_urls: the cap on entries (``MAX_URLS``, the protocol's).

    Returns:
        the entries read and the reason the file was refused or cut, if it was. Never
        raises: every hostile input is a ``SitemapFile`` with an ``error``.
    """
    source = _Uncompressed(body, max_bytes)
    out = _Progress()
    error: str | None
    try:
        start = source.peek(1024).lstrip(b"\xef\xbb\xbf \t\r\n")
        if start.startswith(b"<") or not start:
            error = _parse_xml(source, max_urls, out)
        else:
            error = _parse_text(source, max_urls, out)
    except _TooLarge:
        error = f"too_large: over {max_bytes} bytes uncompressed, the rest ignored"
    except _BadGzip as exc:
        error = f"bad_gzip: {exc}"
    except EntitiesForbidden as exc:
        out = _Progress()
        if exc.sysid is not None or exc.pubid is not None:
            error = f"xml_external: external entity {exc.name!r} refused"
        else:
            error = f"xml_entities: entity declaration {exc.name!r} refused"
    except ExternalReferenceForbidden as exc:
        out = _Progress()
        error = f"xml_external: external reference {str(exc.sysid or exc.pubid)[:80]!r} refused"
    except DTDForbidden as exc:
        out = _Progress()
        error = f"xml_dtd: document type declaration {exc.name!r} refused"
    except ParseError as exc:
        error = f"malformed: {exc}"[:200]
    return SitemapFile(out.kind, tuple(out.entries), error, out.skipped, source.count)


def declared_sitemaps(body: bytes, *, limit: int = MAX_DECLARED) -> tuple[str, ...]:
    """The ``Sitemap:`` URLs of a robots.txt body, in file order, each once, at most
    ``limit``: lines whose field is ``sitemap`` (case-insensitive, anywhere in the file:
    the record is not part of any group, RFC 9309 §2.2.4; protego's ``sitemaps`` reads
    the same lines) with an absolute http(s) URL. Lines are read as for the groups
    (``core.robots_policy.robots_lines``: CR, LF, CR LF; control characters removed).
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
        origin: ``scheme://host[:port]`` of the sitemap (``core.urls.origin``).
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
    "MAX_URLS",
    "Location",
    "SitemapEntry",
    "SitemapFile",
    "SitemapKind",
    "declared_sitemaps",
    "parse_lastmod",
    "parse_sitemap",
]
