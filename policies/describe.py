"""Renders a `Decision` as a JSON-able dict for logs and the decisions endpoint."""

from __future__ import annotations

from typing import Any

from policies.decision import CandidateReport, Decision


def describe_decision(decision: Decision) -> dict[str, Any]:
    """Plain dicts, lists, strings and numbers only, so `json.dumps` needs no hooks."""
    return {
        "id": decision.id,
        "route": decision.route,
        "model": decision.model,
        "chosen": decision.chosen,
        "order": list(decision.order),
        "candidates": [_candidate(c) for c in decision.candidates],
        "picker": decision.picker,
        "picker_reason": decision.picker_reason,
        "timings_us": dict(decision.timings_us),
        "total_us": decision.total_us,
        "created_at": decision.created_at,
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
