"""``core.policy.urls.registered_domain`` against the Public Suffix List's own tests and
against tldextract (the lookup it replaced) reading the same list (issue #22 item 1): the
tests that start a real server on loopback or a process; the others are in
``tests/unit/test_urls_psl.py``."""

from __future__ import annotations

import subprocess
import sys


def test_a_lookup_loads_neither_tldextract_nor_the_list_before_a_host_name() -> None:
    """``core.policy.urls`` imports no PSL code; an IP address or one label never reads the
    list; the first host name reads it, with no tldextract or requests (3.8 MiB of
    imports and a 5.9 MiB trie in the crawl before)."""
    probe = (
        "import sys\n"
        "from crawldeck.core.policy import urls\n"
        "def held():\n"
        "    return sorted(m for m in ('tldextract', 'requests', 'urllib3', 'filelock',"
        " 'publicsuffixlist') if m in sys.modules)\n"
        "found = urls.registered_domain('127.0.0.1'), urls.registered_domain('localhost')\n"
        "print(held(), *found)\n"
        "found = urls.registered_domain('www.bbc.co.uk'),\n"
        "print(held(), *found)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "[] 127.0.0.1 localhost",
        "['publicsuffixlist'] bbc.co.uk",
    ]
