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

A retried batch may have been applied in part before the connection broke; every
script is written to be safe to apply twice (``core.cluster.scripts``: the seen set
guards the push, the lease guards the rest, the collector's replay is idempotent).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

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
                now = time.monotonic()
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
                log.warning("Redis is back after %.1f s", time.monotonic() - self._down_since)
                self._down_since = None
                self.outages += 1
            return result

    @property
    def down(self) -> bool:
        """Redis did not answer the last attempt (a batch is being retried)."""
        return self._down_since is not None

    async def aclose(self) -> None:
        """Close the client's connections."""
        await self.client.aclose()


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


__all__ = ["OUTAGE_ERRORS", "Command", "LinkStatistics", "RedisLink", "open_client"]
