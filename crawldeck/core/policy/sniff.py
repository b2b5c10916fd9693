"""The computed MIME type of an HTTP response: WHATWG MIME Sniffing, as a browser does.

Pure functions on header values and the first bytes of a body; ``core.net.fetcher`` calls
them once the response headers are in. Section numbers are those of the WHATWG MIME
Sniffing Living Standard (https://mimesniff.spec.whatwg.org/, review draft 2026-07):

* §5.1 the *supplied* MIME type is the last ``Content-Type`` value, parsed (§4.4);
  one that does not parse is undefined (``supplied_mime_type``).
* §5.2 the *resource header* is the first ``RESOURCE_HEADER_BYTES`` (1445) bytes of
  the body (after content codings are undone), or the whole body when it is shorter.
* §7 the *computed* MIME type (``computed_mime_type``): an HTML or XML type is kept;
  an undefined or "unknown" type (``unknown/unknown``, ``application/unknown``,
  ``*/*``) is sniffed by the rules for identifying an unknown MIME type (§7.1,
  ``identify_unknown``); ``X-Content-Type-Options: nosniff`` (the no-sniff flag, the
  Fetch Standard's "determine nosniff") keeps any other supplied type and turns off the
  sniffing of scriptable types (HTML, XML, PDF); the four ``text/plain`` values old
  Apache servers send for files they do not know (the check-for-apache-bug flag,
  §5.1) are told text from binary (§7.2, ``text_or_binary``).

Not done: §7 steps 5-8 (telling one image or audio type from another when the server
already said image/audio/video: the crawler does not need the difference), and in
§7.1 the WebM and MP3-without-ID3 signatures (§6.2.2, §6.2.3), which are algorithms
rather than patterns; such files are reported ``application/octet-stream`` (their
bytes hold binary data bytes), never HTML.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: §5.2: the size of the resource header, bytes.
RESOURCE_HEADER_BYTES = 1445

#: §3: whitespace bytes (0xWS): HT, LF, FF, CR, SP.
WHITESPACE_BYTES = frozenset(b"\t\n\x0c\r ")
#: §3: tag-terminating bytes (0xTT): SP and ">".
TAG_TERMINATING_BYTES = frozenset(b" >")
#: §3: binary data bytes: 0x00-0x08, 0x0B, 0x0E-0x1A, 0x1C-0x1F.
BINARY_DATA_BYTES = frozenset([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])

#: §7 step 2: supplied essences that mean "the server does not know".
UNKNOWN_ESSENCES = frozenset({"unknown/unknown", "application/unknown", "*/*"})

#: §5.1: the exact Content-Type values of the Apache bug (check-for-apache-bug flag).
APACHE_BUG_VALUES = frozenset(
    {
        "text/plain",
        "text/plain; charset=ISO-8859-1",
        "text/plain; charset=iso-8859-1",
        "text/plain; charset=UTF-8",
    }
)

#: §3: HTTP token code points (the characters a type or subtype may hold).
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
#: Infra: HTTP whitespace (§4.4 strips it around the value and the subtype).
_HTTP_WHITESPACE = "\t\n\r "


@dataclass(frozen=True, slots=True)
class Pattern:
    """One row of a §6/§7.1 pattern table.

    Attributes:
        pattern: the byte pattern.
        mask: the pattern mask, as long as ``pattern`` (0xFF: the byte must be equal,
            0xDF: equal ignoring ASCII case, 0x00: any byte).
        ignored: leading bytes to skip before matching (``WHITESPACE_BYTES`` or none).
        mime: the MIME type a match gives.
    """

    pattern: bytes
    mask: bytes
    ignored: frozenset[int]
    mime: str

    def matches(self, data: bytes) -> bool:
        """The pattern matching algorithm of §6 on ``data`` (a resource header)."""
        return pattern_matches(data, self.pattern, self.mask, self.ignored)


def pattern_matches(data: bytes, pattern: bytes, mask: bytes, ignored: frozenset[int]) -> bool:
    """§6, the pattern matching algorithm: whether ``data``, after its leading bytes in
    ``ignored``, starts with ``pattern`` under ``mask``.

    ``data`` shorter than ``pattern`` never matches; nor does ``data`` whose bytes after
    the ignored ones are fewer than the pattern (the standard's loop would read past the
    end there). Raises ``ValueError`` when ``mask`` and ``pattern`` differ in length
    (the standard's assertion).
    """
    if len(mask) != len(pattern):
        raise ValueError("a pattern mask must be as long as its pattern")
    if len(data) < len(pattern):
        return False
    s = 0
    while s < len(data) and data[s] in ignored:
        s += 1
    if len(data) - s < len(pattern):
        return False
    return all(data[s + p] & mask[p] == pattern[p] for p in range(len(pattern)))


def _rows(
    hex_pattern: str, hex_mask: str, mime: str, ignored: frozenset[int] = frozenset()
) -> list[Pattern]:
    """Table rows from the standard's hexadecimal notation; a final ``TT`` (a
    tag-terminating byte, mask FF) becomes one row per such byte."""
    mask = bytes.fromhex(hex_mask)
    if hex_pattern.endswith(" TT"):
        head = bytes.fromhex(hex_pattern[:-3])
        return [
            Pattern(head + bytes([tt]), mask, ignored, mime) for tt in sorted(TAG_TERMINATING_BYTES)
        ]
    return [Pattern(bytes.fromhex(hex_pattern), mask, ignored, mime)]


_WS = WHITESPACE_BYTES

#: §7.1 step 1, the scriptable types (sniffed only with the sniff-scriptable flag).
SCRIPTABLE_PATTERNS: tuple[Pattern, ...] = tuple(
    row
    for args in (
        ("3C 21 44 4F 43 54 59 50 45 20 48 54 4D 4C TT",
         "FF FF DF DF DF DF DF DF DF FF DF DF DF DF FF", "text/html", _WS),  # <!DOCTYPE HTML
        ("3C 48 54 4D 4C TT", "FF DF DF DF DF FF", "text/html", _WS),  # <HTML
        ("3C 48 45 41 44 TT", "FF DF DF DF DF FF", "text/html", _WS),  # <HEAD
        ("3C 53 43 52 49 50 54 TT", "FF DF DF DF DF DF DF FF", "text/html", _WS),  # <SCRIPT
        ("3C 49 46 52 41 4D 45 TT", "FF DF DF DF DF DF DF FF", "text/html", _WS),  # <IFRAME
        ("3C 48 31 TT", "FF DF FF FF", "text/html", _WS),  # <H1
        ("3C 44 49 56 TT", "FF DF DF DF FF", "text/html", _WS),  # <DIV
        ("3C 46 4F 4E 54 TT", "FF DF DF DF DF FF", "text/html", _WS),  # <FONT
        ("3C 54 41 42 4C 45 TT", "FF DF DF DF DF DF FF", "text/html", _WS),  # <TABLE
        ("3C 41 TT", "FF DF FF", "text/html", _WS),  # <A
        ("3C 53 54 59 4C 45 TT", "FF DF DF DF DF DF FF", "text/html", _WS),  # <STYLE
        ("3C 54 49 54 4C 45 TT", "FF DF DF DF DF DF FF", "text/html", _WS),  # <TITLE
        ("3C 42 TT", "FF DF FF", "text/html", _WS),  # <B
        ("3C 42 4F 44 59 TT", "FF DF DF DF DF FF", "text/html", _WS),  # <BODY
        ("3C 42 52 TT", "FF DF DF FF", "text/html", _WS),  # <BR
        ("3C 50 TT", "FF DF FF", "text/html", _WS),  # <P
        ("3C 21 2D 2D TT", "FF FF FF FF FF", "text/html", _WS),  # <!--
        ("3C 3F 78 6D 6C", "FF FF FF FF FF", "text/xml", _WS),  # <?xml
        ("25 50 44 46 2D", "FF FF FF FF FF", "application/pdf"),  # %PDF-
    )
    for row in _rows(*args)
)  # fmt: skip

#: §7.1 step 2: PostScript and the byte order marks.
PLAIN_PATTERNS: tuple[Pattern, ...] = tuple(
    row
    for args in (
        ("25 21 50 53 2D 41 64 6F 62 65 2D", "FF FF FF FF FF FF FF FF FF FF FF",
         "application/postscript"),  # %!PS-Adobe-
        ("FE FF 00 00", "FF FF 00 00", "text/plain"),  # UTF-16BE BOM
        ("FF FE 00 00", "FF FF 00 00", "text/plain"),  # UTF-16LE BOM
        ("EF BB BF 00", "FF FF FF 00", "text/plain"),  # UTF-8 BOM
    )
    for row in _rows(*args)
)  # fmt: skip

#: §6.1, the image type pattern matching algorithm.
IMAGE_PATTERNS: tuple[Pattern, ...] = tuple(
    row
    for args in (
        ("00 00 01 00", "FF FF FF FF", "image/x-icon"),  # Windows icon
        ("00 00 02 00", "FF FF FF FF", "image/x-icon"),  # Windows cursor
        ("42 4D", "FF FF", "image/bmp"),  # BM
        ("47 49 46 38 37 61", "FF FF FF FF FF FF", "image/gif"),  # GIF87a
        ("47 49 46 38 39 61", "FF FF FF FF FF FF", "image/gif"),  # GIF89a
        ("52 49 46 46 00 00 00 00 57 45 42 50 56 50",
         "FF FF FF FF 00 00 00 00 FF FF FF FF FF FF", "image/webp"),  # RIFF....WEBPVP
        ("89 50 4E 47 0D 0A 1A 0A", "FF FF FF FF FF FF FF FF", "image/png"),
        ("FF D8 FF", "FF FF FF", "image/jpeg"),
    )
    for row in _rows(*args)
)  # fmt: skip

#: §6.2, the table of the audio or video type pattern matching algorithm.
AUDIO_VIDEO_PATTERNS: tuple[Pattern, ...] = tuple(
    row
    for args in (
        ("46 4F 52 4D 00 00 00 00 41 49 46 46",
         "FF FF FF FF 00 00 00 00 FF FF FF FF", "audio/aiff"),  # FORM....AIFF
        ("49 44 33", "FF FF FF", "audio/mpeg"),  # ID3
        ("4F 67 67 53 00", "FF FF FF FF FF", "application/ogg"),  # OggS NUL
        ("4D 54 68 64 00 00 00 06", "FF FF FF FF FF FF FF FF", "audio/midi"),  # MThd
        ("52 49 46 46 00 00 00 00 41 56 49 20",
         "FF FF FF FF 00 00 00 00 FF FF FF FF", "video/avi"),  # RIFF....AVI
        ("52 49 46 46 00 00 00 00 57 41 56 45",
         "FF FF FF FF 00 00 00 00 FF FF FF FF", "audio/wave"),  # RIFF....WAVE
    )
    for row in _rows(*args)
)  # fmt: skip

#: §6.4, the archive type pattern matching algorithm.
ARCHIVE_PATTERNS: tuple[Pattern, ...] = tuple(
    row
    for args in (
        ("1F 8B 08", "FF FF FF", "application/x-gzip"),
        ("50 4B 03 04", "FF FF FF FF", "application/zip"),  # PK ETX EOT
        ("52 61 72 21 1A 07 00", "FF FF FF FF FF FF FF", "application/x-rar-compressed"),
    )
    for row in _rows(*args)
)  # fmt: skip


def matches_mp4(data: bytes) -> bool:
    """§6.2.1, the signature for MP4: an ``ftyp`` box whose major or a compatible
    brand starts with ``mp4``."""
    length = len(data)
    if length < 12:
        return False
    box_size = int.from_bytes(data[0:4], "big")
    if length < box_size or box_size % 4 != 0:
        return False
    if data[4:8] != b"ftyp":
        return False
    if data[8:11] == b"mp4":
        return True
    return any(data[at : at + 3] == b"mp4" for at in range(16, box_size, 4))


def _first_match(rows: Sequence[Pattern], data: bytes) -> str | None:
    return next((row.mime for row in rows if row.matches(data)), None)


def identify_unknown(header: bytes, *, sniff_scriptable: bool) -> str:
    """§7.1, the rules for identifying an unknown MIME type, on a resource header.

    Args:
        header: the resource header (the first bytes of the decoded body, §5.2).
        sniff_scriptable: look for HTML, XML and PDF first (§7.1 step 1); the standard
            sets it to the inverse of the no-sniff flag (§7 step 2).

    Returns:
        The computed MIME type: ``text/html``, ``text/xml``, ``application/pdf`` (only
        with ``sniff_scriptable``), ``application/postscript``, ``text/plain`` (a byte
        order mark, or no binary data byte), an image, audio, video or archive type
        (§6.1, §6.2, §6.4), else ``application/octet-stream``. Never raises.
    """
    if sniff_scriptable and (found := _first_match(SCRIPTABLE_PATTERNS, header)):
        return found
    for rows in (PLAIN_PATTERNS, IMAGE_PATTERNS, AUDIO_VIDEO_PATTERNS):
        if found := _first_match(rows, header):
            return found
    if matches_mp4(header):
        return "video/mp4"
    if found := _first_match(ARCHIVE_PATTERNS, header):
        return found
    if not BINARY_DATA_BYTES.intersection(header):
        return "text/plain"
    return "application/octet-stream"


def text_or_binary(header: bytes) -> str:
    """§7.2, the rules for distinguishing if a resource is text or binary: ``text/plain``
    for a UTF-16 or UTF-8 byte order mark or no binary data byte, else
    ``application/octet-stream`` (never a scriptable type). Never raises."""
    if header[:2] in (b"\xfe\xff", b"\xff\xfe") or header[:3] == b"\xef\xbb\xbf":
        return "text/plain"
    if not BINARY_DATA_BYTES.intersection(header):
        return "text/plain"
    return "application/octet-stream"


def parse_essence(value: str) -> str | None:
    """The essence (``type/subtype``, ASCII-lowercased) of a MIME type string, or
    ``None`` when it does not parse: §4.4 "parse a MIME type" up to its parameters,
    which the essence does not need.

    ``"Text/HTML; charset=UTF-8"`` -> ``"text/html"``; ``"html"``, ``"text/"``,
    ``"text/ht ml"``, ``""`` -> ``None``. Never raises.
    """
    value = value.strip(_HTTP_WHITESPACE)
    kind, slash, rest = value.partition("/")
    if not slash or not kind or not _TOKEN.issuperset(kind):
        return None
    subtype = rest.split(";", 1)[0].rstrip(_HTTP_WHITESPACE)
    if not subtype or not _TOKEN.issuperset(subtype):
        return None
    return f"{kind}/{subtype}".lower()


@dataclass(frozen=True, slots=True)
class Supplied:
    """The supplied MIME type of a response (§5.1) and the flags that go with it.

    Attributes:
        essence: the parsed essence of the last ``Content-Type`` value, ``None`` when
            the header is absent or its value does not parse (undefined).
        check_for_apache_bug: that value is exactly one of ``APACHE_BUG_VALUES``.
        no_sniff: ``X-Content-Type-Options: nosniff`` was sent (Fetch Standard,
            "determine nosniff").
    """

    essence: str | None
    check_for_apache_bug: bool
    no_sniff: bool

    @property
    def unknown(self) -> bool:
        """§7 step 2: undefined, or one of ``UNKNOWN_ESSENCES``."""
        return self.essence is None or self.essence in UNKNOWN_ESSENCES

    @property
    def needs_header(self) -> bool:
        """Whether the computed type depends on the resource header (§7 steps 1-4):
        an unknown type, or the Apache bug without no-sniff. An HTML or XML type
        never does."""
        if self.essence is not None and is_html_or_xml(self.essence):
            return False
        return self.unknown or (self.check_for_apache_bug and not self.no_sniff)


def is_html_or_xml(essence: str) -> bool:
    """§4.6: an HTML MIME type (``text/html``) or an XML MIME type (``text/xml``,
    ``application/xml``, any ``+xml`` subtype)."""
    return essence in ("text/html", "text/xml", "application/xml") or essence.endswith("+xml")


def determine_nosniff(values: Sequence[str]) -> bool:
    """The Fetch Standard's "determine nosniff": the first item of the ``X-Content-Type-Options``
    values (split on commas) is ``nosniff``, ASCII case-insensitively."""
    items = ",".join(values).split(",")
    return bool(values) and items[0].strip(_HTTP_WHITESPACE).lower() == "nosniff"


def supplied_mime_type(content_types: Sequence[str], nosniff: Sequence[str] = ()) -> Supplied:
    """§5.1, the supplied MIME type detection algorithm for a resource fetched by HTTP.

    Args:
        content_types: every ``Content-Type`` value of the response, in order (the
            last one is used).
        nosniff: every ``X-Content-Type-Options`` value, in order.

    Never raises.
    """
    last = content_types[-1] if content_types else None
    return Supplied(
        essence=None if last is None else parse_essence(last),
        check_for_apache_bug=last in APACHE_BUG_VALUES,
        no_sniff=determine_nosniff(nosniff),
    )


def computed_mime_type(supplied: Supplied, header: bytes) -> str:
    """§7, the MIME type sniffing algorithm, steps 1-4 and 9 (see the module docstring).

    Args:
        supplied: from ``supplied_mime_type``.
        header: the resource header (§5.2); read only when ``supplied.needs_header``.

    Returns:
        The computed MIME type's essence (``"text/html"``). Never raises.
    """
    essence = supplied.essence
    if essence is None or essence in UNKNOWN_ESSENCES:
        return identify_unknown(header, sniff_scriptable=not supplied.no_sniff)
    if is_html_or_xml(essence) or supplied.no_sniff or not supplied.check_for_apache_bug:
        return essence
    return text_or_binary(header)


__all__ = [
    "ARCHIVE_PATTERNS",
    "AUDIO_VIDEO_PATTERNS",
    "BINARY_DATA_BYTES",
    "IMAGE_PATTERNS",
    "PLAIN_PATTERNS",
    "RESOURCE_HEADER_BYTES",
    "SCRIPTABLE_PATTERNS",
    "TAG_TERMINATING_BYTES",
    "WHITESPACE_BYTES",
    "Pattern",
    "Supplied",
    "computed_mime_type",
    "determine_nosniff",
    "identify_unknown",
    "is_html_or_xml",
    "matches_mp4",
    "parse_essence",
    "pattern_matches",
    "supplied_mime_type",
    "text_or_binary",
]
