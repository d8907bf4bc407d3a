"""`switchyard bench cascade`: tune the log-probability threshold on one seed, then report
every workload on others (always-small, always-strong, the cascade), the log-probability
check's AUROC and curve, the learned starting tier, and the gateway time a cascade adds.

    switchyard bench cascade --json bench/results/cascade.json    # ~25 min, real engine
    switchyard bench cascade --quick --small emulated             # seconds: the harness
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from bench.cascade.analysis import (
    PairedRequest,
    auroc,
    choose_threshold,
    curve,
    quantile,
    summary,
    thresholds_of,
    with_ratios,
)
from bench.cascade.drive import Outcome, first_tokens, send_all
from bench.cascade.fleet import PRICES, Fleet, SmallTier, running_fleet
from bench.cascade.report import render
from bench.workloads.cascade.records import HARD_KIND, Kind
from bench.workloads.cascade.workload import mixed, requests

REPORTED: tuple[Kind, ...] = ("extraction", "tools", "short")
ROUTES = ("always-small", "always-strong")


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="switchyard bench cascade", description=__doc__)
    parser.add_argument("--small", choices=["real", "emulated"], default="real")
    parser.add_argument("--count", type=int, default=30, help="requests per workload and seed")
    parser.add_argument("--tune-seed", type=int, default=1, help="the threshold's seed")
    parser.add_argument("--seeds", default="2", help="reported seeds, comma-separated")
    parser.add_argument("--learned-count", type=int, default=40)
    parser.add_argument("--overhead-count", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="a few requests of each: CI")
    parser.add_argument("--json", type=Path, help="write the whole result here")
    args = parser.parse_args(argv)
    if args.quick:
        args.count, args.learned_count, args.overhead_count = 3, 8, 20
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)  # a line per request
    result = asyncio.run(run(args))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    print(render(result))
    return 0


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tier: SmallTier = args.small
    seeds = [int(s) for s in str(args.seeds).split(",") if s]
    result: dict[str, Any] = {"small": tier, "prices": PRICES, "workloads": {}}
    async with running_fleet(tier) as fleet:
        tuning = await _paired(fleet, requests("short", args.tune_seed, args.count))
    rows = curve(tuning, thresholds_of(tuning))
    strong_acc = sum(p.strong_correct for p in tuning) / len(tuning)
    strong_cost = sum(p.strong_cost for p in tuning) / len(tuning)
    chosen = choose_threshold(rows, strong_acc, strong_cost)
    threshold = chosen if chosen is not None else -0.5
    async with running_fleet(tier, logprob_min=threshold) as fleet:
        for seed in seeds:
            result["workloads"][str(seed)] = await _workloads(fleet, seed, args.count)
        held_out = await _paired(fleet, requests("short", seeds[0], args.count))
        result["logprob"] = {
            "seed": seeds[0],
            "tuned_on": args.tune_seed,
            "threshold": chosen,
            "auroc": _auroc(held_out),
            "curve": curve(held_out, thresholds_of(held_out)),
            "tuning_curve": rows,
        }
        result["learned"] = await _learned(fleet, seeds[0], args.learned_count)
        result["streaming"] = await _streaming(fleet, seeds[0], args.count)
    async with running_fleet("emulated") as fleet:
        result["overhead"] = await _overhead(fleet, args.overhead_count)
    return result


async def _workloads(fleet: Fleet, seed: int, count: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for kind in REPORTED:
        workload = requests(kind, seed, count)
        policies = {"always-small": "small", "always-strong": "strong", "cascade": "cascade"}
        if kind == "short":
            policies["cascade-logprob"] = "cascade-logprob"
        rows = {}
        for name, model in policies.items():
            rows[name] = summary(await send_all(fleet, model, workload))
        with_ratios(rows)
        found[kind] = rows
    return found


async def _paired(fleet: Fleet, workload: list[Any]) -> list[PairedRequest]:
    small = await send_all(fleet, "small", workload, logprobs=True)
    strong = await send_all(fleet, "strong", workload)
    return [
        PairedRequest(s.mean_logprob, s.correct, g.correct, s.cost_usd, g.cost_usd)
        for s, g in zip(small, strong, strict=True)
    ]


def _auroc(pairs: list[PairedRequest]) -> dict[str, Any]:
    scored = [p for p in pairs if p.mean_logprob is not None]
    scores = [p.mean_logprob for p in scored if p.mean_logprob is not None]
    return auroc(scores, [p.small_correct for p in scored]).describe()


async def _learned(fleet: Fleet, seed: int, count: int) -> dict[str, Any]:
    """A mix where one kind always fails the small tier: its doomed first tries with the
    learned start off and on (fresh books: each cascade keeps its own)."""
    workload = mixed(seed, count, kinds=("short", HARD_KIND))
    rows = {}
    for name in ("cascade", "cascade-learned"):
        outcomes = await send_all(fleet, name, workload)
        row = summary(outcomes)
        row["doomed"] = _doomed(outcomes)
        rows[name] = row
    return {"workload": f"short + {HARD_KIND}", "seed": seed, "rows": rows}


async def _streaming(fleet: Fleet, seed: int, count: int) -> dict[str, Any]:
    """What each way of streaming a cascade costs in time to first token, on short
    questions: the small tier's route, the cascade holding the answer, and committing at
    the first token."""
    workload = requests("short", seed, count)
    out: dict[str, Any] = {"seed": seed, "requests": len(workload)}
    for name, model in (("route", "small"), ("hold", "cascade"), ("commit", "cascade-commit")):
        ttft = sorted(await first_tokens(fleet, model, workload))
        out[name] = {
            "ttft_p50_s": ttft[len(ttft) // 2] if ttft else None,
            "ttft_p90_s": ttft[min(len(ttft) - 1, int(0.9 * len(ttft)))] if ttft else None,
        }
    return out


def _doomed(outcomes: list[Outcome]) -> int:
    """First tries on the small tier that escalated."""
    return sum(o.escalated and o.start_tier == 0 for o in outcomes)


async def _overhead(fleet: Fleet, count: int) -> dict[str, Any]:
    """Gateway time (the record's overhead: its time less the backend's) of requests that
    pass at the cascade's first tier, against the same requests to that tier's route."""
    workload = requests("short", 99, count)
    route: list[float] = []
    cascade: list[float] = []
    for request in workload:  # alternated, so both see the same noise
        for model, into in (("small", route), ("cascade", cascade)):
            seen = len(fleet.records)
            outcome = (await send_all(fleet, model, [request]))[0]
            records = fleet.records[seen:]
            if len(records) == 1 and not outcome.escalated:
                into.append(records[0].overhead_s * 1000.0)
    return _overhead_summary(route, cascade)


def _overhead_summary(route: list[float], cascade: list[float]) -> dict[str, Any]:
    def q(values: list[float], at: float) -> float | None:
        return quantile(sorted(values), at)

    p50_route, p50_cascade = q(route, 0.5), q(cascade, 0.5)
    added = None if p50_route is None or p50_cascade is None else round(p50_cascade - p50_route, 3)
    return {
        "requests": min(len(route), len(cascade)),
        "route_p50_ms": p50_route,
        "route_p90_ms": q(route, 0.9),
        "cascade_p50_ms": p50_cascade,
        "cascade_p90_ms": q(cascade, 0.9),
        "added_p50_ms": added,
    }
