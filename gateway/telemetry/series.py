"""The dashboard's time series: per backend and for the fleet, fixed-width time buckets.

Fed by the telemetry thread, read by the dashboard endpoint; a lock keeps the two apart.
Bounded: (backends + 1) x window_s / bucket_s buckets, each with a few counters and sparse
latency histograms; a bucket holds at most `max_error_codes` distinct codes.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gateway.telemetry.histogram import Histogram, quantiles_ms
from gateway.telemetry.serving_series import DISCOVERED_MARK

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping

    from gateway.routing.decisions import HeldNote
    from gateway.telemetry.config import TelemetryConfig
    from gateway.telemetry.record import RequestRecord
    from policies.prices import PriceLookup

_QS = (0.5, 0.9, 0.99)
_REUSE_S = 1.0
_OTHER = "other"


@dataclass(slots=True)
class Bucket:
    start: int
    requests: int = 0
    ok: int = 0
    abandoned: int = 0
    """The client left before the answer ended: neither a success nor the backend's fault."""
    retries: int = 0
    status: dict[str, int] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    cached_tokens: int = 0
    hit_base_tokens: int = 0
    """Prompt tokens of the requests whose backend reported cached tokens."""
    predicted_cached_tokens: int = 0
    served_prompt_tokens: int = 0
    completion_tokens: int = 0
    spend_usd: float = 0.0
    held: int = 0
    """Requests flow control held (queued, moved or refused after a wait, or at once)."""
    shed: int = 0
    """Requests flow control refused (429)."""
    moved: int = 0
    """Requests flow control moved to a fallback route."""
    policies: dict[str, int] = field(default_factory=dict)
    memo: dict[str, tuple[int, list[float | None]]] = field(default_factory=dict)
    """Per-bucket quantiles, keyed by name, valid while `requests` has not moved."""
    ttft: Histogram = field(default_factory=Histogram)
    tpot: Histogram = field(default_factory=Histogram)
    e2e: Histogram = field(default_factory=Histogram)
    overhead: Histogram = field(default_factory=Histogram)
    queue_wait: Histogram = field(default_factory=Histogram)
    """How long the requests flow control held waited."""


class Panel:
    """One backend's (or the fleet's) ring of buckets and latest reason per policy."""

    def __init__(self, slots: int, bucket_s: int) -> None:
        self._ring: list[Bucket | None] = [None] * slots
        self._bucket_s = bucket_s
        self.examples: dict[str, str] = {}

    def bucket(self, at: float) -> Bucket | None:
        """The bucket for a request that arrived at `at`; None when it is older than the
        ring (a long stream finishing): it must not wipe the newer bucket in its slot."""
        start = int(at // self._bucket_s) * self._bucket_s
        slot = (start // self._bucket_s) % len(self._ring)
        current = self._ring[slot]
        if current is None or start > current.start:
            current = self._ring[slot] = Bucket(start)
        elif start < current.start:
            return None
        return current

    def buckets(self, starts: Iterable[int]) -> list[Bucket | None]:
        out: list[Bucket | None] = []
        for start in starts:
            held = self._ring[(start // self._bucket_s) % len(self._ring)]
            out.append(held if held is not None and held.start == start else None)
        return out


class DashboardSeries:
    name = "series"

    def __init__(
        self,
        config: TelemetryConfig,
        prices: PriceLookup,
        weights: Mapping[str, Mapping[str, float]],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._prices = prices
        self._weights = weights
        self._clock = clock
        self._slots = config.window_s // config.bucket_s + 1
        self._fleet = Panel(self._slots, config.bucket_s)
        self._backends: dict[str, Panel] = {}
        self._lock = threading.Lock()
        self._cached: dict[int, tuple[float, dict[str, Any]]] = {}

    def consume(self, record: RequestRecord) -> None:
        deciding = record.deciding_policy(self._weights.get(record.route, {}))
        cost = record.cost_usd(self._prices.lookup(record.backend, record.model))
        blamed = record.blamed_backend
        with self._lock:
            fleet = self._fleet.bucket(record.at)
            if fleet is None:
                return
            fleet.retries += record.retries
            self._fleet.examples[deciding.name] = deciding.reason
            buckets = [fleet]
            if blamed is not None:
                panel = self._panel(blamed)
                bucket = panel.bucket(record.at)
                if bucket is not None:
                    buckets.append(bucket)
                panel.examples[deciding.name] = deciding.reason
            self._add(buckets, record, cost, deciding.name)
            for attempt in record.decision.attempts[:-1]:
                if attempt.outcome == "ok":
                    continue
                failed_at = self._panel(attempt.backend).bucket(record.at)
                if failed_at is not None:  # counted where it failed
                    failed_at.retries += 1

    def forget_discovered(self, serving: Collection[str]) -> None:
        """Drop the panels of discovered backends (`@` in the name) no longer served: such
        names come and go with the DNS, and the dashboard shows only served backends."""
        with self._lock:
            for name in [n for n in self._backends if DISCOVERED_MARK in n and n not in serving]:
                del self._backends[name]

    def _panel(self, backend: str) -> Panel:
        panel = self._backends.get(backend)
        if panel is None:
            panel = self._backends[backend] = Panel(self._slots, self.config.bucket_s)
        return panel

    def _add(self, buckets: list[Bucket], record: RequestRecord, cost: float, policy: str) -> None:
        """Add the record to the fleet's bucket and its backend's: what it says is read once."""
        ok = record.status < 400 and record.error is None
        abandoned = record.abandoned
        status_class = record.status_class
        code = None if ok else record.error or f"http_{record.status}"
        prompt, cached, completion = record.tokens()
        reported = record.reported_cached
        predicted = record.predicted_cached_tokens if record.backend is not None else None
        e2e_s, overhead_s, ttft_s, tpot_s = (
            record.e2e_s,
            record.overhead_s,
            record.ttft_s,
            record.tpot_s,
        )
        held = record.decision.held
        if held is not None and held.outcome != "immediate":
            for bucket in buckets:
                _add_held(bucket, held)
        for bucket in buckets:
            bucket.requests += 1
            bucket.ok += ok
            bucket.abandoned += abandoned
            _bump(bucket.status, status_class, 1 << 30)
            if code is not None:
                _bump(bucket.codes, code, self.config.max_error_codes)
            bucket.prompt_tokens += prompt
            bucket.completion_tokens += completion
            if reported:
                bucket.cached_tokens += cached
                bucket.hit_base_tokens += prompt
            if predicted is not None:
                bucket.served_prompt_tokens += prompt
                bucket.predicted_cached_tokens += predicted
            bucket.spend_usd += cost
            _bump(bucket.policies, policy, 1 << 30)
            bucket.e2e.add(e2e_s)
            bucket.overhead.add(overhead_s)
            if ttft_s is not None:
                bucket.ttft.add(ttft_s)
            if tpot_s is not None:
                bucket.tpot.add(tpot_s)

    def snapshot(self, window_s: int) -> dict[str, Any]:
        """The fleet's and every backend's summary, series and top reasons over the window.

        Costs milliseconds (quantiles over every bucket): call it off the event loop. Every
        open dashboard polls, so an answer is reused for a second.
        """
        bucket_s = self.config.bucket_s
        window_s = max(2 * bucket_s, min(window_s, self.config.window_s))
        now = self._clock()
        cached = self._cached.get(window_s)
        if cached is not None and now - cached[0] < _REUSE_S:
            return cached[1]
        answer = self._snapshot(window_s, now)
        self._cached = {**self._cached, window_s: (now, answer)}
        return answer

    def _snapshot(self, window_s: int, now: float) -> dict[str, Any]:
        bucket_s = self.config.bucket_s
        last = int(now // bucket_s) * bucket_s
        starts = list(range(last - window_s + bucket_s, last + bucket_s, bucket_s))
        with self._lock:
            fleet = _panel_view(self._fleet, starts, window_s)
            backends = {
                name: _panel_view(panel, starts, window_s) for name, panel in self._backends.items()
            }
        total = fleet["summary"]["requests"]
        for view in backends.values():
            view["summary"]["share"] = view["summary"]["requests"] / total if total else None
        return {"bucket_s": bucket_s, "window_s": window_s, "fleet": fleet, "backends": backends}


def _add_held(bucket: Bucket, held: HeldNote) -> None:
    bucket.held += 1
    bucket.moved += held.outcome == "fallback"
    bucket.shed += held.outcome not in ("queued", "fallback")
    bucket.queue_wait.add(held.waited_ms / 1000.0)


def _bump(counts: dict[str, int], key: str, limit: int) -> None:
    if key not in counts and len(counts) >= limit:
        key = _OTHER
    counts[key] = counts.get(key, 0) + 1


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _panel_view(panel: Panel, starts: list[int], window_s: int) -> dict[str, Any]:
    held = panel.buckets(starts)
    present = [b for b in held if b is not None]
    return {
        "summary": _summary(present, window_s),
        "series": _series(starts, held),
        "reasons": _reasons(present, panel.examples),
    }


def _summary(buckets: list[Bucket], window_s: int) -> dict[str, Any]:
    requests = sum(b.requests for b in buckets)
    status: dict[str, int] = {}
    codes: dict[str, int] = {}
    for b in buckets:
        for key, n in b.status.items():
            status[key] = status.get(key, 0) + n
        for key, n in b.codes.items():
            codes[key] = codes.get(key, 0) + n
    prompt = sum(b.prompt_tokens for b in buckets)
    abandoned = sum(b.abandoned for b in buckets)
    cached = sum(b.cached_tokens for b in buckets)
    predicted = sum(b.predicted_cached_tokens for b in buckets)
    return {
        "requests": requests,
        "rps": round(requests / window_s, 4),
        "success_rate": _ratio(sum(b.ok for b in buckets), requests - abandoned),
        "abandoned": abandoned,
        "status": status,
        "errors": dict(sorted(codes.items(), key=lambda kv: -kv[1])),
        "ttft_ms": _quantiles(b.ttft for b in buckets),
        "tpot_ms": _quantiles(b.tpot for b in buckets),
        "e2e_ms": _quantiles(b.e2e for b in buckets),
        "overhead_ms": _quantiles(b.overhead for b in buckets),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "predicted_cached_tokens": predicted,
        "completion_tokens": sum(b.completion_tokens for b in buckets),
        "cache_hit_ratio": _ratio(cached, sum(b.hit_base_tokens for b in buckets)),
        "predicted_cache_hit_ratio": _ratio(
            predicted, sum(b.served_prompt_tokens for b in buckets)
        ),
        "spend_usd": round(sum(b.spend_usd for b in buckets), 6),
        "retries": sum(b.retries for b in buckets),
        "held": sum(b.held for b in buckets),
        "shed": sum(b.shed for b in buckets),
        "moved": sum(b.moved for b in buckets),
        "queue_wait_ms": _quantiles(b.queue_wait for b in buckets),
        "share": None,
    }


def _quantiles(histograms: Iterable[Histogram]) -> dict[str, float | None]:
    p50, p90, p99 = quantiles_ms(histograms, _QS)
    return {"p50": p50, "p90": p90, "p99": p99}


def _series(starts: list[int], held: list[Bucket | None]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {"t": starts}
    columns: dict[str, Callable[[Bucket], Any]] = {
        "requests": lambda b: b.requests,
        "errors": lambda b: b.requests - b.ok - b.abandoned,
        "success_rate": lambda b: _ratio(b.ok, b.requests - b.abandoned),
        "cache_hit_ratio": lambda b: _ratio(b.cached_tokens, b.hit_base_tokens),
        "predicted_cache_hit_ratio": lambda b: _ratio(
            b.predicted_cached_tokens, b.served_prompt_tokens
        ),
        "spend_usd": lambda b: round(b.spend_usd, 6),
        "held": lambda b: b.held,
        "shed": lambda b: b.shed,
    }
    empty = {"requests": 0, "errors": 0, "spend_usd": 0.0, "held": 0, "shed": 0}
    for name, column in columns.items():
        out[name] = [column(b) if b is not None else empty.get(name) for b in held]
    for name in ("ttft", "tpot", "overhead"):
        rows = [_bucket_quantiles(b, name) if b is not None else [None, None, None] for b in held]
        wanted = {"ttft": (0, 1, 2), "tpot": (0, 1, 2), "overhead": (0, 2)}[name]
        for i in wanted:
            label = ("p50", "p90", "p99")[i]
            out[f"{name}_{label}_ms"] = [row[i] for row in rows]
    return out


def _bucket_quantiles(bucket: Bucket, name: str) -> list[float | None]:
    """A closed bucket rarely changes: its quantiles are computed once, not per poll."""
    held = bucket.memo.get(name)
    if held is not None and held[0] == bucket.requests:
        return held[1]
    values = quantiles_ms([getattr(bucket, name)], _QS)
    bucket.memo[name] = (bucket.requests, values)
    return values


def _reasons(buckets: list[Bucket], examples: Mapping[str, str]) -> list[dict[str, Any]]:
    counts: dict[str, int] = {}
    for b in buckets:
        for policy, n in b.policies.items():
            counts[policy] = counts.get(policy, 0) + n
    total = sum(counts.values())
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:5]
    return [
        {"policy": p, "count": n, "share": round(n / total, 4), "example": examples.get(p, "")}
        for p, n in top
    ]
