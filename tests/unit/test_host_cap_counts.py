"""What a host's page cap counts, as README and ``crawldeck crawl --help`` say (issue #14's
loose ends, a new user's trial): the tests that need no server, process or console (pure
logic, the store, virtual time); the others are in
``tests/loopback/test_host_cap_counts.py``."""

from __future__ import annotations

from crawldeck.cli.parser import build_parser


def test_crawl_help_says_what_the_host_caps_count() -> None:
    text = " ".join(build_parser().commands["crawl"].format_help().split())
    assert (
        'per-host caps: -s max_per_host=N and a [hosts."HOST"] table\'s max_pages count the '
        "URLs admitted for the host (queued: links, sitemap URLs, redirect targets; all "
        "runs), not its pages fetched"
    ) in text
    assert "A cluster crawl counts them per worker and per run." in text
