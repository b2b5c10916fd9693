"""Seeds files: comments, blank lines, bad lines reported with their numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawldeck.core.errors import SeedError
from crawldeck.core.policy.seeds import SeedProblem, parse_seeds, read_seeds, schemeless


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
    # the reason already names the URL: not repeated
    assert str(problems[0]) == (
        "line 5: unsupported scheme 'mailto' in 'mailto:x@example.com' "
        "(only http and https are crawled)"
    )


def test_a_line_without_a_scheme_that_names_a_host_is_http() -> None:
    """As on the command line and in wget's ``-i`` file (issue #25 trial 8: a seeds
    file refused ``127.0.0.1:8772/from-sitemap``); a file name or a word is no host."""
    urls, problems = parse_seeds(
        "127.0.0.1:8772/from-sitemap\nexample.org\nlocalhost:8080/x\nseeds.txt\nhello\n"
    )
    assert urls == [
        "http://127.0.0.1:8772/from-sitemap", "http://example.org/", "http://localhost:8080/x",
    ]  # fmt: skip
    assert [(p.line, p.text) for p in problems] == [(4, "seeds.txt"), (5, "hello")]
    assert schemeless("[::1]:8080/a") == "http://[::1]:8080/a"
    assert schemeless("https://a.org/") is None


def test_only_newline_ends_a_line() -> None:
    # U+2028, U+2029, U+0085, form feed, vertical tab, FS/GS/RS and a lone CR are no line
    # breaks: str.splitlines() took them for some and later lines got wrong numbers.
    text = (
        "http://a.example/1\u2028x\n"
        "http://b.example/2\x0c\x0b\x1c\x1d\x1e\x85\u2029y\r\n"
        "http://c.example/3\rz\r\n"
        "\r\n"
        "mailto:bad\r\n"
        "ftp://bad/\n"
    )
    urls, problems = parse_seeds(text)
    assert urls == [
        "http://a.example/1%E2%80%A8x",
        "http://b.example/2%0C%0B%1C%1D%1E%C2%85%E2%80%A9y",
        "http://c.example/3z",  # a CR inside a URL is removed (WHATWG URL §4.4)
    ]
    assert [(p.line, p.text) for p in problems] == [(5, "mailto:bad"), (6, "ftp://bad/")]


def test_long_refused_line_is_cut_in_the_report() -> None:
    line = "mailto:" + "x" * 10_000_000
    urls, problems = parse_seeds("http://ok.example/\n" + line + "\n")
    assert urls == ["http://ok.example/"]
    [problem] = problems
    assert problem.line == 2
    report = str(problem)
    assert len(report) < 500
    assert report.startswith("line 2: unsupported scheme 'mailto' in 'mailto:xxx")
    assert report.endswith(": 'mailto:" + "x" * 193 + "…'")
    assert "\n" not in report


def test_short_text_not_named_by_the_reason_is_shown() -> None:
    problem = SeedProblem(3, "http://[::1", "cannot parse it")
    assert str(problem) == "line 3: cannot parse it: 'http://[::1'"
    assert str(SeedProblem(4, "x" * 300, "bad")) == f"line 4: bad: '{'x' * 200}…'"


def test_files(tmp_path: Path) -> None:
    with pytest.raises(SeedError, match="does not exist"):
        read_seeds(tmp_path / "nope.txt")
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(SeedError, match="is not a text file"):
        read_seeds(binary)
    mixed = tmp_path / "mixed.txt"
    mixed.write_bytes(b"http://a.example/\nhttp://b.example/caf\xe9\nhttp://c.example/\n")
    urls, problems = read_seeds(mixed)
    assert urls == ["http://a.example/", "http://c.example/"]
    assert [str(p) for p in problems] == ["line 2: not UTF-8 text: 'http://b.example/caf\ufffd'"]
    bom = tmp_path / "bom.txt"
    bom.write_bytes("\ufeffhttp://example.com/\n".encode())
    assert read_seeds(bom) == (["http://example.com/"], [])
