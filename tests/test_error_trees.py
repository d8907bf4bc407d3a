"""One error tree per framework, drawn in one place: every ApiError subclass of the product
is defined in `providers/errors.py` (what adapters raise) or `gateway/errors.py` (what the
gateway raises), and each module's docstring draws every class it defines.

The walk reads the source (ast), so a module that is only imported lazily (an adapter, a
command) counts too; a class is an error of the tree when a base of it is, by name.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from providers.errors import ApiError

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("gateway", "policies", "providers", "emulator")
TREES = ("providers.errors", "gateway.errors")
"""The tree modules; `providers` never imports `gateway` (tests/test_import_directions.py),
so an adapter's error can only be in the first."""
ROOTS = {"ApiError", "SwitchyardError"}
"""The tree's root under both its names (`gateway.errors.SwitchyardError = ApiError`)."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _classes() -> Iterator[tuple[str, str, set[str]]]:
    """(module, class, names of its bases) for every class the product defines."""
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    bases = {name for b in node.bases if (name := _base_name(b)) is not None}
                    yield _module_name(path), node.name, bases


def _api_errors() -> list[tuple[str, str]]:
    """(module, class) of every class that derives from ApiError, however deep."""
    classes = list(_classes())
    errors = set(ROOTS)
    grown = True
    while grown:
        found = {name for _, name, bases in classes if bases & errors}
        grown = not found <= errors
        errors |= found
    return [(module, name) for module, name, bases in classes if bases & errors]


def test_the_walk_finds_the_trees() -> None:
    found = _api_errors()
    assert ("providers.errors", "UpstreamNotReady") in found
    assert ("gateway.errors", "RouteCoolingDown") in found, "a subclass of a subclass"


def test_every_api_error_is_defined_in_its_frameworks_tree() -> None:
    outside = [f"{module}.{name}" for module, name in _api_errors() if module not in TREES]
    assert not outside, "move these into providers/errors.py or gateway/errors.py"


@pytest.mark.parametrize("module_name", TREES)
def test_each_tree_draws_every_class_it_defines(module_name: str) -> None:
    module = importlib.import_module(module_name)
    drawing = set((module.__doc__ or "").replace(",", " ").replace("(", " ").split())
    defined = [
        name
        for name, cls in vars(module).items()
        if inspect.isclass(cls) and issubclass(cls, Exception) and cls.__module__ == module_name
    ]
    assert any(issubclass(getattr(module, name), ApiError) for name in defined)
    assert [name for name in defined if name not in drawing] == []
