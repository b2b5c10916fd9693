"""The one error tree of crawldeck.

Every error that leaves a ``core`` module is one of these; foreign errors (aiohttp,
aiodns, sqlite3, protego, selectolax) are translated where they enter, so callers
catch only ours::

    CrawldeckError                  base of everything below
    +-- ConfigError                 a bad config key, value or flag (one-line message)
    +-- SeedError                   a seeds file that cannot be read at all
    +-- UrlError                    a URL that cannot be parsed or has no host
    |   +-- UnsupportedScheme       a URL that is not http or https (mailto:, javascript:)
    +-- FetchError                  a fetch that produced no HTTP response
    |   +-- FetchTimeout            connect, read or total time budget exceeded
    |   +-- ConnectFailed           refused, reset, TLS failure (DNS only without
    |                               core.transport; with it, DnsError)
    |   +-- ProtocolViolation       a malformed HTTP response or encoding
    |   +-- DnsError                the host name could not be resolved (core.dns)
    |   |   +-- DnsNotFound         NXDOMAIN or no A/AAAA record: the host is dead
    |   |   +-- DnsTemporaryFailure timeout, SERVFAIL, refused: worth retrying later
    |   +-- PrivateAddress          the address connected to is private/special and
    |                               not allowed (core.dns.AddressPolicy)
    +-- StoreError                  the SQLite file is unusable (locked, corrupt, not ours)
    +-- ParseError                  a page could not be parsed: its parse worker died
    |   +-- ParseTimeout            the page's parse ran over parse_timeout_ms (core.parse)
    +-- RenderUnavailable           no browser to render with (Chromium missing or broken)

Each error's ``reason`` is a short stable token (``timeout``, ``connect``,
``protocol``, ``dns``, ``dns_temporary``, ``private_address``) that is what
``pages.error`` records.
"""

from __future__ import annotations


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
    and the rest of the file is still used (see ``core.seeds.read_seeds``).
    """

    reason = "seeds"


class UrlError(CrawldeckError):
    """A URL cannot be parsed, has no host, or is not http/https."""

    reason = "bad_url"


class UnsupportedScheme(UrlError):
    """A URL whose scheme is not http or https (``mailto:``, ``javascript:``, ``ftp:``)."""

    reason = "scheme"


class FetchError(CrawldeckError):
    """A fetch that ended without a usable HTTP response."""

    reason = "fetch"


class FetchTimeout(FetchError):
    """The connect, read or total time budget of a fetch was exceeded."""

    reason = "timeout"


class ConnectFailed(FetchError):
    """The connection could not be made or was lost (DNS, refused, reset, TLS)."""

    reason = "connect"


class ProtocolViolation(FetchError):
    """The server sent something that is not valid HTTP (or an undecodable body)."""

    reason = "protocol"


class DnsError(FetchError):
    """The host name of a URL could not be resolved to an address (``core.dns``)."""

    reason = "dns"


class DnsNotFound(DnsError):
    """The name does not exist (NXDOMAIN) or has no A/AAAA record (NODATA).

    Permanent for the life of the negative-cache entry (RFC 2308): the engine marks
    the host dead and blocks its URLs with reason ``dns``.
    """

    reason = "dns"


class DnsTemporaryFailure(DnsError):
    """The resolver gave no answer: timeout, SERVFAIL, REFUSED or a broken reply.

    Worth retrying later with backoff (RFC 2308 §7: such failures are not facts
    about the name).
    """

    reason = "dns_temporary"


class PrivateAddress(FetchError):
    """The address a connection would go to is loopback, private, link-local,
    multicast or otherwise special-purpose (RFC 6890) and is not allowed by the
    config (``allow_private``, ``allow_networks``) nor the host's trust (a seed).

    Raised before any packet is sent to that address. ``host`` and ``address`` say
    which name and which address were refused.
    """

    reason = "private_address"

    def __init__(self, message: str, *, host: str = "", address: str = "") -> None:
        super().__init__(message)
        self.host = host
        self.address = address


class StoreError(CrawldeckError):
    """The SQLite crawl file cannot be opened or written (locked, corrupt, not ours)."""

    reason = "store"


class ParseError(CrawldeckError):
    """A page's links could not be extracted: the process parsing it died (killed
    by the OOM killer, a crash in the parser) or the parse pool is closed
    (``core.parse.ParsePool``). The message is one line naming the URL."""

    reason = "parse"


class ParseTimeout(ParseError):
    """Parsing one page took longer than ``parse_timeout_ms``; the worker process
    was killed (and is replaced), so no links of the page are known.

    The message names the URL and the budget, e.g. ``parsing
    http://a.test/deep took over 5000 ms (parse_timeout_ms): worker stopped``.
    """

    reason = "parse_timeout"


class RenderUnavailable(CrawldeckError):
    """JavaScript rendering cannot run: no browser, or it does not start (``core.render``).

    The message is one line that says what is missing and how to install it, e.g.
    ``rendering is off: Chromium not found at /usr/bin/chromium (install it with
    `apt-get install chromium`, or set render_browser_path)``. The crawl goes on
    without rendering.
    """

    reason = "render_unavailable"
