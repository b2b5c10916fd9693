"""The import contracts of ``pyproject.toml`` (``[tool.importlinter]``, issue #11 item 8).

``lint-imports`` (run in process) must keep every contract; and each contract must
break when a module it covers gains a forbidden import, directly or through another
crawldeck module, so a contract that can never fail is caught here too. The second
check adds the import to import-linter's own graph (grimp's ``add_import``, as
import-linter's tests do) and checks the contract with import-linter's own
``ForbiddenContract`` (or ``LayersContract``: an import from a layer up to the one
above it, and between the independent siblings, must break the ``layers`` contract);
the source files are not touched.
"""

from __future__ import annotations

import copy
import itertools
import logging
from pathlib import Path
from typing import Any

import grimp
import pytest
from importlinter.api import read_configuration
from importlinter.cli import lint_imports
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.layers import LayersContract

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
CONFIG = read_configuration(str(PYPROJECT))
CONTRACTS: dict[str, dict[str, Any]] = {c["id"]: c for c in CONFIG["contracts_options"]}


def test_lint_imports_keeps_every_contract(capsys: pytest.CaptureFixture[str]) -> None:
    # lint_imports configures logging with dictConfig, which disables every logger that
    # exists (crawldeck's among them) for the rest of the session: keep them as they were
    manager = logging.Logger.manager
    loggers = [lg for lg in manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    disabled = [lg.disabled for lg in loggers]
    try:
        exit_code = lint_imports(config_filename=str(PYPROJECT), no_cache=True, no_logo=True)
    finally:
        for logger, was in zip(loggers, disabled, strict=True):
            logger.disabled = was
    assert not logging.getLogger("crawldeck.parse").disabled
    report = capsys.readouterr().out
    assert exit_code == 0, report
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in report


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    """The import graph ``lint-imports`` builds from the session options."""
    options = CONFIG["session_options"]
    return grimp.build_graph(
        *options["root_packages"],
        include_external_packages=options["include_external_packages"],
    )


def check(contract_id: str, graph: grimp.ImportGraph) -> bool:
    """Whether the contract ``contract_id`` is kept on ``graph`` (left as it was: a check
    removes the contract's ignored imports from the graph it is given)."""
    options = CONTRACTS[contract_id]
    kind = {"forbidden": ForbiddenContract, "layers": LayersContract}[options["type"]]
    contract = kind(options["name"], CONFIG["session_options"], options)
    return bool(contract.check(copy.deepcopy(graph), verbose=False).kept)


def breaking_imports() -> list[tuple[str, str, str]]:
    """``(contract id, importer, imported)``: every source of every contract importing
    every module it may not import, but for the imports the contract lets through."""
    return [
        (contract_id, source, forbidden)
        for contract_id, options in CONTRACTS.items()
        if options["type"] == "forbidden"
        for source in options["source_modules"]
        for forbidden in options["forbidden_modules"]
        if f"{source} -> {forbidden}" not in options.get("ignore_imports", ())
    ]


def test_the_contracts_are_the_ones_the_design_names() -> None:
    assert set(CONTRACTS) == {
        "core-no-ui",
        "pure-no-io",
        "protocols-no-network",
        "seams-no-clients",
        "snapshot-no-renderer",
        "localweb-for-tests",
        "ui-no-sqlite",
        "tui-no-cli",
        "layers",
    }


@pytest.mark.parametrize(("contract_id", "importer", "imported"), breaking_imports())
def test_a_forbidden_import_breaks_its_contract(
    graph: grimp.ImportGraph, contract_id: str, importer: str, imported: str
) -> None:
    assert check(contract_id, graph)
    graph.add_import(importer=importer, imported=imported)
    try:
        assert not check(contract_id, graph)
    finally:
        graph.remove_import(importer=importer, imported=imported)
    assert check(contract_id, graph)


@pytest.mark.parametrize(
    ("contract_id", "importer", "through"),
    [
        # A pure part that imports the store reaches SQLite; the fetcher, the network.
        ("pure-no-io", "crawldeck.core.policy.frontier", "crawldeck.core.storage.store"),
        ("pure-no-io", "crawldeck.core.policy.urls", "crawldeck.core.net.fetcher"),
        # A record that names the fetcher or the store reaches aiohttp or SQLite; the
        # protocols that take a FetchResult from the fetcher again, aiohttp.
        ("pure-no-io", "crawldeck.core.records", "crawldeck.core.net.fetcher"),
        ("pure-no-io", "crawldeck.core.records", "crawldeck.core.storage.store"),
        ("protocols-no-network", "crawldeck.core.protocols", "crawldeck.core.net.fetcher"),
        ("protocols-no-network", "crawldeck.core.protocols", "crawldeck.core.storage.store"),
        # The window or the seen set naming the SQLite store for a record again.
        ("seams-no-clients", "crawldeck.core.policy.window", "crawldeck.core.storage.store"),
        ("seams-no-clients", "crawldeck.core.policy.seen", "crawldeck.core.storage.store"),
        ("seams-no-clients", "crawldeck.core.policy.admission", "crawldeck.core.net.fetcher"),
        # core reaching the console through another crawldeck module.
        ("core-no-ui", "crawldeck.core.policy.frontier", "crawldeck.tui.widgets"),
    ],
)
def test_an_indirect_import_breaks_its_contract(
    graph: grimp.ImportGraph, contract_id: str, importer: str, through: str
) -> None:
    graph.add_import(importer=importer, imported=through)
    try:
        assert not check(contract_id, graph)
    finally:
        graph.remove_import(importer=importer, imported=through)
    assert check(contract_id, graph)


def layers() -> list[list[str]]:
    """The ``layers`` contract's layers, top first, each a list of its sibling modules."""
    return [
        [m.strip() for m in layer.replace("|", ":").split(":")]
        for layer in CONTRACTS["layers"]["layers"]
    ]


def upward_imports() -> list[tuple[str, str]]:
    """``(importer, imported)``: the first module of each layer importing the first of
    the layer just above it, and each of the independent I/O edges importing another."""
    stack = layers()
    up = [(below[0], above[0]) for above, below in itertools.pairwise(stack)]
    edges = next(layer for layer in stack if "crawldeck.core.net" in layer)
    return up + [(a, b) for a in edges for b in edges if a != b]


def test_the_layers_run_from_the_command_down_to_the_records() -> None:
    stack = layers()
    assert stack[0] == ["crawldeck.cli"] and stack[1] == ["crawldeck.tui"]
    assert ["crawldeck.core.net", "crawldeck.core.storage", "crawldeck.core.render"] in stack
    assert "crawldeck.core.records" in stack[-1] and "crawldeck.core.protocols" in stack[-1]
    assert "|" in CONTRACTS["layers"]["layers"][4]  # the I/O edges are independent


@pytest.mark.parametrize(("importer", "imported"), upward_imports())
def test_an_upward_or_sideways_import_breaks_the_layers(
    graph: grimp.ImportGraph, importer: str, imported: str
) -> None:
    assert check("layers", graph)
    graph.add_import(importer=importer, imported=imported)
    try:
        assert not check("layers", graph)
    finally:
        graph.remove_import(importer=importer, imported=imported)
    assert check("layers", graph)
