"""Recrawl: revisit a crawl's pages with conditional GET, pages that change often first.

``crawldeck recrawl DB [--older-than DURATION]`` is a new run of the same crawl file
through the same ``Engine`` (politeness, robots.txt, traps as in any run). Before the
engine starts, ``prepare`` picks the pages to revisit (status 200 and no error, or a
4xx: a broken link's target may be there now; frontier row ``done``, last visited more
than ``older_than_s`` ago), orders them by their
estimated change rate and puts their frontier rows back as ``spilled`` in that order,
so the frontier window reads them back per host in that order and only
``frontier_window`` of them are in memory at once. An unfinished crawl's queue (its
``queued``, ``in_flight`` and ``spilled`` rows, never fetched) goes behind them, in
the order a resume reads it (``queued`` by seq, then each host's ``spilled`` by seq):
on every host its pages are revisited first, then its queue goes on, within the
recrawl's budgets (``crawldeck recrawl --max-pages``): what is known is checked
before what was never seen (the choice of issue #14's trial, a new user's). Hosts
are fetched side by side, so a budget can end the run with one host's revisits left
(still ``spilled``: the next run fetches them, conditionally) while another host's
queue went on. Each is fetched with
``If-None-Match`` (its stored ``ETag``) and ``If-Modified-Since`` (its stored
``Last-Modified``), RFC 9110 §13.1.1-13.1.3: ``ConditionalFetcher`` adds them to the
request from a map of URL -> ``Validators`` that ``core.crawl.assembly`` reads from the file
when a run starts (``validators_of``: the queued URLs whose stored page is a 200 with
a validator), so they are looked up, not carried by the frontier entry, and the
frontier, its SQLite rows, the engine and the cluster wire stay as they are. Memory:
one map entry per revisited page that has a validator, about 260 bytes with a
60-character URL, a 34-character ETag and a date (``tests/unit/test_recrawl.py`` measures
it: 260 MB for a million pages), held for the run; the read costs one index probe of
``pages`` per queued URL at the start of every run.

A 304 keeps the page's row as it was (its body, WARC location and digest: the page
was not modified) and adds a ``page_versions`` row with status 304; a 200 is a new
version of the page (re-parsed, its new links admitted, its row replaced). Every fetch
of a page, the first crawl's included, is a ``page_versions`` row (``core.storage.store``).

Change rate: Cho and Garcia-Molina, "Estimating frequency of change", ACM TOIT 3(3),
2003, §4: a page visited n + 1 times, n intervals of mean length I seconds, X of them
showing a change (a 200 whose payload digest differs from the version before, or without
a digest to compare; a 304 is no change), changes as a Poisson process of rate r; their
improved estimator ``r = -ln((n - X + 0.5) / (n + 0.5)) / I`` (changes per second) is
finite when every visit found a change (X = n) and nearly unbiased. Visits are not
regular here (each recrawl is started by hand): the estimator is applied with I = the
mean interval, which is exact for equal intervals; their irregular-access estimator (§5,
a maximum likelihood root) has no finite value when every interval showed a change,
which is the case that matters most here (a page that changed at every visit goes
first). A page visited once (n = 0) gets the prior: the same estimator over every page's
intervals pooled (sum of n, sum of X, the mean of all intervals), i.e. the crawl's mean
rate, or 0 when no page was visited twice.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import groupby
from typing import Final

from crawldeck.core.errors import ConfigError
from crawldeck.core.policy.links import is_html
from crawldeck.core.protocols import Fetcher, LocalHistory
from crawldeck.core.records import BodySink, FetchResult
from crawldeck.core.storage.store import Store

#: Seconds per unit of a ``--older-than`` duration.
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")
#: Parts of a compound duration (``1h30m``, as systemd and Go write one).
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_COMPOUND = re.compile(r"(?:\d+(?:\.\d+)?[smhdw])+")
#: Statuses that observe the page's content: a 200 (its digest) or a 304 (unchanged).
OBSERVING_STATUSES = (200, 304)


def parse_duration(text: str) -> float:
    """``--older-than``'s value in seconds: a number and a unit, ``s`` (the default),
    ``m``, ``h``, ``d`` or ``w``: ``"30s"`` -> 30.0, ``"2h"`` -> 7200.0, ``"7d"`` ->
    604800.0, ``"1.5m"`` -> 90.0, ``"0"`` -> 0.0; or several with their units, added:
    ``"1h30m"`` -> 5400.0 (issue #25 trial 21: it was refused).

    Raises:
        ConfigError: anything else (``"-1d"``, ``"2 days"``, ``""``, ``"1h30"``), one line.
    """
    text = text.strip()
    match = _DURATION.fullmatch(text)
    if match is not None:
        return float(match.group(1)) * DURATION_UNITS[match.group(2) or "s"]
    if _COMPOUND.fullmatch(text):
        return sum(float(n) * DURATION_UNITS[unit] for n, unit in _PART.findall(text))
    raise ConfigError(
        f"bad duration {text!r}: expected a number and a unit s, m, h, d or w (30s, 2h, 7d, 1h30m)"
    )


@dataclass(frozen=True, slots=True)
class Visit:
    """One fetch of a page, a ``page_versions`` row.

    Attributes:
        fetched_at: when, wall-clock epoch seconds.
        status: the HTTP status (200 or 304 observe the content).
        payload_digest: the payload's digest (``sha1:BASE32``), ``None`` if unknown.
        unread: the crawl does not read the page's body (not HTML): its 200s observe
            nothing (issue #25 trial 10).
    """

    fetched_at: float
    status: int | None
    payload_digest: str | None
    unread: bool = False


@dataclass(frozen=True, slots=True)
class Observation:
    """What a page's visits tell of its changes (``observe``).

    Attributes:
        intervals: n, the intervals between its observing visits (visits - 1).
        changes: X, the intervals that ended in a changed payload (0 <= X <= n).
        span_s: seconds from its first to its last observing visit (n x I).
        last_visit: its last visit, epoch seconds (observing or not).
    """

    intervals: int
    changes: int
    span_s: float
    last_visit: float


def _changed(digest: str | None, before: str | None) -> bool:
    """Whether a 200 with payload ``digest`` is a change from the version of digest
    ``before``: they differ, or one is unknown (no WARC record, ``warc = false``: the
    server answered 200, not 304, so it says the page was modified)."""
    return digest is None or before is None or digest != before


def observe(visits: Iterable[Visit]) -> Observation:
    """Fold a page's visits, oldest first, into an ``Observation``.

    A visit observes the content when its status is 200 or 304; an interval ends in a
    change when its closing visit is a 200 whose digest differs from the digest known
    before it, or either digest is unknown (a 304 keeps the digest known: the server
    says it is the same). Other
    statuses (errors, redirects), and the visits of a page whose body is not read
    (``Visit.unread``: not HTML, no digest to compare; issue #25 trial 10), count only
    for ``last_visit``.

    Raises:
        ValueError: no visit at all.
    """
    intervals = changes = 0
    first: float | None = None
    last_observed = 0.0
    last_visit: float | None = None
    digest: str | None = None
    for visit in visits:
        last_visit = visit.fetched_at
        if visit.status not in OBSERVING_STATUSES or visit.unread:
            continue
        if first is None:
            first = visit.fetched_at
            digest = visit.payload_digest
        else:
            intervals += 1
            if visit.status == 200 and _changed(visit.payload_digest, digest):
                changes += 1
                digest = visit.payload_digest
        last_observed = visit.fetched_at
    if last_visit is None:
        raise ValueError("observe: a page without a visit")
    span = 0.0 if first is None else last_observed - first
    return Observation(intervals, changes, span, last_visit)


def change_rate(intervals: int, changes: int, span_s: float, prior: float) -> float:
    """Cho and Garcia-Molina's improved estimator of a page's change rate, changes per
    second: ``-ln((n - X + 0.5) / (n + 0.5)) / I`` with n = ``intervals``, X =
    ``changes`` and I = ``span_s / n`` (see the module docstring).

    ``prior`` (changes/s) when there is nothing to estimate from: no interval (a page
    visited once) or a span of 0 s or less. 0 when X = 0; increasing in X; finite at
    X = n (``ln(2n + 1) / I``).

    Raises:
        ValueError: ``changes`` outside ``0 .. intervals``.
    """
    if not 0 <= changes <= max(intervals, 0):
        raise ValueError(f"change_rate: {changes} changes in {intervals} intervals")
    if intervals <= 0 or span_s <= 0:
        return prior
    mean_interval_s = span_s / intervals
    return -math.log((intervals - changes + 0.5) / (intervals + 0.5)) / mean_interval_s


def pooled_prior(observations: Iterable[Observation]) -> float:
    """The prior of a page visited once: ``change_rate`` over every page's intervals
    pooled (their n, X and spans summed), changes/s; 0.0 without any interval."""
    intervals = changes = 0
    span = 0.0
    for seen in observations:
        intervals += seen.intervals
        changes += seen.changes
        span += seen.span_s
    return change_rate(intervals, changes, span, 0.0)


@dataclass(frozen=True, slots=True)
class Validators:
    """A page's validators as its last 200 sent them (RFC 9110 §8.8).

    Attributes:
        etag: the ``ETag`` value, quotes included (``"abc"`` or ``W/"abc"``), or ``None``.
        last_modified: the ``Last-Modified`` HTTP-date, or ``None``.
    """

    etag: str | None
    last_modified: str | None

    def headers(self) -> dict[str, str]:
        """The conditional request headers: ``If-None-Match`` with the ETag (§13.1.2),
        ``If-Modified-Since`` with the date (§13.1.3); a server that knows both
        evaluates only If-None-Match (§13.2.2), one that knows only dates the other."""
        headers: dict[str, str] = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


@dataclass(frozen=True, slots=True)
class Candidate:
    """A page to revisit.

    Attributes:
        url: the URL requested. key: its frontier row's dedupe key.
        rate: its estimated change rate, changes/s. last_visit: epoch seconds.
    """

    url: str
    key: str
    rate: float
    last_visit: float


def order(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Pages that change often first; equal rates by oldest last visit, then by URL."""
    return sorted(candidates, key=lambda c: (-c.rate, c.last_visit, c.url))


@dataclass(frozen=True, slots=True)
class RecrawlPlan:
    """What ``prepare`` put back in the frontier.

    Attributes:
        order: the revisited pages, in the order they were queued.
        prior: the change rate given to pages visited once, changes/s.
        skipped: pages not revisited because they were visited too recently, or (when
            ``continued`` is set) since the stopped recrawl began.
        queued: URLs left in the queue, queued behind the revisits: an unfinished
            crawl's, and a stopped recrawl's revisits not yet made.
        continued: when a recrawl stopped before its end (the file's last run, or
            the last runs), ``(its start in epoch s, revisits_left)`` (``prepare``;
            ``Store.queued_revisits``): this recrawl goes on with it, not over again.
        retried: URLs that failed transiently (429, 5xx, no response), which the run
            queues again (``Store.transient_failures``), as every run of the file does.
    """

    order: tuple[Candidate, ...]
    prior: float
    skipped: int
    queued: int
    continued: tuple[float, int] | None = None
    retried: int = 0


def histories(store: Store) -> Iterator[tuple[str, Observation]]:
    """``(url, observation)`` of every page with visits, from ``page_versions``, in
    URL order (``observe``; ``prepare`` orders a recrawl by them).

    Raises:
        StoreError: the file could not be read.
    """
    rows = store.page_versions()
    for url, group in groupby(rows, key=lambda row: row[0]):
        yield (
            url,
            observe(
                Visit(at, status, digest, unread=not is_html(media))
                for _, at, status, digest, media in group
            ),
        )


#: The ``meta`` row holding the start (epoch s, ``repr`` of a float) of the file's
#: latest recrawl, which a recrawl stopped before its end goes on from (``prepare``).
RECRAWL_SINCE: Final = "recrawl.since"

#: Spilled rows read per ``Store.load_spilled`` call by ``queue_keys``.
_SPILLED_BATCH = 10_000


def queue_keys(store: Store) -> list[str]:
    """The keys of the URLs an unfinished crawl left to fetch, in the order a resume
    reads them: the ``queued`` and ``in_flight`` rows by seq, then each host's
    ``spilled`` rows by seq (``Store.load_frontier``, ``Store.load_spilled``); about 100
    bytes a key in memory, held while ``prepare`` runs.

    Raises:
        StoreError: the file could not be read.
    """
    keys = [row.key for row in store.load_frontier()]
    for host in store.spilled_counts():
        after = 0
        while True:
            rows, after = store.load_spilled(host, after, _SPILLED_BATCH)
            keys.extend(row.key for row in rows)
            if len(rows) < _SPILLED_BATCH:
                break
    return keys


def prepare(store: Store, *, older_than_s: float, now: float) -> RecrawlPlan:
    """Pick, order and queue (state ``spilled``) the pages to revisit, then, behind
    them, an unfinished crawl's queue (``queue_keys``; module docstring); blocks until
    the store committed it. Then ``Engine(config, store)`` resumes the file with them
    queued, and asks for the revisits conditionally (``validators_of``, in
    ``assemble``).

    A recrawl stopped before its end (``--max-pages``, Ctrl-C, a kill: its queue is not
    empty) is continued, as a stopped crawl is resumed: the revisits it had not made
    stay queued in their order, the queue behind them goes on, and the pages visited
    since it began are not revisited again (the resume command it printed would
    otherwise revisit its first pages again at every run, even once its revisits were
    all made and only the queue was left: issue #25). When a recrawl begins it keeps its
    start in the file (``meta`` row ``RECRAWL_SINCE``, epoch s); a recrawl that finds
    that row and a queue goes on from it, one that finds the queue empty begins anew.

    Args:
        store: the open crawl file (no crawl running on it).
        older_than_s: revisit pages last visited more than this many seconds before
            ``now`` (0: every page).
        now: wall-clock epoch seconds.

    Raises:
        StoreError: the file could not be read or written.
    """
    observations = dict(histories(store))
    prior = pooled_prior(observations.values())
    chosen: list[Candidate] = []
    skipped = 0
    queue = queue_keys(store)
    since = store.meta_items(RECRAWL_SINCE).get(RECRAWL_SINCE)
    continued = None
    if since is not None and queue:
        continued = (float(since), store.queued_revisits())
    else:
        store.set_meta(RECRAWL_SINCE, repr(now))  # committed with the requeue below
    # a page visited after the stopped recrawl began was visited by it
    visited_before = math.inf if continued is None else continued[0]
    for url, key, _, _, fetched_at in store.recrawl_candidates():
        seen = observations.get(url)
        last_visit = fetched_at if seen is None else max(seen.last_visit, fetched_at)
        if now - last_visit <= older_than_s or last_visit > visited_before:
            skipped += 1
            continue
        rate = (
            prior if seen is None else change_rate(seen.intervals, seen.changes, seen.span_s, prior)
        )
        chosen.append(Candidate(url, key, rate, last_visit))
    ordered = order(chosen)
    store.requeue_for_recrawl([*(c.key for c in ordered), *queue])
    retried = store.transient_failures()
    return RecrawlPlan(tuple(ordered), prior, skipped, len(queue), continued, retried)


def validators_of(store: LocalHistory) -> dict[str, Validators]:
    """URL -> ``Validators`` of every URL queued (or spilled) whose stored page is a 200
    with an ``ETag`` or a ``Last-Modified``: after ``prepare``, the recrawl's pages
    (``Store.queued_validators``). Read once when a run starts.

    Raises:
        StoreError: the file could not be read.
    """
    return {url: Validators(etag, modified) for url, etag, modified in store.queued_validators()}


@dataclass(frozen=True, slots=True)
class RecrawlSummary:
    """What a recrawl's visits found (``summarize``).

    Attributes:
        not_modified: revisits answered 304. changed: revisits answered 200 with a
        payload digest unlike the version before (or one unknown), or after a visit
        that got no 200 or 304 (a page back after a 404: issue #25 trial 17 read it
        "unchanged", its digest the same as its last 200's). unchanged: revisits
        answered 200 with the same digest (a server that ignored the validators).
        other: revisits with any other status or no answer. new: pages first fetched
        in the recrawl (an unfinished crawl's queue, links of changed pages), whatever
        their answer. not_compared: revisits answered 200 whose body the crawl does not
        read (not HTML): no digest to compare (issue #25 trial 10: they read as changed
        at every recrawl).
    """

    not_modified: int
    changed: int
    unchanged: int
    other: int
    new: int
    not_compared: int = 0


def summarize(store: Store, since: float) -> RecrawlSummary:
    """The visits made at or after ``since`` (epoch s): a page with a visit before
    ``since`` was revisited, each visit judged against the version before it; a page
    whose first visit is at or after ``since`` is new (``page_versions``).

    Raises:
        StoreError: the file could not be read.
    """
    counts = {"304": 0, "changed": 0, "unchanged": 0, "other": 0, "new": 0, "unread": 0}
    for _, group in groupby(store.page_versions(), key=lambda row: row[0]):
        digest: str | None = None
        known = False  # a visit of this page came before this one
        before: int | None = None  # the status of the visit before this one
        for _, at, status, payload, media in group:
            if at >= since:
                if not known:
                    counts["new"] += 1
                elif status == 304:
                    counts["304"] += 1
                elif status == 200 and not is_html(media):
                    counts["unread"] += 1
                elif status == 200 and before not in OBSERVING_STATUSES:
                    counts["changed"] += 1  # back after a 404 or an error (trial 17)
                elif status == 200:
                    counts["changed" if _changed(payload, digest) else "unchanged"] += 1
                else:
                    counts["other"] += 1
            known = True
            before = status
            if status in OBSERVING_STATUSES:
                digest = payload
    return RecrawlSummary(
        counts["304"],
        counts["changed"],
        counts["unchanged"],
        counts["other"],
        counts["new"],
        counts["unread"],
    )


class ConditionalFetcher:
    """A ``Fetcher`` that makes every request for a URL of ``validators`` conditional.

    Args:
        inner: the fetcher that sends the requests (the engine's).
        validators: URL as requested -> its ``Validators`` (``RecrawlPlan.validators``).

    ``fetch`` adds ``Validators.headers()`` under the caller's headers (a caller's
    header of the same name wins); any other URL (robots.txt, a new link) goes as it
    came. Raises what ``inner`` raises.
    """

    def __init__(self, inner: Fetcher, validators: Mapping[str, Validators]) -> None:
        self._inner = inner
        self._validators = validators

    async def fetch(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        headers: Mapping[str, str] | None = None,
        want_body: Callable[[str], bool] | None = None,
        on_body: BodySink | None = None,
    ) -> FetchResult:
        """``inner.fetch``, conditional when ``url`` has validators (see the class)."""
        found = self._validators.get(url)
        if found is not None:
            headers = {**found.headers(), **(headers or {})}
        return await self._inner.fetch(
            url, max_bytes=max_bytes, headers=headers, want_body=want_body, on_body=on_body
        )

    async def aclose(self) -> None:
        """Close ``inner``."""
        await self._inner.aclose()


__all__ = [
    "DURATION_UNITS",
    "OBSERVING_STATUSES",
    "Candidate",
    "ConditionalFetcher",
    "Observation",
    "RecrawlPlan",
    "RecrawlSummary",
    "Validators",
    "Visit",
    "change_rate",
    "histories",
    "observe",
    "order",
    "parse_duration",
    "pooled_prior",
    "prepare",
    "queue_keys",
    "summarize",
    "validators_of",
]
