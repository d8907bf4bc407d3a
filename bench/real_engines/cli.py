"""`switchyard bench real-engines` / `python -m bench.real_engines`: a multi-turn chat trace
replayed through several routing policies, each on freshly started llama.cpp replicas."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.replay.cli import positive, sigterm_as_interrupt
from bench.replay.profiles import PROFILES
from bench.replay.trace import Trace, TraceError, load_trace
from bench.workloads import real_chat
from bench.workloads.builder import write_lines
from gateway.engines.errors import EngineError
from gateway.engines.install import ensure_xllamacpp
from gateway.engines.launcher import ReplicaOptions
from gateway.engines.model_file import ensure_model

from .report import render_report, write_json
from .rounds import pool, pooled_requests, round_orders
from .runner import EngineSettings, PolicyRun, RunSettings, run_policy
from .summary import add_ratios, failed_row, summarise

DEFAULT_POLICIES = ("round-robin", "least-load", "cache-aware")
DEFAULT_TIME_SCALE = 0.25
"""Think times and starts at a quarter: conversations overlap, the engines keep up."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    shape = real_chat.RealChatShape()
    parser.add_argument("--trace", type=Path, help="a trace file (default: generate one)")
    parser.add_argument("--seed", type=int, default=shape.seed, help="of the generated trace")
    parser.add_argument("--conversations", type=positive(int), default=shape.conversations)
    parser.add_argument("--turns", type=positive(int), default=shape.turns, help="at most")
    parser.add_argument(
        "--policies",
        default=",".join(DEFAULT_POLICIES),
        help=f"comma-separated: {', '.join(PROFILES)} (default: %(default)s)",
    )
    parser.add_argument(
        "--rounds",
        type=positive(int),
        default=1,
        help="run every policy this many times, the order reversed each round, and pool "
        "each policy's rounds (evens out the machine's load drifting between policies)",
    )
    parser.add_argument("--time-scale", type=positive(float), default=DEFAULT_TIME_SCALE)
    parser.add_argument("--concurrency", type=positive(int), default=2, help="in flight at most")
    parser.add_argument("--replicas", type=positive(int), default=2)
    parser.add_argument("--ctx-size", type=positive(int), default=2048, help="tokens per slot")
    parser.add_argument("--cache-ram-mib", type=int, default=64, help="each replica's")
    parser.add_argument("--model", type=Path, help="GGUF (default: SmolLM2-135M-Instruct)")
    parser.add_argument(
        "--slots-only",
        action="store_true",
        help="tell the gateway what the slots hold, not the host-memory cache on top "
        "(sized from the model file's KV shape, as `engines start` writes it)",
    )
    parser.add_argument("--route", default="default", help="the gateway route replayed to")
    parser.add_argument("--request-timeout-s", type=positive(float), default=600.0)
    parser.add_argument("--json", type=Path, help="write the parameters and rows here")
    parser.add_argument("--logs", type=Path, help="keep configs and logs here")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--no-install", action="store_true", help="never pip-install anything")


def _trace(args: argparse.Namespace, workdir: Path) -> Trace:
    if args.trace is not None:
        return load_trace(args.trace)
    shape = real_chat.RealChatShape(
        seed=args.seed, conversations=args.conversations, turns=args.turns
    )
    return load_trace(write_lines(workdir / "real-chat.jsonl", real_chat.lines(shape)))


def _policies(text: str) -> list[str]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [n for n in names if n not in PROFILES]
    if unknown or not names:
        raise ValueError(f"unknown policy {unknown} (known: {', '.join(PROFILES)})")
    return names


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def parameters(args: argparse.Namespace, trace: Trace, engines: EngineSettings) -> dict[str, Any]:
    try:
        version = importlib.metadata.version("xllamacpp")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    generated = args.trace is None
    return {
        "trace": str(args.trace) if args.trace else "generated: bench.workloads.real_chat",
        "trace_name": trace.meta.get("name", "trace"),
        "seed": args.seed if generated else trace.meta.get("seed"),
        "conversations": args.conversations if generated else trace.meta.get("sessions"),
        "turns": args.turns if generated else None,
        "requests": len(trace.requests),
        "time_scale": args.time_scale,
        "concurrency": args.concurrency,
        "rounds": args.rounds,
        "replicas": engines.replicas,
        "model_file": engines.model_path.name,
        "ctx_size": engines.ctx_size,
        "cache_ram_mib": engines.cache_ram_mib,
        "gateway_capacity_tokens": engines.capacity_tokens,
        "threads": 1,
        "parallel": 1,
        "engine_version": version,
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "route": args.route,
    }


def _engines(args: argparse.Namespace) -> EngineSettings:
    ensure_xllamacpp(install=not args.no_install)
    model = ensure_model(args.model, download=not args.no_install)
    return EngineSettings(
        model_path=model,
        model_alias=ReplicaOptions(model_path=model).model_alias,
        replicas=args.replicas,
        ctx_size=args.ctx_size,
        cache_ram_mib=args.cache_ram_mib,
        slots_only=args.slots_only,
    )


def _run_all(names: list[str], settings: RunSettings, rounds: int) -> list[dict[str, Any]]:
    """Every policy in each round (the order alternates), then one pooled row per policy;
    a policy that fails in any round is a row with that round's error."""
    runs: dict[str, list[PolicyRun]] = {name: [] for name in names}
    errors: dict[str, str] = {}
    for order in round_orders(names, rounds):
        for name in order:
            if name in errors:
                continue
            measured = run_policy(name, PROFILES[name], settings)
            if isinstance(measured, str):
                errors[name] = measured
            else:
                runs[name].append(measured)
    requests = pooled_requests(settings.trace.requests, rounds)
    rows = [
        failed_row(name, errors[name])
        if name in errors
        else summarise(name, pool(runs[name]), requests)
        for name in names
    ]
    add_ratios(rows)
    return rows


def run(args: argparse.Namespace) -> int:
    """Every policy in turn; prints the report; 0 unless no policy ran."""
    sigterm_as_interrupt()
    try:
        names = _policies(args.policies)
        engines = _engines(args)
    except (ValueError, EngineError) as exc:
        print(f"real-engines: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="switchyard-real-engines-") as tmp:
        workdir = args.logs or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            trace = _trace(args, workdir)
        except (TraceError, OSError) as exc:
            print(f"real-engines: {exc}", file=sys.stderr)
            return 2
        params = parameters(args, trace, engines)
        print(f"real-engines: {len(trace.requests)} requests, policies {', '.join(names)}",
              file=sys.stderr)  # fmt: skip
        settings = RunSettings(
            trace=trace,
            engines=engines,
            time_scale=args.time_scale,
            concurrency=args.concurrency,
            route=args.route,
            request_timeout_s=args.request_timeout_s,
            progress=not args.no_progress,
            workdir=workdir,
        )
        rows = _run_all(names, settings, args.rounds)
    print(render_report(rows, params))
    if args.json:
        write_json(args.json, rows, params)
    return 0 if any(not row.get("error") for row in rows) else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="switchyard bench real-engines", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("\nreal-engines: interrupted; its replicas and gateways are stopped", file=sys.stderr)
        return 130
