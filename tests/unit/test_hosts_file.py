"""The static host table (``core.net.hosts_file``) and ``AiodnsResolver`` asking it first.

Issue #25 trial 18: a name a wget user listed in ``/etc/hosts`` for a test server went
to the DNS server of ``/etc/resolv.conf`` and its host was marked dead. The end-to-end
check, a crawl in a mount namespace with its own ``/etc/hosts``, is
``tests/loopback/test_hosts_file.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

from crawldeck.core.net.dns import AiodnsResolver, Answer
from crawldeck.core.net.hosts_file import HostsFile, parse_hosts

HOSTS = """\
# The machine's own names
127.0.0.1\tlocalhost
::1     localhost ip6-localhost ip6-loopback   # both loopback names
10.0.0.7  Www.Example.TEST. example.test  # mixed case and a trailing dot
10.0.0.8  www.example.test
10.0.0.7  www.example.test
2001:DB8:0:0::1  www.example.test
not-an-address  broken.test
10.0.0.9
   # a comment after blanks
10.0.0.300  bad-octet.test
"""


def test_hosts_5_lines_become_a_table_of_both_families() -> None:
    table = parse_hosts(HOSTS)
    assert table == {
        "localhost": (("127.0.0.1",), ("::1",)),
        "ip6-localhost": ((), ("::1",)),
        "ip6-loopback": ((), ("::1",)),
        # every line naming it, in file order, each address once, IPv6 canonical
        "www.example.test": (("10.0.0.7", "10.0.0.8"), ("2001:db8::1",)),
        "example.test": (("10.0.0.7",), ()),
    }


def test_an_empty_or_comment_only_file_is_an_empty_table() -> None:
    assert parse_hosts("") == {}
    assert parse_hosts("# nothing\n\n  \t\n") == {}


async def test_lookup_is_case_blind_and_reads_the_file_again_when_it_changes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hosts"
    path.write_text("10.0.0.1 a.test\n")
    hosts = HostsFile(str(path))
    assert await hosts.lookup("A.Test.") == (("10.0.0.1",), ())
    assert await hosts.lookup("b.test") is None
    path.write_text("10.0.0.2 a.test b.test\n")
    os.utime(path, ns=(1, 1))  # a stamp unlike the first write's, whatever the clock
    assert await hosts.lookup("a.test") == (("10.0.0.2",), ())
    assert await hosts.lookup("b.test") == (("10.0.0.2",), ())
    path.unlink()
    assert await hosts.lookup("a.test") is None  # gone: an empty table, no error


async def test_an_unreadable_path_is_an_empty_table(tmp_path: Path) -> None:
    hosts = HostsFile(str(tmp_path))  # a directory: stat works, open fails
    assert await hosts.lookup("a.test") is None


async def test_the_resolver_answers_a_listed_name_without_asking_its_server(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hosts"
    path.write_text("10.0.0.1 v4.test\n2001:db8::2 v6.test\n")
    # a server that cannot answer (loopback's discard port, nothing listening): a query
    # sent to it would be refused or time out, and raise DnsTemporaryFailure
    resolver = AiodnsResolver(["127.0.0.1:9"], 0.2, HostsFile(str(path)))
    try:
        assert await resolver.query("v4.test", "A") == Answer("ok", ("10.0.0.1",))
        assert await resolver.query("V4.TEST", "AAAA") == Answer("nodata")
        assert await resolver.query("v6.test", "AAAA") == Answer("ok", ("2001:db8::2",))
        assert await resolver.query("v6.test", "A") == Answer("nodata")
    finally:
        await resolver.close()
