"""Tests of core.policy.frontier (pure; time is a plain float)."""

from __future__ import annotations

import random
import sys
from collections import Counter
from dataclasses import dataclass, field

import pytest

from crawldeck.core.policy.frontier import Frontier
from crawldeck.core.policy.frontier_entry import FrontierEntry


def entry(host: str, name: str, priority: int = 1) -> FrontierEntry:
    url = f"http://{host}/{name}"
    return FrontierEntry(url=url, key=url, host=host, depth=0, priority=priority)


def name(e: FrontierEntry | None) -> str | None:
    """'host/name' of an entry, for readable assertions."""
    return None if e is None else e.url.removeprefix("http://")


def drain(f: Frontier, now: float = 0.0, release_at: float | None = None) -> list[str | None]:
    """Pop everything ready at now, releasing each host at once (at release_at or now)."""
    out: list[str | None] = []
    while (e := f.pop(now)) is not None:
        out.append(name(e))
        f.release(e.host, now if release_at is None else release_at)
        f._check()
    return out


def test_entry_defaults() -> None:
    e = FrontierEntry("http://a/", "http://a/", "a", 2, 1)
    assert (e.attempts, e.redirects, e.via, e.cookies, e.spent_s, e.score) == (
        0, (), None, (), 0.0, 0.0,
    )  # fmt: skip
    assert not hasattr(e, "__dict__")


def test_a_new_entry_takes_96_bytes_and_its_history_comes_on_first_need() -> None:
    """A link found on a page (no try, no redirect) holds no ``_History``, its ``via``
    in that slot instead: 8 slots, 96 bytes with the GC header. A try, or a redirect
    chain given to the constructor, makes one, which keeps ``via``, and each field
    reads back what was written."""
    e = FrontierEntry("http://a/", "http://a/", "a", 2, 1, via="http://s/", score=0.25)
    assert sys.getsizeof(e) == 96
    assert (e.inlinks, e.via, e._extra) == (1, "http://s/", "http://s/")
    e.attempts += 1
    e.spent_s += 1.5
    assert e._extra is not None and not isinstance(e._extra, str)  # a _History now
    assert (e.attempts, e.spent_s, e.redirects, e.cookies) == (1, 1.5, (), ())
    assert e.via == "http://s/"
    e.via = "http://t/"
    assert e.via == "http://t/" and e.attempts == 1
    seed = FrontierEntry("http://c/", "http://c/", "c", 0, 0)
    seed.via = "http://d/"
    assert (seed.via, seed.attempts) == ("http://d/", 0)
    hop = FrontierEntry(
        "http://b/", "http://b/", "b", 0, 0, 0, ("http://a/",), None, (("http://a/", "s=1"),)
    )
    assert (hop.redirects, hop.cookies, hop.attempts) == (
        ("http://a/",),
        (("http://a/", "s=1"),),
        0,
    )
    hop.redirects = ()
    hop.cookies = ()
    assert (hop.redirects, hop.cookies) == ((), ())


def test_entries_compare_by_every_field_and_show_them_all() -> None:
    a = FrontierEntry("http://a/", "k", "a", 2, 1, score=0.5)
    b = FrontierEntry("http://a/", "k", "a", 2, 1, score=0.5)
    assert a == b and a is not b
    b.attempts = 1
    assert a != b
    c = FrontierEntry("http://a/", "k", "a", 2, 1, score=0.5, inlinks=2)
    assert a != c
    assert a != ("http://a/", "k", "a", 2, 1)
    with pytest.raises(TypeError):
        hash(a)
    assert repr(a) == (
        "FrontierEntry(url='http://a/', key='k', host='a', depth=2, priority=1, attempts=0, "
        "redirects=(), via=None, cookies=(), spent_s=0.0, score=0.5, inlinks=1)"
    )


def test_fifo_per_host_and_round_robin_across_hosts() -> None:
    f = Frontier()
    for i in range(4):
        f.add(entry("a", f"{i}"))
        f.add(entry("b", f"{i}", priority=i % 3))
    f._check()
    assert (len(f), f.queued("a"), f.queued("b"), f.hosts()) == (8, 4, 4, 2)
    assert drain(f) == ["a/0", "b/0", "a/1", "b/1", "a/2", "b/2", "a/3", "b/3"]
    assert (len(f), f.queued("a"), f.hosts(), f.back_queues()) == (0, 0, 0, 0)


def test_pop_picks_smallest_ready_time_then_fifo() -> None:
    f = Frontier()
    for host in ("a", "b", "c"):
        f.add(entry(host, "1"))
        f.add(entry(host, "2"))
    # All three entered the heap at 0.0 in order a, b, c.
    assert name(f.pop(0.0)) == "a/1"
    assert name(f.pop(0.0)) == "b/1"
    f.release("b", 5.0)
    f.release("a", 7.0)
    assert f.next_ready_at() == 0.0
    assert name(f.pop(0.0)) == "c/1"
    assert f.pop(4.0) is None  # a and b are not ready yet, c is checked out
    f.release("c", 5.0)  # same time as b, but b entered the heap first
    assert f.next_ready_at() == 5.0
    assert f.pop(4.999) is None
    assert [name(f.pop(10.0)), name(f.pop(10.0)), name(f.pop(10.0))] == ["b/2", "c/2", "a/2"]
    assert f.pop(10.0) is None and f.next_ready_at() is None
    f._check()


def test_checked_out_host_is_not_popped_until_release() -> None:
    f = Frontier()
    f.add(entry("a", "1"))
    assert name(f.pop(0.0)) == "a/1"
    f.add(entry("a", "2"))
    f.add(entry("a", "3"))
    assert (len(f), f.queued("a"), f.hosts()) == (2, 2, 1)
    assert f.pop(1e9) is None
    assert f.next_ready_at() is None
    f.release("a", 3.0)
    assert f.next_ready_at() == 3.0
    assert name(f.pop(3.0)) == "a/2"
    f._check()


def test_release_with_nothing_queued_records_not_before() -> None:
    f = Frontier()
    f.add(entry("a", "1"))
    assert name(f.pop(0.0)) == "a/1"
    f.release("a", 10.0)
    assert f.next_ready_at() is None
    f.add(entry("a", "2"))
    assert f.next_ready_at() == 10.0
    assert f.pop(9.5) is None
    assert name(f.pop(10.0)) == "a/2"
    # An unknown host may be released too: its first URL waits for that time.
    f.release("z", 50.0)
    f.add(entry("z", "1"))
    f.add(entry("y", "1"))  # never seen: ready at 0
    assert f.next_ready_at() == 0.0
    assert name(f.pop(20.0)) == "y/1"
    assert f.pop(20.0) is None
    assert name(f.pop(50.0)) == "z/1"
    f._check()


def test_release_of_a_waiting_host_reschedules_it() -> None:
    f = Frontier()
    f.add(entry("a", "1"))
    f.add(entry("b", "1"))
    f.release("a", 30.0)  # not checked out: just moves its ready time
    f._check()
    assert name(f.pop(0.0)) == "b/1"
    assert f.pop(29.0) is None
    assert f.next_ready_at() == 30.0
    assert name(f.pop(30.0)) == "a/1"


def test_slot_limit_third_host_waits_in_front_queues() -> None:
    f = Frontier(priorities=3, max_back_queues=2)
    f.add(entry("a", "1"))
    f.add(entry("b", "1"))
    f.add(entry("b", "2"))  # b has a back queue: no slot needed
    f.add(entry("c", "1"))
    f.add(entry("c", "2"))
    f._check()
    assert (f.back_queues(), len(f), f.hosts()) == (2, 5, 3)
    assert (f.queued("a"), f.queued("b"), f.queued("c")) == (1, 2, 2)
    # c is not schedulable while both slots are taken.
    assert name(f.pop(0.0)) == "a/1"  # a's back queue empties: its slot goes to c
    f._check()
    assert f.back_queues() == 2
    assert name(f.pop(0.0)) == "b/1"
    assert name(f.pop(0.0)) == "c/1"
    # a comes back while the slots are held by b and c: it waits in front.
    f.add(entry("a", "2"))
    assert f.queued("a") == 1
    f.release("a", 0.0)
    assert f.pop(0.0) is None  # b and c are checked out, a is in a front queue
    f.release("b", 1.0)
    assert name(f.pop(1.0)) == "b/2"  # b's slot frees: a moves to a back queue
    assert f.back_queues() == 2
    f.release("c", 1.0)
    assert [name(f.pop(1.0)), name(f.pop(1.0))] == ["a/2", "c/2"]
    assert (len(f), f.hosts(), f.back_queues()) == (0, 0, 0)
    f._check()


def test_refill_takes_highest_priority_first() -> None:
    f = Frontier(priorities=3, max_back_queues=1)
    f.add(entry("x", "1"))
    f.add(entry("low", "1", priority=2))
    f.add(entry("mid", "1", priority=1))
    f.add(entry("high", "1", priority=0))
    f.add(entry("high", "2", priority=2))
    f.add(entry("mid", "2", priority=1))
    f.add(entry("odd", "1", priority=7))  # clamped to the lowest priority
    f.add(entry("neg", "1", priority=-3))  # clamped to the highest
    f._check()
    order = drain(f)
    # FIFO within a priority: high/1 came before neg/1; mid/2 follows mid/1 into its
    # back queue without a slot; high/2 waited in the lowest queue.
    assert order == ["x/1", "high/1", "neg/1", "mid/1", "mid/2", "low/1", "high/2", "odd/1"]


def test_push_front_puts_a_retry_at_the_head_even_past_the_limit() -> None:
    f = Frontier(priorities=2, max_back_queues=2)
    f.add(entry("a", "1"))
    f.add(entry("a", "2"))
    first = f.pop(0.0)
    assert first is not None
    first.attempts += 1
    f.push_front(first)
    assert (len(f), f.queued("a")) == (2, 2)
    f.release("a", 2.0)
    assert f.pop(1.0) is None
    assert name(f.pop(2.0)) == "a/1"
    f.release("a", 2.0)
    second = f.pop(2.0)
    assert name(second) == "a/2"
    assert second is not None
    assert f.back_queues() == 0  # a's back queue emptied at that pop
    f.add(entry("b", "1"))
    f.add(entry("c", "1"))
    f.add(entry("d", "1"))  # no slot: front queue
    assert (f.back_queues(), f.queued("d")) == (2, 1)
    second.attempts += 1
    f.push_front(second)  # a is checked out and has no back queue: a third one
    assert (f.back_queues(), f.queued("a"), len(f), f.hosts()) == (3, 1, 4, 4)
    f._check()
    assert f.next_ready_at() == 0.0  # b; a is still checked out
    f.release("a", 5.0)
    # b's pop leaves 2 back queues (a, c): still no slot for d until c's pop.
    assert drain(f, 3.0) == ["b/1", "c/1", "d/1"]
    assert f.pop(4.9) is None
    retried = f.pop(5.0)
    assert retried is second and retried.attempts == 1
    assert (len(f), f.hosts(), f.back_queues()) == (0, 0, 0)
    f._check()


def test_demote_moves_urls_to_the_lowest_front_queue_in_order() -> None:
    f = Frontier(priorities=3, max_back_queues=2)
    for i in range(3):
        f.add(entry("slow", f"{i}", priority=0))
    f.add(entry("b", "1"))
    f.add(entry("c", "1", priority=2))  # no slot: waits in front
    f.add(entry("d", "1", priority=1))  # no slot: waits in front
    f.release("slow", 100.0)
    f.demote("slow")
    f._check()
    # slow's slot went to d (priority 1 before 2); c and slow's URLs wait.
    assert (f.back_queues(), f.queued("slow"), len(f), f.hosts()) == (2, 3, 6, 4)
    assert drain(f, 0.0, release_at=0.0) == ["b/1", "d/1", "c/1"]
    assert f.next_ready_at() == 100.0  # its not-before time survives the demotion
    assert drain(f, 100.0) == ["slow/0", "slow/1", "slow/2"]
    f.demote("slow")  # nothing queued: nothing to do
    f.demote("never-seen")
    assert (len(f), f.hosts(), f.back_queues()) == (0, 0, 0)
    f._check()


def test_demote_with_free_slots_is_at_once_undone() -> None:
    f = Frontier(priorities=3, max_back_queues=8)
    f.add(entry("a", "1", priority=0))
    f.add(entry("a", "2", priority=0))
    f.demote("a")
    assert f.back_queues() == 1 and f.queued("a") == 2
    assert drain(f) == ["a/1", "a/2"]


def test_demote_of_checked_out_host() -> None:
    f = Frontier(priorities=2, max_back_queues=1)
    f.add(entry("a", "1"))
    f.add(entry("a", "2"))
    f.add(entry("b", "1", priority=0))
    assert name(f.pop(0.0)) == "a/1"
    f.demote("a")  # a/2 goes behind b in the front queues; b gets the slot
    f._check()
    f.release("a", 5.0)
    assert name(f.pop(0.0)) == "b/1"
    f.release("b", 0.0)
    assert f.pop(4.0) is None
    assert name(f.pop(5.0)) == "a/2"


def test_len_queued_and_hosts_after_mixed_operations() -> None:
    f = Frontier(priorities=3, max_back_queues=2)
    for i in range(3):
        f.add(entry("a", f"{i}"))
        f.add(entry("b", f"{i}"))
        f.add(entry("c", f"{i}", priority=i))
    assert (len(f), f.hosts(), f.queued("a"), f.queued("c")) == (9, 3, 3, 3)
    a0 = f.pop(0.0)
    assert name(a0) == "a/0"
    assert (len(f), f.queued("a")) == (8, 2)  # a checked-out URL is not queued
    assert a0 is not None
    f.push_front(a0)
    assert (len(f), f.queued("a")) == (9, 3)
    f.demote("b")
    assert (len(f), f.queued("b"), f.hosts()) == (9, 3, 3)
    f.release("a", 1.0)
    popped = drain(f, 1.0)
    assert len(popped) == 9
    assert [p for p in popped if p and p.startswith("a/")] == ["a/0", "a/1", "a/2"]
    assert [p for p in popped if p and p.startswith("c/")] == ["c/0", "c/1", "c/2"]
    assert [p for p in popped if p and p.startswith("b/")] == ["b/0", "b/1", "b/2"]
    assert (len(f), f.hosts(), f.queued("a"), f.queued("zzz")) == (0, 0, 0, 0)
    f._check()


def test_constructor_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError, match="priorities"):
        Frontier(priorities=0)
    with pytest.raises(ValueError, match="max_back_queues"):
        Frontier(max_back_queues=0)


# -- a randomized comparison with a naive reference model ------------------------------


@dataclass
class Model:
    """The frontier's rules written the slow, obvious way."""

    priorities: int
    max_back: int
    front: list[list[FrontierEntry]] = field(default_factory=list)
    back: dict[str, list[FrontierEntry]] = field(default_factory=dict)
    out: set[str] = field(default_factory=set)
    not_before: dict[str, float] = field(default_factory=dict)
    ready: dict[str, tuple[float, int]] = field(default_factory=dict)
    seq: int = 0

    def __post_init__(self) -> None:
        self.front = [[] for _ in range(self.priorities)]

    def _enter(self, host: str) -> None:
        self.ready[host] = (self.not_before.get(host, 0.0), self.seq)
        self.seq += 1

    def _new_back(self, e: FrontierEntry) -> None:
        self.back[e.host] = [e]
        if e.host not in self.out:
            self._enter(e.host)

    def _refill(self) -> None:
        while any(self.front):
            queue = next(q for q in self.front if q)
            head = queue[0]
            if head.host in self.back:
                self.back[head.host].append(queue.pop(0))
            elif len(self.back) < self.max_back:
                self._new_back(queue.pop(0))
            else:
                return

    def add(self, e: FrontierEntry) -> None:
        if e.host in self.back:
            self.back[e.host].append(e)
        elif len(self.back) < self.max_back:
            self._new_back(e)
        else:
            self.front[min(max(e.priority, 0), self.priorities - 1)].append(e)

    def push_front(self, e: FrontierEntry) -> None:
        if e.host in self.back:
            self.back[e.host].insert(0, e)
        else:
            self._new_back(e)

    def push_back(self, e: FrontierEntry) -> None:
        if e.host in self.back:
            self.back[e.host].append(e)
        else:
            self._new_back(e)

    def pop(self, now: float) -> FrontierEntry | None:
        candidates = [(r, s, h) for h, (r, s) in self.ready.items() if r <= now]
        if not candidates:
            return None
        _, _, host = min(candidates)
        del self.ready[host]
        self.out.add(host)
        e = self.back[host].pop(0)
        if not self.back[host]:
            del self.back[host]
            self._refill()
        return e

    def release(self, host: str, at: float) -> None:
        self.out.discard(host)
        self.not_before[host] = at
        if host in self.back:
            self._enter(host)

    def demote(self, host: str) -> None:
        if host not in self.back:
            return
        self.front[-1].extend(self.back.pop(host))
        self.ready.pop(host, None)
        self._refill()

    def next_ready_at(self) -> float | None:
        return min((r for r, _ in self.ready.values()), default=None)

    def queued(self) -> Counter[str]:
        """The URLs queued for each host, front and back queues together (one pass)."""
        counts = Counter(e.host for q in self.front for e in q)
        counts.update({host: len(queue) for host, queue in self.back.items()})
        return counts

    def __len__(self) -> int:
        return sum(map(len, self.front)) + sum(map(len, self.back.values()))

    def hosts(self) -> int:
        return len({e.host for q in self.front for e in q} | set(self.back))


def _retried_and_credited() -> tuple[Frontier, FrontierEntry]:
    """Under ``opic``: a/0 popped, pushed back behind a/1 and a/2 (to the lowest
    priority), then credited up one priority: a stale copy of it stays in the lowest
    FIFO."""
    f = Frontier(priorities=6, max_back_queues=1, ordering="opic")
    for n in range(3):
        f.add(FrontierEntry(f"a/{n}", f"a/{n}", "a", 1, 1))
    retry = f.pop(0.0)
    assert retry is not None and retry.key == "a/0"
    f.push_back(retry)
    assert retry.priority == 5  # the lowest, behind a/1 and a/2 at priority 1
    assert [e.key for e in f.peek("a", 10)] == ["a/1", "a/2", "a/0"]
    assert f.credit("a/0", 0.0) and retry.priority == 4
    f.release("a", 0.0)
    return f, retry


def test_push_back_under_opic_goes_behind_and_a_stale_copy_stays_stale() -> None:
    """A retry pushed back goes last whatever its host's URLs' priorities; the stale
    copy a credit leaves in the lowest FIFO is not made valid again by a second
    push_back of the URL, nor by a demotion (the Hypothesis ordering test found it)."""
    f, retry = _retried_and_credited()
    f.add(FrontierEntry("a/3", "a/3", "a", 1, 4))  # behind a/0, in the same FIFO
    popped = []
    for _ in range(3):
        popped.append(name(f.pop(0.0)))
        f.release("a", 0.0)
    assert popped == ["a/1", "a/2", "a/0"]  # a/3 keeps the host's back queue
    f.push_back(retry)  # tried again: back to the lowest FIFO, where its stale copy is
    f._check()
    assert (len(f), [e.key for e in f.peek("a", 10)]) == (2, ["a/3", "a/0"])
    assert drain(f, 0.0, release_at=0.0) == ["a/3", "a/0"]

    f, _ = _retried_and_credited()
    f.demote("a")  # each valid URL once to the lowest front queue
    f._check()
    assert (len(f), f.queued("a")) == (3, 3)
    assert drain(f, 0.0, release_at=0.0) == ["a/1", "a/2", "a/0"]


@pytest.mark.parametrize("seed", range(12))
def test_frontier_matches_reference_model(seed: int) -> None:
    rng = random.Random(seed)
    priorities = rng.choice([1, 2, 3])
    max_back = rng.choice([1, 2, 3, 5])
    f, m = Frontier(priorities, max_back), Model(priorities, max_back)
    hosts = [f"h{i}" for i in range(rng.choice([3, 6, 10]))]
    checked_out: list[FrontierEntry] = []
    now, n = 0.0, 0
    for _ in range(1500):
        op = rng.random()
        if op < 0.40:
            e = entry(rng.choice(hosts), str(n), priority=rng.randrange(-1, priorities + 1))
            n += 1
            f.add(e)
            m.add(e)
        elif op < 0.65:
            now += rng.choice([0.0, 0.0, 0.5, 1.0, 3.0])
            got, want = f.pop(now), m.pop(now)
            assert got is want
            if got is not None:
                checked_out.append(got)
        elif op < 0.85 and checked_out:
            done = checked_out.pop(rng.randrange(len(checked_out)))
            if rng.random() < 0.3:
                f.push_front(done)
                m.push_front(done)
            elif rng.random() < 0.3:
                f.push_back(done)
                m.push_back(done)
            at = now + rng.choice([0.0, 0.5, 2.0, 5.0])
            f.release(done.host, at)
            m.release(done.host, at)
        elif op < 0.90:
            host, at = rng.choice(hosts), now + rng.choice([0.0, 1.0, 4.0])
            if all(e.host != host for e in checked_out):
                f.release(host, at)
                m.release(host, at)
        elif op < 0.95:
            host = rng.choice(hosts)
            f.demote(host)
            m.demote(host)
        else:
            e = entry(rng.choice(hosts), str(n))
            n += 1
            f.push_front(e)
            m.push_front(e)
        f._check()
        assert len(f) == len(m)
        assert f.hosts() == m.hosts()
        assert f.back_queues() == len(m.back)
        assert f.next_ready_at() == m.next_ready_at()
        queued = m.queued()
        assert [f.queued(host) for host in hosts] == [queued[host] for host in hosts]


def test_peek_shows_the_head_of_a_host_queue_in_pop_order() -> None:
    f = Frontier(max_back_queues=1)
    for i in range(4):
        f.add(FrontierEntry(f"http://a/{i}", f"a{i}", "a", 1, 1))
    f.add(FrontierEntry("http://b/0", "b0", "b", 1, 1))
    assert [e.url for e in f.peek("a", 3)] == ["http://a/0", "http://a/1", "http://a/2"]
    assert f.peek("b", 3) == []  # waits in a front queue: no slot free
    assert f.peek("nobody", 3) == []
    popped = f.pop(0.0)
    assert popped is not None and popped.url == "http://a/0"
    assert [e.url for e in f.peek("a", 10)] == ["http://a/1", "http://a/2", "http://a/3"]


def test_soonest_lists_heap_hosts_by_ready_time_without_checked_out_ones() -> None:
    f = Frontier()
    for host, at in (("a", 5.0), ("b", 1.0), ("c", 3.0), ("d", 2.0)):
        f.add(FrontierEntry(f"http://{host}/", f"{host}0", host, 1, 1))
        f.add(FrontierEntry(f"http://{host}/x", f"{host}1", host, 1, 1))
        f.release(host, at)
    assert f.soonest(3) == ["b", "d", "c"]
    popped = f.pop(10.0)
    assert popped is not None and popped.host == "b"  # checked out: not in the heap
    assert f.soonest(10) == ["d", "c", "a"]
    f.release("b", 0.5)
    assert f.soonest(2) == ["b", "d"]
    assert Frontier().soonest(5) == []
