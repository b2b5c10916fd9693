"""A synthetic web served by nginx on loopback, for the crawler benchmarks (issue #6).

    .venv/bin/python benchmarks/synthweb.py --hosts 500 --pages 200   # serve until Ctrl-C

H hosts x P pages. Every host serves the same generated tree (one copy on disk, shared
by all hosts, so 50 000 hosts cost no more disk than 10):

- ``/robots.txt``: ``User-agent: *`` / ``Disallow: /private/``;
- ``/`` and ``/p/<i>.html`` (i < P): about 15 KB of HTML each (a head, a navigation
  bar, paragraphs of text) with about 50 links: 10 navigation links, 34 links to other
  pages of the same host, 1 link into ``/private/`` (disallowed by robots.txt) and 5
  links to pages of other hosts;
- ``/private/<i>.html``: exists, must never be requested.

Hosts are addressed one of two ways:

- ``by_ip`` (the Scrapy comparison): host i is the IP literal ``127.80.x.y`` on port
  8790, one listening address per host, so each host is its own address for both
  crawlers (Scrapy's per-domain slot and crawldeck's per-IP limit see distinct hosts);
- names (the scaling runs, up to 50 000 hosts): host i is ``h<i>.synth.test:8790``,
  resolved by a dnsmasq this module starts (a hosts file of H names spread over 250
  addresses), so the crawler's DNS cache is part of what is measured.

nginx runs with one worker process and ``access_log`` on (``$msec $server_addr
$host $request_uri``) so a benchmark can check what was requested afterwards.

Over TLS (``tls``: a directory holding ``cert.pem`` and ``key.pem``, a certificate for
every host's address or name, made by the benchmark from a CA of its own, as
``stage_profile.py`` does) the same web is served as ``https://`` (seeds and links);
``keepalive=False`` closes every connection after one answer (nginx
``keepalive_timeout 0``), so each request pays a new TCP connection and, over TLS, a
full handshake.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

PORT = 8790
DNS_PORT = 5390
NGINX = "/usr/sbin/nginx"
DNSMASQ = "/usr/sbin/dnsmasq"
NAME_ADDRESSES = 250  # names mode: H names spread over this many addresses
_WORDS = [
    "crawler", "frontier", "politeness", "robots", "host", "queue", "page", "link",
    "seed", "depth", "fetch", "parse", "server", "client", "request", "response",
    "header", "body", "cache", "budget", "schedule", "delay", "token",
]  # fmt: skip


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the benchmark process dies, however it
    dies (Linux ``prctl(PR_SET_PDEATHSIG)``), so no nginx outlives its benchmark."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def host_address(i: int) -> str:
    """The loopback address of host ``i`` in ``by_ip`` mode: ``127.80.<i//250>.<i%250+1>``."""
    return f"127.80.{i // 250}.{i % 250 + 1}"


def _filler(i: int, words: int) -> str:
    out = []
    for k in range(words // 60):
        sentence = " ".join(_WORDS[(i * 7 + k * 11 + j * 3) % len(_WORDS)] for j in range(60))
        out.append(f"<p>{sentence.capitalize()}.</p>")
    return "\n".join(out)


def build_tree(root: Path, hosts: list[str], pages: int, scheme: str = "http") -> None:
    """Write the shared tree (see the module docstring) under ``root``.

    ``hosts`` are the ``host:port`` names other hosts are linked by (absolute URLs with
    ``scheme``, ``http`` or ``https``).
    """
    (root / "p").mkdir(parents=True)
    (root / "private").mkdir()
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    nav = "".join(f'<li><a href="/p/{t}.html">Section {t}</a></li>' for t in range(10))
    h = len(hosts)
    for i in range(-1, pages):
        body_links = sorted({(i * 7 + k * 13 + 1) % pages for k in range(34)})
        local = "".join(f'<li><a href="/p/{t}.html">Page {t}</a></li>' for t in body_links)
        other = "".join(
            f'<li><a href="{scheme}://{hosts[(i * 131 + k * 7919 + 1) % h]}'
            f'/p/{(i + k) % pages}.html">'
            f"Elsewhere {k}</a></li>"
            for k in range(5)
        )
        html = (
            "<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<title>Page {i}</title><link rel=stylesheet href=/style.css></head><body>"
            f"<nav><ul>{nav}</ul></nav><main><h1>Page {i}</h1>{_filler(i, 1800)}"
            f'<h2>See also</h2><ul>{local}</ul><p><a href="/private/{i}.html">members</a></p>'
            f"<h2>Elsewhere</h2><ul>{other}</ul></main></body></html>\n"
        )
        name = root / "index.html" if i < 0 else root / "p" / f"{i}.html"
        name.write_text(html)
        if i >= 0:
            (root / "private" / f"{i}.html").write_text("<html><body>private</body></html>")


class SynthWeb:
    """nginx (and, in names mode, dnsmasq) serving H x P pages on loopback.

    Args:
        hosts: number of hosts H (by_ip: at most 250 x 250).
        pages: pages per host P (besides ``/``).
        by_ip: IP-literal hosts on one address each, else ``h<i>.synth.test`` names.
        port: the TCP port every host listens on.
        tls: a directory with ``cert.pem`` (the chain, PEM) and ``key.pem``: serve
            ``https://`` with them; ``None``: plain HTTP.
        keepalive: ``False``: one request per connection (nginx ``keepalive_timeout 0``).

    Use as a context manager; ``seeds`` are the H root URLs, ``nameserver`` the
    ``host:port`` of the DNS server in names mode. Raises ``RuntimeError`` when nginx
    or dnsmasq does not start.
    """

    def __init__(
        self,
        hosts: int,
        pages: int,
        *,
        by_ip: bool = True,
        port: int = PORT,
        tls: Path | None = None,
        keepalive: bool = True,
    ) -> None:
        self.hosts = hosts
        self.tls = tls
        self.keepalive = keepalive
        self.scheme = "https" if tls else "http"
        self.port = port
        self.pages = pages
        self.by_ip = by_ip
        self.work = Path(tempfile.mkdtemp(prefix="crawldeck-synthweb-"))
        if by_ip:
            self.names = [f"{host_address(i)}:{port}" for i in range(hosts)]
        else:
            self.names = [f"h{i}.synth.test:{port}" for i in range(hosts)]
        self.seeds = [f"{self.scheme}://{name}/" for name in self.names]
        self.dns_port = port - PORT + DNS_PORT
        self.nameserver = f"127.0.0.1:{self.dns_port}"
        self.access_log = self.work / "access.log"
        self._procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> SynthWeb:
        build_tree(self.work / "www", self.names, self.pages, self.scheme)
        os.chmod(self.work, 0o755)
        if self.by_ip:
            listens = [host_address(i) for i in range(self.hosts)]
        else:
            listens = [f"127.81.0.{k + 1}" for k in range(min(NAME_ADDRESSES, self.hosts))]
            with open(self.work / "hosts", "w") as f:
                for i in range(self.hosts):
                    f.write(f"{listens[i % len(listens)]} h{i}.synth.test\n")
            self._start(
                [DNSMASQ, "--no-daemon", "--no-resolv", "--no-hosts", f"--port={self.dns_port}",
                 "--listen-address=127.0.0.1", "--bind-interfaces", "--local=/test/",
                 f"--addn-hosts={self.work / 'hosts'}", "--local-ttl=3600",
                 "--cache-size=10000", "--log-facility=/dev/null"]
            )  # fmt: skip
        conf = self.work / "nginx.conf"
        user = "user root;\n" if os.geteuid() == 0 else ""
        ssl = " ssl" if self.tls else ""
        listen = "".join(f"    listen {a}:{self.port}{ssl};\n" for a in listens)
        if self.tls:
            listen += (
                f"    ssl_certificate {self.tls / 'cert.pem'};\n"
                f"    ssl_certificate_key {self.tls / 'key.pem'};\n"
            )
        keepalive = "" if self.keepalive else "  keepalive_timeout 0;\n"
        conf.write_text(
            f"{user}worker_processes 1;\nworker_rlimit_nofile 200000;\n"
            f"pid {self.work}/nginx.pid;\nerror_log {self.work}/error.log warn;\n"
            "events { worker_connections 20000; }\n"
            "http {\n"
            "  default_type text/html;\n"
            "  types { text/html html; text/plain txt; }\n"
            "  log_format combined2 '$msec $server_addr $host $request_uri $status';\n"
            f"  client_body_temp_path {self.work}/tmp;\n"
            "  keepalive_requests 100000;\n"
            f"{keepalive}"
            "  server {\n"
            f"{listen}"
            f"    root {self.work}/www;\n"
            f"    access_log {self.access_log} combined2 buffer=256k flush=1s;\n"
            "  }\n"
            "}\n"
        )
        self._start([NGINX, "-p", str(self.work), "-c", str(conf), "-g", "daemon off;"])
        self._wait_ready()
        return self

    def _start(self, command: list[str]) -> None:
        if not Path(command[0]).exists():
            raise RuntimeError(
                f"{command[0]} is not installed (apt-get install nginx-light dnsmasq-base)"
            )
        self._procs.append(
            subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True, preexec_fn=_die_with_parent)
        )  # fmt: skip

    def _wait_ready(self) -> None:
        import socket

        last = self.names[-1] if self.by_ip else f"127.81.0.1:{self.port}"
        host, port = last.rsplit(":", 1)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for proc in self._procs:
                if proc.poll() is not None:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    raise RuntimeError(f"{proc.args[0]} exited: {err.strip()}")
            try:
                socket.create_connection((host, int(port)), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not start listening in 20 s")

    def requests(self) -> list[tuple[float, str, str, str, int]]:
        """The access log so far: ``(time s, server address, host, path, status)`` rows."""
        time.sleep(1.2)  # nginx flushes its log buffer every second
        rows = []
        if self.access_log.exists():
            for line in self.access_log.read_text().splitlines():
                t, addr, host, path, status = line.split(" ")
                rows.append((float(t), addr, host, path, int(status)))
        return rows

    def reset_log(self) -> None:
        """Empty the access log (nginx reopens it on USR1)."""
        self.access_log.write_text("")
        for proc in self._procs:
            if proc.args[0] == NGINX:
                proc.send_signal(signal.SIGUSR1)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        shutil.rmtree(self.work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--port", type=int, default=PORT, help="HTTP port (DNS: port - 3400)")
    parser.add_argument("--names", action="store_true", help="h<i>.synth.test names via dnsmasq")
    parser.add_argument("--seeds", type=Path, help="write the seed URLs to this file")
    args = parser.parse_args()
    with SynthWeb(args.hosts, args.pages, by_ip=not args.names, port=args.port) as web:
        if args.seeds:
            args.seeds.write_text("\n".join(web.seeds) + "\n")
        print(f"serving {args.hosts} hosts x {args.pages} pages; e.g. {web.seeds[0]}")
        if not web.by_ip:
            print(f"nameserver {web.nameserver}")
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
