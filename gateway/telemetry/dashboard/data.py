"""The dashboard's data: the telemetry series joined with live health and quality."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from gateway.quality.book.quality_book import QualityBook
from gateway.quality.report import pair_report
from gateway.telemetry.wiring import Telemetry

_HISTORY_POINTS = 360


def dashboard_data(
    snap: dict[str, Any],
    telemetry: Telemetry,
    fleet: Sequence[Mapping[str, Any]],
    models: Mapping[str, list[str]],
    book: QualityBook | None,
) -> dict[str, Any]:
    """The series' snapshot (computed off the loop) joined with live state (read on it):
    `fleet` as the fleet describes it, each backend's `models`, the quality `book`."""
    empty = _empty_panel(snap["fleet"])
    backends = []
    for row in fleet:
        name = str(row["name"])
        panel = snap["backends"].get(name) or empty
        backends.append(
            {
                "name": name,
                "kind": row["kind"],
                "models": models[name],
                "health": {
                    "healthy": row["healthy"],
                    "reason": row["health_reason"],
                    "in_flight": row["in_flight"],
                    "max_concurrency": row["max_concurrency"],
                    "effective_max_concurrency": row["effective_max_concurrency"],
                    "ejections": row["ejections"],
                    "provider_remaining_requests": row["provider_remaining_requests"],
                    "provider_remaining_tokens": row["provider_remaining_tokens"],
                    "provider_limits_read_at": row["provider_limits_read_at"],
                },
                "credentials": row["credentials"],
                "quality": _quality(book, name),
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
        "rejected": _by_code(telemetry.refusals.counts),
        "refused": recent.rows() if (recent := telemetry.recent_refusals) is not None else [],
        "fleet": snap["fleet"],
        "backends": backends,
        "cascades": snap.get("cascades", []),
    }


def _by_code(counts: Mapping[tuple[int, str], int]) -> dict[str, int]:
    """Refusals since start by error code (a code's statuses added up)."""
    out: dict[str, int] = {}
    for (_, code), count in counts.items():
        out[code] = out.get(code, 0) + count
    return out


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


def _quality(book: QualityBook | None, backend: str) -> list[dict[str, Any]]:
    """The quality API's view of each of this backend's models, history newest first."""
    if book is None:
        return []
    now = time.monotonic()
    out = []
    for pair_backend, model in book.pairs():
        if pair_backend == backend:
            pair = pair_report(book, backend, model, now, history=True)
            pair["history"] = pair["history"][::-1][:_HISTORY_POINTS]
            out.append(pair)
    return out
