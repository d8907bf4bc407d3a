"""Decision-time benchmark: per-request samples, their percentiles, and the Markdown tables."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TARGET_P99_US = {8_192: 500.0, 131_072: 5_000.0}
"""Issue 3: decision p99 ≤ 0.5 ms at 8K-token prompts, ≤ 5 ms at 128K (16 backends)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One routing decision, timed from outside `Router.decide` and split where it is cheap."""

    total_ns: int
    fingerprint_ns: int
    """Rendering, hashing and token counting (the router's Fingerprinter.chat)."""
    pipeline_ns: int
    """Filters, scorers and picker, as the pipeline times itself (Decision.total_us)."""
    parse_ns: int
    """JSON and header parsing before the decision; not part of the decision time."""
    prompt_tokens: int
    cached_on_chosen: int
    """Prompt tokens the index predicts the chosen backend holds."""
    messages_reused: int
    messages_new: int
    gc_pause_us: float
    """Cyclic garbage collection inside the timed decision (0: none ran)."""
    plugins_us: Mapping[str, float] = field(default_factory=dict)
    """Each filter's, scorer's and picker's own time (Decision.timings_us)."""
    admission_ns: int = 0
    """Flow control at an empty queue after the decision (class and tenant, room on the
    chosen backend): timed apart, not part of `total_ns`."""

    @property
    def other_ns(self) -> int:
        """Prefix-index match, fleet views and snapshot: what is neither of the above."""
        return self.total_ns - self.fingerprint_ns - self.pipeline_ns


def target_us(prompt_tokens: int) -> float | None:
    """The target of the smallest target size at least this large (None beyond 128K)."""
    sizes = [size for size in TARGET_P99_US if size >= prompt_tokens]
    return TARGET_P99_US[min(sizes)] if sizes else None


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks; `values` need not be sorted."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _us(values_ns: Sequence[int], *quantiles: float) -> dict[str, float]:
    us = [v / 1000 for v in values_ns]
    found = {f"p{q:g}": round(percentile(us, q), 1) for q in quantiles}
    return found | {"max": round(max(us), 1)} if us else found


def summarize(prompt_size: int, case: str, samples: Sequence[Sample]) -> dict[str, Any]:
    """One row of the report: latency percentiles, their split and the verdict."""
    total = _us([s.total_ns for s in samples], 50, 90, 99)
    reused = sum(s.messages_reused for s in samples)
    seen = reused + sum(s.messages_new for s in samples)
    target = target_us(prompt_size)
    return {
        "prompt_size": prompt_size,
        "case": case,
        "decisions": len(samples),
        "prompt_tokens_p50": round(percentile([s.prompt_tokens for s in samples], 50)),
        "decision_us": total,
        "admission_us": _us([s.admission_ns for s in samples], 50, 99),
        "with_admission_us": _us([s.total_ns + s.admission_ns for s in samples], 50, 99),
        "fingerprint_us": _us([s.fingerprint_ns for s in samples], 50, 99),
        "index_and_snapshot_us": _us([s.other_ns for s in samples], 50, 99),
        "pipeline_us": _us([s.pipeline_ns for s in samples], 50, 99),
        "plugins_us_p50": _plugins_p50(samples),
        "parse_us_p50": round(percentile([s.parse_ns / 1000 for s in samples], 50), 1),
        "messages_reused_share": round(reused / seen, 3) if seen else 0.0,
        "cached_on_chosen_share_p50": round(
            percentile([s.cached_on_chosen / max(1, s.prompt_tokens) for s in samples], 50), 3
        ),
        "decisions_with_gc": sum(s.gc_pause_us > 0 for s in samples),
        "gc_pause_us_max": round(max((s.gc_pause_us for s in samples), default=0.0), 1),
        "target_p99_us": target,
        "meets_target": None if target is None else bool(total["p99"] <= target),
    }


def _plugins_p50(samples: Sequence[Sample]) -> dict[str, float]:
    names = dict.fromkeys(name for s in samples for name in s.plugins_us)
    return {
        name: round(percentile([s.plugins_us.get(name, 0.0) for s in samples], 50), 1)
        for name in names
    }


def _tokens(n: int) -> str:
    return f"{n // 1024}K" if n % 1024 == 0 else f"{n:,}"


def _verdict(row: dict[str, Any]) -> str:
    if row["meets_target"] is None:
        return "no target"
    mark = "met" if row["meets_target"] else "MISSED"
    return f"{mark} (≤ {row['target_p99_us']:,.0f})"


def latency_table(rows: Sequence[dict[str, Any]]) -> str:
    head = (
        "| prompt | case | decisions | prompt tokens p50 | p50 µs | p90 µs | p99 µs | max µs "
        "| p99 target µs |\n|---|---|--:|--:|--:|--:|--:|--:|---|"
    )
    lines = [head]
    for r in rows:
        d = r["decision_us"]
        lines.append(
            f"| {_tokens(r['prompt_size'])} | {r['case']} | {r['decisions']:,} "
            f"| {r['prompt_tokens_p50']:,} | {d['p50']:,.0f} | {d['p90']:,.0f} "
            f"| {d['p99']:,.0f} | {d['max']:,.0f} | {_verdict(r)} |"
        )
    return "\n".join(lines)


def split_table(rows: Sequence[dict[str, Any]]) -> str:
    head = (
        "| prompt | case | fingerprint p50 / p99 µs | index + snapshot p50 / p99 µs "
        "| pipeline p50 / p99 µs | messages reused | cached on chosen p50 "
        "| decisions with GC (longest pause µs) | parse p50 µs (not in decision) |\n"
        "|---|---|--:|--:|--:|--:|--:|--:|--:|"
    )
    lines = [head]
    for r in rows:
        parts = [_pair(r[key]) for key in ("fingerprint_us", "index_and_snapshot_us")]
        lines.append(
            f"| {_tokens(r['prompt_size'])} | {r['case']} | {parts[0]} | {parts[1]} "
            f"| {_pair(r['pipeline_us'])} | {r['messages_reused_share']:.0%} "
            f"| {r['cached_on_chosen_share_p50']:.0%} "
            f"| {r['decisions_with_gc']} ({r['gc_pause_us_max']:,.0f}) "
            f"| {r['parse_us_p50']:,.0f} |"
        )
    return "\n".join(lines)


def admission_table(rows: Sequence[dict[str, Any]]) -> str:
    """Flow control at an empty queue, beside the decision it follows (issue 35's target:
    decision plus admission within 10 % of the decision alone)."""
    lines = [
        "| prompt | case | decision p50 / p99 µs | admission p50 / p99 µs "
        "| decision + admission p50 / p99 µs | ratio p50 / p99 |",
        "|---|---|--:|--:|--:|--:|",
    ]
    for r in rows:
        d, a, both = r["decision_us"], r["admission_us"], r["with_admission_us"]
        ratio = f"{both['p50'] / d['p50']:.3f} / {both['p99'] / d['p99']:.3f}"
        lines.append(
            f"| {_tokens(r['prompt_size'])} | {r['case']} | {_pair(d)} | {_pair(a)} "
            f"| {_pair(both)} | {ratio} |"
        )
    return "\n".join(lines)


def plugin_table(rows: Sequence[dict[str, Any]]) -> str:
    names = list(dict.fromkeys(name for r in rows for name in r["plugins_us_p50"]))
    lines = [
        "| prompt | case | " + " | ".join(names) + " | whole pipeline |",
        "|---|---|" + "--:|" * (len(names) + 1),
    ]
    for r in rows:
        cells = " | ".join(f"{r['plugins_us_p50'].get(name, 0.0):,.0f}" for name in names)
        whole = r["pipeline_us"]["p50"]
        lines.append(f"| {_tokens(r['prompt_size'])} | {r['case']} | {cells} | {whole:,.0f} |")
    return "\n".join(lines)


def _pair(values: dict[str, float]) -> str:
    return f"{values['p50']:,.0f} / {values['p99']:,.0f}"


def render(rows: Sequence[dict[str, Any]], params: dict[str, Any]) -> str:
    """Both tables under a one-line description of the run."""
    gc_note = "off during measurement" if params["no_gc"] else "on (as in the gateway)"
    header = (
        f"Routing decision time: {params['backends']} backends, profile {params['profile']}, "
        f"{params['sessions']} interleaved conversations of {params['turns']} requests, "
        f"GC {gc_note}"
    )
    return "\n\n".join(
        [
            header,
            "Decision time (Router.decide, µs)",
            latency_table(rows),
            "Where the time goes (µs; index + snapshot = decision - fingerprint - pipeline)",
            split_table(rows),
            "Pipeline by plugin (p50 µs; the rest is the pipeline's own bookkeeping)",
            plugin_table(rows),
            "Flow control at an empty queue (flow_control.enabled, the request's TTFT target)",
            admission_table(rows),
        ]
    )
