"""The seen set: has this dedupe key been admitted to the frontier before?

A Bloom filter (rbloom) answers most questions in memory; when it says "maybe", the
store answers exactly (its queued-but-uncommitted keys, then SQLite), so a false
positive of the filter never drops a new URL. During a crawl the exact answers are
asked in a thread, a page's keys in one batch (``seen_among``), so no SQLite read runs
on the event loop (issue #11 item 4); ``contains`` asks on the calling thread (seeds,
before and between crawls). A store without a ``KeyStore`` (a cluster worker's:
Redis's seen set decides when a URL is pushed) dedupes what it is sent, and every
admitted URL is sent to it (``FrontierWindow(spill_all=True)``, ``core.crawl.assembly``): a
"maybe" for a key not added since the last ``handed_over`` is new here, and the store
drops it if it knew it.

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

import asyncio
from collections.abc import Iterable, Sequence

from rbloom import Bloom

from crawldeck.core.protocols import KeyStore


class SeenSet:
    """The set of dedupe keys ever admitted, a Bloom filter in front of the store.

    Args:
        store: the exact answer when the filter says "maybe" (``Store.contains``);
            ``None``: the store dedupes what it is sent (see the module), a "maybe"
            for a key not added since the last ``handed_over`` is new.
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

    Threads: call every method on one thread (the event loop's); ``seen_among`` asks
    the store in a thread of the loop's default executor. A key added by another task
    while that check is in flight counts as seen in its answer, so no key is reported
    new twice.

    Counters (only grow):
        ``added``: keys reported new; ``bloom_hits``: keys for which the filter said
        "maybe present"; ``exact_checks``: ``store.contains`` calls made for them;
        ``false_positives``: exact checks that found the key absent (the filter erred).
    """

    def __init__(
        self,
        store: KeyStore | None,
        expected_items: int = 1_000_000,
        false_positive_rate: float = 0.01,
    ) -> None:
        self._store = store
        self._expected_items = max(1, expected_items)
        self._false_positive_rate = false_positive_rate
        self._bloom = Bloom(self._expected_items, false_positive_rate)
        self._unsent: set[str] = set()
        self._checking = 0  # seen_among calls awaiting the store
        self._added_late: set[str] = set()  # keys added while any of them awaits
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
        if self._store is None:
            return False
        self.exact_checks += 1
        if self._store.contains(key):
            return True
        self.false_positives += 1
        return False

    async def seen_among(self, keys: Sequence[str]) -> set[str]:
        """The keys of ``keys`` added before (exact), the store asked in one thread job.

        The filter says absent -> new (no I/O); maybe -> the keys not yet handed to
        the store, then ``store.contains`` for the rest, in a thread. The answer holds
        when it is returned: keys added by other tasks during the check are in it; the
        caller adds the new ones before its next ``await``.

        Raises:
            StoreError: from the store's exact check.
        """
        bloom = self._bloom
        maybe = [key for key in dict.fromkeys(keys) if key in bloom]
        if not maybe:
            return set()
        self.bloom_hits += len(maybe)
        unsent = self._unsent
        exact = [key for key in maybe if key not in unsent]
        if not exact:
            return set(maybe)
        # keys not yet handed to the store count as seen even if they are handed over
        # (and leave ``_unsent``) while the check is in flight
        known = {key for key in maybe if key in unsent}
        store = self._store
        if store is None:  # the sink dedupes: no exact check, no thread
            return known
        self.exact_checks += len(exact)
        self._checking += 1
        try:
            loop = asyncio.get_running_loop()
            found = await loop.run_in_executor(None, _stored, store, exact)
        finally:
            self._checking -= 1
        late = self._added_late
        if not self._checking:
            self._added_late = set()
        self.false_positives += sum(1 for key in exact if key not in found and key not in late)
        unsent = self._unsent
        return found | known | {key for key in keys if key in unsent or key in late}

    def add(self, key: str) -> None:
        """Record ``key`` as admitted; the caller knows it is new (``contains`` or
        ``seen_among``) and must store it (see the class contract)."""
        self._bloom.add(key)
        self._unsent.add(key)
        if self._checking:
            self._added_late.add(key)
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


def _stored(store: KeyStore, keys: list[str]) -> set[str]:
    """The keys of ``keys`` ``store`` holds (run in a thread)."""
    contains = store.contains
    return {key for key in keys if contains(key)}


__all__ = ["SeenSet"]
