"""The collector (``core.cluster.collector``) against real ``redis-server`` processes:: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_cluster_collector.py``."""

from __future__ import annotations

import collectorkit
import pytest
from collectorkit import A, B, row, url

from crawldeck.core.errors import StoreError
from crawldeck.core.storage.store import Store

#: The fixtures shared with the other tier's file, as fixtures of this module.
store = collectorkit.store


# ------------------------------------------------------------- the Store's seams


def test_atomic_writes_commit_together_with_meta(store: Store) -> None:
    with store.atomic():
        store.enqueue_urls([row(url(A), A)])
        store.set_meta("cluster.cursor:x", "1-0")
        assert store.backlog == 0  # queued at the block's end, as one operation
        with pytest.raises(StoreError, match="do not nest"), store.atomic():
            pass
    store.flush()
    assert store.meta_items("cluster.") == {"cluster.cursor:x": "1-0"}
    assert store.known_keys([url(A), url(B)]) == {url(A)}
    store.set_meta("cluster.cursor:x", None)
    store.flush()
    assert store.meta_items("cluster.") == {}
    with pytest.raises(StoreError, match="belongs to the schema"):
        store.set_meta("schema_version", "2")
