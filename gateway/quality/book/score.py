"""Time-decayed evidence of one signal and the score it earns, in [0, 1].

Each signal keeps two numbers, bad and total evidence, that lose half their weight every
`half_life_s`: old evidence fades, so a score drifts back to the prior (healthy) when
nothing new is seen. The score is judged on the rate's lower confidence bound (Wilson),
so ten responses with three failures weigh less than a thousand with three hundred, and
a signal with less than `min_evidence` decayed responses cannot pull a score down.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from gateway.quality.config import SignalTolerance

_ROUNDING = 1e-9


@dataclass(frozen=True, slots=True)
class Evidence:
    """Decayed (bad, total) weights over the half-life, and over the last few responses."""

    bad: float
    total: float
    recent_bad: float
    recent_total: float


@dataclass(slots=True)
class DecayedRate:
    """Bad and total evidence weights, decayed to `at` lazily on every touch.

    Two estimates: one over time (the half-life), and one over the last `window`
    responses (each new response multiplies the old weights by 1 - 1/window), which also
    fades with time. The second catches a fault that starts after hours of good
    evidence, which the first would dilute; it cannot demote with fewer responses than
    `min_evidence` either.
    """

    bad: float = 0.0
    total: float = 0.0
    recent_bad: float = 0.0
    recent_total: float = 0.0
    at: float = 0.0
    last_bad_detail: str = ""
    last_bad_at: float | None = None

    def decay_to(self, now: float, half_life_s: float) -> None:
        if now > self.at:
            factor = 0.5 ** ((now - self.at) / half_life_s)
            self.bad *= factor
            self.total *= factor
            self.recent_bad *= factor
            self.recent_total *= factor
            self.at = now

    def add(
        self, now: float, half_life_s: float, bad: bool, weight: float, detail: str, window: float
    ) -> None:
        self.decay_to(now, half_life_s)
        keep = (1.0 - 1.0 / window) ** weight
        self.recent_bad *= keep
        self.recent_total = self.recent_total * keep + weight
        self.total += weight
        if bad:
            self.bad += weight
            self.recent_bad += weight
            self.last_bad_detail = detail
            self.last_bad_at = now

    def decayed(self, now: float, half_life_s: float) -> Evidence:
        """The weights as of `now`, without changing the stored values."""
        factor = 0.5 ** ((now - self.at) / half_life_s) if now > self.at else 1.0
        return Evidence(
            self.bad * factor,
            self.total * factor,
            self.recent_bad * factor,
            self.recent_total * factor,
        )


def wilson_lower(bad: float, total: float, z: float) -> float:
    """Lower bound of the bad rate; 0 with no evidence. Works on decayed (real) counts."""
    if total <= 0:
        return 0.0
    p = min(1.0, max(0.0, bad / total))
    z2 = z * z
    centre = p + z2 / (2 * total)
    spread = z * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total))
    return max(0.0, (centre - spread) / (1 + z2 / total))


@dataclass(frozen=True, slots=True)
class SignalScore:
    """One signal's verdict on a backend and model."""

    signal: str
    score: float
    rate: float
    """Point estimate of the bad rate, the prior's pseudo-responses included."""
    bad: float
    total: float
    baseline: float = 0.0
    """For peer-relative signals, the peers' rate this one is compared with."""
    recent: bool = False
    """The last few responses, not the half-life's, set the score (bad/total are theirs)."""


def signal_score(
    signal: str,
    evidence: Evidence,
    tolerance: SignalTolerance,
    *,
    z: float,
    prior_weight: float,
    min_evidence: float,
    baseline: float = 0.0,
    recent_z: float | None = None,
) -> SignalScore:
    """1 while the bad rate's lower bound is within tolerance (above `baseline`, for
    signals judged against peers), falling linearly to 0 at `broken`; the worse of the
    half-life's and the recent responses' verdicts."""
    prior_rate = min(1.0, baseline + tolerance.tolerated)
    bad, total = evidence.bad, evidence.total
    weight = total + prior_weight
    rate = (bad + prior_weight * prior_rate) / weight if weight > 0 else 0.0

    def judge(bad: float, total: float, z: float) -> float:
        if total < min_evidence:
            return 1.0
        excess = wilson_lower(bad, total, z) - baseline - tolerance.tolerated
        if excess <= _ROUNDING:
            return 1.0  # not a rounding error's worth of doubt (a suspect needs real evidence)
        span = tolerance.broken - tolerance.tolerated
        return 1.0 - min(1.0, max(0.0, excess / span))

    score = judge(bad, total, z)
    recent = judge(evidence.recent_bad, evidence.recent_total, recent_z or z)
    if recent < score:
        recent_evidence = (evidence.recent_bad, evidence.recent_total)
        return SignalScore(signal, recent, rate, *recent_evidence, baseline, recent=True)
    return SignalScore(signal, score, rate, bad, total, baseline)


def worst_of(scores: Iterable[SignalScore]) -> tuple[float, SignalScore | None]:
    """The lowest score and its signal; (1, None) when none is below 1."""
    worst: SignalScore | None = None
    for score in scores:
        if worst is None or score.score < worst.score:
            worst = score
    if worst is None or worst.score >= 1.0:
        return 1.0, None
    return worst.score, worst
