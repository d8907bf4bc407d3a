"""Runs one target: a cold fleet, the router in front of it, the replay, the numbers.

Whatever fails to start becomes the row's `error`; processes are stopped by PID in
`finally`, Ctrl-C included.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp

from bench.procs import Server, StartError, free_port
from gateway.config.root import parse_config
from gateway.errors import ConfigError

from . import engine_stats
from .breakdown import breakdowns
from .client import HttpTransport, fetch_all, new_session
from .costs import cost_summary, gateway_cost_usd
from .fleet import EngineOptions, Fleet, FleetPlan, backend_names, emulator_flags, plan_fleet
from .fleet import start_gateway as start_gateway_process
from .hybrid import HybridPlan, plan_hybrid
from .metrics import (
    Slo,
    backend_counts,
    cache_summary,
    error_kinds,
    imbalance_summary,
    latency_summary,
    percentile,
    throughput_summary,
)
from .overload import overload_measures
from .profiles import FleetRoute, Target, profile_config, user_config
from .progress import replay_with_progress
from .schedule import ReplayRun, RequestResult
from .sglang import start_sglang_router
from .trace import Trace, TraceRequest

UPSTREAM_MODEL = "emulated-model"


@dataclass(frozen=True)
class ReplaySettings:
    trace: Trace
    requests: Sequence[TraceRequest]
    route: str
    engines: EngineOptions
    slo: Slo
    send_session: bool
    request_timeout_s: float
    progress: bool
    workdir: Path
    access_log: bool = False
    """Gateways log every request (decision, reasons) to their log in `workdir`."""
    hybrid: bool = False
    """The hybrid fleet (`hybrid.py`: local engines and emulated clouds) instead of
    `engines.count` identical engines."""
    timeline_s: float | None = None
    """Report goodput per window of this many trace seconds (`overload.timeline`)."""


@dataclass(frozen=True)
class Router:
    """What the client talks to; `server` is None only in tests that bring their own."""

    base_url: str
    server: Server | None
    names: dict[str, str]
    """Engine URL -> backend name, in fleet order."""
    is_gateway: bool
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Measured:
    run: ReplayRun
    stats_before: list[Any]
    stats_after: list[Any]
    decision_us: list[float]
    gateway_cost_usd: float | None = None


def run_target(target: Target, settings: ReplaySettings) -> dict[str, Any]:
    """One report row; never raises for a target that cannot start."""
    fleet: Fleet | None = None
    router: Router | None = None
    try:
        plan, hybrid = _plan(settings)
        fleet = Fleet(plan, settings.workdir)
        fleet.start()
        router = start_router(target, fleet.urls, settings, hybrid)
        measured = asyncio.run(measure(router, fleet.urls, settings, target.name))
        notes = [*plan.notes, *router.notes]
        row = summarise(target.name, measured, router, settings, plan.cost_model, notes)
        if hybrid is not None:
            add_costs(row, measured, hybrid, settings)
        return row
    except (StartError, ConfigError, ValueError, OSError, subprocess.SubprocessError) as exc:
        return {"policy": target.name, "error": _one_line(exc)}
    finally:
        if router is not None and router.server is not None:
            router.server.stop()
        if fleet is not None:
            fleet.stop()


def _plan(settings: ReplaySettings) -> tuple[FleetPlan, HybridPlan | None]:
    if settings.hybrid:
        hybrid = plan_hybrid(settings.engines)
        return hybrid.fleet, hybrid
    return plan_fleet(settings.engines, emulator_flags()), None


def add_costs(
    row: dict[str, Any], measured: Measured, hybrid: HybridPlan, settings: ReplaySettings
) -> None:
    """The run's cost measures, each backend's share, and the gateway's own total."""
    run = measured.run
    costs = cost_summary(run.results, hybrid.prices, settings.slo, run.time_scale)
    for name, usd in costs.pop("cost_usd_by_backend").items():
        row["backends"].setdefault(name, {})["cost_usd"] = usd
    row.update(costs, gateway_cost_usd=measured.gateway_cost_usd)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, ConfigError):
        return "gateway config: " + "; ".join(exc.problems)
    return " ".join(str(exc).split()) or type(exc).__name__


def start_router(
    target: Target,
    engine_urls: list[str],
    settings: ReplaySettings,
    hybrid: HybridPlan | None = None,
) -> Router:
    known = hybrid.names if hybrid is not None else backend_names(len(engine_urls))
    names = dict(zip(engine_urls, known, strict=True))
    if target.kind == "sglang" and hybrid is not None:
        raise ValueError("SGLang's router cannot reach the hybrid fleet's Anthropic backend")
    if target.kind == "sglang":
        server, port, version = start_sglang_router(engine_urls, settings.workdir)
        note = f"sglang-router {version or '(version unknown)'}, policy cache_aware"
        return Router(f"http://127.0.0.1:{port}", server, names, is_gateway=False, notes=(note,))
    port = free_port()
    ring_size = max(4096, len(settings.requests))  # every decision still there at the end
    engines = settings.engines
    scale = engines.time_scale or 1.0
    # The engines' true speeds, in the wall-clock units the gateway observes.
    cache = {
        "capacity_tokens": engines.kv_capacity_tokens,
        "prefill_tokens_per_s": engines.prefill_tokens_per_s / scale,
        "tpot_ms": engines.decode_base_ms * scale,
    }
    backends = {n: u for u, n in names.items()}
    # The SLOs in wall-clock ms, as the gateway measures.
    slo = {"ttft_ms": settings.slo.ttft_ms * scale, "tpot_ms": settings.slo.tpot_ms * scale}
    fleet = FleetRoute(settings.route, UPSTREAM_MODEL, backends, ring_size, cache, slo=slo)
    if hybrid is not None:
        fleet = replace(fleet, entries=hybrid.backends, sla=slo)
    if target.kind == "config":
        assert target.config_path is not None
        config = user_config(target.config_path, fleet, port)
    else:
        assert target.profile is not None
        config = profile_config(target.profile, fleet, port)
    if settings.access_log:  # each request with its decision and reasons, not the short line
        config.setdefault("telemetry", {})["access_log"] = "json"
    parse_config(config, source=f"{target.name} (generated)")  # named problems, not a log tail
    server = start_gateway_process(
        config,
        port,
        settings.workdir,
        f"gateway-{_slug(target.name)}",
        log_level="info" if settings.access_log else "warning",
    )
    return Router(f"http://127.0.0.1:{port}", server, names, is_gateway=True)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c == "-" else "-" for c in name)


async def measure(
    router: Router, engine_urls: list[str], settings: ReplaySettings, label: str
) -> Measured:
    stats_urls = [f"{url}/emulator/stats" for url in engine_urls]
    async with new_session(settings.request_timeout_s) as session:
        before = await fetch_all(session, stats_urls)
        run = await _replay_with_progress(session, router, settings, label)
        after = await fetch_all(session, stats_urls)
        decision_us = await _decision_times(session, router, run) if router.is_gateway else []
        spent = (
            await gateway_cost_usd(session, router.base_url, len(run.results))
            if router.is_gateway
            else None
        )
    return Measured(run, before, after, decision_us, spent)


async def _replay_with_progress(
    session: aiohttp.ClientSession, router: Router, settings: ReplaySettings, label: str
) -> ReplayRun:
    transport = HttpTransport(
        session,
        f"{router.base_url}/v1",
        settings.trace,
        model=settings.route,
        send_session=settings.send_session,
    )
    return await replay_with_progress(
        settings.requests,
        transport,
        time_scale=settings.engines.time_scale,
        label=label,
        enabled=settings.progress,
    )


async def _decision_times(
    session: aiohttp.ClientSession, router: Router, run: ReplayRun
) -> list[float]:
    """HOOK: the gateway's own decision time per request, from its decisions endpoint.

    Reads `total_us` of each decision record; swap in a response header or a /metrics
    histogram here if the gateway exposes one.
    """
    ids = [r.decision_id for r in run.results if r.decision_id]
    urls = [f"{router.base_url}/v1/switchyard/decisions/{i}" for i in ids]
    records = await fetch_all(session, urls)
    times = [rec.get("total_us") for rec in records if isinstance(rec, dict)]
    return [float(t) for t in times if isinstance(t, int | float)]


def summarise(
    name: str,
    measured: Measured,
    router: Router,
    settings: ReplaySettings,
    cost_model: str,
    notes: list[str],
) -> dict[str, Any]:
    run = measured.run
    results = run.results
    engines = engine_stats.per_engine(
        measured.stats_before, measured.stats_after, list(router.names.values()), run
    )
    if router.is_gateway:
        per_backend = backend_counts(results, list(router.names.values()))
    else:
        per_backend = engine_stats.as_backend_counts(engines)
    for backend, row in per_backend.items():
        if backend in engines:
            row["prefill_utilisation"] = engines[backend].prefill_utilisation
            row["kv_held_mean"] = engines[backend].kv_held_mean
    decision = measured.decision_us
    notes = [*notes, *output_shortfall(results, settings.requests)]
    return {
        "policy": name,
        "error": None,
        **throughput_summary(run, settings.slo),
        **cache_summary(results),
        **latency_summary(results, run.time_scale),
        **imbalance_summary(per_backend),
        "decision_us_p50": _r(percentile(decision, 50)),
        "decision_us_p99": _r(percentile(decision, 99)),
        "prefill_utilisation_mean": engine_stats.mean_utilisation(engines),
        "kv_held_mean": engine_stats.mean_kv_held(engines),
        "backends": per_backend,
        "engine_stats": {n: e.delta for n, e in engines.items()},
        "error_kinds": error_kinds(results),
        **breakdowns(results, settings.requests, settings.slo, run.time_scale),
        **overload_measures(run, settings.slo, settings.timeline_s, settings.trace.burst_s),
        "cost_model": cost_model,
        "notes": notes,
    }


def output_shortfall(
    results: Sequence[RequestResult], requests: Sequence[TraceRequest]
) -> list[str]:
    """Runs are only comparable when engines generate the `max_tokens` the trace asks for."""
    asked = {r.id: r.max_tokens for r in requests}
    ok = [r for r in results if r.ok and r.completion_tokens is not None]
    wanted = sum(asked[r.request_id] for r in ok)
    got = sum(r.completion_tokens or 0 for r in ok)
    if wanted and got < 0.9 * wanted:
        return [f"engines generated {got:,} of the {wanted:,} output tokens asked for"]
    return []


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
