"""The attach socket of a crawl (issue #25 item 8): the tests that need no server, process
or console (pure logic, the store, virtual time); the others are in
``tests/loopback/test_attach.py``, ``tests/console/test_attach.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from attachkit import Crawl
from clikit import main_in

from crawldeck.core.crawl.attach import (
    decode_answer,
    decode_frame,
    encode,
    find_socket,
    socket_path,
)
from crawldeck.core.crawl.snapshot import (
    HostDetail,
)
from crawldeck.core.errors import AttachError


def test_attach_with_no_running_crawl_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "crawl.db"
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "attach", str(db))
    assert (code, out) == (2, "")  # no such file: said so (issue #25 trial 19)
    assert err == f"crawldeck attach: error: no crawl file {db}: no such file\n"
    db.write_bytes(b"")  # an empty file is an empty SQLite database
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "attach", str(db))
    assert (code, out) == (2, "")
    assert err == (
        f"crawldeck attach: error: no running crawl on {db} (no socket {socket_path(db)})\n"
    )
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "attach", str(db), "--bind", "0.0.0.0")
    assert code == 2 and err == "crawldeck attach: error: --bind is for --web\n"
    # a file that is no crawl file is said to be one, as every other command says it
    # (issue #25 trial 13: "no running crawl on server.py")
    script = tmp_path / "server.py"
    script.write_text("print('a server')\n")
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "attach", str(script))
    assert (code, out) == (2, "")
    assert err == (
        f"crawldeck attach: error: {script} is not a SQLite crawl file (file is not a database)\n"
    )


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
    assert str(missing.value) == f"no crawl file {db}: no such file"
    db.write_bytes(b"")
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
