"""The wall between core and UI at run time: importing all of core loads no UI.

The import contracts (``tests/unit/test_import_contracts.py``) check crawldeck's own import
statements; they do not see what the third-party packages core imports go on to
import, nor an import by name (``importlib``). This test imports every core module in
a fresh interpreter and reads ``sys.modules``, which sees both.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Packages core must not load, through any path.
UI = ("crawldeck.cli", "crawldeck.tui", "crawldeck.localweb", "textual", "rich")


def loaded_ui(extra: str = "") -> list[str]:
    """The modules of ``UI`` that a fresh interpreter holds after importing every core
    module (every folder, ``core/cluster/`` too), then running the statement ``extra``."""
    package = ROOT / "crawldeck"
    modules = sorted(
        ".".join(p.relative_to(package).with_suffix("").parts).removesuffix(".__init__")
        for p in (package / "core").rglob("*.py")
    )
    assert len(modules) >= 100  # every folder's modules, core/cluster's among them
    code = (
        "import sys\n"
        + "".join(f"import crawldeck.{m}\n" for m in modules)
        + f"{extra}\n"
        + f"print(','.join(sorted(m for m in sys.modules for u in {UI!r}"
        + " if m == u or m.startswith(u + '.'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [m for m in out.stdout.strip().split(",") if m]


def test_importing_all_of_core_loads_no_ui() -> None:
    assert loaded_ui() == []


def test_a_ui_module_loaded_by_name_is_seen() -> None:
    assert "rich" in loaded_ui("import importlib; importlib.import_module('rich.text')")
