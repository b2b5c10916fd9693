"""The single-writer lock holds for every name of a crawl file (issue #10, item 14).

The lock is a flock on the database file itself (see ``core.storage.store``): a symlink, a hard
link, a path with ``..`` in it, another process and this process are all refused with
the one-line "in use" error; the lock goes when its holder closes or dies; and taking
or refusing it never drops the POSIX locks SQLite holds in this process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import lockkit
import pytest
from lockkit import refused, spellings

from crawldeck.core.storage.store import Store
from crawldeck.localweb import LocalWeb

#: The fixtures shared with the other tier's file, as fixtures of this module.
crawl_file = lockkit.crawl_file
holder_cwd = lockkit.holder_cwd

REPO = Path(__file__).resolve().parents[2]
CRAWLDECK = str(Path(sys.executable).parent / "crawldeck")

#: Holds a Store on argv[1]; "ready" once it holds it; closes it on the first stdin line.
HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from crawldeck.core.storage.store import Store

    s = Store(Path(sys.argv[1]))
    print("ready", flush=True)
    sys.stdin.readline()
    s.close()
    print("closed", flush=True)
    sys.stdin.readline()
    """
)


#: Opens a Store on argv[1] and prints the StoreError it raises.
OPEN_ONE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from crawldeck.core.errors import StoreError
    from crawldeck.core.storage.store import Store

    try:
        Store(Path(sys.argv[1])).close()
    except StoreError as exc:
        print(exc)
    """
)


@contextlib.contextmanager
def holder(path: Path) -> Iterator[subprocess.Popen[str]]:
    """A process that holds a Store on ``path`` (killed and reaped at the end)."""
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n"
            yield proc
        finally:
            proc.kill()


def test_every_name_is_refused_while_another_process_holds_the_file(
    holder_cwd: Path, tmp_path: Path
) -> None:
    db = holder_cwd
    names = spellings(db, tmp_path)
    with holder(db) as proc:
        for path in names:
            message = refused(path)
            assert message == f"{path} is in use by another crawldeck (pid {proc.pid})"
            assert "\n" not in message
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("close\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "closed\n"
        for path in names:  # released on close: every name opens again, one at a time
            with Store(path) as s:
                assert s.counts()["queued"] == 1


def test_a_holder_through_a_hard_link_is_seen_and_its_sigkill_frees_the_file(
    holder_cwd: Path, tmp_path: Path
) -> None:
    db = holder_cwd
    names = spellings(db, tmp_path)
    with holder(tmp_path / "elsewhere" / "hard.db") as proc:  # the holder uses another name
        for path in names:
            assert refused(path) == f"{path} is in use by another crawldeck (pid {proc.pid})"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with Store(tmp_path / "elsewhere" / "rel-link.db") as s:  # the kernel dropped the lock
        assert s.counts()["queued"] == 1


def test_what_is_not_a_regular_file_is_refused_in_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.db"
    os.mkfifo(fifo)
    # in a child process: opening a FIFO for reading would block until a writer comes
    child = subprocess.run(
        [sys.executable, "-c", OPEN_ONE, str(fifo)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert child.stdout == f"{fifo} is not a regular file\n", child.stderr
    (tmp_path / "dir.db").mkdir()
    assert refused(tmp_path / "dir.db") == f"cannot open {tmp_path / 'dir.db'}: Is a directory"


# ---------------------------------------------------------------- the command


def page_count(db: Path) -> int:
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM pages").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


@pytest.fixture
def web() -> Iterator[LocalWeb]:
    with LocalWeb(delay_scale=0.2, busy_429_count=1, retry_after_s=1) as w:
        yield w


def test_crawl_through_a_link_to_a_running_crawl_exits_2(tmp_path: Path, web: LocalWeb) -> None:
    # www alone (42 pages, 400 ms apart) outlasts the test; no render to wait for at the stop
    (tmp_path / "seeds.txt").write_text(web.hosts["www"] + "/\n")
    (tmp_path / "link.db").symlink_to("c.db")
    crawl = ["crawl", "seeds.txt", "--no-ui", "--delay-ms", "400"]
    proc = subprocess.Popen(
        [CRAWLDECK, *crawl, "--db", "c.db"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while page_count(tmp_path / "c.db") < 3:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the first crawl made no progress"
            time.sleep(0.05)
        os.link(tmp_path / "c.db", tmp_path / "hard.db")
        for name in ("link.db", "hard.db"):
            second = subprocess.run(
                [CRAWLDECK, *crawl, "--db", name, "--user-agent", "Second/1.0"],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert second.returncode == 2, second.stderr
            assert second.stderr.splitlines() == [
                f"crawldeck crawl: error: {name} is in use by another crawldeck (pid {proc.pid})"
            ]
        assert proc.poll() is None  # refused while the first crawl was running
        agents = {a.user_agent for name in web.hosts for a in web.access_log(name)}
        assert not any(agent.startswith("Second/") for agent in agents)  # no request sent
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 130
