"""The system under test on loopback: emulated engines and a gateway, each a subprocess
stopped by PID, their config, and readings of the gateway's process (RSS, open fds)."""

from __future__ import annotations

import os
import resource
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from bench.procs import Server, free_port
from bench.targets import MAIN_BIN

MODEL = "emulated-model"
ROUTE = "chat"
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class EngineSpec:
    """How the emulated engines pace their answers."""

    count: int = 2
    token_delay_ms: float = 20.0
    base_latency_ms: float = 0.0


@dataclass(frozen=True)
class GatewaySpec:
    """What the gateway is wired to besides its engines."""

    store_url: str | None = None
    redis_url: str | None = None
    store: dict[str, Any] = field(default_factory=dict)  # extra `store:` keys
    health: dict[str, Any] = field(default_factory=dict)  # extra `health:` keys
    server: dict[str, Any] = field(default_factory=dict)  # extra `server:` keys


@dataclass
class Running:
    """Engines by name (port and server) and the gateway."""

    engines: dict[str, tuple[int, Server]]
    gateway: Server
    port: int


def raise_fd_limit(wanted: int) -> int:
    """Raise this process's soft open-files limit towards `wanted` (at most the hard
    limit); servers started afterwards inherit it. Returns the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def gateway_config(port: int, engines: dict[str, int], spec: GatewaySpec) -> dict[str, Any]:
    config: dict[str, Any] = {
        "server": {"host": "127.0.0.1", "port": port, **spec.server},
        "health": spec.health,
        "backends": [
            {
                "name": name,
                "kind": "openai-compatible",
                "base_url": f"http://127.0.0.1:{engine_port}/v1",
                "models": [MODEL],
                "max_concurrency": 4096,
                "max_connections": 4096,
            }
            for name, engine_port in engines.items()
        ],
        "routes": [{"name": ROUTE, "model": MODEL, "backends": list(engines), "profile": "lb"}],
        "profiles": [
            {
                "name": "lb",
                "plugins": [
                    {"ref": "healthy-filter"},
                    {"ref": "least-load-scorer"},
                    {"ref": "max-score-picker"},
                ],
            }
        ],
        "telemetry": {"access_log": "off"},
    }
    if spec.store_url is not None:
        config["store"] = {"url": spec.store_url, **spec.store}
    if spec.redis_url is not None:
        config["state"] = {"backend": "redis", "redis_url": spec.redis_url}
        # A route limit far above the load: every admission makes its Redis round trip.
        config["limits"] = {"backend": "redis", "routes": {ROUTE: {"rpm": 100_000_000}}}
    return config


def start_engine(name: str, spec: EngineSpec, workdir: Path) -> tuple[int, Server]:
    port = free_port()
    argv = [str(MAIN_BIN / "switchyard"), "emulate", "--port", str(port), "--model", MODEL]
    argv += ["--token-delay-ms", f"{spec.token_delay_ms:g}"]
    argv += ["--base-latency-ms", f"{spec.base_latency_ms:g}"]
    # Streams held open and load rates are planned in tokens: answers run to max_tokens.
    argv += ["--ignore-eos"]
    server = Server(name, argv, workdir / f"{name}.log")
    try:
        server.wait_ready(f"http://127.0.0.1:{port}/v1/models", timeout_s=60)
    except BaseException:
        server.stop()
        raise
    return port, server


def start_gateway(engines: dict[str, int], spec: GatewaySpec, workdir: Path) -> tuple[int, Server]:
    port = free_port()
    path = workdir / "gateway.yaml"
    path.write_text(yaml.safe_dump(gateway_config(port, engines, spec), sort_keys=False))
    argv = [str(MAIN_BIN / "switchyard"), "serve", "--config", str(path)]
    argv += ["--port", str(port), "--log-level", "warning"]
    env = {k: v for k, v in os.environ.items() if k != "SWITCHYARD_DATABASE_URL"}
    server = Server("gateway", argv, workdir / "gateway.log", env=env)
    try:
        server.wait_ready(f"http://127.0.0.1:{port}/healthz", timeout_s=90)
    except BaseException:
        server.stop()
        raise
    return port, server


@contextmanager
def running(engine: EngineSpec, gateway: GatewaySpec, workdir: Path) -> Iterator[Running]:
    """Engines `engine-0..N-1` and a gateway over them; all stopped by PID on exit."""
    with ExitStack() as stack:
        engines: dict[str, tuple[int, Server]] = {}
        for index in range(engine.count):
            name = f"engine-{index}"
            engines[name] = start_engine(name, engine, workdir)
            stack.callback(engines[name][1].stop)
        port, server = start_gateway({n: p for n, (p, _) in engines.items()}, gateway, workdir)
        stack.callback(server.stop)
        yield Running(engines, server, port)


@dataclass(frozen=True)
class ProcessReading:
    at: float
    rss_kb: int
    fds: int


def read_process(pid: int) -> ProcessReading:
    """RSS and open file descriptors of one process (the gateway is one process)."""
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return ProcessReading(time.monotonic(), rss, len(os.listdir(f"/proc/{pid}/fd")))


def get_json(url: str, timeout_s: float = 5.0) -> tuple[int, Any]:
    """(status, parsed body) of a GET; status 0 when nothing answered."""
    try:
        with _NO_PROXY.open(url, timeout=timeout_s) as response:
            return int(response.status), orjson.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, orjson.loads(exc.read() or b"null")
    except (OSError, ValueError):
        return 0, None


def get_text(url: str, timeout_s: float = 5.0) -> str:
    try:
        with _NO_PROXY.open(url, timeout=timeout_s) as response:
            text: str = response.read().decode()
            return text
    except OSError:
        return ""
