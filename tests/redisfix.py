"""Real ``redis-server`` processes on loopback for tests and benchmarks (Debian's
``redis-server`` package, which brings ``redis-cli``).

Without pytest::

    with LoopbackRedis(tmp / "redis") as server:        # one server, AOF everysec
        server.url                  # 'redis://127.0.0.1:40123/0'
        server.kill(); server.restart()                  # SIGKILL, then start again
    with LocalRedisCluster(tmp / "cluster") as cluster:  # 3 masters, all slots served
        cluster.startup_nodes       # [ClusterNode('127.0.0.1', P1), ...]
        with cluster.client() as client: ...             # a redis.cluster.RedisCluster

As pytest fixtures (``tests/conftest.py`` loads this module as a plugin and marks every
test that uses them ``server``): ``redis_server`` yields a started ``LoopbackRedis`` in
``tmp_path``, ``redis_cluster`` a started ``LocalRedisCluster``; both stop every process
at teardown. Each test gets fresh servers (a cluster takes about 2 s to form).
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

from crawldeck.core.cluster.server import PrivateRedis
from crawldeck.core.errors import ClusterError

#: How many times a server is started on a fresh port when its port was taken between
#: ``free_port()`` and redis-server's bind (tests of other sessions run beside ours).
PORT_ATTEMPTS = 5
#: The highest port a cluster node may have: its cluster bus listens on the port + 10000
#: (redis-server refuses a higher one).
CLUSTER_MAX_PORT = 55535
#: How long ``LocalRedisCluster.start()`` waits for ``cluster_state:ok`` on every node (s).
CLUSTER_READY_TIMEOUT_S = 20.0


def free_port(max_port: int = 65535) -> int:
    """A TCP port free on 127.0.0.1 right now, at most ``max_port`` (the kernel's pick;
    it may be taken before it is used, which ``LoopbackRedis.start`` retries).

    Raises:
        OSError: no such port in 100 picks.
    """
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port <= max_port:
            return port
    raise OSError(f"no free TCP port <= {max_port} on 127.0.0.1")


class LoopbackRedis(PrivateRedis):
    """A ``PrivateRedis`` on a free ``127.0.0.1`` TCP port (no unix socket), with
    ``appendfsync everysec`` like the crawl's own.

    ``port`` (at most ``max_port``) is fixed by the first ``start()`` and kept by
    ``restart()``, so a client holding ``url`` reconnects to the same server.

    Raises:
        ClusterError: (``start``) as ``PrivateRedis.start``, or no free port in
            ``PORT_ATTEMPTS`` tries.
    """

    def __init__(
        self, directory: Path, *, extra_args: Sequence[str] = (), max_port: int = 65535
    ) -> None:
        super().__init__(directory, tcp_port=free_port(max_port), extra_args=extra_args)
        self.max_port = max_port
        self._started_once = False

    @property
    def port(self) -> int:
        """The TCP port on 127.0.0.1."""
        assert self.tcp_port is not None
        return self.tcp_port

    def start(self) -> None:
        """Start and wait for PONG; the first start moves to another free port if this
        one was taken meanwhile."""
        for attempt in range(PORT_ATTEMPTS):
            try:
                super().start()
            except ClusterError as exc:
                taken = "Failed listening on port" in str(exc)
                if self._started_once or not taken or attempt == PORT_ATTEMPTS - 1:
                    raise
                self.tcp_port = free_port(self.max_port)
            else:
                self._started_once = True
                return

    def __enter__(self) -> LoopbackRedis:
        self.start()
        return self


class LocalRedisCluster:
    """A Redis Cluster of ``masters`` masters and no replicas on 127.0.0.1, one
    ``LoopbackRedis`` per node in ``directory/node-I`` (``--cluster-enabled yes
    --cluster-config-file nodes.conf``), joined with ``redis-cli --cluster create``
    (redis.io/docs/latest/operate/oss_and_stack/management/scaling/).

    ``start()`` returns once ``CLUSTER INFO`` says ``cluster_state:ok`` on every node;
    ``close()`` stops every node (also on a failed start).

    Raises:
        ClusterError: (``start``) a node does not start, ``redis-cli`` fails (the
            message holds its output) or the cluster is not ok within
            ``CLUSTER_READY_TIMEOUT_S``.
    """

    def __init__(self, directory: Path, masters: int = 3) -> None:
        self.directory = Path(directory)
        self.nodes = [
            LoopbackRedis(
                self.directory / f"node-{index}",
                extra_args=("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
                max_port=CLUSTER_MAX_PORT,
            )
            for index in range(masters)
        ]

    @property
    def ports(self) -> list[int]:
        """The nodes' TCP ports on 127.0.0.1, in node order."""
        return [node.port for node in self.nodes]

    @property
    def url(self) -> str:
        """The URL of the first node (``redis://127.0.0.1:P1/0``): a cluster client
        finds the others from it."""
        return self.nodes[0].url

    @property
    def startup_nodes(self) -> list[ClusterNode]:
        """Every node, for ``RedisCluster(startup_nodes=...)``."""
        # redis-py 8.1's ClusterNode.__init__ has no annotations
        return [ClusterNode("127.0.0.1", port) for port in self.ports]  # type: ignore[no-untyped-call]

    def client(self) -> RedisCluster:
        """A new cluster client of these nodes (the caller closes it)."""
        return RedisCluster(startup_nodes=self.startup_nodes)

    def start(self) -> None:
        """Start the nodes, join them, wait for ``cluster_state:ok`` everywhere."""
        try:
            for node in self.nodes:
                node.start()
            create = subprocess.run(
                [
                    "redis-cli",
                    "--cluster",
                    "create",
                    *(f"127.0.0.1:{port}" for port in self.ports),
                    "--cluster-replicas",
                    "0",
                    "--cluster-yes",
                ],
                capture_output=True,
                text=True,
                timeout=CLUSTER_READY_TIMEOUT_S,
                check=False,
            )
            if create.returncode != 0:
                output = " ".join((create.stdout + create.stderr).split())
                raise ClusterError(f"redis-cli --cluster create failed: {output}")
            self._wait_ok()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop every node (SIGTERM, then wait)."""
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> LocalRedisCluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _wait_ok(self) -> None:
        deadline = time.monotonic() + CLUSTER_READY_TIMEOUT_S
        waiting = list(self.nodes)
        while waiting:
            with redis.Redis(port=waiting[0].port, socket_timeout=1.0) as client:
                info = client.cluster("info")
            if info.get("cluster_state") == "ok":
                waiting.pop(0)
                continue
            if time.monotonic() >= deadline:
                raise ClusterError(
                    f"Redis Cluster on {self.ports} not ok within {CLUSTER_READY_TIMEOUT_S:g} "
                    f"s: node {waiting[0].port} says {info.get('cluster_state')}"
                )
            time.sleep(0.05)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[LoopbackRedis]:
    """A started standalone ``LoopbackRedis`` in ``tmp_path/redis`` (stopped after)."""
    with LoopbackRedis(tmp_path / "redis") as server:
        yield server


@pytest.fixture
def redis_cluster(tmp_path: Path) -> Iterator[LocalRedisCluster]:
    """A started 3-master ``LocalRedisCluster`` in ``tmp_path/cluster`` (every node
    stopped after)."""
    with LocalRedisCluster(tmp_path / "cluster") as cluster:
        yield cluster
