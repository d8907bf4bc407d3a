"""Renders a `Decision` as a JSON-able dict for logs and the decisions endpoint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policies.decision import CandidateReport, Decision
from policies.pipeline import CandidateReports, Explained


def describe_decision(decision: Decision) -> dict[str, Any]:
    """Plain dicts, lists, strings and numbers only, so `json.dumps` needs no hooks."""
    return {
        "id": decision.id,
        "route": decision.route,
        "model": decision.model,
        "chosen": decision.chosen,
        "order": list(decision.order),
        "candidates": _candidates(decision.candidates),
        "picker": decision.picker,
        "picker_reason": decision.picker_reason,
        "timings_us": dict(decision.timings_us),
        "total_us": decision.total_us,
        "created_at": decision.created_at,
    }


def _candidates(candidates: Sequence[CandidateReport]) -> list[dict[str, Any]]:
    # Straight from the plugins' answers while they are kept: the same dicts, without
    # making the report objects only to read and drop them.
    answers = candidates.answers() if isinstance(candidates, CandidateReports) else None
    if answers is not None:
        return [_explained(e) for e in answers.explained()]
    return [_candidate(c) for c in candidates]


def _explained(e: Explained) -> dict[str, Any]:
    return {
        "backend": e.backend,
        "total": e.total,
        "scores": {plugin: {"score": v, "reason": why} for plugin, v, why in e.scores},
        "verdicts": {plugin: {"keep": keep, "reason": why} for plugin, keep, why in e.verdicts},
        "dropped_by": e.dropped_by,
        "drop_reason": e.drop_reason,
    }


def _candidate(report: CandidateReport) -> dict[str, Any]:
    return {
        "backend": report.backend,
        "total": report.total,
        "scores": {
            plugin: {"score": s.value, "reason": s.reason} for plugin, s in report.scores.items()
        },
        "verdicts": {
            plugin: {"keep": v.keep, "reason": v.reason} for plugin, v in report.verdicts.items()
        },
        "dropped_by": report.dropped_by,
        "drop_reason": report.drop_reason,
    }
