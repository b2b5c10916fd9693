"""The request switches a curl, wget or Scrapy user types first (issue #25 item 2):: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_cli_request_flags.py``."""

from __future__ import annotations

from crawldeck.cli.flags import FLAG_NAMES, flag_overrides
from crawldeck.cli.parser import build_parser


def test_every_config_key_a_flag_gives_names_its_flag() -> None:
    """``FLAG_NAMES`` covers ``flag_overrides`` (and ``--auth``, set apart), so no flag's
    bad value is reported as a config key the user never typed (issue #25)."""
    args = build_parser().parse_args(["crawl", "http://127.0.0.1:9/"])
    assert set(flag_overrides(args)) - {"render"} == set(FLAG_NAMES) - {"auth"}
