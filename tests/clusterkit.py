"""Helpers of the cluster fault tests (``tests/loopback/test_cluster_faults.py``): a synthetic
loopback web whose access log says which process sent each request, a cluster crawl
run as real ``crawldeck`` processes, a TCP proxy that can hold one worker's Redis
traffic, and the lease history of a crawl read from Redis's ``MONITOR`` (no pytest
needed).

``SynthWeb`` serves ``pages`` pages on each of its hosts (``/p/0`` ... ``/p/N-1``);
page ``i`` of host ``h`` links to pages ``2i+1`` and ``2i+2`` of ``h`` and to page
``i`` of the next host, so a crawl from the hosts' ``/p/0`` reaches every page, and
two crawls of it reach the same pages whatever their order. Each request is logged
as a ``Hit`` with the server's wall-clock arrival time (``time.time()``, the clock
Redis's ``MONITOR`` stamps with) and the pid that holds the client's socket: the
handler finds the peer's socket inode in ``/proc/net/tcp`` and looks for
``socket:[inode]`` among the ``/proc/PID/fd`` links of the pids ``watch``ed (Linux
only; a few pids, once per connection).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path
from types import TracebackType
from typing import Any

import redis

#: How long ``ClusterCrawl.start`` waits for the coordinator to publish the crawl (s).
PUBLISH_TIMEOUT_S = 20.0


@dataclass(frozen=True, slots=True)
class Hit:
    """One request as the server saw it: ``at`` (wall-clock s at the request line),
    ``host`` (its ``Host`` header, the crawler's host key), ``address`` (the server IP
    it came to), ``path``, and ``pid`` (the watched process holding the client
    socket; ``None``: another process)."""

    at: float
    host: str
    address: str
    path: str
    pid: int | None


def _hex_endpoint(address: str, port: int) -> str:
    """An IPv4 endpoint as ``/proc/net/tcp`` writes it (``0100007F:1F90``)."""
    return f"{socket.inet_aton(address)[::-1].hex().upper()}:{port:04X}"


def socket_owner(peer: tuple[str, int], local: tuple[str, int], pids: Iterable[int]) -> int | None:
    """The pid among ``pids`` holding the TCP socket ``peer`` -> ``local`` (IPv4), or
    ``None``: its inode from ``/proc/net/tcp``, then ``socket:[inode]`` among each
    pid's ``/proc/PID/fd`` links."""
    want_local, want_remote = _hex_endpoint(*peer), _hex_endpoint(*local)
    inode = None
    with open("/proc/net/tcp", encoding="ascii") as table:
        next(table)
        for line in table:
            fields = line.split()
            if fields[1] == want_local and fields[2] == want_remote:
                inode = fields[9]
                break
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                        return pid
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HostServer
    _pid: int | None = None

    def setup(self) -> None:
        super().setup()
        peer = self.client_address
        local = self.connection.getsockname()
        self._pid = socket_owner((peer[0], peer[1]), (local[0], local[1]), self.server.web.pids)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        web = self.server.web
        at = time.time()
        host = self.headers.get("Host", "")
        web.log(Hit(at, host, self.server.address, self.path, self._pid))
        status, body, ctype = web.answer(host, self.path)
        wait = web.slow.get(self._pid, web.latency_s) if self._pid is not None else web.latency_s
        if wait:
            time.sleep(wait)
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _HostServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, web: SynthWeb, address: str, port: int) -> None:
        self.web = web
        self.address = address
        super().__init__((address, port), _Handler)

    def server_bind(self) -> None:  # no reverse DNS look-up of the address
        self.socket.bind(self.server_address)
        self.server_address = self.socket.getsockname()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a killed worker hangs up mid-response


class SynthWeb:
    """The synthetic web of the module doc.

    Args:
        names: host name -> IPv4 loopback address it is served on (names sharing an
            address share one server, told apart by ``Host``); an IP as the name is
            served as itself.
        pages: pages per host.
        crawl_delay_s: the ``Crawl-delay`` of every robots.txt (``None``: none).
        latency_s: each answer's wait before it is sent (s); ``slow`` maps a pid to
            another wait for its requests.
    """

    def __init__(
        self,
        names: Mapping[str, str],
        *,
        pages: int,
        crawl_delay_s: float | None = None,
        latency_s: float = 0.0,
    ) -> None:
        self.pages = pages
        self.latency_s = latency_s
        self.crawl_delay_s = crawl_delay_s
        self.pids: tuple[int, ...] = ()
        self.slow: dict[int, float] = {}
        self._hits: list[Hit] = []
        self._lock = threading.Lock()
        self._servers: dict[str, _HostServer] = {}
        for address in dict.fromkeys(names.values()):
            self._servers[address] = _HostServer(self, address, 0)
        self.hosts = [
            f"{name}:{self._servers[addr].server_address[1]}" for name, addr in names.items()
        ]
        self.address_of = {h: names[h.rpartition(":")[0]] for h in self.hosts}
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> SynthWeb:
        for server in self._servers.values():
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for server in self._servers.values():
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join()

    def watch(self, pids: Iterable[int]) -> None:
        """Attribute the requests of new connections to these pids."""
        self.pids = tuple(pids)

    def clear(self) -> None:
        """Forget the requests logged so far."""
        with self._lock:
            self._hits.clear()

    def seeds(self) -> list[str]:
        """Every host's ``/p/0``."""
        return [f"http://{h}/p/0" for h in self.hosts]

    def urls(self) -> set[str]:
        """Every page's URL."""
        return {f"http://{h}/p/{i}" for h in self.hosts for i in range(self.pages)}

    def links(self) -> int:
        """The number of links of the whole site (each page's, once)."""
        return sum(
            len(self._links(h, i)) for h in range(len(self.hosts)) for i in range(self.pages)
        )

    def _links(self, h: int, i: int) -> list[str]:
        host = self.hosts[h]
        out = [f"http://{host}/p/{j}" for j in (2 * i + 1, 2 * i + 2) if j < self.pages]
        if len(self.hosts) > 1:
            out.append(f"http://{self.hosts[(h + 1) % len(self.hosts)]}/p/{i}")
        return out

    def answer(self, host: str, path: str) -> tuple[int, bytes, str]:
        """``(status, body, content type)`` of ``path`` on ``host``."""
        if path == "/robots.txt":
            delay = "" if self.crawl_delay_s is None else f"Crawl-delay: {self.crawl_delay_s}\n"
            return 200, f"User-agent: *\nDisallow:\n{delay}".encode(), "text/plain"
        if host not in self.hosts or not path.startswith("/p/"):
            return 404, b"not found", "text/plain"
        try:
            i = int(path[3:])
        except ValueError:
            return 404, b"not found", "text/plain"
        if not 0 <= i < self.pages:
            return 404, b"not found", "text/plain"
        anchors = "".join(f'<a href="{u}">{u}</a> ' for u in self._links(self.hosts.index(host), i))
        return 200, f"<html><body><p>{host} {i}</p>{anchors}</body></html>".encode(), "text/html"

    def log(self, hit: Hit) -> None:
        """Append ``hit`` (handler threads)."""
        with self._lock:
            self._hits.append(hit)

    @property
    def hits(self) -> list[Hit]:
        """Every request so far, in arrival order (a copy)."""
        with self._lock:
            return sorted(self._hits, key=lambda h: h.at)


def page_hits(hits: Iterable[Hit]) -> list[Hit]:
    """The hits that are not robots.txt or ``/sitemap.xml`` (the synthetic web lists
    no sitemap: each host's owner asks for it once, and gets a 404)."""
    return [h for h in hits if h.path not in ("/robots.txt", "/sitemap.xml")]


def fetch_counts(hits: Iterable[Hit]) -> dict[str, int]:
    """URL -> times requested, robots.txt left out."""
    counts: dict[str, int] = defaultdict(int)
    for hit in page_hits(hits):
        counts[f"http://{hit.host}{hit.path}"] += 1
    return dict(counts)


def gaps(hits: Iterable[Hit], key: str) -> dict[str, float]:
    """The smallest start-to-start gap (s) between two requests, per ``host`` or per
    ``address`` (``key``), of every key with at least two requests."""
    by: dict[str, list[float]] = defaultdict(list)
    for hit in hits:
        by[getattr(hit, key)].append(hit.at)
    return {k: min(b - a for a, b in pairwise(sorted(v))) for k, v in by.items() if len(v) > 1}


def write_toml(path: Path, values: Mapping[str, Any]) -> Path:
    """A flat TOML file of ``values`` (str, bool, int, float, lists of str); ``path``."""
    lines = [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def crawldeck(*args: str) -> list[str]:
    """The command line of ``crawldeck ARGS`` with this interpreter."""
    return [sys.executable, "-m", "crawldeck.cli.launch", *args]


class ClusterCrawl:
    """A cluster crawl as real processes: ``crawldeck crawl SEEDS --redis URL
    --crawl-id ID --no-ui`` (the coordinator: collector and crawl file, no local
    worker), then, once it published the crawl, ``workers`` processes of
    ``crawldeck worker`` (each on its own Redis URL if ``worker_urls`` is given).
    ``together``: the crawl is paused (its control in Redis) until every worker
    joined and the hosts were shared out, so each starts with its fair share.
    Output goes to files in ``directory``, the workers' WARC files too; ``close``
    kills what is still running."""

    def __init__(
        self,
        directory: Path,
        redis_url: str,
        seeds: Sequence[str],
        config: Mapping[str, Any],
        *,
        workers: int,
        crawl_id: str = "faults",
        worker_urls: Sequence[str] | None = None,
        together: bool = True,
    ) -> None:
        self.together = together
        self.lease_s = int(config.get("cluster_lease_ms", 10_000)) / 1000
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.db = self.directory / "crawl.db"
        self.redis_url = redis_url
        self.crawl_id = crawl_id
        self.worker_urls = list(worker_urls or [redis_url] * workers)
        self.seeds_file = self.directory / "seeds.txt"
        self.seeds_file.write_text("\n".join(seeds) + "\n", encoding="utf-8")
        self.config_file = write_toml(self.directory / "crawl.toml", config)
        self.coordinator: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []

    def _spawn(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        out = (self.directory / f"{name}.out").open("wb")
        err = (self.directory / f"{name}.err").open("wb")
        with out, err:
            return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err)

    def start(self) -> ClusterCrawl:
        """Start the coordinator, wait until the crawl's config is in Redis, start the
        workers.

        Raises:
            AssertionError: the coordinator exited or did not publish in time.
        """
        self.coordinator = self._spawn("coordinator", crawldeck(
            "crawl", str(self.seeds_file), "--db", str(self.db), "--config",
            str(self.config_file), "--redis", self.redis_url, "--crawl-id", self.crawl_id,
            "--no-ui",
        ))  # fmt: skip
        control = f"cd:{self.crawl_id}:ctl"
        with redis.Redis.from_url(self.redis_url, socket_timeout=2.0) as client:
            self._until(lambda: client.hget(control, "state") == b"running", "publish the crawl")
            if self.together:
                client.hset(control, "state", "paused")
            for index, url in enumerate(self.worker_urls):
                self.workers.append(self._spawn(f"worker-{index}", crawldeck(
                    "worker", "--redis", url, "--crawl-id", self.crawl_id,
                    "--warc-dir", str(self.directory),
                )))  # fmt: skip
            if self.together:
                beats = f"cd:{self.crawl_id}:workers"
                self._until(lambda: client.hlen(beats) >= len(self.workers), "join")
                # three heartbeats: the first workers give back what is above their share
                time.sleep(3 * self.lease_s / 4)
                client.hset(control, "state", "running")
        return self

    def _until(self, check: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + PUBLISH_TIMEOUT_S
        while not check():
            for proc in [self.coordinator, *self.workers]:
                assert proc is not None and proc.poll() is None, f"exited before they {what}"
            assert time.monotonic() < deadline, f"the processes did not {what} in time"
            time.sleep(0.05)

    @property
    def pids(self) -> list[int]:
        """The workers' pids, in start order."""
        return [p.pid for p in self.workers]

    def output(self, name: str) -> str:
        """What process ``name`` (``coordinator``, ``worker-I``) wrote, stdout and stderr."""
        parts = [
            (self.directory / f"{name}.{s}").read_text(errors="replace") for s in ("out", "err")
        ]
        return f"{name} stdout:\n{parts[0]}\n{name} stderr:\n{parts[1]}"

    def stderr(self, name: str) -> str:
        """What process ``name`` wrote on stderr."""
        return (self.directory / f"{name}.err").read_text(errors="replace")

    def wait(self, timeout_s: float) -> dict[str, int]:
        """Wait for every process to exit; name -> exit code (-9: killed).

        Raises:
            AssertionError: some did not exit within ``timeout_s`` (then all are killed).
        """
        procs = {
            "coordinator": self.coordinator,
            **{f"worker-{i}": p for i, p in enumerate(self.workers)},
        }
        deadline = time.monotonic() + timeout_s
        codes: dict[str, int] = {}
        for name, proc in procs.items():
            assert proc is not None
            try:
                codes[name] = proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                left = [n for n, p in procs.items() if p is not None and p.poll() is None]
                self.close()
                tails = "\n".join(self.output(n)[-1500:] for n in left)
                raise AssertionError(
                    f"still running after {timeout_s} s: {left}\n{tails}"
                ) from None
        return codes

    def close(self) -> None:
        """Kill (SIGKILL, after SIGCONT) every process of this crawl still running."""
        for proc in [self.coordinator, *self.workers]:
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGCONT)
                    proc.kill()
                proc.wait()

    def __enter__(self) -> ClusterCrawl:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class RedisProxy:
    """A TCP proxy on ``127.0.0.1`` to a Redis on ``127.0.0.1:target_port``; ``hold``
    keeps every byte its clients send (the Redis sees nothing), ``release`` sends what
    was kept, in order, and forwards again: the network delaying one worker's
    commands while the others go on."""

    def __init__(self, target_port: int) -> None:
        self._target = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._held = False
        self._kept: list[tuple[socket.socket, bytes]] = []
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._listener, selectors.EVENT_READ, None)
        self._stop = False
        self._socks: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        """The proxy's Redis URL."""
        return f"redis://127.0.0.1:{self.port}/0"

    def hold(self) -> None:
        """Keep what clients send from now on."""
        with self._lock:
            self._held = True

    def release(self) -> None:
        """Send what was kept and forward again."""
        with self._lock:
            self._held = False
            for upstream, data in self._kept:
                with contextlib.suppress(OSError):
                    upstream.sendall(data)
            self._kept.clear()

    def _serve(self) -> None:
        while not self._stop:
            for key, _mask in self._sel.select(0.05):
                if key.data is None:
                    client, _ = self._listener.accept()
                    upstream = socket.create_connection(("127.0.0.1", self._target))
                    self._socks += [client, upstream]
                    self._sel.register(client, selectors.EVENT_READ, (upstream, True))
                    self._sel.register(upstream, selectors.EVENT_READ, (client, False))
                    continue
                source = key.fileobj
                assert isinstance(source, socket.socket)
                peer, up = key.data
                try:
                    data = source.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    self._sel.unregister(source)
                    with contextlib.suppress(OSError, KeyError):
                        self._sel.unregister(peer)
                    source.close()
                    peer.close()
                    continue
                with self._lock:
                    if up and self._held:
                        self._kept.append((peer, data))
                        continue
                    with contextlib.suppress(OSError):
                        peer.sendall(data)

    def __enter__(self) -> RedisProxy:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop = True
        self._thread.join()
        for sock in [*self._socks, self._listener]:
            sock.close()
        self._sel.close()


@dataclass(frozen=True, slots=True)
class LeaseEvent:
    """A lease change Redis executed: ``at`` (Redis's wall clock, s), ``host``,
    ``worker`` (the new owner; ``None``: released), ``epoch`` (0 when released)."""

    at: float
    host: str
    worker: str | None
    epoch: int


class LeaseMonitor:
    """Every host lease taken (``SET ...:lease "<worker> <epoch>"``) or given back
    (``DEL``) in crawl ``crawl_id``, read from ``MONITOR`` in a thread (Redis shows the
    commands its scripts run, stamped with the time they ran)."""

    def __init__(self, url: str, crawl_id: str) -> None:
        self._client = redis.Redis.from_url(url, decode_responses=True)
        self._marker = f"cd:{{{crawl_id}:"
        self.events: list[LeaseEvent] = []
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._monitor: Any = None

    def _run(self) -> None:
        with (
            contextlib.suppress(redis.RedisError, OSError, ValueError, AttributeError),
            self._client.monitor() as monitor,  # type: ignore[no-untyped-call]
        ):
            self._monitor = monitor
            self._ready.set()
            for command in monitor.listen():
                self._take(command)
        self._ready.set()

    def _take(self, command: Mapping[str, Any]) -> None:
        words = str(command["command"]).split()
        if len(words) < 2 or not words[1].endswith(":lease") or self._marker not in words[1]:
            return
        host = words[1].split(":h:", 1)[1].removesuffix(":lease")
        at = float(command["time"])
        if words[0] == "SET" and len(words) >= 4:
            self.events.append(LeaseEvent(at, host, words[2], int(words[3])))
        elif words[0] == "DEL":
            self.events.append(LeaseEvent(at, host, None, 0))

    def __enter__(self) -> LeaseMonitor:
        self._thread.start()
        self._ready.wait(5.0)
        time.sleep(0.1)  # MONITOR answers OK before it streams
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with contextlib.suppress(Exception):
            self._monitor.connection.disconnect()
        self._thread.join(5.0)
        self._client.close()

    def owner_at(self, host: str, at: float) -> str | None:
        """The worker whose claim of ``host`` was the last before ``at`` (``None``:
        none, or it was given back since)."""
        owner = None
        for event in self.events:
            if event.at >= at:
                break
            if event.host == host:
                owner = event.worker
        return owner


def worker_pid(worker_id: str) -> int:
    """The pid in a worker id ``machine:pid:random``."""
    return int(worker_id.split(":")[-2])


def _all_threads_stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is in state ``T`` (stopped) in ``/proc``."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            # the state follows the command name's closing parenthesis
            if (task / "stat").read_text().rpartition(")")[2].split()[0] not in "Tt":
                return False
    return True


@contextlib.contextmanager
def stopped(pid: int) -> Iterator[None]:
    """``SIGSTOP`` ``pid`` for the block, ``SIGCONT`` after.

    The block starts once every thread of ``pid`` is stopped (``/proc``), not when the
    signal is sent: on a loaded machine a process runs on for a while after ``kill``
    returns, so a time taken at the start of the block is after its last action.
    Raises ``TimeoutError`` when it is not stopped within 10 s (real time).
    """
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 10
        while not _all_threads_stopped(pid):
            if time.monotonic() > deadline:
                raise TimeoutError(f"process {pid} not stopped 10 s after SIGSTOP")
            time.sleep(0.001)
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
