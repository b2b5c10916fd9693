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
    decode_entry,
    encode_entry,
    path_prefix,
    score,
    seen_member,
    shard_of,
)
from crawldeck.core.cluster.link import RedisLink, open_client
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.prioritizer import importance_priority

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


def row(url: str, key: str | None = None, priority: int = 1, cash: float = 0.0) -> list[Any]:
    """``PUSH``'s row of ``url`` (as ``ClusterStore._push`` makes it), pushed at ``NOW``
    with OPIC ``cash`` (given to the URL as a credit if it is queued already)."""
    key = key or url
    entry = FrontierEntry(url, key, HOST, 1, priority, score=cash)
    return [str(seen_member(key)), str(score(priority, int(NOW * 1000))), path_prefix(url),
            encode_entry(entry), cash]  # fmt: skip


def survey() -> tuple[object, ...]:
    """``SURVEY`` of the test host's shard, later than every lease's deadline."""
    arg = json.dumps([K.tag(SHARD)])
    return ("script", "survey", [K.stream(SHARD)], [arg, int((NOW + 99) * 1000), NOW])


async def push_reply(
    link: RedisLink,
    rows: list[list[Any]],
    credits: list[list[Any]] | None = None,
    *,
    hot: int = 1000,
    queues: int = 0,
    now_ms: int = int(NOW * 1000),
    worker: str = "w9",
    inlinks: bool = False,
) -> list[int]:
    """``PUSH`` of ``rows`` and ``credits`` for ``HOST`` by ``worker`` (``inlinks``: the
    bands of ``opic-inlinks``); its reply for the host: ``[added, credited queued,
    credited handed out, credits lost]``."""
    arg = json.dumps([[HOST, rows, credits or []]])
    (reply,) = await link.batch([
        ("script", "push", [K.stream(SHARD)],
         [K.tag(SHARD), arg, hot, NOW, now_ms, queues, worker, "1" if inlinks else "0"]),
    ])  # fmt: skip
    return [int(n) for n in reply[0][1:]]


async def push(link: RedisLink, rows: list[list[Any]], hot: int = 1000) -> int:
    return (await push_reply(link, rows, hot=hot))[0]


async def claim(link: RedisLink, worker: str, lease_ms: int = 10_000) -> list[Any]:
    (reply,) = await link.batch([
        ("script", "claim", [K.stream(SHARD)],
         [K.tag(SHARD), worker, lease_ms, NOW + 1, int((NOW + 1) * 1000), 10]),
    ])  # fmt: skip
    return list(reply)


async def commit(link: RedisLink, worker: str, epoch: int, acks: list[str]) -> list[Any]:
    ops = wire.encode_ops([wire.op_mark(acks[0], "done", None, None)]) if acks else "[]"
    members = [str(seen_member(key)) for key in acks]
    arg = json.dumps([[HOST, epoch, members, NOW, False, ops, False, 0, {"pages": len(acks)}]])
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


async def test_a_pull_past_500_urls_hands_them_out_in_order_in_parts(link: RedisLink) -> None:
    """``PULL`` moves URLs 500 at a time (one HMGET, HDEL and HSET each): 1 100 of
    1 200 come out in the queue's order (one score: by member), each once, in ``:inf``
    with their entries, the rest queued."""
    urls = [f"http://{HOST}/p{i:04d}" for i in range(1200)]
    assert await push(link, [row(u) for u in urls], hot=5000) == 1200
    (_host, epoch, *_rest) = (await claim(link, "w1"))[0]
    arg = json.dumps([HOST, epoch, 1100])
    (reply,) = await link.batch([("script", "pull", [K.stream(SHARD)], [K.tag(SHARD), "w1", arg])])
    entries, left = reply
    members = sorted(urls, key=lambda u: str(seen_member(u)))
    assert [decode_entry(t, HOST).url for t in entries] == members[:1100]
    assert left == 100
    client = link.client
    assert await client.hlen(f"{BASE}:inf") == 1100 and await client.hlen(f"{BASE}:e") == 100
    assert await client.hget(f"{BASE}:inf", str(seen_member(members[0]))) == entries[0]


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
    assert renewed == [[HOST.encode(), 0, 0, []]]
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
    (_host, _ep, queued, _rec, _last, clean, _robots, pages) = (await claim(link, "w2"))[0]
    assert queued == 2 and clean == b"0"  # its previous owner did not release it
    assert pages is None  # nothing committed for it


async def test_a_claim_says_the_pages_committed_under_every_lease(link: RedisLink) -> None:
    """w1 commits a page of the host (no host row with it: w1 is killed before its
    next row); w2's claim says one page, so w2 goes on from 1, not from w1's last row."""
    await push(link, [row(f"http://{HOST}/a"), row(f"http://{HOST}/b")])
    epoch = (await claim(link, "w1", lease_ms=200))[0][1]
    arg = json.dumps([HOST, epoch, 2])
    await link.batch([("script", "pull", [K.stream(SHARD)], [K.tag(SHARD), "w1", arg])])
    assert await commit(link, "w1", epoch, [f"http://{HOST}/a"]) == []
    await asyncio.sleep(0.4)  # w1 dies
    await link.batch([survey()])
    (host, _ep, queued, rec, _last, clean, _robots, pages) = (await claim(link, "w2"))[0]
    assert (host, queued, rec, clean, pages) == (HOST.encode(), 1, None, b"0", b"1")


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
    await link.client.delete(f"{BASE}:q", f"{BASE}:e")
    (freed,) = await link.batch(
        [("script", "release", [K.stream(SHARD)], [K.tag(SHARD), "w1", args])]
    )
    assert freed == [[HOST.encode(), 1, 0]]
    assert await link.client.exists(f"{BASE}:lease") == 0
    assert await link.client.hget(f"{BASE}:st", "clean") == b"1"


QUEUES = 32  # the default front queues under opic: cash bands 0 .. 30
SPAN = 10**13


async def entry_of(link: RedisLink, url: str, where: str = "e") -> FrontierEntry:
    """The entry of ``url`` in the host's ``:e`` (queued) or ``:inf`` (handed out)."""
    text = await link.client.hget(f"{BASE}:{where}", str(seen_member(url)))
    assert text is not None, (url, where)
    return decode_entry(text, HOST)


async def test_credits_raise_a_queued_urls_cash_and_move_it_to_the_tail_of_its_band(
    link: RedisLink,
) -> None:
    first, u = f"http://{HOST}/first", f"http://{HOST}/u"
    assert await push(link, [row(first, priority=2, cash=0.25), row(u, priority=2, cash=0.25)]) == 2
    member = str(seen_member(u))
    # another worker found u too (its row is a credit: u is seen), and a worker that
    # knew u credits it; 1 s later
    later = int(NOW * 1000) + 1000
    reply = await push_reply(
        link, [row(u, priority=3, cash=0.125)], [[member, "u", 0.125]], queues=QUEUES,
        now_ms=later,
    )  # fmt: skip
    assert reply == [0, 2, 0, 0]
    e = await entry_of(link, u)
    assert (e.score, e.priority, e.url, e.depth) == (0.5, 1, u, 1)  # 0.5 is band 1
    assert await link.client.zscore(f"{BASE}:q", member) == 1 * SPAN + later
    assert await link.client.zscore(f"{BASE}:q", str(seen_member(first))) == 2 * SPAN + NOW * 1000
    # within its band it is a FIFO again: a credit that keeps the band keeps the place
    assert await push_reply(link, [], [[member, "u", 0.25]], queues=QUEUES) == [0, 1, 0, 0]
    assert (await entry_of(link, u)).score == 0.75
    assert await link.client.zscore(f"{BASE}:q", member) == 1 * SPAN + later
    # shares of a third add up as Python's floats do (17 digits kept)
    third = 1 / 3
    await push_reply(link, [], [[member, "u", third]] * 2, queues=QUEUES)
    assert (await entry_of(link, u)).score == 0.75 + third + third
    # the better band goes first, although first was pushed before it
    (_h, epoch, *_r) = (await claim(link, "w1"))[0]
    arg = json.dumps([HOST, epoch, 1])
    (reply_pull,) = await link.batch(
        [("script", "pull", [K.stream(SHARD)], [K.tag(SHARD), "w1", arg])]
    )
    assert [decode_entry(t, HOST).url for t in reply_pull[0]] == [u]
    assert await link.client.hexists(f"{BASE}:e", member) == 0


async def test_under_opic_inlinks_a_credit_counts_an_in_link_and_bands_by_importance(
    link: RedisLink,
) -> None:
    """u (cash 0.25, one in-link: importance 0.25, band (32 + 1) // 2 = 16) gets three
    credits: another worker's row with no cash (a page without cash still links to
    it) and two shares of 0.125: cash 0.5 and 4 in-links, importance 8 in [2^3, 2^4):
    band (32 - 4) // 2 = 14, as ``core.policy.prioritizer.importance_priority`` says; it
    moves to that band's tail, and first, uncredited, stays where it was."""
    first, u = f"http://{HOST}/first", f"http://{HOST}/u"
    assert (
        await push(link, [row(first, priority=16, cash=0.25), row(u, priority=16, cash=0.25)]) == 2
    )
    member = str(seen_member(u))
    later = int(NOW * 1000) + 1000
    reply = await push_reply(
        link, [row(u, priority=16, cash=0.0)], [[member, "u", 0.125], [member, "u", 0.125]],
        queues=QUEUES, now_ms=later, inlinks=True,
    )  # fmt: skip
    assert reply == [0, 3, 0, 0]
    e = await entry_of(link, u)
    assert (e.score, e.inlinks, e.priority) == (0.5, 4, importance_priority(0.5, 4, QUEUES))
    assert e.priority == 14  # 0.5 x 16 = 8 in [2^3, 2^4): (32 - 4) // 2
    assert await link.client.zscore(f"{BASE}:q", member) == 14 * SPAN + later
    first_entry = await entry_of(link, first)
    assert (first_entry.inlinks, first_entry.priority) == (1, 16)


async def test_a_push_sent_again_or_under_another_ordering_credits_nothing(
    link: RedisLink,
) -> None:
    u = f"http://{HOST}/u"
    await push(link, [row(u, priority=2, cash=0.25)])
    member = str(seen_member(u))
    assert await push_reply(link, [row(u, cash=0.25)], [[member, "u", 0.25]], queues=0) == [
        0, 0, 0, 0,
    ]  # fmt: skip
    e = await entry_of(link, u)
    assert (e.score, e.priority) == (0.25, 2)
    assert await link.client.zscore(f"{BASE}:q", member) == 2 * SPAN + NOW * 1000


async def test_a_handed_out_url_keeps_its_credit_for_the_next_owner_and_a_fetched_one_none(
    link: RedisLink,
) -> None:
    u, v = f"http://{HOST}/u", f"http://{HOST}/v"
    await push(link, [row(u, priority=1, cash=0.5), row(v, priority=1, cash=0.5)])
    epoch = (await claim(link, "w1", lease_ms=200))[0][1]
    arg = json.dumps([HOST, epoch, 2])
    await link.batch([("script", "pull", [K.stream(SHARD)], [K.tag(SHARD), "w1", arg])])
    assert await commit(link, "w1", epoch, [v]) == []  # v fetched
    credits = [[str(seen_member(u)), "u", 0.5], [str(seen_member(v)), "v", 0.5]]
    assert await push_reply(link, [], credits, queues=QUEUES) == [0, 0, 1, 1]
    e = await entry_of(link, u, "inf")
    assert (e.score, e.priority) == (1.0, 0)
    assert await link.client.hlen(f"{BASE}:inf") == 1  # v's credit made no entry
    assert await link.client.hexists(f"{BASE}:e", str(seen_member(v))) == 0
    # w1, u's owner, is told of w9's credit, not of its own
    await push_reply(link, [], [[str(seen_member(u)), "u", 0.25]], queues=QUEUES, worker="w1")
    assert await link.client.hgetall(f"{BASE}:cr") == {str(seen_member(u)).encode(): b"0.5"}
    await asyncio.sleep(0.4)  # w1 died with u handed out
    await link.batch([survey()])
    e = await entry_of(link, u)
    assert (e.score, e.priority) == (1.25, 0)
    assert await link.client.exists(f"{BASE}:cr") == 0  # the entry has it
    assert await link.client.zscore(f"{BASE}:q", str(seen_member(u))) == 0  # head of band 0


async def test_the_owner_takes_the_credits_to_its_urls_with_its_renewal_until_acked(
    link: RedisLink,
) -> None:
    u, v = f"http://{HOST}/u", f"http://{HOST}/v"
    mu, mv = str(seen_member(u)), str(seen_member(v))
    await push(link, [row(u, priority=2, cash=0.25), row(v, priority=2, cash=0.25)])
    epoch = (await claim(link, "w1"))[0][1]
    arg = json.dumps([HOST, epoch, 2])
    await link.batch([("script", "pull", [K.stream(SHARD)], [K.tag(SHARD), "w1", arg])])
    # w2 found u and v first-hand (rows: Redis has them), then credits u again; w1's
    # own row for u (it did not know it) is a credit it is told of too
    await push_reply(link, [row(u, cash=0.125), row(v, cash=0.0625)], queues=QUEUES, worker="w2")
    await push_reply(link, [], [[mu, "u", 0.125]], queues=QUEUES, worker="w2")
    await push_reply(link, [row(u, cash=0.5)], queues=QUEUES, worker="w1")
    hosts = json.dumps([[HOST, epoch]])
    renew = ("script", "renew", [K.stream(SHARD)],
             [K.tag(SHARD), "w1", 10_000, int(NOW * 1000), hosts])  # fmt: skip
    ((host, held, queued, flat),) = (await link.batch([renew]))[0]
    assert (host, held, queued) == (HOST.encode(), 1, 0)
    told = {flat[i].decode(): float(flat[i + 1]) for i in range(0, len(flat), 2)}
    assert told == {mu: 0.75, mv: 0.0625}
    assert (await entry_of(link, u, "inf")).score == 1.0
    ((_h, _held, _q, again),) = (await link.batch([renew]))[0]
    assert again == []  # taken once
    await push_reply(link, [], [[mu, "u", 0.25], [mv, "v", 0.25]], queues=QUEUES, worker="w2")
    assert await commit(link, "w1", epoch, [u]) == []  # u fetched: its credit goes
    assert await link.client.hkeys(f"{BASE}:cr") == [mv.encode()]


async def test_a_credit_finds_its_url_in_a_hot_hosts_sub_queue(link: RedisLink) -> None:
    urls = [f"http://{HOST}/{d}/p{i}" for d in ("docs", "api") for i in range(3)]
    await push(link, [row(u, priority=3, cash=0.2) for u in urls], hot=2)
    assert await link.client.zcard(f"{BASE}:q:api") == 3
    target = f"http://{HOST}/api/p1"
    member = str(seen_member(target))
    # by its prefix, and by a prefix that names no sub-queue (a key spelt otherwise)
    reply = await push_reply(link, [], [[member, "api", 0.1], [member, "API", 0.2]], queues=QUEUES)
    assert reply == [0, 2, 0, 0]
    e = await entry_of(link, target)
    assert e.score == 0.2 + 0.1 + 0.2 and e.priority == 1
    assert await link.client.zscore(f"{BASE}:q:api", member) == 1 * SPAN + NOW * 1000
    assert await link.client.zcard(f"{BASE}:q") == 2  # nothing moved between queues


async def test_per_ip_bookings_are_a_delay_apart_and_after_an_end(link: RedisLink) -> None:
    """Each booking has a new fencing token; another worker waits (for the hold's
    life left, in ms by Redis's clock) until the end carrying the worker's last token
    (an end with token 0, or an older one, frees nothing)."""
    key = K.ip_next("127.0.0.9")

    async def book(worker: str, now: float) -> list[str]:
        (reply,) = await link.batch(
            [("script", "ip_book", [key], [f"{NOW:.6f}", 0.5, f"{now:.6f}", worker, 3.0, 100])]
        )
        return [x.decode() if isinstance(x, bytes) else str(x) for x in reply]

    async def end(worker: str, at: float, token: int) -> None:
        await link.batch([("script", "ip_end", [key], [f"{at:.6f}", 0.5, worker, token])])

    assert await book("w1", NOW) == ["ok", f"{NOW:.6f}", "1"]
    assert await book("w1", NOW) == ["ok", f"{NOW + 0.5:.6f}", "2"]  # its own: a delay later
    kind, left = await book("w2", NOW)
    assert kind == "wait" and 3000 < int(left) <= 3500  # w1's second: 0.5 s + the 3 s hold
    await end("w1", NOW + 0.1, 0)  # the first's end, the second still booked
    await end("w1", NOW + 0.2, 1)  # an older token
    assert (await book("w2", NOW))[0] == "wait"
    await end("w1", NOW + 3, 2)
    assert await book("w2", NOW + 3) == ["ok", f"{NOW + 3.5:.6f}", "3"]  # a delay after the end
