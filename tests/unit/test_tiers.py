"""The tiers of ``tests/conftest.py``: tests are marked by what they start, and the fast
tier cannot hold a test that starts a server or a process.

Each check runs a small test file in an inner pytest session (``pytester``) with the
real ``tests/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = Path(__file__).parents[1] / "conftest.py"

MARKS = """
[pytest]
addopts = --strict-markers -p no:textual-snapshot -p no:cacheprovider
asyncio_default_fixture_loop_scope = function
markers =
    server: s
    process: p
    console: c
    heavy: h
    slow: any
"""

USES = """
import subprocess
from httpserver import HTTPTestServer


def start() -> None:
    with HTTPTestServer():
        pass


def test_pure() -> None:
    assert 1 + 1 == 2


def test_server_in_a_helper() -> None:
    start()


def test_process() -> None:
    subprocess.run(["true"], check=True)
"""

HIDDEN = """
import importlib
import socket


def test_a_server_by_another_name() -> None:
    with socket.socket() as s:
        getattr(s, "bi" + "nd")(("127.0.0.1", 0))


def test_a_process_by_another_name() -> None:
    getattr(importlib.import_module("sub" + "process"), "r" + "un")(["true"])
"""


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(MARKS)
    pytester.makeconftest(CONFTEST.read_text())
    pytester.syspathinsert(CONFTEST.parent)  # the helpers: httpserver
    return pytester


def test_marks_follow_what_the_code_starts(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_uses=USES)
    fast = inner.runpytest_inprocess("-m", "not slow")
    fast.assert_outcomes(passed=1, deselected=2)
    server = inner.runpytest_inprocess("-m", "server", "--collect-only", "-q")
    assert "test_uses.py::test_server_in_a_helper" in server.stdout.str()
    assert "test_uses.py::test_process" not in server.stdout.str()
    process = inner.runpytest_inprocess("-m", "process and slow", "--collect-only", "-q")
    assert "test_uses.py::test_process" in process.stdout.str()


def test_the_fast_tier_fails_a_test_that_starts_a_server_or_a_process(
    inner: pytest.Pytester,
) -> None:
    inner.makepyfile(test_hidden=HIDDEN)
    result = inner.runpytest_inprocess("-m", "not slow")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "binds a socket (socket.bind) but is in the fast tier" in out
    assert "starts a process (Popen) but is in the fast tier" in out


def test_a_probe_while_a_module_is_imported_is_let_through(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        probe="import socket\n\nwith socket.socket() as s:\n    s.bind(('127.0.0.1', 0))\n",
        test_probe="def test_import() -> None:\n    import probe  # noqa: F401\n",
    )
    inner.runpytest_inprocess("-m", "not slow").assert_outcomes(passed=1)


def test_heavy_must_name_tests_that_exist(pytester: pytest.Pytester) -> None:
    pytester.makeini(MARKS)
    # the real conftest, with one HEAVY name that its file does not have
    extra = '\nHEAVY = HEAVY | {"test_heavy_probe.py::test_renamed"}\n'
    pytester.makeconftest(CONFTEST.read_text() + extra)
    pytester.makepyfile(test_heavy_probe="def test_something_else() -> None:\n    pass\n")
    result = pytester.runpytest_inprocess("--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "HEAVY names no test: ['test_heavy_probe.py::test_renamed']" in result.stderr.str()


def test_with_the_tier_folders_a_test_must_sit_in_its_tiers_folder(
    inner: pytest.Pytester,
) -> None:
    for folder in ("unit", "loopback", "console"):
        inner.mkpydir(folder)
    (inner.path / "unit" / "test_uses.py").write_text(USES)
    # importlib mode: this session has its own packages named ``unit`` and ``loopback``
    result = inner.runpytest_inprocess("--collect-only", "-q", "--import-mode=importlib")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "unit/test_uses.py::test_server_in_a_helper belongs in tests/loopback/" in err
    assert "unit/test_uses.py::test_process belongs in tests/loopback/" in err
    assert "test_pure" not in err  # a pure test is where it belongs

    (inner.path / "unit" / "test_uses.py").write_text(USES.split("def test_server")[0])
    (inner.path / "loopback" / "test_uses.py").write_text(
        USES.replace("def test_pure()", "def pure()")
    )
    placed = inner.runpytest_inprocess("--collect-only", "-q", "--import-mode=importlib")
    assert placed.ret == pytest.ExitCode.OK
    assert "3 tests collected" in placed.stdout.str()
