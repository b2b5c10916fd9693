"""``crawldeck.core.cluster.server`` and the Redis fixtures of ``tests/redisfix.py``,
against real ``redis-server`` processes (Debian's package, 7.0 here).

A private server listens only on its unix socket, keeps what was written through a
restart and (with ``appendfsync everysec``) through a SIGKILL once a second has passed;
``check_redis`` turns every way of not reaching Redis into one line within its time
budget; the cluster fixture spreads hash-tagged keys over its 3 masters.
"""

from __future__ import annotations

import contextlib
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redisfix import LocalRedisCluster, LoopbackRedis
from redisserverkit import BUDGET_S, HANG_S, assert_unreachable

from crawldeck.core.cluster.server import (
    MAX_SOCKET_PATH_BYTES,
    PrivateRedis,
    acheck_redis,
    check_redis,
)
from crawldeck.core.errors import ClusterError


@pytest.fixture
def private(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A started ``PrivateRedis`` on a unix socket in ``tmp_path/crawl.db.redis``."""
    with PrivateRedis(tmp_path / "crawl.db.redis") as server:
        yield server


def client_of(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=5.0, decode_responses=True)


def write_keys(url: str, count: int, prefix: str) -> None:
    with client_of(url) as client:
        client.mset({f"{prefix}{i}": str(i) for i in range(count)})


def read_keys(url: str, count: int, prefix: str) -> list[str | None]:
    with client_of(url) as client:
        return list(client.mget([f"{prefix}{i}" for i in range(count)]))


def test_a_private_server_listens_only_on_its_unix_socket(
    private: PrivateRedis, tmp_path: Path
) -> None:
    directory = tmp_path / "crawl.db.redis"
    assert private.url == f"unix://{directory}/redis.sock"
    assert stat.S_IMODE((directory / "redis.sock").stat().st_mode) == 0o700
    with client_of(private.url) as client:
        assert client.ping() is True
        config = client.config_get("*")
    assert config["port"] == "0"  # no TCP listener at all
    assert config["unixsocket"] == str(directory / "redis.sock")
    assert (config["appendonly"], config["appendfsync"], config["save"]) == ("yes", "everysec", "")
    assert config["dir"] == str(directory)
    assert config["logfile"] == str(directory / "redis.log")
    assert config["set-max-intset-entries"] == "512"
    assert config["hash-max-listpack-entries"] == "128"
    assert config["zset-max-listpack-entries"] == "128"
    assert (directory / "appendonlydir").is_dir()


def test_writes_survive_a_restart(private: PrivateRedis) -> None:
    write_keys(private.url, 200, "page:")
    time.sleep(1.5)
    before = private.pid
    private.restart()
    assert private.pid != before
    assert read_keys(private.url, 200, "page:") == [str(i) for i in range(200)]


def test_writes_older_than_a_second_survive_a_kill(private: PrivateRedis) -> None:
    write_keys(private.url, 200, "old:")
    time.sleep(1.5)  # appendfsync everysec: on disk by now
    write_keys(private.url, 10, "new:")  # may or may not be there after the kill
    private.kill()
    assert not private.running
    with pytest.raises(ClusterError, match="is not running"):
        _ = private.pid
    private.restart()
    assert read_keys(private.url, 200, "old:") == [str(i) for i in range(200)]


def test_a_second_server_on_a_live_socket_is_refused(private: PrivateRedis, tmp_path: Path) -> None:
    second = PrivateRedis(tmp_path / "crawl.db.redis")
    with pytest.raises(ClusterError) as caught:
        second.start()
    assert str(caught.value) == (
        f"a redis-server (pid {private.pid}) already serves {private.socket_path}: "
        f"stop it, or pass --redis {private.url}"
    )
    assert not second.running
    with client_of(private.url) as client:  # the first one is untouched
        assert client.ping() is True


def test_a_server_that_does_not_start_is_one_line_with_its_log(tmp_path: Path) -> None:
    server = PrivateRedis(tmp_path / "r", extra_args=("--appendfsync", "sometimes"))
    with pytest.raises(ClusterError) as caught:
        server.start()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("redis-server exited with code 1 at start: ")
    assert message.endswith(f"(log: {tmp_path / 'r' / 'redis.log'})")
    assert not server.running


def test_a_server_that_does_not_answer_in_time_is_killed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.sock"  # a later option wins: it listens there
    server = PrivateRedis(
        tmp_path / "r", extra_args=("--unixsocket", str(elsewhere)), start_timeout_s=0.5
    )
    with pytest.raises(ClusterError) as caught:
        server.start()
    assert str(caught.value).startswith(
        f"redis-server did not answer PING within 0.5 s (Error 2 connecting to "
        f"{server.socket_path}. No such file or directory.): "
    )
    assert not server.running
    with socket.socket(socket.AF_UNIX) as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(str(elsewhere))  # the server that did listen there is gone


def test_a_socket_path_over_the_linux_limit_is_refused_before_starting(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * (MAX_SOCKET_PATH_BYTES - len(str(tmp_path))))
    with pytest.raises(ClusterError, match=r"bytes, over the 107 Linux allows"):
        PrivateRedis(deep)
    assert not deep.exists()


def test_the_tcp_fixture_listens_on_loopback_only(redis_server: LoopbackRedis) -> None:
    assert redis_server.url == f"redis://127.0.0.1:{redis_server.port}/0"
    with client_of(redis_server.url) as client:
        config = client.config_get("*")
    assert (config["port"], config["bind"], config["unixsocket"]) == (
        str(redis_server.port),
        "127.0.0.1",
        "",
    )
    assert (config["appendonly"], config["appendfsync"]) == ("yes", "everysec")
    write_keys(redis_server.url, 5, "k")
    time.sleep(1.5)
    port = redis_server.port
    redis_server.kill()
    redis_server.restart()
    assert redis_server.port == port
    assert read_keys(redis_server.url, 5, "k") == ["0", "1", "2", "3", "4"]


def test_check_redis_passes_a_live_server(private: PrivateRedis) -> None:
    check_redis(private.url, BUDGET_S)


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A port bound on 127.0.0.1 with no listener: connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@contextlib.contextmanager
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield int(sock.getsockname()[1])


def test_check_redis_on_a_closed_port() -> None:
    with closed_port() as port:
        url = f"redis://127.0.0.1:{port}/0"
        assert_unreachable(url, url, "Connection refused")


def test_check_redis_on_a_port_that_never_answers() -> None:
    with silent_port() as port:
        url = f"redis://127.0.0.1:{port}/0"
        started = time.monotonic()
        with pytest.raises(ClusterError) as caught:
            check_redis(url, BUDGET_S)
        elapsed = time.monotonic() - started
    # the budget runs out in the caller or in the thread's socket read, whichever first
    # (redis-py says "Timeout reading from socket" or "... from 127.0.0.1:PORT")
    message = str(caught.value)
    assert message == f"cannot reach Redis at {url}: no answer within 1 s" or (
        message.startswith(f"cannot reach Redis at {url}: Timeout reading from ")
        and "\n" not in message
    )
    assert 0.9 * BUDGET_S <= elapsed < HANG_S  # it waited for PONG, and not for good


def test_check_redis_with_a_wrong_password_masks_it(tmp_path: Path) -> None:
    with PrivateRedis(tmp_path / "r", extra_args=("--requirepass", "right")) as server:
        path = server.socket_path
        check_redis(f"unix://:right@{path}", BUDGET_S)
        assert_unreachable(f"unix://:wrong@{path}", f"unix://:***@{path}", "invalid")
        assert_unreachable(
            f"unix://{path}?password=wrong", f"unix://{path}?password=***", "invalid"
        )
        assert_unreachable(f"unix://{path}", f"unix://{path}", "authenticated")


async def test_acheck_redis_answers_on_the_loop(private: PrivateRedis) -> None:
    await acheck_redis(private.url, BUDGET_S)
    with closed_port() as port:
        started = time.monotonic()
        with pytest.raises(ClusterError, match=r"^cannot reach Redis at .*Connection refused"):
            await acheck_redis(f"redis://127.0.0.1:{port}/0", BUDGET_S)
        assert time.monotonic() - started < HANG_S
    with silent_port() as port:
        started = time.monotonic()
        with pytest.raises(ClusterError, match=r"no answer within 1 s|Timeout"):
            await acheck_redis(f"redis://127.0.0.1:{port}/0", BUDGET_S)
        assert time.monotonic() - started < HANG_S


def slot_owners(cluster: LocalRedisCluster) -> dict[int, int]:
    """Each slot's master port, from ``CLUSTER NODES`` of the first node."""
    owners: dict[int, int] = {}
    with redis.Redis(port=cluster.ports[0], decode_responses=True) as client:
        nodes = client.cluster("nodes")
    for address, node in nodes.items():
        port = int(address.split(":")[1].split("@")[0])
        for first, last in node["slots"]:
            owners.update(dict.fromkeys(range(int(first), int(last) + 1), port))
    return owners


def test_the_cluster_fixture_spreads_tagged_keys_over_three_masters(
    redis_cluster: LocalRedisCluster,
) -> None:
    assert len(set(redis_cluster.ports)) == 3
    keys = {f"{{host{i}.test}}:queue": f"url-{i}" for i in range(100)}
    with redis_cluster.client() as client:
        for key, value in keys.items():
            client.set(key, value)
        assert [client.get(key) for key in keys] == [value.encode() for value in keys.values()]
    owners = slot_owners(redis_cluster)
    assert len(owners) == 16384
    by_port: dict[int, set[str]] = {port: set() for port in redis_cluster.ports}
    with redis.Redis(port=redis_cluster.ports[0], decode_responses=True) as first:
        for key in keys:
            by_port[owners[int(first.cluster("keyslot", key))]].add(key)
    assert all(by_port.values()), by_port  # every master holds some of the keys
    for port, held in by_port.items():
        with redis.Redis(port=port, decode_responses=True) as node:
            assert node.dbsize() == len(held)  # each key lives on its slot's master
            assert [node.get(key) for key in sorted(held)] == [keys[k] for k in sorted(held)]
