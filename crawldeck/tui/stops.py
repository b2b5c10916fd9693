"""How a run stops, said alike by the console (``tui.app``, ``tui.cluster_app``) and the
headless run (``cli.headless``, ``cli.runner``): the signals that stop it cleanly, and
the budgets' flags with the way on after a whole-crawl budget. No Textual here: the
headless run imports it without the console.
"""

from __future__ import annotations

import asyncio
import shlex
import signal
from collections.abc import Iterable, Sequence

from crawldeck.core.crawl.snapshot import CrawlSnapshot
from crawldeck.core.words import rounded_size, spelled_size

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


def go_on_line(outcome: str, resume_hint: str | None) -> str | None:
    """How to continue a crawl whose run ended with ``outcome``, as its console says it:
    ``go_on_note`` after a whole-crawl budget, else ``resume_hint`` (``resume with:
    crawldeck crawl ...``); ``None`` once the crawl ``finished`` (nothing is left)."""
    if outcome == "finished":
        return None
    return go_on_note(outcome) or resume_hint


def raised_cap(outcome: str, cap: int, held: int) -> str:
    """The higher cap, as its flag takes it, that fetches more after the whole-crawl
    budget ``outcome`` (``max_pages``: ``cap`` fetches, ``max_bytes``: ``cap`` body
    bytes) stopped a crawl file that holds ``held`` of them: twice the cap, or what the
    file holds plus the cap when that is more, bytes rounded up to a whole unit
    (``core.words.rounded_size``: ``4MB``). The budgets count every run of the file,
    so the same cap, or one the file is past, fetches nothing (issue #25; trial 9: a
    run that stopped at 2.8 MB of a 1MB cap was told 2MB)."""
    higher = max(2 * cap, held + cap)
    return spelled_size(rounded_size(higher)) if outcome == "max_bytes" else str(higher)


def raised_budget(argv: Sequence[str], flag: str, value: str) -> list[str]:
    """``argv`` (a command's arguments after ``crawldeck``) with ``flag`` (``--max-pages``,
    ``--max-bytes``) set to ``value``: its ``flag X`` and ``flag=X`` left out and
    ``flag value`` added at the end (a flag wins over ``-s`` and ``--config``)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == flag:
            skip = True
        elif not arg.startswith(f"{flag}="):
            kept.append(arg)
    return [*kept, flag, value]


def seed_rerun(
    seed_command: tuple[str, Sequence[str]], url: str, outcome: str, snap: CrawlSnapshot
) -> str:
    """The command that crawls on with ``url`` as one more seed once a run has ended
    (the console's ``a``): ``seed_command``'s head (``crawldeck crawl``, shell-quoted),
    ``url``, then the rest of its arguments (``cli.runner.Ending.seed_command``: a
    rerun of a crawl file resumes it, its scope widened by the seed). After the
    whole-crawl budget ``outcome`` (``max_pages``, ``max_bytes``; its cap and what the
    file holds read from ``snap``) the cap is raised as the end's own line raises it
    (``raised_cap``): the same cap fetches nothing (issue #25 trial 16)."""
    head, rest = seed_command
    args = list(rest)
    flag = WHOLE_CRAWL_BUDGETS.get(outcome)
    caps = {"max_pages": (snap.max_pages, snap.pages_done),
            "max_bytes": (snap.max_bytes, snap.bytes_done)}  # fmt: skip
    cap, held = caps.get(outcome, (None, 0))
    if flag is not None and cap:
        args = raised_budget(args, flag, raised_cap(outcome, cap, held))
    return f"{head} {shlex.join([url, *args])}"


def hold_stop_signals(loop: asyncio.AbstractEventLoop, signals: Iterable[signal.Signals]) -> None:
    """Once the crawl is stopping or its console is closed: ``signals`` (handled on
    ``loop`` until then) do nothing more until the loop closes, instead of their default
    action. The run is ending on its own: a SIGTERM now (a service manager's stop, a
    shell's after the terminal closed) must not kill the process while it writes the
    run's end and prints its summary (a console closed, then SIGTERM: exit -15 under
    load, the run's stats lost)."""
    for sig in signals:
        loop.add_signal_handler(sig, _stopping_already)


def _stopping_already() -> None:
    """A stop signal after the stop: nothing more to do."""


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals that stop a crawl cleanly (state saved, resume command printed),
    headless or in the console: SIGINT (Ctrl-C), SIGTERM (``kill``) and SIGHUP, which
    the kernel sends when the terminal closes or an ssh session drops; SIGHUP only
    when it is not ignored already (``nohup crawldeck ...`` must keep running)."""
    signals = [signal.SIGINT, signal.SIGTERM]
    if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN:
        signals.append(signal.SIGHUP)
    return tuple(signals)
