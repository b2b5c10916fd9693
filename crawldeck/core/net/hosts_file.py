"""The static host table, ``/etc/hosts``, read as getaddrinfo's "files" source reads it.

wget, curl and a browser resolve a name through the C library, whose default order on
Linux is ``hosts: files dns`` (nsswitch.conf(5)): a name listed in ``/etc/hosts`` is
answered from it and never sent to a DNS server. crawldeck resolves with c-ares
queries (``core.net.dns``), which never read the file; ``AiodnsResolver`` asks this
table first, so a name a user put there for a test server resolves as it does for
their other tools (issue #25 trial 18: it went to the DNS server of
``/etc/resolv.conf``, off the machine, and the host was marked dead).

The format is hosts(5)'s: one line per address, ``ADDRESS NAME [ALIAS...]``, fields
separated by blanks, ``#`` to the end of a line a comment. Names are matched without
case (RFC 4343) and without a trailing dot; a name on several lines has all their
addresses, in file order (glibc's ``multi on``, Debian's default in
``/etc/host.conf``). A line whose address does not parse is skipped, as glibc skips
it. The file is read again when its modification time, size or inode change
(checked at every lookup: one ``stat``); a missing or unreadable file is an empty
table. Reading and parsing run in a thread, so a large file (ad-blocking lists run
to hundreds of thousands of lines) never stalls the event loop.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os

#: Where the C library reads its static host table (hosts(5)).
DEFAULT_PATH = "/etc/hosts"

#: ``(IPv4 addresses, IPv6 addresses)`` of one name, each in file order, no repeats.
Listed = tuple[tuple[str, ...], tuple[str, ...]]


def parse_hosts(text: str) -> dict[str, Listed]:
    """The table of a hosts(5) file's text.

    Args:
        text: the file's content (decoded; a byte that is not UTF-8 is best replaced).

    Returns:
        name (lower case, no trailing dot) -> ``(IPv4 addresses, IPv6 addresses)``,
        each address in its canonical text form (``ipaddress``), in file order and
        without repeats. A name listed for one family only has an empty tuple for the
        other. Lines with no name or an address that does not parse are skipped.
        Never raises.
    """
    v4: dict[str, dict[str, None]] = {}
    v6: dict[str, dict[str, None]] = {}
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) < 2:
            continue
        try:
            address = ipaddress.ip_address(fields[0])
        except ValueError:
            continue
        table = v4 if address.version == 4 else v6
        for raw in fields[1:]:
            name = raw.rstrip(".").lower()
            if name:
                table.setdefault(name, {})[str(address)] = None
    return {
        name: (tuple(v4.get(name, ())), tuple(v6.get(name, ())))
        for name in dict.fromkeys([*v4, *v6])
    }


class HostsFile:
    """The static host table of one file, read again when the file changes.

    Args:
        path: the file, ``/etc/hosts`` by default (``DEFAULT_PATH``).

    Safe to share between the tasks of one event loop; one reading at a time.
    """

    def __init__(self, path: str = DEFAULT_PATH) -> None:
        self._path = path
        self._stamp: tuple[int, int, int] | None = None
        self._table: dict[str, Listed] = {}
        self._lock = asyncio.Lock()

    async def lookup(self, name: str) -> Listed | None:
        """What the file lists for ``name``.

        Args:
            name: a host name (any case, a trailing dot allowed).

        Returns:
            ``(IPv4 addresses, IPv6 addresses)``, one of them possibly empty, or
            ``None`` when the file lists no address for the name (or is missing or
            unreadable). Never raises.
        """
        await self._refresh()
        return self._table.get(name.rstrip(".").lower())

    async def _refresh(self) -> None:
        """Read the file again if its stamp (mtime in ns, size in bytes, inode) moved."""
        try:
            st = os.stat(self._path)
            stamp: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = None
        if stamp == self._stamp:
            return
        async with self._lock:
            if stamp == self._stamp:
                return  # another lookup read it while this one waited
            self._table = await asyncio.to_thread(self._read) if stamp is not None else {}
            self._stamp = stamp

    def _read(self) -> dict[str, Listed]:
        try:
            with open(self._path, encoding="utf-8", errors="replace") as f:
                return parse_hosts(f.read())
        except OSError:
            return {}


__all__ = ["DEFAULT_PATH", "HostsFile", "Listed", "parse_hosts"]
