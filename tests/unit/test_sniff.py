"""core.policy.sniff against the WHATWG MIME Sniffing Standard's own tables and steps.

The hexadecimal rows below are copied from the standard (review draft 2026-07):
§7.1 step 1 (scriptable types), §7.1 step 2, §6.1 (images), §6.2 (audio and video),
§6.4 (archives). Pure logic: no network.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.policy import sniff
from crawldeck.core.policy.sniff import Pattern, Supplied

WS = "whitespace"
NONE = "none"

# (byte pattern, pattern mask, leading bytes ignored, computed MIME type), in order.
SPEC_7_1_STEP_1 = [
    ("3C 21 44 4F 43 54 59 50 45 20 48 54 4D 4C TT",
     "FF FF DF DF DF DF DF DF DF FF DF DF DF DF FF", WS, "text/html"),
    ("3C 48 54 4D 4C TT", "FF DF DF DF DF FF", WS, "text/html"),
    ("3C 48 45 41 44 TT", "FF DF DF DF DF FF", WS, "text/html"),
    ("3C 53 43 52 49 50 54 TT", "FF DF DF DF DF DF DF FF", WS, "text/html"),
    ("3C 49 46 52 41 4D 45 TT", "FF DF DF DF DF DF DF FF", WS, "text/html"),
    ("3C 48 31 TT", "FF DF FF FF", WS, "text/html"),
    ("3C 44 49 56 TT", "FF DF DF DF FF", WS, "text/html"),
    ("3C 46 4F 4E 54 TT", "FF DF DF DF DF FF", WS, "text/html"),
    ("3C 54 41 42 4C 45 TT", "FF DF DF DF DF DF FF", WS, "text/html"),
    ("3C 41 TT", "FF DF FF", WS, "text/html"),
    ("3C 53 54 59 4C 45 TT", "FF DF DF DF DF DF FF", WS, "text/html"),
    ("3C 54 49 54 4C 45 TT", "FF DF DF DF DF DF FF", WS, "text/html"),
    ("3C 42 TT", "FF DF FF", WS, "text/html"),
    ("3C 42 4F 44 59 TT", "FF DF DF DF DF FF", WS, "text/html"),
    ("3C 42 52 TT", "FF DF DF FF", WS, "text/html"),
    ("3C 50 TT", "FF DF FF", WS, "text/html"),
    ("3C 21 2D 2D TT", "FF FF FF FF FF", WS, "text/html"),
    ("3C 3F 78 6D 6C", "FF FF FF FF FF", WS, "text/xml"),
    ("25 50 44 46 2D", "FF FF FF FF FF", NONE, "application/pdf"),
]  # fmt: skip
SPEC_7_1_STEP_2 = [
    ("25 21 50 53 2D 41 64 6F 62 65 2D", "FF FF FF FF FF FF FF FF FF FF FF", NONE,
     "application/postscript"),
    ("FE FF 00 00", "FF FF 00 00", NONE, "text/plain"),
    ("FF FE 00 00", "FF FF 00 00", NONE, "text/plain"),
    ("EF BB BF 00", "FF FF FF 00", NONE, "text/plain"),
]  # fmt: skip
SPEC_6_1 = [
    ("00 00 01 00", "FF FF FF FF", NONE, "image/x-icon"),
    ("00 00 02 00", "FF FF FF FF", NONE, "image/x-icon"),
    ("42 4D", "FF FF", NONE, "image/bmp"),
    ("47 49 46 38 37 61", "FF FF FF FF FF FF", NONE, "image/gif"),
    ("47 49 46 38 39 61", "FF FF FF FF FF FF", NONE, "image/gif"),
    ("52 49 46 46 00 00 00 00 57 45 42 50 56 50", "FF FF FF FF 00 00 00 00 FF FF FF FF FF FF",
     NONE, "image/webp"),
    ("89 50 4E 47 0D 0A 1A 0A", "FF FF FF FF FF FF FF FF", NONE, "image/png"),
    ("FF D8 FF", "FF FF FF", NONE, "image/jpeg"),
]  # fmt: skip
SPEC_6_2 = [
    ("46 4F 52 4D 00 00 00 00 41 49 46 46", "FF FF FF FF 00 00 00 00 FF FF FF FF", NONE,
     "audio/aiff"),
    ("49 44 33", "FF FF FF", NONE, "audio/mpeg"),
    ("4F 67 67 53 00", "FF FF FF FF FF", NONE, "application/ogg"),
    ("4D 54 68 64 00 00 00 06", "FF FF FF FF FF FF FF FF", NONE, "audio/midi"),
    ("52 49 46 46 00 00 00 00 41 56 49 20", "FF FF FF FF 00 00 00 00 FF FF FF FF", NONE,
     "video/avi"),
    ("52 49 46 46 00 00 00 00 57 41 56 45", "FF FF FF FF 00 00 00 00 FF FF FF FF", NONE,
     "audio/wave"),
]  # fmt: skip
SPEC_6_4 = [
    ("1F 8B 08", "FF FF FF", NONE, "application/x-gzip"),
    ("50 4B 03 04", "FF FF FF FF", NONE, "application/zip"),
    ("52 61 72 21 1A 07 00", "FF FF FF FF FF FF FF", NONE, "application/x-rar-compressed"),
]


def spec_rows(table: list[tuple[str, str, str, str]]) -> list[Pattern]:
    """The standard's rows as ``Pattern``s, a ``TT`` giving one row per 0x20 and 0x3E."""
    rows = []
    for hex_pattern, hex_mask, ignored, mime in table:
        skip = frozenset(b"\t\n\x0c\r ") if ignored == WS else frozenset()
        mask = bytes.fromhex(hex_mask)
        if hex_pattern.endswith(" TT"):
            head = bytes.fromhex(hex_pattern[:-3])
            rows += [Pattern(head + tt, mask, skip, mime) for tt in (b" ", b">")]
        else:
            rows.append(Pattern(bytes.fromhex(hex_pattern), mask, skip, mime))
    return rows


@pytest.mark.parametrize(
    ("table", "ours"),
    [
        (SPEC_7_1_STEP_1, sniff.SCRIPTABLE_PATTERNS),
        (SPEC_7_1_STEP_2, sniff.PLAIN_PATTERNS),
        (SPEC_6_1, sniff.IMAGE_PATTERNS),
        (SPEC_6_2, sniff.AUDIO_VIDEO_PATTERNS),
        (SPEC_6_4, sniff.ARCHIVE_PATTERNS),
    ],
    ids=["7.1-step-1", "7.1-step-2", "6.1-image", "6.2-audio-video", "6.4-archive"],
)
def test_the_tables_are_the_standards(
    table: list[tuple[str, str, str, str]], ours: tuple[Pattern, ...]
) -> None:
    assert list(ours) == spec_rows(table)


def test_byte_classes_are_section_3s() -> None:
    assert {0x09, 0x0A, 0x0C, 0x0D, 0x20} == sniff.WHITESPACE_BYTES
    assert {0x20, 0x3E} == sniff.TAG_TERMINATING_BYTES
    binary = {
        b for b in range(256) if b <= 0x08 or b == 0x0B or 0x0E <= b <= 0x1A or 0x1C <= b <= 0x1F
    }
    assert binary == sniff.BINARY_DATA_BYTES
    assert sniff.RESOURCE_HEADER_BYTES == 1445  # §5.2


TAGS = ["<!DOCTYPE HTML", "<HTML", "<HEAD", "<SCRIPT", "<IFRAME", "<H1", "<DIV", "<FONT",
        "<TABLE", "<A", "<STYLE", "<TITLE", "<B", "<BODY", "<BR", "<P", "<!--"]  # fmt: skip


@pytest.mark.parametrize("tag", TAGS)
def test_every_html_pattern_after_whitespace_in_any_case(tag: str) -> None:
    for spelling in (tag, tag.lower(), tag.title()):
        for lead in ("", " \t\r\n\x0c", "\n\n"):
            for end in (" ", ">"):
                header = f"{lead}{spelling}{end}rest".encode()
                assert sniff.identify_unknown(header, sniff_scriptable=True) == "text/html"
        # not followed by a tag-terminating byte: no pattern matches (text, no binary)
        for end in ("x>", "\n", "/>", ""):
            header = f"{spelling}{end}".encode()
            assert sniff.identify_unknown(header, sniff_scriptable=True) == "text/plain"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (b"<htmlx>", "text/plain"),
        (b"<bx>", "text/plain"),
        (b"<html", "text/plain"),  # ends before a tag-terminating byte
        (b"\xef\xbb\xbf<html>", "text/plain"),  # a BOM is not whitespace: step 2's UTF-8 BOM
        (b"\x0b<html>", "application/octet-stream"),  # VT is not whitespace but binary
        (b"  <?xml version='1.0'?>", "text/xml"),
        (b"<?XML", "text/plain"),  # case-sensitive (mask FF)
        (b"%PDF-1.7\n%\xe2\xe3", "application/pdf"),
        (b" %PDF-1.7", "text/plain"),  # no leading bytes ignored
        (b"%!PS-Adobe-3.0\n", "application/postscript"),
        (b"\xfe\xff\x00<", "text/plain"),
        (b"\xff\xfe<\x00", "text/plain"),
        (b"\xef\xbb\xbfhello", "text/plain"),
        (b"\x00\x00\x01\x00\x01\x00", "image/x-icon"),
        (b"BM\x00\x00", "image/bmp"),
        (b"GIF89a\x01\x00", "image/gif"),
        (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "image/png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        (b"ID3\x04\x00", "audio/mpeg"),
        (b"OggS\x00\x02", "application/ogg"),
        (b"RIFF\x10\x00\x00\x00WAVEfmt ", "audio/wave"),
        (b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp41isom", "video/mp4"),
        (b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2", "application/octet-stream"),
        (b"\x1f\x8b\x08\x00", "application/x-gzip"),
        (b"PK\x03\x04\x14\x00", "application/zip"),
        (b"Rar!\x1a\x07\x00", "application/x-rar-compressed"),
        (b"plain words, tabs\tand\r\nnew lines\x0c\x1b[0m", "text/plain"),  # ESC is not binary
        (b"almost text\x00", "application/octet-stream"),
        (b"", "text/plain"),
    ],
)
def test_identify_unknown(header: bytes, expected: str) -> None:
    assert sniff.identify_unknown(header, sniff_scriptable=True) == expected


@pytest.mark.parametrize("header", [b"<html>", b"<?xml", b"%PDF-1.4"])
def test_without_sniff_scriptable_no_scriptable_type(header: bytes) -> None:
    assert sniff.identify_unknown(header, sniff_scriptable=False) == "text/plain"


SCRIPTABLE = {"text/html", "text/xml", "application/pdf"}


@given(st.binary(max_size=64))
def test_scriptable_types_only_with_the_flag(header: bytes) -> None:
    assert sniff.identify_unknown(header, sniff_scriptable=False) not in SCRIPTABLE
    assert sniff.text_or_binary(header) in ("text/plain", "application/octet-stream")  # §7.2


@given(st.binary(max_size=32), st.binary(min_size=1, max_size=8), st.binary(max_size=8))
def test_pattern_matching_is_section_6s(data: bytes, pattern: bytes, mask_seed: bytes) -> None:
    # The §6 algorithm written out step by step, against the implementation.
    mask = (mask_seed * len(pattern))[: len(pattern)] if mask_seed else b"\xff" * len(pattern)
    pattern = bytes(p & m for p, m in zip(pattern, mask, strict=True))
    ignored = frozenset(b" \n")
    expected = False
    if len(data) >= len(pattern):
        s = 0
        while s < len(data) and data[s] in ignored:
            s += 1
        expected = len(data) - s >= len(pattern) and all(
            data[s + p] & mask[p] == pattern[p] for p in range(len(pattern))
        )
    assert sniff.pattern_matches(data, pattern, mask, ignored) is expected


def test_a_mask_of_another_length_is_refused() -> None:
    with pytest.raises(ValueError, match="as long as its pattern"):
        sniff.pattern_matches(b"abc", b"ab", b"\xff", frozenset())


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (b"\xfe\xff\x00\x01", "text/plain"),
        (b"\xff\xfe\x01\x00", "text/plain"),
        (b"\xef\xbb\xbf\x00", "text/plain"),
        (b"hello\r\n", "text/plain"),
        (b"PK\x03\x04", "application/octet-stream"),
        (b"<html>\x00", "application/octet-stream"),
    ],
)
def test_text_or_binary_section_7_2(header: bytes, expected: str) -> None:
    assert sniff.text_or_binary(header) == expected


@pytest.mark.parametrize(
    ("value", "essence"),
    [
        ("text/html", "text/html"),
        ("Text/HTML; charset=UTF-8", "text/html"),
        ("  application/xhtml+xml  ", "application/xhtml+xml"),
        ("text/html;", "text/html"),
        ("text/html ;charset=x", "text/html"),
        ("*/*", "*/*"),
        ("html", None),
        ("text/", None),
        ("/html", None),
        ("text/ht ml", None),
        ("te xt/html", None),
        ("text/html, text/plain", None),
        ('"text/html"', None),
        ("tëxt/html", None),
        ("", None),
    ],
)
def test_parse_essence_section_4_4(value: str, essence: str | None) -> None:
    assert sniff.parse_essence(value) == essence


def test_supplied_type_is_the_last_content_type_section_5_1() -> None:
    assert sniff.supplied_mime_type(["text/plain", "text/html"]).essence == "text/html"
    assert sniff.supplied_mime_type(["text/html", "bogus"]).essence is None
    assert sniff.supplied_mime_type([]) == Supplied(None, False, False)
    for value in sorted(sniff.APACHE_BUG_VALUES):
        assert sniff.supplied_mime_type([value]).check_for_apache_bug
    for value in ["text/plain; charset=utf-8", "text/plain;charset=UTF-8", "text/plain "]:
        assert not sniff.supplied_mime_type([value]).check_for_apache_bug


@pytest.mark.parametrize(
    ("values", "nosniff"),
    [
        (["nosniff"], True),
        (["NoSniff"], True),
        ([" nosniff , other"], True),
        (["other, nosniff"], False),
        (["", "nosniff"], False),
        ([], False),
    ],
)
def test_determine_nosniff(values: list[str], nosniff: bool) -> None:
    assert sniff.determine_nosniff(values) is nosniff


@pytest.mark.parametrize(
    ("content_types", "nosniff", "header", "computed", "needs_header"),
    [
        (["text/html"], [], b"\x00\x01binary", "text/html", False),  # step 1
        (["image/svg+xml"], [], b"<html>", "image/svg+xml", False),  # step 1: XML type
        ([], [], b"<html>", "text/html", True),  # step 2: undefined
        (["unknown/unknown"], [], b"<p>x", "text/html", True),
        (["application/unknown"], [], b"%PDF-1.4", "application/pdf", True),
        (["*/*"], [], b"GIF87a", "image/gif", True),
        (["not a type"], [], b"<!-- c -->", "text/html", True),
        ([], ["nosniff"], b"<html>", "text/plain", True),  # sniff-scriptable unset
        (["application/zip"], [], b"<html>", "application/zip", False),  # step 9
        (["text/plain"], [], b"\x00\x01", "application/octet-stream", True),  # step 4
        (["text/plain"], [], b"<html>", "text/plain", True),  # §7.2 never gives HTML
        (["text/plain"], ["nosniff"], b"\x00\x01", "text/plain", False),  # step 3
        (["text/plain; charset=utf-8"], [], b"\x00\x01", "text/plain", False),
    ],
)
def test_computed_mime_type_section_7(
    content_types: list[str], nosniff: list[str], header: bytes, computed: str, needs_header: bool
) -> None:
    supplied = sniff.supplied_mime_type(content_types, nosniff)
    assert supplied.needs_header is needs_header
    assert sniff.computed_mime_type(supplied, header) == computed
