"""The attach socket of a crawl (issue #25 item 8): ``core.crawl.attach.AttachServer`` on a
real Unix socket, ``tui.attach.SocketSource`` and the attached console against a real
headless crawl (``crawldeck demo --no-ui`` in a process), and ``crawldeck attach``.

The server's mechanics (bounds, dropped clients, stale sockets, long paths, another
user) run over the engine's seam (``core.crawl.attach.AttachTarget``) with ``Crawl``, a
crawl's snapshots in memory; everything else runs against a real crawl. The
browser's test is in ``tests/test_attach_web.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path

import pytest
from clikit import CRAWLDECK, main_in
from crawlkit import rows
from test_tui_snapshots import FakeEngine, settle, snapshot_at
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from crawldeck.core.crawl.attach import (
    ATTACHED_COMMANDS,
    MAX_REQUEST_BYTES,
    SUN_PATH_MAX,
    AttachServer,
    decode_answer,
    decode_frame,
    encode,
    find_socket,
    socket_path,
)
from crawldeck.core.crawl.snapshot import (
    BlockedRow,
    Counters,
    CrawlSnapshot,
    HostDetail,
    HostRow,
)
from crawldeck.core.errors import AttachError
from crawldeck.tui.app import CrawlApp
from crawldeck.tui.attach import DETACH_TIP, STOP_TIP, AttachedApp, SocketSource
from crawldeck.tui.screens import key_rows

#: The generous cap of every wait on a condition (a loaded 2-core machine).
CAP_S = 90.0
#: Debian's own Python: a user other than root can run it (the venv's lives under /root).
SYSTEM_PYTHON = "/usr/bin/python3"
#: The uid and gid of ``nobody``.
NOBODY = 65534


def wait_for(check: Callable[[], bool], what: str, cap_s: float = CAP_S) -> None:
    """Wait (polling every 50 ms) until ``check()``; fail naming ``what`` after ``cap_s``."""
    deadline = time.monotonic() + cap_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {cap_s:g} s for {what}")
        time.sleep(0.05)


async def until(check: Callable[[], bool], what: str, cap_s: float = CAP_S) -> None:
    """``wait_for`` on the event loop (it goes on running meanwhile)."""
    deadline = time.monotonic() + cap_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {cap_s:g} s for {what}")
        await asyncio.sleep(0.05)


@contextlib.contextmanager
def headless_demo(
    where: Path, *, delay_ms: int = 2000
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """``crawldeck demo --no-ui`` into ``where/demo.db`` with a long politeness delay
    (it keeps running while a test attaches; ``--max-time`` bounds it) and no
    rendering (no Chromium of its own), until its socket is there; SIGTERM (a clean
    stop) at the end if it still runs."""
    db = where / "demo.db"
    out = (where / "crawl.out").open("wb")
    err = (where / "crawl.err").open("wb")
    proc = subprocess.Popen(
        [CRAWLDECK, "demo", "--no-ui", "--db", str(db), "-s", f"delay_ms={delay_ms}",
         "-s", "render=never", "--max-time", "240"],
        cwd=where, stdout=out, stderr=err,
    )  # fmt: skip
    try:
        wait_for(lambda: socket_path(db).exists() or proc.poll() is not None, "the crawl's socket")
        assert proc.poll() is None, (where / "crawl.err").read_text()
        yield proc, db
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=CAP_S)
        out.close()
        err.close()


async def watch(source: SocketSource) -> tuple[asyncio.Task[object], list[CrawlSnapshot]]:
    """Read ``source`` in a task; the snapshots it gets, in order."""
    seen: list[CrawlSnapshot] = []
    source.subscribe(seen.append)
    return asyncio.create_task(source.run()), seen


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


async def test_the_attached_console_is_the_console_and_q_detaches(tmp_path: Path) -> None:
    with headless_demo(tmp_path) as (proc, db):
        source = await SocketSource.connect(db)
        app = AttachedApp(source, db)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(lambda: app.snapshot is not None, "the first picture")
            header = str(app.screen.query_one("#status").render())
            assert header.startswith(" crawldeck attach  RUNNING   "), header
            await pilot.press("p")
            assert app.display_state() == "PAUSED"
            await until(lambda: source.snapshot().state == "paused", "the crawl paused")
            keys = dict(key_rows(app.screen.active_bindings.values(), app.get_key_display))
            what = {k: v for k, v in keys.items() if "q" in k.split(", ") or k == "S"}
            assert what == {"q, d, ^c, ^q": DETACH_TIP, "S": STOP_TIP}, keys
            await pilot.press("q")
            await until(lambda: not app.is_running, "the console closed")
        source.close()
        assert app.result is None and app.error is None  # detached, not ended
        assert proc.poll() is None
        again = await SocketSource.connect(db)
        assert again.snapshot().state == "paused"  # the crawl as the console left it
        await asyncio.to_thread(again.resume)
        again.close()


class FakeSource(FakeEngine):
    """The fake crawl of the console's tests, as ``AttachedApp`` reads a source."""

    strict_robots = False
    resume_hint: str | None = None
    on_error: Callable[[str], None] | None = None


async def test_the_attached_header_fits_80_columns_as_the_consoles_does() -> None:
    """issue #25 item 7: ``crawl.db (attached)`` pushed the header's figures past 80
    columns; the attached console's title now leads the header from ``WIDE_HEADER``
    columns on, and is left out below, as the console's name is."""
    snaps = [snapshot_at(i) for i in range(31)]
    headers = []
    for app in (AttachedApp(FakeSource(snaps), Path("crawl.db")),  # type: ignore[arg-type]
                CrawlApp(FakeEngine(snaps), Path("crawl.db"))):  # fmt: skip
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            headers.append(str(app.screen.query_one("#status").render()))
    assert headers[0] == headers[1]
    assert headers[0].startswith(" RUNNING   crawl.db  pages 970/6000 · 28.4/s · in flight 3 · ETA")


async def test_the_attached_footer_shows_every_key_whole_at_80_columns() -> None:
    """issue #25 item 7: at 80 columns the attached console's footer cut ``S Stop crawl``
    to ``S S``; below 100 columns the footer is compact and every key is whole."""
    snaps = [snapshot_at(i) for i in range(31)]
    app = AttachedApp(FakeSource(snaps), Path("crawl.db"))  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        keys = list(app.screen.query(FooterKey))
        shown = [(k.key_display, k.description) for k in keys]
        assert shown[-2:] == [("?", "Help"), ("S", "Stop")]
        assert ("q", "Detach") in shown
        assert max(k.region.right for k in keys) <= 80
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert not app.screen.query_one(Footer).compact


async def test_shift_s_in_the_attached_console_stops_the_crawl(tmp_path: Path) -> None:
    with headless_demo(tmp_path) as (proc, db):
        source = await SocketSource.connect(db)
        app = AttachedApp(source, db)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("S")
            await until(lambda: app.result is not None, "the run's end")
            assert app.result is not None and app.result.outcome == "stopped"
            assert app.display_state() == "STOPPED"
            await pilot.press("q")
        source.close()
        await asyncio.to_thread(proc.wait, CAP_S)
    assert proc.returncode == 130


async def test_attach_without_a_terminal_says_so_in_one_line(tmp_path: Path) -> None:
    with headless_demo(tmp_path) as (_, db):
        done = await asyncio.to_thread(
            subprocess.run, [CRAWLDECK, "attach", str(db)], capture_output=True, text=True,
            timeout=CAP_S, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("crawldeck attach: error: no terminal on stdin")
    assert len(done.stderr.splitlines()) == 1


# --------------------------------------------------------------- the server


class Crawl:
    """A crawl's side of the socket in memory (``core.crawl.attach.AttachTarget``): snapshots
    of ``blocked_rows`` long refused URLs (a big frame), published on ``publish``."""

    def __init__(self, blocked_rows: int = 0) -> None:
        self.subscribers: list[Callable[[CrawlSnapshot], None]] = []
        self.state: str = "running"
        self.pages = 0
        self.stops = 0
        self.lines: list[str] = []
        url = "http://127.0.0.1/" + "x" * 2000
        self._blocked = tuple(
            BlockedRow(1.0, "calendar", "127.0.0.1", url) for _ in range(blocked_rows)
        )
        self._row = HostRow("127.0.0.1", 3, 1, 5, 0, 1000.0, "default", 1.0, 0.0, "ok")

    def subscribe(self, callback: Callable[[CrawlSnapshot], None]) -> None:
        self.subscribers.append(callback)

    def snapshot(self) -> CrawlSnapshot:
        return CrawlSnapshot(
            at=1.7e9 + self.pages, started_at=1.7e9, state=self.state,  # type: ignore[arg-type]
            counters=Counters(pages=self.pages), pages_per_s=1.0, bytes_per_s=1.0,
            window_s=10.0, max_pages=None, hosts=(self._row,), backoff=(),
            blocked=self._blocked, log=("a line",),
        )  # fmt: skip

    def publish(self) -> None:
        self.pages += 1
        snap = self.snapshot()
        for callback in self.subscribers:
            callback(snap)

    def pause(self) -> None:
        self.state = "paused"

    def resume(self) -> None:
        self.state = "running"

    @property
    def paused(self) -> bool:
        return self.state == "paused"

    def request_stop(self, by: str | None = None) -> None:
        self.stops += 1
        self.state = "stopping"

    def log(self, line: str) -> None:
        self.lines.append(line)

    async def add_seeds_live(self, seed_urls: Iterable[str]) -> list[tuple[str, str]]:
        return [(url, "not http") for url in seed_urls if not url.startswith("http")]

    def query_hosts(self, text: str = "", limit: int = 50) -> tuple[HostRow, ...]:
        return (self._row,) if text in self._row.host else ()

    def host_detail(self, host: str, queue_head: int = 20) -> HostDetail | None:
        if host != self._row.host:
            return None
        return HostDetail(self._row, ("http://127.0.0.1/a",)[:queue_head], (), "ok", None, ())


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
        assert crawl.lines == [ATTACHED_COMMANDS[op] for op in ("pause", "resume", "stop")]
        writer.write(b"x" * (MAX_REQUEST_BYTES + 10) + b"\n")
        assert await asyncio.wait_for(reader.read(), CAP_S) == b""  # closed
        assert server.statistics().dropped == 1
        writer.close()


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
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
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
    assert not socket_path(db).exists() and not any(runtime.iterdir())


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


def test_attach_with_no_running_crawl_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "crawl.db"
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "attach", str(db))
    assert (code, out) == (2, "")
    assert err == (
        f"crawldeck attach: error: no running crawl on {db} (no socket {socket_path(db)})\n"
    )
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "attach", str(db), "--bind", "0.0.0.0")
    assert code == 2 and err == "crawldeck attach: error: --bind is for --web\n"


def test_frames_carry_the_snapshot_itself_and_refuse_what_is_not_one() -> None:
    crawl = Crawl(blocked_rows=2)
    snap = crawl.snapshot()
    frame = decode_frame(encode({"t": "snap", "snap": snap}).rstrip(b"\n"))
    assert frame.t == "snap" and frame.snap == snap
    detail = crawl.host_detail("127.0.0.1")
    line = encode({"t": "reply", "id": 3, "ok": detail})
    assert decode_answer(line, decode_frame(line), HostDetail | None) == detail
    failed = encode({"t": "reply", "id": 4, "error": "the crawl is over"})
    with pytest.raises(AttachError, match=r"^the crawl is over$"):
        decode_answer(failed, decode_frame(failed), HostDetail | None)
    for bad in (b'{"t": "launch"}', b"not json", b'{"t": "snap", "snap": {"at": "x"}}'):
        with pytest.raises(AttachError, match=r"^a frame of the crawl's socket is not understood"):
            decode_frame(bad)


def test_find_socket_follows_a_pointer_file_and_names_what_is_missing(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    with pytest.raises(AttachError) as missing:
        find_socket(db)
    assert str(missing.value) == f"no running crawl on {db} (no socket {socket_path(db)})"
    socket_path(db).write_text("/run/user/0/crawldeck-0123456789abcdef.sock\n")
    assert find_socket(db) == Path("/run/user/0/crawldeck-0123456789abcdef.sock")
    socket_path(db).write_text("relative.sock\n")
    with pytest.raises(AttachError, match="names no socket path"):
        find_socket(db)
    socket_path(db).unlink()
    socket_path(db).mkdir()
    with pytest.raises(AttachError, match="neither a socket nor a pointer"):
        find_socket(db)
