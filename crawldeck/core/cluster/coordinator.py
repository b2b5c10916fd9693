"""The first process of a cluster crawl: the crawl file, the collector, the workers.

``crawldeck crawl SEEDS --workers N`` runs a ``Coordinator``: it publishes the crawl's
config and seeds in Redis (``publish_crawl``), starts ``N`` worker processes on this
machine (``crawldeck worker``; more may join from other machines), runs the collector
that writes every worker's results into the one SQLite file (``core.cluster.collector``),
and watches the crawl: the workers' heartbeats, the claimable and owned hosts of every
shard, the pages committed. It does not fetch.

The crawl ends when every worker left: a worker leaves when nothing is claimable or
owned anywhere (finished) or when the crawl's control says ``stopping``: a stop, or
``max_pages`` pages over the whole crawl (the worker whose flush makes the crawl's
count reach it stops every worker at once, ``ClusterStore``; pages in flight then
still land, so a crawl may end up to the fetches in flight past it). Then the
collector drains the streams and the run is recorded in the file.

Local workers die with this process (``die_with_parent``): a coordinator killed with
SIGKILL leaves no worker behind (its private Redis gets SIGTERM and saves its state).
A local worker that exits on its own before the end (killed, crashed) is reported in
the log and not restarted: its hosts' leases run out and the other workers take them
over (``SURVEY``, which the coordinator runs too). If every local worker is gone and
no other worker is alive, the crawl stops (nothing would fetch its URLs) and says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from crawldeck.core.cluster.collector import Collector
from crawldeck.core.cluster.keys import Keyspace
from crawldeck.core.cluster.link import Command, RedisLink
from crawldeck.core.cluster.server import die_with_parent
from crawldeck.core.cluster.worker import (
    publish_crawl,
    survey_commands,
    survey_counts,
    survey_totals,
)
from crawldeck.core.config import CrawlConfig, asdict
from crawldeck.core.crawl.stats import cluster_run_stats
from crawldeck.core.errors import ClusterError, CrawldeckError, StoreError
from crawldeck.core.protocols import Clock
from crawldeck.core.records import status_mix
from crawldeck.core.storage.store import Store

log = logging.getLogger("crawldeck.cluster")

Outcome = Literal["finished", "stopped", "max_pages"]

#: Seconds between two looks at the crawl's state.
WATCH_INTERVAL_S = 0.5
#: Seconds the workers get to leave after ``stopping`` before they are killed
#: (in-flight fetches' grace, then giving their hosts back).
LEAVE_GRACE_S = 20.0


@dataclass(frozen=True, slots=True)
class WorkerRow:
    """One worker as its last heartbeat tells: ``id``, ``machine``, ``pid``, ``hosts``
    owned, ``pages`` committed, ``pages_per_s``, ``age_s`` since the heartbeat,
    ``state`` (``running``, ``paused``, ``stopping``; ``late`` when the heartbeat is
    older than the lease)."""

    id: str
    machine: str
    pid: int
    hosts: int
    pages: int
    pages_per_s: float
    age_s: float
    state: str


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """The cluster at one moment (the console's Workers panel and the headless line).

    Attributes:
        at: epoch s. elapsed_s: since the coordinator started. state: ``running``,
        ``paused``, ``stopping``, ``finished``. workers: by id. pages: pages rows in
        the crawl file (all runs). pages_per_s: committed over the last 10 s.
        bytes: body bytes of those pages. status_mix: pages by status class.
        blocked: refused URLs by reason. claimable_hosts: hosts with URLs and no
        owner. owned_hosts: hosts under a lease. redis_down: the last look failed.
        collector_lag_ms: age of the newest entry collected, ``None`` before any.
        log: the coordinator's last lines (a worker died, Redis went away).
    """

    at: float
    elapsed_s: float
    state: str
    workers: tuple[WorkerRow, ...]
    pages: int
    pages_per_s: float
    bytes: int
    status_mix: dict[str, int]
    blocked: dict[str, int]
    claimable_hosts: int
    owned_hosts: int
    redis_down: bool
    collector_lag_ms: float | None
    log: tuple[str, ...]


class Coordinator:
    """Runs a cluster crawl from this process (see the module).

    Args:
        config: the crawl's config (``max_pages`` counts over the whole crawl).
        store: the crawl file (the collector is its only writer).
        link: the Redis connection.
        keys: the crawl's key layout.
        workers: worker processes to start on this machine (0: others join).
        worker_command: the command line of one worker (``crawldeck worker ...``).
        worker_log: where the local workers' stderr goes.
        clock: epoch seconds (``time.time``: it compares the heartbeats and stream
            entries that workers and Redis stored, times of other processes).
    """

    def __init__(
        self,
        config: CrawlConfig,
        store: Store,
        link: RedisLink,
        keys: Keyspace,
        *,
        workers: int,
        worker_command: Sequence[str],
        worker_log: Path,
        clock: Clock = time.time,
    ) -> None:
        self.config = config
        self.store = store
        self._link, self._keys, self._clock = link, keys, clock
        self._count = workers
        self._command = list(worker_command)
        self._worker_log = worker_log
        self._procs: list[asyncio.subprocess.Process] = []
        self._collector = Collector(link.client, keys, store, clock=clock)
        self._state = "running"
        self._outcome: Outcome | None = None
        self._started = clock()
        self._rows: tuple[WorkerRow, ...] = ()
        self._claimable = self._owned = 0
        self._redis_pages = 0  # pages the owners committed, all runs (Redis's counters)
        self._down = False
        self._down_since: float | None = None
        self._lines: deque[str] = deque(maxlen=50)
        self._rate: deque[tuple[float, int]] = deque(maxlen=21)  # 10 s of looks
        base = store.counts()
        mix, total_bytes = store.page_totals()
        self._base_pages, self._base_bytes = base["pages"], total_bytes
        self._base_mix = Counter(mix)
        self._base_blocked = Counter(base["blocked"])
        self._seen_alive = False

    # -------------------------------------------------------------- control

    def pause(self) -> None:
        """Every worker dispatches nothing new (in-flight fetches finish)."""
        self._control("paused")

    def resume(self) -> None:
        """Every worker dispatches again."""
        self._control("running")

    @property
    def paused(self) -> bool:
        """True while the crawl is paused."""
        return self._state == "paused"

    def request_stop(self) -> None:
        """Stop the whole crawl: every worker finishes its fetches and gives its hosts
        back; the state stays in Redis and the file for a resume."""
        if self._outcome is None:
            self._outcome = "stopped"
        self._control("stopping")

    def _control(self, state: str) -> None:
        if self._state in ("stopping", "finished") and state != "stopping":
            return
        self._state = state
        asyncio.get_running_loop().create_task(
            self._link.batch([("HSET", self._keys.control, "state", state)])
        )

    async def add_seeds(self, seeds: Sequence[str]) -> None:
        """Add seeds to the running crawl (each worker admits them: scope, traps)."""
        if seeds:
            await self._link.batch([("RPUSH", self._keys.seeds, *seeds)])

    # ------------------------------------------------------------------ run

    async def run(self, seeds: Sequence[str]) -> Outcome:
        """Publish, start the workers, collect and watch until every worker left.

        Raises:
            ClusterError: Redis unreachable past ``redis_outage_s`` (at the start, or
                later: the workers are stopped or killed, what was collected stays).
            StoreError: the crawl file could not be written.
        """
        await self._link.load_scripts()
        await publish_crawl(self._link, self._keys, self.config, seeds, workers=self._count)
        run_id = self.store.begin_run(asdict(self.config), started_at=self._started)
        stop_collecting = asyncio.Event()
        collector = asyncio.get_running_loop().create_task(self._collector.run(stop_collecting))
        try:
            await self._start_workers()
            await self._watch()
        finally:
            await self._end_workers()
            stop_collecting.set()
            while not collector.done():  # its last drain, unless Redis is gone for good
                await asyncio.wait({collector}, timeout=WATCH_INTERVAL_S)
                if not collector.done():
                    await self._look()
                    if self._gone_for_good():
                        collector.cancel()
            await asyncio.gather(collector, return_exceptions=True)
            outcome = self._outcome or "finished"
            self._state = "finished"
            finished = self._clock()  # the stats' finish_time and the runs row's, one time
            stats = await asyncio.to_thread(self._run_stats, run_id, outcome, finished)
            self.store.end_run(
                run_id, outcome, live_hosts="done" if outcome == "finished" else None,
                stats=stats, finished_at=finished,
            )  # fmt: skip
            await asyncio.to_thread(self.store.flush)
        if self._gone_for_good():
            raise ClusterError(
                f"Redis unreachable for over {self.config.redis_outage_s} s: the crawl "
                "stopped; what was collected is in the crawl file"
            )
        return outcome

    def _run_stats(self, run_id: int, outcome: str, finished: float) -> dict[str, Any] | None:
        """The run's stats object (``core.crawl.stats.cluster_run_stats``), ended at
        ``finished`` (epoch s), from what the
        collector committed (flushed first; called in a thread); ``None`` when the crawl
        file cannot be read (the run's end is still written)."""
        try:
            self.store.flush()
            return cluster_run_stats(
                run_id=run_id, finish_reason=outcome, started_at=self._started,
                finished_at=finished, fetches=self.store.run_fetches(run_id),
                added=self.store.pages_added(), blocked=self.store.blocked_added(),
                workers=self._count,
            )  # fmt: skip
        except StoreError as exc:
            log.warning("no stats for run %d: %s", run_id, exc)
            return None

    async def _start_workers(self) -> None:
        self._worker_log.parent.mkdir(parents=True, exist_ok=True)
        with self._worker_log.open("ab") as out:
            for _ in range(self._count):
                self._procs.append(
                    await asyncio.create_subprocess_exec(
                        *self._command, stdin=asyncio.subprocess.DEVNULL,
                        stdout=out, stderr=out, start_new_session=True,
                        preexec_fn=die_with_parent(signal.SIGKILL),
                    )
                )  # fmt: skip

    async def _watch(self) -> None:
        reported: set[int] = set()
        while True:
            await self._look()
            for proc in self._procs:
                if proc.returncode not in (None, 0) and proc.pid not in reported:
                    reported.add(proc.pid)
                    self._log(f"worker pid {proc.pid} exited with {proc.returncode}; "
                              "its hosts go to the others when their leases run out")  # fmt: skip
            cap = self.config.max_pages
            if cap is not None and self._redis_pages >= cap and self._outcome is None:
                self._outcome = "max_pages"  # the workers stopped themselves
                self._control("stopping")
            if self._down:  # who is alive is not known: wait for Redis, up to its outage
                if self._gone_for_good():
                    return
                await asyncio.sleep(WATCH_INTERVAL_S)
                continue
            local = any(proc.returncode is None for proc in self._procs)
            alive = any(row.state != "late" for row in self._rows)
            self._seen_alive = self._seen_alive or alive or local
            if not local and not alive and (self._seen_alive or self._state == "stopping"):
                if self._state != "stopping" and (self._claimable or self._owned):
                    self._log("no worker is left and URLs are still queued: stopping")
                    self._outcome = self._outcome or "stopped"
                return
            await asyncio.sleep(WATCH_INTERVAL_S)

    async def _look(self) -> None:
        """Read the heartbeats and the shards' host counts (one batch)."""
        k = self._keys
        commands: list[Command] = [("HGETALL", k.workers)]
        commands += survey_commands(k, cluster=self._link.cluster, now=self._clock())
        try:
            replies = await asyncio.wait_for(self._link.batch(commands), WATCH_INTERVAL_S * 4)
        except (CrawldeckError, TimeoutError):  # Redis away: everyone retries on their own
            self._down = True
            self._down_since = self._down_since or asyncio.get_running_loop().time()
            if self._gone_for_good():
                self._log(f"Redis unreachable for {self.config.redis_outage_s} s: stopping")
                self._outcome = self._outcome or "stopped"
            return
        self._down, self._down_since = False, None
        now = self._clock()
        self._rows = tuple(sorted(self._worker_rows(replies[0], now), key=lambda r: r.id))
        counts = survey_counts(replies[1:])
        self._redis_pages = survey_totals(replies[1:]).get("pages", 0)
        self._claimable = sum(r for r, _o in counts)
        self._owned = sum(o for _r, o in counts)
        self._rate.append((now, self._pages()))

    def _gone_for_good(self) -> bool:
        """Redis has not answered for ``redis_outage_s``."""
        since = self._down_since
        now = asyncio.get_running_loop().time()  # a duration on the loop's clock
        return since is not None and now - since > self.config.redis_outage_s

    def _worker_rows(self, beats: Any, now: float) -> list[WorkerRow]:
        rows = []
        late = self.config.cluster_lease_ms / 1000
        for wid, text in dict(beats).items():
            try:
                beat = json.loads(text)
                age = max(0.0, now - float(beat["at"]))
                rows.append(WorkerRow(
                    id=wid.decode() if isinstance(wid, bytes) else str(wid),
                    machine=str(beat["machine"]), pid=int(beat["pid"]),
                    hosts=int(beat["hosts"]), pages=int(beat["pages"]),
                    pages_per_s=float(beat["pages_per_s"]), age_s=age,
                    state="late" if age > late else str(beat["state"]),
                ))  # fmt: skip
            except (ValueError, KeyError, TypeError):
                continue  # not a heartbeat of this version
        return rows

    async def _end_workers(self) -> None:
        """Ask the workers to stop if the crawl did not finish, wait for them to leave
        (``LEAVE_GRACE_S``), then kill those still there."""
        running = [p for p in self._procs if p.returncode is None]
        if not running:
            return
        if self._outcome is not None:
            with contextlib.suppress(Exception):
                await self._link.batch([("HSET", self._keys.control, "state", "stopping")])
        waits = [asyncio.create_task(p.wait()) for p in running]
        _done, pending = await asyncio.wait(waits, timeout=LEAVE_GRACE_S)
        for proc in running:
            if proc.returncode is None:
                self._log(f"worker pid {proc.pid} did not leave in {LEAVE_GRACE_S:.0f} s: killed")
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
        if pending:
            await asyncio.wait(pending)

    # -------------------------------------------------------------- figures

    def _pages(self) -> int:
        return self._base_pages + self.store.pages_added().get("pages", 0)

    def _log(self, line: str) -> None:
        log.warning("%s", line)
        self._lines.append(line)

    def snapshot(self) -> ClusterSnapshot:
        """The cluster now (see ``ClusterSnapshot``)."""
        now = self._clock()
        added = self.store.pages_added()
        mix = status_mix(self._base_mix + Counter(added))
        rate = 0.0
        if len(self._rate) >= 2:
            (t0, p0), (t1, p1) = self._rate[0], self._rate[-1]
            rate = (p1 - p0) / (t1 - t0) if t1 > t0 else 0.0
        return ClusterSnapshot(
            at=now,
            elapsed_s=now - self._started,
            state=self._state,
            workers=self._rows,
            pages=self._pages(),
            pages_per_s=rate,
            bytes=self._base_bytes + added.get("bytes", 0),
            status_mix=mix,
            blocked=dict(self._base_blocked + Counter(self.store.blocked_added())),
            claimable_hosts=self._claimable,
            owned_hosts=self._owned,
            redis_down=self._down,
            collector_lag_ms=self._collector.statistics().lag_ms,
            log=tuple(self._lines),
        )


__all__ = ["ClusterSnapshot", "Coordinator", "Outcome", "WorkerRow"]
