"""What one hostile page may cost the crawl (issue #22 item 1): the parse worker is
given at most ``parse_max_bytes`` of a page, a page gives at most
``max_links_per_page`` links, and each cut is recorded on the page's row.

Structural facts only (what is passed, how many links); the memory these caps save
is measured by ``benchmarks/hostile_memory.py``. The crawls run against real loopback
servers.
"""

from __future__ import annotations

import os
import random
import signal
import threading
from pathlib import Path

import pytest

from crawldeck.core.config import CrawlConfig
from crawldeck.core.net import parse_worker
from crawldeck.core.net.parse_worker import Pipe
from crawldeck.core.policy.heap import GIVE_BACK_AFTER_BYTES
from crawldeck.core.policy.links import extract_links
from crawldeck.core.storage import warc_output
from crawldeck.core.storage.warc import PAYLOAD_FILE_BYTES
from crawldeck.core.storage.warc_output import WarcFiles

URL = "http://hostile.test/"
TOKEN = "crawldeck"
HEADERS = {"Content-Type": "text/html"}


def page_with_links(n: int, prefix: str = "/l/") -> bytes:
    """An HTML page of ``n`` distinct links ``PREFIX0`` .. ``PREFIX(n-1)``."""
    links = "".join(f'<a href="{prefix}{i}">{i}</a>\n' for i in range(n))
    return f"<html><body>{links}</body></html>".encode()


def test_a_page_gives_at_most_max_links_the_first_ones_after_deduplication() -> None:
    body = page_with_links(7000) + b'<a href="/l/0">again</a>'
    got = extract_links(body, URL, HEADERS, TOKEN, max_links=6000)
    assert got.links == [f"/l/{i}" for i in range(6000)]
    assert got.cut == "links_cut: kept 6000 of 7000 links (max_links_per_page)"


def test_a_page_at_the_link_cap_is_not_cut() -> None:
    got = extract_links(page_with_links(6000), URL, HEADERS, TOKEN, max_links=6000)
    assert len(got.links) == 6000
    assert got.cut is None


def test_the_defaults_are_heritrixs_link_cap_and_a_quarter_mebibyte_parsed() -> None:
    config = CrawlConfig()
    assert config.max_links_per_page == 6000
    assert config.parse_max_bytes == 256 * 1024
    assert config.parse_max_bytes < config.max_body_bytes


def test_a_parse_worker_gives_memory_back_after_a_big_page_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``core.net.parse_worker.serve`` on real pipes (in a thread of this process) calls
    ``core.policy.heap.give_back`` once per job of at least ``GIVE_BACK_AFTER_BYTES``, and
    never after a small one (the next parse would fault the memory in again)."""
    calls: list[str] = []

    def give_back() -> bool:
        calls.append("given")
        return True

    monkeypatch.setattr(parse_worker, "give_back", give_back)
    # serve ignores SIGINT and SIGHUP, which only the main thread may set
    monkeypatch.setattr(signal, "signal", lambda *args: None)

    def serve(bodies: list[bytes]) -> int:
        """The calls of one worker that answers ``bodies`` and ends."""
        calls.clear()
        job_r, job_w = os.pipe()
        ans_r, ans_w = os.pipe()
        thread = threading.Thread(target=parse_worker.serve, args=(job_r, ans_w))
        thread.start()
        jobs, conn = parse_worker.Pipe(job_w), parse_worker.Pipe(ans_r)
        try:
            assert conn.recv()[0] == "ready"
            for body in bodies:
                jobs.send((body, "http://a.test/", [], "crawldeck", True, 10))
                assert conn.recv()[0] == "ok"
            jobs.send(None)
            thread.join()
        finally:
            jobs.close()
            conn.close()
            os.close(job_r)
            os.close(ans_w)
        return len(calls)

    small = b'<a href="/a">a</a>' * 100
    big = b'<a href="/b">b</a>' * (GIVE_BACK_AFTER_BYTES // 18 + 1)
    assert serve([small, small, small]) == 0
    assert serve([big, small, big, small]) == 2


def test_the_warc_writer_gives_memory_back_after_a_payload_by_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``core.storage.warc_output.WarcFiles.exchange`` calls ``core.policy.heap.give_back``
    after a payload
    by file (over ``PAYLOAD_FILE_BYTES``: its chunks and gzip member are gone), not
    after a payload in memory."""
    calls: list[str] = []

    def give_back() -> bool:
        calls.append("given")
        return True

    monkeypatch.setattr(warc_output, "give_back", give_back)
    files = WarcFiles(tmp_path, "c", 1 << 30, [("software", "t")])
    big = tmp_path / "payload"
    big.write_bytes(b"<p>" + b"words " * PAYLOAD_FILE_BYTES)
    fields = [(b"Content-Type", b"text/html")]

    def exchange(url: str, payload: bytes | tuple[str, int]) -> None:
        files.exchange(url, "2024-05-01T12:00:00Z", None, 200, "1.1", "OK", fields, (),
                       payload, False, False, [], None)  # fmt: skip

    try:
        exchange("http://a.test/small", b"<p>small</p>")
        assert calls == []
        exchange("http://a.test/big", (str(big), big.stat().st_size))
        assert calls == ["given"]
        assert not big.exists()  # read and removed
    finally:
        files.close()


def test_a_pipe_carries_messages_bigger_than_the_pipe_buffer_and_reports_its_end() -> None:
    """``core.net.parse_worker.Pipe`` over a real pipe: a 1 MiB message (16 times Linux's
    pipe buffer, written by a thread while read) arrives whole and in order; once the
    writer closes, ``poll`` is true and ``recv`` raises ``EOFError``; a closed end
    raises ``OSError``."""
    read_fd, write_fd = os.pipe()
    reader, writer = Pipe(read_fd), Pipe(write_fd)
    big = random.Random(1).randbytes(1 << 20)
    sent = [("job", big, "http://a.test/", [("content-type", "text/html")]), None]

    def send_all() -> None:
        for message in sent:
            writer.send(message)
        writer.close()

    thread = threading.Thread(target=send_all)
    thread.start()
    try:
        assert reader.poll(60)
        got = [reader.recv(), reader.recv()]
    finally:
        thread.join()
    assert got == sent
    assert reader.poll(0)  # the end of the pipe is readable
    with pytest.raises(EOFError):
        reader.recv()
    reader.close()
    reader.close()  # again: nothing
    with pytest.raises(OSError):
        reader.poll(0)
    with pytest.raises(OSError):
        writer.send("late")
