"""The ``crawldeck`` command without a terminal, and when its terminal goes away.

Issue #10, items 15 and 17: a crawl started from cron, CI, nohup or a pipe runs
headless (one line says so) instead of opening the console and waiting for a ``q``
forever; SIGHUP (the terminal closed, an ssh session dropped) stops a crawl cleanly
like SIGTERM, headless and in the console, unless SIGHUP is ignored (``nohup``).
Real ``crawldeck`` processes crawl the local web; the console runs on a real pty.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawldeck.localweb import LocalWeb

CRAWLDECK = str(Path(sys.executable).parent / "crawldeck")


@pytest.fixture
def web() -> Iterator[LocalWeb]:
    with LocalWeb(delay_scale=0.2, busy_429_count=1, retry_after_s=1) as w:
        yield w


def setup(tmp_path: Path, web: LocalWeb, delay_ms: int = 50, *, small: bool = False) -> list[str]:
    """A crawl of the local web (``small``: of its ``norobots`` host only)."""
    seeds = [web.hosts["norobots"] + "/"] if small else web.seeds()
    (tmp_path / "seeds.txt").write_text("\n".join(seeds) + "\n")
    (tmp_path / "fast.toml").write_text("flush_interval_ms = 50\nbackoff_base_ms = 100\n")
    return ["crawl", "seeds.txt", "--db", "c.db", "--config", "fast.toml",
            "--delay-ms", str(delay_ms)]  # fmt: skip


def pages(db: Path) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM pages").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def run_statuses(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [s for (s,) in conn.execute("SELECT status FROM runs ORDER BY id")]
    finally:
        conn.close()


def wait_for_pages(proc: subprocess.Popen[bytes], db: Path, count: int) -> None:
    deadline = time.monotonic() + 60
    while pages(db) < count:
        assert proc.poll() is None, f"crawldeck exited early with {proc.returncode}"
        assert time.monotonic() < deadline, "the crawl made no progress"
        time.sleep(0.05)


def test_no_terminal_runs_headless_and_says_so(tmp_path: Path, web: LocalWeb) -> None:
    """Without ``--no-ui`` but with stdout to a file and stdin from /dev/null (cron,
    nohup, ``> log``), the crawl runs to its end headless: no escape codes in the log."""
    args = setup(tmp_path, web, delay_ms=5, small=True)
    with (tmp_path / "log").open("wb") as log:
        proc = subprocess.run(
            [CRAWLDECK, *args], cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.PIPE, timeout=90, check=False,
        )  # fmt: skip
    err = proc.stderr.decode()
    out = (tmp_path / "log").read_bytes()
    assert proc.returncode == 0, err
    assert err.count("running headless") == 1
    assert b"\x1b[" not in out
    assert b"finished: nothing left to fetch" in out
    assert run_statuses(tmp_path / "c.db") == ["finished"]
    # -q: errors and the summary only, so not that line (issue #25 trial 11)
    quiet = subprocess.run(
        [CRAWLDECK, *args, "-q"], cwd=tmp_path, stdin=subprocess.DEVNULL,
        capture_output=True, timeout=90, check=False,
    )  # fmt: skip
    assert quiet.returncode == 0, quiet.stderr
    assert b"running headless" not in quiet.stderr
    # a run refused after the terminal was looked for says only why (issue #25 trial
    # 15: the headless line came first), in crawl and in recrawl alike
    (tmp_path / "notes.db").write_text("not a crawl file\n" * 100)
    for command in (
        ["crawl", web.seeds()[0], "--db", "notes.db"],
        ["recrawl", "notes.db"],
        # a cluster crawl's own refusals (trial 17: a bad --crawl-id came second)
        ["crawl", web.seeds()[0], "--db", "w.db", "--workers", "2", "--crawl-id", "a b"],
        # a Redis URL that does not parse: not "cannot reach Redis at http://..."
        ["crawl", web.seeds()[0], "--db", "r.db", "--redis", "http://127.0.0.1:6379/0"],
    ):
        refused = subprocess.run(
            [CRAWLDECK, *command], cwd=tmp_path, stdin=subprocess.DEVNULL,
            capture_output=True, timeout=90, check=False,
        )  # fmt: skip
        lines = refused.stderr.decode().splitlines()
        assert refused.returncode == 2 and len(lines) == 1, lines
        assert lines[0].startswith(f"crawldeck {command[0]}: error: ")
    assert lines[0].endswith("bad Redis URL 'http://127.0.0.1:6379/0': it must start with "
                             "redis://, rediss:// or unix://")  # fmt: skip
    assert not (tmp_path / "w.db").exists() and not (tmp_path / "r.db").exists()


def in_a_terminal(args: list[str], cwd: Path, cap_s: float = 90) -> tuple[int, bytes]:
    """Run ``crawldeck ARGS`` on a pseudo-terminal (stdin, stdout and stderr), as typed
    in one, to its end: its exit code and all it wrote."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    proc = subprocess.Popen([CRAWLDECK, *args], cwd=cwd, stdin=slave, stdout=slave,
                            stderr=slave, env=env, start_new_session=True)  # fmt: skip
    os.close(slave)
    out = b""
    deadline = time.monotonic() + cap_s
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every end of the terminal closed
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait(timeout=10), out


@pytest.mark.parametrize("level", ["-q", "-v", "--log-level=WARNING"])
def test_a_log_level_in_a_terminal_runs_headless(tmp_path: Path, web: LocalWeb, level: str) -> None:
    """``-q``, ``-v`` and ``--log-level`` choose what a headless run prints: typed in a
    terminal, they run it headless (issue #25 trials: ``-q`` opened the console there,
    where a wget user expects a quiet line or two)."""
    args = setup(tmp_path, web, delay_ms=5, small=True)
    code, out = in_a_terminal([*args, level], tmp_path)
    assert code == 0, out.decode(errors="replace")
    assert b"\x1b[?1049h" not in out  # no alternate screen: no console
    assert b"finished: nothing left to fetch" in out


def hup_default() -> None:
    """In the child before it runs crawldeck: SIGHUP to its default action, as a
    terminal's shell starts a command (a suite run under ``nohup`` would otherwise pass
    its ignore on, and crawldeck rightly keeps running under nohup)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def test_sighup_stops_a_headless_crawl_cleanly(tmp_path: Path, web: LocalWeb) -> None:
    args = [*setup(tmp_path, web), "--no-ui"]
    proc = subprocess.Popen(
        [CRAWLDECK, *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=hup_default,
    )  # fmt: skip
    wait_for_pages(proc, tmp_path / "c.db", 20)
    proc.send_signal(signal.SIGHUP)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err.decode()
    assert b"resume with:" in out
    assert b"Traceback" not in err
    assert run_statuses(tmp_path / "c.db") == ["stopped"]
    conn = sqlite3.connect(tmp_path / "c.db")
    queued = conn.execute("SELECT count(*) FROM frontier WHERE state = 'queued'").fetchone()[0]
    conn.close()
    assert queued > 0  # what was left is saved for the resume


def test_ctrl_c_stops_a_crawl_whose_piped_reader_is_gone(tmp_path: Path, web: LocalWeb) -> None:
    """``crawl ... 2>&1 | tee log`` and Ctrl-C: the same SIGINT ends ``tee``, and the
    crawl's "stopping" line then fails to write; the crawl stops all the same (issue #25:
    a trial's crawl ran on to its cap). The reader is gone here before the signal."""
    args = [*setup(tmp_path, web), "--no-ui"]
    proc = subprocess.Popen(
        [CRAWLDECK, *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    wait_for_pages(proc, tmp_path / "c.db", 20)
    assert proc.stdout is not None
    proc.stdout.close()  # tee is gone: every write from now on is a broken pipe
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert run_statuses(tmp_path / "c.db") == ["stopped"]


def test_sighup_is_ignored_under_nohup(tmp_path: Path, web: LocalWeb) -> None:
    args = [*setup(tmp_path, web, delay_ms=150, small=True), "--no-ui"]
    proc = subprocess.Popen(
        ["nohup", CRAWLDECK, *args], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    wait_for_pages(proc, tmp_path / "c.db", 3)
    proc.send_signal(signal.SIGHUP)
    at_hangup = pages(tmp_path / "c.db")
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err.decode()
    assert run_statuses(tmp_path / "c.db") == ["finished"]
    assert pages(tmp_path / "c.db") == 12 > at_hangup  # it went on after the SIGHUP


def test_sighup_stops_the_console_when_its_terminal_closes(tmp_path: Path, web: LocalWeb) -> None:
    """The console on a real pty; the pty is closed (the terminal window goes away) and
    SIGHUP arrives: the crawl is saved as ``stopped`` and the process exits 130."""
    args = setup(tmp_path, web)
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    proc = subprocess.Popen(
        [CRAWLDECK, *args], cwd=tmp_path, stdin=slave, stdout=slave, stderr=slave, env=env
    )
    os.close(slave)
    try:
        deadline = time.monotonic() + 60
        while pages(tmp_path / "c.db") < 20:
            assert proc.poll() is None, f"crawldeck exited early with {proc.returncode}"
            assert time.monotonic() < deadline, "the crawl made no progress"
            # keep the pty drained so the console never blocks on a full buffer
            if select.select([master], [], [], 0.05)[0]:
                with contextlib.suppress(OSError):
                    os.read(master, 65536)
    finally:
        os.close(master)  # the terminal goes away ...
    proc.send_signal(signal.SIGHUP)  # ... and the kernel's SIGHUP arrives
    try:
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:  # it hung: do not leave it running
            proc.kill()
            proc.wait(timeout=10)
    assert run_statuses(tmp_path / "c.db") == ["stopped"]


def stopped_run(db: Path) -> tuple[str, str | None, int]:
    """The first run's status and stats, and the frontier's queued URLs."""
    conn = sqlite3.connect(db)
    try:
        status, stats = conn.execute("SELECT status, stats FROM runs ORDER BY id").fetchone()
        queued = conn.execute("SELECT count(*) FROM frontier WHERE state = 'queued'").fetchone()
        return status, stats, int(queued[0])
    finally:
        conn.close()


#: How the terminal goes away under the console (issue #22, item 3), each a list of
#: steps: ``close`` the pty's master (the terminal window, tmux or sshd lets go of
#: it: the tty hangs up, reads see EOF or EIO, writes EIO), or a signal sent to the
#: crawl's whole process group as a shell sends it to its job (the crawl's child
#: processes get it too). ``kernel``: the crawl leads its session with the pty as its
#: controlling terminal (``setsid -c``, as under ``tmux new-session CMD`` or ``ssh
#: host CMD``), so the close itself makes the kernel send it SIGHUP and SIGCONT.
HANGUPS = {
    "close": (False, ["close"]),
    "hup-then-close": (False, [signal.SIGHUP, "close"]),
    "close-then-term": (False, ["close", signal.SIGTERM]),
    "kernel-hup-then-shell-hup": (True, ["close", signal.SIGHUP]),
}


@pytest.mark.parametrize("hangup", list(HANGUPS))
def test_a_console_whose_terminal_goes_away_stops_cleanly_and_resumes(
    tmp_path: Path, web: LocalWeb, hangup: str
) -> None:
    """Whatever the order of the hangup, SIGHUP and SIGTERM, the console crawl stops as
    on ``q``: exit 130, the run ``stopped`` with its stats, the frontier saved; the same
    command (headless now) goes on to the end of the site."""
    ctty, steps = HANGUPS[hangup]
    args = setup(tmp_path, web, delay_ms=500, small=True)
    db = tmp_path / "c.db"
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    command = ["setsid", "--ctty", CRAWLDECK, *args] if ctty else [CRAWLDECK, *args]
    proc = subprocess.Popen(
        command, cwd=tmp_path, stdin=slave, stdout=slave, stderr=slave, env=env,
        start_new_session=not ctty,
    )  # fmt: skip
    os.close(slave)
    closed = False
    try:
        deadline = time.monotonic() + 60
        while pages(db) < 3:
            assert proc.poll() is None, f"crawldeck exited early with {proc.returncode}"
            assert time.monotonic() < deadline, "the crawl made no progress"
            # keep the pty drained so the console never blocks on a full buffer
            if select.select([master], [], [], 0.05)[0]:
                with contextlib.suppress(OSError):
                    os.read(master, 65536)
        for step in steps:
            if step == "close":
                os.close(master)
                closed = True
            else:
                os.killpg(proc.pid, step)
        code = proc.wait(timeout=60)
    finally:
        if not closed:
            os.close(master)
        if proc.poll() is None:  # it hung: do not leave it running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert code == 130
    status, stats, queued = stopped_run(db)
    assert status == "stopped"
    assert stats is not None
    assert json.loads(stats)["finish_reason"] == "stopped"
    assert json.loads(stats)["fetches"] >= 3
    assert queued > 0  # what was left is saved for the resume
    at_stop = pages(db)
    resumed = subprocess.run(
        [CRAWLDECK, *args, "--no-ui"], cwd=tmp_path, stdin=subprocess.DEVNULL,
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert run_statuses(db) == ["stopped", "finished"]
    assert at_stop < pages(db) == 12


def test_a_console_whose_stderr_is_not_a_terminal_runs_headless(
    tmp_path: Path, web: LocalWeb
) -> None:
    """The console draws on stderr: ``crawldeck crawl ... 2> log`` on a terminal runs
    headless rather than filling ``log`` with escape codes and the terminal with nothing."""
    args = setup(tmp_path, web, delay_ms=5, small=True)
    master, slave = pty.openpty()
    try:
        with (tmp_path / "err").open("wb") as err:
            proc = subprocess.run(
                [CRAWLDECK, *args], cwd=tmp_path, stdin=slave, stdout=slave, stderr=err,
                timeout=90, check=False,
            )  # fmt: skip
    finally:
        os.close(slave)
        os.close(master)
    assert proc.returncode == 0
    log = (tmp_path / "err").read_bytes()
    assert b"running headless" in log and b"\x1b[" not in log


def test_ctrl_c_while_starting_is_one_line_and_exit_130(tmp_path: Path) -> None:
    # a seed, so that the crawl gets to importing the engine (--help does not)
    (tmp_path / "seeds.txt").write_text("http://127.0.0.1:9/\n")
    proc = subprocess.Popen(
        [CRAWLDECK, "crawl", "seeds.txt", "--no-ui"], cwd=tmp_path, stderr=subprocess.PIPE
    )
    # Interrupt while the crawler is imported: once the first compiled module of that
    # import (multidict, under aiohttp) is mapped, and not sooner (a signal
    # before the launcher runs is the interpreter's own, whatever crawldeck does).
    maps = Path(f"/proc/{proc.pid}/maps")
    deadline = time.monotonic() + 30
    while "multidict" not in maps.read_text() and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert b"Traceback" not in err
    assert err.strip().splitlines()[-1] == b"crawldeck: stopped"


def test_a_second_demo_on_the_same_file_is_refused_not_erased(tmp_path: Path) -> None:
    first = subprocess.Popen(
        [CRAWLDECK, "demo", "--no-ui", "--db", "d.db", "--delay-ms", "200"], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_for_pages(first, tmp_path / "d.db", 3)
        inode = (tmp_path / "d.db").stat().st_ino
        second = subprocess.run(
            [CRAWLDECK, "demo", "--no-ui", "--db", "d.db"], cwd=tmp_path, capture_output=True,
            text=True, timeout=60, check=False,
        )  # fmt: skip
        assert second.returncode == 2
        assert second.stderr.strip().endswith(
            f"d.db is in use by another crawldeck (pid {first.pid})"
        )
        assert "local web is up" not in second.stdout
        assert (tmp_path / "d.db").stat().st_ino == inode
        assert pages(tmp_path / "d.db") >= 3
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=30)


def test_abbreviated_flags_are_refused(tmp_path: Path) -> None:
    (tmp_path / "seeds.txt").write_text("http://127.0.0.1:9/\n")
    proc = subprocess.run(
        [CRAWLDECK, "crawl", "seeds.txt", "--no-ui", "--max-page", "5"], cwd=tmp_path,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "unrecognized arguments: --max-page" in proc.stderr
