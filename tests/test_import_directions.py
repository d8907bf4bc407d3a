"""Dependencies point one way: walks every import (ast) of the product's packages.

Plugin frameworks (`policies`, `providers`) and the engine (`emulator`) know nothing of
the gateway that hosts them; inside `gateway`, the packages below the request path never
reach back up to the HTTP edge or the service that wires them. docs/architecture.md has the
same rules in prose. Imports under `TYPE_CHECKING` and inside functions count too.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.gateway.processes import free_port

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("gateway", "policies", "providers", "emulator")
FIRST_PARTY = (*PRODUCT, "bench", "tests")
DATABASE_LAYER = ("sqlalchemy", "alembic")
TRACING_SDK = "opentelemetry"
DNS_LIBRARY = "dns"
WATCHED = (*FIRST_PARTY, *DATABASE_LAYER, TRACING_SDK, DNS_LIBRARY)


@dataclass(frozen=True)
class Import:
    source: str
    """The importing module, dotted."""
    target: str
    """The imported module (for `from a.b import c`: `a.b.c` when that is a module)."""
    line: int
    lazy: bool
    """Inside a function body: imported when called, not when loaded."""
    typing_only: bool = False
    """Under `if TYPE_CHECKING:`: read by type checkers, never imported at run time."""

    @property
    def eager(self) -> bool:
        """Imported when the importing module is loaded."""
        return not (self.lazy or self.typing_only)


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
    typing_lines = {
        n.lineno
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and _is_type_checking(block.test)
        for stmt in block.body
        for n in ast.walk(stmt)
        if isinstance(n, ast.Import | ast.ImportFrom)
    }
    for node in ast.walk(tree):
        lazy = getattr(node, "lineno", 0) in lazy_lines
        typing_only = getattr(node, "lineno", 0) in typing_lines
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(source, alias.name, node.lineno, lazy, typing_only)
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(source, is_package, node)
            for target in _targets(module, node):
                yield Import(source, target, node.lineno, lazy, typing_only)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _within_any(module: str, packages: tuple[str, ...]) -> bool:
    return any(_within(module, package) for package in packages)


def all_imports() -> list[Import]:
    found = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            found.extend(i for i in _imports_of(path) if _within_any(i.target, WATCHED))
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
    allowed_targets: tuple[str, ...] = ()
    """Modules or packages inside `forbidden` that may be imported all the same."""
    eager_only: bool = False
    """Only imports made when the importer is loaded count (not lazy, not for types)."""


LOWER_ROOMS = (
    "gateway.admission",
    "gateway.cascade",
    "gateway.config",
    "gateway.discovery",
    "gateway.fleet",
    "gateway.prefix",
    "gateway.quality",
    "gateway.routing",
    "gateway.store",
    "gateway.telemetry",
    "gateway.tenancy",
    "gateway.tracing",
)
"""The rooms under the HTTP edge and the process: the request path and the config schema."""

SECTION_SCHEMAS = (
    "gateway.admission.config",
    "gateway.cascade.config",
    "gateway.config",
    "gateway.discovery.config",
    "gateway.errors",
    "gateway.prefix.cache_semantics",
    "gateway.quality.config",
    "gateway.store.config",
    "gateway.telemetry.config",
    "gateway.tenancy.config",
    "gateway.tracing.config",
)
"""What the config schema may import of the gateway: its own modules, the error tree, and
the sections other rooms own for their own settings."""

REQUEST_WAY_ROOMS = (
    "gateway.admission",
    "gateway.fleet",
    "gateway.routing",
    "gateway.store",
    "gateway.telemetry",
    "gateway.tenancy",
)
"""The rooms a request's way runs through and records it in: what the rooms that are pure
of it (a cascade's checks and book, discovery's expansion) never import."""

RULES = [
    Rule("policies", "gateway", "policies is a plugin framework; the gateway wires it"),
    Rule("policies", "providers", "policies decide; they do not talk to backends"),
    Rule("policies", "emulator", "policies know no engine"),
    Rule("providers", "gateway", "providers is a plugin framework; the gateway wires it"),
    Rule("providers", "policies", "adapters do not route"),
    Rule(
        "providers",
        "emulator",
        "only the emulated adapter starts an emulator; a real backend never loads one",
        allowed_in=("providers.emulated",),
        eager_only=True,
    ),
    Rule("emulator", "gateway", "the emulator is an engine, not part of the gateway"),
    Rule("emulator", "policies", "the emulator is an engine"),
    Rule("emulator", "providers", "the emulator is an engine"),
    Rule("gateway", "emulator", "the gateway reaches engines through providers", eager_only=True),
    *(
        Rule(
            "gateway",
            layer,
            "only the store speaks SQL; the rest loads it when the config enables the store",
            allowed_in=("gateway.store", "gateway.tenancy.key_admin", "gateway.tenancy.key_cache"),
            eager_only=True,
        )
        for layer in DATABASE_LAYER
    ),
    Rule(
        "gateway.config",
        "gateway",
        "the config schema reads only section schemas, never the parts that use them",
        allowed_targets=SECTION_SCHEMAS,
    ),
    *(
        Rule(
            room,
            "gateway.process",
            "the request path's rooms never reach up to the process that starts them; "
            "background tasks are the one shared helper",
            allowed_targets=("gateway.process.tasks",),
        )
        for room in LOWER_ROOMS
    ),
    *(
        Rule(
            room,
            "gateway.http",
            "the HTTP edge is above the request path (explain's dry run reads a body as the "
            "edge does)",
            allowed_in=("gateway.routing.explain",),
        )
        for room in LOWER_ROOMS
    ),
    *(Rule(room, "gateway.cli", "the CLI is the top") for room in LOWER_ROOMS),
    *(
        Rule(
            "gateway.cascade",
            room,
            "a cascade's checks and book are pure of the request's way: the HTTP edge runs "
            "the tiers",
        )
        for room in REQUEST_WAY_ROOMS
    ),
    Rule("gateway.store", "gateway.telemetry", "telemetry feeds the store, not back"),
    Rule("gateway.store", "gateway.tenancy", "the store keeps key rows; tenancy hashes them"),
    Rule("gateway.prefix", "gateway.fleet", "the fleet builds on the prefix index"),
    Rule("gateway.prefix", "gateway.routing", "the router builds on the prefix index"),
    Rule("gateway.prefix", "gateway.quality", "prefixes know nothing of quality"),
    Rule("gateway.fleet", "gateway.telemetry", "telemetry reads the fleet, not back"),
    Rule("gateway.fleet", "gateway.quality", "health and quality are separate detectors"),
    Rule("gateway.fleet", "gateway.routing", "the router reads the fleet, not back"),
    Rule("gateway.quality", "gateway.telemetry", "telemetry reads quality, not back"),
    *(
        Rule(room, "gateway.admission", "flow control acts on the fleet and the router, not back")
        for room in ("gateway.fleet", "gateway.routing", "gateway.prefix", "gateway.quality")
    ),
    Rule("gateway.quality", "gateway.routing", "the router reads quality, not back"),
    *(
        Rule("gateway.tenancy", part, "who may call and how much is decided before routing")
        for part in (
            "gateway.routing",
            "gateway.fleet",
            "gateway.quality",
            "gateway.prefix",
            "gateway.telemetry",
        )
    ),
    Rule(
        "gateway",
        "gateway.engines",
        "local engines are started by the CLI and tests, never from the request path",
        allowed_in=("gateway.engines", "gateway.cli"),
    ),
    Rule(
        "gateway.engines",
        "gateway",
        "engines read only the config schema of the gateway",
        allowed_targets=("gateway.engines", "gateway.config", "gateway.errors"),
    ),
    Rule(
        "gateway",
        TRACING_SDK,
        "only the tracing room speaks to the OpenTelemetry SDK, and loads it when tracing is on",
        allowed_in=("gateway.tracing.spans",),
        eager_only=True,
    ),
    Rule(
        "gateway",
        "gateway.tracing.spans",
        "a request's spans load with the SDK, when tracing is on",
        allowed_in=("gateway.tracing",),
        eager_only=True,
    ),
    Rule("providers", TRACING_SDK, "the host hands adapters a trace's headers"),
    Rule("policies", TRACING_SDK, "policies are pure"),
    *(
        Rule("gateway.tracing", room, "traces read the request's records; nothing reads back")
        for room in ("gateway.admission", "gateway.fleet", "gateway.telemetry", "gateway.store")
    ),
    Rule(
        "gateway.http",
        "gateway.process.workers",
        "workers serve the app; the app does not start workers",
    ),
    Rule(
        "gateway",
        DNS_LIBRARY,
        "only the resolver speaks DNS, loaded when a config has a discover block",
        allowed_in=("gateway.discovery.resolver",),
        eager_only=True,
    ),
    Rule(
        "gateway",
        "gateway.discovery.resolver",
        "the resolver loads with dnspython: only discovery's wiring loads it",
        allowed_in=("gateway.process.discovery_wiring",),
        eager_only=True,
    ),
    Rule(
        "gateway",
        "gateway.process.discovery_wiring",
        "discovery is wired only for a config with a discover block",
        eager_only=True,
    ),
    *(
        Rule("gateway.discovery", room, "discovery expands the config; the runtime applies it")
        for room in REQUEST_WAY_ROOMS
    ),
]


def violations(imports: list[Import], rule: Rule) -> list[str]:
    return [
        f"{i.source}:{i.line} imports {i.target}"
        for i in imports
        if _within(i.source, rule.importer)
        and _within(i.target, rule.forbidden)
        and not _within_any(i.source, rule.allowed_in)
        and not _within_any(i.target, rule.allowed_targets)
        and (i.eager or not rule.eager_only)
    ]


IMPORTS = all_imports()


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.importer}-x-{r.forbidden}")
def test_dependencies_point_one_way(rule: Rule) -> None:
    assert violations(IMPORTS, rule) == [], rule.why


def test_the_product_imports_bench_only_lazily_from_the_cli() -> None:
    # `switchyard bench NAME` imports its module by name when it runs (BENCH_MODULES);
    # nothing in the product imports bench/ or tests/ otherwise.
    from gateway.cli import BENCH_MODULES

    found = [i for i in IMPORTS if _within_any(i.target, ("bench", "tests"))]
    assert all(i.source == "gateway.cli" and i.lazy for i in found), found
    assert BENCH_MODULES and all(m.startswith("bench.") for m in BENCH_MODULES.values())
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from gateway.cli import build_parser; build_parser('bench'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'bench'))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert loaded.stdout.strip() == "[]", loaded.stdout


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
    fake = [Import("policies.example", "gateway.config.root", 3, lazy=True)]
    assert violations(fake, RULES[0]) == ["policies.example:3 imports gateway.config.root"]


# What loads at run time: the rules above read the source; these run it, in a fresh
# interpreter each, and list the modules it loaded.
TRACING_PARTS = ("opentelemetry.sdk", "opentelemetry.exporter", "gateway.tracing.spans")
"""What tracing loads when it is on. FastAPI (0.165 on) depends on and loads the
OpenTelemetry API, and only that, in every app: the proxy path itself loads none of it."""
HEAVY = ("emulator", "bench", *DATABASE_LAYER, *TRACING_PARTS)

_LOADED = """
import asyncio, importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(" ".join(sorted(sys.modules)))
"""

_SERVED = """
import asyncio, sys
from gateway.config.root import load_config
import gateway.http.app  # the served app's modules count too
from gateway.process.service import probe_once, start_gateway, stop_gateway

async def main() -> None:
    gateway = await start_gateway(load_config(sys.argv[1]))
    await probe_once(gateway)
    await stop_gateway(gateway)

asyncio.run(main())
print(" ".join(sorted(sys.modules)))
"""


def _modules_after(code: str, *args: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONSAFEPATH": "1"}
    env.pop("SWITCHYARD_DATABASE_URL", None)
    for variable in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        env.pop(variable, None)  # tracing stays off, as by default
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return set(done.stdout.split())


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if _within_any(m, HEAVY))


@pytest.mark.parametrize(
    "module",
    ["gateway.http.proxy", "gateway.config.root", "providers.errors", "gateway.cli"],
)
def test_a_path_loads_no_engine_benchmark_or_database(module: str) -> None:
    loaded = _modules_after(_LOADED, module)
    assert _heavy(loaded) == []
    assert not any(_within(m, TRACING_SDK) for m in loaded), "not even the API"


def _config(tmp_path: Path, backend: dict[str, object], **sections: dict[str, object]) -> str:
    ports = [free_port() for _ in range(2)]  # nothing listens: health checks just fail
    backends = [
        {"name": f"b{i}", "models": ["m"], **backend, "base_url": f"http://127.0.0.1:{port}/v1"}
        for i, port in enumerate(ports)
    ]
    if backend.get("kind") == "emulated":
        for entry in backends:
            entry.pop("base_url")
    embedded = yaml.safe_load((ROOT / "gateway" / "examples" / "embedded.yaml").read_text())
    config = {
        "backends": backends,
        "routes": [{"name": "m", "model": "m", "backends": ["b0", "b1"]}],
        **{key: embedded[key] for key in ("policies", "profiles") if key in embedded},
        **sections,
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_serving_real_backends_without_a_store_loads_no_emulator_or_database(
    tmp_path: Path,
) -> None:
    """A gateway in front of two OpenAI-compatible engines, started and stopped in full:
    the app, every provider, telemetry and tenancy, but no fake engine, no SQL and, with
    tracing off (the default), nothing of OpenTelemetry."""
    config = _config(tmp_path, {"kind": "openai-compatible"})
    loaded = _modules_after(_SERVED, config)
    assert _heavy(loaded) == []
    assert not any(_within(m, "redis") for m in loaded), "no Redis in this config"
    assert not any(_within(m, "aiohttp") for m in loaded), "plain HTTP, probes included"
    assert not any(_within(m, DNS_LIBRARY) for m in loaded), "no discover block"


def test_an_emulated_backend_loads_the_emulator(tmp_path: Path) -> None:
    """The check above can see an emulator: a config that names one loads it."""
    config = _config(tmp_path, {"kind": "emulated"})
    assert "emulator.server" in _modules_after(_SERVED, config)


def test_tracing_on_loads_the_sdk(tmp_path: Path) -> None:
    """The checks above can see OpenTelemetry: a gateway with tracing on loads it (and,
    with nothing traced, exports nothing to the endpoint nobody listens on)."""
    endpoint = f"http://127.0.0.1:{free_port()}/v1/traces"
    tracing = {"enabled": True, "endpoint": endpoint}
    config = _config(tmp_path, {"kind": "openai-compatible"}, tracing=tracing)
    assert "opentelemetry.sdk.trace" in _modules_after(_SERVED, config)


_DISCOVERING = """
import asyncio, sys
from gateway.config.root import load_config
from gateway.process.discovery_wiring import open_discovery
from gateway.process.service import start_gateway, stop_gateway

async def main() -> None:
    config = load_config(sys.argv[1])
    discovery = await open_discovery(config)
    gateway = await start_gateway(discovery.expand(config))
    await stop_gateway(gateway)

asyncio.run(main())
print(" ".join(sorted(sys.modules)))
"""


def test_a_discover_block_loads_dnspython(tmp_path: Path) -> None:
    """The check above can see dnspython: a gateway with a discover block loads it (and,
    its nameserver silent, starts with no backend from it)."""
    port = free_port()  # nothing answers there: the lookup times out
    discover = {"dns": "engines.test", "nameservers": [f"127.0.0.1:{port}"], "timeout_s": 0.2}
    backend = {"kind": "vllm", "discover": discover}
    config = _config(tmp_path, {"kind": "openai-compatible"})
    data = yaml.safe_load(Path(config).read_text())
    data["backends"].append({"name": "found", "models": ["m"], **backend})
    Path(config).write_text(yaml.safe_dump(data))
    assert "dns.asyncresolver" in _modules_after(_DISCOVERING, config)
