"""The wall between core and UI: core never imports tui or textual."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_core_imports_no_ui() -> None:
    modules = sorted(p.stem for p in (ROOT / "core").glob("*.py") if p.stem != "__init__")
    code = (
        "import sys\n"
        + "".join(f"import crawldeck.core.{m}\n" for m in modules)
        + "bad = sorted(m for m in sys.modules if m.startswith(('crawldeck.tui', 'textual')))\n"
        + "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert len(modules) >= 10
    assert out.stdout.strip() == ""
