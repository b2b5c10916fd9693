"""What every request carries besides the URL: extra headers, a proxy, credentials.

``RequestOptions.from_config(config)`` reads, once at start, what the fetcher
(``core.net.fetcher.AiohttpFetcher``) applies to each request, robots.txt and sitemaps
included: the config keys (checked by ``core.policy.request_checks``), the environment
(``password_env``; with ``trust_env = true`` the ``HTTP_PROXY``/``HTTPS_PROXY``/
``NO_PROXY`` variables) and, with ``netrc = true``, the ``$NETRC`` or ``~/.netrc`` file.

Credentials: HTTP Basic (RFC 7617), chosen per request from that request's URL: the
``auth`` entry of exactly its origin (scheme, host and port: RFC 7617's protection
space), else the netrc ``machine`` of its host name (any port and scheme, as curl and
requests read netrc; the ``default`` entry is ignored: it would go to every host). The
fetcher follows no redirect itself (each hop is a new fetch of its own URL), so
credentials never reach another origin (another host, for netrc), a redirect's target
included. They are sent with the first request (no 401 round trip), as ``curl -u`` does.

Proxy: the config's ``proxy`` for http and https URLs (``CONNECT`` for https); else,
with ``trust_env``, the environment's ``HTTP_PROXY``/``HTTPS_PROXY`` (either case, as
``urllib.request.getproxies_environment`` reads them; a bare ``host:port`` is taken as
``http://``); with ``trust_env``, ``NO_PROXY`` names the hosts reached directly, through
the config's ``proxy`` too (``bypasses``: as curl reads it). Only HTTP
proxies (``http://``); ``ALL_PROXY`` is not read. An environment proxy URL may carry
credentials (``http://user:pw@proxy:3128``), sent to the proxy as
``Proxy-Authorization``.
"""

from __future__ import annotations

import ipaddress
import netrc
import os
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from crawldeck.core.errors import ConfigError
from crawldeck.core.policy.request_checks import split_proxy

if TYPE_CHECKING:
    from crawldeck.core.config import CrawlConfig


def origin_key(scheme: str, host: str, port: int | None) -> str:
    """``scheme://host[:port]``: lowercased, trailing dot dropped, the scheme's default
    port left out, IPv6 in brackets; the form ``auth`` entries and request URLs are
    matched in. ``host`` as ``urlsplit(...).hostname`` gives it. Never raises."""
    scheme = scheme.lower()
    host = host.lower().rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    default = 443 if scheme == "https" else 80
    return f"{scheme}://{host}" if port in (None, default) else f"{scheme}://{host}:{port}"


@dataclass(frozen=True, slots=True)
class Proxy:
    """One HTTP proxy.

    Attributes:
        url: ``http://host[:port]``, without credentials.
        host: its host name or IP literal (lowercase, IPv6 without brackets).
        user, password: its Basic credentials (from an environment URL), or ``None``.
    """

    url: str
    host: str
    user: str | None = None
    password: str | None = None


def _proxy_of(value: str, where: str) -> Proxy:
    """The ``Proxy`` of a proxy URL (a bare ``host:port`` taken as ``http://``);
    ``where`` names the key or variable in errors.

    Raises:
        ConfigError: not an ``http://host[:port]`` URL.
    """
    if "://" not in value:
        value = "http://" + value
    parts = split_proxy(value, where)
    host = (parts.hostname or "").lower()
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}" + (f":{parts.port}" if parts.port is not None else "")
    if parts.username is None:
        return Proxy(url, host)
    return Proxy(url, host, unquote(parts.username), unquote(parts.password or ""))


@dataclass(frozen=True, slots=True)
class RequestOptions:
    """What the fetcher adds to each request (``from_config``; the empty default adds
    nothing).

    Attributes:
        headers: the ``header`` key's ``(name, value)`` pairs, sent with every request.
        credentials: origin (``origin_key``) -> ``(user, password)`` from ``auth``.
        netrc: host name (lowercase) -> ``(user, password)`` from the netrc file,
            ``default`` left out; ``None`` when ``netrc`` is off.
        proxies: scheme (``http``, ``https``) -> the ``Proxy`` its requests go through.
        no_proxy: the ``NO_PROXY`` value (with ``trust_env``), ``""`` for none.
    """

    headers: tuple[tuple[str, str], ...] = ()
    credentials: Mapping[str, tuple[str, str]] | None = None
    netrc: Mapping[str, tuple[str, str]] | None = None
    proxies: Mapping[str, Proxy] | None = None
    no_proxy: str = ""

    @classmethod
    def from_config(cls, config: CrawlConfig) -> RequestOptions:
        """The options of ``config``'s ``header``, ``proxy``, ``auth``, ``trust_env``
        and ``netrc`` keys, with this process's environment and the netrc file
        (``$NETRC``, else ``~/.netrc``).

        Raises:
            ConfigError: a ``password_env`` variable that is not set; ``netrc = true``
                and the file missing, unreadable or not valid netrc (its line named);
                with ``trust_env``, a proxy variable that is not an ``http://`` URL.
        """
        env = os.environ
        credentials: dict[str, tuple[str, str]] = {}
        for origin, user, variable in config.auth:
            password = env.get(variable)
            if password is None:
                raise ConfigError(
                    f"config key 'auth': {origin!r}: the environment variable {variable!r} "
                    "(password_env) is not set"
                )
            parts = urlsplit(origin)
            credentials[origin_key(parts.scheme, parts.hostname or "", parts.port)] = (
                user,
                password,
            )
        proxies: dict[str, Proxy] = {}
        no_proxy = ""
        if config.trust_env:
            found = urllib.request.getproxies_environment()
            for scheme in ("http", "https"):
                if found.get(scheme):
                    where = f"environment variable {scheme.upper()}_PROXY"
                    proxies[scheme] = _proxy_of(found[scheme], where)
            no_proxy = found.get("no", "")
        if config.proxy is not None:
            chosen = _proxy_of(config.proxy, "config key 'proxy'")
            proxies = {"http": chosen, "https": chosen}
        return cls(
            headers=config.header,
            credentials=credentials or None,
            netrc=_read_netrc(env) if config.netrc else None,
            proxies=proxies or None,
            no_proxy=no_proxy,
        )

    @property
    def proxy_hosts(self) -> frozenset[str]:
        """The host names and literals of every proxy (lowercase)."""
        return frozenset(proxy.host for proxy in (self.proxies or {}).values())

    def proxy_for(self, scheme: str, host: str, port: int | None) -> Proxy | None:
        """The proxy a request to ``scheme://host:port`` goes through; ``None``: direct
        (no proxy for the scheme, or ``NO_PROXY`` names the host). ``host`` lowercase,
        IPv6 without brackets. Never raises."""
        if self.proxies is None:
            return None
        chosen = self.proxies.get(scheme)
        if chosen is None:
            return None
        if self.no_proxy and bypasses(self.no_proxy, host, port):
            return None
        return chosen

    def credentials_for(self, scheme: str, host: str, port: int | None) -> tuple[str, str] | None:
        """The ``(user, password)`` for a request to ``scheme://host:port`` (``host``
        lowercase, IPv6 without brackets): the ``auth`` entry of exactly that origin,
        else the netrc ``machine`` of that host name, else ``None``. Never raises."""
        if self.credentials is not None:
            found = self.credentials.get(origin_key(scheme, host, port))
            if found is not None:
                return found
        if self.netrc is not None:
            return self.netrc.get(host.lower().rstrip("."))
        return None


def bypasses(no_proxy: str, host: str, port: int | None) -> bool:
    """Whether the ``NO_PROXY`` value ``no_proxy`` names ``host`` (lowercase, IPv6
    without brackets) on ``port``, as curl reads it: entries split by commas or
    spaces; ``*`` names every host; a name names itself and its subdomains (a leading
    ``.`` or ``*.`` ignored); an IP address itself; an IP network in CIDR form
    (``127.0.0.0/8``) the addresses in it; an entry with ``:port`` only that port.
    Entries that are none of these are ignored. Never raises."""
    host = host.rstrip(".")
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for raw in no_proxy.replace(" ", ",").split(","):
        entry = raw.strip().lower()
        if entry == "*":
            return True
        wanted: int | None = None
        if entry.startswith("["):  # [v6] or [v6]:port
            entry, _, rest = entry[1:].partition("]")
            if rest.startswith(":") and rest[1:].isdigit():
                wanted = int(rest[1:])
        elif entry.count(":") == 1:  # name:port or v4:port
            entry, _, text = entry.partition(":")
            wanted = int(text) if text.isdigit() else -1
        if not entry or (wanted is not None and wanted != port):
            continue
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            network = None
        if network is not None:
            if address is not None and address in network:
                return True
            continue
        name = entry.removeprefix("*.").removeprefix(".").rstrip(".")
        if name and (host == name or host.endswith("." + name)):
            return True
    return False


def _read_netrc(env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """The machines of the netrc file (``$NETRC``, else ``~/.netrc``): host name ->
    (login, password); ``default`` and entries without a login left out.

    Raises:
        ConfigError: the file is missing, unreadable or not valid netrc.
    """
    path = Path(env["NETRC"]) if env.get("NETRC") else Path.home() / ".netrc"
    try:
        parsed = netrc.netrc(str(path))
    except FileNotFoundError:
        raise ConfigError(f"netrc file {str(path)!r} does not exist") from None
    except netrc.NetrcParseError as exc:
        raise ConfigError(f"netrc file {str(path)!r} line {exc.lineno}: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"netrc file {str(path)!r} cannot be read: {exc}") from None
    return {
        host.lower(): (login, password)
        for host, (login, _account, password) in parsed.hosts.items()
        if host != "default" and login
    }


__all__ = ["Proxy", "RequestOptions", "bypasses", "origin_key"]
