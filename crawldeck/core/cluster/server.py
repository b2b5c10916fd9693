"""The Redis a multi-worker crawl runs on: a private ``redis-server``, or a check of a given one.

``crawldeck crawl SEEDS --workers N`` without ``--redis URL`` starts a ``PrivateRedis``
in the crawl's directory (issue #12, item 1)::

    with PrivateRedis(Path("crawl.db.redis")) as redis_server:
        redis_server.url            # 'unix:///abs/crawl.db.redis/redis.sock'

It listens only on a unix socket in that directory (mode 700: only this user can
connect; no TCP port, so nothing else on the machine or the network reaches it), keeps
an append-only file there with ``appendfsync everysec`` (redis.io/docs/latest/operate/
oss_and_stack/management/persistence/: a crash or ``kill -9`` loses at most about the
last second of writes) and no RDB snapshots, and logs to ``redis.log`` there. With
``tcp_port`` (tests, benchmarks) it listens on ``127.0.0.1:tcp_port`` instead.

The server runs in its own session (``start_new_session``): a Ctrl-C in the terminal
reaches crawldeck, which stops the crawl and then the server, not the server first.
It is not tied to crawldeck's life: a crawldeck killed with SIGKILL leaves it running,
and the next ``start()`` in that directory says so (two servers on one append-only
file would corrupt it).

``check_redis(url)`` / ``acheck_redis(url)`` ask a given Redis for PING, within a time
budget, and turn every failure into a one-line ``ClusterError``; the CLI prints it and
exits 2 (item 4: "Redis unreachable at start: a one-line error and exit 2, never a
hang").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from crawldeck.core.errors import ClusterError

#: prctl(2)'s option: the signal the kernel sends a process when its parent dies.
_PR_SET_PDEATHSIG = 1

#: The longest unix socket path Linux takes: ``sun_path`` is 108 bytes with the NUL
#: (unix(7)); a longer one cannot be bound nor connected to.
MAX_SOCKET_PATH_BYTES = 107

#: Encoding limits pinned on the command line so the memory per URL measured by
#: ``benchmarks/cluster_bench.py`` does not depend on a config file or a version's
#: defaults (these are Redis 7.0's defaults): a set of up to 512 integers is an intset,
#: a hash or sorted set of up to 128 entries a listpack (redis.io/docs/latest/operate/
#: oss_and_stack/management/optimization/memory-optimization/).
MEMORY_ARGS = (
    "--set-max-intset-entries",
    "512",
    "--hash-max-listpack-entries",
    "128",
    "--zset-max-listpack-entries",
    "128",
)

#: File names inside a ``PrivateRedis`` directory.
SOCKET_NAME = "redis.sock"
LOG_NAME = "redis.log"

#: How often ``start()`` asks the new server for PING (s).
_POLL_S = 0.02


def die_with_parent(sig: signal.Signals) -> Callable[[], None]:
    """A ``preexec_fn`` that has the kernel send ``sig`` to the child when the process
    that started it dies, even by SIGKILL (``prctl(PR_SET_PDEATHSIG)``, prctl(2)): a
    private redis-server gets SIGTERM (it writes its append-only file and exits), a
    local worker SIGKILL (its leases run out; nothing of it is lost)."""

    def arm() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)

    return arm


def find_redis_server() -> str:
    """The path of the ``redis-server`` program on ``PATH``.

    Raises:
        ClusterError: there is none (``apt-get install redis-server`` on Debian).
    """
    path = shutil.which("redis-server")
    if path is None:
        raise ClusterError(
            "redis-server not found: install Debian's redis-server package or pass --redis URL"
        )
    return path


class PrivateRedis:
    """One ``redis-server`` process of one crawl, in its own directory.

    Args:
        directory: where the socket (``redis.sock``), the append-only files
            (``appendonlydir/``) and the log (``redis.log``) live; created (mode 700)
            by ``start()`` if missing. A server started again in the same directory
            loads what the previous one wrote.
        tcp_port: listen on ``127.0.0.1:tcp_port`` instead of the unix socket (tests
            and benchmarks); ``url`` is then ``redis://127.0.0.1:tcp_port/0``.
        extra_args: more ``redis-server`` options, appended as given (e.g.
            ``("--cluster-enabled", "yes")`` or ``("--requirepass", "pw")``).
        server_path: the program; ``find_redis_server()`` when ``None``.
        start_timeout_s: how long ``start()`` waits for the first PONG (s); a server
            still loading a big append-only file counts as not ready yet.
        stop_timeout_s: how long ``stop()`` waits after SIGTERM before SIGKILL (s).

    Raises:
        ClusterError: (construction) the socket path is longer than the 107 bytes
            Linux allows, or there is no ``redis-server`` (``find_redis_server``).
    """

    def __init__(
        self,
        directory: Path,
        *,
        tcp_port: int | None = None,
        extra_args: Sequence[str] = (),
        server_path: str | None = None,
        start_timeout_s: float = 10.0,
        stop_timeout_s: float = 10.0,
    ) -> None:
        self.directory = Path(directory).absolute()
        self.tcp_port = tcp_port
        self.socket_path: Path | None = (
            None if tcp_port is not None else self.directory / SOCKET_NAME
        )
        self.log_path = self.directory / LOG_NAME
        self.extra_args = tuple(extra_args)
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        if self.socket_path is not None:
            length = len(os.fsencode(self.socket_path))
            if length > MAX_SOCKET_PATH_BYTES:
                raise ClusterError(
                    f"Redis socket path {self.socket_path} is {length} bytes, over the "
                    f"{MAX_SOCKET_PATH_BYTES} Linux allows: use a shorter crawl directory "
                    "or pass --redis URL"
                )
        self.server_path = server_path if server_path is not None else find_redis_server()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The URL clients connect with: ``unix:///DIR/redis.sock``, or
        ``redis://127.0.0.1:PORT/0`` with ``tcp_port``."""
        if self.socket_path is not None:
            return f"unix://{self.socket_path}"
        return f"redis://127.0.0.1:{self.tcp_port}/0"

    @property
    def running(self) -> bool:
        """Whether the process was started and has not exited."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int:
        """The process id of the running server.

        Raises:
            ClusterError: the server is not running.
        """
        if self._process is None or self._process.poll() is not None:
            raise ClusterError(f"redis-server in {self.directory} is not running")
        return self._process.pid

    def command(self) -> list[str]:
        """The ``redis-server`` command line ``start()`` runs."""
        if self.socket_path is not None:
            listen = ["--port", "0", "--unixsocket", str(self.socket_path)]
            listen += ["--unixsocketperm", "700"]
        else:
            listen = ["--port", str(self.tcp_port), "--bind", "127.0.0.1"]
        return [
            self.server_path,
            *listen,
            *("--appendonly", "yes", "--appendfsync", "everysec"),
            *("--dir", str(self.directory), "--save", ""),
            *("--daemonize", "no", "--logfile", str(self.log_path)),
            *MEMORY_ARGS,
            *self.extra_args,
        ]

    def start(self) -> None:
        """Start the server and return once it answers PING.

        Raises:
            ClusterError: it is running already; another server answers on this
                directory's socket (a crawldeck killed before it could stop its server:
                the message names its pid); the process exits at start or does not
                answer within ``start_timeout_s`` (it is killed; the message ends with
                the last line of its log).
        """
        if self.running:
            raise ClusterError(f"redis-server in {self.directory} is running already")
        if self.socket_path is not None and self.socket_path.exists():
            self._refuse_a_live_server()
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        # redis-server reports a bad option on stderr before it opens its log file, so
        # both go to that file (appended, as the server writes its own lines).
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=self.directory,
                start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGTERM),
            )
        try:
            self._wait_ready()
        except BaseException:
            self.kill()  # no server left behind, whatever stopped the wait (Ctrl-C included)
            raise

    def stop(self) -> None:
        """Stop the server with SIGTERM (it fsyncs the append-only file and exits) and
        wait for it; SIGKILL after ``stop_timeout_s``. Nothing happens if it is not
        running. Raises nothing."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._process = None

    def kill(self) -> None:
        """Kill the server with SIGKILL and wait for it (fault tests: with ``appendfsync
        everysec`` it loses at most the writes of about the last second). Nothing
        happens if it is not running. Raises nothing."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.kill()
            process.wait()
        self._process = None

    def restart(self) -> None:
        """``stop()`` (if running), then ``start()``: the new server loads the
        append-only file.

        Raises:
            ClusterError: as ``start()``.
        """
        self.stop()
        self.start()

    def last_log_line(self) -> str:
        """The last non-empty line of ``redis.log``, or ``""`` if there is none."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return next((line.strip() for line in reversed(lines) if line.strip()), "")

    def __enter__(self) -> PrivateRedis:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _refuse_a_live_server(self) -> None:
        """Raise if a server answers on the socket; a socket file left by a killed
        server is harmless (redis-server replaces it)."""
        try:
            with _client(self.url, 0.5) as client:
                info = client.info("server")
        except redis.RedisError:
            return
        raise ClusterError(
            f"a redis-server (pid {info.get('process_id', '?')}) already serves "
            f"{self.socket_path}: stop it, or pass --redis {self.url}"
        )

    def _wait_ready(self) -> None:
        """Ask for PING until an answer (PONG, or a refusal to an unauthenticated
        client), the process's exit or ``start_timeout_s``."""
        process = self._process
        assert process is not None
        # real time: a redis-server child starting, waited for by a blocking poll
        deadline = time.monotonic() + self.start_timeout_s
        last = "no answer"
        while True:
            code = process.poll()
            if code is not None:
                self._process = None
                raise ClusterError(
                    f"redis-server exited with code {code} at start: {self.last_log_line()} "
                    f"(log: {self.log_path})"
                )
            try:
                with _client(self.url, 0.5) as client:
                    client.ping()
                return
            except redis.BusyLoadingError:
                last = "still loading its append-only file"
            except (redis.AuthenticationError, redis.ResponseError):
                return  # it answers (``--requirepass`` in extra_args): it is up
            except redis.RedisError as exc:
                last = _one_line(exc)
            if time.monotonic() >= deadline:
                raise ClusterError(
                    f"redis-server did not answer PING within {self.start_timeout_s:g} s "
                    f"({last}): {self.last_log_line()} (log: {self.log_path})"
                )
            time.sleep(_POLL_S)


def check_redis(url: str, timeout_s: float = 2.0) -> None:
    """Connect to the Redis at ``url`` (``redis://``, ``rediss://``, ``unix://``) and
    ask for PING, within ``timeout_s`` seconds in all.

    The attempt runs in a daemon thread, so a name lookup that does not return (the
    system resolver is not bounded by the socket timeouts) costs the caller
    ``timeout_s`` at most and never delays the process's exit.

    Raises:
        ClusterError: any failure (refused, no such host or socket, a timeout, a wrong
            password, a URL that is not a Redis URL, a server that does not speak
            RESP); one line, ``cannot reach Redis at URL: REASON``, with any password
            in the URL masked; ``bad Redis URL 'URL': REASON`` for one that does not
            parse (another scheme, a port that is not a number), nothing tried.
    """
    check_redis_url(url)
    future = _ping_in_a_thread(url, timeout_s)
    try:
        future.result(timeout=timeout_s)
    except concurrent.futures.TimeoutError:
        raise ClusterError(_unreachable(url, f"no answer within {timeout_s:g} s")) from None
    except Exception as exc:
        raise ClusterError(_unreachable(url, _one_line(exc))) from exc


async def acheck_redis(url: str, timeout_s: float = 2.0) -> None:
    """``check_redis`` for the event loop: the attempt runs in its own daemon thread
    (not the loop's executor, whose shutdown would wait for a stuck name lookup).

    Raises:
        ClusterError: as ``check_redis``.
    """
    check_redis_url(url)
    future = _ping_in_a_thread(url, timeout_s)
    try:
        await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)
    except TimeoutError:
        raise ClusterError(_unreachable(url, f"no answer within {timeout_s:g} s")) from None
    except Exception as exc:
        raise ClusterError(_unreachable(url, _one_line(exc))) from exc


def _client(url: str, timeout_s: float) -> redis.Redis:
    """A client of ``url`` whose connect and each read give up after ``timeout_s``
    seconds, with no retries (redis-py retries 3 times with backoff by default)."""
    return redis.Redis.from_url(
        url,
        socket_connect_timeout=timeout_s,
        socket_timeout=timeout_s,
        retry=Retry(NoBackoff(), 0),
    )


def _ping_in_a_thread(url: str, timeout_s: float) -> concurrent.futures.Future[None]:
    """PING ``url`` in a new daemon thread; the future holds ``None`` or the error."""
    future: concurrent.futures.Future[None] = concurrent.futures.Future()

    def ping() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            with _client(url, timeout_s) as client:
                client.ping()
        # every failure, whatever raised it, is the answer (check_redis's contract)
        except Exception as exc:
            future.set_exception(exc)
        else:
            future.set_result(None)

    threading.Thread(target=ping, name="crawldeck-check-redis", daemon=True).start()
    return future


def check_redis_url(url: str) -> None:
    """Check that ``url`` is a Redis URL as redis-py reads it (``from_url``).

    Raises:
        ClusterError: it is not: ``bad Redis URL 'URL': REASON``, password masked
            (a wrong scheme used to read ``cannot reach Redis at http://...``, as if
            a server had been tried; issue #25 trial 17).
    """
    try:
        redis.ConnectionPool.from_url(url)  # parses only: no connection is made
    except ValueError as exc:
        reason = _one_line(exc)
        if "following schemes" in reason:
            reason = "it must start with redis://, rediss:// or unix://"
        raise ClusterError(f"bad Redis URL {_masked(url)!r}: {reason}") from None


def _unreachable(url: str, reason: str) -> str:
    return f"cannot reach Redis at {_masked(url)}: {reason}"


def _masked(url: str) -> str:
    """``url`` with its password (in the user info or a ``password=`` query) as ``***``."""
    url = re.sub(r"(://[^/@]*:)[^/@]*@", r"\1***@", url)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", url)


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line (its type name if it has none)."""
    return " ".join(str(exc).split()) or type(exc).__name__
