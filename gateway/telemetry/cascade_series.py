"""The dashboard's view of cascades: per cascade, over the window, which tier answered,
how often each tier escalated and on which checks, and what the answers cost against
sending every request to the top tier.

Fed by the telemetry thread, read by the dashboard endpoint (a lock keeps them apart).
Bounded: at most `MAX_CASCADES` cascades (the config's, in practice), each a ring of
fixed-width time buckets whose tier and check tallies are bounded by the config.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.telemetry.record import RequestRecord
    from policies.prices import PriceLookup

MAX_CASCADES = 64
_MAX_KEYS = 64
"""Tiers or (tier, check) pairs a bucket counts apart; more go under `other`."""


@dataclass(slots=True)
class _Bucket:
    start: int
    answers: int = 0
    passing: int = 0
    failed: int = 0
    committed: int = 0
    skipped: int = 0
    judge_calls: int = 0
    cost_usd: float = 0.0
    top_cost_usd: float = 0.0
    answered_by: dict[str, int] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    escalated: dict[str, int] = field(default_factory=dict)
    checks: dict[str, int] = field(default_factory=dict)
    """`tier/check` → failures."""


class CascadeSeries:
    name = "cascades"

    def __init__(self, prices: PriceLookup, window_s: int, bucket_s: int) -> None:
        self._prices = prices
        self._bucket_s = bucket_s
        self._slots = window_s // bucket_s + 1
        self._rings: dict[str, list[_Bucket | None]] = {}
        self._lock = threading.Lock()

    def consume(self, record: RequestRecord) -> None:
        note = record.cascade
        if note is None:
            return
        cost = record.cost_usd(self._prices.lookup(record.backend, record.model))
        top = 0.0
        if note.final and note.outcome != "judge":
            if note.top_tier:
                top = cost
            elif note.top is not None:
                top = record.cost_usd(self._prices.lookup(*note.top))
        with self._lock:
            bucket = self._bucket(note.cascade, record.at)
            if bucket is None:
                return
            bucket.cost_usd += cost
            tier = note.tier_route
            if note.outcome == "judge":
                bucket.judge_calls += 1
                return
            _bump(bucket.attempts, tier)
            if note.attempt == 1:
                bucket.skipped += note.start_tier
            for failure in note.failures:
                _bump(bucket.checks, f"{tier}/{failure.check}")
            if not note.final:  # escalated, or abandoned by the client
                if note.outcome == "escalated":
                    _bump(bucket.escalated, tier)
                return
            bucket.answers += 1
            bucket.top_cost_usd += top
            _bump(bucket.answered_by, tier)
            bucket.passing += not note.failures and record.status == 200 and record.error is None
            bucket.failed += note.outcome == "failed"
            bucket.committed += note.outcome == "committed"

    def _bucket(self, cascade: str, at: float) -> _Bucket | None:
        ring = self._rings.get(cascade)
        if ring is None:
            if len(self._rings) >= MAX_CASCADES:
                return None
            ring = self._rings[cascade] = [None] * self._slots
        start = int(at // self._bucket_s) * self._bucket_s
        slot = (start // self._bucket_s) % self._slots
        current = ring[slot]
        if current is None or start > current.start:
            current = ring[slot] = _Bucket(start)
        elif start < current.start:
            return None  # older than the ring
        return current

    def snapshot(self, now: float, window_s: int) -> list[dict[str, Any]]:
        """Each cascade's summary over the last `window_s` seconds."""
        since = now - window_s
        with self._lock:
            rings = {name: [b for b in ring if b is not None] for name, ring in self._rings.items()}
        return [
            _summary(name, [b for b in buckets if b.start + self._bucket_s > since])
            for name, buckets in sorted(rings.items())
        ]


def _bump(counts: dict[str, int], key: str) -> None:
    if key not in counts and len(counts) >= _MAX_KEYS:
        key = "other"
    counts[key] = counts.get(key, 0) + 1


def _added(buckets: list[_Bucket], name: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for bucket in buckets:
        for key, n in getattr(bucket, name).items():
            out[key] = out.get(key, 0) + n
    return out


def _summary(name: str, buckets: list[_Bucket]) -> dict[str, Any]:
    answers = sum(b.answers for b in buckets)
    passing = sum(b.passing for b in buckets)
    cost = sum(b.cost_usd for b in buckets)
    top = sum(b.top_cost_usd for b in buckets)
    attempts = _added(buckets, "attempts")
    escalated = _added(buckets, "escalated")
    return {
        "cascade": name,
        "answers": answers,
        "passing": passing,
        "failed": sum(b.failed for b in buckets),
        "committed": sum(b.committed for b in buckets),
        "skipped_tiers": sum(b.skipped for b in buckets),
        "judge_calls": sum(b.judge_calls for b in buckets),
        "answered_by": _added(buckets, "answered_by"),
        "tiers": [
            {
                "tier": tier,
                "attempts": n,
                "escalated": escalated.get(tier, 0),
                "escalation_rate": round(escalated.get(tier, 0) / n, 4) if n else None,
            }
            for tier, n in attempts.items()
        ],
        "checks": dict(sorted(_added(buckets, "checks").items(), key=lambda kv: -kv[1])),
        "cost_usd": round(cost, 6),
        "cost_per_passing_usd": round(cost / passing, 8) if passing else None,
        "top_tier_cost_usd": round(top, 6),
        "saving": round(1 - cost / top, 4) if top > 0 else None,
    }
