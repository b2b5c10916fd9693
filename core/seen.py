"""The seen set: has this dedupe key been admitted to the frontier before?

A Bloom filter (rbloom) answers most questions in memory; when it says "maybe", the
store answers exactly (its queued-but-uncommitted keys, then SQLite), so a false
positive of the filter never drops a new URL.

Hash function: Python's built-in ``hash`` (rbloom's default). For ``str`` it is SipHash
computed in C and cached on the string object, about 6x faster than a
``hashlib.blake2b(digest_size=16)`` digest turned into an ``int`` (measured: ~0.3 us vs
~2 us per ``add``). It is salted per process (``PYTHONHASHSEED``), so the filter cannot be
saved and reloaded; it never is: on resume ``rebuild`` refills it from the frontier keys
in SQLite. Its 64 bits are plenty: rbloom derives all bit positions from it, and two
keys with the same 64-bit hash (odds ~n^2 / 2^65, ~3e-8 for a million keys) only cost
one extra exact check, never a wrong answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from rbloom import Bloom


class KeyStore(Protocol):
    """What ``SeenSet`` needs of the store: ``core.store.Store`` fits."""

    def contains(self, key: str) -> bool:
        """Whether ``key`` is in the frontier, pending writes included."""
        ...


class SeenSet:
    """The set of dedupe keys ever admitted, a Bloom filter in front of the store.

    Args:
        store: the exact answer when the filter says "maybe" (``Store.contains``).
        expected_items: keys the filter is sized for (about 1.2 MB per million keys at
            1 %); beyond it the false-positive rate, and so the share of exact
            checks, grows, but answers stay exact.
        false_positive_rate: the filter's target rate at ``expected_items`` keys, in (0, 1).

    Contract: every key passed to ``add`` (or for which ``add_if_new`` returns
    ``True``) must be written to the
    store's frontier by the caller (``enqueue_urls`` / ``record_page(new_rows=...)``),
    who then calls ``handed_over()``; until then the keys are held in a small set of
    their own, since the store cannot know them yet (a page linking ``b#one`` and
    ``b#two`` adds the key of ``b`` twice before its row reaches the store).

    Counters (only grow):
        ``added``: keys reported new; ``bloom_hits``: calls where the filter said
        "maybe present"; ``exact_checks``: ``store.contains`` calls made for them;
        ``false_positives``: exact checks that found the key absent (the filter erred).
    """

    def __init__(
        self,
        store: KeyStore,
        expected_items: int = 1_000_000,
        false_positive_rate: float = 0.01,
    ) -> None:
        self._store = store
        self._expected_items = max(1, expected_items)
        self._false_positive_rate = false_positive_rate
        self._bloom = Bloom(self._expected_items, false_positive_rate)
        self._unsent: set[str] = set()
        self.added = 0
        self.bloom_hits = 0
        self.exact_checks = 0
        self.false_positives = 0

    def contains(self, key: str) -> bool:
        """Whether ``key`` was added before (exact: no false answer either way).

        The filter says absent -> ``False`` (no I/O). The filter says maybe -> the
        keys not yet handed to the store, then ``store.contains(key)``.

        Raises:
            StoreError: from the store's exact check.
        """
        if key not in self._bloom:
            return False
        self.bloom_hits += 1
        if key in self._unsent:
            return True
        self.exact_checks += 1
        if self._store.contains(key):
            return True
        self.false_positives += 1
        return False

    def add(self, key: str) -> None:
        """Record ``key`` as admitted; the caller knows it is new (``contains``) and
        must store it (see the class contract)."""
        self._bloom.add(key)
        self._unsent.add(key)
        self.added += 1

    def add_if_new(self, key: str) -> bool:
        """``add(key)`` unless ``contains(key)``; ``True`` if it was new.

        Raises:
            StoreError: from the store's exact check.
        """
        if self.contains(key):
            return False
        self.add(key)
        return True

    def handed_over(self) -> None:
        """The caller has passed every key added so far to the store's writes."""
        self._unsent.clear()

    def rebuild(self, keys: Iterable[str]) -> int:
        """Empty the filter and add every key of ``keys`` (streamed; for resume).

        Counters are kept. Returns how many keys were added.
        """
        self._bloom = Bloom(self._expected_items, self._false_positive_rate)
        self._unsent.clear()
        bloom = self._bloom
        count = 0
        for key in keys:
            bloom.add(key)
            count += 1
        return count

    @property
    def approx_items(self) -> float:
        """The filter's estimate of how many distinct keys it holds."""
        return float(self._bloom.approx_items)


__all__ = ["KeyStore", "SeenSet"]
