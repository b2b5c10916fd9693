"""The test tiers (issue #11 item 9): every test is marked by what it starts.

* ``server``: a real server on loopback (``tests/httpserver.py``, ``tests/dnsserver.py``,
  ``tests/rawserver.py``, the local web of ``crawldeck.localweb``, ``redis-server`` from
  ``tests/redisfix.py``, a socket of its own);
* ``process``: a process (the ``crawldeck`` command, parse workers, Chromium, a fresh
  interpreter);
* ``console``: the Textual console in process (``App.run_test``, snapshot pictures),
  a second or more a test;
* ``heavy``: pure logic on big inputs (10^5-10^6 URLs or rows, memory bounds), named in
  ``HEAVY``;
* ``slow``: any of them. ``pytest -m "not slow"`` is the fast tier (pure logic, the
  store, the engine on virtual time); plain ``pytest`` runs both tiers.

Nobody writes these marks on a test, so they cannot drift: at collection a test is
marked when its code, the code of the fixtures it uses, or the code of any function or
class of ``tests/`` that these name (followed to the end) names a helper that starts a
server, a process or the console (``SERVER_NAMES``, ``PROCESS_NAMES``,
``CONSOLE_NAMES``), and ``HEAVY`` must name tests that exist. A test left unmarked runs
under a guard: binding or listening on a socket, or starting a process, fails it with a
message that names the call, so a name missing from these lists shows up as a failing
test (``tests/unit/test_tiers.py`` checks both halves).

The folders hold the tiers (issue #24 item 8): ``tests/unit/`` the tests with no mark but
``heavy`` (pure logic, the store, the engine on virtual time), ``tests/loopback/`` those
that start a server or a process, ``tests/console/`` those that run the console; the
helpers they share (servers, fakes, kits) stay at the top of ``tests/``. The marks are the
guard of the layout: collection fails when a test is not in its tier's folder, so a test
that starts using a server has to move with its new tier. A file split over two tiers
keeps its name in each folder (``tests/unit/test_dns.py``, ``tests/loopback/test_dns.py``).
"""

from __future__ import annotations

import fcntl
import functools
import gc
import inspect
import logging
import os
import shutil
import socket
import subprocess
import sys
import types
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest

#: ``redisfix``: the ``redis_server`` and ``redis_cluster`` fixtures (real redis-server);
#: ``hangfix``: a hung test's asyncio tasks printed with pytest-timeout's stacks.
pytest_plugins = ["pytester", "redisfix", "hangfix"]

TESTS = Path(__file__).resolve().parent

#: pytest keeps each test module's assert-rewritten code as a ``.pyc`` beside it, unless
#: the interpreter writes no bytecode: with ``PYTHONDONTWRITEBYTECODE=1`` (this
#: machine's shells set it) every run, and every xdist worker of it, rewrote the ~340
#: modules again, 7 s of a 9 s collection (issue #24 item 8: a fast tier). The suite
#: writes its own caches (``__pycache__/``, ignored by git) whatever the shell says.
sys.dont_write_bytecode = False

#: Hypothesis on a loaded machine (issue #22 item 2): no example has a time limit (the
#: default 200 ms deadline is a wall-clock bound: an example that waited for the CPU
#: failed it) and a slow generation is no health failure. A test's own ``@settings``
#: sets its example count only.
hypothesis.settings.register_profile(
    "crawldeck", deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow]
)
hypothesis.settings.load_profile("crawldeck")

#: Names whose use means a server on loopback: the test servers and the local web, Redis
#: (``tests/redisfix.py``, ``crawldeck.core.cluster.server``), and the calls that open a
#: listening or bound socket.
SERVER_NAMES = frozenset(
    {
        "HTTPTestServer",
        "StubDnsServer",
        "DnsmasqServer",
        "RawServer",
        "free_port",
        "LocalWeb",
        "HostServer",
        "start_hosts",
        "serve_static",
        "StaticSite",
        "PrivateRedis",
        "LoopbackRedis",
        "LocalRedisCluster",
        "redis_server",
        "redis_cluster",
        "start_server",
        "start_unix_server",
        "create_server",
        "create_datagram_endpoint",
        "ThreadingHTTPServer",
        "HTTPServer",
        "AttachServer",
        "serve_web",
        "AppRunner",
        "bind",
        "listen",
    }
)
#: Names whose use means a process: ``subprocess`` (the CLI, a fresh interpreter), the
#: parse workers, Chromium (through Playwright), the WARC writer's process.
PROCESS_NAMES = frozenset(
    {
        "subprocess",
        "runpytest_subprocess",
        "WarcWriter",
        "create_subprocess_exec",
        "create_subprocess_shell",
        "multiprocessing",
        "fork",
        "ParsePool",
        "BrowserPool",
        "RenderPool",
        "async_playwright",
    }
)


#: Names whose use means the Textual console running in process.
CONSOLE_NAMES = frozenset({"run_test", "snap_compare", "run_console", "run_cluster_console"})

#: Pure tests on big inputs, ``file::function`` (every parameter set): 2-20 s each on
#: the 2-core machine, about two thirds of the pure tests' time together.
HEAVY = frozenset(
    {
        "unit/test_export.py::test_export_streams_in_bounded_memory",
        "unit/test_export_atomic.py::test_the_new_file_replaces_the_old_with_its_mode_and_links_are_followed",
        "unit/test_links.py::test_invalid_bytes_anywhere_outside_an_href_keep_every_link",
        "unit/test_redirect_growth.py::test_every_repetition_hop_is_flagged",
        "unit/test_redirect_growth.py::test_legitimate_chains_are_never_flagged_twice",
        "unit/test_trap_calendars.py::test_an_endless_calendar_with_month_and_day_views_costs_two_budgets",
        "unit/test_trap_calendars.py::test_hostile_dated_urls_are_cheap",
        "unit/test_trap_calendars.py::test_memory_is_bounded_with_a_million_templates",
        "unit/test_traps.py::test_long_and_hostile_urls_are_cheap",
        "unit/test_urls.py::test_clean_and_normalize_are_idempotent",
        "unit/test_urls.py::test_cleaned_paths_have_no_dot_segments",
        "unit/test_urls.py::test_long_urls_are_linear_and_fast",
        "unit/test_urls.py::test_normalize_fast_path_agrees_with_the_general_path",
        "unit/test_urls_properties.py::test_clean_properties_on_200k_generated_links",
        "unit/test_urls_properties.py::test_clean_properties_on_hostile_links",
    }
)

KINDS = (("server", SERVER_NAMES), ("process", PROCESS_NAMES), ("console", CONSOLE_NAMES))


@pytest.hookimpl(tryfirst=True)  # before -m and -k select on the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test ``server``, ``process``, ``console``, ``heavy`` and ``slow``.

    In a tree with the tier folders (``TIER_FOLDERS``), each test must sit in its tier's
    folder (``_tier``): the folders are the layout, the marks the guard that keeps it.

    Raises:
        pytest.UsageError: a test is not in its tier's folder; or ``HEAVY`` names a test
            function that its file, collected, does not have (renamed or removed: the list
            must follow).
    """
    names = _NameFinder()
    modules: dict[str, object] = {}
    misplaced: list[str] = []
    layout = all((TESTS / folder).is_dir() for folder in TIER_FOLDERS)
    for item in items:
        used = set(names.of(_test_function(item))) | set(getattr(item, "fixturenames", ()))
        for fixturedefs in _fixture_defs(item):
            for fixturedef in fixturedefs:
                if fixturedef.func is not _guard:
                    used |= names.of(fixturedef.func)
        kinds = [kind for kind, known in KINDS if used & known]
        where = item.path.relative_to(TESTS).as_posix()
        key = f"{where}::{getattr(item, 'originalname', item.name)}"
        modules[where] = getattr(item, "module", None)
        if key in HEAVY:
            kinds.append("heavy")
        for kind in kinds:
            item.add_marker(kind)
        if kinds:
            item.add_marker("slow")
        tier = _tier(kinds)
        if layout and where.split("/")[0] != tier:
            misplaced.append(f"{where}::{item.name} belongs in tests/{tier}/")
    if misplaced:
        raise pytest.UsageError(
            "tests in the wrong tier's folder (the marks say where a test belongs): "
            + "; ".join(misplaced[:5])
        )
    # The longest first, so that workers end together (xdist hands tests out in this
    # order): the heavy sweeps, then the tests with servers, processes or a console, then
    # the fast tier's thousands of short ones, which fill the gaps. Stable: a module's
    # tests keep their order and their module fixtures.
    items.sort(
        key=lambda item: 0 if "heavy" in item.keywords else int("slow" not in item.keywords) + 1
    )
    missing = [
        key
        for key in sorted(HEAVY)
        if key.split("::")[0] in modules
        and not hasattr(modules[key.split("::")[0]], key.split("::")[1])
    ]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py HEAVY names no test: {sorted(missing)}")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Take what collection made (the modules, the items, their marks: about 180 000
    objects that live to the end) out of the cyclic GC's full passes (``gc.freeze``),
    after one collection of the garbage among it. Each full pass walked all of them:
    1.8 s of the fast tier's CPU on two workers went to 20 full passes, 0.9 s now (issue
    #24 item 8). The tests' own objects are collected as before."""
    gc.collect()
    gc.freeze()


#: The folder of each tier under ``tests/`` (issue #24 item 8): the pure tests, the store
#: and the engine on virtual time; real servers on loopback and processes; the console.
TIER_FOLDERS = ("unit", "loopback", "console")


def _tier(kinds: list[str]) -> str:
    """The folder a test with these marks belongs in: ``console`` if it runs the console
    (a console test may also start a server), else ``loopback`` if it starts a server or a
    process, else ``unit`` (``heavy`` pure tests included: they are pure, only big)."""
    if "console" in kinds:
        return "console"
    if "server" in kinds or "process" in kinds:
        return "loopback"
    return "unit"


def _guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail a test not marked ``slow`` that binds or listens on a socket or starts a
    process (the call raises ``pytest.fail``, and so does the teardown if a thread made
    it and swallowed the failure). A module's own probe while it is being imported
    (urllib3 binds ``::1`` to learn whether IPv6 works) is let through."""
    if request.node.get_closest_marker("slow") is not None:
        yield
        return
    made: list[str] = []

    def refuse(owner: object, name: str, what: str) -> None:
        original = getattr(owner, name)

        def guard(*args: Any, **kwargs: Any) -> Any:
            if _importing():
                return original(*args, **kwargs)
            made.append(what)
            pytest.fail(_refusal(request.node.nodeid, what), pytrace=False)

        monkeypatch.setattr(owner, name, guard)

    refuse(socket.socket, "bind", "binds a socket (socket.bind)")
    refuse(socket.socket, "listen", "listens on a socket (socket.listen)")
    refuse(subprocess.Popen, "__init__", "starts a process (Popen)")
    refuse(os, "fork", "forks (os.fork)")
    yield
    if made and not request.node.stash.get(_CALL_FAILED, False):
        pytest.fail(_refusal(request.node.nodeid, made[0]), pytrace=False)


fast_tier_guard = pytest.fixture(autouse=True)(_guard)


@pytest.fixture(autouse=True)
def _machine_share(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Under pytest-xdist, a test marked ``exclusive`` runs with no other test running:
    its measure is taken at a real server in real time (per-IP gaps, round trips a
    page), and the other test workers' load moved it (issue #24 item 8: on four workers
    a gap of 88 ms for 200 ms, 1.22 round trips a page for at most 1.1). A lock with
    two files beside the workers' temporary folders, writer first: every other test
    holds ``exclusive.run`` shared; an exclusive one takes ``exclusive.gate`` (no test
    starts meanwhile), then ``exclusive.run`` alone once the tests running have ended.
    Run without workers, nothing to do."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    folder = tmp_path_factory.getbasetemp().parent
    alone = request.node.get_closest_marker("exclusive") is not None
    with (folder / "exclusive.gate").open("a") as gate, (folder / "exclusive.run").open("a") as run:
        fcntl.flock(gate, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        fcntl.flock(run, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield


@pytest.fixture(autouse=True)
def _crawldeck_logger_level() -> Iterator[None]:
    """Give the ``crawldeck`` logger its level back after each test: the CLI's ``main``,
    called in process by the CLI tests, sets it to ERROR for the rest of the process,
    which hid the warnings a later test's ``caplog`` looks for."""
    logger = logging.getLogger("crawldeck")
    level = logger.level
    yield
    logger.setLevel(level)


#: Whether a test's call failed (the guard's teardown does not report it twice).
_CALL_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Remember whether the call phase failed, for the guard's teardown."""
    report = yield
    if report.when == "call":
        item.stash[_CALL_FAILED] = report.failed
    return report


def _importing() -> bool:
    """Whether the caller runs inside an ``import`` (a frame of importlib's bootstrap is
    on the stack)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _refusal(nodeid: str, what: str) -> str:
    return (
        f"{nodeid} {what} but is in the fast tier: name the helper that does it in "
        f"SERVER_NAMES or PROCESS_NAMES of tests/conftest.py"
    )


def _test_function(item: pytest.Item) -> object:
    """The function a test item runs (under Hypothesis's ``@given`` wrapper)."""
    function = getattr(item, "obj", None)
    inner = getattr(getattr(function, "hypothesis", None), "inner_test", None)
    return inner if inner is not None else function


def _fixture_defs(item: pytest.Item) -> list[Any]:
    """The definitions of every fixture the item uses (directly or through others)."""
    info = getattr(item, "_fixtureinfo", None)
    return list(info.name2fixturedefs.values()) if info is not None else []


class _NameFinder:
    """The names (globals and attributes) that a function's code uses, with those of
    every function and class of ``tests/`` it names, followed to the end (memoized)."""

    def __init__(self) -> None:
        self._done: dict[types.CodeType, frozenset[str]] = {}

    def of(self, obj: object) -> frozenset[str]:
        """The names ``obj`` (a function, method or class) uses; empty for code outside
        ``tests/`` (crawldeck, pytest, libraries)."""
        found: set[str] = set()
        for function in self._functions(obj):
            found |= self._of_function(function)
        return frozenset(found)

    def _functions(self, obj: object) -> list[types.FunctionType]:
        if isinstance(obj, type):
            module = sys.modules.get(obj.__module__)
            if not _in_tests(getattr(module, "__file__", None)):
                return []
            out: list[types.FunctionType] = []
            for member in vars(obj).values():
                if isinstance(member, staticmethod | classmethod):
                    member = member.__func__
                elif isinstance(member, property):
                    member = member.fget
                out += self._functions(member)
            return out
        if isinstance(obj, types.MethodType):
            obj = obj.__func__
        if callable(obj) and hasattr(obj, "__wrapped__"):
            obj = inspect.unwrap(obj)
        if isinstance(obj, types.FunctionType) and _in_tests(obj.__code__.co_filename):
            return [obj]
        return []

    def _of_function(self, function: types.FunctionType) -> frozenset[str]:
        code = function.__code__
        if code in self._done:
            return self._done[code]
        self._done[code] = frozenset()  # a cycle adds nothing more
        names = _code_names(code)
        found = set(names)
        for name in names:
            target = function.__globals__.get(name)
            if target is not None and target is not function:
                found |= self.of(target)
        self._done[code] = frozenset(found)
        return self._done[code]


def _code_names(code: types.CodeType) -> set[str]:
    """Every global and attribute name of ``code`` and of the code nested in it."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


@functools.cache  # some 35 000 calls on a few hundred file names at each collection
def _in_tests(filename: str | None) -> bool:
    return filename is not None and Path(filename).resolve().is_relative_to(TESTS)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl CLI): ``(cert, key)`` files,
    for the TLS servers of the fetcher tests."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("openssl is not installed (Debian: apt-get install openssl)")
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key
