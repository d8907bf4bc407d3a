"""Drift distributions, the margin between healthy and degraded replicas, and detection
cycles, from the per-cycle records of a run; pure functions of those records."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CycleRecord:
    """One backend in one probe cycle: what its probes measured and how it was judged."""

    cycle: int
    """1, 2, ...: cycles since the subject was (re)placed; 0 is the warm-up cycle."""
    backend: str
    drifts: tuple[float, ...]
    """Each canary prompt's drift from its reference, in prompt order."""
    flagged: tuple[str, ...]
    """Kinds of the probes judged wrong (ok False) in this cycle, once per probe."""
    unjudged: tuple[str, ...]
    """Kinds of the probes that gave no verdict (ok None)."""
    state: str
    """The backend's state in the quality book after the cycle."""
    needle: str = ""
    """The needle probe's detail, when one ran."""


@dataclass(frozen=True, slots=True)
class Distribution:
    count: int
    min: float
    p50: float
    p90: float
    p99: float
    max: float

    def row(self) -> tuple[float, ...]:
        return (self.min, self.p50, self.p90, self.p99, self.max)


def percentile(ordered: Sequence[float], share: float) -> float:
    """Nearest rank: the smallest value with at least `share` of the values at or below it."""
    if not ordered:
        raise ValueError("no values")
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def distribution(values: Iterable[float]) -> Distribution | None:
    ordered = sorted(values)
    if not ordered:
        return None
    p50, p90, p99 = (percentile(ordered, s) for s in (0.5, 0.9, 0.99))
    return Distribution(len(ordered), ordered[0], p50, p90, p99, ordered[-1])


def drifts(records: Iterable[CycleRecord]) -> list[float]:
    """Every canary answer's drift: the distribution a per-answer threshold is set on."""
    return [d for r in records for d in r.drifts]


def cycle_max_drifts(records: Iterable[CycleRecord]) -> list[float]:
    """Each cycle's largest drift: a cycle is flagged when this is over the threshold."""
    return [max(r.drifts) for r in records if r.drifts]


def first_cycle(records: Iterable[CycleRecord], flagged: bool = True) -> int | None:
    """The first cycle (after the warm-up) in which a probe was judged wrong, or, with
    `flagged=False`, after which the book no longer held the backend healthy."""
    for record in sorted(records, key=lambda r: r.cycle):
        if record.cycle < 1:
            continue
        if record.flagged if flagged else record.state not in ("healthy", "unknown"):
            return record.cycle
    return None


@dataclass(frozen=True, slots=True)
class Margin:
    """The gap between the largest healthy drift and the smallest cycle-worst faulty one."""

    healthy_max: float
    fault_min: float

    @property
    def gap(self) -> float:
        """Positive: a threshold in [healthy_max, fault_min) flags every faulty cycle and
        no healthy answer; negative: no threshold does both."""
        return self.fault_min - self.healthy_max

    @property
    def ratio(self) -> float | None:
        """fault_min / healthy_max; None when healthy answers never drifted at all."""
        return self.fault_min / self.healthy_max if self.healthy_max > 0 else None


def margin(healthy: Iterable[CycleRecord], faulty: Iterable[CycleRecord]) -> Margin | None:
    healthy_drifts, worst = drifts(healthy), cycle_max_drifts(faulty)
    if not healthy_drifts or not worst:
        return None
    return Margin(max(healthy_drifts), min(worst))


def flag_counts(records: Iterable[CycleRecord]) -> dict[str, int]:
    """Probes judged wrong, per kind."""
    counts: dict[str, int] = {}
    for record in records:
        for kind in record.flagged:
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def state_counts(records: Iterable[CycleRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        counts[record.state] = counts.get(record.state, 0) + 1
    return counts
