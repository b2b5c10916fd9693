"""Broken links as a link checker shows them (issue #25 item 4): the ``broken_links``: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_links_broken.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from clikit import main_in


def test_links_refuses_a_missing_file_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "links", "nope.db", "--broken")
    assert (code, out) == (2, "")
    assert err == "crawldeck links: error: nope.db does not exist or is not a file\n"
