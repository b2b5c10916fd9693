"""Retries: what an unanswered, refused or backing-off fetch becomes.

After a fetch (or its DNS lookup) the engine hands the outcome here, which decides:

* a **transient failure** (timeout, refused or lost connection, DNS temporary
  failure: ``FetchError.retryable``) backs the host off and puts the URL back at the
  tail of its host's queue (the host's other URLs go first, as Scrapy lowers a retried
  request's priority: one URL that keeps failing does not hold its host in backoff
  try after try, nor park it), up to ``max_retries`` tries and while its tries this run
  took less than ``total_timeout_ms`` in all (issue #10 item 10);
* a **refused connection** to a host that answered nothing this run is recorded after
  one try and the host parked (unless ``retry_refused``): a wrong port or a server not
  running, which curl and wget give up on at once;
* a **deterministic failure** (a malformed response, a short body, stacked codings) is
  recorded after one try, without backoff: it says nothing about the server's load;
* a **429/503** is retried like a transient failure; past ``max_retries`` the page is
  recorded with its last status (``gave up after N tries``);
* a host answering only so is **parked** after ``park_after_backoffs`` straight
  backoffs (its queued URLs stay queued in SQLite for the next run), and **demoted**
  after ``demote_after_s`` in backoff (its URLs go to the lowest front queue);
* a name that does not exist (NXDOMAIN) or resolves to a special-purpose address is
  **blocked** (``dns``, ``private_address``), the host marked dead for the former.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from crawldeck.core.config import CrawlConfig
from crawldeck.core.crawl.observer import HostStats, Observer
from crawldeck.core.crawl.recording import Recorder
from crawldeck.core.crawl.side_requests import learn
from crawldeck.core.errors import (
    ConnectRefused,
    DnsNotFound,
    DnsTemporaryFailure,
    FetchError,
    ProxyRefused,
    without_url,
)
from crawldeck.core.net.robots import RobotsDecision
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.gate import HostGate
from crawldeck.core.policy.politeness import Outcome
from crawldeck.core.policy.traps import BlockReason, Verdict
from crawldeck.core.policy.window import FrontierWindow
from crawldeck.core.protocols import ResultSink
from crawldeck.core.records import FetchResult
from crawldeck.core.words import plural

#: A host's delay (s) from its slow answers (the adaptive part: ``adaptive_delay_factor``
#: x its last fetch's time) at which the log says so, once a host and run: with nothing
#: in flight and URLs queued, a crawl that waits on it looked stuck (issue #25 trial 20:
#: a URL that timed out at 30 s spaced its host's next fetches 30 s apart, unsaid).
SLOW_DELAY_S: Final = 5.0


class Retries:
    """Retry, record, park, demote or block, after each fetch.

    Args:
        config: ``max_retries``, ``total_timeout_ms``, ``park_after_backoffs``,
            ``demote_after_s``.
        store: the result sink: frontier states (``mark``).
        gate: the host gate (politeness learns each outcome).
        frontier: where a retried URL goes back, a parked host leaves, a demoted one
            moves.
        observer: host figures and log lines.
        recorder: records a URL's final failure.
        parked: called after a host is parked (wakes the side requests waiting for
            its slot: they give up rather than wait its backoff out).
    """

    def __init__(
        self,
        config: CrawlConfig,
        store: ResultSink,
        gate: HostGate,
        frontier: FrontierWindow,
        observer: Observer,
        recorder: Recorder,
        parked: Callable[[], None] | None = None,
    ) -> None:
        self._parked = parked
        self._config = config
        self._store = store
        self._gate = gate
        self._frontier = frontier
        self._obs = observer
        self._recorder = recorder

    def retry(self, entry: FrontierEntry, reason: str, why: str) -> None:
        """Put ``entry`` back at the tail of its host's queue for another try (module
        doc), counted in this run's stats by ``reason`` (``FetchError.reason``, or
        ``http_429`` / ``http_503``); ``why`` is the log line's detail."""
        self._obs.tally.retried(reason)
        entry.attempts += 1
        self._frontier.push_back(entry)
        self._store.mark(entry.key, "queued", attempts=entry.attempts)
        why = without_url(why, entry.url)  # the line names it
        self._obs.log(f"{entry.host}: retry {entry.attempts} of {entry.url} ({why})")

    def refuse(self, entry: FrontierEntry, stats: HostStats, exc: FetchError) -> None:
        """Block ``entry`` for a DNS answer the crawl will not use: NXDOMAIN (``dns``,
        the host is marked dead) or a special-purpose address (``private_address``)."""
        if isinstance(exc, DnsNotFound):
            if not stats.dead:
                stats.dead = True
                # the message starts with the name it looked up: said once (issue #25)
                said = str(exc).removeprefix(f"{entry.host.rsplit(':', 1)[0]}: ")
                self._obs.audit(f"{entry.host}: {said}; host marked dead")
            reason = BlockReason.DNS
        else:
            reason = BlockReason.PRIVATE_ADDRESS
        self._obs.block(entry.url, entry.host, Verdict(reason, str(exc)))
        self._store.mark(entry.key, "blocked")

    def disallowed(self, entry: FrontierEntry, decision: RobotsDecision) -> None:
        """Block ``entry``, refused by robots.txt (``decision``): ``robots_unavailable``
        when robots.txt could not be fetched and ``robots_on_failure = disallow`` (RFC
        9309 §2.3.1.4: an unreachable robots.txt means complete disallow), ``robots``
        for a rule of our user-agent group."""
        if decision.disallow_all and decision.status == "unreachable":
            verdict = Verdict(
                BlockReason.ROBOTS_UNAVAILABLE,
                "robots.txt unreachable and robots_on_failure = disallow",
            )
        else:
            verdict = Verdict(BlockReason.ROBOTS, f"disallowed for {self._config.robots_token!r}")
        self._obs.block(entry.url, entry.host, verdict)
        self._store.mark(entry.key, "blocked")

    def dns_failed(
        self, entry: FrontierEntry, stats: HostStats, exc: DnsTemporaryFailure, now: float
    ) -> None:
        """The lookup of ``entry``'s host failed for now: back off and retry, or after
        ``max_retries`` record the failure and mark the host ``dns_failing``."""
        host = entry.host
        self._gate.learn(host, now, None, 0.0, None)
        stats.errors += 1
        if entry.attempts < self._config.max_retries:
            self.retry(entry, exc.reason, f"{exc.reason}: {exc}")
            return
        if not stats.dns_failing:
            stats.dns_failing = True
            self._obs.audit(f"{host}: DNS keeps failing ({exc}); host marked dns_failing")
        self._recorder.failure(entry, stats, now, now, exc)

    def fetch_failed(
        self, entry: FrontierEntry, stats: HostStats, start: float, now: float, exc: FetchError
    ) -> None:
        """The fetch of ``entry`` started at ``start`` got no response by ``now``."""
        host = entry.host
        entry.spent_s += now - start
        stats.errors += 1
        stats.last_error = exc.reason
        if not exc.retryable:
            self._gate.forget(host, now)
            self._recorder.failure(entry, stats, start, now, exc)
            return
        if self._refused_for_good(host, exc):
            self._gate.forget(host, now)
            self._recorder.failure(entry, stats, start, now, exc)
            why = (
                "the proxy refuses connections"  # the way out is down, not the host
                if isinstance(exc, ProxyRefused)
                else "it refuses connections and has not answered this run"
            )
            self._park(host, stats, why)
            return
        learn(self._gate, host, start, now, None)
        self._tell_slow(host, stats, now - start, now)
        self.check_park(host, stats)
        if entry.attempts < self._config.max_retries and self._time_left(entry):
            self.retry(entry, exc.reason, f"{exc.reason}: {exc}")
            return
        self._recorder.failure(entry, stats, start, now, exc)

    def answered(
        self, entry: FrontierEntry, stats: HostStats, start: float, now: float, result: FetchResult
    ) -> Outcome | None:
        """The fetch of ``entry`` started at ``start`` was answered at ``now``.

        Returns:
            the politeness outcome when the answer is to be recorded (``retry`` set:
            a 429/503 given up on), or ``None`` when the URL was put back for a retry.
        """
        host = entry.host
        entry.spent_s += now - start
        # a retry's 429/503 is that URL's, not news of the host's load (politeness)
        outcome = learn(self._gate, host, start, now, result, repeat=entry.attempts > 0)
        self._tell_slow(host, stats, now - start, now)
        if outcome.retry:
            self.check_park(host, stats)
            if entry.attempts < self._config.max_retries and not stats.parked:
                backoff = f"HTTP {result.status}, backoff {outcome.backoff_s:.1f} s"
                self.retry(entry, f"http_{result.status}", backoff)
                return None
            tries = plural(entry.attempts + 1, "try", "tries")
            self._obs.log(f"{host}: giving up on {entry.url} after {tries}")
        if self._gate.should_demote(host, now) and not stats.demoted:
            stats.demoted = True
            self._frontier.demote(host)
            self._obs.audit(f"{host}: in backoff for over {self._config.demote_after_s} s, demoted")
        return outcome

    def _tell_slow(self, host: str, stats: HostStats, took_s: float, now: float) -> None:
        """Log once a run when ``host``'s fetch that took ``took_s`` (s) made its delay
        the adaptive part at ``SLOW_DELAY_S`` or more: how long, and the keys."""
        if stats.told_slow or took_s * self._config.adaptive_delay_factor < SLOW_DELAY_S:
            return
        view = self._gate.view(host, now)
        if view.delay_source != "adaptive":
            return
        stats.told_slow = True
        self._obs.log(
            f"{host}: slow answers: {view.delay_ms / 1000:.0f} s between its fetches now"
            f" ({self._config.adaptive_delay_factor:g} x its last fetch's {took_s:.1f} s:"
            f" adaptive_delay_factor, up to max_delay_ms = {self._config.max_delay_ms:g})"
        )

    def _time_left(self, entry: FrontierEntry) -> bool:
        """Whether ``entry``'s tries this run took less than ``total_timeout_ms`` in all
        (so a URL costs at most about twice that, whatever a server drips)."""
        return entry.spent_s * 1000 < self._config.total_timeout_ms

    def _refused_for_good(self, host: str, exc: FetchError) -> bool:
        """Whether ``exc`` is a refused connection (``ConnectRefused``) to ``host``,
        which has answered no request this run (``HostGate.has_answered``), and
        ``retry_refused`` is off: the URL is recorded after this one try and the host
        parked, as curl and wget give up on a refused connection at once, instead of
        ``max_retries`` backoffs (85 s with the defaults) for a wrong port or a server
        that is not running. A host that answered before is retried as usual (a
        server restarting)."""
        return (
            isinstance(exc, ConnectRefused)
            and not self._config.retry_refused
            and not self._gate.has_answered(host)
        )

    def check_park(self, host: str, stats: HostStats) -> None:
        """Park ``host`` after ``park_after_backoffs`` straight 429/503/no-response
        answers or a backoff of ``demote_after_s`` or more (``Politeness.should_park``,
        issue #10 item 7); the audit line names the cause with its values
        (``Politeness.park_reason``, issue #22 item 8)."""
        if stats.parked:
            return
        why = self._gate.park_reason(host)
        if why is not None:
            self._park(host, stats, why)

    def _park(self, host: str, stats: HostStats, why: str) -> None:
        """Park ``host`` (``why``: the audit line's cause): its queued URLs leave the
        frontier and stay queued in SQLite for the next run."""
        if stats.parked:
            return
        stats.parked = True
        dropped = self._frontier.drop_host(host)
        self._obs.changed(host)
        self._obs.audit(f"{host}: parked: {why}; {plural(dropped, 'URL')} left for the next run")
        if self._parked is not None:
            self._parked()


__all__ = ["Retries"]
