"""The seen set: a Bloom filter in front of the store's exact check."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from crawldeck.core.policy.seen import SeenSet
from crawldeck.core.records import FrontierRow
from crawldeck.core.storage.store import Store


class FakeStore:
    """A store whose frontier is a set; records every exact check and the thread it
    ran on (``asked`` is set at the first); while ``hold`` is an unset event, a check
    waits for it."""

    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.checked: list[str] = []
        self.threads: set[int] = set()
        self.hold: threading.Event | None = None
        self.asked = threading.Event()  # set by the first check

    def contains(self, key: str) -> bool:
        self.checked.append(key)
        self.threads.add(threading.get_ident())
        self.asked.set()
        if self.hold is not None:
            assert self.hold.wait(10)
        return key in self.keys


def frontier_row(key: str) -> FrontierRow:
    return FrontierRow(key=key, url=key, host="a.test", depth=1, priority=1)


def test_ten_thousand_keys_against_a_real_store(tmp_path: Path) -> None:
    keys = [f"http://a.test/page/{i}?q={i * 7}" for i in range(10_000)]
    with Store(tmp_path / "crawl.db") as store:
        seen = SeenSet(store)
        for i, key in enumerate(keys):
            assert seen.add_if_new(key) is True
            store.enqueue_urls([frontier_row(key)])
            seen.handed_over()
            if i == 5_000:
                store.flush()  # half of the keys committed, half still pending
        # At 1 % of the filter's capacity a false positive has odds ~1e-15 per key.
        assert (seen.added, seen.bloom_hits, seen.exact_checks) == (10_000, 0, 0)
        assert all(seen.add_if_new(key) is False for key in keys)
        assert (seen.added, seen.bloom_hits, seen.exact_checks) == (10_000, 10_000, 10_000)
        assert seen.false_positives == 0
        assert seen.add_if_new("http://a.test/new") is True
        assert 9_900 < seen.approx_items < 10_100


def test_a_false_positive_goes_to_the_store_and_is_still_new() -> None:
    store = FakeStore()
    seen = SeenSet(store)
    seen.rebuild(["http://a.test/x"])  # in the filter, not in the store: a false positive
    assert seen.add_if_new("http://a.test/x") is True
    assert store.checked == ["http://a.test/x"]
    assert (seen.bloom_hits, seen.exact_checks, seen.false_positives) == (1, 1, 1)
    store.keys.add("http://a.test/x")  # the caller stored it
    seen.handed_over()
    assert seen.add_if_new("http://a.test/x") is False
    assert (seen.bloom_hits, seen.exact_checks, seen.false_positives) == (2, 2, 1)
    assert store.checked == ["http://a.test/x"] * 2


def test_the_filter_says_absent_without_touching_the_store() -> None:
    store = FakeStore()
    seen = SeenSet(store)
    assert seen.add_if_new("a") is True
    assert store.checked == []


def test_an_overfull_filter_stays_exact() -> None:
    store = FakeStore()
    seen = SeenSet(store, expected_items=100, false_positive_rate=0.01)
    keys = [f"k{i}" for i in range(5_000)]  # 50x the filter's size: most answers are "maybe"
    for key in keys:
        assert seen.add_if_new(key) is True
        store.keys.add(key)
        seen.handed_over()
    assert seen.false_positives == seen.exact_checks == seen.bloom_hits
    assert seen.false_positives > 1_000
    assert not any(seen.add_if_new(key) for key in keys)
    assert seen.added == 5_000


def test_rebuild_from_the_store_on_resume(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    keys = [f"http://a.test/{i}" for i in range(1_000)]
    with Store(db) as store:
        store.enqueue_urls([frontier_row(k) for k in keys])
    with Store(db) as store:
        seen = SeenSet(store)
        assert seen.rebuild(store.iter_keys()) == 1_000
        assert not any(seen.add_if_new(key) for key in keys)
        assert (seen.bloom_hits, seen.exact_checks, seen.false_positives) == (1_000, 1_000, 0)
        assert seen.add_if_new("http://a.test/new") is True


def test_rebuild_empties_the_filter_first() -> None:
    store = FakeStore()
    seen = SeenSet(store)
    seen.add_if_new("old")
    seen.rebuild(["new"])
    assert seen.add_if_new("old") is True  # the filter forgot it; the store never had it
    assert store.checked == []


def test_a_key_added_twice_before_the_store_has_it_is_new_once() -> None:
    class Empty:
        def contains(self, key: str) -> bool:
            return False

    seen = SeenSet(Empty(), expected_items=1000)
    assert seen.add_if_new("http://a.test/b") is True
    assert seen.add_if_new("http://a.test/b") is False  # not yet in the store: held here
    seen.handed_over()
    # handed over: from now on the store answers (this one says absent: a false positive)
    assert seen.add_if_new("http://a.test/b") is True


def test_seen_among_asks_the_store_in_a_thread_in_one_batch() -> None:
    store = FakeStore()
    seen = SeenSet(store)
    for key in ("a", "b"):
        seen.add(key)
    seen.handed_over()
    store.keys = {"a"}  # "b" was never stored: the filter's "maybe" is a false positive

    async def go() -> set[str]:
        return await seen.seen_among(["a", "b", "c", "a"])

    assert asyncio.run(go()) == {"a"}
    assert store.checked == ["a", "b"]  # "c": the filter said absent, no exact check
    assert (seen.bloom_hits, seen.exact_checks, seen.false_positives) == (2, 2, 1)
    assert store.threads and threading.main_thread().ident not in store.threads


def test_a_key_added_while_a_check_is_in_flight_counts_as_seen() -> None:
    """Task A's exact check is held in its thread while task B admits both of A's keys
    (one the filter said absent for A, one it said maybe): A's answer has both, so no
    key is admitted twice."""
    store = FakeStore()
    seen = SeenSet(store)
    seen.add("maybe")
    seen.handed_over()  # the store does not have it: the exact check says absent
    release = threading.Event()
    store.hold = release

    async def go() -> set[str]:
        task = asyncio.create_task(seen.seen_among(["maybe", "fresh"]))
        assert await asyncio.to_thread(store.asked.wait, 10)  # A's check is in its thread
        seen.add("maybe")  # B admits both while A awaits
        seen.add("fresh")
        seen.handed_over()  # and queues their rows: the store's answer came before
        release.set()
        return await task

    assert asyncio.run(go()) == {"maybe", "fresh"}
    assert seen.false_positives == 0


def test_a_key_not_yet_handed_over_stays_seen_when_it_is_handed_over_during_a_check() -> None:
    """Task A asks about "unsent" (added, row not yet queued: the set of its own says
    seen) and "other" (exact check held in its thread); meanwhile the adder hands its
    keys over. A's answer still has "unsent": it was seen before A asked."""
    store = FakeStore()
    seen = SeenSet(store)
    seen.add("other")
    seen.handed_over()
    seen.add("unsent")  # its row is not in the store yet
    release = threading.Event()
    store.hold = release

    async def go() -> set[str]:
        task = asyncio.create_task(seen.seen_among(["unsent", "other"]))
        assert await asyncio.to_thread(store.asked.wait, 10)
        seen.handed_over()  # "unsent" leaves the set of its own while A awaits
        release.set()
        return await task

    assert asyncio.run(go()) == {"unsent"}
    assert store.checked == ["other"]
