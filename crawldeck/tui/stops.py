"""How a run stops, said alike by the console (``tui.app``, ``tui.cluster_app``) and the
headless run (``cli.headless``, ``cli.runner``): the signals that stop it cleanly, and
the budgets' flags with the way on after a whole-crawl budget. No Textual here: the
headless run imports it without the console.
"""

from __future__ import annotations

import signal

#: The budgets that count over every run of the crawl file, by outcome, and their flag:
#: the same command reaches the same cap at once, so the way on is a higher one.
WHOLE_CRAWL_BUDGETS = {"max_pages": "--max-pages", "max_bytes": "--max-bytes"}
#: Every budget outcome and its flag (``--max-time`` counts per run).
BUDGET_FLAGS = {**WHOLE_CRAWL_BUDGETS, "max_time": "--max-time"}


def go_on_note(outcome: str) -> str | None:
    """How to continue after a run ended by a whole-crawl budget (``outcome`` ``max_pages``
    or ``max_bytes``): the same command with a higher cap; ``None`` for other outcomes
    (a stopped run, or one out of ``--max-time``, goes on with the same command)."""
    flag = WHOLE_CRAWL_BUDGETS.get(outcome)
    if flag is None:
        return None
    return (f"To continue, run the same command with a higher {flag} (it counts every "
            "run of the crawl file, so the same cap fetches nothing more).")  # fmt: skip


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals that stop a crawl cleanly (state saved, resume command printed),
    headless or in the console: SIGINT (Ctrl-C), SIGTERM (``kill``) and SIGHUP, which
    the kernel sends when the terminal closes or an ssh session drops; SIGHUP only
    when it is not ignored already (``nohup crawldeck ...`` must keep running)."""
    signals = [signal.SIGINT, signal.SIGTERM]
    if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN:
        signals.append(signal.SIGHUP)
    return tuple(signals)
