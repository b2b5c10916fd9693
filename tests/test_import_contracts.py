"""The import contracts of ``pyproject.toml`` (``[tool.importlinter]``, issue #11 item 8).

``lint-imports`` (run in process) must keep every contract; and each contract must
break when a module it covers gains a forbidden import, directly or through another
crawldeck module, so a contract that can never fail is caught here too. The second
check adds the import to import-linter's own graph (grimp's ``add_import``, as
import-linter's tests do) and checks the contract with import-linter's own
``ForbiddenContract``; the source files are not touched.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import grimp
import pytest
from importlinter.api import read_configuration
from importlinter.cli import lint_imports
from importlinter.contracts.forbidden import ForbiddenContract

ROOT = Path(__file__).resolve().parent.parent
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
    assert options["type"] == "forbidden"
    contract = ForbiddenContract(options["name"], CONFIG["session_options"], options)
    return bool(contract.check(copy.deepcopy(graph), verbose=False).kept)


def breaking_imports() -> list[tuple[str, str, str]]:
    """``(contract id, importer, imported)``: every source of every contract importing
    every module it may not import, but for the imports the contract lets through."""
    return [
        (contract_id, source, forbidden)
        for contract_id, options in CONTRACTS.items()
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
        ("pure-no-io", "crawldeck.core.frontier", "crawldeck.core.store"),
        ("pure-no-io", "crawldeck.core.urls", "crawldeck.core.fetcher"),
        # A record that names the fetcher or the store reaches aiohttp or SQLite; the
        # protocols that take a FetchResult from the fetcher again, aiohttp.
        ("pure-no-io", "crawldeck.core.records", "crawldeck.core.fetcher"),
        ("pure-no-io", "crawldeck.core.records", "crawldeck.core.store"),
        ("protocols-no-network", "crawldeck.core.protocols", "crawldeck.core.fetcher"),
        ("protocols-no-network", "crawldeck.core.protocols", "crawldeck.core.store"),
        # The window or the seen set naming the SQLite store for a record again.
        ("seams-no-clients", "crawldeck.core.window", "crawldeck.core.store"),
        ("seams-no-clients", "crawldeck.core.seen", "crawldeck.core.store"),
        ("seams-no-clients", "crawldeck.core.admission", "crawldeck.core.fetcher"),
        # core reaching the console through another crawldeck module.
        ("core-no-ui", "crawldeck.core.frontier", "crawldeck.tui.widgets"),
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
