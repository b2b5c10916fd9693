"""The worker's connection to Redis: pipelines of scripts, retried through outages.

``RedisLink`` wraps one redis-py asyncio client (``redis.asyncio.Redis``, or
``RedisCluster`` for Redis Cluster) with the scripts of ``core.cluster.scripts``
loaded by SHA. ``batch`` sends a list of commands as one pipeline (one round trip) and
returns their replies in order; on Redis Cluster, whose redis-py pipelines refuse
scripts, it sends them all at once, each to its slot's node (one round trip per
command, in parallel, in no order: callers that need an order send two batches).
When Redis goes away (a restart, a network cut) the batch is retried with exponential
backoff, 0.1 s doubling to 2 s, until ``outage_s`` has passed; then ``ClusterError``.
After a restart the scripts are loaded again (``NoScriptError``: the script cache
does not survive a restart).

``send`` is ``batch`` for callers that can share a round trip: commands sent by any
part of the worker (the store's flushes and reads, the per-IP bookings, the
heartbeat) within one another's wait join one pipeline, sent at the earliest of their
deadlines (``within_s`` after each call: 0 for a read the crawl waits on, which then
goes at the next loop turn with whatever else is waiting; ``LINGER_S`` for writes
that may wait), each caller getting its own replies in order; right before it goes,
the ``riders`` may add to it (the store's buffered writes ride on a booking's round
trip instead of waiting for their own). Under load many pages'
writes and reads share a round trip; at a low page rate the writes ride on the reads
the pages need anyway (issue #23 item 3: at most one round trip a page). On Redis
Cluster, where a pipeline is one round trip per command anyway, ``send`` is ``batch``.

A retried batch may have been applied in part before the connection broke; every
script is written to be safe to apply twice (``core.cluster.scripts``: the seen set
guards the push, the lease guards the rest, the collector's replay is idempotent).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from redis import exceptions as rexc
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from crawldeck.core.cluster.scripts import SCRIPTS
from crawldeck.core.errors import ClusterError

log = logging.getLogger("crawldeck.cluster")

_T = TypeVar("_T")

#: A command of a batch: ``("script", name, keys, args)`` or ``(name, *args)``.
Command = tuple[Any, ...]

#: Errors that mean Redis is (for now) not there (a cluster none of whose nodes
#: answered is one: redis-py raises ``RedisClusterUnreachableError`` for it).
OUTAGE_ERRORS: tuple[type[Exception], ...] = (
    rexc.ConnectionError,
    rexc.TimeoutError,
    rexc.BusyLoadingError,
    rexc.ClusterDownError,
    rexc.TryAgainError,
    rexc.RedisClusterUnreachableError,
    OSError,
)


def open_client(url: str, *, cluster: bool = False, timeout_s: float = 5.0) -> Redis | RedisCluster:
    """A redis-py asyncio client for ``url`` (``redis://``, ``rediss://``, ``unix://``);
    ``cluster``: Redis Cluster, ``url`` naming any one of its nodes. Each connect and
    each read gives up after ``timeout_s`` (s; a cluster's connects took redis-py's
    own 5 s before, issue #22 item 2).

    Raises:
        ClusterError: the URL cannot be parsed.
    """
    try:
        if cluster:
            return RedisCluster.from_url(
                url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, protocol=2
            )
        return Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, protocol=2
        )
    except (ValueError, rexc.RedisError) as exc:
        raise ClusterError(f"bad Redis URL {url!r}: {exc}") from None


#: Seconds a write sent with ``send`` may wait for other commands to share its round
#: trip (the store's flushes, a per-IP end, the heartbeat): short against a lease
#: (``cluster_lease_ms``, 10 s by default, at least 0.5 s) and a politeness delay
#: (``delay_ms``, 1 s by default), long against a page's round trip on loopback.
LINGER_S: Final = 0.1


@dataclass(slots=True)
class _Joined:
    """Commands waiting to go in one pipeline: their callers' slices and futures."""

    commands: list[Command] = field(default_factory=list)
    waiters: list[tuple[int, int, asyncio.Future[list[Any]]]] = field(default_factory=list)
    due: float = math.inf  # loop time (s) it must go at


@dataclass(slots=True)
class LinkStatistics:
    """What the link sent: ``batches`` (pipelines, i.e. round trips per node set),
    ``commands`` (Redis commands, scripts counted once each), ``retries`` (batches
    sent again after an outage) and ``outage_s`` (seconds spent waiting for Redis)."""

    batches: int = 0
    commands: int = 0
    retries: int = 0
    outage_s: float = 0.0


class RedisLink:
    """One client and the scripts' SHAs; see the module.

    Args:
        client: the redis-py asyncio client (it is closed by ``aclose``).
        outage_s: how long (s) a batch keeps being retried while Redis is unreachable.

    ``outages`` counts the outages Redis came back from (a restart may have lost the
    last second of writes: ``ClusterStore`` sends its recent pushes again then).
    """

    def __init__(self, client: Redis | RedisCluster, *, outage_s: float = 60.0) -> None:
        self.client = client
        self.cluster = isinstance(client, RedisCluster)
        self._outage_s = outage_s
        self._sha: dict[str, str] = {}
        self.stats = LinkStatistics()
        self._down_since: float | None = None
        self.outages = 0  # outages Redis came back from
        self._joined = _Joined()
        self._timer: asyncio.TimerHandle | None = None
        #: Called right before a pipeline of ``send``'s goes: a rider may ``join`` it
        #: (the store's flusher puts its waiting writes in, issue #23 item 3).
        self.riders: list[Callable[[], None]] = []

    async def load_scripts(self) -> None:
        """Load every script (on every primary of a cluster).

        Raises:
            ClusterError: Redis stayed unreachable for ``outage_s``.
        """

        async def load() -> None:
            for name, source in SCRIPTS.items():
                self._sha[name] = str(await self.client.script_load(source))

        await self._retrying(load)

    async def batch(self, commands: Sequence[Command]) -> list[Any]:
        """Send ``commands`` as one pipeline and return their replies, in order.

        Raises:
            ClusterError: Redis stayed unreachable for ``outage_s``, or answered an
                error (a bug: a script's error, a wrong type).
        """
        if not commands:
            return []

        async def send() -> list[Any]:
            self.stats.batches += 1
            self.stats.commands += len(commands)
            if self.cluster:  # redis-py's cluster pipelines refuse scripts: send at once
                return list(await asyncio.gather(*(self._one(c) for c in commands)))
            pipe = self.client.pipeline(transaction=False)
            for command in commands:
                if command[0] == "script":
                    _, name, keys, args = command
                    pipe.evalsha(self._sha[name], len(keys), *keys, *args)
                else:
                    pipe.execute_command(*command)
            return list(await pipe.execute())

        return await self._retrying(send)

    async def send(self, commands: Sequence[Command], *, within_s: float = 0.0) -> list[Any]:
        """``batch(commands)``, in one pipeline with whatever else is sent within
        ``within_s`` (s; 0: at the next loop turn) of this call (see the module):
        ``commands`` stay together and in order, after the commands sent before them.

        Raises:
            ClusterError: as ``batch``, for every caller whose commands shared the
                pipeline.
        """
        if not commands:
            return []
        if self.cluster:
            return await self.batch(commands)
        return await self.join(commands, within_s=within_s)

    def join(
        self, commands: Sequence[Command], *, within_s: float = 0.0
    ) -> asyncio.Future[list[Any]]:
        """``send`` without waiting: ``commands`` join the next pipeline (not on Redis
        Cluster: use ``batch`` there); the future gets their replies, or the error.
        Call it on the loop's thread."""
        loop = asyncio.get_running_loop()
        joined = self._joined
        start = len(joined.commands)
        joined.commands.extend(commands)
        future: asyncio.Future[list[Any]] = loop.create_future()
        joined.waiters.append((start, len(joined.commands), future))
        due = loop.time() + max(0.0, within_s)
        if due < joined.due:
            joined.due = due
            if self._timer is not None:
                self._timer.cancel()
            self._timer = loop.call_at(due, self._go)
        return future

    def _go(self) -> None:
        """Send the joined commands (the timer of the earliest deadline fired), with
        what each of ``riders`` adds to them first (``join`` called from a rider goes
        in this pipeline)."""
        for ride in self.riders:
            ride()
        joined, self._joined, self._timer = self._joined, _Joined(), None
        asyncio.get_running_loop().create_task(self._deliver(joined))

    async def _deliver(self, joined: _Joined) -> None:
        """One pipeline of ``joined``'s commands; each caller gets its slice."""
        try:
            replies = await self.batch(joined.commands)
        except asyncio.CancelledError:  # the loop is closing: so are its callers
            for _a, _b, future in joined.waiters:
                future.cancel()
            raise
        except Exception as exc:  # every caller of the pipeline gets its failure
            for _a, _b, future in joined.waiters:
                if not future.done():
                    future.set_exception(exc)
            return
        for a, b, future in joined.waiters:
            if not future.done():
                future.set_result(replies[a:b])

    async def _one(self, command: Command) -> Any:
        """One command on its own (Redis Cluster routes it by its first key)."""
        if command[0] == "script":
            _, name, keys, args = command
            return await self.client.evalsha(self._sha[name], len(keys), *keys, *args)
        return await self.client.execute_command(*command)

    async def _retrying(self, attempt: Callable[[], Awaitable[_T]]) -> _T:
        """``await attempt()``, again after each outage (backoff) and after a lost
        script cache, until ``outage_s`` without Redis."""
        wait = 0.1
        while True:
            try:
                result = await attempt()
            except rexc.NoScriptError:
                await self.load_scripts()
                continue
            except OUTAGE_ERRORS as exc:
                now = asyncio.get_running_loop().time()  # a duration on the loop's clock
                if self._down_since is None:
                    self._down_since = now
                    log.warning("Redis unreachable (%s): retrying", _one_line(exc))
                elif now - self._down_since > self._outage_s:
                    raise ClusterError(
                        f"Redis unreachable for {self._outage_s:.0f} s: {_one_line(exc)}"
                    ) from None
                self.stats.retries += 1
                await asyncio.sleep(wait)
                self.stats.outage_s += wait
                wait = min(2.0, wait * 2)
                continue
            except rexc.ResponseError as exc:
                raise ClusterError(f"Redis refused a command: {_one_line(exc)}") from None
            if self._down_since is not None:
                back = asyncio.get_running_loop().time() - self._down_since
                log.warning("Redis is back after %.1f s", back)
                self._down_since = None
                self.outages += 1
            return result

    @property
    def down(self) -> bool:
        """Redis did not answer the last attempt (a batch is being retried)."""
        return self._down_since is not None

    async def aclose(self) -> None:
        """Send the commands still waiting to be joined, then close the client's
        connections."""
        if self._timer is not None:
            self._timer.cancel()
            joined, self._joined, self._timer = self._joined, _Joined(), None
            await self._deliver(joined)
        await self.client.aclose()


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


__all__ = ["LINGER_S", "OUTAGE_ERRORS", "Command", "LinkStatistics", "RedisLink", "open_client"]
