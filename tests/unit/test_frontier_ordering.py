"""The frontier's invariants and politeness under every ordering (Hypothesis).

Random sequences of the frontier's operations (add, credit, pop, release, push_front,
push_back, demote, drop_host, set_beyond; clock steps) under ``bfs``, ``opic`` and
``larger-sites-first``, few back queue slots so the front queues fill too. After every operation
``Frontier._check()`` holds; a pop never hands out a host before the ready time its
last ``release`` gave, nor a host that is checked out; every queued URL is handed out
exactly once (once more per push_front or push_back), none is made up, none is lost. The ordering
changes the order only.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from crawldeck.core.policy.frontier import Frontier
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.prioritizer import CASH_ORDERINGS, ORDERINGS, Ordering, Prioritizer

HOSTS = ("a", "b", "c", "d", "e")

add = st.tuples(st.just("add"), st.sampled_from(HOSTS), st.floats(0.0, 1.5))
pop = st.tuples(st.just("pop"), st.sampled_from((0.0, 0.0, 0.5, 1.0, 3.0)))
release = st.tuples(st.just("release"), st.integers(0, 5), st.sampled_from((0.0, 0.5, 1.0, 2.0)))
op = st.one_of(  # adds, pops and releases three times as often as the rest
    add, add, add, pop, pop, pop, release, release, release,
    st.tuples(st.just("credit"), st.integers(0, 60), st.floats(0.0, 1.0)),
    st.tuples(st.just("retry"), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("demote"), st.sampled_from(HOSTS)),
    st.tuples(st.just("drop"), st.sampled_from(HOSTS)),
    st.tuples(st.just("beyond"), st.sampled_from(HOSTS), st.integers(0, 40)),
)  # fmt: skip


@settings(max_examples=100)
@given(
    st.sampled_from(ORDERINGS),
    st.integers(1, 3),
    st.lists(op, min_size=20, max_size=80),
)
def test_invariants_and_politeness_hold_under_every_ordering(
    ordering: Ordering, slots: int, ops: list[tuple[object, ...]]
) -> None:
    prioritizer = Prioritizer(ordering, 6)
    f = Frontier(prioritizer.priorities, max_back_queues=slots, ordering=ordering)
    now = 0.0
    ready_at = dict.fromkeys(HOSTS, 0.0)  # what the last release said
    out: dict[str, FrontierEntry | None] = {}  # checked out: its entry, None once retried
    queued: dict[str, FrontierEntry] = {}  # key -> entry, in the frontier
    added = 0
    for item in ops:
        kind = item[0]
        if kind == "add":
            host, cash = str(item[1]), float(item[2])  # type: ignore[arg-type]
            key = f"{host}/{added}"
            added += 1
            e = FrontierEntry(key, key, host, 1, prioritizer.priority(cash), score=cash)
            queued[key] = e
            f.add(e)
        elif kind == "credit":
            keys = sorted(queued)
            if keys:
                key = keys[int(item[1]) % len(keys)]  # type: ignore[call-overload]
                before, inlinks = queued[key].score, queued[key].inlinks
                took = f.credit(key, float(item[2]))  # type: ignore[arg-type]
                assert took == (ordering in CASH_ORDERINGS)
                if took:
                    assert queued[key].score == before + float(item[2])  # type: ignore[arg-type]
                    assert queued[key].inlinks == inlinks + 1
        elif kind == "pop":
            now += float(item[1])  # type: ignore[arg-type]
            got = f.pop(now)
            if got is not None:
                assert got.host not in out, "a checked-out host was handed out"
                assert ready_at[got.host] <= now, "a host was handed out before its ready time"
                assert queued.pop(got.key) is got
                out[got.host] = got
            else:  # nothing was ready: no host with URLs and no check-out is due
                for host in HOSTS:
                    if host not in out and f.queued(host) and f.peek(host, 1):
                        assert ready_at[host] > now
        elif kind == "release":
            hosts = sorted(out)
            if hosts:
                host = hosts[int(item[1]) % len(hosts)]  # type: ignore[call-overload]
                del out[host]
                ready_at[host] = now + float(item[2])  # type: ignore[arg-type]
                f.release(host, ready_at[host])
        elif kind == "retry":
            hosts = sorted(h for h, e in out.items() if e is not None)
            if hosts:
                host = hosts[int(item[1]) % len(hosts)]  # type: ignore[call-overload]
                back = out[host]
                assert back is not None
                out[host] = None  # still checked out, its URL back in the queue
                queued[back.key] = back
                if item[2]:
                    f.push_front(back)
                    peeked = f.peek(host, 1)
                    assert peeked and peeked[0] is back  # first in its host's queue
                else:
                    f.push_back(back)
                    peeked = f.peek(host, len(queued) * 8)  # stale copies included
                    assert peeked and peeked[-1] is back  # last in its host's queue
        elif kind == "demote":
            f.demote(str(item[1]))
        elif kind == "beyond":  # URLs spilled out of memory (larger-sites-first ranks by them)
            f.set_beyond(str(item[1]), int(item[2]))  # type: ignore[call-overload]
        else:
            host = str(item[1])
            n = f.drop_host(host)
            gone = [k for k, e in queued.items() if e.host == host]
            assert n == len(gone)
            for k in gone:
                del queued[k]
        f._check()
        assert len(f) == len(queued)
    for host in list(out):  # give every host back, then everything comes out
        f.release(host, ready_at[host])
        del out[host]
    late = max([now, *ready_at.values()])
    drained = []
    while (last := f.pop(late)) is not None:
        drained.append(last.key)
        f.release(last.host, late)
        f._check()
    assert sorted(drained) == sorted(queued)
