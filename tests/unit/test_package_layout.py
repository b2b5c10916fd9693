"""One real package (issue #24 item 1): ``crawldeck/`` holds ``core/``, ``cli/``, ``tui/``
and ``localweb/`` as plain folders, so each module is one file on disk, found once by
``grep -R``, and the names tools derive from paths (mypy, grimp) are the import names.
"""

from __future__ import annotations

from pathlib import Path

import crawldeck.cli
import crawldeck.core
import crawldeck.localweb
import crawldeck.tui

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_holds_no_symlink() -> None:
    paths = list((ROOT / "crawldeck").rglob("*"))
    assert len(paths) > 60  # the walk found the tree
    assert [p for p in paths if p.is_symlink()] == []


def test_each_sub_package_imports_from_its_folder_under_crawldeck() -> None:
    for package, folder in (
        (crawldeck.core, "core"),
        (crawldeck.cli, "cli"),
        (crawldeck.tui, "tui"),
        (crawldeck.localweb, "localweb"),
    ):
        assert Path(package.__file__ or "").parent == ROOT / "crawldeck" / folder


#: The longest module ``core/`` and ``tui/`` may hold (issue #24 item 2), in lines.
MODULE_MAX_LINES = 800


def test_no_module_of_core_or_tui_is_over_800_lines() -> None:
    modules = [
        path
        for folder in ("core", "tui")
        for path in sorted((ROOT / "crawldeck" / folder).rglob("*.py"))
    ]
    assert len(modules) > 60  # the walk found the tree
    over = {
        str(path.relative_to(ROOT)): n
        for path in modules
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_MAX_LINES
    }
    assert over == {}
