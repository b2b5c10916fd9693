"""Nothing in the cluster store waits forever (issue #22 item 2): a real ``redis-server``.

A worker's engine and frontier window call ``ClusterStore.flush`` and ``load_spilled``
in threads, which wait for the worker's event loop. README's command 2 once hung in
such a wait, and pytest could not exit after Ctrl-C. Now a thread waits at most the
store's ``wait_s`` (``flush_wait_s`` of ``redis_outage_s`` in a crawl; 0.2 s here) and
not at all for a loop that stopped, and a drain on the loop ends when the flusher task
ends (``aclose``, or the cancellation of every task that ``asyncio.run`` makes on
Ctrl-C): each with a one-line ``StoreError``. And a Redis Cluster client's connect
to a node that never completes it gives up after the link's timeout (not redis-py's
5 s), which ``RedisLink`` takes for an outage: retried, then a one-line
``ClusterError`` past ``outage_s``.

``CAP_S`` is not a bound under test: it is how long a test waits before it calls the
wait a hang (the bounds under test are 0.2 s or none), so a slow machine cannot fail it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import pytest
from redisfix import LoopbackRedis

from crawldeck.core.cluster.keys import Keyspace
from crawldeck.core.cluster.leases import Leases
from crawldeck.core.cluster.link import RedisLink, open_client
from crawldeck.core.cluster.store import ClusterStore
from crawldeck.core.errors import ClusterError, StoreError
from crawldeck.core.store import FrontierRow

K = Keyspace("waits")
NOW = 1_700_000_000.0
#: How long (s) a test waits for a call before it calls it hung (see the module).
CAP_S = 60.0
#: The store's bound on a thread's wait for the loop in these tests (s).
WAIT_S = 0.2

_T = TypeVar("_T")


def seed(url: str) -> FrontierRow:
    """A seed's frontier row (depth 0, queued)."""
    return FrontierRow(
        key=url, url=url, host=url.split("/")[2], depth=0, priority=0, state="queued",
        available_at=0.0, attempts=0, redirects=(), via=None, score=1.0,
    )  # fmt: skip


class LoopThread:
    """An event loop run by a thread of its own, as a worker's loop is to the threads
    that call ``flush``; ``run`` waits for a coroutine on it (at most ``CAP_S``)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = self._start()

    def _start(self) -> threading.Thread:
        thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        thread.start()
        return thread

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """``coro``'s result, run on the loop."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(CAP_S)

    def call(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the loop's thread (it may block the loop)."""
        self.loop.call_soon_threadsafe(fn)

    def stopped(self) -> None:
        """Wait until the loop has stopped (after ``loop.stop()`` was called on it)."""
        self._thread.join(CAP_S)
        assert not self._thread.is_alive()

    def resume(self) -> None:
        """Run the stopped loop again."""
        self._thread = self._start()

    def close(self) -> None:
        """Stop and close the loop."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.stopped()
        self.loop.close()


def outcome_in_thread(call: Callable[[], object]) -> BaseException | None:
    """What ``call()`` raised in a thread of its own (``None``: it returned).

    Raises:
        AssertionError: it still waits after ``CAP_S``: it hung.
    """
    caught: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
        except BaseException as exc:
            caught.append(exc)
        else:
            caught.append(None)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(CAP_S)
    assert not thread.is_alive(), f"still waiting after {CAP_S:g} s: a hang"
    return caught[0]


@pytest.fixture
def loop_thread() -> Iterator[LoopThread]:
    """An event loop in a thread (closed after)."""
    made = LoopThread()
    yield made
    if not made.loop.is_closed():
        made.close()


async def started_store(url: str) -> tuple[ClusterStore, RedisLink]:
    """A started store over a new link to ``url`` (on the running loop)."""
    link = RedisLink(open_client(url), outage_s=5)
    await link.load_scripts()
    store = ClusterStore(
        K,
        link,
        "w0",
        Leases(10_000, clock=lambda: NOW),
        clock=lambda: NOW,
        hot_queue=1000,
        wait_s=WAIT_S,
    )
    store.start()
    return store, link


async def closed(store: ClusterStore, link: RedisLink) -> None:
    """Close ``store`` (whatever its flusher left) and ``link``."""
    try:
        await store.aclose()
    finally:
        await link.aclose()


async def until(check: Callable[[], bool]) -> None:
    """Wait (polling every 10 ms) until ``check()``; fail after ``CAP_S``."""
    async with asyncio.timeout(CAP_S):
        while True:
            if check():
                return
            await asyncio.sleep(0.01)


async def queued(link: RedisLink, host: str) -> int:
    """How many URLs of ``host`` wait in its Redis queue."""
    return int(await link.client.zcard(f"{K.host(host)}:q"))


def test_a_flush_gives_up_at_its_bound_while_the_loop_is_blocked(
    redis_server: LoopbackRedis, loop_thread: LoopThread
) -> None:
    store, link = loop_thread.run(started_store(redis_server.url))
    gate = threading.Event()

    def write_then_block() -> None:  # on the loop: buffered, then nothing runs
        store.enqueue_urls([seed("http://a.test/")])
        gate.wait(CAP_S)

    try:
        loop_thread.call(write_then_block)
        error = outcome_in_thread(store.flush)
        assert isinstance(error, StoreError)
        assert str(error) == (
            "cluster store: flush waited 0.2 s for the event loop (blocked or stopped) and gave up"
        )
        gate.set()  # the loop runs again: the write given up on is sent, not lost
        assert outcome_in_thread(store.flush) is None
        assert loop_thread.run(queued(link, "a.test")) == 1
        assert store.statistics().queued == 1
    finally:
        gate.set()
        loop_thread.run(closed(store, link))


def test_a_flush_fails_at_once_when_the_loop_has_stopped(
    redis_server: LoopbackRedis, loop_thread: LoopThread
) -> None:
    store, link = loop_thread.run(started_store(redis_server.url))

    def write_then_stop() -> None:  # the flusher never gets to send it
        store.enqueue_urls([seed("http://a.test/")])
        loop_thread.loop.stop()

    try:
        loop_thread.call(write_then_stop)
        loop_thread.stopped()
        error = outcome_in_thread(store.flush)
        assert isinstance(error, StoreError)
        assert str(error) == "cluster store: flush needs the event loop, which has stopped"
        rows_read = outcome_in_thread(lambda: store.load_spilled("a.test", 0, 10))
        assert isinstance(rows_read, StoreError)
        assert "a read of queued URLs needs the event loop" in str(rows_read)
    finally:
        loop_thread.resume()
        loop_thread.run(closed(store, link))
    assert store.statistics().queued == 1  # sent once the loop ran again


async def test_a_drain_after_the_flusher_stopped_raises_instead_of_waiting(
    redis_server: LoopbackRedis,
) -> None:
    store, link = await started_store(redis_server.url)
    try:
        await store.aclose()
        store.enqueue_urls([seed("http://a.test/")])
        with pytest.raises(StoreError) as caught:
            await asyncio.wait_for(store.drain(), CAP_S)
        assert str(caught.value) == (
            "cluster store: the flusher has stopped with 1 buffer(s) of writes not sent"
        )
    finally:
        await link.aclose()


async def test_a_drain_waiting_on_redis_ends_when_the_flusher_is_cancelled(
    redis_server: LoopbackRedis,
) -> None:
    store, link = await started_store(redis_server.url)
    try:
        redis_server.kill()
        store.enqueue_urls([seed("http://a.test/")])
        drain = asyncio.create_task(store.drain())
        await until(lambda: link.down)  # the flusher retries the push through the outage
        assert not drain.done()
        for task in asyncio.all_tasks():  # what asyncio.run does to every task on Ctrl-C
            if task.get_name() == "cluster-flusher":
                task.cancel()
        with pytest.raises(StoreError) as caught:
            await asyncio.wait_for(drain, CAP_S)
        assert str(caught.value) == (
            "cluster store: the flusher has stopped with 1 buffer(s) of writes not sent"
        )
    finally:
        await link.aclose()


@contextlib.contextmanager
def unanswered_connects() -> Iterator[int]:
    """A port on 127.0.0.1 whose listener's backlog is full: the kernel drops new SYNs,
    so a connect to it neither completes nor fails (as to a node behind a firewall)."""
    with socket.socket() as listener, contextlib.ExitStack() as stack:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = int(listener.getsockname()[1])
        for _ in range(4):  # a backlog of 0 holds one or two; the rest wait for SYN-ACK
            sock = stack.enter_context(socket.socket())
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                sock.connect(("127.0.0.1", port))
        yield port


async def test_a_cluster_node_that_never_accepts_is_an_outage_with_a_bounded_connect() -> None:
    with unanswered_connects() as port:
        client = open_client(f"redis://127.0.0.1:{port}/0", cluster=True, timeout_s=0.2)
        link = RedisLink(client, outage_s=2)
        try:
            with pytest.raises(ClusterError) as caught:
                await asyncio.wait_for(link.load_scripts(), CAP_S)
        finally:
            await link.aclose()
    message = str(caught.value)
    assert message.startswith("Redis unreachable for 2 s: RedisClusterUnreachableError: ")
    assert "Timeout connecting" in message and "\n" not in message
    # connects cut at 0.2 s, so the 2 s hold several tries (a connect of redis-py's own
    # 5 s would hold one)
    assert link.stats.retries >= 3
