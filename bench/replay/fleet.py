"""Starts and stops what a replay runs against: the emulated engine fleet and the gateway.

Every process is a `bench.procs.Server`: started in its own session, known by PID, output
in a log file, stopped by PID. Emulator flags are matched against `switchyard emulate
--help`, so the replay works before and after the batched cost model lands.
"""

from __future__ import annotations

import functools
import os
import socket
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.procs import Server, StartError

GATEWAY_CLI = [sys.executable, "-m", "gateway.cli"]
READY_TIMEOUT_S = 60.0
_PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


def local_env(**extra: str) -> dict[str, str]:
    """The environment for every process we start: no proxies, no hub downloads."""
    env = {k: v for k, v in os.environ.items() if k not in _PROXY_VARS}
    env.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **extra)
    return env


@dataclass(frozen=True)
class EngineOptions:
    """The emulated fleet; speeds are passed through to `switchyard emulate` as given."""

    count: int = 4
    kv_capacity_tokens: int = 100_000
    cost_model: str = "batched"
    prefill_tokens_per_s: float = 8_000.0
    decode_base_ms: float = 15.0
    decode_per_seq_ms: float = 0.5
    time_scale: float = 1.0
    models: tuple[str, ...] = ("emulated-model",)

    def describe(self) -> dict[str, Any]:
        return {
            "fleet_size": self.count,
            "kv_capacity_tokens": self.kv_capacity_tokens,
            "cost_model": self.cost_model,
            "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "decode_base_ms": self.decode_base_ms,
            "decode_per_seq_ms": self.decode_per_seq_ms,
        }


@functools.cache
def emulator_flags() -> frozenset[str]:
    """The long options `switchyard emulate` accepts today."""
    out = subprocess.run(
        [*GATEWAY_CLI, "emulate", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env=local_env(),
        check=False,
    ).stdout
    return frozenset(word.strip("[],") for word in out.split() if word.startswith("--"))


@dataclass
class FleetPlan:
    """Command lines, engine ports, and what had to be approximated (notes)."""

    argvs: list[list[str]]
    ports: list[int]
    cost_model: str
    notes: list[str] = field(default_factory=list)


def plan_fleet(options: EngineOptions, flags: frozenset[str]) -> FleetPlan:
    speed, cost_model, notes = _speed_flags(options, flags)
    models = [arg for model in options.models for arg in ("--model", model)]
    common = [*models, "--time-scale", f"{options.time_scale:g}", *speed, *exact_lengths(flags)]
    if "--fleet" in flags and options.count > 1:
        base = free_port_range(options.count)
        argv = [*GATEWAY_CLI, "emulate", "--fleet", str(options.count), "--port", str(base)]
        ports = list(range(base, base + options.count))
        return FleetPlan([argv + common], ports, cost_model, notes)
    ports = [free_port_range(1) for _ in range(options.count)]
    argvs = [[*GATEWAY_CLI, "emulate", "--port", str(port), *common] for port in ports]
    return FleetPlan(argvs, ports, cost_model, notes)


def exact_lengths(flags: frozenset[str]) -> list[str]:
    """A trace's `max_tokens` is the answer's length (FORMAT.md): every answer runs to it.
    An emulator older than the end-of-sequence draw always did, and has no flag for it."""
    return ["--ignore-eos"] if "--ignore-eos" in flags else []


def _speed_flags(options: EngineOptions, flags: frozenset[str]) -> tuple[list[str], str, list[str]]:
    if "--cost-model" in flags:
        wanted = [
            ("--cost-model", options.cost_model),
            ("--kv-capacity-tokens", str(options.kv_capacity_tokens)),
            ("--prefill-tokens-per-s", f"{options.prefill_tokens_per_s:g}"),
            ("--decode-base-ms", f"{options.decode_base_ms:g}"),
            ("--decode-per-seq-ms", f"{options.decode_per_seq_ms:g}"),
        ]
        missing = [flag for flag, _ in wanted if flag not in flags]
        notes = [f"emulator lacks {', '.join(missing)}: its defaults apply"] if missing else []
        return (
            [a for flag, v in wanted if flag in flags for a in (flag, v)],
            options.cost_model,
            notes,
        )
    # No cost model yet: the linear one at the same prefill rate and decode step, no cache.
    per_1k_ms = 1_000_000 / options.prefill_tokens_per_s
    linear = ["--prefill-ms-per-1k-tokens", f"{per_1k_ms:g}"]
    linear += ["--token-delay-ms", f"{options.decode_base_ms:g}"]
    note = "emulator has no --cost-model: linear timing, no KV cache, no batching"
    return linear, "linear", [note]


def free_port_range(count: int, attempts: int = 50) -> int:
    """A base port P with P..P+count-1 all free on 127.0.0.1 a moment ago."""
    for _ in range(attempts):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base: int = probe.getsockname()[1]
        if base + count < 65536 and all(_port_free(base + i) for i in range(count)):
            return base
    raise StartError(f"no {count} consecutive free loopback ports")


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Fleet:
    """The emulated engines of one run; `stop()` is safe to call at any point."""

    def __init__(self, plan: FleetPlan, workdir: Path) -> None:
        self.plan = plan
        self._workdir = workdir
        self.servers: list[Server] = []

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.plan.ports]

    def start(self) -> None:
        for i, argv in enumerate(self.plan.argvs):
            log = self._workdir / f"engine-{i}.log"
            self.servers.append(Server(f"emulator {i}", argv, log, env=local_env()))
        owner = self.servers if len(self.servers) == len(self.plan.ports) else None
        for i, url in enumerate(self.urls):
            server = owner[i] if owner else self.servers[0]
            server.wait_ready(f"{url}/health", READY_TIMEOUT_S)

    def stop(self) -> None:
        while self.servers:
            self.servers.pop().stop()


def backend_names(count: int) -> list[str]:
    return [f"engine-{i}" for i in range(count)]


def start_gateway(
    config: dict[str, Any], port: int, workdir: Path, name: str, *, log_level: str = "warning"
) -> Server:
    """`switchyard serve` on `config`; ready once /healthz answers."""
    path = workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    argv = [*GATEWAY_CLI, "serve", "--config", str(path), "--port", str(port)]
    server = Server(
        name, [*argv, "--log-level", log_level], workdir / f"{name}.log", env=local_env()
    )
    try:
        server.wait_ready(f"http://127.0.0.1:{port}/healthz", READY_TIMEOUT_S)
    except BaseException:  # Ctrl-C too: nobody else knows this PID yet
        server.stop()
        raise
    return server


def stop_all(servers: Sequence[Server | Fleet | None]) -> None:
    """Stop in reverse start order; each by PID."""
    for server in reversed(servers):
        if server is not None:
            server.stop()
