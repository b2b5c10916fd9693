"""Reading a seeds file: one URL per line, ``#`` comments and blank lines ignored.

A bad line does not stop the crawl: it is reported with its line number and the
rest of the file is still used. Lines end at ``\n`` only (a ``\r`` before it is
dropped), so a form feed, vertical tab or U+2028 inside a line never shifts the line
numbers of the lines after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from crawldeck.core.errors import SeedError, UrlError
from crawldeck.core.policy.urls import clean

#: A URL's scheme at its start (``https://``).
URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
#: A seed without a scheme that names a host (``example.org``, ``www.example.org/docs``,
#: ``localhost:8080``, ``127.0.0.1:8000/x``, ``[::1]:8080``): taken as ``http://`` plus
#: it, as wget and ``scrapy fetch`` do. A name's last label has a letter (not ``1.5``).
_HOST_SEED = re.compile(
    r"(?:(?:[\w-]+\.)+[\w-]*[^\W\d_][\w-]*\.?|localhost|\d{1,3}(?:\.\d{1,3}){3}"
    r"|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?(?:[/?#]\S*)?"
)
#: Last labels that are a file's suffix, not a top-level domain: ``seeds.txt`` is a
#: seeds file given by a wrong name, not the host ``seeds.txt``.
_FILE_SUFFIXES = frozenset(
    {"txt", "csv", "tsv", "lst", "list", "toml", "json", "jsonl", "db", "sqlite", "xml", "gz"}
)


def schemeless(item: str) -> str | None:
    """``http://`` + ``item`` when ``item`` names a host without a scheme
    (``example.org/docs``, ``localhost:8080``, ``127.0.0.1:8772/x``), as wget and
    ``scrapy fetch`` take it; ``None`` for anything else (a URL with a scheme, a file
    name such as ``seeds.txt``, text that names no host). The result is not cleaned."""
    if URL_SCHEME.match(item) or not _HOST_SEED.fullmatch(item):
        return None
    host = re.split(r"[/?#]", item, maxsplit=1)[0]
    if not host.startswith("["):
        host = host.split(":", 1)[0]
    if host.rstrip(".").rsplit(".", 1)[-1].lower() in _FILE_SUFFIXES:
        return None
    return f"http://{item}"


#: How much of a refused line a report shows (a 10 MB line must not make a 10 MB
#: stderr line).
SHOW_CHARS = 200


@dataclass(frozen=True, slots=True)
class SeedProblem:
    """One rejected line of a seeds file.

    Attributes:
        line: 1-based line number.
        text: the line as written (stripped, comment removed).
        reason: why it was rejected, one line (from ``UrlError``).

    ``str()`` is one line: ``line N: REASON`` when the reason already quotes the text,
    else ``line N: REASON: 'TEXT'`` with the text cut to ``SHOW_CHARS`` characters
    and ``…``.
    """

    line: int
    text: str
    reason: str

    def __str__(self) -> str:
        if repr(self.text) in self.reason:
            return f"line {self.line}: {self.reason}"
        shown = self.text
        if len(shown) > SHOW_CHARS:
            shown = shown[:SHOW_CHARS] + "…"
        return f"line {self.line}: {self.reason}: {shown!r}"


def parse_seeds(text: str, guessed: list[int] | None = None) -> tuple[list[str], list[SeedProblem]]:
    """Seed URLs (cleaned, in file order, duplicates kept once) and the rejected lines;
    ``guessed`` gets the numbers of the lines taken as ``http://`` + it (see below).

    A ``#`` starts a comment only at the start of a line or after white space, so a
    URL's own fragment marker is not taken for one. Lines are split at ``\n`` only
    and a trailing ``\r`` is dropped (``str.splitlines`` would also split at form
    feeds, vertical tabs, U+2028... and number the following lines wrongly). A line
    without a scheme that names a host is ``http://`` + it (``schemeless``), as on the
    command line and in wget's ``-i`` file (issue #25 trial 8).
    """
    urls: list[str] = []
    problems: list[SeedProblem] = []
    seen: set[str] = set()
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r").strip()
        if not line or line.startswith("#"):
            continue
        cut = line.find(" #")
        if cut >= 0:
            line = line[:cut].strip()
        spelled = schemeless(line)
        try:
            url = clean(spelled or line)
        except UrlError as exc:
            problems.append(SeedProblem(number, line, str(exc)))
            continue
        if spelled is not None and guessed is not None:
            guessed.append(number)
        if url not in seen:
            seen.add(url)
            urls.append(url)
    return urls, problems


def read_seeds(path: Path, guessed: list[int] | None = None) -> tuple[list[str], list[SeedProblem]]:
    """``parse_seeds`` of the file at ``path`` (UTF-8, a BOM allowed; ``guessed`` as
    there).

    A line that is not UTF-8 is a problem of its own (``line N: not UTF-8 text``); the
    other lines are still read. A file that holds a NUL byte is not a text file.

    Raises:
        SeedError: the file does not exist, cannot be read, or is binary (a NUL byte).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SeedError(f"seeds file {str(path)!r} does not exist") from None
    except OSError as exc:
        raise SeedError(f"seeds file {str(path)!r} cannot be read: {exc.strerror}") from None
    if b"\0" in data:
        raise SeedError(f"seeds file {str(path)!r} is not a text file (it holds NUL bytes)")
    lines: list[str] = []
    bad: list[SeedProblem] = []
    for number, raw in enumerate(data.removeprefix(b"\xef\xbb\xbf").split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            shown = raw.decode("utf-8", "replace").strip()
            bad.append(SeedProblem(number, shown, "not UTF-8 text"))
            lines.append("")  # keeps the numbers of the lines after it
    urls, problems = parse_seeds("\n".join(lines), guessed)
    return urls, sorted(problems + bad, key=lambda p: p.line)
