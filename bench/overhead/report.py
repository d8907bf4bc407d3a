"""Turning raw samples into the reported metrics, the PASS/FAIL verdicts and the tables."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bench.load import Sample

DIRECT = "direct"
SWITCHYARD = "switchyard"


@dataclass(frozen=True)
class Phase:
    concurrency: int
    stream: bool
    requests: int

    @property
    def name(self) -> str:
        return f"{'stream' if self.stream else 'non-stream'} c={self.concurrency}"


@dataclass
class Measured:
    """One target in one phase: client-side sample plus server-side CPU seconds."""

    sample: Sample = field(default_factory=Sample)
    server_cpu_s: float = 0.0
    server_sys_s: float = 0.0
    engine_cpu_s: float = 0.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 1)


def phase_metrics(phase: Phase, m: Measured, has_server: bool) -> dict[str, Any]:
    s = m.sample
    done = len(s.latencies)
    out: dict[str, Any] = {
        "requests": done,
        "errors": s.errors,
        "error_examples": s.error_examples,
        "p50_ms": _ms(percentile(s.latencies, 50)),
        "p99_ms": _ms(percentile(s.latencies, 99)),
        "throughput_rps": round(done / s.wall_s, 1) if s.wall_s else None,
        "engine_cpu_us_per_req": _us(m.engine_cpu_s / done) if done else None,
    }
    if phase.stream:
        out["ttfc_p50_ms"] = _ms(percentile(s.first_chunk, 50))
        out["ttfc_p99_ms"] = _ms(percentile(s.first_chunk, 99))
        out["chunks_per_req"] = round(s.chunks / done, 2) if done else None
        out["frames_per_req"] = round(s.frames / done, 2) if done else None
    if has_server and done:
        out["cpu_us_per_req"] = _us(m.server_cpu_s / done)
        out["server_cpu_util"] = round(m.server_cpu_s / s.wall_s, 3) if s.wall_s else None
        out["kernel_share"] = round(m.server_sys_s / m.server_cpu_s, 3) if m.server_cpu_s else None
    return out


def add_deltas(results: dict[str, dict[str, Any]]) -> None:
    """Added latency: each target's percentile minus the direct path's, same phase."""
    base = results.get(DIRECT)
    if base is None:
        return
    for name, row in results.items():
        if name == DIRECT:
            continue
        for key in ("p50_ms", "p99_ms", "ttfc_p50_ms", "ttfc_p99_ms"):
            if key in row and key in base:
                row["added_" + key] = round(row[key] - base[key], 3)


def add_chunk_cpu(
    stream_row: dict[str, Any], stream_m: Measured, per_request_us: float | None
) -> None:
    """CPU per SSE chunk: (stream CPU - requests x non-stream CPU per request) / chunks."""
    s = stream_m.sample
    if per_request_us is None or not s.chunks or not s.latencies:
        return
    fixed_s = len(s.latencies) * per_request_us / 1e6
    stream_row["cpu_us_per_chunk"] = _us((stream_m.server_cpu_s - fixed_s) / s.chunks)


@dataclass(frozen=True)
class Target:
    """A PASS/FAIL threshold for Switchyard."""

    label: str
    limit: float
    unit: str


def _value(phases: list[dict[str, Any]], stream: bool, c: int, key: str) -> float | None:
    for p in phases:
        if p["stream"] == stream and p["concurrency"] == c:
            value: float | None = p["results"].get(SWITCHYARD, {}).get(key)
            return value
    return None


def verdicts(phases: list[dict[str, Any]], idle_rss_mb: float | None) -> list[dict[str, Any]]:
    levels = sorted({p["concurrency"] for p in phases})
    checks: list[tuple[Target, float | None]] = []
    for c in levels:
        checks.append(
            (
                Target(f"CPU per non-streaming request, c={c}", 500, "µs"),
                _value(phases, False, c, "cpu_us_per_req"),
            )
        )
    for c in levels:
        checks.append(
            (
                Target(f"CPU per SSE chunk, c={c}", 30, "µs"),
                _value(phases, True, c, "cpu_us_per_chunk"),
            )
        )
    checks += [
        (
            Target("added p50 latency, non-stream c=1", 1, "ms"),
            _value(phases, False, 1, "added_p50_ms"),
        ),
        (
            Target("added p50 time to first chunk, c=1", 1, "ms"),
            _value(phases, True, 1, "added_ttfc_p50_ms"),
        ),
        (Target("idle RSS", 150, "MB"), idle_rss_mb),
    ]
    return [_verdict(target, value) for target, value in checks]


def _verdict(target: Target, value: float | None) -> dict[str, Any]:
    if value is None or math.isnan(value):
        verdict = "N/A"
    else:
        verdict = "PASS" if value <= target.limit else "FAIL"
    return {
        "check": target.label,
        "limit": target.limit,
        "unit": target.unit,
        "value": value,
        "verdict": verdict,
    }
