"""The Lua scripts of ``core.cluster.scripts`` against a real ``redis-server``.

Each test drives one script through ``RedisLink`` as a worker would and reads the keys
back (``core.cluster.keys`` layout): the seen set decides what is queued, a hot host
spills into path-prefix sub-queues, a claim takes a host with a new epoch, every write
of a stale epoch is refused (fencing), a release keeps a host whose URLs arrived, a
dead owner's URLs come back, and per-IP bookings are a delay apart.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redisfix import LoopbackRedis

from crawldeck.core.cluster import wire
from crawldeck.core.cluster.keys import (
    Keyspace,
    encode_entry,
    score,
    seen_member,
    shard_of,
)
from crawldeck.core.cluster.link import RedisLink, open_client
from crawldeck.core.cluster.store import path_prefix
from crawldeck.core.frontier import FrontierEntry

K = Keyspace("t")
HOST = "a.test"
SHARD = shard_of(HOST)
BASE = K.host(HOST)
NOW = 1_700_000_000.0


@pytest.fixture
async def link(redis_server: LoopbackRedis) -> AsyncIterator[RedisLink]:
    link = RedisLink(open_client(redis_server.url), outage_s=5)
    await link.load_scripts()
    yield link
    await link.aclose()


def row(url: str, key: str | None = None, priority: int = 1) -> list[str]:
    key = key or url
    entry = FrontierEntry(url, key, HOST, 1, priority)
    return [str(seen_member(key)), str(score(priority, int(NOW * 1000))), path_prefix(url),
            encode_entry(entry)]  # fmt: skip


def survey() -> tuple[object, ...]:
    """``SURVEY`` of the test host's shard, later than every lease's deadline."""
    arg = json.dumps([K.tag(SHARD)])
    return ("script", "survey", [K.stream(SHARD)], [arg, int((NOW + 99) * 1000), NOW])


async def push(link: RedisLink, rows: list[list[str]], hot: int = 1000) -> int:
    arg = json.dumps([[HOST, rows]])
    (reply,) = await link.batch(
        [("script", "push", [K.stream(SHARD)], [K.tag(SHARD), arg, hot, NOW])]
    )
    return int(reply[0][1])


async def claim(link: RedisLink, worker: str, lease_ms: int = 10_000) -> list[Any]:
    (reply,) = await link.batch([
        ("script", "claim", [K.stream(SHARD)],
         [K.tag(SHARD), worker, lease_ms, NOW + 1, int((NOW + 1) * 1000), 10]),
    ])  # fmt: skip
    return list(reply)


async def commit(link: RedisLink, worker: str, epoch: int, acks: list[str]) -> list[Any]:
    ops = wire.encode_ops([wire.op_mark(acks[0], "done", None, None)]) if acks else "[]"
    arg = json.dumps([[HOST, epoch, acks, NOW, False, ops, False, 0, {"pages": len(acks)}]])
    (fenced,) = await link.batch(
        [("script", "commit", [K.stream(SHARD)], [K.tag(SHARD), worker, arg])]
    )
    return list(fenced)


async def test_the_seen_set_queues_each_url_once_across_pushes(link: RedisLink) -> None:
    rows = [row(f"http://{HOST}/p{i}") for i in range(5)]
    assert await push(link, rows) == 5
    assert await push(link, [*rows[:3], row(f"http://{HOST}/p9")]) == 1
    client = link.client
    assert await client.zcard(f"{BASE}:q") == 6
    assert await client.scard(f"{BASE}:seen") == 6
    assert await client.zscore(f"{K.tag(SHARD)}:ready", HOST) == NOW  # claimable now


async def test_a_hot_host_spills_into_path_prefix_sub_queues(link: RedisLink) -> None:
    rows = [row(f"http://{HOST}/{d}/p{i}") for d in ("docs", "api") for i in range(6)]
    assert await push(link, rows, hot=4) == 12
    client = link.client
    assert await client.zcard(f"{BASE}:q") == 4
    subs = {
        str(s, "utf-8") if isinstance(s, bytes) else s
        for s in await client.smembers(f"{BASE}:subs")
    }
    assert subs == {"docs", "api"}
    assert await client.zcard(f"{BASE}:q:docs") == 2 and await client.zcard(f"{BASE}:q:api") == 6
    (host, epoch, queued, *_rest) = (await claim(link, "w1"))[0]
    assert (host, queued) == (HOST.encode(), 12)
    arg = json.dumps([HOST, epoch, 100])
    (reply,) = await link.batch([("script", "pull", [K.stream(SHARD)], [K.tag(SHARD), "w1", arg])])
    entries, left = reply
    assert len(entries) == 12 and left == 0
    assert await client.exists(f"{BASE}:subs", f"{BASE}:q:docs", f"{BASE}:q:api") == 0


async def test_claim_takes_a_host_once_with_a_new_epoch(link: RedisLink) -> None:
    await push(link, [row(f"http://{HOST}/")])
    first = await claim(link, "w1")
    assert [r[:3] for r in first] == [[HOST.encode(), 1, 1]]
    assert await claim(link, "w2") == []  # taken: not claimable any more
    assert await link.client.get(f"{BASE}:lease") == b"w1 1"
    assert await link.client.zscore(f"{K.tag(SHARD)}:owned", HOST) is not None


async def test_every_write_of_a_stale_epoch_is_refused(link: RedisLink) -> None:
    await push(link, [row(f"http://{HOST}/a"), row(f"http://{HOST}/b")])
    await claim(link, "w1", lease_ms=200)
    await asyncio.sleep(0.4)  # w1's lease runs out (it froze)
    await link.batch([survey()])
    second = await claim(link, "w2")
    assert second[0][1] == 2  # a new epoch
    client = link.client
    # w1 wakes up: its pull, its commit and its renewal all meet epoch 2
    arg = json.dumps([HOST, 1, 10])
    (pulled,) = await link.batch([("script", "pull", [K.stream(SHARD)], [K.tag(SHARD), "w1", arg])])
    assert pulled is None
    before = await client.xlen(K.stream(SHARD))
    assert await commit(link, "w1", 1, [f"http://{HOST}/a"]) == [HOST.encode()]
    assert await client.xlen(K.stream(SHARD)) == before
    (renewed,) = await link.batch([
        ("script", "renew", [K.stream(SHARD)],
         [K.tag(SHARD), "w1", 10_000, int(NOW * 1000), json.dumps([[HOST, 1]])]),
    ])  # fmt: skip
    assert renewed == [[HOST.encode(), 0, 0]]
    # the owner of epoch 2 writes
    assert await commit(link, "w2", 2, [f"http://{HOST}/a"]) == []
    assert await client.xlen(K.stream(SHARD)) == before + 1
    assert await client.hgetall(f"{K.tag(SHARD)}:counts") == {b"pages": b"1"}  # w2's only


async def test_a_dead_owners_urls_go_back_and_the_next_claim_says_unclean(link: RedisLink) -> None:
    await push(link, [row(f"http://{HOST}/a"), row(f"http://{HOST}/b")])
    epoch = (await claim(link, "w1", lease_ms=200))[0][1]
    arg = json.dumps([HOST, epoch, 2])
    await link.batch([("script", "pull", [K.stream(SHARD)], [K.tag(SHARD), "w1", arg])])
    assert await link.client.hlen(f"{BASE}:inf") == 2
    await asyncio.sleep(0.4)  # w1 died with both URLs handed out
    (counts,) = await link.batch([survey()])
    assert counts == [[1, 0, 1, []]]  # claimable again, owned by none, recovered
    assert await link.client.zcard(f"{BASE}:q") == 2
    (_host, _ep, queued, _rec, _last, clean, _robots) = (await claim(link, "w2"))[0]
    assert queued == 2 and clean == b"0"  # its previous owner did not release it


async def test_release_keeps_a_host_whose_urls_arrived_and_frees_an_empty_one(
    link: RedisLink,
) -> None:
    await push(link, [row(f"http://{HOST}/a")])
    epoch = (await claim(link, "w1"))[0][1]
    await push(link, [row(f"http://{HOST}/b")])  # another worker found one meanwhile
    args = json.dumps([[HOST, epoch, 0, NOW]])
    (kept,) = await link.batch(
        [("script", "release", [K.stream(SHARD)], [K.tag(SHARD), "w1", args])]
    )
    assert kept == [[HOST.encode(), 0, 2]]
    await link.client.delete(f"{BASE}:q")
    (freed,) = await link.batch(
        [("script", "release", [K.stream(SHARD)], [K.tag(SHARD), "w1", args])]
    )
    assert freed == [[HOST.encode(), 1, 0]]
    assert await link.client.exists(f"{BASE}:lease") == 0
    assert await link.client.hget(f"{BASE}:st", "clean") == b"1"


async def test_per_ip_bookings_are_a_delay_apart_and_after_an_end(link: RedisLink) -> None:
    key = K.ip_next("127.0.0.9")

    async def book(worker: str, now: float) -> list[str]:
        (reply,) = await link.batch(
            [("script", "ip_book", [key], [f"{NOW:.6f}", 0.5, f"{now:.6f}", worker, 3.0])]
        )
        return [bytes(x).decode() for x in reply]

    async def end(worker: str, at: float) -> None:
        await link.batch([("script", "ip_end", [key], [f"{at:.6f}", 0.5, worker])])

    assert await book("w1", NOW) == ["ok", f"{NOW:.6f}"]
    assert await book("w1", NOW) == ["ok", f"{NOW + 0.5:.6f}"]  # its own: a delay later
    assert await book("w2", NOW) == ["wait", f"{NOW + 0.5 + 3.0:.6f}"]  # w1 not ended
    await end("w1", NOW + 3)
    assert await book("w2", NOW + 3) == ["ok", f"{NOW + 3.5:.6f}"]  # a delay after the end
