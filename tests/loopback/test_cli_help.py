"""``--help`` that teaches and output where it belongs (issue #14 item 6): the tests that
start a real server on loopback or a process; the others are in
``tests/unit/test_cli_help.py``."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
from clikit import run

from crawldeck.localweb import LocalWeb


def test_help_shows_the_examples_the_units_and_what_counts_per_run(tmp_path: Path) -> None:
    proc = run("crawl", "--help", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    text = " ".join(proc.stdout.split())  # argparse wraps the flags' help
    assert "usage: crawldeck crawl" in text and "examples: crawldeck crawl https://" in text
    assert "--max-pages N stop once N fetches are made, over ALL the crawl file's runs" in text
    assert (
        "--max-time DURATION stop THIS RUN after DURATION of crawling (time paused in the "
        "console not counted): 90s, 10m, 2h" in text
    )
    assert "--max-bytes SIZE stop once the pages' decoded bodies add up to SIZE, over ALL runs" in (
        text
    )
    assert "--delay-ms MS politeness delay per host in ms" in text and "(default 1000)" in text
    assert "--max-time counts per run" in text


def test_version(tmp_path: Path) -> None:
    proc = run("--version", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, f"crawldeck {version('crawldeck')}\n", "",
    )  # fmt: skip


def test_a_flag_error_in_a_real_process_has_no_usage_block(tmp_path: Path) -> None:
    proc = run("crawl", "seeds.txt", "--delay-ms", "-5", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == ("crawldeck crawl: error: argument --delay-ms: expected a number "
                           ">= 0, got '-5' (see crawldeck crawl --help)\n")  # fmt: skip
    assert "usage" not in proc.stderr


@pytest.fixture
def web() -> Iterator[LocalWeb]:
    with LocalWeb(delay_scale=0.2) as w:
        yield w


def test_headless_figures_go_to_stdout_and_warnings_to_stderr(
    tmp_path: Path, web: LocalWeb
) -> None:
    """The flaky host's robots.txt answers 503: crawldeck allows all and says so, a
    warning; that it backs the host off is information; progress and the summary are
    figures."""
    home = web.hosts["flaky"] + "/"
    proc = run("crawl", home, "--no-ui", "--delay-ms", "5", "--max-pages", "3", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "robots.txt" in line]
    assert warnings and all(w.startswith("crawldeck: warning: robots.txt of ") for w in warnings)
    assert "unreachable (503): allowing all" in warnings[0]
    assert "robots.txt of" not in proc.stdout  # not twice
    assert all(line.startswith("crawldeck: warning: ") for line in proc.stderr.splitlines())
    out = proc.stdout.splitlines()
    title = out.index(
        next(line for line in out if line.startswith("stopped: --max-pages 3 reached"))
    )
    info = [line for line in out[:title] if not line.startswith("[")]
    progress = [line for line in out[:title] if line.startswith("[")]
    assert len(info) == 2 and re.fullmatch(  # "  HH:MM:SS host: ..."
        r"  \d\d:\d\d:\d\d [\d.:]+: robots.txt answered 503: backing off before its pages "
        r"\(crawled under its last good copy, else allowed: robots_on_failure\)",
        info[1],
    )
    # the loopback seed host the operator named: information, once
    assert "seed host at loopback address" in info[0]
    assert progress and all(re.match(r"\[[\d:]+\] \d/3 fetched ", line) for line in progress)
    assert out[-2].startswith("crawl saved in crawl.db")
    assert out[-1].startswith("to continue, run it with a higher --max-pages: ")
    assert out[-1].endswith(" --max-pages 6")  # twice the cap reached: it fetches more


#: Runs the console script's entry point with the given arguments, then prints the
#: modules it imported on stderr (one per line).
IMPORT_PROBE = """
import sys
from crawldeck.cli.launch import main
sys.argv = ["crawldeck", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print("\\n".join(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["-h"], ["crawl", "--help"]])
def test_help_and_version_import_neither_the_engine_nor_aiohttp(args: list[str]) -> None:
    """They answer at once (issue #25 item 2): the engine, aiohttp and the parsers are
    imported only by the commands that crawl."""
    proc = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE, *args], capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    modules = set(proc.stderr.split())
    assert "crawldeck.cli.main" in modules  # the command ran
    assert proc.stdout.startswith(("usage: crawldeck", f"crawldeck {version('crawldeck')}"))
    heavy = {"aiohttp", "crawldeck.core.crawl.engine", "crawldeck.core.net.fetcher", "selectolax"}
    assert modules.isdisjoint(heavy), sorted(modules & heavy)
