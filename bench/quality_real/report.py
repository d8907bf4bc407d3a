"""The run as Markdown tables (the ones in docs/quality.md) and as JSON."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from bench.quality_real.campaign import ScenarioRun
from bench.quality_real.stats import (
    CycleRecord,
    Distribution,
    cycle_max_drifts,
    distribution,
    drifts,
    first_cycle,
    flag_counts,
    margin,
    state_counts,
)


def healthy_records(runs: list[ScenarioRun]) -> list[CycleRecord]:
    """Both twins' records: the healthy drift every threshold must let pass."""
    return [r for run in runs if run.scenario.role == "twins" for r in run.subject + run.reference]


def measured(run: ScenarioRun) -> list[CycleRecord]:
    """The records a scenario is judged on: the subject's after the warm-up (twins: both)."""
    if run.scenario.role == "twins":
        return run.subject + run.reference
    return [r for r in run.subject if r.cycle >= 1]


def _fmt(value: float) -> str:
    return f"{value:.4f}" if value < 0.01 and value != 0 else f"{value:.3f}"


def _dist(d: Distribution | None) -> str:
    return " | ".join(_fmt(v) for v in d.row()) if d else "- | - | - | - | -"


def drift_table(runs: list[ScenarioRun]) -> str:
    lines = [
        "| case | role | answers | min | p50 | p90 | p99 | max | cycle-worst min "
        "| p50 per prompt (1 / 2 / 3) |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for run in runs:
        records = measured(run)
        d = distribution(drifts(records))
        worst = cycle_max_drifts(records)
        worst_min = _fmt(min(worst)) if worst else "-"
        count = d.count if d else 0
        lines.append(
            f"| {run.scenario.label} | {run.scenario.role} | {count} | {_dist(d)} | {worst_min} "
            f"| {_per_prompt(records)} |"
        )
    return "\n".join(lines)


def _per_prompt(records: list[CycleRecord]) -> str:
    """Each canary prompt's median drift: greedy decoding on one machine is deterministic,
    so a fault moves each prompt by the same amount in every cycle."""
    columns = zip(*(r.drifts for r in records if r.drifts), strict=False)
    medians = [distribution(column) for column in columns]
    return " / ".join(_fmt(m.p50) for m in medians if m is not None) or "-"


def detection_table(runs: list[ScenarioRun]) -> str:
    healthy = healthy_records(runs)
    threshold = runs[0].settings.drift_threshold if runs else 0.0
    lines = [
        "| case | cycles | probes judged wrong (by kind) | first wrong cycle "
        f"| ejected after cycle | cycles over {threshold:g} | margin to twins |",
        "|---|--:|---|--:|--:|--:|--:|",
    ]
    for run in runs:
        records = measured(run)
        flags = ", ".join(f"{k} {n}" for k, n in sorted(flag_counts(records).items())) or "none"
        first = first_cycle(records) if run.scenario.role != "twins" else None
        ejected = first_cycle(records, flagged=False) if run.scenario.role != "twins" else None
        over = sum(1 for d in cycle_max_drifts(records) if d > threshold)
        gap = margin(healthy, records) if run.scenario.role != "twins" else None
        gap_text = f"{gap.gap:+.3f}" if gap else "-"
        cycles = len({(r.backend, r.cycle) for r in records})
        lines.append(
            f"| {run.scenario.label} | {cycles} | {flags} | {first or '-'} "
            f"| {ejected or '-'} | {over} | {gap_text} |"
        )
    return "\n".join(lines)


def notes(runs: list[ScenarioRun], tool_calls: list[dict[str, Any]]) -> list[str]:
    out = []
    healthy = healthy_records(runs)
    if healthy:
        states = state_counts(healthy)
        out.append(
            f"twins: book states after each cycle {states}; "
            f"probes judged wrong {flag_counts(healthy) or 'none'}"
        )
    for run in runs:
        if run.top_logprobs:
            out.append(f"{run.scenario.name}: top_logprobs per canary answer {run.top_logprobs}")
            break
    for run in runs:
        needles = sorted({r.needle for r in measured(run) if r.needle})
        if needles:
            out.append(f"{run.scenario.name} needle answers: " + " / ".join(needles[:4]))
    if tool_calls:
        wrong = sum(1 for t in tool_calls if t["ok"] is False)
        out.append(
            f"tool-call probe on a healthy replica: {wrong} of {len(tool_calls)} wrong "
            f"({tool_calls[0]['detail']})"
        )
    return out


def to_json(
    runs: list[ScenarioRun], tool_calls: list[dict[str, Any]], meta: dict[str, Any]
) -> dict[str, Any]:
    healthy = healthy_records(runs)
    return {
        **meta,
        "scenarios": [_run_json(run, healthy) for run in runs],
        "tool_call_check": tool_calls,
    }


def _run_json(run: ScenarioRun, healthy: list[CycleRecord]) -> dict[str, Any]:
    records = measured(run)
    d, worst = distribution(drifts(records)), distribution(cycle_max_drifts(records))
    gap = margin(healthy, records) if run.scenario.role != "twins" else None
    return {
        "name": run.scenario.name,
        "label": run.scenario.label,
        "role": run.scenario.role,
        "engine_flags": run.scenario.setup.arguments(),
        "needle": run.scenario.needle,
        "seconds": round(run.seconds, 1),
        "settings": asdict(run.settings),
        "top_logprobs": run.top_logprobs,
        "drift": asdict(d) if d else None,
        "cycle_worst_drift": asdict(worst) if worst else None,
        "flags": flag_counts(records),
        "first_wrong_cycle": first_cycle(records),
        "first_unhealthy_cycle": first_cycle(records, flagged=False),
        "states": state_counts(records),
        "margin": None
        if gap is None
        else {"healthy_max": gap.healthy_max, "fault_min": gap.fault_min, "gap": gap.gap},
        "records": [asdict(r) for r in run.subject + run.reference],
    }
