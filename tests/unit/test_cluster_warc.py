"""Cluster workers write WARC files (issue #13 item 1 in a cluster crawl), against a
real ``redis-server`` and a loopback web whose every answer is known
(``clusterkit.SynthWeb``).

Two workers (in this process, each with its own Redis connection) crawl into files of
their own beside the crawl file, ``<crawl id>-<suffix>-NNNNN.warc.gz``: every page row
the collector wrote points into a file of the worker that committed it, the record at
its offset is that page as the server sent it, ``warcio check`` and ``warcio index``
pass on every file, and ``crawldeck show`` reads a page of the cluster crawl file.
Then the command a user runs: ``crawl --workers 2`` starts workers that write into the
crawl file's directory, not the current one. A worker's suffix is never that of files
already in its directory (a worker restarted there starts files of its own). And the
claim that lets both workers fetch: a worker takes its share of the hosts, never one
host of every shard that has some (``claim_plan``).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.cluster.worker import claim_plan, warc_suffix


def test_a_suffix_is_never_that_of_files_already_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = uuid.UUID("aaaaaaaa" + "0" * 24)
    fresh = uuid.UUID("bbbbbbbb" + "0" * 24)
    (tmp_path / "c-aaaaaaaa-00001.warc.gz").write_bytes(b"")
    draws = iter([taken, taken, fresh])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(draws))
    assert warc_suffix(tmp_path, "c") == "bbbbbbbb"
    draws = iter([taken])
    assert warc_suffix(tmp_path, "other") == "aaaaaaaa"  # another crawl's stem is free
    draws = iter([taken])
    assert warc_suffix(None, "c") == "aaaaaaaa"  # no WARC directory: any suffix


# ------------------------------------------- the share claimed (both workers fetch)


def test_a_claim_takes_the_share_in_proportion_never_more() -> None:
    """Two workers share four hosts of four shards: each claims two (a claim asking
    one host of every shard with some took all four, and one worker fetched alone)."""
    assert claim_plan([1, 1, 1, 1], 2, 0) == [(0, 1), (1, 1)]
    assert claim_plan([1, 1, 1, 1], 2, 3) == [(3, 1), (0, 1)]  # from the start, wrapping
    assert claim_plan([6, 0, 2], 4, 0) == [(0, 3), (2, 1)]
    assert claim_plan([0, 5], 9, 0) == [(1, 9)]  # counts may be stale: ask for the share
    assert claim_plan([0, 0], 3, 1) == []


@given(st.lists(st.integers(0, 50), min_size=1, max_size=64), st.integers(1, 200), st.data())
def test_a_claim_plan_asks_exactly_the_share_of_shards_with_hosts(
    ready: list[int], want: int, data: st.DataObject
) -> None:
    start = data.draw(st.integers(0, len(ready) - 1))
    plan = claim_plan(ready, want, start)
    assert sum(take for _s, take in plan) == (want if any(ready) else 0)
    assert all(ready[shard] > 0 and take >= 1 for shard, take in plan)
    assert len({shard for shard, _t in plan}) == len(plan)
