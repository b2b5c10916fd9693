"""Snapshots are plain data at run time: importing ``crawldeck.core.crawl.snapshot`` loads no
renderer (issue #11, item 5).

The import contract ``snapshot-no-renderer`` (``tests/unit/test_import_contracts.py``) checks
crawldeck's own import statements; this imports the module in a fresh interpreter and
reads ``sys.modules``, which also sees what a third-party package or an import by name
brings in.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: What a snapshot must not load: Playwright and the modules that drive the browser.
RENDERER = (
    "playwright",
    "crawldeck.core.render.browser_pool",
    "crawldeck.core.render.render_session",
)


def loaded_renderer(statement: str) -> list[str]:
    """The modules of ``RENDERER`` (and their submodules) a fresh interpreter holds after
    running ``statement``."""
    code = (
        "import sys\n"
        f"{statement}\n"
        f"print(','.join(sorted(m for m in sys.modules for r in {RENDERER!r}"
        " if m == r or m.startswith(r + '.'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [m for m in out.stdout.strip().split(",") if m]


def test_importing_the_snapshot_loads_no_renderer() -> None:
    assert loaded_renderer("import crawldeck.core.crawl.snapshot") == []


def test_the_check_sees_the_pool_and_playwright() -> None:
    assert "crawldeck.core.render.browser_pool" in loaded_renderer(
        "import crawldeck.core.render.browser_pool"
    )
    assert "playwright.async_api" in loaded_renderer("import playwright.async_api")
