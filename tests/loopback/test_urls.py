"""Tests of core.policy.urls: the tests that start a real server on loopback or a process;
the others are in ``tests/unit/test_urls.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_public_suffix_list_never_touches_network_or_disk(tmp_path: Path) -> None:
    code = (
        "import socket\n"
        "def refuse(*a, **k):\n"
        "    raise AssertionError('network used')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "from crawldeck.core.policy.urls import registered_domain\n"
        "print(registered_domain('www.bbc.co.uk'), registered_domain('x.github.io'))\n"
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(home / "cache")}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["bbc.co.uk", "x.github.io"]
    assert list(home.iterdir()) == []  # no cache directory written
