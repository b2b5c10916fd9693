"""Seeds files: comments, blank lines, bad lines reported with their numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import SeedError
from core.seeds import parse_seeds, read_seeds


def test_comments_blank_lines_and_bad_lines() -> None:
    text = (
        "# my seeds\n"
        "\n"
        "http://Example.com/a#frag\n"
        "   https://example.org/b   # trailing comment\n"
        "mailto:x@example.com\n"
        "http://example.com/a\n"
        "http://[::1\n"
    )
    urls, problems = parse_seeds(text)
    assert urls == ["http://example.com/a", "https://example.org/b"]
    assert [(p.line, p.text) for p in problems] == [
        (5, "mailto:x@example.com"),
        (7, "http://[::1"),
    ]
    assert all(p.reason and "\n" not in p.reason for p in problems)
    assert str(problems[0]).startswith("line 5: ")


def test_files(tmp_path: Path) -> None:
    with pytest.raises(SeedError, match="does not exist"):
        read_seeds(tmp_path / "nope.txt")
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(SeedError, match="is not UTF-8 text"):
        read_seeds(binary)
    bom = tmp_path / "bom.txt"
    bom.write_bytes("\ufeffhttp://example.com/\n".encode())
    assert read_seeds(bom) == (["http://example.com/"], [])
