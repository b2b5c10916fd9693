"""core.render.procmem: the tests that start a real server on loopback or a process; the
others are in ``tests/unit/test_procmem.py``."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from crawldeck.core.render.procmem import (
    find_marked,
    kill_tree,
    proc_parents,
    process_tree,
    pss_bytes,
    rss_bytes,
    tree_memory,
)


@pytest.fixture
def family() -> Iterator[tuple[subprocess.Popen[bytes], int, str]]:
    """A Python parent (with a unique marker argument) that started a child; yields the
    parent, the child's pid and the marker."""
    marker = f"--procmem-test-{os.getpid()}-{id(object()):x}"
    # the child's pid is printed once the child runs Python (it says so): just after
    # its start its memory is not yet a Python's (a loaded machine saw rss under 1 MiB)
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; print(flush=True); "
        "time.sleep(60)'], stdout=subprocess.PIPE)\n"
        "child.stdout.readline()\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code, marker], stdout=subprocess.PIPE)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        yield parent, child, marker
    finally:
        kill_tree(parent.pid)
        parent.wait(timeout=10)
        parent.stdout.close()


def test_proc_readers_on_a_real_process_tree(
    family: tuple[subprocess.Popen[bytes], int, str],
) -> None:
    parent, child, marker = family
    parents = proc_parents()
    assert parents[parent.pid] == os.getpid() and parents[child] == parent.pid
    assert process_tree(parent.pid, parents) == [parent.pid, child]
    assert find_marked(marker) == parent.pid
    assert find_marked(marker + "-nobody") is None
    each = [(rss_bytes(pid), pss_bytes(pid)) for pid in (parent.pid, child)]
    assert all(rss > 1 << 20 and 0 < pss <= rss for rss, pss in each)  # a Python each
    rss, pss = tree_memory([parent.pid])
    # the two are read again, so they may have moved a little; never by a process
    assert rss >= sum(r for r, _ in each) * 0.8 and pss >= sum(p for _, p in each) * 0.8
    assert tree_memory([]) == (0, 0)
    assert (rss_bytes(2**22 + 1), pss_bytes(2**22 + 1)) == (0, 0)  # no such process


def test_kill_tree_ends_the_parent_and_its_child(
    family: tuple[subprocess.Popen[bytes], int, str],
) -> None:
    parent, child, _ = family
    kill_tree(parent.pid)
    assert parent.wait(timeout=10) == -9
    for _ in range(100):  # bounded: the child, reparented, is reaped by init
        if child not in proc_parents():
            break
        with open(f"/proc/{child}/stat", "rb") as f:
            if f.read().split(b") ")[1].startswith(b"Z"):
                break  # killed, a zombie until reaped
        threading.Event().wait(0.05)
    else:
        pytest.fail(f"child {child} still running")
