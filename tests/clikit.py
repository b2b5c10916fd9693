"""The command line run by the CLI tests: as a real process (``run``) or in this
process (``main_in``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from crawldeck.cli.main import main

#: The venv's ``crawldeck`` console script.
CRAWLDECK = str(Path(sys.executable).parent / "crawldeck")


def run(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``crawldeck ARGS`` in ``cwd`` as a real process (text output, at most ``timeout`` s)."""
    return subprocess.run(
        [CRAWLDECK, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def main_in(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
) -> tuple[int, str, str]:
    """``main(args)`` in this process, in ``tmp_path``: exit code, stdout, stderr (an
    argparse error's ``SystemExit`` taken as its code)."""
    monkeypatch.chdir(tmp_path)
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = int(str(exc.code))
    out, err = capsys.readouterr()
    return code, out, err
