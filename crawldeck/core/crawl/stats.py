"""Run statistics: what one run of a crawl did, as Scrapy's stats collector tells it.

At the end of every run that ends cleanly (finished, a budget reached, stopped by the
console, Ctrl-C, SIGTERM or SIGHUP) the engine stores a JSON object in ``runs.stats``
(``Engine.run``, ``Store.end_run``); a run killed (SIGKILL, power loss) has none.
``crawldeck stats DB`` prints it (``cli.stats``), ``crawl --stats-json FILE`` writes it
(``cli.runner``). Every count is THIS run's: earlier runs of the file are not in it. A
cluster crawl's coordinator counts its run from the crawl file (``cluster_run_stats``).

The object's keys (the field's terms, Scrapy's ``downloader/response_status_count/200``
as ``responses_by_status["200"]``):

* ``run_id``, ``finish_reason`` (the engine's outcome: ``finished``, ``max_pages``,
  ``max_time``, ``max_bytes``, ``stopped``), ``start_time`` and ``finish_time`` (ISO
  8601 UTC, as ``runs.started_at``), ``elapsed_s`` (the time it crawled: from start to
  finish less ``paused_s``, the time it was paused, as the console's and the summary's
  elapsed time and ``--max-time`` count; issue #25 trial 10);
* ``fetches``: page fetches recorded (``responses`` + ``transport_errors``: each URL's
  final try, a redirect hop being a fetch of its own; a try put back for a retry and
  robots.txt requests are not in it); ``responses_by_status`` (``{"200": 19, "404": 1}``),
  ``transport_errors_by_reason`` (``{"timeout": 1}``: ``FetchError.reason``, a fetch
  with no HTTP answer);
* ``body_bytes``: the decoded bodies of those responses, in bytes (wire bytes are not
  known: the fetcher does not count them);
* ``pages_added``, ``duplicates``, ``near_duplicates``: rows the run added to
  ``pages`` (a URL fetched again replaces its row and adds none) and those of them that
  are exact or near duplicates (``Store.pages_added``);
* ``links_cut``: responses whose links were cut, read from the first
  ``parse_max_bytes`` of the body only or past ``max_links_per_page`` (``pages.error``
  starting as one of ``records.LINKS_CUT_ERRORS``);
* ``blocked``, ``blocked_by_reason``: URLs the run refused, by ``blocked.reason``
  (``Store.blocked_added``: each URL once, as the table holds it);
* ``robots_txt_fetched``: origins whose robots.txt the run requested (each once; a
  background refresh and redirect hops are not counted);
* ``retries``, ``retries_by_reason``: tries put back for another one this run (a 429 or
  503 answer, a timeout or a refused connection: ``http_429``, ``timeout``, ...;
  ``Retries.retry``), each try once;
* ``retried_from_earlier_runs``: URLs that failed transiently in earlier runs and were
  queued again by this one;
* ``fetch_latency_s``: ``count``, ``sum`` and ``mean`` of the recorded fetches'
  durations in seconds (request start to the body's end, ``PageRecord.elapsed_ms``);
* ``peak_rss_bytes``: the crawl process's peak resident set size
  (``getrusage(RUSAGE_SELF).ru_maxrss``, getrusage(2)); ``peak_child_rss_bytes``: that
  of its largest child process ended by then (parse workers, the WARC writer:
  ``RUSAGE_CHILDREN``), 0 when none has ended.

The same figures feed the Prometheus metrics (``core.crawl.metrics``): ``RunTally`` is kept
by the observer, one O(1) update per recorded fetch.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import resource
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from crawldeck.core.errors import StoreError
from crawldeck.core.records import LINKS_CUT_ERRORS, to_iso_utc
from crawldeck.core.storage.store import check_header, check_schema, connect_reader
from crawldeck.core.storage.store.lock import lock_holder
from crawldeck.core.words import plural

#: The fetch latency histogram's upper bounds in seconds: Prometheus' default buckets
#: (``prometheus_client.Histogram.DEFAULT_BUCKETS``), which span what a crawl sees, a
#: 2 ms loopback answer to a 10 s slow host; slower fetches fall in ``+Inf``.
LATENCY_BUCKETS_S: Final = (
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class LatencyHistogram:
    """The recorded fetches' durations at one moment (Prometheus' histogram shape).

    Attributes:
        buckets: ``(upper bound in s, fetches at most that long)``, cumulative, one per
            ``LATENCY_BUCKETS_S`` entry and a last one for ``inf``.
        sum_s: the durations added up, in seconds.
        count: the fetches (the ``inf`` bucket's count).
    """

    buckets: tuple[tuple[float, int], ...]
    sum_s: float
    count: int


#: The histogram of no fetch.
NO_LATENCY: Final = LatencyHistogram(
    tuple((bound, 0) for bound in (*LATENCY_BUCKETS_S, float("inf"))), 0.0, 0
)


@dataclass(frozen=True, slots=True)
class RunFigures:
    """This run's counts at one moment (``Observer.statistics().run``): what the stats
    object and the Prometheus counters (``core.crawl.metrics``) are made of.

    Attributes:
        pages: page fetches recorded (responses and final failures).
        body_bytes: the decoded bodies of the responses, in bytes.
        responses_by_status: ``(HTTP status, responses)``, by status.
        transport_errors: ``(FetchError.reason, fetches)`` without an HTTP answer.
        blocked: ``(blocked.reason, URLs)`` refused and committed (``Store.blocked_added``).
        robots_txt_fetched: origins whose robots.txt was requested.
        latency: the recorded fetches' durations.
        retries: ``(reason, tries)`` put back for a retry (``RunTally.retries``).
        links_cut: responses whose links were cut (``RunTally.links_cut``).
    """

    pages: int = 0
    body_bytes: int = 0
    responses_by_status: tuple[tuple[int, int], ...] = ()
    transport_errors: tuple[tuple[str, int], ...] = ()
    blocked: tuple[tuple[str, int], ...] = ()
    robots_txt_fetched: int = 0
    latency: LatencyHistogram = NO_LATENCY
    retries: tuple[tuple[str, int], ...] = ()
    links_cut: int = 0


#: The figures of a run that has recorded and refused nothing yet.
NO_FIGURES: Final = RunFigures()


@dataclass(slots=True)
class RunTally:
    """This run's recorded fetches by outcome: the counters no other part keeps.

    Fed by ``Observer`` (``HostStats.remember``: each page fetch recorded, a
    response or a final failure), one O(1) update each (a ``bisect`` over the 14
    bucket bounds). Read on the event loop's thread (``latency``, ``dict(...)``).

    Attributes:
        by_status: responses by HTTP status.
        errors: fetches without an HTTP answer, by ``FetchError.reason``.
        slots: fetches per latency bucket (not cumulative; the last is ``+Inf``).
        sum_s: the fetches' durations added up, in seconds.
        retries: tries put back for another one, by reason (``FetchError.reason``,
            ``http_429``, ``http_503``; ``Retries.retry``).
        links_cut: responses whose ``error`` says their links were cut
            (``records.LINKS_CUT_ERRORS``: ``parse_max_bytes``, ``max_links_per_page``).
    """

    by_status: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    retries: Counter[str] = field(default_factory=Counter)
    slots: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS_S) + 1))
    sum_s: float = 0.0
    links_cut: int = 0

    def fetched(self, status: int | None, elapsed_ms: float, error: str | None) -> None:
        """Count one recorded fetch: its HTTP ``status`` (``None``: no answer, then
        ``error`` is its ``pages.error``, ``reason: detail``), its duration in ms, and
        whether its links were cut (an answer's ``error``: ``LINKS_CUT_ERRORS``)."""
        if status is None:
            self.errors[(error or "error").partition(":")[0]] += 1
        else:
            self.by_status[status] += 1
            if error is not None and error.startswith(LINKS_CUT_ERRORS):
                self.links_cut += 1
        seconds = max(0.0, elapsed_ms / 1000)
        self.slots[bisect.bisect_left(LATENCY_BUCKETS_S, seconds)] += 1
        self.sum_s += seconds

    def retried(self, reason: str) -> None:
        """Count one try put back for a retry, by ``reason``."""
        self.retries[reason] += 1

    def latency(self) -> LatencyHistogram:
        """The latency histogram now (cumulative buckets)."""
        running = 0
        buckets = []
        for bound, count in zip((*LATENCY_BUCKETS_S, float("inf")), self.slots, strict=True):
            running += count
            buckets.append((bound, running))
        return LatencyHistogram(tuple(buckets), self.sum_s, running)


def _peak_rss_bytes(who: int) -> int:
    """``ru_maxrss`` of ``who`` (``RUSAGE_SELF``, ``RUSAGE_CHILDREN``) in bytes: Linux
    gives KiB, macOS bytes (getrusage(2))."""
    peak = resource.getrusage(who).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def run_stats(
    *,
    run_id: int | None,
    finish_reason: str,
    started_at: float,
    finished_at: float,
    figures: RunFigures,
    added: Mapping[str, int],
    retried: int,
    paused_s: float = 0.0,
) -> dict[str, Any]:
    """The run's stats object (the module's keys), ready for ``json.dumps``.

    Args:
        run_id: the ``runs.id`` (``None``: a store without runs, a cluster worker's);
            finish_reason: the engine's outcome.
        started_at, finished_at: the run's start and end, epoch s.
        figures: the run's counts at its end (after the store's last flush).
        added: ``Store.pages_added`` (``pages``, ``duplicates``, ``near_duplicates``).
        retried: URLs of earlier runs queued again (``Observer.retried``).
        paused_s: seconds the run was paused (``Observer.paused_s``).
    """
    latency = figures.latency
    responses = sum(n for _, n in figures.responses_by_status)
    errors = sum(n for _, n in figures.transport_errors)
    return {
        "run_id": run_id,
        "finish_reason": finish_reason,
        "start_time": to_iso_utc(started_at),
        "finish_time": to_iso_utc(finished_at),
        "elapsed_s": round(max(0.0, finished_at - started_at - paused_s), 3),
        "paused_s": round(paused_s, 3),
        "fetches": responses + errors,
        "responses": responses,
        "responses_by_status": {str(k): v for k, v in figures.responses_by_status},
        "transport_errors": errors,
        "transport_errors_by_reason": dict(figures.transport_errors),
        "body_bytes": figures.body_bytes,
        "pages_added": added.get("pages", 0),
        "duplicates": added.get("duplicates", 0),
        "near_duplicates": added.get("near_duplicates", 0),
        "links_cut": figures.links_cut,
        "blocked": sum(n for _, n in figures.blocked),
        "blocked_by_reason": dict(figures.blocked),
        "robots_txt_fetched": figures.robots_txt_fetched,
        "retries": sum(n for _, n in figures.retries),
        "retries_by_reason": dict(figures.retries),
        "retried_from_earlier_runs": retried,
        "fetch_latency_s": {
            "count": latency.count,
            "sum": round(latency.sum_s, 6),
            "mean": round(latency.sum_s / latency.count, 6) if latency.count else 0.0,
        },
        "peak_rss_bytes": _peak_rss_bytes(resource.RUSAGE_SELF),
        "peak_child_rss_bytes": _peak_rss_bytes(resource.RUSAGE_CHILDREN),
    }


@dataclass(frozen=True, slots=True)
class RunRow:
    """One ``runs`` row as ``crawldeck stats`` shows it.

    Attributes:
        id: the run's id; status: ``running``, ``killed`` or the finish reason.
        started_at, finished_at: ISO 8601 UTC text (``finished_at`` ``None`` while
            it runs or after a kill).
        stats: the stats object, ``None`` when the run has none (running, killed, or
            run by a crawldeck before stats, or a cluster crawl's).
        saved: without stats, the fetches the file holds of the run (``page_versions``
            rows of its ``run_id``) by HTTP status as text, ``no response`` for none;
            empty with stats.
        earlier_stats: without stats, the id of the last run before it that has them
            (``None``: none has, or this run has its own).
    """

    id: int
    status: str
    started_at: str
    finished_at: str | None
    stats: dict[str, Any] | None
    saved: dict[str, int] = field(default_factory=dict)
    earlier_stats: int | None = None


def _nobody_holds(path: Path) -> bool:
    """Whether no process holds the crawl file ``path`` (``lock_holder``); ``False``
    when that cannot be known."""
    try:
        return lock_holder(path) is None
    except OSError:
        return False


def read_run(db: Path, run_id: int | None = None) -> RunRow:
    """The ``runs`` row ``run_id`` of the crawl file ``db`` (``None``: the last run),
    read through a read-only connection (a crawl may be running in it); a run the file
    says is ``running`` while no process holds the file is ``killed``.

    Raises:
        StoreError: ``db`` is missing, not a crawl file, cannot be read, holds no run,
            has no run ``run_id``, or its stats are not a JSON object (one line).
    """
    path = Path(db)
    if not path.is_file():
        raise StoreError(f"{path} does not exist or is not a file")
    check_header(path)
    try:
        conn = connect_reader(path)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}") from None
    with contextlib.closing(conn):
        try:
            if not check_schema(conn, str(path)):
                raise StoreError(f"{path.name} is an empty SQLite file, not a crawl file")
            columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
            stats_column = "stats" if "stats" in columns else "NULL"
            select = f"SELECT id, status, started_at, finished_at, {stats_column} FROM runs"
            if run_id is None:
                row = conn.execute(f"{select} ORDER BY id DESC LIMIT 1").fetchone()
            else:
                row = conn.execute(f"{select} WHERE id = ?", (run_id,)).fetchone()
            last = conn.execute("SELECT max(id) FROM runs").fetchone()[0]
            saved: dict[str, int] = {}
            earlier: int | None = None
            if row is not None and row[4] is None:  # no stats: what its rows say it fetched
                if stats_column == "stats":  # and the last run before it that has them
                    found = conn.execute(
                        "SELECT max(id) FROM runs WHERE id < ? AND stats IS NOT NULL", (row[0],)
                    ).fetchone()
                    earlier = found[0] if found else None
                saved = {
                    str(label): int(n)
                    for label, n in conn.execute(
                        "SELECT coalesce(status, 'no response'), count(*) FROM page_versions"
                        " WHERE run_id = ? GROUP BY 1 ORDER BY 1",
                        (row[0],),
                    )
                }
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {path.name}: {' '.join(str(exc).split())}") from None
    if row is None:
        if last is None:
            raise StoreError(f"{path.name} holds no run yet")
        raise StoreError(f"{path.name} has no run {run_id} (its runs are 1 to {last})")
    if row[1] == "running" and _nobody_holds(path):
        # its process is gone without ending it: what the next run will mark it (issue #25)
        row = (row[0], "killed", *row[2:])
    stats = None
    if row[4] is not None:
        try:
            stats = json.loads(row[4])
        except ValueError:
            stats = None
        if not isinstance(stats, dict):
            raise StoreError(f"{path.name}: the stats of run {row[0]} are not a JSON object")
    return RunRow(row[0], row[1], row[2], row[3], stats, saved, earlier)


def cluster_run_stats(
    *,
    run_id: int | None,
    finish_reason: str,
    started_at: float,
    finished_at: float,
    fetches: Iterable[tuple[int | None, float, str | None]],
    added: Mapping[str, int],
    blocked: Mapping[str, int],
    workers: int,
) -> dict[str, Any]:
    """The stats object of a cluster crawl's run, counted by its coordinator from the
    crawl file, where the collector wrote every worker's results: the keys of
    ``run_stats``, each count from the rows the run committed (``fetches``:
    ``Store.run_fetches``; ``added``: ``Store.pages_added``; ``blocked``:
    ``Store.blocked_added``), plus ``workers``. What only a worker sees is ``None``:
    ``robots_txt_fetched``, ``retries``, ``retries_by_reason``,
    ``retried_from_earlier_runs``. ``peak_child_rss_bytes`` is the largest worker's.
    """
    tally = RunTally()
    for status, elapsed_ms, error in fetches:
        tally.fetched(status, elapsed_ms, error)
    figures = RunFigures(
        pages=sum(tally.by_status.values()) + sum(tally.errors.values()),
        body_bytes=added.get("bytes", 0),
        responses_by_status=tuple(sorted(tally.by_status.items())),
        transport_errors=tuple(sorted(tally.errors.items())),
        blocked=tuple(sorted((k, v) for k, v in blocked.items() if v)),
        latency=tally.latency(),
        links_cut=tally.links_cut,
    )
    stats = run_stats(
        run_id=run_id, finish_reason=finish_reason, started_at=started_at,
        finished_at=finished_at, figures=figures, added=added, retried=0,
    )  # fmt: skip
    for unknown in ("robots_txt_fetched", "retries", "retries_by_reason",
                    "retried_from_earlier_runs"):  # fmt: skip
        stats[unknown] = None
    stats["workers"] = workers
    return stats


#: Reason codes (``BlockReason``, ``FetchError.reason``, retries' ``http_NNN``) in
#: words, where the code alone reads badly (``reason_words`` adds them to the code).
REASON_WORDS: dict[str, str] = {
    "robots": "disallowed by robots.txt",
    "robots_unavailable": "robots.txt unreachable",
    "host_cap": "over the per-host cap",
    "path_depth": "path too deep",
    "url_length": "URL too long",
    "scheme": "not http(s)",
    "bad_url": "bad URL",
    "scope": "out of scope",
    "excluded": "by --include / --exclude",
    "depth": "deeper than --max-depth",
    "repeating_path": "a path segment repeats",
    "calendar": "an endless calendar",
    "pagination": "a page number past max_page_param",
    "redirect_loop": "a redirect back into its chain",
    "too_many_redirects": "past max_redirects hops",
    "redirect_trap": "a redirect that grows the URL",
    "private_address": "a private or special address: -s allow_private=true fetches it",
    "dns": "host name does not resolve",
    "connect": "connection refused or failed",
    "proxy": "the proxy refuses connections",
}


def reason_gloss(code: str) -> str | None:
    """What the reason code ``code`` means in words, where the code alone reads badly:
    ``REASON_WORDS``, ``http_429`` as ``HTTP 429``; ``None`` for a code that reads
    as it is (``timeout``; issue #25 trial 10: a trap reason without words stood out)."""
    if code in REASON_WORDS:
        return REASON_WORDS[code]
    if code.startswith("http_") and code[5:].isdigit():
        return f"HTTP {code[5:]}"
    return None


def reason_words(code: str) -> str:
    """A reason code as ``crawldeck stats`` prints it: the code itself, the one name
    the console, the ``blocked`` table and ``--json`` use (issue #25: one vocabulary
    in every output), then its ``reason_gloss`` in brackets: ``scope (out of
    scope)``, ``http_429 (HTTP 429)``, ``redirect_loop``."""
    gloss = reason_gloss(code)
    return code if gloss is None else f"{code} ({gloss})"


def no_stats_line(run: RunRow) -> str:
    """Why ``run`` has no stats object, one line: still running, killed, or run by a
    crawldeck before run stats."""
    why = {
        # read_run calls a run killed once no process holds the file (Linux's
        # /proc/locks): one still "running" is held (issue #25 trial 18)
        "running": "it is still running: its stats are written when it ends",
        "killed": "the run ended without writing its end (a SIGKILL, a crash or a full disk): "
        "its figures were lost",
    }.get(run.status, "it was run by a crawldeck before run stats")
    return f"no stats for this run: {why}"


def stats_lines(run: RunRow) -> list[str]:
    """``crawldeck stats``' readable text for ``run``: one ``key: value`` line each,
    counts by status or reason (the code and its words: ``reason_words``) indented under their
    total; a run without stats says why in its last line."""
    lines = [f"run {run.id}: {run.status}, started {run.started_at}"
             + (f", finished {run.finished_at}" if run.finished_at else "")]  # fmt: skip
    stats = run.stats
    if stats is None:
        lines.append(no_stats_line(run))
        if run.saved:  # what its rows hold (issue #25 trial 7: "its figures were lost")
            mix = ", ".join(f"{status} {n}" for status, n in run.saved.items())
            saved = sum(run.saved.values())
            lines.append(f"the file holds {plural(saved, 'fetch', 'fetches')} of it: {mix}")
        if run.earlier_stats is not None:  # issue #25 trial 20: found by guessing --run
            lines.append(f"the last run with stats is run {run.earlier_stats}: --run "
                         f"{run.earlier_stats} shows it")  # fmt: skip
        return lines
    groups = {
        "responses": "responses_by_status",
        "transport_errors": "transport_errors_by_reason",
        "blocked": "blocked_by_reason",
        "retries": "retries_by_reason",
    }
    nested = set(groups.values()) | {"run_id"}
    for key, value in stats.items():
        if key in nested:
            continue
        if value is None:
            lines.append(f"{key}: not counted (a cluster crawl's workers keep it)")
        elif isinstance(value, dict):
            text = ", ".join(f"{k} {v}" for k, v in value.items())
            lines.append(f"{key}: {text}")
        elif isinstance(value, int) and key.endswith("_bytes"):
            lines.append(f"{key}: {value:,}")
        else:
            lines.append(f"{key}: {value}")
        detail = stats.get(groups.get(key, ""), {})
        if isinstance(detail, dict):
            words = (lambda k: k) if key == "responses" else reason_words
            lines.extend(f"  {words(k)}: {v}" for k, v in detail.items())
    return lines


__all__ = [
    "LATENCY_BUCKETS_S",
    "NO_FIGURES",
    "NO_LATENCY",
    "REASON_WORDS",
    "LatencyHistogram",
    "RunFigures",
    "RunRow",
    "RunTally",
    "cluster_run_stats",
    "read_run",
    "reason_gloss",
    "reason_words",
    "run_stats",
    "stats_lines",
]
