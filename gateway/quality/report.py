"""The quality book and the probes as JSON, for `GET /v1/switchyard/quality`."""

from __future__ import annotations

import math
from typing import Any

from gateway.quality.book.quality_book import QualityBook
from gateway.quality.explain import describe_signal, label
from gateway.quality.probes.prober import Prober


def quality_report(
    book: QualityBook, prober: Prober | None, *, now: float, history: bool = False
) -> dict[str, Any]:
    pairs = [pair_report(book, backend, model, now, history) for backend, model in book.pairs()]
    return {
        "settings": {
            "half_life_s": book.config.half_life_s,
            "demote_below": book.config.demote_below,
            "restore_above": book.config.restore_above,
            "min_evidence": book.config.min_evidence,
            "certain_below": book.config.certain_below,
        },
        "pairs": pairs,
        "events": book.events,
        "probes": _probes(prober) if prober is not None else None,
    }


def pair_report(
    book: QualityBook, backend: str, model: str, now: float, history: bool
) -> dict[str, Any]:
    """One backend x model: state, scores, each signal with its evidence; optionally the
    score history, oldest first (the quality API and the dashboard both show this)."""
    view = book.view(backend, model)
    half_life = book.config.half_life_s
    signals = []
    for score in sorted(book.scores(backend, model), key=lambda s: s.score):
        detail, at = book.last_bad(backend, model, score.signal)
        signals.append(
            {
                "signal": score.signal,
                "label": label(score.signal),
                "score": round(score.score, 4),
                "rate": round(score.rate, 4),
                "bad": round(score.bad, 2),
                "total": round(score.total, 2),
                "peer_rate": round(score.baseline, 4) if score.baseline else None,
                "summary": describe_signal(score, half_life),
                "last_bad": (detail or None) if book.config.show_details else None,
                "last_bad_age_s": round(now - at, 1) if at is not None else None,
            }
        )
    out: dict[str, Any] = {
        "backend": backend,
        "model": model,
        "state": view.state,
        "fidelity": view.fidelity,
        "sla": view.sla,
        "reason": view.reason,
        "ejected_for_s": round(view.ejected_for_s, 1),
        "state_changes": book.transitions(backend, model),
        "signals": signals,
        # Each state change with the evidence that caused it, oldest first (bounded).
        "audit": [entry.as_dict(now) for entry in book.audit(backend, model)],
    }
    if view.state == "suspect":
        out["evidence"] = {
            "seen": round(view.evidence_seen, 1),
            "needed": view.evidence_needed if math.isfinite(view.evidence_needed) else None,
            "on_trial": book.on_trial(backend, model),
        }
    if history:
        out["history"] = [
            {"age_s": round(now - p.at, 1), "fidelity": p.fidelity, "sla": p.sla, "state": p.state}
            for p in book.history(backend, model)
        ]
    return out


def _probes(prober: Prober) -> dict[str, Any]:
    recent = [
        {
            "backend": r.backend,
            "model": r.model,
            "kind": r.kind,
            "ok": r.ok,
            "detail": r.detail,
            "tokens": r.tokens,
            "latency_ms": round(r.latency_s * 1000, 1),
            "drift": None if r.drift is None else round(r.drift, 4),
        }
        for r in list(prober.results)[-50:]
    ]
    return {**prober.status(), "recent": recent}
