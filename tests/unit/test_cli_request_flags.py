"""The request switches a curl, wget or Scrapy user types first (issue #25 item 2):: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_cli_request_flags.py``."""

from __future__ import annotations

import pytest

from crawldeck.cli.flags import FLAG_NAMES, flag_overrides, without_passwords
from crawldeck.cli.parser import build_parser


def test_every_config_key_a_flag_gives_names_its_flag() -> None:
    """``FLAG_NAMES`` covers ``flag_overrides`` (and ``--auth``, set apart), so no flag's
    bad value is reported as a config key the user never typed (issue #25)."""
    args = build_parser().parse_args(["crawl", "http://127.0.0.1:9/"])
    assert set(flag_overrides(args)) - {"render"} == set(FLAG_NAMES) - {"auth"}


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["crawl", "u", "--auth", "alice:s3:cret"], ["crawl", "u", "--auth", "alice:PASSWORD"]),
        (["--auth=alice:s3cret", "u"], ["--auth=alice:PASSWORD", "u"]),
        (["--auth", "http://h:8080=bob:pw", "--auth", "c:d"],
         ["--auth", "http://h:8080=bob:PASSWORD", "--auth", "c:PASSWORD"]),
        (["-H", "alice:s3cret", "alice:s3cret"], ["-H", "alice:s3cret", "alice:s3cret"]),
        (["--auth", "no-colon"], ["--auth", "no-colon"]),  # refused by the parser anyway
    ],
)  # fmt: skip
def test_printed_commands_leave_the_passwords_out(argv: list[str], shown: list[str]) -> None:
    """Trial 14: the resume hint at a crawl's end echoed ``--auth user:pass`` into
    stdout, and so into nohup logs, while the crawl file carefully kept it out."""
    assert without_passwords(argv) == shown
