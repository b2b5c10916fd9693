"""Real DNS servers on loopback for tests and benchmarks (no pytest needed).

``DnsmasqServer`` runs Debian's dnsmasq (package ``dnsmasq-base``) on 127.0.0.1 at a
free high port with a generated hosts file::

    with DnsmasqServer(tmp_path, {"a.crawl.test": ["127.0.5.1"]}, ttl_s=1) as dns:
        dns.nameserver                    # '127.0.0.1:40123' (for dns_nameservers)
        dns.set("a.crawl.test", ["127.0.6.1"])   # rewrite the hosts file, SIGHUP, wait
        dns.queries("a.crawl.test")       # how many questions dnsmasq logged for it

Every name under ``domain`` (default ``crawl.test``) that is not in the hosts file
answers NXDOMAIN (``--local=/crawl.test/``); names outside it answer REFUSED (no
upstream). Hosts-file names have the TTL ``ttl_s`` (``--local-ttl``);
``fixed`` names (``--host-record``) have their own TTL and cannot be changed.
Hosts-file and ``fixed`` names with IPv4 addresses only answer AAAA with NODATA;
``addresses`` names (``--address=/name/IPv4``) answer A with their address and AAAA
with NXDOMAIN, the misbehaviour of RFC 4074 §4.2 (checked with dnsmasq 2.90).

``StubDnsServer(rcode)`` is a tiny UDP server in a thread that answers every question
with a bare header carrying ``rcode`` (2 = SERVFAIL, 5 = REFUSED), or never answers
(``rcode=None``: a timeout).

Every address used must be in 127.0.0.0/8 (``DnsmasqServer`` checks).
"""

from __future__ import annotations

import contextlib
import grp
import ipaddress
import os
import pwd
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from crawldeck.core.net.dns import AiodnsResolver, Answer, RecordType

#: Debian installs dnsmasq here (``apt-get install dnsmasq-base``).
DNSMASQ = shutil.which("dnsmasq") or (
    "/usr/sbin/dnsmasq" if Path("/usr/sbin/dnsmasq").exists() else None
)
#: How long to wait for dnsmasq to start or to re-read its hosts file (s).
READY_TIMEOUT_S = 5.0


def _loopback_only(addresses: Sequence[str]) -> list[str]:
    """``addresses`` checked to be in 127.0.0.0/8 or ::1 (tests never leave loopback)."""
    for address in addresses:
        if not ipaddress.ip_address(address).is_loopback:
            raise ValueError(f"test DNS may only point at loopback, got {address}")
    return list(addresses)


def free_port() -> int:
    """A port free for both UDP and TCP on 127.0.0.1 right now (dnsmasq binds both)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind(("127.0.0.1", 0))
            port = int(udp.getsockname()[1])
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
                try:
                    tcp.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    raise OSError("no free port for the DNS server")


class DnsmasqServer:
    """dnsmasq on ``127.0.0.1:<free port>`` answering for ``domain`` (see module doc).

    Args:
        directory: where the hosts file, the log and nothing else go.
        records: name -> loopback addresses (IPv4 and/or ``::1``), from the hosts file.
        ttl_s: TTL of the hosts-file names in s.
        fixed: name -> (addresses, TTL s), answered with their own TTL.
        addresses: name -> one IPv4 loopback address, answered to A (for the name and
            every name below it) while AAAA gets NXDOMAIN (``--address``).
        domain: names under it that are not known answer NXDOMAIN.
        log_queries: log every question (``queries`` counts them); off for benchmarks.
        port: the UDP/TCP port to listen on; 0: a free high port.

    Raises (``start``):
        FileNotFoundError: dnsmasq is not installed.
        RuntimeError: dnsmasq did not start (its log is in the message).
    """

    def __init__(
        self,
        directory: Path,
        records: Mapping[str, Sequence[str]] | None = None,
        *,
        ttl_s: int = 1,
        fixed: Mapping[str, tuple[Sequence[str], int]] | None = None,
        addresses: Mapping[str, str] | None = None,
        domain: str = "crawl.test",
        log_queries: bool = True,
        port: int = 0,
    ) -> None:
        self.directory = Path(directory)
        self.records = {name: _loopback_only(addrs) for name, addrs in (records or {}).items()}
        self.fixed = {n: (_loopback_only(a), ttl) for n, (a, ttl) in (fixed or {}).items()}
        self.addresses = {n: _loopback_only([a])[0] for n, a in (addresses or {}).items()}
        self.ttl_s = ttl_s
        self.domain = domain
        self.log_queries = log_queries
        self.hosts_file = self.directory / "dns-hosts"
        self.log_file = self.directory / "dnsmasq.log"
        self.wanted_port = port
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def nameserver(self) -> str:
        """``"127.0.0.1:PORT"``, the form ``dns_nameservers`` and aiodns take."""
        return f"127.0.0.1:{self.port}"

    def _write_hosts(self) -> None:
        lines = [f"{addr} {name}" for name, addrs in self.records.items() for addr in addrs]
        tmp = self.hosts_file.with_suffix(".tmp")
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        tmp.replace(self.hosts_file)

    def _reads(self) -> int:
        """How many times dnsmasq logged reading the hosts file."""
        try:
            text = self.log_file.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return 0
        return text.count(f"read {self.hosts_file}")

    def start(self) -> DnsmasqServer:
        """Start dnsmasq and wait until it has read its hosts file; returns ``self``."""
        if DNSMASQ is None:
            raise FileNotFoundError("dnsmasq is not installed (apt-get install dnsmasq-base)")
        self.directory.mkdir(parents=True, exist_ok=True)
        self._write_hosts()
        for _ in range(5):  # a port can be taken between free_port() and the bind
            self.port = self.wanted_port or free_port()
            with contextlib.suppress(FileNotFoundError):
                self.log_file.unlink()
            args = [
                DNSMASQ,
                "--keep-in-foreground",
                "--no-resolv",
                "--no-hosts",
                "--no-poll",
                f"--port={self.port}",
                "--listen-address=127.0.0.1",
                "--bind-interfaces",
                f"--local=/{self.domain}/",
                f"--addn-hosts={self.hosts_file}",
                f"--local-ttl={self.ttl_s}",
                f"--log-facility={self.log_file}",
                "--pid-file=",
            ]
            if self.log_queries:
                args.append("--log-queries")
            for name, (addrs, ttl) in self.fixed.items():
                args.append(f"--host-record={name},{','.join(addrs)},{ttl}")
            for name, address in self.addresses.items():
                args.append(f"--address=/{name}/{address}")
            if os.geteuid() == 0:  # dnsmasq would drop to 'nobody', who cannot read tmp dirs
                args += [
                    f"--user={pwd.getpwuid(os.getuid()).pw_name}",
                    f"--group={grp.getgrgid(os.getgid()).gr_name}",
                ]
            self._proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            deadline = time.monotonic() + READY_TIMEOUT_S
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    break
                if self._reads() >= 1:
                    return self
                time.sleep(0.02)
            err = self._stop()
            if self.wanted_port or "Address already in use" not in err:
                log = self.log_file.read_text() if self.log_file.exists() else ""
                raise RuntimeError(f"dnsmasq did not start: {err.strip()} {log.strip()}")
        raise RuntimeError("dnsmasq: no free port after 5 tries")

    def set(self, name: str, addresses: Sequence[str]) -> None:
        """Map ``name`` to ``addresses`` (empty: remove it, so it answers NXDOMAIN);
        rewrite the hosts file, SIGHUP dnsmasq and wait until it has re-read it.

        dnsmasq's answers change at once; resolvers that cached the old answer keep it
        for its TTL.
        """
        if addresses:
            self.records[name] = _loopback_only(addresses)
        else:
            self.records.pop(name, None)
        before = self._reads()
        self._write_hosts()
        assert self._proc is not None
        self._proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while self._reads() <= before:
            if time.monotonic() > deadline:
                raise RuntimeError("dnsmasq did not re-read its hosts file")
            time.sleep(0.01)

    def queries(self, name: str | None = None, rtype: str | None = None) -> int:
        """Questions dnsmasq logged (for ``name`` and record type ``rtype`` if given)."""
        try:
            text = self.log_file.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return 0
        count = 0
        for line in text.splitlines():
            _, sep, rest = line.partition(": query[")
            if not sep:
                continue
            qtype, _, rest = rest.partition("] ")
            qname = rest.split(" ", 1)[0]
            if (name is None or qname == name) and (rtype is None or qtype == rtype):
                count += 1
        return count

    def _stop(self) -> str:
        """Stop dnsmasq (SIGTERM, then SIGKILL); return what it wrote to stderr."""
        proc, self._proc = self._proc, None
        if proc is None:
            return ""
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        return err

    def close(self) -> None:
        """Stop dnsmasq (idempotent)."""
        self._stop()

    def __enter__(self) -> DnsmasqServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class StubDnsServer:
    """A UDP DNS server on 127.0.0.1 that answers every question with ``rcode`` and no
    records (2 SERVFAIL, 3 NXDOMAIN, 5 REFUSED), or never answers (``rcode=None``).

    ``questions`` counts the datagrams received. Use as a context manager.
    """

    def __init__(self, rcode: int | None) -> None:
        self.rcode = rcode
        self.questions = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.settimeout(0.05)
        self.port = int(self._sock.getsockname()[1])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def nameserver(self) -> str:
        """``"127.0.0.1:PORT"``."""
        return f"127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self._sock.recvfrom(4096)
            except (TimeoutError, OSError):
                continue
            if len(data) < 12:
                continue
            self.questions += 1
            if self.rcode is None:
                continue
            qid, flags = struct.unpack("!HH", data[:4])
            end = 12
            while end < len(data) and data[end] != 0:  # QNAME labels (no compression)
                end += 1 + data[end]
            question = data[12 : end + 5]  # QNAME, its zero byte, QTYPE, QCLASS
            flags = 0x8000 | (flags & 0x0100) | 0x0080 | self.rcode  # QR, RD copied, RA
            header = struct.pack("!HHHHHH", qid, flags, 1, 0, 0, 0)
            with contextlib.suppress(OSError):
                self._sock.sendto(header + question, peer)

    def __enter__(self) -> StubDnsServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()


__all__ = ["DNSMASQ", "DnsmasqServer", "StubDnsServer", "free_port"]


class CountingResolver:
    """``AiodnsResolver`` plus a count of questions outstanding (an independent check)."""

    def __init__(self, nameserver: str, timeout_s: float) -> None:
        self.inner = AiodnsResolver([nameserver], timeout_s)
        self.active = 0
        self.peak = 0

    async def query(self, name: str, rtype: RecordType) -> Answer:
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            return await self.inner.query(name, rtype)
        finally:
            self.active -= 1

    async def close(self) -> None:
        await self.inner.close()
