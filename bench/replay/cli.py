"""`switchyard bench replay` / `python -m bench.replay`: replay a trace through each policy."""

from __future__ import annotations

import argparse
import contextlib
import math
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from .classes import ClassRule, only_class, only_tenant, with_classes
from .fleet import EngineOptions
from .hybrid import CLOUDS, LOCAL_COUNT, describe_hybrid
from .metrics import Slo
from .oracle import offline_references, offline_routing_hit_ratios
from .profiles import DEFAULT_POLICIES, HYBRID_POLICIES, PROFILES, SGLANG, Target, targets_from
from .report import complete_row, render, write_json
from .runner import UPSTREAM_MODEL, ReplaySettings, run_target
from .trace import Trace, TraceError, TraceRequest, load_trace

DEFAULT_REPLAY_S = 150.0
"""The default time scale squeezes the trace's nominal span into about this long."""


def default_time_scale(nominal_span_s: float, replay_s: float = DEFAULT_REPLAY_S) -> float:
    """min(1, replay_s / span), to two significant digits."""
    if nominal_span_s <= replay_s:
        return 1.0
    raw = replay_s / nominal_span_s
    digits = 1 - math.floor(math.log10(raw))
    return round(raw, digits)


def positive(kind: type[float] | type[int]) -> Any:
    """An argparse type: `kind` values above 0."""

    def parse(text: str) -> float | int:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    engine = EngineOptions()
    parser.add_argument("--trace", required=True, type=Path, help="trace file (JSON Lines)")
    parser.add_argument(
        "--policies",
        help=f"comma-separated: {', '.join([*PROFILES, SGLANG])} (default: "
        f"{','.join(DEFAULT_POLICIES)}; with --fleet hybrid {','.join(HYBRID_POLICIES)})",
    )
    parser.add_argument(
        "--fleet",
        choices=("engines", "hybrid"),
        default="engines",
        help="engines: --fleet-size identical engines; hybrid: 2 local engines, an "
        "OpenAI-format and an Anthropic-format emulated cloud, with prices (costs reported)",
    )
    parser.add_argument("--config", type=Path, help="also replay through this gateway config")
    parser.add_argument("--route", default="default", help="route the trace's model maps to")
    parser.add_argument("--limit", type=positive(int), help="replay only the first N requests")
    parser.add_argument(
        "--time-scale", type=positive(float), help="trace and engine time factor (default: auto)"
    )
    parser.add_argument("--send-session", action="store_true", help="send x-session-id")
    add_class_arguments(parser)
    parser.add_argument("--ttft-slo-ms", type=positive(float), default=2000.0)
    parser.add_argument("--tpot-slo-ms", type=positive(float), default=60.0)
    parser.add_argument("--fleet-size", type=positive(int), default=engine.count)
    parser.add_argument(
        "--kv-capacity-tokens", type=positive(int), default=engine.kv_capacity_tokens
    )
    parser.add_argument("--cost-model", default=engine.cost_model)
    parser.add_argument(
        "--prefill-tokens-per-s", type=positive(float), default=engine.prefill_tokens_per_s
    )
    parser.add_argument("--decode-base-ms", type=positive(float), default=engine.decode_base_ms)
    parser.add_argument("--decode-per-seq-ms", type=float, default=engine.decode_per_seq_ms)
    parser.add_argument("--request-timeout-s", type=positive(float), default=900.0)
    parser.add_argument(
        "--timeline-s",
        type=positive(float),
        metavar="W",
        help="also report good, slow, shed and failed requests per window of W trace "
        "seconds of when they were due and, on a trace with a burst (bench.workloads.burst), "
        "how soon goodput recovered after it",
    )
    parser.add_argument("--json", type=Path, help="write one JSON object per policy here")
    parser.add_argument("--logs", type=Path, help="keep process logs here (default: temp dir)")
    parser.add_argument("--no-progress", action="store_true", help="no progress line")
    parser.add_argument(
        "--access-log",
        action="store_true",
        help="gateways log every request with its decision and reasons (under --logs)",
    )


def add_class_arguments(parser: argparse.ArgumentParser) -> None:
    rule = ClassRule()
    parser.add_argument(
        "--classes",
        action="store_true",
        help="give requests without a priority/tenant in the trace one by a seeded rule, "
        "per session (trace values are always sent)",
    )
    parser.add_argument(
        "--class-seed", type=int, metavar="N", help=f"the rule's seed (default {rule.seed})"
    )
    parser.add_argument(
        "--interactive-share",
        type=float,
        metavar="F",
        help=f"share of sessions 'interactive', the rest 'batch' "
        f"(default {rule.interactive_share:g})",
    )
    parser.add_argument(
        "--only-tenant",
        metavar="NAME",
        help="replay only this tenant's requests (after the rule): the tenant alone on the "
        "fleet, to compare with its share of a full run",
    )
    parser.add_argument(
        "--only-class",
        metavar="NAME",
        help="replay only this class's requests (after the rule): the class alone on the "
        "fleet, the ceiling of its goodput in a full run",
    )
    parser.add_argument(
        "--tenant-weights",
        type=weights,
        metavar="W,W,...",
        help="relative shares of sessions per tenant, tenant-0 first "
        f"(default {','.join(f'{w:g}' for w in rule.tenant_weights)})",
    )


def weights(text: str) -> tuple[float, ...]:
    """An argparse type: comma-separated numbers above 0, at least one."""
    try:
        parsed = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 10,3,1, got {text}") from None
    if not all(math.isfinite(w) and w > 0 for w in parsed):
        raise argparse.ArgumentTypeError(f"every weight must be > 0, got {text}")
    return parsed


def class_rule(args: argparse.Namespace) -> ClassRule | None:
    """The seeded rule if `--classes`; ValueError for its settings without it, or bad ones."""
    given = {
        "seed": args.class_seed,
        "interactive_share": args.interactive_share,
        "tenant_weights": args.tenant_weights,
    }
    chosen = {name: value for name, value in given.items() if value is not None}
    if not args.classes:
        if chosen:
            raise ValueError(
                "--class-seed, --interactive-share and --tenant-weights need --classes"
            )
        return None
    return ClassRule(**chosen)


def _requests(trace: Trace, rule: ClassRule | None, args: argparse.Namespace) -> list[TraceRequest]:
    requests = with_classes(trace.requests, rule) if rule is not None else list(trace.requests)
    if args.only_tenant is not None:
        requests = only_tenant(requests, args.only_tenant)
    if args.only_class is not None:
        requests = only_class(requests, args.only_class)
    return requests


def _engines(args: argparse.Namespace, time_scale: float) -> EngineOptions:
    models = tuple(dict.fromkeys((UPSTREAM_MODEL, args.route)))
    hybrid = args.fleet == "hybrid"
    return EngineOptions(
        count=LOCAL_COUNT + len(CLOUDS) if hybrid else args.fleet_size,
        kv_capacity_tokens=args.kv_capacity_tokens,
        cost_model=args.cost_model,
        prefill_tokens_per_s=args.prefill_tokens_per_s,
        decode_base_ms=args.decode_base_ms,
        decode_per_seq_ms=args.decode_per_seq_ms,
        time_scale=time_scale,
        models=models,
    )


def parameters(
    args: argparse.Namespace,
    trace: Trace,
    engines: EngineOptions,
    default_scale: bool,
    rule: ClassRule | None = None,
) -> dict[str, Any]:
    return {
        "trace": str(args.trace),
        "trace_name": trace.meta.get("name", args.trace.stem),
        "requests": len(trace.requests),
        "limit": args.limit,
        "time_scale": engines.time_scale,
        "time_scale_is_default": default_scale,
        "route": args.route,
        "send_session": args.send_session,
        "class_rule": rule.describe() if rule is not None else None,
        "only_tenant": args.only_tenant,
        "only_class": args.only_class,
        "ttft_slo_ms": args.ttft_slo_ms,
        "tpot_slo_ms": args.tpot_slo_ms,
        "timeline_s": args.timeline_s,
        "burst_start_s": trace.burst_s[0] if trace.burst_s else None,
        "burst_end_s": trace.burst_s[1] if trace.burst_s else None,
        **engines.describe(),
        **(describe_hybrid() if args.fleet == "hybrid" else {"fleet": "engines"}),
    }


def _run_targets(targets: list[Target], settings: ReplaySettings) -> list[dict[str, Any]]:
    rows = []
    for target in targets:
        rows.append(run_target(target, settings))
    return rows


def sigterm_as_interrupt() -> None:
    """SIGTERM unwinds like Ctrl-C, so `finally` blocks stop every process by PID."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    with contextlib.suppress(ValueError):  # not the main thread: leave signals alone
        signal.signal(signal.SIGTERM, interrupt)


def add_offline_at_response_time(row: dict[str, Any], trace: Trace, engines: EngineOptions) -> None:
    """The offline routers again, every response taking this run's E2E p50: what routing
    could reach with this run's response times, on caches no running request holds."""
    e2e_ms = row.get("e2e_ms_p50")
    if e2e_ms is None:
        return
    found = offline_routing_hit_ratios(
        trace, engines.count, engines.kv_capacity_tokens, response_s=e2e_ms / 1000
    )
    row["offline_hit_ratios_at_e2e_p50"] = {k: round(v, 4) for k, v in found.items()}
    shown = ", ".join(f"{router} {ratio:.1%}" for router, ratio in found.items())
    row["notes"] = [
        *row.get("notes", []),
        f"offline with every response taking this run's E2E p50 ({e2e_ms / 1000:,.1f} s), "
        f"no KV held: {shown}",
    ]


def run(args: argparse.Namespace) -> int:
    """Replay the trace through every target; prints the report; 0 unless nothing ran."""
    sigterm_as_interrupt()
    try:
        trace = load_trace(args.trace, args.limit)
        chosen = args.policies or ",".join(
            HYBRID_POLICIES if args.fleet == "hybrid" else DEFAULT_POLICIES
        )
        targets = targets_from([p.strip() for p in chosen.split(",") if p.strip()], args.config)
        rule = class_rule(args)
    except (TraceError, ValueError, OSError) as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 2
    scale = args.time_scale or default_time_scale(trace.nominal_span_s())
    engines = _engines(args, scale)
    params = parameters(args, trace, engines, args.time_scale is None, rule)
    references = offline_references(trace, engines.count, engines.kv_capacity_tokens)
    params.update(references.parameters())
    oracle, pooled = references.oracle.hit_ratio, references.pooled_kv_hit_ratio
    print(f"replay: {len(trace.requests)} requests, time scale {scale:g}, "
          f"oracle hit ratio {oracle:.1%} ({pooled:.1%} in the fleet's pooled KV)",
          file=sys.stderr)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="switchyard-replay-") as tmp:
        workdir = args.logs or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        settings = ReplaySettings(
            trace=trace,
            requests=_requests(trace, rule, args),
            route=args.route,
            engines=engines,
            slo=Slo(args.ttft_slo_ms, args.tpot_slo_ms),
            send_session=args.send_session,
            request_timeout_s=args.request_timeout_s,
            progress=not args.no_progress,
            workdir=workdir,
            access_log=args.access_log,
            hybrid=args.fleet == "hybrid",
            timeline_s=args.timeline_s,
        )
        rows = [complete_row(row, oracle, params) for row in _run_targets(targets, settings)]
    for row in rows:
        add_offline_at_response_time(row, trace, engines)
    print(render(rows, params))
    if args.json:
        write_json(args.json, rows)
    return 0 if any(not row["error"] for row in rows) else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("\nreplay: interrupted; every process it started has been stopped", file=sys.stderr)
        return 130
