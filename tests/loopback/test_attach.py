"""The attach socket of a crawl (issue #25 item 8): ``core.crawl.attach.AttachServer`` on a
real Unix socket, ``tui.attach.SocketSource`` and the attached console against a real
headless crawl (``crawldeck demo --no-ui`` in a process), and ``crawldeck attach``.

The server's mechanics (bounds, dropped clients, stale sockets, long paths, another
user) run over the engine's seam (``core.crawl.attach.AttachTarget``) with ``Crawl``, a
crawl's snapshots in memory; everything else runs against a real crawl. The
browser's test is in ``tests/loopback/test_attach_web.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from attachkit import CAP_S, Crawl, headless_demo, until, watch
from clikit import CRAWLDECK, main_in
from crawlkit import rows

from crawldeck.core.crawl.attach import (
    MAX_REQUEST_BYTES,
    STOP_ASKED,
    STOPPED_BY,
    SUN_PATH_MAX,
    AttachServer,
    find_socket,
    socket_path,
)
from crawldeck.core.errors import AttachError
from crawldeck.tui.attach import SocketSource

#: Debian's own Python: a user other than root can run it (the venv's lives under /root).
SYSTEM_PYTHON = "/usr/bin/python3"
#: The uid and gid of ``nobody``.
NOBODY = 65534


# --------------------------------------------------------------- a real crawl


async def test_a_headless_crawl_is_steered_over_its_socket_and_detaching_leaves_it_running(
    tmp_path: Path,
) -> None:
    with headless_demo(tmp_path) as (proc, db):
        sock = socket_path(db)
        st = os.stat(sock)
        assert sock == db.with_name("demo.db.sock")
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
        assert st.st_uid == os.getuid()

        source = await SocketSource.connect(db)
        assert source.db == db.resolve() and source.pid == proc.pid
        assert source.resume_hint is not None and "crawldeck demo" in source.resume_hint
        runner, seen = await watch(source)
        first = source.snapshot().counters.pages
        await until(lambda: bool(seen) and seen[-1].counters.pages > first, "pages fetched")

        # p: nothing new is dispatched; every watcher sees PAUSED at once
        await asyncio.to_thread(source.pause)
        assert source.paused
        await until(lambda: seen[-1].state == "paused" and seen[-1].counters.in_flight == 0,
                    "the crawl paused with nothing in flight")  # fmt: skip
        held = seen[-1].pages_this_run  # fetches (the totals are the file's, committed later)
        count = len(seen)
        await until(lambda: len(seen) >= count + 3, "three more snapshots")  # 1 s apart
        assert [(s.pages_this_run, s.state) for s in seen[count:]] == [(held, "paused")] * (
            len(seen) - count
        )
        await asyncio.to_thread(source.resume)
        await until(lambda: seen[-1].state == "running" and seen[-1].pages_this_run > held,
                    "the crawl going on")  # fmt: skip

        # the console's reads: a filter finds hosts beyond the snapshot's, a detail
        rows = await asyncio.to_thread(source.query_hosts, "127.77.0.1", 10)
        assert rows and all("127.77.0.1" in row.host for row in rows)
        detail = await asyncio.to_thread(source.host_detail, rows[0].host, 5)
        assert detail is not None and detail.row.host == rows[0].host
        assert await asyncio.to_thread(source.host_detail, "nowhere.example", 5) is None
        refused = await source.add_seeds_live(["ftp://example.org/"])
        assert refused and refused[0][0] == "ftp://example.org/" and "scheme" in refused[0][1]

        # detach: the crawl goes on, and another console attaches
        runner.cancel()
        source.close()
        await asyncio.sleep(0.5)
        assert proc.poll() is None
        again = await SocketSource.connect(db)
        assert again.snapshot().state == "running"
        again.close()
    assert proc.returncode == 130  # SIGTERM: stopped cleanly
    assert not socket_path(db).exists()  # removed on a clean exit


async def test_a_stop_sent_over_the_socket_saves_the_crawl_and_every_watcher_sees_its_end(
    tmp_path: Path,
) -> None:
    with headless_demo(tmp_path) as (proc, db):
        one, two = await SocketSource.connect(db), await SocketSource.connect(db)
        runs = [asyncio.create_task(one.run()), asyncio.create_task(two.run())]
        await asyncio.to_thread(one.request_stop)
        results = await asyncio.wait_for(asyncio.gather(*runs), CAP_S)
        assert [r.outcome for r in results] == ["stopped", "stopped"]
        # after the end, the hosts' final rows come with it (the console's last table)
        assert one.query_hosts("127.77.0", 500) == two.query_hosts("127.77.0", 500) != ()
        one.close()
        two.close()
        await asyncio.to_thread(proc.wait, CAP_S)
    assert proc.returncode == 130
    assert not socket_path(db).exists()
    assert rows(db, "SELECT status FROM runs ORDER BY id DESC LIMIT 1") == [("stopped",)]
    # the summary names the attached console as the stopper, as the log does (issue #25)
    out = (tmp_path / "crawl.out").read_text()
    assert "stopped on request from an attached console (crawldeck attach); state saved" in out
    assert "Ctrl-C, q or a signal" not in out


async def test_a_killed_crawl_leaves_a_stale_socket_that_attach_says_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with headless_demo(tmp_path) as (proc, db):
        source = await SocketSource.connect(db)
        runner = asyncio.create_task(source.run())
        proc.kill()
        with pytest.raises(AttachError, match="lost the crawl"):
            await asyncio.wait_for(runner, CAP_S)
        source.close()
    assert stat.S_ISSOCK(os.lstat(socket_path(db)).st_mode)  # left behind by SIGKILL
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "attach", str(db))
    assert code == 2 and out == ""
    assert err == (
        f"crawldeck attach: error: no running crawl on {db} (its socket "
        f"{socket_path(db)} is stale: the crawl that made it is gone)\n"
    )


async def test_attach_without_a_terminal_says_so_in_one_line(tmp_path: Path) -> None:
    with headless_demo(tmp_path) as (_, db):
        done = await asyncio.to_thread(
            subprocess.run, [CRAWLDECK, "attach", str(db)], capture_output=True, text=True,
            timeout=CAP_S, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("crawldeck attach: error: no terminal on stdin")
    assert len(done.stderr.splitlines()) == 1


@contextlib.asynccontextmanager
async def served(db: Path, crawl: Crawl, **options: float) -> AsyncIterator[AttachServer]:
    server = AttachServer(crawl, db, **options)  # type: ignore[arg-type]
    await server.start()
    try:
        yield server
    finally:
        await server.close("stopped")


async def line_of(reader: asyncio.StreamReader) -> dict[str, object]:
    """The next frame of a raw connection, as JSON."""
    line = await asyncio.wait_for(reader.readline(), CAP_S)
    assert line.endswith(b"\n")
    frame: dict[str, object] = json.loads(line)
    return frame


async def test_publishing_costs_nothing_without_a_watcher_and_one_encoding_with_many(
    tmp_path: Path,
) -> None:
    crawl = Crawl()
    async with served(tmp_path / "crawl.db", crawl) as server:
        for _ in range(100):
            crawl.publish()
        assert server.statistics().snapshots == 0  # no watcher: not even encoded
        asker = await asyncio.open_unix_connection(str(server.path))
        await line_of(asker[0])  # hello
        for _ in range(10):
            crawl.publish()
        assert server.statistics().snapshots == 0  # a client that does not watch
        watchers = [await SocketSource.connect(tmp_path / "crawl.db") for _ in range(3)]
        runs = [await watch(w) for w in watchers]
        for _ in range(10):
            crawl.publish()
        stats = server.statistics()
        assert stats.snapshots == 10 and stats.watching == 3 and stats.clients == 7
        await until(lambda: all(seen and seen[-1].counters.pages == 120 for _, seen in runs),
                    "every watcher has the last snapshot")  # fmt: skip
        for (task, _), w in zip(runs, watchers, strict=True):
            task.cancel()
            w.close()
        asker[1].close()
        await until(lambda: server.statistics().clients == 0, "the clients gone")


async def test_the_socket_appears_only_once_it_listens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suite run under load: a client that saw ``DB.sock`` and connected was refused,
    "stale: the crawl that made it is gone", because binding makes the file and the
    listen came after. The socket is now bound under another name and renamed once it
    listens: at the listen, ``DB.sock`` is not there yet; then it is, and it answers."""
    db = tmp_path / "crawl.db"
    seen_at_listen: list[bool] = []
    listen = socket.socket.listen

    def watched(sock: socket.socket, *args: Any) -> None:
        seen_at_listen.append(socket_path(db).exists())
        listen(sock, *args)

    monkeypatch.setattr(socket.socket, "listen", watched)
    async with served(db, Crawl()) as server:
        assert seen_at_listen == [False]
        assert server.path == socket_path(db) and stat.S_ISSOCK(os.lstat(server.path).st_mode)
        assert os.lstat(server.path).st_mode & 0o777 == 0o600
        reader, writer = await asyncio.open_unix_connection(str(server.path))
        assert (await line_of(reader))["t"] == "hello"
        writer.close()
    assert os.listdir(tmp_path) == []  # no staging name left (the crawl file is never made)


async def test_an_idle_client_at_the_crawls_end_leaves_no_task_and_no_traceback(
    tmp_path: Path,
) -> None:
    """Trial 14: a client connected and silent when a headless crawl ended printed
    "Exception in callback StreamReaderProtocol.connection_made" with a CancelledError:
    its connection's task was still waiting for a line when ``asyncio.run`` cancelled
    it. ``close`` now waits for every connection's task."""
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _, context: errors.append(context))
    async with served(tmp_path / "crawl.db", Crawl()) as server:
        idle = await asyncio.open_unix_connection(str(server.path))
        assert (await line_of(idle[0]))["t"] == "hello"  # and it never asks anything
        asker = await asyncio.open_unix_connection(str(server.path))
        await line_of(asker[0])
        asker[1].write(b'{"op": "watch"}\n')
    left = [t for t in asyncio.all_tasks() if "_serve" in repr(t.get_coro())]
    assert left == []
    for task in asyncio.all_tasks() - {asyncio.current_task()}:
        task.cancel()  # as asyncio.run does at its end
    await asyncio.sleep(0)
    assert errors == []
    for _, writer in (idle, asker):
        writer.close()


async def test_a_client_that_does_not_read_is_dropped_and_the_others_go_on(
    tmp_path: Path,
) -> None:
    crawl = Crawl(blocked_rows=200)  # about 400 KB a snapshot
    db = tmp_path / "crawl.db"
    async with served(db, crawl, drain_timeout_s=0.5) as server:
        _, stuck = await asyncio.open_unix_connection(str(server.path))
        stuck.write(b'{"op": "watch"}\n')  # and never reads
        reader = await SocketSource.connect(db)
        run, seen = await watch(reader)
        start = time.monotonic()
        for _ in range(40):  # 16 MB offered to the stuck one
            crawl.publish()
            await asyncio.sleep(0.02)
        await until(lambda: server.statistics().dropped == 1, "the stuck client dropped")
        stats = server.statistics()
        assert (stats.clients, stats.watching) == (2, 1)  # the reader's watch and ask
        assert time.monotonic() - start < CAP_S
        crawl.publish()
        await until(lambda: bool(seen) and seen[-1].counters.pages == 41, "the last snapshot")
        run.cancel()
        reader.close()
        stuck.close()


async def test_bad_requests_get_one_line_and_an_overlong_one_drops_the_client(
    tmp_path: Path,
) -> None:
    crawl = Crawl()
    async with served(tmp_path / "crawl.db", crawl) as server:
        reader, writer = await asyncio.open_unix_connection(str(server.path))
        assert (await line_of(reader))["t"] == "hello"
        writer.write(b'{"op": "format_disk", "id": 7}\n')
        reply = await line_of(reader)
        assert reply["t"] == "reply" and str(reply["error"]).startswith("bad request: ")
        writer.write(b'{"op": "add_seeds", "id": 8, "urls": ["mailto:a@b"]}\n')
        assert (await line_of(reader))["ok"] == [["mailto:a@b", "not http"]]
        for op, paused in (("pause", True), ("pause", True), ("resume", False)):
            writer.write(json.dumps({"op": op, "id": 1}).encode() + b"\n")
            assert (await line_of(reader))["ok"] == {"paused": paused}
        writer.write(b'{"op": "stop", "id": 9}\n')
        assert (await line_of(reader))["ok"] == {"paused": False}
        assert crawl.stops == 1
        # the crawl's log tells what came through the socket; a pause when paused is no news
        assert crawl.lines == [f"paused {STOPPED_BY}", f"resumed {STOPPED_BY}", STOP_ASKED]
        writer.write(b"x" * (MAX_REQUEST_BYTES + 10) + b"\n")
        assert await asyncio.wait_for(reader.read(), CAP_S) == b""  # closed
        assert server.statistics().dropped == 1
        writer.close()


async def test_the_hello_tells_an_attached_console_how_to_resume_and_to_add_a_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attached console says what the crawl's own does once the run has ended: the
    resume line, and the command that adds a seed (issue #25 trial 15); from another
    directory, each goes to the crawl's first, where its relative paths lead (trial 16:
    ``--db att.db`` run elsewhere started a new crawl)."""
    crawl_dir, elsewhere = tmp_path / "my crawls", tmp_path / "elsewhere"
    crawl_dir.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(crawl_dir)
    db = crawl_dir / "crawl.db"
    command = ("crawldeck crawl", ("--db", "crawl.db", "--max-pages", "50", "seeds.txt"))
    hint = "resume with: crawldeck crawl seeds.txt --db crawl.db"
    server = AttachServer(Crawl(), db, resume_hint=hint, seed_command=command)  # type: ignore[arg-type]
    await server.start()
    try:
        source = await SocketSource.connect(db)
        assert (source.resume_hint, source.seed_command) == (hint, command)
        source.close()
        monkeypatch.chdir(elsewhere)
        source = await SocketSource.connect(Path("../my crawls/crawl.db"))
        go = f"cd '{crawl_dir}' && "
        assert source.resume_hint == f"resume with: {go}crawldeck crawl seeds.txt --db crawl.db"
        assert source.seed_command == (go + "crawldeck crawl", command[1])
        source.close()
    finally:
        await server.close("stopped")


async def test_a_stale_socket_is_replaced_and_a_live_one_is_not(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(socket_path(db)))
    stale.close()  # a killed crawl's: the name stays, nobody listens
    async with served(db, Crawl()) as server:
        assert server.path == socket_path(db)
        source = await SocketSource.connect(db)
        source.close()
        second = AttachServer(Crawl(), db)
        with pytest.raises(AttachError, match="another process answers on"):
            await second.start()
    assert not socket_path(db).exists()


async def test_a_path_over_the_sun_path_limit_goes_to_the_runtime_dir_with_a_pointer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    db = deep / "crawl.db"
    assert len(os.fsencode(socket_path(db))) > SUN_PATH_MAX
    # a short runtime dir (mode 0700): under pytest-xdist tmp_path/run plus the
    # socket's name went over the limit too, and the socket went to /tmp instead
    runtime = Path(tempfile.mkdtemp(prefix="cdrt-"))
    try:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        async with served(db, Crawl()) as server:
            assert server.path is not None and server.path.parent == runtime
            pointer = socket_path(db)
            assert stat.S_ISREG(os.lstat(pointer).st_mode)
            assert stat.S_IMODE(os.lstat(pointer).st_mode) == 0o600
            assert find_socket(db) == server.path
            source = await SocketSource.connect(db)
            assert source.snapshot().counters.pages == 0
            source.close()
        assert not socket_path(db).exists() and not os.listdir(runtime)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


#: A client run as another user: connects to the socket given as argv[1] and prints
#: what happened (one line).
CLIENT = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(60)
try:
    s.connect(sys.argv[1])
except PermissionError:
    print("permission denied"); sys.exit()
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(data.decode().strip() + " then closed")
"""


def as_nobody(path: Path) -> str:
    """``CLIENT`` as ``nobody`` (uid and gid 65534, no other group) on ``path``."""
    done = subprocess.run(
        [SYSTEM_PYTHON, "-c", CLIENT, str(path)], user=NOBODY, group=NOBODY, extra_groups=[],
        capture_output=True, text=True, timeout=CAP_S, check=False, cwd="/",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder of /tmp that every user may pass through (mode 0711), not list."""
    where = Path(tempfile.mkdtemp(prefix="crawldeck-attach-", dir="/tmp"))
    where.chmod(0o711)
    try:
        yield where
    finally:
        for item in where.iterdir():
            item.unlink()
        where.rmdir()


@pytest.mark.skipif(
    os.getuid() != 0 or not Path(SYSTEM_PYTHON).exists(),
    reason=f"runs a client as nobody with {SYSTEM_PYTHON}: needs root and Debian's Python",
)
async def test_another_user_is_refused_by_the_mode_and_by_the_peer_check_alone(
    open_folder: Path,
) -> None:
    where = open_folder
    crawl = Crawl()
    async with served(where / "crawl.db", crawl) as server:
        assert server.path is not None
        # the mode: 0600, so connect(2) itself is refused (unix(7))
        assert await asyncio.to_thread(as_nobody, server.path) == "permission denied"
        # the mode loosened: SO_PEERCRED still refuses another uid
        server.path.chmod(0o666)
        said = await asyncio.to_thread(as_nobody, server.path)
        assert said == (
            '{"t":"refused","why":"refused: this crawl\'s socket is for its own user '
            'only"} then closed'
        )
        assert server.statistics().refused == 1 and server.statistics().clients == 0
        mine = await SocketSource.connect(where / "crawl.db")  # its user still gets in
        assert mine.snapshot() == crawl.snapshot()
        mine.close()
