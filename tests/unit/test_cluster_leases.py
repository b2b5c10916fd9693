"""``core.cluster.leases``: a worker's own view of its leases, on a fake monotonic clock.

The rule (``Leases``): a lease counts until ``sent + lease_ms * SAFETY`` after the send
of its acquire or last successful renewal; past that, ``epoch`` is ``None`` and the loss
is reported once.
"""

from __future__ import annotations

from crawldeck.core.cluster.leases import SAFETY, Leases


class Mono:
    """A monotonic clock the test moves by hand (s)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(lease_ms: int = 2000) -> tuple[Leases, Mono, list[str]]:
    mono, lost = Mono(), list[str]()
    return Leases(lease_ms, clock=mono, on_lost=lost.append), mono, lost


def test_a_lease_counts_until_its_safe_share_after_the_send() -> None:
    leases, mono, lost = make(2000)
    leases.take("a.test", 7, sent=mono.now)
    mono.now += 2.0 * SAFETY - 0.001
    assert leases.epoch("a.test") == 7
    mono.now += 0.002
    assert leases.epoch("a.test") is None
    assert lost == ["a.test"]
    assert leases.epoch("a.test") is None and lost == ["a.test"]  # reported once
    assert leases.lost_total == 1


def test_a_renewal_moves_the_deadline_from_its_send_time() -> None:
    leases, mono, _ = make(2000)
    leases.take("a.test", 3, sent=mono.now)
    mono.now += 1.0
    leases.renewed("a.test", 3, sent=mono.now - 0.5)  # sent half a second ago
    mono.now += 2.0 * SAFETY - 0.5 - 0.001
    assert leases.owns("a.test")
    mono.now += 0.002
    assert not leases.owns("a.test")


def test_a_renewal_of_another_epoch_or_an_older_send_changes_nothing() -> None:
    leases, mono, _ = make(1000)
    leases.take("a.test", 3, sent=mono.now)
    leases.renewed("a.test", 2, sent=mono.now + 0.5)  # an old epoch's reply
    leases.renewed("a.test", 3, sent=mono.now - 5.0)  # older than the acquire
    mono.now += 1.0 * SAFETY + 0.001
    assert leases.epoch("a.test") is None


def test_a_frozen_worker_wakes_to_no_lease_at_all() -> None:
    # SIGSTOP then SIGCONT: the monotonic clock ran on while the process slept
    leases, mono, lost = make(2000)
    for i, host in enumerate(("a.test", "b.test", "c.test")):
        leases.take(host, i + 1, sent=mono.now)
    mono.now += 60.0
    assert sorted(leases.expire_due()) == ["a.test", "b.test", "c.test"]
    assert len(leases) == 0 and sorted(lost) == ["a.test", "b.test", "c.test"]


def test_give_up_is_not_a_loss() -> None:
    leases, mono, lost = make()
    leases.take("a.test", 1, sent=mono.now)
    leases.give_up("a.test")
    assert leases.epoch("a.test") is None and lost == [] and leases.lost_total == 0
    leases.lose("a.test")  # not held any more: nothing to report
    assert lost == []
