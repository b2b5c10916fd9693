"""The stage table of ``benchmarks/stage_profile.py`` (issue #23 item 1): every module of
``core/``, ``cli/`` and ``tui/`` is charged to a stage, so a new module cannot fall out of the
profile unseen, and the rules that charge a sampled stack to a stage give the stage a
reader expects. Pure logic on hand-written stacks: no crawl, no profiler, no timing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"


def _load(name: str) -> ModuleType:
    """Import ``benchmarks/NAME.py`` (benchmarks/ is no package; its modules import each
    other by bare name, as when run as scripts)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


sp = _load("stage_profile")


def _modules(package: str) -> list[str]:
    """The dotted names of every ``.py`` file under ``ROOT/crawldeck/package``, from
    ``package`` down (a package's ``__init__`` by the package's name)."""
    names = []
    for path in sorted((ROOT / "crawldeck" / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT / "crawldeck").with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


@pytest.mark.parametrize("package", ["core", "cli", "tui"])
def test_every_module_has_a_stage(package: str) -> None:
    modules = _modules(package)
    assert len(modules) > (40 if package == "core" else 5)  # the walk found the tree
    missing = [m for m in modules if m not in sp.STAGE_OF_MODULE and package == "core"]
    assert missing == [], f"add these modules to stage_profile.STAGE_OF_MODULE: {missing}"
    for module in modules:
        assert sp.stage_of(module) in sp.STAGES, module


def test_the_table_names_no_module_that_is_gone_and_only_known_stages() -> None:
    existing = set(_modules("core")) | set(_modules("cli")) | set(_modules("tui"))
    assert sorted(set(sp.STAGE_OF_MODULE) - existing) == []
    tables = (sp.STAGE_OF_MODULE, sp.STAGE_OF_LIBRARY, sp.STICKY, sp.STAGE_OF_THREAD)
    assert {stage for table in tables for stage in table.values()} <= set(sp.STAGES)


@pytest.mark.parametrize(
    ("filename", "module"),
    [
        ("/work/x/crawldeck/core/net/fetcher.py", "core.net.fetcher"),
        ("/work/x/core/cluster/store.py", "core.cluster.store"),
        ("/work/x/core/cluster/__init__.py", "core.cluster"),
        ("/work/x/cli/main.py", "cli.main"),
        ("/work/x/crawldeck/tui/app.py", "tui.app"),
        ("/v/lib/python3.11/site-packages/aiohttp/client_proto.py", "aiohttp.client_proto"),
        ("/root/.pyenv/versions/3.11.7/lib/python3.11/asyncio/sslproto.py", "asyncio.sslproto"),
        ("/root/.pyenv/versions/3.11.7/lib/python3.11/ssl.py", "ssl"),
        ("<frozen importlib._bootstrap>", "importlib._bootstrap"),
        ("<string>", ""),
    ],
)
def test_module_of_a_frame_file(filename: str, module: str) -> None:
    assert sp.module_of(filename) == module


# The bottom of every stack of the crawl's main thread: the console script starting the
# event loop, and the loop running one callback or task step.
LOOP = [
    ("", "<module>"),
    ("cli.launch", "main"),
    ("cli.main", "main"),
    ("asyncio.runners", "run"),
    ("asyncio.base_events", "BaseEventLoop.run_forever"),
    ("asyncio.base_events", "BaseEventLoop._run_once"),
    ("asyncio.events", "Handle._run"),
]


@pytest.mark.parametrize(
    ("inner", "thread", "stage"),
    [
        # a task step of the engine calling the frontier, which calls a URL helper
        (
            [("core.crawl.engine", "Engine._worker"), ("core.policy.frontier", "Frontier.pop"),
             ("core.policy.urls", "host_key")],
            "MainThread",
            "normalization and admission",
        ),
        # the engine calling an asyncio helper: charged to the engine, not the loop
        ([("core.crawl.engine", "Engine._worker"), ("asyncio.tasks", "create_task")], "MainThread",
         "engine, politeness, retries"),
        # a socket read handed to aiohttp's protocol: the library's stage
        ([("asyncio.selector_events", "_read_ready"), ("aiohttp.client_proto", "data_received")],
         "MainThread", "fetch and decode"),
        # TLS record decryption under aiohttp's connection: TLS wherever it is called from
        ([("aiohttp.client_proto", "data_received"), ("asyncio.sslproto", "_do_read"),
          ("ssl", "SSLObject.read")], "MainThread", "TLS"),
        # the loop polling: the console script below it does not own the sample
        ([], "MainThread", "event loop and socket reads (asyncio)"),
        ([("asyncio.selector_events", "_read_ready__data_received")], "MainThread",
         "event loop and socket reads (asyncio)"),
        # a lazy import inside a callback is start-up, whatever the importing module
        (
            [
                ("core.storage.warc_writer", "WarcWriter.start"),
                ("importlib._bootstrap", "_find_and_load"),
                ("core.storage.warc", "<module>"),
            ],
            "MainThread",
            "start-up (imports, config, seeds, resume)",
        ),
        # the headless reporter's own frames
        ([("core.crawl.engine", "Engine._publish"), ("cli.headless", "HeadlessReporter.__call__")],
         "MainThread", "console and reporter"),
    ],
)  # fmt: skip
def test_classify_a_main_thread_sample(
    inner: list[tuple[str, str]], thread: str, stage: str
) -> None:
    assert sp.classify(LOOP + inner, thread) == stage


def test_classify_a_pool_thread_by_its_name_when_no_module_maps_it() -> None:
    pool = [
        ("threading", "Thread._bootstrap"),
        ("threading", "Thread.run"),
        ("concurrent.futures.thread", "_worker"),
    ]
    assert sp.classify(pool, "crawldeck-parse-small_0") == "parse and link extraction"
    assert sp.classify(pool, "crawldeck-store-crawl.db") == "store writer and recording"
    assert sp.classify(pool, "ThreadPoolExecutor-0_0") == "other (no mapped frame)"
    parsing = [
        *pool,
        ("concurrent.futures.thread", "_WorkItem.run"),
        ("core.policy.links", "extract"),
    ]
    assert sp.classify(parsing, "ThreadPoolExecutor-0_0") == "parse and link extraction"


RAW = """\
thread (101): MainThread;<module> (/v/bin/crawldeck:8);main (/w/cli/launch.py:40);\
_run_once (/py/lib/python3.11/asyncio/base_events.py:1922);\
Handle._run (/py/lib/python3.11/asyncio/events.py:80);\
Frontier.pop (/w/core/policy/frontier.py:300) 30
thread (101): MainThread;<module> (/v/bin/crawldeck:8);main (/w/cli/launch.py:40);\
_run_once (/py/lib/python3.11/asyncio/base_events.py:1922);\
Handle._run (/py/lib/python3.11/asyncio/events.py:80);\
SSLObject.read (/py/lib/python3.11/ssl.py:900) 10
thread (102): crawldeck-store-crawl.db;Thread.run (/py/lib/python3.11/threading.py:975);\
Store._writer (/w/core/storage/store.py:1400) 20
thread (101) 5
"""


def test_parse_raw_counts_samples_per_thread_and_stage() -> None:
    samples = sp.parse_raw(RAW)
    assert samples.counts == {
        (101, "frontier and OPIC credits"): 30,
        (101, "TLS"): 10,
        (102, "store writer and recording"): 20,
        (101, "other (no mapped frame)"): 5,
    }
    assert samples.names == {101: "MainThread", 102: "crawldeck-store-crawl.db"}
    assert samples.unmapped == {"(no frame)": 5}
    assert samples.leaves == {
        "frontier and OPIC credits | core.policy.frontier.Frontier.pop": 30,
        "TLS | ssl.SSLObject.read": 10,
        "store writer and recording | core.storage.store.Store._writer": 20,
        "other (no mapped frame) | (no frame)": 5,
    }
    assert samples.total() == 65
    assert samples.total(101) == 45


def test_stage_cpu_splits_each_thread_by_its_samples_and_adds_up_to_the_tree() -> None:
    # the crawl process 2.0 s: main thread 0.9 s, store thread 0.6 s (from /proc), 0.5 s
    # of threads gone before the last poll; children: parse workers 0.3 s, the WARC
    # writer 0.2 s; the tree (wait4) 2.6 s, so 0.1 s no poll saw.
    profile = sp.Profile(
        mode="http",
        pages=1000,
        elapsed_s=2.0,
        tree_cpu_s=2.6,
        main_cpu_s=2.0,
        child_cpu_s={"parse": 0.3, "warc": 0.2},
        samples=sp.parse_raw(RAW),
        thread_cpu_s={101: 0.9, 102: 0.6},
        spy_cpu_s=0.1,
    )
    cpu = profile.stage_cpu_s()
    rest = 0.5 / 65  # the unpolled CPU, per sample of any thread
    assert cpu["frontier and OPIC credits"] == pytest.approx(0.9 * 30 / 45 + rest * 30)
    assert cpu["TLS"] == pytest.approx(0.9 * 10 / 45 + rest * 10)
    assert cpu["store writer and recording"] == pytest.approx(0.6 + rest * 20)
    assert cpu["parse and link extraction"] == pytest.approx(0.3)
    assert cpu["WARC"] == pytest.approx(0.2)
    assert cpu["unattributed (children between polls)"] == pytest.approx(0.1)
    assert sum(cpu.values()) == pytest.approx(2.6)
    assert profile.ms_per_page == pytest.approx(2.6)
