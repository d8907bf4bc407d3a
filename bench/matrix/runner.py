"""Runs the workload matrix: every (cell, seed, load) through every policy, on fresh fleets.

Each run is one `bench.replay.runner.run_target` (a cold fleet, the router in front, the
numbers in a replay row), so a matrix row carries every key a replay row has, plus the
cell, seed and load it was measured on and the offline bounded longest-prefix router's
hit ratio at the row's own pace.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

from bench.replay.cli import add_offline_at_response_time, default_time_scale
from bench.replay.fleet import EngineOptions
from bench.replay.metrics import Slo
from bench.replay.oracle import offline_references
from bench.replay.profiles import Target
from bench.replay.report import complete_row
from bench.replay.runner import UPSTREAM_MODEL, ReplaySettings, run_target
from bench.replay.trace import Trace, load_trace

LOADS: dict[str, float] = {"light": 8_000.0, "calibrated": 4_000.0}
"""Prefill tokens/s per engine for each load; decode is the same for both (docs/replay.md)."""
ROUTE = "default"
BOUNDED = "bounded-longest-prefix"
SLO = Slo(ttft_ms=2_000.0, tpot_ms=60.0)


class Workload(Protocol):
    """A cell of the matrix: what `bench.workloads.catalog.CATALOG` maps names to."""

    @property
    def name(self) -> str: ...

    @property
    def family(self) -> str: ...

    def write(self, path: Path, seed: int, requests: int) -> Path: ...


@dataclass(frozen=True)
class Matrix:
    """The cells there are and the seeds to run them with by default."""

    cells: Mapping[str, Workload]
    seeds: tuple[int, ...]


def load_catalog() -> Matrix:
    """The repository's workload catalog (imported only when a matrix runs)."""
    from bench.workloads.catalog import CATALOG, SEEDS

    return Matrix(CATALOG, tuple(SEEDS))


@dataclass(frozen=True)
class MatrixOptions:
    cells: tuple[str, ...]
    seeds: tuple[int, ...]
    loads: tuple[str, ...]
    requests: int
    time_scale: float | None
    """None: each trace's nominal span squeezed into about `replay_s` wall seconds."""
    replay_s: float
    request_timeout_s: float
    progress: bool


@dataclass(frozen=True)
class PreparedTrace:
    """One (cell, seed) trace with what every run on it shares: time scale, references."""

    workload: Workload
    seed: int
    trace: Trace
    time_scale: float
    oracle: float
    references: dict[str, Any]


def prepare(workload: Workload, seed: int, options: MatrixOptions, workdir: Path) -> PreparedTrace:
    """Write the trace and compute the offline references on the matrix's fleet."""
    path = workload.write(workdir / f"{workload.name}-seed{seed}.jsonl", seed, options.requests)
    trace = load_trace(path)
    scale = options.time_scale or default_time_scale(trace.nominal_span_s(), options.replay_s)
    fleet = EngineOptions()
    found = offline_references(trace, fleet.count, fleet.kv_capacity_tokens)
    references = {
        "trace_name": trace.meta.get("name", workload.name),
        "requests": len(trace.requests),
        **found.parameters(),
    }
    return PreparedTrace(workload, seed, trace, scale, found.oracle.hit_ratio, references)


def engine_options(prepared: PreparedTrace, load: str) -> EngineOptions:
    """The calibrated fleet of docs/replay.md at `load`'s prefill speed."""
    return EngineOptions(
        prefill_tokens_per_s=LOADS[load],
        time_scale=prepared.time_scale,
        # SGLang's router forwards the route name as the model: engines serve both.
        models=tuple(dict.fromkeys((UPSTREAM_MODEL, ROUTE))),
    )


def run_cell(
    prepared: PreparedTrace, load: str, target: Target, options: MatrixOptions, workdir: Path
) -> dict[str, Any]:
    """One matrix row: `target` on a fresh fleet at `load`; never raises for a failed start."""
    engines = engine_options(prepared, load)
    logs = workdir / f"{prepared.workload.name}-seed{prepared.seed}-{load}"
    logs.mkdir(parents=True, exist_ok=True)
    settings = ReplaySettings(
        trace=prepared.trace,
        requests=prepared.trace.requests,
        route=ROUTE,
        engines=engines,
        slo=SLO,
        send_session=False,
        request_timeout_s=options.request_timeout_s,
        progress=options.progress,
        workdir=logs,
    )
    parameters = {
        **prepared.references,
        "time_scale": engines.time_scale,
        "time_scale_is_default": options.time_scale is None,
        "route": ROUTE,
        "ttft_slo_ms": SLO.ttft_ms,
        "tpot_slo_ms": SLO.tpot_ms,
        **engines.describe(),
    }
    row = complete_row(run_target(target, settings), prepared.oracle, parameters)
    add_offline_at_response_time(row, prepared.trace, engines)
    at_pace = row.get("offline_hit_ratios_at_e2e_p50") or {}
    labels = {
        "cell": prepared.workload.name,
        "family": prepared.workload.family,
        "seed": prepared.seed,
        "load": load,
    }
    return {**labels, **row, "offline_bounded_at_pace": at_pace.get(BOUNDED)}


def run_matrix(
    matrix: Matrix,
    options: MatrixOptions,
    targets: Sequence[Target],
    workdir: Path,
    log: TextIO = sys.stderr,
) -> Iterator[dict[str, Any]]:
    """Every row, as each run ends: cells, then seeds, then loads, then targets."""
    total = len(options.cells) * len(options.seeds) * len(options.loads) * len(targets)
    done = 0
    for cell, seed in itertools.product(options.cells, options.seeds):
        print(f"matrix: writing {cell} (seed {seed}) and its offline references", file=log)
        prepared = prepare(matrix.cells[cell], seed, options, workdir)
        for load, target in itertools.product(options.loads, targets):
            done += 1
            print(
                f"matrix: [{done}/{total}] {cell} seed {seed}, {load} load "
                f"(time scale {prepared.time_scale:g}): {target.name}",
                file=log,
                flush=True,
            )
            yield run_cell(prepared, load, target, options, workdir)
