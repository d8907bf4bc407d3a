"""The measures of one policy on real engines, and each policy's ratios to round-robin.

Times are wall-clock: the engines run at their own speed, so only the trace's think times
were scaled. Token counts come from the engines: per request from llama-server's
`timings` (`prompt_n` evaluated, `cache_n` reused, `prompt_ms`) and `usage`, and per replica
from its `/metrics` counters, which must agree with the per-request sums.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from bench.replay.metrics import (
    Slo,
    backend_counts,
    error_kinds,
    latency_summary,
    throughput_summary,
    ttft_ms,
)
from bench.replay.runner import output_shortfall
from bench.replay.schedule import RequestResult
from bench.replay.trace import TraceRequest

from . import engine_counters
from .runner import PolicyRun

BASELINE = "round-robin"
_NO_SLO = Slo(ttft_ms=float("inf"), tpot_ms=float("inf"))
_KEPT = (
    "requests", "errors", "wall_s", "throughput_rps", "output_tokens_per_s",
    "ttft_ms_p50", "ttft_ms_p90", "ttft_ms_p99", "tpot_ms_p50", "e2e_ms_p50", "e2e_ms_p99",
    "dispatch_lag_ms_p99",
)  # fmt: skip


def _timing(result: RequestResult, key: str) -> float | None:
    value = (result.timings or {}).get(key)
    return float(value) if isinstance(value, int | float) else None


def evaluated_tokens(result: RequestResult) -> int | None:
    """Prompt tokens the engine evaluated: `timings.prompt_n`, else prompt - cached."""
    reported = _timing(result, "prompt_n")
    if reported is not None:
        return int(reported)
    if result.prompt_tokens is None or result.cached_tokens is None:
        return None
    return result.prompt_tokens - result.cached_tokens


def token_summary(results: Sequence[RequestResult]) -> dict[str, Any]:
    """Engine-reported token sums over the successful requests."""
    ok = [r for r in results if r.ok]
    evaluated = [evaluated_tokens(r) for r in ok]
    prompt_ms = [_timing(r, "prompt_ms") for r in ok]
    return {
        "prompt_tokens": sum(r.prompt_tokens or 0 for r in ok),
        "cached_tokens": sum(r.cached_tokens or 0 for r in ok),
        "evaluated_prompt_tokens": sum(e or 0 for e in evaluated),
        "requests_without_timings": sum(1 for r in ok if r.timings is None),
        "prompt_ms_sum": round(sum(ms or 0.0 for ms in prompt_ms), 1),
        "completion_tokens": sum(r.completion_tokens or 0 for r in ok),
    }


def _metrics_summary(measured: PolicyRun) -> dict[str, Any]:
    counters = measured.counters
    seconds = engine_counters.summed(counters, engine_counters.PROMPT_SECONDS)
    tokens = engine_counters.summed(counters, engine_counters.PROMPT_TOKENS)
    cached = engine_counters.summed(counters, engine_counters.CACHED_TOKENS)
    return {
        "metrics_evaluated_prompt_tokens": None if tokens is None else round(tokens),
        "metrics_cached_prompt_tokens": None if cached is None else round(cached),
        "metrics_prompt_ms_sum": None if seconds is None else round(seconds * 1000, 1),
    }


def _per_replica(measured: PolicyRun) -> dict[str, dict[str, Any]]:
    results = measured.run.results
    rows = backend_counts(results, measured.replicas)
    for name, row in rows.items():
        mine = [r for r in results if r.backend == name and r.ok]
        row["evaluated_prompt_tokens"] = sum(evaluated_tokens(r) or 0 for r in mine)
        row["metrics"] = engine_counters.per_replica(measured.counters).get(name, {})
    return rows


def history_hits(
    results: Sequence[RequestResult], requests: Sequence[TraceRequest]
) -> dict[str, int]:
    """Follow-up turns, and those whose whole history (the parent's prompt) the engine had
    cached: what a cache-aware router can at best achieve for every one of them."""
    parents = {r.id: r.parent for r in requests if r.parent is not None}
    by_id = {r.request_id: r for r in results}
    followups = [r for r in results if r.ok and r.request_id in parents]
    hits = 0
    for result in followups:
        parent = by_id.get(parents[result.request_id])
        held = parent.prompt_tokens if parent is not None else None
        if held is not None and result.cached_tokens is not None and result.cached_tokens >= held:
            hits += 1
    return {"followups": len(followups), "followups_with_history_cached": hits}


def summarise(policy: str, measured: PolicyRun, requests: Sequence[TraceRequest]) -> dict[str, Any]:
    """One report row: every measure, per-replica counts, error kinds, notes."""
    run = dataclasses.replace(measured.run, time_scale=1.0)  # real engines: wall time
    results = run.results
    measures = {**throughput_summary(run, _NO_SLO), **latency_summary(results, 1.0)}
    row: dict[str, Any] = {"policy": policy, "error": None}
    row.update({key: measures[key] for key in _KEPT})
    row.update(token_summary(results))
    row.update(history_hits(results, requests))
    row.update(_metrics_summary(measured))
    row["backends"] = _per_replica(measured)
    row["error_kinds"] = error_kinds(results)
    row["per_request"] = [_request_row(r, run.started_at, measured.decisions) for r in results]
    row["notes"] = [*_notes(row), *output_shortfall(results, requests)]
    return row


def _request_row(
    result: RequestResult, started_at: float, decisions: dict[str, Any]
) -> dict[str, Any]:
    """One request as the engines saw it: where it went, what it cost, when it was sent,
    and the gateway's decision (every candidate's scores and reasons)."""
    ttft = ttft_ms(result)
    return {
        "id": result.request_id,
        "backend": result.backend,
        "ok": result.ok,
        "sent_s": round(result.sent_at - started_at, 3),
        "prompt_tokens": result.prompt_tokens,
        "cached_tokens": result.cached_tokens,
        "evaluated_prompt_tokens": evaluated_tokens(result),
        "prompt_ms": _timing(result, "prompt_ms"),
        "ttft_ms": None if ttft is None else round(ttft, 1),
        "completion_tokens": result.completion_tokens,
        "error": result.error,
        "decision": _decision_row(decisions.get(result.decision_id or "")),
    }


def _decision_row(record: Any) -> dict[str, Any] | None:
    """What the decision weighed: each candidate's total, and each scorer's score and reason."""
    if not isinstance(record, dict):
        return None
    candidates = []
    for candidate in record.get("candidates") or []:
        scores = candidate.get("scores") or {}
        candidates.append(
            {
                "backend": candidate.get("backend"),
                "total": candidate.get("total"),
                "scores": {
                    name: [score.get("score"), score.get("reason")]
                    for name, score in scores.items()
                    if isinstance(score, dict)
                },
                "dropped_by": candidate.get("dropped_by"),
            }
        )
    return {"chosen": record.get("chosen"), "candidates": candidates}


def _notes(row: dict[str, Any]) -> list[str]:
    notes = []
    from_metrics = row["metrics_evaluated_prompt_tokens"]
    if from_metrics is None:
        notes.append("no /metrics counters: the per-request sums are not cross-checked")
    elif from_metrics != row["evaluated_prompt_tokens"]:
        notes.append(
            f"/metrics counted {from_metrics:,} evaluated prompt tokens, the responses "
            f"{row['evaluated_prompt_tokens']:,} (requests that failed count only there)"
        )
    if row["requests_without_timings"]:
        notes.append(f"{row['requests_without_timings']} responses carried no timings")
    return notes


def failed_row(policy: str, error: str) -> dict[str, Any]:
    return {"policy": policy, "error": error}


def add_ratios(rows: Sequence[dict[str, Any]]) -> None:
    """Each row's evaluated prompt tokens and TTFT p50 over round-robin's (None without it)."""
    base = next((r for r in rows if r["policy"] == BASELINE and not r.get("error")), None)
    for row in rows:
        if row.get("error"):
            continue
        for key, ratio_key in (
            ("evaluated_prompt_tokens", "evaluated_ratio_to_round_robin"),
            ("ttft_ms_p50", "ttft_p50_ratio_to_round_robin"),
        ):
            row[ratio_key] = _ratio(row.get(key), base.get(key) if base else None)


def _ratio(value: Any, base: Any) -> float | None:
    if not isinstance(value, int | float) or not isinstance(base, int | float) or base <= 0:
        return None
    return round(value / base, 3)
