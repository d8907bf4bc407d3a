"""Estimates the load a catalog cell puts on the calibrated fleet, from its trace alone.

No engines run: sizes and hit ratios come from `bench.replay.oracle` (the emulator's own
prompt blocks), the reuse of a good cache-aware router is taken as the offline bounded
longest-prefix router's over the fleet's separate KV caches, and engine time as in the
docstring of `bench.workloads.catalog`. This is how the catalog's rates were chosen:

    python -m bench.workloads.load_estimate --seed 1 --requests 1200
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from bench.replay.oracle import BYTES_PER_TOKEN, offline_routing_hit_ratios, oracle_hit_ratio
from bench.replay.trace import Trace, parse_trace

BOUNDED = "bounded-longest-prefix"
DECODE_STEP_MS = 15.0
DECODE_PER_SEQUENCE_MS = 0.5


@dataclass(frozen=True)
class Fleet:
    """The calibrated fleet of docs/replay.md."""

    engines: int = 4
    kv_capacity_tokens: int = 100_000
    prefill_tokens_per_s: float = 4_000.0


@dataclass(frozen=True)
class LoadEstimate:
    requests: int
    nominal_span_s: float
    mean_prompt_tokens: float
    oracle_hit_ratio: float
    bounded_hit_ratio: float
    """Offline bounded longest-prefix router, nominal order (responses take no time)."""
    response_s: float
    paced_span_s: float
    paced_bounded_hit_ratio: float
    """The same router with every response taking `response_s`."""
    prefill_share: float
    """Engine time prefilling what that router leaves uncached, over the paced span."""
    decode_share: float
    """Engine time for the per-sequence decode cost of every output token."""
    peak_prefill_share: float
    """`prefill_share` in the busiest minute of the paced span (each request's reuse
    taken as the average)."""

    @property
    def busy(self) -> float:
        return self.prefill_share + self.decode_share

    @property
    def tpot_ms(self) -> float:
        """Decode steps of 15 ms share what prefill and per-sequence decode leave."""
        idle = 1.0 - self.busy
        return DECODE_STEP_MS / idle if idle > 0 else float("inf")


def estimate(trace: Trace, response_s: float = 15.0, fleet: Fleet = Fleet()) -> LoadEstimate:
    """`trace`'s load on `fleet` if every response took `response_s`."""
    oracle = oracle_hit_ratio(trace)
    nominal = offline_routing_hit_ratios(trace, fleet.engines, fleet.kv_capacity_tokens)
    paced = offline_routing_hit_ratios(
        trace, fleet.engines, fleet.kv_capacity_tokens, response_s=response_s
    )
    due_s = trace.nominal_start_s(response_s)
    paced_span_s = max(due_s.values())
    uncached = oracle.prompt_tokens * (1.0 - paced[BOUNDED])
    output = sum(r.max_tokens for r in trace.requests)
    engine_s = fleet.engines * max(paced_span_s, 1e-9)
    peak_uncached = _peak_minute_tokens(trace, due_s) * (1.0 - paced[BOUNDED])
    return LoadEstimate(
        requests=len(trace.requests),
        nominal_span_s=trace.nominal_span_s(),
        mean_prompt_tokens=oracle.prompt_tokens / len(trace.requests),
        oracle_hit_ratio=oracle.hit_ratio,
        bounded_hit_ratio=nominal[BOUNDED],
        response_s=response_s,
        paced_span_s=paced_span_s,
        paced_bounded_hit_ratio=paced[BOUNDED],
        prefill_share=uncached / fleet.prefill_tokens_per_s / engine_s,
        decode_share=output * DECODE_PER_SEQUENCE_MS / 1000 / engine_s,
        peak_prefill_share=peak_uncached / fleet.prefill_tokens_per_s / (fleet.engines * 60.0),
    )


def _peak_minute_tokens(trace: Trace, due_s: dict[str, float]) -> float:
    """The most prompt tokens (bytes / 4, tools included) sent in one minute."""
    per_minute: dict[int, float] = defaultdict(float)
    for request in trace.requests:
        size = sum(len(trace.texts[s]) for m in request.messages for s in m.segments)
        size += len(trace.texts[request.tools]) if request.tools else 0
        per_minute[int(due_s[request.id] // 60)] += size / BYTES_PER_TOKEN
    return max(per_minute.values(), default=0.0)


HEADER = (
    "| cell | requests | span s | mean prompt tok | oracle | bounded | paced span s "
    "| paced bounded | prefill | decode | busy | TPOT ms | peak-minute prefill |"
)


def row(name: str, found: LoadEstimate) -> str:
    cells = [
        name,
        f"{found.requests:,}",
        f"{found.nominal_span_s:,.0f}",
        f"{found.mean_prompt_tokens:,.0f}",
        f"{found.oracle_hit_ratio:.1%}",
        f"{found.bounded_hit_ratio:.1%}",
        f"{found.paced_span_s:,.0f}",
        f"{found.paced_bounded_hit_ratio:.1%}",
        f"{found.prefill_share:.0%}",
        f"{found.decode_share:.0%}",
        f"{found.busy:.0%}",
        f"{found.tpot_ms:.0f}",
        f"{found.peak_prefill_share:.0%}",
    ]
    return "| " + " | ".join(cells) + " |"


def main(argv: Sequence[str] | None = None) -> int:
    from bench.workloads.catalog import CATALOG

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--requests", type=int, default=1200)
    parser.add_argument("--response-s", type=float, default=15.0)
    parser.add_argument("--cells", default=",".join(CATALOG), help="comma-separated names")
    args = parser.parse_args(argv)
    print(HEADER)
    print("|" + " --- |" * HEADER.count(" | ") + " --- |")
    for name in args.cells.split(","):
        lines = (orjson.dumps(line) for line in CATALOG[name].lines(args.seed, args.requests))
        trace = parse_trace(lines, name)
        print(row(name, estimate(trace, args.response_s)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
