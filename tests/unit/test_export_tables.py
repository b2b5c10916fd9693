"""``crawldeck export --table`` takes every table (issue #25 item 6): the tests that need no
server, process or console (pure logic, the store, virtual time); the others are in
``tests/loopback/test_export_tables.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from clikit import main_in


def test_export_names_the_tables_when_given_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "export", "c.db", "--table", "meta")
    assert (code, out) == (2, "")
    assert "invalid choice: 'meta' (choose from 'pages', 'blocked', 'hosts', 'links', " \
           "'frontier', 'runs', 'page_versions', 'sitemaps', 'sitemap_urls', 'page_summary', " \
           "'host_summary', 'broken_links')" in err  # fmt: skip
