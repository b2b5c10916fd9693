"""The checks of the request keys ``header``, ``proxy`` and ``auth`` (pure).

``core.config.CrawlConfig`` calls them when it is made: each bad value is one
``ConfigError`` line naming the key. What the fetcher does with the keys, and why these
rules, is in ``core.net.request_options``.

Headers (``header = {"Accept-Language" = "en"}``): a name must be an RFC 9110 token, a
value printable ASCII (§5.5, no CR/LF), and ``REFUSED_HEADERS`` cannot be set: those
the fetcher or the politeness owns (``Host``, ``User-Agent``, ``Accept-Encoding``),
hop-by-hop fields (RFC 9110 §7.6.1), body and range fields a GET does not have or the
crawler could not record (``Content-Length``, ``Range``), the validators a recrawl sends
per page, and credentials or cookies, which would go to every host.

Proxy (``proxy = "http://127.0.0.1:3128"``): ``http://host[:port]``, no credentials
(the config is saved as JSON in the crawl file's ``runs`` table and sent to cluster
workers through Redis).

Credentials (``[auth."https://docs.example.org"] user = "me" password_env = "DOCS_PW"``):
an origin (RFC 7617's protection space is per scheme, host and port), a user without
``:`` (RFC 7617 §2), and the name of the environment variable that holds the password:
never the password itself, for the same reason as the proxy's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import SplitResult, urlsplit

from crawldeck.core.errors import ConfigError

#: The type of the ``header`` key: ``(name, value)`` pairs in order.
HeaderFields = tuple[tuple[str, str], ...]
#: The type of the ``auth`` key: ``(origin, user, password_env)`` triples in order.
AuthEntries = tuple[tuple[str, str, str], ...]

#: Header fields ``header`` cannot set, lowercase, each with why (one line).
REFUSED_HEADERS: dict[str, str] = {
    "host": "the fetcher writes it from each URL (DNS pinning, TLS name)",
    "user-agent": "set user_agent instead: robots.txt groups are matched by its product token",
    "accept-encoding": "the fetcher offers only the codings it decodes within max_body_bytes",
    "authorization": (
        'it would go to every host: give credentials per origin (crawl --auth, [auth."ORIGIN"]'
        " in a config file) or from netrc (--netrc, netrc = true)"
    ),
    "proxy-authorization": "give the proxy's credentials in HTTP(S)_PROXY with trust_env = true",
    "cookie": "it would go to every host; cookies live for one redirect chain",
    "connection": "a hop-by-hop field (RFC 9110 §7.6.1)",
    "keep-alive": "a hop-by-hop field (RFC 9110 §7.6.1)",
    "proxy-connection": "a hop-by-hop field (RFC 9110 §7.6.1)",
    "te": "a hop-by-hop field (RFC 9110 §7.6.1)",
    "trailer": "a hop-by-hop field (RFC 9110 §7.6.1)",
    "transfer-encoding": "a hop-by-hop field (RFC 9110 §7.6.1)",
    "upgrade": "a hop-by-hop field (RFC 9110 §7.6.1)",
    "content-length": "a GET has no body",
    "content-type": "a GET has no body",
    "expect": "a GET has no body",
    "range": "a part of a body would be recorded as the page",
    "if-range": "a part of a body would be recorded as the page",
    "if-none-match": "recrawl sends each page's own validators",
    "if-modified-since": "recrawl sends each page's own validators",
    "if-match": "a conditional GET the crawler could not record",
    "if-unmodified-since": "a conditional GET the crawler could not record",
}

#: RFC 9110 §5.6.2: a field name is a token.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: A POSIX environment variable name.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: The fields of one ``auth`` entry.
_AUTH_FIELDS = ("user", "password_env")


def _shown(value: object) -> str:
    """``value`` as a message shows it: ``repr``, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_header(value: Any) -> HeaderFields:
    """The ``header`` key: a table of field name -> value, as ``(name, value)`` pairs in
    order (a list of pairs, the JSON form ``asdict`` does not give but a saved config
    may, is taken too).

    Raises:
        ConfigError: not a table; a name that is not an RFC 9110 token or is in
            ``REFUSED_HEADERS``; a name given twice (names ignore case); a value that
            is not a string of visible ASCII, spaces and tabs (RFC 9110 §5.5; no
            CR/LF).
    """
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, list | tuple) and all(
        isinstance(pair, list | tuple) and len(pair) == 2 for pair in value
    ):
        pairs = [(name, field) for name, field in value]
    else:
        raise ConfigError(
            f"config key 'header': expected a table of name = value, such as "
            f'{{"Accept-Language" = "en"}}, got {_shown(value)}'
        )
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for name, field in pairs:
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise ConfigError(f"config key 'header': {_shown(name)} is not a header name")
        lower = name.lower()
        if lower in REFUSED_HEADERS:
            raise ConfigError(f"config key 'header': {name!r} is refused: {REFUSED_HEADERS[lower]}")
        if lower in seen:
            raise ConfigError(f"config key 'header': {name!r} is given twice")
        seen.add(lower)
        if not isinstance(field, str):
            raise ConfigError(
                f"config key 'header': the value of {name!r} must be a string, got {_shown(field)}"
            )
        if not all(" " <= c <= "~" or c == "\t" for c in field):
            raise ConfigError(
                f"config key 'header': the value of {name!r} may hold only printable ASCII "
                f"(RFC 9110 §5.5), got {_shown(field)}"
            )
        out.append((name, field.strip(" \t")))
    return tuple(out)


def split_proxy(value: str, where: str) -> SplitResult:
    """``value`` split, when it is ``http://host[:port][/]`` (credentials allowed here:
    ``check_proxy`` refuses them); ``where`` names the key or variable in errors.

    Raises:
        ConfigError: not such a URL (another scheme, no host, a bad port, a path,
            query or fragment).
    """
    problem = f"{where}: expected an http:// proxy URL such as 'http://127.0.0.1:3128'"
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise ConfigError(f"{problem}, got {_shown(value)}") from None
    if (
        parts.scheme.lower() != "http"
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or (port is not None and port == 0)
    ):
        raise ConfigError(f"{problem}, got {_shown(value)}")
    return parts


def check_proxy(value: Any) -> str | None:
    """The ``proxy`` key: ``None`` or ``http://host[:port]`` without credentials.

    Raises:
        ConfigError: not a string, not such a URL, or one with a user or password
            (the config is saved in the crawl file).
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"config key 'proxy': expected a URL string, got {_shown(value)}")
    parts = split_proxy(value, "config key 'proxy'")
    if parts.username is not None or parts.password is not None:
        raise ConfigError(
            "config key 'proxy': no credentials in the URL (the config is saved in the crawl "
            "file): give them in HTTP_PROXY/HTTPS_PROXY with trust_env = true"
        )
    return value


def check_auth(value: Any) -> AuthEntries:
    """The ``auth`` key: a table of origin -> ``{user, password_env}``, as
    ``(origin, user, password_env)`` triples in order (a list of triples is taken too).

    Raises:
        ConfigError: not a table of tables; an origin that is not
            ``http(s)://host[:port]`` (no path, no credentials); an entry with fields
            other than ``user`` and ``password_env`` (a ``password`` is refused: the
            config is saved in the crawl file) or without both; a user that is empty,
            holds ``:`` (RFC 7617 §2) or is not printable; a ``password_env`` that is
            not an environment variable name.
    """
    if isinstance(value, Mapping):
        entries: list[tuple[Any, Any]] = list(value.items())
    elif isinstance(value, list | tuple) and all(
        isinstance(entry, list | tuple) and len(entry) == 3 for entry in value
    ):
        entries = [(o, {"user": u, "password_env": p}) for o, u, p in value]
    else:
        raise ConfigError(
            "config key 'auth': expected tables such as "
            '[auth."https://docs.example.org"] user = "..." password_env = "..."'
            f", got {_shown(value)}"
        )
    out: list[tuple[str, str, str]] = []
    for origin, entry in entries:
        where = f"config key 'auth': {_shown(origin)}"
        if not isinstance(origin, str) or not is_origin(origin):
            raise ConfigError(f"{where} is not an origin such as 'https://docs.example.org'")
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}: expected a table with user and password_env")
        if "password" in entry:
            raise ConfigError(
                f"{where}: no password in the config (it is saved in the crawl file): name "
                "the environment variable that holds it in password_env, or use netrc = true"
            )
        extra = sorted(str(key) for key in entry if key not in _AUTH_FIELDS)
        missing = [key for key in _AUTH_FIELDS if key not in entry]
        if extra or missing:
            wrong = f"unknown field {extra[0]!r}" if extra else f"no {missing[0]}"
            raise ConfigError(f"{where}: {wrong} (expected user and password_env)")
        user, variable = entry["user"], entry["password_env"]
        if not isinstance(user, str) or not user or ":" in user or not user.isprintable():
            raise ConfigError(
                f"{where}: user must be a printable string without ':' (RFC 7617 §2), "
                f"got {_shown(user)}"
            )
        if not isinstance(variable, str) or not _ENV_NAME.fullmatch(variable):
            raise ConfigError(
                f"{where}: password_env must name an environment variable, got {_shown(variable)}"
            )
        out.append((origin, user, variable))
    return tuple(out)


def is_origin(text: str) -> bool:
    """Whether ``text`` is ``http(s)://host[:port]`` (a trailing ``/`` allowed, no
    credentials). Never raises."""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return False
    return (
        parts.scheme.lower() in ("http", "https")
        and bool(parts.hostname)
        and parts.username is None
        and parts.path in ("", "/")
        and not parts.query
        and not parts.fragment
        and port != 0
    )


__all__ = [
    "REFUSED_HEADERS",
    "AuthEntries",
    "HeaderFields",
    "check_auth",
    "check_header",
    "check_proxy",
    "is_origin",
    "split_proxy",
]
