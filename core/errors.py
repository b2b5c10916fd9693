"""The one error tree of crawldeck.

Every error that leaves a ``core`` module is one of these; foreign errors (httpx,
aiodns, sqlite3, protego, selectolax) are translated where they enter, so callers
catch only ours::

    CrawldeckError                  base of everything below
    +-- ConfigError                 a bad config key, value or flag (one-line message)
    +-- SeedError                   a seeds file that cannot be read at all
    +-- UrlError                    a URL that cannot be parsed or has no host
    |   +-- UnsupportedScheme       a URL that is not http or https (mailto:, javascript:)
    +-- FetchError                  a fetch that produced no HTTP response
    |   +-- FetchTimeout            connect, read or total time budget exceeded
    |   +-- ConnectFailed           DNS failure, refused, reset, TLS failure
    |   +-- ProtocolViolation       a malformed HTTP response or encoding
    +-- StoreError                  the SQLite file is unusable (locked, corrupt, not ours)

Each error's ``reason`` is a short stable token (``timeout``, ``connect``,
``protocol``) that is what ``pages.error`` records.
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


class StoreError(CrawldeckError):
    """The SQLite crawl file cannot be opened or written (locked, corrupt, not ours)."""

    reason = "store"
