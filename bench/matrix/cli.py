"""`switchyard bench matrix` (`python -m bench.matrix`): every workload cell, every policy."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.replay.cli import DEFAULT_REPLAY_S, positive, sigterm_as_interrupt
from bench.replay.fleet import EngineOptions
from bench.replay.profiles import DEFAULT_POLICIES, PROFILES, SGLANG, targets_from
from bench.replay.trace import TraceError

from .report import render, write_json
from .runner import LOADS, SLO, Matrix, MatrixOptions, load_catalog, run_matrix

DEFAULT_REQUESTS = 1_200
QUICK_REQUESTS = 200
QUICK_REPLAY_S = 15.0
"""--quick squeezes each trace's nominal span into about this long (full: 150 s)."""
QUICK_LOAD = "calibrated"
FULL_TIMEOUT_S = 900.0
QUICK_TIMEOUT_S = 120.0


def _names(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


def _seeds(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in _names(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cells", type=_names, help="comma-separated (default: every cell)")
    parser.add_argument("--seeds", type=_seeds, help="comma-separated (default: the catalog's)")
    parser.add_argument(
        "--loads", type=_names, help=f"comma-separated: {', '.join(LOADS)} (default: both)"
    )
    parser.add_argument(
        "--requests", type=positive(int), help=f"per trace (default {DEFAULT_REQUESTS:,})"
    )
    parser.add_argument(
        "--policies",
        type=_names,
        default=DEFAULT_POLICIES,
        help=f"comma-separated: {', '.join([*PROFILES, SGLANG])} "
        f"(default: {','.join(DEFAULT_POLICIES)})",
    )
    parser.add_argument(
        "--time-scale",
        type=positive(float),
        help=f"trace and engine time factor (default: each trace in ~{DEFAULT_REPLAY_S:g} s)",
    )
    parser.add_argument("--json", type=Path, help="write parameters, rows and targets here")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_REQUESTS} requests, the first seed, {QUICK_LOAD} load, each trace in "
        f"~{QUICK_REPLAY_S:g} s (explicit options still win)",
    )
    parser.add_argument("--logs", type=Path, help="keep traces and logs here (default: temp dir)")
    parser.add_argument("--no-progress", action="store_true", help="no per-run progress line")


def options_from(args: argparse.Namespace, matrix: Matrix) -> MatrixOptions:
    """The matrix to run; ValueError names an unknown cell or load."""
    cells = args.cells or tuple(matrix.cells)
    loads = args.loads or ((QUICK_LOAD,) if args.quick else tuple(LOADS))
    _known("cell", cells, matrix.cells)
    _known("load", loads, LOADS)
    seeds = args.seeds or (matrix.seeds[:1] if args.quick else matrix.seeds)
    if not seeds:
        raise ValueError("no seeds: pass --seeds")
    return MatrixOptions(
        cells=cells,
        seeds=seeds,
        loads=loads,
        requests=args.requests or (QUICK_REQUESTS if args.quick else DEFAULT_REQUESTS),
        time_scale=args.time_scale,
        replay_s=QUICK_REPLAY_S if args.quick else DEFAULT_REPLAY_S,
        request_timeout_s=QUICK_TIMEOUT_S if args.quick else FULL_TIMEOUT_S,
        progress=not args.no_progress,
    )


def _known(kind: str, names: Sequence[str], known: Any) -> None:
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"unknown {kind} {', '.join(unknown)} (known: {', '.join(known)})")


def parameters(options: MatrixOptions, policies: Sequence[str], quick: bool) -> dict[str, Any]:
    fleet = EngineOptions().describe()
    del fleet["prefill_tokens_per_s"]  # set by the load
    return {
        "quick": quick,
        "cells": list(options.cells),
        "seeds": list(options.seeds),
        "loads": {load: {"prefill_tokens_per_s": LOADS[load]} for load in options.loads},
        "requests": options.requests,
        "policies": list(policies),
        "time_scale": options.time_scale,
        "replay_s": options.replay_s,
        "ttft_slo_ms": SLO.ttft_ms,
        "tpot_slo_ms": SLO.tpot_ms,
        **fleet,
    }


def header(p: dict[str, Any]) -> str:
    loads = ", ".join(f"{n} = prefill {v['prefill_tokens_per_s']:,.0f} tok/s"
                      for n, v in p["loads"].items())  # fmt: skip
    scale = f"{p['time_scale']:g}" if p["time_scale"] else f"each trace in ~{p['replay_s']:g} s"
    return (
        f"matrix{' (quick)' if p['quick'] else ''}: {len(p['cells'])} cells x "
        f"{len(p['seeds'])} seed(s) x {len(p['loads'])} load(s), {p['requests']:,} requests "
        f"per trace; {p['fleet_size']} engines x {p['kv_capacity_tokens']:,} KV tokens, {loads}, "
        f"decode {p['decode_base_ms']:g} ms + {p['decode_per_seq_ms']:g} ms/seq; SLO TTFT "
        f"{p['ttft_slo_ms']:g} ms / TPOT {p['tpot_slo_ms']:g} ms; time scale: {scale}"
    )


def run(args: argparse.Namespace, matrix: Matrix | None = None) -> int:
    """Run the matrix and print the report; 0 if any run measured, 2 on bad options,
    130 when interrupted (the runs done so far are still reported)."""
    sigterm_as_interrupt()
    try:
        matrix = matrix or load_catalog()
        options = options_from(args, matrix)
        targets = targets_from(list(args.policies), None)
    except ValueError as exc:
        print(f"matrix: {exc}", file=sys.stderr)
        return 2
    params = parameters(options, [t.name for t in targets], args.quick)
    print(header(params), file=sys.stderr)
    rows: list[dict[str, Any]] = []
    code = 0
    with tempfile.TemporaryDirectory(prefix="switchyard-matrix-") as tmp:
        workdir = args.logs or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            rows.extend(run_matrix(matrix, options, targets, workdir))
        except KeyboardInterrupt:
            print("\nmatrix: interrupted; every process it started has been stopped",
                  file=sys.stderr)  # fmt: skip
            code = 130
        except (TraceError, OSError) as exc:
            print(f"matrix: {exc}", file=sys.stderr)
            code = 2
    if rows:
        print(render(rows, header(params)))
    if args.json:
        write_json(args.json, rows, params)
    if code:
        return code
    return 0 if any(not row["error"] for row in rows) else 1


def main(argv: Sequence[str] | None = None, matrix: Matrix | None = None) -> int:
    parser = argparse.ArgumentParser(prog="switchyard bench matrix", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv), matrix)
