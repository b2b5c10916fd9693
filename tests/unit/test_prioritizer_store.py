"""The OPIC cash in SQLite (issue #15 item 2): ``frontier.score``, ``Store.add_scores``,
spilled rows read back best priority first (``Store.load_spilled``'s (priority, seq)
position), the frontier window's spill priority, and a credit through the window to a
URL in memory, spilled or in flight, on real files.

A file made before the column gets it on open (0 in its old rows) and the spilled
rows' index by (host, priority, seq); the query plan uses that index.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

from crawldeck.core.policy.prioritizer import Prioritizer
from crawldeck.core.policy.window import FrontierWindow
from crawldeck.core.records import SPILL_SEQ_SPAN, FrontierRow
from crawldeck.core.storage.store import Store

T0 = 1_714_564_800.0


def raw(path: Path, sql: str) -> list[tuple[object, ...]]:
    """Rows from a plain connection of its own."""
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql).fetchall()


def spilled(key: str, priority: int, score: float = 0.0, host: str = "a.test") -> FrontierRow:
    return FrontierRow(
        key=key, url=f"http://{host}/{key}", host=host, depth=1, priority=priority,
        state="spilled", score=score,
    )  # fmt: skip


def test_cash_is_added_to_waiting_rows_only(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    with Store(db, clock=lambda: T0) as store:
        store.enqueue_urls([spilled("q", 2, 0.25), spilled("s", 3, 0.125)])
        store.enqueue_urls([FrontierRow("d", "http://a.test/d", "a.test", 1, 1, score=0.5)])
        store.mark("d", "done")
        store.add_scores([("q", 0.25), ("s", 0.5), ("d", 0.25), ("unknown", 1.0)])
        store.add_scores([("q", 0.125)])
        store.flush()
    assert raw(db, "SELECT key, score, inlinks FROM frontier ORDER BY key") == [
        ("d", 0.5, 1),  # fetched: its cash was handed on already
        ("q", 0.625, 3),  # one in-link per credit: two more
        ("s", 0.625, 2),
    ]


def test_spilled_rows_come_back_best_priority_first_then_oldest(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    with Store(db, clock=lambda: T0) as store:
        store.enqueue_urls([spilled("a", 5), spilled("b", 2), spilled("c", 5), spilled("d", 2)])
        store.enqueue_urls([spilled("e", 1, 0.6), spilled("x", 0, host="b.test")])
        store.flush()
        rows, last = store.load_spilled("a.test", 0, 3)
        assert [r.key for r in rows] == ["e", "b", "d"]
        assert rows[0].score == 0.6
        assert divmod(last, SPILL_SEQ_SPAN) == (2, 4)  # d: priority 2, the 4th row
        rest, end = store.load_spilled("a.test", last, 10)
        assert [r.key for r in rest] == ["a", "c"]
        assert store.load_spilled("a.test", end, 10) == ([], end)
    plan = raw(
        db,
        "EXPLAIN QUERY PLAN SELECT * FROM frontier WHERE state = 'spilled' AND host = 'a'"
        " AND (priority, seq) > (1, 2) ORDER BY priority, seq",
    )
    assert "frontier_spilled_host_priority_seq" in str(plan)


def test_an_older_file_gets_the_score_and_inlinks_columns_and_the_new_index(
    tmp_path: Path,
) -> None:
    db = tmp_path / "c.db"
    with Store(db, clock=lambda: T0) as store:
        store.enqueue_urls([spilled("a", 1)])
    with closing(sqlite3.connect(db)) as conn:  # as a crawldeck before issue #15 left it
        conn.execute("DROP INDEX frontier_spilled_host_priority_seq")
        conn.execute("ALTER TABLE frontier DROP COLUMN score")
        conn.execute("ALTER TABLE frontier DROP COLUMN inlinks")
        conn.execute(
            "CREATE INDEX frontier_spilled_host_seq ON frontier (host, seq) WHERE state = 'spilled'"
        )
        conn.commit()
    with Store(db, clock=lambda: T0) as store:
        rows, _ = store.load_spilled("a.test", 0, 5)
        assert [(r.key, r.score, r.inlinks) for r in rows] == [("a", 0.0, 1)]
        store.add_scores([("a", 0.5)])
    indexes = {name for (name,) in raw(db, "SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "frontier_spilled_host_priority_seq" in indexes
    assert "frontier_spilled_host_seq" not in indexes
    assert raw(db, "SELECT score, inlinks FROM frontier") == [(0.5, 2)]


def test_the_window_reads_back_by_cash_and_spills_behind_its_position(tmp_path: Path) -> None:
    """A window of 16 (a host's share 2) holding two URLs of a host spills the next two.
    Read back, a spilled row comes by its stored priority, and takes the priority of
    its cash (``Prioritizer.restored``), cash added while it was spilled included; a row
    spilled after the host's position passed its priority is stored at the position's
    priority (else no read would return it), its cash kept."""

    async def main() -> None:
        db = tmp_path / "c.db"
        with Store(db, clock=lambda: T0) as store:
            window = FrontierWindow(16, store, prioritizer=Prioritizer("opic"))
            window.add(window.entry_of(spilled("m1", 1, 0.6)))
            window.add(window.entry_of(spilled("m2", 1, 0.6)))
            assert not window.place("a.test") and not window.place("a.test")  # spilled
            store.enqueue_urls([spilled("s1", 4, 0.06), spilled("s2", 3, 0.2)])
            store.add_scores([("s1", 0.5)])  # 0.56: priority 1 once read back
            store.flush()
            assert window.pop(0.0) is not None  # m1; at half its share: one read back
            await window.settle()
            assert [(e.key, e.priority, e.score) for e in window.peek("a.test", 3)] == [
                ("m2", 1, 0.6),
                ("s2", 3, 0.2),  # stored at 3, before s1's 4
            ]
            assert window.spill_priority("a.test", 1) == 3  # behind its position
            assert window.spill_priority("a.test", 5) == 5
            assert window.spill_priority("b.test", 1) == 1
            window.release("a.test", 0.0)
            assert window.pop(0.0) is not None  # m2
            await window.settle()
            assert [(e.key, e.priority) for e in window.peek("a.test", 3)] == [
                ("s1", 1),  # its cash decides once it is back
                ("s2", 3),
            ]
            assert window.spilled == 0

    asyncio.run(main())


def test_a_credit_reaches_a_url_in_memory_or_spilled_and_not_one_in_flight(
    tmp_path: Path,
) -> None:
    """Credits as the recorder gives them (``FrontierWindow.credit``, then
    ``Store.add_scores`` for every key): a URL queued in memory gets the cash at once
    and moves up its band; a spilled one is not in memory (``False``) and gets it in
    SQLite, so it comes back at its new band; a URL popped already (in flight) keeps
    the cash it was popped with."""

    async def main() -> None:
        db = tmp_path / "c.db"
        with Store(db, clock=lambda: T0) as store:
            window = FrontierWindow(16, store, prioritizer=Prioritizer("opic"))
            rows = [
                FrontierRow(k, f"http://a.test/{k}", "a.test", 1, 4, score=0.1)
                for k in ("m1", "m2")
            ]
            store.enqueue_urls(rows)
            for row in rows:
                window.add(window.entry_of(row))
            assert not window.place("a.test")  # a.test has its share (2) in memory
            store.enqueue_urls([spilled("s1", 4, 0.1)])
            credits = [("m2", 0.5), ("s1", 0.5), ("gone", 0.5)]
            assert [window.credit(k, c) for k, c in credits] == [True, False, False]
            store.add_scores(credits)
            store.flush()
            first = window.pop(0.0)  # m2, credited up to band 1; s1 is read back
            await window.settle()
            assert first is not None and (first.key, first.priority, first.score) == ("m2", 1, 0.6)
            assert not window.credit("m2", 0.5)  # in flight: not queued any more
            assert first.score == 0.6
            assert [(e.key, e.priority, e.score) for e in window.peek("a.test", 3)] == [
                ("s1", 1, 0.6),  # its cash in SQLite gives it band 1 back in memory
                ("m1", 4, 0.1),
            ]

    asyncio.run(main())


def test_credits_in_memory_are_written_once_the_url_leaves_memory(tmp_path: Path) -> None:
    """With ``keep_credits`` (the single process's window: ``Store.set_scores``) the
    recorder writes only the credits the window refuses; a URL credited in memory has
    its cash and in-links written when it is popped (with the next batch of popped
    ones, or the next ``save_credits``), dropped with its host, or still queued when
    the run ends (``save_credits``), one write each, and a URL never credited is not
    written at all. ``set_scores`` writes a fetched row too (what it held when popped:
    the cash it handed on)."""

    async def main() -> None:
        db = tmp_path / "c.db"
        with Store(db, clock=lambda: T0) as store:
            window = FrontierWindow(
                64, store, prioritizer=Prioritizer("opic-inlinks"), keep_credits=store.set_scores
            )
            rows = [
                FrontierRow(k, f"http://{h}/{k}", h, 1, 18, score=0.1)
                for k, h in (("a1", "a.test"), ("a2", "a.test"), ("b1", "b.test"), ("c1", "c.test"))
            ]
            store.enqueue_urls([*rows, FrontierRow("d", "http://a.test/d", "a.test", 1, 1)])
            store.mark("d", "done")
            for row in rows:
                window.add(window.entry_of(row))
            for key in ("a2", "b1", "c1"):
                assert window.credit(key, 0.2) and window.credit(key, 0.2)
            store.flush()

            def stored() -> list[tuple[object, ...]]:
                store.flush()
                return raw(db, "SELECT key, round(score, 6), inlinks FROM frontier ORDER BY key")

            assert stored() == [
                ("a1", 0.1, 1), ("a2", 0.1, 1), ("b1", 0.1, 1), ("c1", 0.1, 1), ("d", 0.0, 1),
            ]  # fmt: skip
            # a2 (0.5 x 3^2) goes first, kept for the next write; a1 was never credited
            first = window.pop(0.0)
            assert first is not None and first.key == "a2"
            assert stored()[1] == ("a2", 0.1, 1)
            assert window.drop_host("b.test") == 1  # b1 stays queued for the next run
            assert stored()[1:3] == [("a2", 0.5, 3), ("b1", 0.5, 3)]
            assert (window.spills("b.test"), window.spills("c.test")) == (False, False)
            window.save_credits()  # the run ends: c1 is still queued in memory
            assert stored() == [
                ("a1", 0.1, 1), ("a2", 0.5, 3), ("b1", 0.5, 3), ("c1", 0.5, 3), ("d", 0.0, 1),
            ]  # fmt: skip
            store.set_scores([("d", 0.75, 5)])  # fetched since it was popped
            assert stored()[4] == ("d", 0.75, 5)

    asyncio.run(main())
