"""README.md as the front door and the docs it points to (issue #25 item 1): the quick
start within the first screen, README short, and every relative link and anchor in
README.md and docs/*.md naming a file and heading that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]

#: ``[text](target)`` and ``![alt](target)`` in Markdown prose.
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _prose(path: Path) -> str:
    """``path``'s text without its fenced code blocks (a ``](`` there is code)."""
    return re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)


def _anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lowercase, punctuation dropped but ``-`` and
    ``_``, spaces made ``-`` (as github.com renders Markdown)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_anchor(m) for m in re.findall(r"^#+ (.*)$", _prose(path), flags=re.M)}


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_relative_link_names_a_file_and_heading_that_exist() -> None:
    checked = 0
    for page in _pages():
        for target in _LINK.findall(_prose(page)):
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (page.parent / file_part).resolve() if file_part else page
            assert linked.is_file(), f"{page.name}: {target} names no file"
            if anchor:
                assert anchor in _anchors(linked), f"{page.name}: {target} names no heading"
            checked += 1
    assert checked >= 20


def test_the_anchor_of_a_heading_is_githubs() -> None:
    assert _anchor("Many workers (Redis)") == "many-workers-redis"
    assert _anchor("Quick start: crawl your own site") == "quick-start-crawl-your-own-site"
    assert _anchor("`crawldeck crawl`") == "crawldeck-crawl"


def test_readme_starts_with_the_two_commands_then_the_quick_start() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 300
    first = "\n".join(lines[:60])
    assert lines[0] == "# crawldeck"
    assert first.index(".venv/bin/crawldeck demo") < first.index(".venv/bin/pytest")
    assert first.index(".venv/bin/pytest") < first.index("## Quick start")
    # issue #25: exactly five commands from nothing to a crawl, its broken links, its mirror
    quick = first[first.index("## Quick start") :]
    block = quick[quick.index("```sh\n") + 6 : quick.index("\n```", quick.index("```sh"))]
    commands = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert commands == [
        "python3 -m venv .venv && .venv/bin/pip install -q -e .",
        ".venv/bin/crawldeck crawl https://www.example.org/ --max-pages 200",
        ".venv/bin/crawldeck stats crawl.db",
        ".venv/bin/crawldeck links crawl.db --broken",
        ".venv/bin/crawldeck export crawl.db --mirror site --convert-links",
    ]
    whole = "\n".join(lines)
    for command in (
        ".venv/bin/crawldeck show crawl.db https://www.example.org/",
        ".venv/bin/datasette crawl.db -m crawl.db.metadata.json",
        ".venv/bin/crawldeck crawl https://www.example.org/ --max-pages 1000",
    ):
        assert command in whole, command
    assert whole.index("## Quick start") < whole.index("## Many workers (Redis)")


def test_ci_lints_then_runs_the_readmes_test_command_word_for_word() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    test_command = next(
        line
        for line in readme.splitlines()
        if line.endswith("&& .venv/bin/pytest -n 4 --dist worksteal")
    )
    steps = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in steps
    for lint in (".venv/bin/ruff check .", ".venv/bin/ruff format --check .",
                 ".venv/bin/mypy crawldeck/core"):  # fmt: skip
        assert lint in steps, lint
        assert steps.index(lint) < steps.index(test_command), lint
