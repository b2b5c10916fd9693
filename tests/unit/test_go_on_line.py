"""How a console says to continue a crawl once its run ended (``tui.stops.go_on_line``):
the console's last line, and what ``crawldeck attach`` prints when its crawl ended
while attached (issue #25 trial 19: after ``S S`` and ``q`` it said only ``stopped``)."""

from __future__ import annotations

import pytest

from crawldeck.tui.stops import go_on_line

HINT = "resume with: crawldeck crawl seeds.txt --db crawl.db"


@pytest.mark.parametrize("outcome", ["stopped", "max_time"])
def test_a_run_that_can_go_on_with_the_same_command_says_its_resume_line(outcome: str) -> None:
    assert go_on_line(outcome, HINT) == HINT


@pytest.mark.parametrize(
    ("outcome", "flag"), [("max_pages", "--max-pages"), ("max_bytes", "--max-bytes")]
)
def test_a_whole_crawl_budget_says_to_raise_it(outcome: str, flag: str) -> None:
    said = go_on_line(outcome, HINT)
    assert said is not None and said.startswith(
        f"To continue, run the same command with a higher {flag} "
    )


def test_a_finished_crawl_has_nothing_to_go_on_with() -> None:
    assert go_on_line("finished", HINT) is None


def test_without_a_resume_line_a_stopped_run_says_nothing() -> None:
    assert go_on_line("stopped", None) is None
