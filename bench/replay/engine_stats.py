"""Per-engine counters from each emulator's `GET /emulator/stats`, before and after a run.

The stats document is read generically (every number, nested keys joined with dots), so
new counters appear in the JSON report without code here; the few this module derives
from are named below, first match wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .schedule import ReplayRun

REQUEST_KEYS = ("completed", "received")
PROMPT_TOKEN_KEYS = ("prompt_tokens", "prompt_tokens_total", "tokens.prompt")
CACHED_TOKEN_KEYS = ("cached_tokens", "cached_tokens_total", "tokens.cached")
# Wall-clock seconds the engine spent prefilling (time-scaled like everything it does).
PREFILL_BUSY_KEYS = ("prefill_busy_s", "busy.prefill_s", "prefill.busy_s")
# Time-integral of the share of KV held by running requests (seconds at 100 %).
KV_HELD_KEYS = ("kv_held_s",)


@dataclass
class EngineReport:
    delta: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    prefill_utilisation: float | None = None
    kv_held_mean: float | None = None
    """Mean share of the KV cache running requests held over the run (what LRU cannot use)."""


def flat_numbers(document: Any, prefix: str = "") -> dict[str, float]:
    """Every number in a JSON document, keyed by its dotted path."""
    if not isinstance(document, dict):
        return {}
    out: dict[str, float] = {}
    for key, value in document.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat_numbers(value, path + "."))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[path] = float(value)
    return out


def _first(delta: dict[str, float], keys: Sequence[str]) -> float | None:
    return next((delta[k] for k in keys if k in delta), None)


def per_engine(
    before: Sequence[Any], after: Sequence[Any], names: Sequence[str], run: ReplayRun
) -> dict[str, EngineReport]:
    """Counter deltas per engine, with requests, tokens and prefill utilisation picked out."""
    wall_s = max((r.done_at for r in run.results), default=run.started_at) - run.started_at
    reports: dict[str, EngineReport] = {}
    for name, start, end in zip(names, before, after, strict=False):
        first, last = flat_numbers(start), flat_numbers(end)
        delta = {k: round(v - first.get(k, 0.0), 6) for k, v in last.items()}
        report = EngineReport(delta)
        for label, keys in (
            ("requests", REQUEST_KEYS),
            ("prompt_tokens", PROMPT_TOKEN_KEYS),
            ("cached_tokens", CACHED_TOKEN_KEYS),
        ):
            value = _first(delta, keys)
            if value is not None:
                report.counts[label] = int(value)
        busy = _first(delta, PREFILL_BUSY_KEYS)
        held = _first(delta, KV_HELD_KEYS)
        if wall_s > 0:
            report.prefill_utilisation = None if busy is None else round(busy / wall_s, 4)
            report.kv_held_mean = None if held is None else round(held / wall_s, 4)
        reports[name] = report
    return reports


def as_backend_counts(engines: dict[str, EngineReport]) -> dict[str, dict[str, Any]]:
    """Per-backend rows for a router that does not say who served a request."""
    return {name: dict(report.counts) for name, report in engines.items()}


def mean_utilisation(engines: dict[str, EngineReport]) -> float | None:
    return _mean(e.prefill_utilisation for e in engines.values())


def mean_kv_held(engines: dict[str, EngineReport]) -> float | None:
    return _mean(e.kv_held_mean for e in engines.values())


def _mean(shares: Iterable[float | None]) -> float | None:
    """Mean over the engines that reported the share; None when none did."""
    values = [v for v in shares if v is not None]
    return round(sum(values) / len(values), 4) if values else None
