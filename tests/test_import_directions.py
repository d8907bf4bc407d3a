"""Dependencies point one way: walks every import (ast) of the product's packages.

Plugin frameworks (`policies`, `providers`) and the engine (`emulator`) know nothing of
the gateway that hosts them; inside `gateway`, the packages below the request path never
reach back up to the HTTP edge or the service that wires them. docs/architecture.md has the
same rules in prose. Imports under `TYPE_CHECKING` and inside functions count too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("gateway", "policies", "providers", "emulator")
FIRST_PARTY = (*PRODUCT, "bench", "tests")


@dataclass(frozen=True)
class Import:
    source: str
    """The importing module, dotted."""
    target: str
    """The imported module (for `from a.b import c`: `a.b.c` when that is a module)."""
    line: int
    lazy: bool
    """Inside a function body: imported when called, not when loaded."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = source.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _targets(module: str, node: ast.ImportFrom) -> Iterator[str]:
    for alias in node.names:
        candidate = f"{module}.{alias.name}"
        path = ROOT / candidate.replace(".", "/")
        yield candidate if path.with_suffix(".py").is_file() or path.is_dir() else module


def _imports_of(path: Path) -> Iterator[Import]:
    source = _module_name(path)
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), str(path))
    lazy_lines = {
        n.lineno
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for n in ast.walk(f)
        if isinstance(n, ast.Import | ast.ImportFrom)
    }
    for node in ast.walk(tree):
        lazy = getattr(node, "lineno", 0) in lazy_lines
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(source, alias.name, node.lineno, lazy)
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(source, is_package, node)
            for target in _targets(module, node):
                yield Import(source, target, node.lineno, lazy)


def all_imports() -> list[Import]:
    found = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            found.extend(i for i in _imports_of(path) if i.target.startswith(FIRST_PARTY))
    return found


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@dataclass(frozen=True)
class Rule:
    importer: str
    forbidden: str
    why: str
    allowed_in: tuple[str, ...] = ()
    """Importers (dotted modules or packages) the rule does not apply to."""


RULES = [
    Rule("policies", "gateway", "policies is a plugin framework; the gateway wires it"),
    Rule("policies", "providers", "policies decide; they do not talk to backends"),
    Rule("policies", "emulator", "policies know no engine"),
    Rule("providers", "gateway", "providers is a plugin framework; the gateway wires it"),
    Rule("providers", "policies", "adapters do not route"),
    Rule("emulator", "gateway", "the emulator is an engine, not part of the gateway"),
    Rule("emulator", "policies", "the emulator is an engine"),
    Rule("emulator", "providers", "the emulator is an engine"),
    Rule("gateway.store", "gateway.telemetry", "telemetry feeds the store, not back"),
    Rule("gateway.prefix", "gateway.fleet", "the fleet builds on the prefix index"),
    Rule("gateway.prefix", "gateway.routing", "the router builds on the prefix index"),
    Rule("gateway.prefix", "gateway.quality", "prefixes know nothing of quality"),
    Rule("gateway.fleet", "gateway.telemetry", "telemetry reads the fleet, not back"),
    Rule("gateway.fleet", "gateway.quality", "health and quality are separate detectors"),
    Rule("gateway.fleet", "gateway.routing", "the router reads the fleet, not back"),
    Rule("gateway.quality", "gateway.telemetry", "telemetry reads quality, not back"),
    Rule("gateway.quality", "gateway.routing", "the router reads quality, not back"),
    Rule("gateway.store", "gateway.tenancy", "the store keeps key rows; tenancy hashes them"),
    *(
        Rule("gateway.tenancy", part, "who may call and how much is decided before routing")
        for part in (
            "gateway.routing",
            "gateway.dispatch",
            "gateway.lease",
            "gateway.fleet",
            "gateway.quality",
            "gateway.prefix",
            "gateway.telemetry",
        )
    ),
    *(
        Rule(package, host, "the request path's parts never reach back up to their host")
        for package in (
            "gateway.fleet",
            "gateway.prefix",
            "gateway.quality",
            "gateway.store",
            "gateway.telemetry",
            "gateway.routing",
            "gateway.dispatch",
            "gateway.lease",
            "gateway.decisions",
            "gateway.tenancy",
        )
        for host in (
            "gateway.http",
            "gateway.service",
            "gateway.runtime",
            "gateway.process_signals",
            "gateway.cli",
            "gateway.workers",
        )
    ),
    Rule(
        "gateway",
        "gateway.engines",
        "local engines are started by the CLI and tests, never from the request path",
        allowed_in=("gateway.engines", "gateway.cli"),
    ),
    *(
        Rule("gateway.engines", part, "engines read only the config schema of the gateway")
        for part in (
            "gateway.fleet",
            "gateway.prefix",
            "gateway.quality",
            "gateway.store",
            "gateway.telemetry",
            "gateway.routing",
            "gateway.dispatch",
            "gateway.lease",
            "gateway.service",
            "gateway.workers",
            "gateway.tenancy",
        )
    ),
    Rule(
        "gateway",
        "gateway.http",
        "only the commands that start the app, and explain's dry run, enter the HTTP edge",
        allowed_in=("gateway.http", "gateway.cli", "gateway.workers", "gateway.explain"),
    ),
]


def violations(imports: list[Import], rule: Rule) -> list[str]:
    return [
        f"{i.source}:{i.line} imports {i.target}"
        for i in imports
        if _within(i.source, rule.importer)
        and _within(i.target, rule.forbidden)
        and not any(_within(i.source, allowed) for allowed in rule.allowed_in)
    ]


IMPORTS = all_imports()


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.importer}-x-{r.forbidden}")
def test_dependencies_point_one_way(rule: Rule) -> None:
    assert violations(IMPORTS, rule) == [], rule.why


def test_the_product_imports_bench_only_lazily_from_the_cli() -> None:
    found = [i for i in IMPORTS if _within(i.target, "bench") or _within(i.target, "tests")]
    assert found, "the CLI registers `switchyard bench ...`: at least one import expected"
    assert all(i.source == "gateway.cli" and i.lazy for i in found), found


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from gateway.fleet.state import FleetState", "gateway.fleet.state"),
        ("from gateway.fleet import state", "gateway.fleet.state"),
        ("import policies.base", "policies.base"),
        ("from . import base", "providers.base"),
    ],
)
def test_the_walker_resolves_imports(source: str, expected: str) -> None:
    """The rules are only as good as the walk: absolute, relative and `from pkg import
    module` forms all name the module imported."""
    path = ROOT / "providers" / "__init__.py"
    tree = ast.parse(source)
    node = tree.body[0]
    if isinstance(node, ast.ImportFrom):
        module = _resolve("providers", path.name == "__init__.py", node)
        assert expected in set(_targets(module, node))
    else:
        assert isinstance(node, ast.Import)
        assert node.names[0].name == expected


def test_a_violation_is_reported() -> None:
    """A rule catches a forbidden import when one exists (fed a synthetic import)."""
    fake = [Import("policies.example", "gateway.config", 3, lazy=True)]
    assert violations(fake, RULES[0]) == ["policies.example:3 imports gateway.config"]
