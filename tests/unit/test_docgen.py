"""The generated references (issue #25 item 1): ``docs/config.md`` and ``docs/cli.md``
are what ``crawldeck.cli.docgen`` makes of ``core/config.py`` and the argument parser,
regenerated here in memory and compared with the files on disk."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from crawldeck.cli import docgen
from crawldeck.cli.parser import build_parser
from crawldeck.core.config import CrawlConfig

ROOT = Path(__file__).parents[2]


def test_the_references_on_disk_are_what_the_code_generates() -> None:
    stale = docgen.stale(ROOT / "docs")
    assert not stale, (
        f"{', '.join(p.name for p in stale)} in docs/ differ from the code: run "
        f"{docgen.REGENERATE} and commit the result"
    )


def test_the_config_reference_has_one_row_per_key_with_its_default() -> None:
    text = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    keys = re.findall(r"^\| `(\w+)`", text, flags=re.MULTILINE)
    grouped = re.findall(r"^\| `\w+`, `(\w+)`(?:, `(\w+)`)?", text, flags=re.MULTILINE)
    named = keys + [k for group in grouped for k in group if k]
    assert sorted(named) == sorted(f.name for f in fields(CrawlConfig))
    assert "| `delay_ms` | 1000 | >= 0 | the default politeness delay of a host" in text
    assert "| `connect_timeout_ms`, `read_timeout_ms`, `total_timeout_ms` | 10000, 30000, " in text
    assert "| `render_block_resources` | `image`, `font`, `media` | — |" in text


def test_a_key_without_a_docstring_entry_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = CrawlConfig.__doc__ or ""
    without = re.sub(r"\n {8}delay_ms: .*?(?=\n {8}\w)", "", doc, count=1, flags=re.DOTALL)
    assert without != doc
    monkeypatch.setattr(CrawlConfig, "__doc__", without)
    with pytest.raises(ValueError, match=r"no Attributes entry for \['delay_ms'\]"):
        docgen.config_block()


def test_attribute_entries_join_lines_and_groups() -> None:
    doc = """Settings.

    Attributes:
        a_ms, b_ms: the first
            and ``second`` line.
        c: one | two.

    Raises:
        ValueError: never.
    """
    assert docgen.attribute_entries(doc) == [
        (["a_ms", "b_ms"], "the first and `second` line."),
        (["c"], "one | two."),
    ]


def test_the_cli_reference_lists_every_flag_of_every_command() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    for name, command in parser.commands.items():
        section = text.split(f"## `crawldeck {name}`\n", 1)[1].split("\n## ", 1)[0]
        for action in command._actions:
            for option in action.option_strings:
                assert f"`{option}" in section, (name, option)
        assert command.epilog is not None
        assert command.epilog in section, name
    assert "- `--scope {host,domain,any}`: which links to follow" in text
    assert "- `-o FILE`, `--output FILE`: when the crawl ends" in text


def test_regenerate_replaces_only_the_block() -> None:
    begin = docgen._BEGIN.format(what="x")
    text = f"# Title\n\nprose\n\n{begin}\n\nold\n\n{docgen._END}\n\nmore prose\n"
    assert docgen.regenerate(text, "x", "new") == (
        f"# Title\n\nprose\n\n{begin}\n\nnew\n\n{docgen._END}\n\nmore prose\n"
    )
    with pytest.raises(ValueError, match="markers"):
        docgen.regenerate("# no markers\n", "x", "new")


def test_check_exits_1_on_a_stale_file_and_names_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in docgen.TARGETS:
        (tmp_path / name).write_text((ROOT / "docs" / name).read_text(encoding="utf-8"))
    monkeypatch.setattr(docgen, "DOCS", tmp_path)
    assert docgen.main(["--check"]) == 0
    cli = tmp_path / "cli.md"
    cli.write_text(cli.read_text().replace("which links to follow", "which links"))
    assert docgen.main(["--check"]) == 1
    assert capsys.readouterr().out == f"{cli} is stale: run {docgen.REGENERATE}\n"
    assert docgen.main([]) == 0
    assert docgen.main(["--check"]) == 0
    assert "which links to follow" in cli.read_text()
