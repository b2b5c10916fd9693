"""Reading a seeds file: one URL per line, ``#`` comments and blank lines ignored.

A bad line does not stop the crawl: it is reported with its line number and the
rest of the file is still used.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.errors import SeedError, UrlError
from core.urls import clean


@dataclass(frozen=True, slots=True)
class SeedProblem:
    """One rejected line of a seeds file.

    Attributes:
        line: 1-based line number.
        text: the line as written (stripped).
        reason: why it was rejected, one line (from ``UrlError``).
    """

    line: int
    text: str
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}: {self.text!r}"


def parse_seeds(text: str) -> tuple[list[str], list[SeedProblem]]:
    """Seed URLs (cleaned, in file order, duplicates kept once) and the rejected lines.

    A ``#`` starts a comment only at the start of a line or after white space, so a
    URL's own fragment marker is not taken for one.
    """
    urls: list[str] = []
    problems: list[SeedProblem] = []
    seen: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        cut = line.find(" #")
        if cut >= 0:
            line = line[:cut].strip()
        try:
            url = clean(line)
        except UrlError as exc:
            problems.append(SeedProblem(number, line, str(exc)))
            continue
        if url not in seen:
            seen.add(url)
            urls.append(url)
    return urls, problems


def read_seeds(path: Path) -> tuple[list[str], list[SeedProblem]]:
    """``parse_seeds`` of the file at ``path`` (UTF-8, a BOM allowed).

    Raises:
        SeedError: the file does not exist, cannot be read or is not UTF-8 text.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SeedError(f"seeds file {str(path)!r} does not exist") from None
    except UnicodeDecodeError:
        raise SeedError(f"seeds file {str(path)!r} is not UTF-8 text") from None
    except OSError as exc:
        raise SeedError(f"seeds file {str(path)!r} cannot be read: {exc.strerror}") from None
    return parse_seeds(text)
