"""What ``CrawlConfig`` checks when it is made (``__post_init__``): the types a field's
value may have beyond numbers, strings and switches (``Range``, the per-host
``HostOverride`` and its keys), the check of one value against its type and range, and
the rules between fields.

Separate from ``core.config`` (the fields, their defaults and docs, building and loading
a config) because checking is a concept of its own: one branch per kind of type, and
the rules that cite their source (RFC 9110, RFC 9309, Playwright's resource types).
Pure: no I/O.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args, get_origin, get_type_hints

from crawldeck.core.errors import ConfigError, UrlError
from crawldeck.core.policy.request_checks import (
    AuthEntries,
    HeaderFields,
    check_auth,
    check_header,
    check_proxy,
)
from crawldeck.core.policy.urls import host_key

if TYPE_CHECKING:
    from crawldeck.core.config import CrawlConfig

RenderMode = Literal["auto", "never", "always"]

#: Playwright resource types a rendered page may ask for, ``document`` excepted
#: (the values ``render_block_resources`` accepts).
RENDER_RESOURCE_TYPES: frozenset[str] = frozenset(
    {"stylesheet", "image", "media", "font", "script", "texttrack", "xhr", "fetch",
     "eventsource", "websocket", "manifest", "beacon", "ping", "cspreport", "other"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Range:
    """The values a numeric ``CrawlConfig`` field accepts, bounds included.

    Put on a field as ``Annotated[int, Range(1, 64)]``: the field's one statement of
    its range, checked by ``CrawlConfig.__post_init__``. The highest values exist where
    each unit costs memory (a worker, a token, a slot) and values past them are typing
    mistakes, not crawls.

    Attributes:
        low: the least value accepted, in the field's unit.
        high: the greatest value accepted, or ``None`` for no upper bound.
    """

    low: float
    high: float | None = None


#: The keys a ``[hosts."NAME"]`` table may hold (``HostOverride``'s settings).
HOST_KEYS: tuple[str, ...] = ("delay_ms", "max_pages", "render")


@dataclass(frozen=True, slots=True)
class HostOverride:
    """The settings of one host that take the place of the crawl's for it: a
    ``[hosts."NAME"]`` table of the TOML file (``None``: the crawl's own).

    Attributes:
        host: the host key the table names (``core.policy.urls.host_key``: lowercase, IDNA,
            no trailing dot, ``:port`` only when not 80 or 443), e.g.
            ``docs.example.org`` or ``127.0.0.1:8080``; the settings apply to that
            host key exactly (another port is another host, as for politeness).
        delay_ms: the host's politeness delay floor (ms, ``>= 0``), in place of
            ``delay_ms``: its delay is still ``max(this, Crawl-delay, adaptive,
            learnt)`` (``core.policy.politeness``), so robots.txt can slow it further.
        max_pages: URLs admitted for the host (``>= 1``), in place of
            ``max_per_host``: each becomes at most one page, so the host has at most
            this many pages over all runs; one more is refused with ``host_cap``.
        render: the host's render mode (``auto``, ``always``, ``never``), in place of
            ``render`` (``render_never_hosts`` still wins, as it does over ``render``).
    """

    host: str
    delay_ms: Annotated[int | None, Range(0)] = None
    max_pages: Annotated[int | None, Range(1)] = None
    render: RenderMode | None = None


#: The ``Range`` of each numeric ``HostOverride`` setting.
HOST_RANGES: dict[str, Range] = {
    name: next(extra for extra in hint.__metadata__ if isinstance(extra, Range))
    for name, hint in get_type_hints(HostOverride, include_extras=True).items()
    if get_origin(hint) is Annotated
}
_HOST_HINTS: dict[str, Any] = get_type_hints(HostOverride)


def _host_key(name: Any) -> str:
    """The host key a ``[hosts."NAME"]`` table names (``core.policy.urls.host_key`` of
    ``http://NAME/``, ``:443`` dropped as the https default).

    Raises:
        ConfigError: ``NAME`` is not a host with an optional port.
    """
    if not isinstance(name, str) or not name or any(c in name for c in "/?#@\\ \t"):
        raise ConfigError(f"config key 'hosts': {name!r} is not a host name (host[:port])")
    try:
        key = host_key(f"http://{name}/")
    except UrlError as exc:
        raise ConfigError(f"config key 'hosts': {name!r} is not a host name: {exc}") from None
    return key.removesuffix(":443")


def _dotted(name: str, table: Mapping[str, Any]) -> str:
    """The host name an unquoted ``[hosts.a.b.c]`` was split from: ``name`` and the
    keys of the tables nested one in one under it (``127.0`` then ``{"0": {"1": {...}}}``
    gives ``127.0.0.1``), down to the table of settings."""
    while len(table) == 1:
        ((key, inner),) = table.items()
        if key in HOST_KEYS or not isinstance(inner, Mapping):
            break
        name, table = f"{name}.{key}", inner
    return name


def _check_hosts(value: Any) -> tuple[HostOverride, ...]:
    """Validate ``hosts``: a table of host name -> a table of ``HOST_KEYS`` (the TOML's
    ``[hosts."NAME"]``), or ``HostOverride`` values; each setting checked as the
    top-level key of its name is, the host named in the error.

    Raises:
        ConfigError: a bad host name, two names of one host key, an unknown key, a
            value of the wrong type or out of its range.
    """
    if isinstance(value, list | tuple) and all(isinstance(v, HostOverride) for v in value):
        value = {
            v.host: {key: getattr(v, key) for key in HOST_KEYS if getattr(v, key) is not None}
            for v in value
        }
    if not isinstance(value, Mapping):
        raise ConfigError(f"config key 'hosts': expected a table of host tables, got {value!r}")
    out: dict[str, HostOverride] = {}
    for name, table in value.items():
        key = _host_key(name)
        label = f'hosts."{name}"'
        if not isinstance(table, Mapping):
            raise ConfigError(f"config key {label!r}: expected a table, got {table!r}")
        if key in out:
            raise ConfigError(f"config key {label!r}: host {key!r} is named twice")
        unknown = [k for k in table if k not in HOST_KEYS]
        if unknown:
            first = table[unknown[0]]
            if isinstance(first, Mapping):  # [hosts.127.0.0.1]: TOML splits it at the dots
                dotted = _dotted(f"{name}.{unknown[0]}", first)
                raise ConfigError(
                    f"config key {label + '.' + str(unknown[0])!r}: a host name with dots "
                    f'is quoted in TOML: [hosts."{dotted}"]'
                )
            raise ConfigError(
                f"config key {label + '.' + str(unknown[0])!r}: unknown "
                f"(a host table holds {', '.join(HOST_KEYS)})"
            )
        settings = {
            k: check_value(f"{label}.{k}", _HOST_HINTS[k], v, HOST_RANGES.get(k))
            for k, v in table.items()
        }
        out[key] = HostOverride(key, **settings)
    return tuple(out.values())


def check_value(name: str, hint: Any, value: Any, bounds: Range | None = None) -> Any:
    """Validate one value against its type hint and ``bounds`` (``CrawlConfig`` passes
    the key's ``RANGES`` entry; ``None``: no bounds); return it coerced (lists -> tuples).

    A word of a fixed set (a ``Literal``) is taken in any case (``"Never"`` is
    ``"never"``).

    Raises:
        ConfigError: one line naming the key ``name``: a value of the wrong type or out
            of ``bounds``.
    """
    origin = get_origin(hint)
    args = get_args(hint)
    if origin is Literal:
        if isinstance(value, str) and value not in args:  # "Never" is "never", as
            # --log-level takes any case (issue #25 trial 18: render = "Never" refused)
            value = {str(a).lower(): a for a in args}.get(value.strip().lower(), value)
        if value not in args:
            choices = ", ".join(repr(a) for a in args)
            raise ConfigError(f"config key {name!r}: expected one of {choices}, got {value!r}")
        return value
    if type(None) in args:
        if value is None:
            return None
        inner = next(a for a in args if a is not type(None))
        return check_value(name, inner, value, bounds)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"config key {name!r}: expected true or false, got {_shown(value)}")
        return value
    if hint is int or hint is float:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if hint is float:
            ok = ok or isinstance(value, float)
        if not ok:
            kind = "an integer" if hint is int else "a number"
            raise ConfigError(f"config key {name!r}: expected {kind}, got {_shown(value)}")
        if bounds is not None and value < bounds.low:
            raise ConfigError(
                f"config key {name!r}: expected a value >= {bounds.low:g}, got {value!r}"
            )
        if bounds is not None and bounds.high is not None and value > bounds.high:
            raise ConfigError(
                f"config key {name!r}: expected a value <= {bounds.high:g}, got {value!r}"
            )
        return float(value) if hint is float else value
    if hint == HeaderFields:
        return check_header(value)
    if hint == AuthEntries:
        return check_auth(value)
    if hint is str:
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"config key {name!r}: expected a non-empty string, got {value!r}")
        return value
    if origin is tuple and args[0] is HostOverride:
        return _check_hosts(value)
    if origin is tuple:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"config key {name!r}: expected a list of strings, got {value!r}")
        return tuple(value)
    raise ConfigError(f"config key {name!r}: unsupported type")  # pragma: no cover


def _shown(value: object) -> str:
    """``value`` as an error shows it: a string says it is one, so that ``-s
    'delay_ms="5"'`` (TOML's string "5") does not read as the number 5 (issue #25)."""
    if isinstance(value, str):
        if value.strip() in ("true", "false"):
            return f"the string {value!r} (without the quotes it is {value.strip()})"
        with contextlib.suppress(ValueError):
            float(value)
            return f"the string {value!r} (without the quotes it is a number)"
    return repr(value)


#: A ``warc_prefix``: a plain file name stem, never a path.
_WARC_PREFIX = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")


def check_rules(config: CrawlConfig) -> None:
    """The rules beyond one field's type and range.

    Raises:
        ConfigError: a User-Agent that is not printable ASCII (no CR/LF, RFC 9110
            §5.5); a robots token that is not letters, ``_`` and ``-`` (RFC 9309
            §2.2.1); ``backoff_max_ms < backoff_base_ms``; a resource type outside
            ``RENDER_RESOURCE_TYPES``; ``dns_max_ttl_s < dns_min_ttl_s``; an
            ``allow_networks`` entry that is not an IP network; a ``dns_nameservers``
            entry that is not ``IP``, ``IP:port`` or ``[IPv6]:port``; an ``include``
            or ``exclude`` entry that Python's ``re`` does not compile; a ``proxy``
            that is not ``http://host[:port]`` or holds credentials, or a ``proxy``
            while any page may be rendered (``may_render``: Chromium's sub-requests
            do not go through it); a ``metrics_address`` that is not an IP address;
            a ``warc_prefix`` that is not a plain file name stem; an empty
            ``warc_dir`` or one holding a NUL.
    """
    agent = config.user_agent
    if not all(" " <= c <= "~" for c in agent):
        raise ConfigError(
            "config key 'user_agent': only printable ASCII is allowed in a header "
            f"(RFC 9110 §5.5), got {agent!r}"
        )
    token = config.robots_token
    if not all(c.isalpha() or c in "_-" for c in token):
        raise ConfigError(
            f"config key 'robots_token': only letters, '_' and '-' are allowed "
            f"(RFC 9309 §2.2.1), got {token!r}"
        )
    check_proxy(config.proxy)  # an http:// URL without credentials
    if config.proxy is not None and config.may_render():
        raise ConfigError(
            "config key 'proxy': the browser that renders pages would not go through it "
            '(its sub-requests connect directly): set render = "never" with a proxy'
        )
    if config.backoff_max_ms < config.backoff_base_ms:
        raise ConfigError("config key 'backoff_max_ms': must be >= backoff_base_ms")
    unknown = sorted(set(config.render_block_resources) - RENDER_RESOURCE_TYPES)
    if unknown:
        raise ConfigError(
            f"config key 'render_block_resources': unknown resource type {unknown[0]!r} "
            f"(expected some of {', '.join(sorted(RENDER_RESOURCE_TYPES))})"
        )
    if config.dns_max_ttl_s < config.dns_min_ttl_s:
        raise ConfigError("config key 'dns_max_ttl_s': must be >= dns_min_ttl_s")
    for network in config.allow_networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise ConfigError(
                f"config key 'allow_networks': {network!r} is not an IP network "
                f"(e.g. '127.0.5.0/24')"
            ) from None
    for name in ("include", "exclude"):
        for pattern in getattr(config, name):
            try:
                re.compile(pattern)
            except re.error as exc:
                glob = ""
                if pattern.startswith(("*", "?")):  # a shell glob (issue #25 trial 19)
                    example = re.escape(pattern.lstrip("*?")).replace("\\*", ".*") + "$"
                    glob = f" (a regex, not a glob: '{example}')"
                raise ConfigError(
                    f"config key {name!r}: {pattern!r} is not a regular expression: {exc}{glob}"
                ) from None
    prefix = config.warc_prefix
    if prefix is not None and not _WARC_PREFIX.fullmatch(prefix):
        raise ConfigError(
            f"config key 'warc_prefix': expected a file name stem of letters, digits, '.', "
            f"'_' and '-' (not starting with '.', at most 100), got {prefix!r}"
        )
    if config.warc_dir is not None and (not config.warc_dir.strip() or "\0" in config.warc_dir):
        raise ConfigError(f"config key 'warc_dir': expected a directory, got {config.warc_dir!r}")
    try:
        ipaddress.ip_address(config.metrics_address)
    except ValueError:
        raise ConfigError(
            f"config key 'metrics_address': {config.metrics_address!r} is not an IP address "
            "(e.g. '127.0.0.1' or '::1')"
        ) from None
    for server in config.dns_nameservers:
        if not _is_nameserver(server):
            raise ConfigError(
                f"config key 'dns_nameservers': {server!r} is not 'IP', 'IP:port' or '[IPv6]:port'"
            )


def _is_nameserver(server: str) -> bool:
    """Whether ``server`` is ``IP``, ``IPv4:port`` or ``[IPv6]:port`` (port 1-65535)."""
    host, port = server, ""
    if server.startswith("["):
        host, sep, rest = server[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return False
        port = rest[1:]
        if rest and not port:
            return False
    elif server.count(":") == 1:
        host, port = server.split(":")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return not port or (port.isdigit() and 0 < int(port) < 65536)


__all__ = [
    "HOST_KEYS",
    "HOST_RANGES",
    "RENDER_RESOURCE_TYPES",
    "HostOverride",
    "Range",
    "RenderMode",
    "check_rules",
    "check_value",
]
