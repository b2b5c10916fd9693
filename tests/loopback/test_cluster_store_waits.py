"""Nothing in the cluster store waits forever (issue #22 item 2): a real ``redis-server``.

A worker's engine and frontier window once called ``ClusterStore.flush`` and
``load_spilled`` in threads, which waited for the worker's event loop; README's command
2 once hung in such a wait, and pytest could not exit after Ctrl-C. Since issue #24 item
4 they await ``drain`` and ``read_spilled`` on the loop (no thread waits for it), and a
drain on the loop ends when the flusher task ends (``aclose``, or the cancellation of
every task that ``asyncio.run`` makes on Ctrl-C): each with a one-line ``StoreError``.
And a Redis Cluster client's connect to a node that never completes it gives up after
the link's timeout (not redis-py's 5 s), which ``RedisLink`` takes for an outage:
retried, then a one-line ``ClusterError`` past ``outage_s``.

``CAP_S`` is not a bound under test: it is how long a test waits before it calls the
wait a hang (the bounds under test are the link's or none), so a slow machine cannot
fail it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from redisfix import LoopbackRedis

from crawldeck.core.cluster.keys import Keyspace
from crawldeck.core.cluster.leases import Leases
from crawldeck.core.cluster.link import RedisLink, open_client
from crawldeck.core.cluster.store import ClusterStore
from crawldeck.core.errors import ClusterError, StoreError
from crawldeck.core.records import FrontierRow

K = Keyspace("waits")
NOW = 1_700_000_000.0
#: How long (s) a test waits for a call before it calls it hung (see the module).
CAP_S = 60.0

_T = TypeVar("_T")


def seed(url: str) -> FrontierRow:
    """A seed's frontier row (depth 0, queued)."""
    return FrontierRow(
        key=url, url=url, host=url.split("/")[2], depth=0, priority=0, state="queued",
        available_at=0.0, attempts=0, redirects=(), via=None, score=1.0,
    )  # fmt: skip


async def started_store(url: str) -> tuple[ClusterStore, RedisLink]:
    """A started store over a new link to ``url`` (on the running loop)."""
    link = RedisLink(open_client(url), outage_s=5)
    await link.load_scripts()
    store = ClusterStore(
        K, link, "w0", Leases(10_000, clock=lambda: NOW), clock=lambda: NOW, hot_queue=1000
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
