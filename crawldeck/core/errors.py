"""The one error tree of crawldeck.

Every error that leaves a ``core`` module is one of these; foreign errors (aiohttp,
aiodns, sqlite3, protego, selectolax) are translated where they enter, so callers
catch only ours::

    CrawldeckError                  base of everything below
    +-- ConfigError                 a bad config key, value or flag (one-line message)
    +-- SeedError                   a seeds file that cannot be read at all
    +-- UrlError                    a URL that cannot be parsed or has no host
    |   +-- UnsupportedScheme       a URL that is not http or https (mailto:, javascript:)
    +-- FetchError                  a fetch that produced no usable HTTP response
    |   +-- FetchTimeout            R  connect, read or total time budget exceeded
    |   +-- ConnectFailed           R  refused, unreachable, reset or dropped while the
    |   |                              TCP or TLS connection was set up; the fetcher
    |   |                              closed (DNS only without core.net.transport; with
    |   |                              it, DnsError)
    |   |   +-- ConnectRefused      R  refused (ECONNREFUSED: nothing listens on the
    |   |       |                      port); tried once on a host that never answered
    |   |       |                      this run, unless retry_refused (core.crawl.retries)
    |   |       +-- ProxyRefused    R  the proxy refused it: the way out is down
    |   +-- ConnectionLost          R  the connection closed before the response head
    |   |                              was complete, or was reset before its body ended
    |   +-- TlsFailed               -  the certificate is not valid for the name, or
    |   |                              TLS cannot be agreed (the port speaks no TLS)
    |   +-- RequestInvalid          -  a URL (or header) aiohttp cannot send
    |   +-- ProtocolViolation       -  a malformed response head (status line, header,
    |   |                              oversized line), bad framing, a short body, a
    |   |                              stacked or unknown content coding, a compressed
    |   |                              body that does not decode
    |   +-- DnsError                R  the host name could not be resolved (core.net.dns)
    |   |   +-- DnsNotFound         -  NXDOMAIN or no A/AAAA record: the host is dead
    |   |   +-- DnsTemporaryFailure R  timeout, SERVFAIL, refused: worth retrying later
    |   +-- PrivateAddress          -  the address connected to is private/special and
    |   |                              not allowed (core.policy.address_policy.AddressPolicy)
    |   +-- HostParked              -  a side request (a sitemap, robots.txt) to a host
    |                                  parked while it waited: none is sent
    +-- StoreError                  the SQLite file is unusable (locked, corrupt, not ours)
    +-- ParseError                  a page could not be parsed: its parse worker died
    |   +-- ParseTimeout            the page's parse ran over parse_timeout_ms (core.net.parse)
    +-- RenderUnavailable           no browser to render with (Chromium missing or broken)
    +-- AttachError                 no running crawl to attach to, or its socket refused us
    +-- ClusterError                Redis cannot be started or reached (core.cluster)

``R``: ``retryable`` is ``True`` (a class attribute of every ``FetchError``): the
failure is transient and the same request may well succeed later, so it keeps its
retry budget. ``-``: deterministic, the same request gets the same answer; it is
recorded after one try.

Each error's ``reason`` is a short stable token, the first word of what
``pages.error`` records (``"<reason>: <message>"``): ``timeout``, ``connect``,
``connection_lost``, ``tls``, ``bad_request``, ``protocol``, ``dns``,
``dns_temporary``, ``private_address``, ``parked`` (and ``fetch`` for a bare
``FetchError``).
"""

from __future__ import annotations

from typing import Final

#: The words of every full-disk message (``c.db: disk full (No space left on device)``,
#: ``crawl-00002.warc.gz: disk full (...)``), a ``StoreError``'s: the crawl command
#: adds how to go on once space is freed.
DISK_FULL: Final = "disk full"


class CrawldeckError(Exception):
    """Base of every crawldeck error; ``str(err)`` is a one-line message for users."""

    reason: str = "error"


class ConfigError(CrawldeckError):
    """A config file, key, value or command-line flag is wrong.

    The message names the key or flag and what was expected, e.g.
    ``config key 'delay_ms': expected an integer >= 0, got -5``.
    """

    reason = "config"


class SeedError(CrawldeckError):
    """The seeds file cannot be read (missing, unreadable, not text).

    A single bad line is not a ``SeedError``: it is reported with its line number
    and the rest of the file is still used (see ``core.policy.seeds.read_seeds``).
    """

    reason = "seeds"


class UrlError(CrawldeckError):
    """A URL cannot be parsed, has no host, or is not http/https."""

    reason = "bad_url"


class UnsupportedScheme(UrlError):
    """A URL whose scheme is not http or https (``mailto:``, ``javascript:``, ``ftp:``)."""

    reason = "scheme"


class FetchError(CrawldeckError):
    """A fetch that ended without a usable HTTP response.

    ``retryable`` (class attribute, ``bool``): whether the failure is transient (the
    same request may succeed later: keep the URL's retry budget) or deterministic
    (record it after one try). Each subclass sets it; see the tree above.
    """

    reason = "fetch"
    retryable: bool = True


def without_url(message: str, url: str) -> str:
    """``message`` without the ``: URL`` that ends a ``FetchError``'s message when
    ``url`` is that URL, for a line that names the URL already (``http://h/: connect:
    ... : http://h/`` said once, issue #25); else ``message`` as it is."""
    return message.removesuffix(f": {url}")


class FetchTimeout(FetchError):
    """The connect, read or total time budget of a fetch was exceeded. Retryable."""

    reason = "timeout"
    retryable = True


class ConnectFailed(FetchError):
    """No connection could be set up: refused, unreachable, reset or dropped during
    the TCP or TLS handshake, or the fetcher is closed (the crawl is stopping).
    Retryable."""

    reason = "connect"
    retryable = True


class ConnectRefused(ConnectFailed):
    """The connection was refused (``ECONNREFUSED``: the host is up and nothing listens
    on the port, or a firewall answers with RST). Retryable as ``ConnectFailed``, with
    the same ``reason``, but ``core.crawl.retries`` records it after one try when the host has
    not answered any request this run (``retry_refused = false``: a wrong port or a
    server that is not running does not get better in the next 85 s, as curl and wget
    give up on a refused connection at once)."""


class ProxyRefused(ConnectRefused):
    """The proxy (``proxy``, or the environment's with ``trust_env``) refused the
    connection: the crawl's way out is down, not the host (issue #25: a dead proxy read
    as a dead site). Treated as ``ConnectRefused``; the messages name the proxy, and its
    ``reason`` is ``proxy`` (robots.txt ``unreachable (proxy)``, the stats' transport
    errors)."""

    reason = "proxy"


class ConnectionLost(FetchError):
    """The connection ended before the response did: closed or reset before the
    response head (status line and headers) was complete, or reset (TCP RST) before
    the end of the body. Retryable: a server restart, an overloaded proxy, a
    keep-alive race. (A body cut short by a clean close is a ``ProtocolViolation``.)"""

    reason = "connection_lost"
    retryable = True


class TlsFailed(FetchError):
    """TLS could not be set up for a reason that does not go away on a retry: the
    certificate does not verify (expired, self-signed, another name) or no TLS can be
    agreed (the port speaks plain HTTP, no common version or cipher). Not retryable."""

    reason = "tls"
    retryable = False


class RequestInvalid(FetchError):
    """The request cannot be sent at all: a URL aiohttp refuses (an IPv4 host not in
    dotted-quad form, a bad port, not http/https) or a header value it refuses. Not
    retryable."""

    reason = "bad_request"
    retryable = False


class ProtocolViolation(FetchError):
    """The server's reply is not valid HTTP/1.1, or its body cannot be used: a bad
    status line, a header line or a field too long or malformed, too many headers,
    bad chunked framing, a short body (the connection closed cleanly before
    ``Content-Length`` bytes or the last chunk), a stacked or unknown content coding,
    a compressed body that does not decode or does not end. Not retryable: the same
    server sends the same bytes again."""

    reason = "protocol"
    retryable = False


class DnsError(FetchError):
    """The host name of a URL could not be resolved to an address (``core.net.dns``).
    Retryable unless it is a ``DnsNotFound``."""

    reason = "dns"
    retryable = True


class DnsNotFound(DnsError):
    """The name does not exist (NXDOMAIN) or has no A/AAAA record (NODATA).

    Permanent for the life of the negative-cache entry (RFC 2308): the engine marks
    the host dead and blocks its URLs with reason ``dns``. Not retryable.
    """

    reason = "dns"
    retryable = False


class DnsTemporaryFailure(DnsError):
    """The resolver gave no answer: timeout, SERVFAIL, REFUSED or a broken reply.

    Worth retrying later with backoff (RFC 2308 §7: such failures are not facts
    about the name). Retryable.
    """

    reason = "dns_temporary"
    retryable = True


class PrivateAddress(FetchError):
    """The address a connection would go to is loopback, private, link-local,
    multicast or otherwise special-purpose (RFC 6890) and is not allowed by the
    config (``allow_private``, ``allow_networks``) nor the host's trust (a seed).

    Raised before any packet is sent to that address. ``host`` and ``address`` say
    which name and which address were refused. Not retryable.
    """

    reason = "private_address"
    retryable = False

    def __init__(self, message: str, *, host: str = "", address: str = "") -> None:
        super().__init__(message)
        self.host = host
        self.address = address


class HostParked(FetchError):
    """A side request (``core.crawl.side_requests``: robots.txt, a sitemap) whose host was
    parked (``Politeness.should_park``: nothing more goes to it this run) before its
    slot came: no request is sent. Not retryable in this run."""

    reason = "parked"
    retryable = False


class StoreError(CrawldeckError):
    """The SQLite crawl file cannot be opened or written (locked, corrupt, not ours)."""

    reason = "store"


class ParseError(CrawldeckError):
    """A page's links could not be extracted: the process parsing it died (killed
    by the OOM killer, a crash in the parser) or the parse pool is closed
    (``core.net.parse.ParsePool``). The message is one line naming the URL."""

    reason = "parse"


class ParseTimeout(ParseError):
    """Parsing one page took longer than ``parse_timeout_ms``; the worker process
    was killed (and is replaced), so no links of the page are known.

    The message names the URL and the budget, e.g. ``parsing
    http://a.test/deep took over 5000 ms (parse_timeout_ms): worker stopped``.
    """

    reason = "parse_timeout"


class RenderUnavailable(CrawldeckError):
    """JavaScript rendering cannot run: no browser, or it does not start
    (``core.render.browser_pool``).

    The message is one line that says what is missing and how to install it, e.g.
    ``rendering is off: Chromium not found at /usr/bin/chromium (install it with
    `apt-get install chromium`, or set render_browser_path)``. The crawl goes on
    without rendering.
    """

    reason = "render_unavailable"


class ClusterError(CrawldeckError):
    """The Redis of a multi-worker crawl cannot be used (``core.cluster``).

    No ``redis-server`` to start a private one with, a private one that does not start
    or answer, or a ``--redis`` URL that cannot be reached. The message is one line,
    e.g. ``cannot reach Redis at redis://10.0.0.5:6379/0: Connection refused``; the
    CLI prints it and exits 2.
    """

    reason = "cluster"


class AttachError(CrawldeckError):
    """The attach socket of a running crawl cannot be used (``core.crawl.attach``).

    No crawl runs on the file (no socket beside it, or a stale one left by a killed
    crawl), the socket belongs to another user or refused this one, the crawl went away
    while attached, or a frame broke the protocol. The message is one line, e.g.
    ``no running crawl on crawl.db (no socket crawl.db.sock)``; the CLI prints it and
    exits 2.
    """

    reason = "attach"
