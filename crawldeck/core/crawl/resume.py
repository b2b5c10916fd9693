"""Resume: a crawl file's earlier runs, given back to the parts of a new run.

A stopped, killed or finished crawl goes on from its SQLite file with nothing lost and
nothing fetched twice (docs/architecture.md, "Crash safety and resume"): the seen set is
rebuilt from every frontier key (the trap guard counts each on the way, so a calendar's
budget is not handed out again), the URLs left ``queued`` return to the frontier with
their OPIC cash (a redirect chain cut by a stop goes on from its next hop with its loop
memory; one that had cookies without it, since they are not kept), the ``spilled`` ones
stay in the store and are counted, each host gets back its figures and its politeness
(Crawl-delay, backoff, learnt delay), and the totals of earlier runs are the base of
this run's. A rerun first queues again what failed transiently (5xx, 429, timeouts, lost
connections, DNS failures), with its attempts counted on (issue #10 item 16).

URLs an earlier run queued passed that run's ``include`` / ``exclude`` patterns, not
necessarily this run's: when the patterns differ from the last run's
(``Store.last_config``), every URL left to fetch (``queued``, ``in_flight`` and
``spilled`` rows) is checked against them as it comes out of the store, before the run
starts, and one they refuse goes to ``blocked`` as ``excluded`` (its frontier row
``blocked``) like a URL found now (issue #14's loose ends). The spilled rows are read
once for it (in batches, host by host: the cost of one read-back of the whole tail),
only then; with the same patterns nothing is read twice. Changed patterns also give
back what they no longer refuse: a URL an earlier run's patterns refused from its
queue is queued again when this run's let it through (``_readmit``), so a narrower
rerun of a crawl file loses nothing the crawl's own command would fetch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from crawldeck.core.crawl.observer import SNAPSHOT_RECENT, Observer
from crawldeck.core.policy import urls
from crawldeck.core.policy.address_policy import AddressPolicy
from crawldeck.core.policy.admission import Admission
from crawldeck.core.policy.gate import HostGate
from crawldeck.core.policy.seen import SeenSet
from crawldeck.core.policy.traps import ScopePolicy, TrapGuard, UrlPatterns
from crawldeck.core.policy.window import FrontierWindow
from crawldeck.core.protocols import LocalHistory
from crawldeck.core.records import FrontierRow
from crawldeck.core.words import plural

#: Spilled rows read per ``Store.load_spilled`` call by ``_spilled_rows``.
_SPILLED_BATCH = 10_000
#: Rows queued again per ``Store.readmit_excluded`` call by ``_readmit``.
_READMIT_BATCH = 10_000


def _observed(guard: TrapGuard, keys: Iterable[str]) -> Iterator[str]:
    """``keys`` (of an earlier run), each counted by ``guard`` on the way."""
    observe = guard.observe
    for key in keys:
        observe(key)
        yield key


def patterns_changed(store: LocalHistory, patterns: UrlPatterns) -> bool:
    """Whether ``patterns`` differ from the ``include`` / ``exclude`` of the file's last
    run (a run before the keys existed had none)."""
    saved = store.last_config() or {}
    before = (tuple(saved.get("include") or ()), tuple(saved.get("exclude") or ()))
    now = (
        tuple(p.pattern for p in patterns.include),
        tuple(p.pattern for p in patterns.exclude),
    )
    return before != now


def _spilled_rows(store: LocalHistory) -> Iterator[FrontierRow]:
    """Every ``spilled`` row, host by host, in ``Store.load_spilled``'s order."""
    for host in store.spilled_counts():
        after = 0
        while True:
            rows, after = store.load_spilled(host, after, _SPILLED_BATCH)
            yield from rows
            if len(rows) < _SPILLED_BATCH:
                break


def _refused(
    row: FrontierRow, patterns: UrlPatterns, admission: Admission, store: LocalHistory
) -> bool:
    """Whether ``patterns`` refuse the stored ``row`` (a seed, depth 0, need match no
    include); a refused one is recorded in ``blocked`` (``Admission.block_once``) and
    its frontier row marked ``blocked``."""
    verdict = patterns.verdict(row.url, is_seed=row.depth == 0)
    if verdict is None:
        return False
    admission.block_once(row.url, row.host, verdict, key=row.key)
    store.mark(row.key, "blocked")
    return True


def _readmit(store: LocalHistory, patterns: UrlPatterns) -> int:
    """Queue again the URLs an earlier run's include / exclude refused from its queue
    (``blocked`` as ``excluded``, ``Store.load_excluded``) that ``patterns`` let
    through, ``_READMIT_BATCH`` at a time; how many. A narrower rerun of a crawl file
    refused its queue for good before: the crawl's own command, run again, found
    nothing left (issue #25 trial 18: 462 URLs). Those refused when found (no frontier
    row) stay refused: their pages are not parsed again."""
    readmitted = 0
    batch: list[tuple[str, str]] = []
    for row in store.load_excluded():
        if patterns.verdict(row.url, is_seed=row.depth == 0) is None:
            batch.append((row.key, row.url))
            if len(batch) >= _READMIT_BATCH:
                store.readmit_excluded(batch)
                readmitted += len(batch)
                batch = []
    store.readmit_excluded(batch)
    return readmitted + len(batch)


def restore(
    store: LocalHistory,
    *,
    observer: Observer,
    admission: Admission,
    seen: SeenSet,
    guard: TrapGuard,
    scope: ScopePolicy,
    policy: AddressPolicy,
    frontier: FrontierWindow,
    gate: HostGate,
) -> str | None:
    """Give the parts of a new run what ``store``'s earlier runs left: the seeds of
    every run widen ``scope`` and are trusted by the address ``policy`` (a loopback seed
    of an earlier run keeps its queued URLs when a rerun names other seeds), then the
    seen set, the trap guard's counts, the frontier, the hosts' politeness and the
    figures.

    Returns:
        the log line that says what was resumed, or ``None`` for a new file.

    Raises:
        StoreError: the file could not be read.
    """
    if not store.has_crawl():
        return None
    for url in store.seed_urls():  # done or not, they define the crawl
        scope.add_seed(url)
        policy.trust(urls.host_key(url))
    requeued = store.requeue_failed()
    observer.retried = sum(requeued.values())
    seen.rebuild(_observed(guard, store.iter_keys()))
    for host, count in store.host_counts().items():
        observer.stats(host, None)
        admission.admitted[host] = count
    patterns = guard.patterns
    changed = patterns_changed(store, patterns)
    readmitted = _readmit(store, patterns) if changed else 0
    counts = store.counts()  # before any row is blocked below: they count as this run's
    recheck = bool(patterns) and changed
    excluded = 0
    if recheck:
        excluded = sum(_refused(row, patterns, admission, store) for row in _spilled_rows(store))
    for row in store.load_frontier():
        if recheck and _refused(row, patterns, admission, store):
            excluded += 1
            continue
        observer.stats(row.host, urls.origin(row.url))
        # a chain cut by a stop goes on from its hop (its loop memory kept: issue #25
        # trial 13 lost a redirect loop stopped halfway), without cookies (a chain that
        # had some was stored without its memory); its cash is kept
        frontier.add(frontier.entry_of(row))
    if excluded:
        store.flush()  # the spilled counts below without the rows just blocked
    frontier.restore(store.spilled_counts())
    fetched = 0
    saved_hosts = store.load_hosts()
    records = store.fetch_records()
    # after a kill the hosts rows (written at intervals) may be behind the fetches
    # recorded with the pages: each host counts on from the larger (issue #25 trial 21)
    behind = (
        store.fetches_by_host()
        if records > sum(rec.pages_fetched for rec in saved_hosts.values())
        else {}
    )
    for host, count in behind.items():
        if host not in saved_hosts:
            observer.stats(host, None).fetched = count
            fetched += count
    for host, rec in saved_hosts.items():
        stats = observer.stats(host, None)
        stats.fetched = max(rec.pages_fetched, behind.get(host, 0))
        fetched += stats.fetched
        stats.demoted = rec.state == "demoted"
        stats.dead = rec.state == "dead"  # its URLs were blocked: none is queued
        stats.saved = rec
        if requeued.get(host):
            observer.changed(host)
        gate.restore(host, rec)
    mix, total_bytes = store.page_totals()
    recent = store.recent_blocked(SNAPSHOT_RECENT)
    observer.restore(
        dict(counts),
        mix,
        total_bytes,
        recent,
        fetched=fetches_of(max(counts["pages"], records), fetched),
    )
    again = observer.retried
    verb = "is" if again == 1 else "are"
    retried = f" ({again} that failed before {verb} tried again)" if again else ""
    refused = (
        f"; {plural(excluded, 'queued URL')} refused by this run's include/exclude"
        if excluded
        else ""
    )
    if readmitted:
        refused += (
            f"; {plural(readmitted, 'URL')} an earlier run's include/exclude refused queued again"
        )
    return (
        f"resuming: {plural(frontier.total(), 'URL')} queued{retried}, "
        f"{plural(observer.pages, 'fetch', 'fetches')} made before{refused}"
    )


def fetches_of(pages: int, hosts_fetched: int) -> int:
    """The fetches of a crawl file's earlier runs, as a run counts on from them
    (``max_pages``, the console's ``fetched``, ``Observer.restore``): its hosts'
    ``pages_fetched`` summed (``hosts_fetched``: a recrawl's revisits are fetches, not
    pages, issue #25 trial 9), or its recorded fetches (``pages``: the ``pages`` or
    ``page_versions`` rows, the more) when they are more (host rows are written at
    intervals, pages and their versions at each commit: a run killed between the two
    leaves the hosts behind, and a recrawl after it then counted from them: trial 21).
    A failed URL queued again (``Counts.retrying``) keeps its row and
    its fetch: its next try, a run later, is one more (issue #25 trial 20: its tries
    were forgotten at each resume, so a rerun against a failing site never reached
    ``--max-pages``)."""
    return max(pages, hosts_fetched)


def file_fetches(store: LocalHistory) -> int:
    """``fetches_of`` the crawl file of ``store`` as it is (before a run requeues its
    failed URLs): what the CLI's budget lines start from.

    Raises:
        StoreError: the file could not be read.
    """
    hosts = store.load_hosts().values()
    pages = max(store.counts()["pages"], store.fetch_records())
    return fetches_of(pages, sum(rec.pages_fetched for rec in hosts))


__all__ = ["fetches_of", "file_fetches", "patterns_changed", "restore"]
