"""The dashboard's data: the telemetry series joined with live health and quality."""

from __future__ import annotations

import os
import time
from typing import Any

from gateway.quality.explain import describe_signal, label
from gateway.service import Gateway

_HISTORY_POINTS = 360


def dashboard_data(gateway: Gateway, snap: dict[str, Any]) -> dict[str, Any]:
    """The series' snapshot (computed off the loop) joined with live state (read on it)."""
    telemetry = gateway.telemetry
    empty = _empty_panel(snap["fleet"])
    backends = []
    for row in gateway.state.describe():
        name = str(row["name"])
        panel = snap["backends"].get(name) or empty
        backends.append(
            {
                "name": name,
                "kind": row["kind"],
                "models": list(gateway.config.backend(name).models),
                "health": {
                    "healthy": row["healthy"],
                    "reason": row["health_reason"],
                    "in_flight": row["in_flight"],
                    "max_concurrency": row["max_concurrency"],
                    "ejections": row["ejections"],
                },
                "quality": _quality(gateway, name),
                **panel,
            }
        )
    return {
        "generated_at": time.time(),
        "bucket_s": snap["bucket_s"],
        "window_s": snap["window_s"],
        "worker": {
            "pid": os.getpid(),
            "workers_note": (
                "several workers: these series are this worker's; /metrics adds them all up"
                if telemetry.metrics is not None and telemetry.metrics.multiprocess
                else None
            ),
        },
        "store": telemetry.store_status(),
        "telemetry": {"dropped": telemetry.pipe.dropped},
        "rejected": dict(telemetry.rejections),
        "fleet": snap["fleet"],
        "backends": backends,
    }


def _empty_panel(fleet: dict[str, Any]) -> dict[str, Any]:
    """A backend with no traffic in the window: zero counts over the same time axis."""
    n = len(fleet["series"]["t"])
    series: dict[str, list[Any]] = {"t": fleet["series"]["t"]}
    for key in fleet["series"]:
        if key != "t":
            series[key] = [0] * n if key in ("requests", "errors", "spend_usd") else [None] * n
    summary: dict[str, Any] = {
        key: (None if not isinstance(value, int | float) else 0)
        for key, value in fleet["summary"].items()
    }
    summary.update(status={}, errors={}, share=0.0, success_rate=None)
    for key in ("ttft_ms", "tpot_ms", "e2e_ms", "overhead_ms"):
        summary[key] = {"p50": None, "p90": None, "p99": None}
    summary["cache_hit_ratio"] = summary["predicted_cache_hit_ratio"] = None
    return {"summary": summary, "series": series, "reasons": []}


def _quality(gateway: Gateway, backend: str) -> list[dict[str, Any]]:
    recorder = gateway.quality
    if recorder is None:
        return []
    book = recorder.book
    now = time.monotonic()
    out = []
    for pair_backend, model in book.pairs():
        if pair_backend != backend:
            continue
        view = book.view(backend, model)
        scores = sorted(book.scores(backend, model), key=lambda s: s.score)
        out.append(
            {
                "model": model,
                "state": view.state,
                "fidelity": round(view.fidelity, 4),
                "sla": round(view.sla, 4),
                "reason": view.reason,
                "ejected_for_s": round(view.ejected_for_s, 1),
                "signals": [
                    {
                        "signal": s.signal,
                        "label": label(s.signal),
                        "score": round(s.score, 4),
                        "rate": round(s.rate, 4),
                        "total": round(s.total, 2),
                        "summary": describe_signal(s, book.config.half_life_s),
                    }
                    for s in scores
                ],
                "history": [
                    {
                        "age_s": round(now - p.at, 1),
                        "fidelity": round(p.fidelity, 4),
                        "sla": round(p.sla, 4),
                        "state": p.state,
                    }
                    for p in list(book.history(backend, model))[::-1][:_HISTORY_POINTS]
                ],
            }
        )
    return out
