"""Running the phases: warm-up, then targets taking turns, CPU read around each turn."""

from __future__ import annotations

import asyncio
import math
import signal
import sys
from dataclasses import dataclass, field
from typing import Any

from bench.load import Pool, request_bytes
from bench.overhead.report import Measured, Phase, add_chunk_cpu, add_deltas, phase_metrics
from bench.procs import ProcSample, Server, sample


@dataclass
class Running:
    """A target ready for traffic; ``server`` is None for the direct path.

    ``pools[stream]``: streaming phases go to the paced engine, the others to the instant one.
    """

    name: str
    pools: dict[bool, Pool]
    server: Server | None = None
    idle: ProcSample | None = None


@dataclass(frozen=True)
class Settings:
    rounds: int
    max_tokens: int
    first_contact_requests: int
    engine_pids: dict[bool, int] = field(default_factory=dict)


async def _turn(
    run: Running, engine_pid: int, phase: Phase, requests: int, body: bytes, into: Measured
) -> None:
    before = sample(run.server.pid) if run.server else None
    engine_before = sample(engine_pid).cpu_s
    result = await run.pools[phase.stream].run(requests, phase.concurrency, body, phase.stream)
    into.engine_cpu_s += sample(engine_pid).cpu_s - engine_before
    if run.server and before:
        after = sample(run.server.pid)
        into.server_cpu_s += after.cpu_s - before.cpu_s
        into.server_sys_s += after.sys_s - before.sys_s
    into.sample.merge(result)


async def run_phase(
    phase: Phase, running: dict[str, Running], settings: Settings
) -> dict[str, Measured]:
    """Warm every target up, then ``rounds`` turns each, in a rotating order."""
    measured = {name: Measured() for name in running}
    bodies = {
        name: request_bytes(r.pools[phase.stream].target, phase.stream, settings.max_tokens)
        for name, r in running.items()
    }
    warm_up = max(2 * phase.concurrency, 20)
    for name, run in running.items():
        await run.pools[phase.stream].run(warm_up, phase.concurrency, bodies[name], phase.stream)
    per_round = math.ceil(phase.requests / settings.rounds)
    names = list(running)
    engine_pid = settings.engine_pids[phase.stream]
    for turn in range(settings.rounds):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            run = running[name]
            await _turn(run, engine_pid, phase, per_round, bodies[name], measured[name])
    return measured


CpuPerRequest = dict[tuple[int, str], float | None]


def summarise_phase(
    phase: Phase, measured: dict[str, Measured], running: dict[str, Running], base: CpuPerRequest
) -> dict[str, Any]:
    results = {
        name: phase_metrics(phase, m, running[name].server is not None)
        for name, m in measured.items()
    }
    add_deltas(results)
    for name, m in measured.items():
        if phase.stream:
            add_chunk_cpu(results[name], m, base.get((phase.concurrency, name)))
        else:
            base[(phase.concurrency, name)] = results[name].get("cpu_us_per_req")
    return {
        "name": phase.name,
        "concurrency": phase.concurrency,
        "stream": phase.stream,
        "requests_planned": phase.requests,
        "results": results,
    }


async def run_all(
    phases: list[Phase], running: dict[str, Running], settings: Settings
) -> list[dict[str, Any]]:
    """Every phase in order (non-streaming first: chunk CPU needs their per-request CPU)."""
    main_task = asyncio.current_task()
    assert main_task is not None
    for signum in (signal.SIGINT, signal.SIGTERM):  # stop cleanly, not mid-callback
        asyncio.get_running_loop().add_signal_handler(signum, main_task.cancel)
    for run in running.values():
        run.idle = sample(run.server.pid) if run.server else None
    for run in running.values():  # first contact: lazy imports, pools, caches
        for stream, pool in run.pools.items():
            body = request_bytes(pool.target, stream, settings.max_tokens)
            await pool.run(settings.first_contact_requests, 4, body, stream)
    summaries: list[dict[str, Any]] = []
    base: CpuPerRequest = {}
    try:
        for phase in phases:
            print(f"  {phase.name}: {phase.requests} requests per target ...", file=sys.stderr)
            measured = await run_phase(phase, running, settings)
            summaries.append(summarise_phase(phase, measured, running, base))
    finally:
        for run in running.values():
            for pool in run.pools.values():
                await pool.close()
    return summaries


def record_memory(running: dict[str, Running], info: dict[str, Any]) -> None:
    """Idle RSS (sampled before traffic) and peak RSS (VmHWM now) of each server tree."""
    for name, run in running.items():
        if run.server is None or run.idle is None:
            continue
        end = sample(run.server.pid)
        info.setdefault(name, {}).update(
            pid=run.server.pid,
            processes=end.processes,
            idle_rss_mb=round(run.idle.rss_kb / 1024, 1),
            peak_rss_mb=round(end.hwm_kb / 1024, 1),
        )
