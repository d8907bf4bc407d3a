"""Summary statistics of one replay: latency percentiles, cache hits, goodput, imbalance.

Times are reported in trace time: wall-clock durations divided by the replay's time
scale, so a run at scale 0.25 reads as if the trace (and the engines) ran at full speed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .schedule import ReplayRun, RequestResult


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation between ranks; None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def imbalance(per_backend: Mapping[str, float]) -> float | None:
    """max / mean over backends (1.0 is perfectly even); None when nothing was counted."""
    if not per_backend:
        return None
    mean = sum(per_backend.values()) / len(per_backend)
    return max(per_backend.values()) / mean if mean > 0 else None


def ttft_ms(result: RequestResult, scale: float = 1.0) -> float | None:
    """Sending to the first SSE chunk whose choice delta carries content or a tool call."""
    if not result.ok or result.first_token_at is None:
        return None
    return (result.first_token_at - result.sent_at) * 1000 / scale


def tpot_ms(result: RequestResult, scale: float = 1.0) -> float | None:
    """(end - first token) / (completion tokens - 1): the mean gap between output tokens."""
    tokens = result.completion_tokens
    if not result.ok or result.first_token_at is None or tokens is None or tokens < 2:
        return None
    return (result.done_at - result.first_token_at) * 1000 / (tokens - 1) / scale


def e2e_ms(result: RequestResult, scale: float = 1.0) -> float | None:
    return (result.done_at - result.sent_at) * 1000 / scale if result.ok else None


@dataclass(frozen=True, slots=True)
class Slo:
    """Latency limits in trace-time milliseconds."""

    ttft_ms: float
    tpot_ms: float

    def met_by(self, result: RequestResult, scale: float = 1.0) -> bool:
        """A request is good when it succeeded within both limits (no TPOT: one token)."""
        first, gap = ttft_ms(result, scale), tpot_ms(result, scale)
        return first is not None and first <= self.ttft_ms and (gap is None or gap <= self.tpot_ms)


def _present(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def spread(prefix: str, values: list[float], qs: Sequence[int]) -> dict[str, float | None]:
    """`{prefix}_p{q}` for each q: percentiles of `values`, rounded; None when empty."""
    return {f"{prefix}_p{q}": _round(percentile(values, q)) for q in qs}


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def latency_summary(results: Sequence[RequestResult], scale: float) -> dict[str, float | None]:
    ttft = _present(ttft_ms(r, scale) for r in results)
    tpot = _present(tpot_ms(r, scale) for r in results)
    e2e = _present(e2e_ms(r, scale) for r in results)
    # How late the client sent (wall ms): large values mean the load generator lagged.
    lag = [max(0.0, r.sent_at - r.due_at) * 1000 for r in results]
    return {
        **spread("ttft_ms", ttft, (50, 90, 99)),
        **spread("tpot_ms", tpot, (50, 99)),
        **spread("e2e_ms", e2e, (50, 99)),
        "dispatch_lag_ms_p99": _round(percentile(lag, 99)),
    }


def cache_summary(results: Sequence[RequestResult]) -> dict[str, Any]:
    """Engine-reported Σ cached / Σ prompt tokens over requests that report usage."""
    with_usage = [r for r in results if r.ok and r.prompt_tokens is not None]
    prompt = sum(r.prompt_tokens or 0 for r in with_usage)
    reported = [r for r in with_usage if r.cached_tokens is not None]
    cached = sum(r.cached_tokens or 0 for r in reported)
    ratio = cached / prompt if reported and prompt else None
    return {
        "prompt_tokens": prompt,
        "cached_tokens": cached if reported else None,
        "completion_tokens": sum(r.completion_tokens or 0 for r in with_usage),
        "token_cache_hit_ratio": _round(ratio, 4),
    }


def throughput_summary(run: ReplayRun, slo: Slo) -> dict[str, Any]:
    results, scale = run.results, run.time_scale
    wall_s = max((r.done_at for r in results), default=run.started_at) - run.started_at
    makespan = wall_s / scale
    ok = [r for r in results if r.ok]
    good = [r for r in results if slo.met_by(r, scale)]
    per_s = 1 / makespan if makespan > 0 else 0.0
    return {
        "requests": len(results),
        "errors": len(results) - len(ok),
        "wall_s": round(wall_s, 3),
        "duration_s": round(makespan, 3),
        "throughput_rps": round(len(ok) * per_s, 3),
        "output_tokens_per_s": round(sum(r.completion_tokens or 0 for r in ok) * per_s, 1),
        "goodput_ratio": round(len(good) / len(results), 4) if results else None,
        "goodput_rps": round(len(good) * per_s, 3),
    }


def backend_counts(
    results: Sequence[RequestResult], backends: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Requests, prompt and cached tokens per backend, from the response header."""
    counts: dict[str, dict[str, Any]] = {name: _zero_counts() for name in backends}
    for result in results:
        if result.backend is None:
            continue
        row = counts.setdefault(result.backend, _zero_counts())
        row["requests"] += 1
        row["prompt_tokens"] += result.prompt_tokens or 0
        row["cached_tokens"] += result.cached_tokens or 0
        row["completion_tokens"] += result.completion_tokens or 0
    return counts


def _zero_counts() -> dict[str, Any]:
    return {"requests": 0, "prompt_tokens": 0, "cached_tokens": 0, "completion_tokens": 0}


def imbalance_summary(per_backend: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
    requests = {name: row.get("requests", 0) for name, row in per_backend.items()}
    prompt = {name: row.get("prompt_tokens", 0) for name, row in per_backend.items()}
    return {
        "imbalance_requests": _round(imbalance(requests)),
        "imbalance_prompt_tokens": _round(imbalance(prompt)),
    }


def error_kinds(results: Sequence[RequestResult], top: int = 5) -> dict[str, int]:
    """The most frequent error messages, with their counts."""
    counts: dict[str, int] = {}
    for result in results:
        if result.error is not None:
            counts[result.error] = counts.get(result.error, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1])[:top])
