"""``crawldeck recrawl`` of an unfinished crawl (issue #14's loose ends, a new user's: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_cli_recrawl_budget.py``."""

from __future__ import annotations

from crawldeck.cli.parser import build_parser
from crawldeck.cli.recrawl import recrawl_budgets


def test_the_recrawl_budgets_count_this_recrawl_alone() -> None:
    parser = build_parser()
    given = parser.parse_args(
        ["recrawl", "c.db", "--max-pages", "10", "--max-time", "90", "--max-bytes", "1MB"]
    )
    assert recrawl_budgets(given, pages_before=500, bytes_before=7_000_000) == {
        "max_pages": 510,
        "max_time_s": 90,
        "max_bytes": 8_000_000,
    }
    none = parser.parse_args(["recrawl", "c.db"])
    assert recrawl_budgets(none, pages_before=500, bytes_before=7) == dict.fromkeys(
        ("max_pages", "max_time_s", "max_bytes")
    )


def test_recrawl_help_says_what_happens_to_the_queue_and_what_the_budgets_count() -> None:
    text = " ".join(build_parser().commands["recrawl"].format_help().split())
    assert (
        "An unfinished crawl (URLs queued, never fetched) goes on after the revisits: on "
        "each host its pages are revisited first, then its queue is crawled, within the "
        "recrawl's budgets."
    ) in text
    assert "--max-pages N stop once THIS RECRAWL fetched N pages, revisits and new pages" in text
    assert "without them a recrawl revisits every page and crawls the whole queue" in text
