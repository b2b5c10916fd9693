"""The aiohttp internals ``core.net.fetcher`` relies on (``AiohttpInternals``, in: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_aiohttp_internals.py``."""

from __future__ import annotations

import ast
import inspect
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

import aiohttp
import aiohttp.base_protocol
import aiohttp.client
import aiohttp.client_proto
import aiohttp.client_reqrep
import aiohttp.connector
import aiohttp.streams
import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from crawldeck.core.net import aiohttp_internals as internals_module
from crawldeck.core.net import body_reader as body_reader_module
from crawldeck.core.net import fetch_errors as fetch_errors_module
from crawldeck.core.net import fetcher as fetcher_module
from crawldeck.core.net import transport as transport_module
from crawldeck.core.net.aiohttp_internals import AiohttpInternals

ROOT = Path(__file__).resolve().parents[2]
MODULES = (
    fetcher_module,
    internals_module,
    body_reader_module,
    fetch_errors_module,
    transport_module,
)
INTERNALS = AiohttpInternals.__name__


# ----------------------------------------------------------------- without a network


def test_the_installed_aiohttp_is_within_the_pin() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    [pin] = [d for d in project["dependencies"] if re.match(r"aiohttp\b", d)]
    allowed = SpecifierSet(pin.removeprefix("aiohttp"))
    installed = Version(aiohttp.__version__)
    assert installed in allowed, (
        f"aiohttp {installed} is outside pyproject.toml's pin {pin!r}: check every member "
        f"in core.net.aiohttp_internals.AiohttpInternals against it before widening the pin"
    )


def _parameters(method: Callable[..., object]) -> list[tuple[str, object, object]]:
    """(name, kind, default) of each parameter: annotations are left out (ours are
    strings under ``from __future__ import annotations``)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]


@pytest.mark.parametrize(
    ("ours", "base", "name"),
    AiohttpInternals.OVERRIDDEN,
    ids=[f"{base.__name__}.{name}" for _, base, name in AiohttpInternals.OVERRIDDEN],
)
def test_each_overridden_method_still_has_aiohttps_signature(
    ours: type, base: type, name: str
) -> None:
    assert issubclass(ours, base), f"{ours.__qualname__} no longer subclasses {base.__name__}"
    assert name in vars(ours), f"{ours.__qualname__} does not override {name} (the table lies)"
    theirs = getattr(base, name, None)
    assert theirs is not None, (
        f"aiohttp {aiohttp.__version__}: {base.__name__}.{name} is gone; "
        f"{ours.__qualname__}.{name} is never called"
    )
    assert _parameters(getattr(ours, name)) == _parameters(theirs), (
        f"aiohttp {aiohttp.__version__}: {base.__name__}.{name} now takes "
        f"{inspect.signature(theirs)}; {ours.__qualname__}.{name} takes "
        f"{inspect.signature(getattr(ours, name))}"
    )
    assert inspect.iscoroutinefunction(theirs) == inspect.iscoroutinefunction(
        getattr(ours, name)
    ), f"aiohttp {aiohttp.__version__}: {base.__name__}.{name} changed between sync and async"


def _aiohttp_private_names() -> frozenset[str]:
    """Every ``._name`` (one leading underscore) in the source of the aiohttp modules
    whose classes we subclass or hold."""
    modules = (
        aiohttp.client,
        aiohttp.client_proto,
        aiohttp.client_reqrep,
        aiohttp.connector,
        aiohttp.streams,
        aiohttp.base_protocol,
    )
    source = "".join(inspect.getsource(module) for module in modules)
    return frozenset(re.findall(r"\.(_[a-zA-Z]\w*)", source))


def _aiohttp_bases(cls: type) -> list[type]:
    return [base for base in cls.__mro__[1:] if base.__module__.split(".")[0] == "aiohttp"]


class _Uses(ast.NodeVisitor):
    """Collects, for one module: underscore attributes used outside ``INTERNALS``
    (but ``self._x`` of a class of ours), those used inside it, and those our
    ``INTERNALS`` classes assign on ``self`` or declare."""

    def __init__(self, module: object, path: Path) -> None:
        self.module = module
        self.path = path
        self.classes: list[str] = []
        self.outside: list[str] = []
        self.inside: set[str] = set()
        self.assigned: set[str] = set()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(node.name)
        if self.classes[0] == INTERNALS and len(self.classes) > 1:
            for statement in node.body:
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                    self.assigned.add(statement.target.id)
        self.generic_visit(node)
        self.classes.pop()

    def _class(self) -> type | None:
        found: object = self.module
        for name in self.classes:
            found = getattr(found, name, None)
        return found if isinstance(found, type) else None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = node.attr
        if name.startswith("_") and not name.startswith("__"):
            on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
            if self.classes and self.classes[0] == INTERNALS:
                if on_self and isinstance(node.ctx, ast.Store):
                    self.assigned.add(name)
                self.inside.add(name)
            elif on_self and (cls := self._class()) is not None:
                theirs = {n for base in _aiohttp_bases(cls) for n in vars(base)}
                if name in theirs:
                    self.outside.append(f"{self.path.name}:{node.lineno}: self.{name}")
            else:
                self.outside.append(f"{self.path.name}:{node.lineno}: .{name}")
        self.generic_visit(node)


def _uses() -> list[_Uses]:
    found = []
    for module in MODULES:
        assert module.__file__ is not None
        path = Path(module.__file__)
        visitor = _Uses(module, path)
        visitor.visit(ast.parse(path.read_text(), str(path)))
        found.append(visitor)
    return found


def test_aiohttps_private_attributes_are_used_in_the_internals_class_only() -> None:
    private = _aiohttp_private_names()
    assert {"_conns", "_payload", "_release"} <= private  # the source was read
    outside = [
        use for visitor in _uses() for use in visitor.outside if use.rpartition(".")[2] in private
    ]
    assert outside == [], f"aiohttp's private attributes used outside {INTERNALS}: {outside}"


def test_the_internals_tables_name_every_private_member_used() -> None:
    private = _aiohttp_private_names()
    tabled = {name for _, _, name in AiohttpInternals.OVERRIDDEN}
    tabled |= {name for _, name in AiohttpInternals.READ}
    [fetcher_uses] = [v for v in _uses() if v.path.name == "aiohttp_internals.py"]
    ours = fetcher_uses.assigned - tabled
    used = (fetcher_uses.inside - ours) & private
    assert used <= tabled, f"used in {INTERNALS} but not in its tables: {sorted(used - tabled)}"
    unused = sorted({name for _, name in AiohttpInternals.READ} - fetcher_uses.inside)
    assert unused == [], f"in {INTERNALS}.READ but not used: {unused}"
    clobbered = sorted(ours & private)
    assert clobbered == [], f"our attributes on aiohttp's classes take aiohttp's names: {clobbered}"


def test_only_the_internals_class_subclasses_aiohttp() -> None:
    for module in MODULES:
        for name, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == module.__name__:
                bases = [b for b in _aiohttp_bases(value) if b.__module__ != "aiohttp.abc"]
                assert bases == [] or value is AiohttpInternals, (
                    f"{module.__name__}.{name} subclasses aiohttp's {bases[0].__name__}: "
                    f"move it into {INTERNALS}"
                )
