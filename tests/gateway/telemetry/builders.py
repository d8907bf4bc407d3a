"""Finished-request records built by hand, for the telemetry unit tests."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.routing.decisions import Attempt, DecisionRecord
from gateway.telemetry.record import RequestRecord
from policies.base import Score, Verdict
from policies.decision import CandidateReport, Decision
from providers.usage import Usage


def decision(
    chosen: str | None,
    scores: Mapping[str, Mapping[str, float]],
    *,
    dropped: Mapping[str, str] | None = None,
    totals: Mapping[str, float] | None = None,
) -> Decision:
    """`scores`: backend -> plugin -> value; `dropped`: backend -> filter that dropped it."""
    dropped = dropped or {}
    reports = []
    for name in [*scores, *dropped]:
        by_plugin = scores.get(name, {})
        filter_name = dropped.get(name)
        reports.append(
            CandidateReport(
                backend=name,
                total=(totals or {}).get(name, sum(by_plugin.values())),
                scores={p: Score(v, f"{p} says {v} for {name}") for p, v in by_plugin.items()},
                dropped_by=filter_name,
                verdicts={filter_name: Verdict(False, f"{name} is out")} if filter_name else {},
            )
        )
    return Decision(
        id="d" * 16,
        route="default",
        model="m",
        order=(chosen,) if chosen else (),
        candidates=tuple(reports),
        picker="max-score-picker",
        picker_reason="highest total",
        timings_us={},
        total_us=42.0,
        created_at=0.0,
    )


def record(
    *,
    at: float = 1000.0,
    backend: str | None = "a",
    status: int = 200,
    error: str | None = None,
    e2e_s: float = 0.5,
    ttft_s: float | None = None,
    decode_s: float | None = None,
    usage: Usage | None = None,
    attempts: tuple[tuple[str, str, float], ...] = (),
    predicted_cached: int = 0,
    stream: bool = False,
) -> RequestRecord:
    made = decision(backend, {backend: {"load": 1.0}} if backend else {})
    held = DecisionRecord(made)
    if backend is not None:
        from gateway.prefix.work import PromptWork

        held.work = PromptWork(cached_tokens={backend: predicted_cached})
    held.attempts = [Attempt(b, outcome, ms) for b, outcome, ms in attempts]
    return RequestRecord(
        at=at,
        route="default",
        endpoint="chat.completions",
        stream=stream,
        key_id=None,
        decision=held,
        status=status,
        error=error,
        backend=backend,
        e2e_s=e2e_s,
        ttft_s=ttft_s,
        decode_s=decode_s,
        usage=usage,
    )
