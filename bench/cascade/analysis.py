"""What a run measured, summed up: per workload and policy the tiers that answered, the
answers passing their checks, accuracy, cost per passing and per correct answer, latency;
the log-probability check's AUROC against ground truth (Mann-Whitney, with Hanley and
McNeil's standard error) and its accuracy-cost curve over thresholds, against escalating
the same share at random."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.cascade.drive import Outcome


def summary(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    n = len(outcomes)
    passing = sum(o.passes for o in outcomes)
    correct = sum(o.correct for o in outcomes)
    cost = sum(o.cost_usd for o in outcomes)
    tiers: dict[str, int] = {}
    for o in outcomes:
        tiers[o.tier] = tiers.get(o.tier, 0) + 1
    latencies = sorted(o.latency_s for o in outcomes)
    return {
        "requests": n,
        "answered_by": {t: round(c / n, 4) for t, c in sorted(tiers.items())} if n else {},
        "passing": _share(passing, n),
        "accuracy": _share(correct, n),
        "escalated": _share(sum(o.escalated for o in outcomes), n),
        "marked_failed": sum(
            o.verdict is not None and o.verdict.startswith("failed") for o in outcomes
        ),
        "unmarked_failures": sum(
            o.status == 200
            and not o.passes
            and o.verdict is None
            and o.policy.startswith("cascade")
            for o in outcomes
        ),
        "started_above_first": sum(o.start_tier > 0 for o in outcomes),
        "cost_usd": round(cost, 8),
        "cost_per_passing_usd": cost / passing if passing else None,
        "cost_per_correct_usd": cost / correct if correct else None,
        "latency_p50_s": quantile(latencies, 0.5),
        "latency_p90_s": quantile(latencies, 0.9),
    }


def with_ratios(rows: dict[str, dict[str, Any]], base: str = "always-strong") -> None:
    """Each policy's cost per passing and per correct answer as a share of `base`'s."""
    reference = rows.get(base)
    if reference is None:
        return
    for row in rows.values():
        for key in ("cost_per_passing_usd", "cost_per_correct_usd"):
            mine, theirs = row.get(key), reference.get(key)
            ratio = mine / theirs if mine is not None and theirs else None
            row[key.replace("_usd", "_vs_strong")] = None if ratio is None else round(ratio, 4)


@dataclass(frozen=True)
class Auroc:
    value: float | None
    se: float | None
    positives: int
    negatives: int

    @property
    def z(self) -> float | None:
        if self.value is None or not self.se:
            return None
        return (self.value - 0.5) / self.se

    def describe(self) -> dict[str, Any]:
        return {
            "auroc": None if self.value is None else round(self.value, 4),
            "se": None if self.se is None else round(self.se, 4),
            "z": None if self.z is None else round(self.z, 2),
            "correct": self.positives,
            "wrong": self.negatives,
        }


def auroc(scores: Sequence[float], correct: Sequence[bool]) -> Auroc:
    """How well a higher score picks out a correct answer: P(score of a correct one >
    score of a wrong one), ties counted half."""
    pos = [s for s, c in zip(scores, correct, strict=True) if c]
    neg = [s for s, c in zip(scores, correct, strict=True) if not c]
    if not pos or not neg:
        return Auroc(None, None, len(pos), len(neg))
    wins = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p in pos for q in neg)
    a = wins / (len(pos) * len(neg))
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    variance = (a * (1 - a) + (len(pos) - 1) * (q1 - a * a) + (len(neg) - 1) * (q2 - a * a)) / (
        len(pos) * len(neg)
    )
    return Auroc(a, math.sqrt(max(variance, 0.0)), len(pos), len(neg))


@dataclass(frozen=True)
class PairedRequest:
    """One short request as both tiers answered it alone."""

    mean_logprob: float | None
    small_correct: bool
    strong_correct: bool
    small_cost: float
    strong_cost: float


def curve(pairs: Sequence[PairedRequest], thresholds: Sequence[float]) -> list[dict[str, Any]]:
    """At each threshold: escalate the answers whose mean log-probability is below it (and
    those without one); the accuracy and cost per request that gives, and the accuracy of
    escalating the same share at random."""
    n = len(pairs)
    small_acc = sum(p.small_correct for p in pairs) / n
    strong_acc = sum(p.strong_correct for p in pairs) / n
    rows = []
    for t in thresholds:
        up = [p.mean_logprob is None or p.mean_logprob < t for p in pairs]
        share = sum(up) / n
        accuracy = sum(
            (p.strong_correct if e else p.small_correct) for p, e in zip(pairs, up, strict=True)
        )
        cost = sum(
            p.small_cost + (p.strong_cost if e else 0.0) for p, e in zip(pairs, up, strict=True)
        )
        rows.append(
            {
                "threshold": round(t, 4),
                "escalated": round(share, 4),
                "accuracy": round(accuracy / n, 4),
                "random_accuracy": round((1 - share) * small_acc + share * strong_acc, 4),
                "cost_per_request_usd": cost / n,
            }
        )
    return rows


def thresholds_of(pairs: Sequence[PairedRequest], count: int = 12) -> list[float]:
    """Quantiles of the observed mean log-probabilities (and one above them all)."""
    values = sorted(p.mean_logprob for p in pairs if p.mean_logprob is not None)
    if not values:
        return [0.0]
    picks = {
        values[min(len(values) - 1, round(i * (len(values) - 1) / (count - 1)))]
        for i in range(count)
    }
    return [*sorted(picks), 0.0 if values[-1] < 0 else values[-1] + 1e-6]


def choose_threshold(
    rows: Sequence[dict[str, Any]], strong_accuracy: float, strong_cost: float, margin: float = 0.05
) -> float | None:
    """The cheapest threshold whose accuracy is within `margin` of the strong tier's and
    whose cost is below it; None when none is."""
    fitting = [
        r
        for r in rows
        if r["accuracy"] >= strong_accuracy - margin and r["cost_per_request_usd"] < strong_cost
    ]
    return min(fitting, key=lambda r: r["cost_per_request_usd"])["threshold"] if fitting else None


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    return round(values[min(len(values) - 1, int(q * len(values)))], 3)
