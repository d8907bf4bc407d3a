"""One policy on fresh llama.cpp replicas: start them (so every cache is cold, the host-memory
prompt cache included), the gateway in front of them with the policy's profile, the replay
at most `concurrency` requests in flight, the engines' counters before and after.

Replicas and the gateway are stopped by PID when the policy is done, also on errors and
Ctrl-C; a policy that cannot start becomes a row with its `error`.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bench.procs import Server, StartError, free_port
from bench.replay.client import HttpTransport, fetch_all, new_session
from bench.replay.fleet import start_gateway
from bench.replay.profiles import FleetRoute, GatewayProfile, profile_config
from bench.replay.progress import replay_with_progress
from bench.replay.schedule import ReplayRun, RequestResult, Transport
from bench.replay.trace import Trace, TraceRequest
from gateway.config.root import parse_config
from gateway.engines.config_writer import backend_entry
from gateway.engines.errors import EngineError
from gateway.engines.launcher import ReplicaOptions, host_cache_tokens, running_replicas
from gateway.engines.state import Replica
from gateway.errors import ConfigError

from .engine_counters import Counters, delta, read_counters


@dataclass(frozen=True)
class EngineSettings:
    """The replicas every policy gets: the same model and settings, started afresh."""

    model_path: Path
    model_alias: str
    replicas: int = 2
    ctx_size: int = 2048
    cache_ram_mib: int = 64
    slots_only: bool = False
    """Tell the gateway what the slot holds, not the host-memory prompt cache on top."""

    @property
    def options(self) -> ReplicaOptions:
        return ReplicaOptions(
            model_path=self.model_path, ctx_size=self.ctx_size, cache_ram_mib=self.cache_ram_mib
        )

    @property
    def capacity_tokens(self) -> int:
        """The prompt tokens a replica keeps, as the gateway is told: its slot, then (unless
        `slots_only`) its host-memory cache, sized from the model file's KV shape."""
        return self.ctx_size + (0 if self.slots_only else host_cache_tokens(self.options))


@dataclass(frozen=True)
class RunSettings:
    trace: Trace
    engines: EngineSettings
    time_scale: float
    concurrency: int
    route: str
    request_timeout_s: float
    progress: bool
    workdir: Path


@dataclass(frozen=True)
class PolicyRun:
    """What one policy's replay measured, before any summary."""

    run: ReplayRun
    replicas: tuple[str, ...]
    counters: dict[str, Counters | None]
    """Per replica: its counters' change over the replay (None: /metrics did not answer)."""
    decisions: dict[str, Any]
    """The gateway's decision record of each request, by decision id (what each policy
    scored and why), read from its decisions endpoint before it stopped."""


class CappedTransport:
    """At most `limit` requests in flight; the others wait here, before their clock starts
    (the wait shows as dispatch lag, not in TTFT)."""

    def __init__(self, inner: Transport, limit: int) -> None:
        self._inner = inner
        self._gate = asyncio.Semaphore(limit)

    async def send(self, request: TraceRequest) -> RequestResult:
        async with self._gate:
            return await self._inner.send(request)


def run_policy(name: str, profile: GatewayProfile, settings: RunSettings) -> PolicyRun | str:
    """The policy's measurements, or why it could not run (one line)."""
    engines = settings.engines
    log_dir = settings.workdir / _slug(name)
    try:
        with running_replicas(
            engines.replicas,
            engines.model_path,
            ctx_size=engines.ctx_size,
            cache_ram_mib=engines.cache_ram_mib,
            log_dir=log_dir,
        ) as replicas:
            gateway = _start_gateway(name, profile, replicas, settings, log_dir)
            try:
                return asyncio.run(_measure(gateway[1], replicas, settings, name))
            finally:
                gateway[0].stop()
    except ConfigError as exc:
        return "gateway config: " + "; ".join(exc.problems)
    except (EngineError, StartError, OSError, subprocess.SubprocessError) as exc:
        return " ".join(str(exc).split()) or type(exc).__name__


def gateway_config(
    profile: GatewayProfile, replicas: Sequence[Replica], settings: RunSettings, port: int
) -> dict[str, Any]:
    """The replay's config for `profile` (one route, no probes, long deadlines) over the
    replicas as `switchyard engines start` writes them: kind llama-cpp, metrics on."""
    alias = settings.engines.model_alias
    ring_size = max(4096, len(settings.trace.requests))
    urls = {r.name: r.origin for r in replicas}
    config = profile_config(profile, FleetRoute(settings.route, alias, urls, ring_size), port)
    backends = [backend_entry(r, alias) for r in replicas]
    for backend in backends:
        backend["cache"]["capacity_tokens"] = settings.engines.capacity_tokens
        backend["probes"] = {"enabled": False}  # every policy gets the same engine time
    config["backends"] = backends
    return config


def _start_gateway(
    name: str,
    profile: GatewayProfile,
    replicas: Sequence[Replica],
    settings: RunSettings,
    log_dir: Path,
) -> tuple[Server, str]:
    port = free_port()
    config = gateway_config(profile, replicas, settings, port)
    parse_config(config, source=f"{name} (generated)")  # named problems, not a log tail
    server = start_gateway(config, port, log_dir, "gateway")
    return server, f"http://127.0.0.1:{port}"


async def _measure(
    gateway_url: str, replicas: Sequence[Replica], settings: RunSettings, label: str
) -> PolicyRun:
    async with new_session(settings.request_timeout_s) as session:
        before = await _read_all(session, replicas)
        run = await _replay(session, gateway_url, settings, label)
        after = await _read_all(session, replicas)
        decisions = await _decisions(session, gateway_url, run)
    counters = {r.name: delta(before[r.name], after[r.name]) for r in replicas}
    return PolicyRun(run, tuple(r.name for r in replicas), counters, decisions)


async def _decisions(
    session: aiohttp.ClientSession, gateway_url: str, run: ReplayRun
) -> dict[str, Any]:
    ids = [r.decision_id for r in run.results if r.decision_id]
    urls = [f"{gateway_url}/v1/switchyard/decisions/{i}" for i in ids]
    records = await fetch_all(session, urls)
    return {i: rec for i, rec in zip(ids, records, strict=True) if isinstance(rec, dict)}


async def _read_all(
    session: aiohttp.ClientSession, replicas: Sequence[Replica]
) -> dict[str, Counters | None]:
    readings = await asyncio.gather(*(read_counters(session, r.origin) for r in replicas))
    return {r.name: reading for r, reading in zip(replicas, readings, strict=True)}


async def _replay(
    session: aiohttp.ClientSession, gateway_url: str, settings: RunSettings, label: str
) -> ReplayRun:
    trace = settings.trace
    http = HttpTransport(session, f"{gateway_url}/v1", trace, model=settings.route)
    return await replay_with_progress(
        trace.requests,
        CappedTransport(http, settings.concurrency),
        time_scale=settings.time_scale,
        label=label,
        enabled=settings.progress,
    )


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c == "-" else "-" for c in name)
