"""The frontier window (``core.policy.window.FrontierWindow``) over an in-memory spill store.

``FakeSpillStore`` keeps spilled rows as SQLite does for the window: a written row is
seen by ``load_spilled`` only once ``flush`` committed it (``read_spilled`` flushes
when a read comes back short, as ``Store``'s does), rows come back in ``seq``
order after ``after_seq``, and a row read back stays there (state ``spilled``, as until
its page is recorded; here for ever). Unit tests pin the window's figures at each step;
a Hypothesis property runs random admissions, pops, releases, retries, parks and
read-backs (some left in flight across the next operations) against a reference model: every
admitted URL is popped exactly once (once more per retry), in FIFO order per host;
memory holds at most ``frontier_window`` URLs and a host at most its share, retries
pushed back at the head aside (``push_front`` is never refused).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from fakeclock import EPOCH, FakeClock
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.errors import StoreError
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.prioritizer import Ordering, Prioritizer
from crawldeck.core.policy.window import FrontierWindow, WindowStatistics
from crawldeck.core.records import FrontierRow

T = EPOCH


class FakeSpillStore:
    """``SpillStore`` in memory: writes wait for ``flush`` as the store's writer does.

    Attributes:
        committed: ``(seq, row)`` of every committed spilled row, in seq order.
        pending: rows written and not committed yet.
        flushes: ``flush`` calls. loads: ``load_spilled`` calls, ``(host, after, limit)``.
    """

    def __init__(self) -> None:
        self.committed: list[tuple[int, FrontierRow]] = []
        self.pending: list[FrontierRow] = []
        self.flushes = 0
        self.loads: list[tuple[str, int, int]] = []
        self._seq = 0

    def write(self, row: FrontierRow) -> None:
        """Queue ``row`` for the next commit (``Store.enqueue_urls``)."""
        self.pending.append(row)

    def flush(self) -> None:
        self.flushes += 1
        for row in self.pending:
            self._seq += 1
            self.committed.append((self._seq, row))
        self.pending.clear()

    def load_spilled(self, host: str, after_seq: int, limit: int) -> tuple[list[FrontierRow], int]:
        self.loads.append((host, after_seq, limit))
        found = [
            (seq, row)
            for seq, row in self.committed
            if row.host == host and row.state == "spilled" and seq > after_seq
        ][:limit]
        return [row for _, row in found], found[-1][0] if found else after_seq

    async def read_spilled(
        self, host: str, after: int, limit: int, *, within_s: float = 0.0
    ) -> tuple[list[FrontierRow], int]:
        """``SpillStore.read_spilled`` as ``Store``'s: in a thread, ``load_spilled``,
        and ``flush`` and again when short."""
        return await asyncio.to_thread(self._read, host, after, limit)

    def _read(self, host: str, after: int, limit: int) -> tuple[list[FrontierRow], int]:
        rows, last = self.load_spilled(host, after, limit)
        if len(rows) < limit:
            self.flush()
            rows, last = self.load_spilled(host, after, limit)
        return rows, last


def url(host: str, n: int) -> str:
    return f"http://{host}/{n}"


class Crawl:
    """The window as the engine drives it: ``place``, then ``add`` or a spilled row."""

    def __init__(self, window: int, ordering: Ordering = "bfs") -> None:
        self.store = FakeSpillStore()
        self.read_back: list[list[str]] = []
        self.window = FrontierWindow(
            window, self.store, self._read_back, prioritizer=Prioritizer(ordering)
        )
        self.counts: dict[str, int] = {}

    def _read_back(self, rows: Sequence[FrontierRow]) -> None:
        self.read_back.append([row.url for row in rows])

    def admit(self, host: str, *, spill: bool = True) -> str:
        """Admit the next URL of ``host``; its URL."""
        n = self.counts.get(host, 0)
        self.counts[host] = n + 1
        u = url(host, n)
        if self.window.place(host, spill=spill):
            self.window.add(FrontierEntry(u, u, host, 1, 1))
        else:
            self.store.write(FrontierRow(u, u, host, 1, 1, state="spilled"))
        return u

    async def pop(self, now: float = T) -> str | None:
        """Pop the next URL and release its host at once, and let the reads it started
        return; the URL or ``None``."""
        entry = await pop_settled(self.window, now)
        if entry is None:
            return None
        self.window.release(entry.host, now)
        return entry.url


async def pop_settled(window: FrontierWindow, now: float) -> FrontierEntry | None:
    """``window.pop(now)``, once the reads it started have returned."""
    entry = window.pop(now)
    await window.settle()
    return entry


async def brought_in(window: FrontierWindow) -> bool:
    """``window.bring_in()``, once its reads have returned: whether URLs came back."""
    before = window.read_back_total
    window.bring_in()
    await window.settle()
    return window.read_back_total > before


def test_a_host_fills_its_share_then_spills() -> None:
    crawl = Crawl(16)  # share 2
    for _ in range(3):
        crawl.admit("a.test")
    assert crawl.window.statistics() == WindowStatistics(
        in_memory=2,
        spilled=1,
        spilled_hosts=1,
        waiting_hosts=0,
        read_back=0,
        window=16,
        host_share=2,
    )
    assert crawl.window.queued("a.test") == 3
    assert crawl.window.in_memory("a.test") == 2
    assert crawl.window.total() == 3
    assert len(crawl.window) == 2
    assert crawl.store.pending == [
        FrontierRow(url("a.test", 2), url("a.test", 2), "a.test", 1, 1, state="spilled")
    ]


async def test_a_host_with_spilled_urls_spills_the_next_ones_too() -> None:
    """FIFO per host: once a host has URLs in the store, a new one may not overtake
    them in memory, even when its share has room again."""
    crawl = Crawl(40)  # share 5: read back at 2 left
    for _ in range(7):
        crawl.admit("a.test")  # 0-4 in memory, 5 and 6 spilled
    assert await crawl.pop() == url("a.test", 0)
    assert crawl.window.in_memory("a.test") == 4  # below its share, and yet:
    crawl.admit("a.test")
    assert crawl.window.statistics() == WindowStatistics(4, 3, 1, 0, 0, 40, 5)
    assert [await crawl.pop() for _ in range(8)] == [url("a.test", n) for n in range(1, 8)] + [None]


def test_a_full_window_spills_a_new_host_which_then_waits() -> None:
    crawl = Crawl(16)
    for i in range(8):
        crawl.admit(f"h{i}.test")
        crawl.admit(f"h{i}.test")
    assert len(crawl.window) == 16
    crawl.admit("new.test")
    assert crawl.window.statistics() == WindowStatistics(16, 1, 1, 1, 0, 16, 2)
    assert crawl.window.in_memory("new.test") == 0
    assert crawl.window.hosts_active(set()) == 9


async def test_a_pop_reads_a_host_back_when_its_queue_is_half_empty() -> None:
    crawl = Crawl(16)  # share 2: read back at 1 left
    for _ in range(4):
        crawl.admit("a.test")
    assert len(crawl.store.pending) == 2 and crawl.store.committed == []
    assert await crawl.pop() == url("a.test", 0)
    # nothing committed yet: one read, a flush, a second read from the same cursor
    assert crawl.store.loads == [("a.test", 0, 1), ("a.test", 0, 1)]
    assert crawl.store.flushes == 1
    assert crawl.read_back == [[url("a.test", 2)]]
    assert crawl.window.statistics() == WindowStatistics(2, 1, 1, 0, 1, 16, 2)
    assert await crawl.pop() == url("a.test", 1)
    # the cursor moved on past seq 1: the row read back (still spilled) is not read again
    assert crawl.store.loads[2:] == [("a.test", 1, 1)]
    assert crawl.store.flushes == 1  # the row was committed already
    assert crawl.read_back[1:] == [[url("a.test", 3)]]
    assert crawl.window.statistics() == WindowStatistics(2, 0, 0, 0, 2, 16, 2)
    assert [await crawl.pop(), await crawl.pop(), await crawl.pop()] == [
        url("a.test", 2),
        url("a.test", 3),
        None,
    ]
    assert crawl.window.total() == 0


async def test_waiting_hosts_are_read_back_in_the_order_they_started_waiting() -> None:
    crawl = Crawl(16)
    for i in range(8):
        crawl.admit(f"h{i}.test")
        crawl.admit(f"h{i}.test")
    crawl.admit("late.test")
    crawl.admit("later.test")
    assert crawl.window.statistics().waiting_hosts == 2
    popped = [await crawl.pop() for _ in range(8)]  # memory from 16 down to 8
    assert popped == [url(f"h{i}.test", 0) for i in range(8)]
    assert crawl.read_back == []
    # memory at half the window: the pop starts reading both hosts back, late first,
    # and their URLs come in when the reads return
    assert await crawl.pop() == url("h0.test", 1)
    assert crawl.read_back == [[url("late.test", 0)], [url("later.test", 0)]]
    assert crawl.window.statistics() == WindowStatistics(9, 0, 0, 0, 2, 16, 2)
    assert await crawl.pop() == url("late.test", 0)


async def test_bring_in_reads_waiting_hosts_when_nothing_is_ready() -> None:
    crawl = Crawl(16)
    for i in range(8):
        crawl.admit(f"h{i}.test")
        crawl.admit(f"h{i}.test")
    crawl.admit("late.test")
    window = crawl.window
    for i in range(8):
        window.release(f"h{i}.test", T + 10)  # every host waits 10 s (a backoff, say)
    assert await brought_in(window) is False  # the window is full
    assert window.drop_host("h7.test") == 2  # parked: 14 left, above half the window
    assert await pop_settled(window, T) is None
    assert crawl.read_back == []
    assert await brought_in(window) is True
    assert crawl.read_back == [[url("late.test", 0)]]
    assert await crawl.pop() == url("late.test", 0)
    assert await brought_in(window) is False  # nobody waits


def test_spill_false_keeps_a_url_in_memory_past_the_window() -> None:
    """A redirect hop carries its chain's cookies, which the store does not keep."""
    crawl = Crawl(8)  # share 1
    crawl.admit("a.test")
    crawl.admit("a.test")  # spilled
    crawl.admit("a.test", spill=False)
    assert crawl.window.statistics() == WindowStatistics(2, 1, 1, 0, 0, 8, 1)


async def test_a_host_emptied_while_retries_fill_the_window_waits_for_room() -> None:
    """A retry goes back to memory whatever the window (``push_front``): a host whose
    last URL is popped then has no room to read its spilled ones into, and waits."""
    crawl = Crawl(8)  # share 1
    window = crawl.window
    for i in range(8):
        crawl.admit(f"h{i}.test")
    crawl.admit("h0.test")  # spilled: h0's share is 1
    window.release("h0.test", T + 5)
    retry = await pop_settled(window, T)
    assert retry is not None and retry.url == url("h1.test", 0)
    crawl.admit("x.test")  # memory 8 again
    retry.attempts += 1
    window.push_front(retry)  # memory 9: past the window
    window.release("h1.test", T + 10)
    for host in [f"h{i}.test" for i in range(2, 8)] + ["x.test"]:
        window.release(host, T + 20)
    assert window.statistics() == WindowStatistics(9, 1, 1, 0, 0, 8, 1)
    entry = await pop_settled(window, T + 5)
    assert entry is not None and entry.url == url("h0.test", 0)
    # memory 8 after the pop: no room to read h0's spilled URL back; h0 waits
    assert window.statistics() == WindowStatistics(8, 1, 1, 1, 0, 8, 1)
    assert await brought_in(window) is False
    entry = await pop_settled(window, T + 10)
    assert entry is not None and entry.url == url("h1.test", 0) and entry.attempts == 1
    assert await brought_in(window) is True  # memory 7: h0 comes back
    assert crawl.read_back == [[url("h0.test", 1)]]
    assert window.statistics() == WindowStatistics(8, 0, 0, 0, 1, 8, 1)


async def test_drop_host_forgets_memory_and_store_and_says_how_many() -> None:
    crawl = Crawl(16)
    for _ in range(5):
        crawl.admit("a.test")
    crawl.admit("b.test")
    assert crawl.window.drop_host("a.test") == 5
    assert crawl.window.queued("a.test") == 0
    assert crawl.window.statistics() == WindowStatistics(1, 0, 0, 0, 0, 16, 2)
    assert await crawl.pop() == url("b.test", 0)
    assert await crawl.pop() is None


async def test_restore_counts_an_earlier_runs_spilled_urls() -> None:
    """A resume: the queued rows are added first, then the spilled counts; a host with
    none in memory waits and comes back when the window has room."""
    store = FakeSpillStore()
    for n in range(3):
        store.write(
            FrontierRow(url("old.test", n), url("old.test", n), "old.test", 2, 1, state="spilled")
        )
    store.write(FrontierRow(url("b.test", 1), url("b.test", 1), "b.test", 2, 1, state="spilled"))
    store.flush()
    window = FrontierWindow(16, store)
    window.add(FrontierEntry(url("b.test", 0), url("b.test", 0), "b.test", 1, 1))
    window.restore({"old.test": 3, "b.test": 1})
    assert window.statistics() == WindowStatistics(1, 4, 2, 1, 0, 16, 2)
    assert window.total() == 5
    assert window.hosts_active(set()) == 2
    entry = await pop_settled(window, T)  # memory 1 <= 8: old.test is read back first
    assert entry is not None and entry.url == url("b.test", 0)
    assert window.statistics() == WindowStatistics(3, 1, 1, 0, 3, 16, 2)
    assert window.peek("old.test", 5) == [
        FrontierEntry(url("old.test", n), url("old.test", n), "old.test", 2, 1) for n in range(2)
    ]


async def test_a_resumed_larger_sites_first_window_ranks_hosts_by_their_spilled_urls() -> None:
    """A resume under larger-sites-first: big.test has 1 URL queued in memory and 6
    spilled (``restore``), small.test 2 in memory and added first: big.test goes
    first (7 pending, 3 bits, against 2)."""
    store = FakeSpillStore()
    for n in range(1, 7):
        store.write(FrontierRow(url("big.test", n), url("big.test", n), "big.test", 2, 1,
                                state="spilled"))  # fmt: skip
    store.flush()
    window = FrontierWindow(16, store, prioritizer=Prioritizer("larger-sites-first"))
    for u in (url("small.test", 0), url("small.test", 1), url("big.test", 0)):
        window.add(FrontierEntry(u, u, u.split("/")[2], 1, 1))
    window.restore({"big.test": 6})
    entry = await pop_settled(window, T)
    assert entry is not None and entry.url == url("big.test", 0)
    assert (window.in_memory("big.test"), window.queued("big.test")) == (2, 6)


async def test_drain_reads_every_spilled_host_back() -> None:
    store = FakeSpillStore()
    for n in range(3):
        store.write(
            FrontierRow(url("old.test", n), url("old.test", n), "old.test", 2, 1, state="spilled")
        )
    window = FrontierWindow(16, store)
    window.restore({"old.test": 3})
    assert await window.drain() is True
    assert store.flushes == 1
    assert window.statistics() == WindowStatistics(2, 1, 1, 0, 2, 16, 2)


async def test_a_spilled_count_without_rows_is_dropped_and_drain_says_so() -> None:
    """Only after a crash or a kill: the count says 2, the store has nothing."""
    window = FrontierWindow(16, FakeSpillStore())
    window.restore({"gone.test": 2})
    assert window.total() == 2
    assert await window.drain() is False
    assert window.statistics() == WindowStatistics(0, 0, 0, 0, 0, 16, 2)
    assert window.total() == 0


async def test_larger_sites_first_counts_a_hosts_spilled_urls() -> None:
    """A window of 16 (a host's share 2). small.test has 2 URLs, in memory; big.test 8,
    2 in memory and 6 spilled: both hold 2 in memory, but big.test goes first, since
    larger-sites-first ranks a host by all its pending URLs (8: bit length 4, against
    2), though small.test became ready first. Read back, its URLs keep the count; once
    it is dropped (parked), nothing of it is counted."""
    crawl = Crawl(16, "larger-sites-first")
    fw = crawl.window
    for _ in range(2):
        crawl.admit("small.test")
    for _ in range(8):
        crawl.admit("big.test")
    crawl.store.flush()
    assert (fw.in_memory("big.test"), fw.queued("big.test"), fw.queued("small.test")) == (2, 8, 2)
    assert await crawl.pop() == url("big.test", 0)  # bfs would give small.test/0
    assert crawl.read_back == [[url("big.test", 2)]]  # half its share: one comes back
    frontier = fw._frontier
    assert (fw.in_memory("big.test"), fw.queued("big.test")) == (2, 7)
    assert frontier._hosts["big.test"].beyond == 5
    frontier._check()
    assert await crawl.pop() == url("big.test", 1)  # 6 pending: still before small.test's 2
    assert fw.drop_host("big.test") == 6
    assert frontier._hosts["big.test"].beyond == 0
    frontier._check()
    assert await crawl.pop() == url("small.test", 0)


def test_hosts_active_counts_queued_spilled_and_busy_hosts_once() -> None:
    crawl = Crawl(16)
    for i in range(8):
        crawl.admit(f"h{i}.test")
        crawl.admit(f"h{i}.test")
    crawl.admit("spilled.test")
    assert crawl.window.hosts_active({"h0.test", "busy.test"}) == 10
    assert crawl.window.hosts_active({"spilled.test"}) == 9


# ------------------------------------------------------------ the property


@dataclass
class Model:
    """The reference: each host's admitted URLs not popped yet, in FIFO order."""

    queues: dict[str, deque[str]] = field(default_factory=dict)
    out: dict[str, FrontierEntry] = field(default_factory=dict)  # host -> URL in flight
    retried: dict[str, int] = field(default_factory=dict)  # retried URLs in memory, by host
    parked: set[str] = field(default_factory=set)
    pops: dict[str, int] = field(default_factory=dict)
    retries: dict[str, int] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)


HOST_NAMES = tuple(f"h{i}.test" for i in range(12))  # more than 8: the window fills

window_op = st.one_of(
    st.tuples(st.just("admit"), st.sampled_from(HOST_NAMES), st.integers(1, 8)),
    st.tuples(
        st.sampled_from(
            ["pop", "bring_in", "flush", "burst", "pop_unsettled", "bring_in_unsettled", "yield"]
        ),
        st.just(""),
        st.just(0),
    ),
    st.tuples(
        st.sampled_from(["release", "retry", "park"]), st.sampled_from(HOST_NAMES), st.just(0)
    ),
)


@given(
    window=st.sampled_from([8, 16, 24]),
    ordering=st.sampled_from(["bfs", "larger-sites-first"]),
    ops=st.lists(window_op, max_size=100),
)
def test_the_window_matches_a_reference_model(
    window: int, ordering: Ordering, ops: list[tuple[str, str, int]]
) -> None:
    """Under ``bfs`` and ``larger-sites-first`` (FIFO per host both); under the latter
    the frontier's count of each host's spilled URLs is the window's at every step."""
    clock = FakeClock()
    crawl = Crawl(window, ordering)
    fw = crawl.window
    share = max(1, window // 8)
    model = Model()
    seen_read_back: set[str] = set()

    def check() -> None:
        fw._frontier._check()
        assert len(fw) - sum(model.retried.values()) <= window
        for host in HOST_NAMES:
            if ordering == "larger-sites-first":
                h = fw._frontier._hosts.get(host)
                assert (h.beyond if h is not None else 0) == fw._spilled.get(host, 0)
            assert fw.in_memory(host) - model.retried.get(host, 0) <= share
            assert fw.queued(host) == len(model.queues.get(host, ()))
            if fw.queued(host) > fw.in_memory(host) == 0:  # it comes back when there is room
                assert host in fw._waiting or host in fw._reads
        assert fw.total() == sum(len(q) for q in model.queues.values())
        assert fw.spilled == fw.total() - len(fw) == fw.statistics().spilled
        busy = set(model.out)
        active = {h for h, q in model.queues.items() if q} | busy
        assert fw.hosts_active(busy) == len(active)
        for rows in crawl.read_back:
            assert not seen_read_back.intersection(rows)  # never read back twice
            seen_read_back.update(rows)
        crawl.read_back.clear()

    async def pop(*, settle: bool = True) -> FrontierEntry | None:
        entry = fw.pop(clock.now)
        if settle:
            await fw.settle()
        if entry is not None:
            host = entry.host
            assert host not in model.out
            assert entry.url == model.queues[host].popleft()  # FIFO per host
            if model.retried.get(host) and entry.attempts:
                model.retried[host] -= 1
            model.out[host] = entry
            model.pops[entry.url] = model.pops.get(entry.url, 0) + 1
        return entry

    async def play() -> None:
        for op, host, n in ops:
            if op == "admit":
                if host in model.parked:
                    continue  # a parked host's URLs are written as queued, not placed
                for _ in range(n):
                    model.queues.setdefault(host, deque()).append(crawl.admit(host))
            elif op == "burst":  # one URL to every host that is not parked
                for name in HOST_NAMES:
                    if name not in model.parked:
                        model.queues.setdefault(name, deque()).append(crawl.admit(name))
            elif op == "pop":
                await pop()
            elif op == "pop_unsettled":  # its reads return during the next ops
                await pop(settle=False)
            elif op == "bring_in":
                fw.bring_in()
                await fw.settle()
            elif op == "bring_in_unsettled":
                fw.bring_in()
            elif op == "yield":  # reads in flight may return
                await asyncio.sleep(0)
            elif op == "flush":
                crawl.store.flush()
            elif host in model.out:
                entry = model.out.pop(host)
                if op == "retry" and entry.attempts < 2:
                    entry.attempts += 1
                    fw.push_front(entry)
                    model.queues[host].appendleft(entry.url)
                    model.retried[host] = model.retried.get(host, 0) + 1
                    model.retries[entry.url] = model.retries.get(entry.url, 0) + 1
                elif op == "park":
                    dropped = list(model.queues.pop(host, ()))
                    assert fw.drop_host(host) == len(dropped)
                    model.dropped.update(dropped)
                    model.parked.add(host)
                    model.retried.pop(host, None)
                clock.advance(0.5)
                fw.release(host, clock.now)
            check()
        # the end of the crawl, as the engine's worker loop runs it
        for host in list(model.out):
            del model.out[host]
            fw.release(host, clock.now)
        while True:
            before = fw.read_back_total
            last = await pop()
            if last is not None:
                del model.out[last.host]
                fw.release(last.host, clock.now)
                check()
                continue
            if fw.read_back_total > before:
                continue  # reads in flight returned (``read_back`` wakes the engine)
            if await brought_in(fw):
                continue
            if len(fw) == 0:
                if not fw.spilled:
                    break
                assert await fw.drain()
                continue
            raise AssertionError("URLs left in memory but none ready")  # every host released

    asyncio.run(play())
    check()
    assert all(not q for q in model.queues.values())
    admitted = {url(h, i) for h, c in crawl.counts.items() for i in range(c)}
    assert set(model.pops) == admitted - model.dropped
    for u in admitted - model.dropped:
        assert model.pops[u] == 1 + model.retries.get(u, 0)
    assert fw.statistics().spilled_hosts == 0
    assert fw.statistics().waiting_hosts == 0


class HeldSpillStore(FakeSpillStore):
    """``FakeSpillStore`` whose ``load_spilled`` waits for ``release`` (in its thread),
    or raises ``failure`` when set; ``asked`` is set when a read starts."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()
        self.release = threading.Event()
        self.failure: StoreError | None = None

    def load_spilled(self, host: str, after_seq: int, limit: int) -> tuple[list[FrontierRow], int]:
        self.asked.set()
        assert self.release.wait(10)
        if self.failure is not None:
            raise self.failure
        return super().load_spilled(host, after_seq, limit)


def held_window() -> tuple[FrontierWindow, HeldSpillStore]:
    """A 16-URL window whose ``old.test`` has 3 URLs spilled by an earlier run."""
    store = HeldSpillStore()
    for n in range(3):
        store.write(
            FrontierRow(url("old.test", n), url("old.test", n), "old.test", 2, 1, state="spilled")
        )
    store.flush()
    window = FrontierWindow(16, store)
    window.restore({"old.test": 3})
    return window, store


async def test_a_read_in_flight_reserves_its_rows_and_adds_them_when_it_returns() -> None:
    window, store = held_window()
    window.bring_in()  # the read (2 rows: old.test's share) runs in a thread
    assert await asyncio.to_thread(store.asked.wait, 10)
    assert len(window) == 0 and window.statistics().spilled == 3
    for i in range(14):  # the window has room for 14 more: 2 are reserved
        assert window.place(f"h{i}.test")
        window.add(FrontierEntry(url(f"h{i}.test", 0), url(f"h{i}.test", 0), f"h{i}.test", 1, 1))
    assert not window.place("late.test")  # spilled: memory 14 + 2 reserved
    store.release.set()
    await window.settle()
    assert len(window) == 16
    assert window.peek("old.test", 5) == [
        FrontierEntry(url("old.test", n), url("old.test", n), "old.test", 2, 1) for n in range(2)
    ]


async def test_a_host_dropped_while_its_read_is_in_flight_gets_nothing_back() -> None:
    window, store = held_window()
    window.bring_in()
    assert await asyncio.to_thread(store.asked.wait, 10)
    assert window.drop_host("old.test") == 3
    store.release.set()
    await window.settle()
    assert window.statistics() == WindowStatistics(0, 0, 0, 0, 0, 16, 2)
    assert window.place("a.test")  # nothing left reserved


async def test_a_failed_read_raises_from_the_next_call() -> None:
    window, store = held_window()
    store.failure = StoreError("c.db: disk I/O error")
    store.release.set()
    window.bring_in()
    await window.settle()
    with pytest.raises(StoreError, match="disk I/O error"):
        window.pop(T)
    assert window.pop(T) is None  # raised once
