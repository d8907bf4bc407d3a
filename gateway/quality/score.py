"""Time-decayed evidence of one signal and the score it earns, in [0, 1].

Each signal keeps two numbers, bad and total evidence, that lose half their weight every
`half_life_s`: old evidence fades, so a score drifts back to the prior (healthy) when
nothing new is seen. The score is judged on the rate's lower confidence bound (Wilson),
so ten responses with three failures weigh less than a thousand with three hundred, and
a signal with less than `min_evidence` decayed responses cannot pull a score down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gateway.quality.config import SignalTolerance


@dataclass(slots=True)
class DecayedRate:
    """Bad and total evidence weights, decayed to `at` lazily on every touch."""

    bad: float = 0.0
    total: float = 0.0
    at: float = 0.0
    last_bad_detail: str = ""
    last_bad_at: float | None = None

    def decay_to(self, now: float, half_life_s: float) -> None:
        if now > self.at:
            factor = 0.5 ** ((now - self.at) / half_life_s)
            self.bad *= factor
            self.total *= factor
            self.at = now

    def add(self, now: float, half_life_s: float, bad: bool, weight: float, detail: str) -> None:
        self.decay_to(now, half_life_s)
        self.total += weight
        if bad:
            self.bad += weight
            self.last_bad_detail = detail
            self.last_bad_at = now

    def decayed(self, now: float, half_life_s: float) -> tuple[float, float]:
        """(bad, total) as of `now`, without changing the stored values."""
        if now <= self.at:
            return self.bad, self.total
        factor = 0.5 ** ((now - self.at) / half_life_s)
        return self.bad * factor, self.total * factor


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


def signal_score(
    signal: str,
    bad: float,
    total: float,
    tolerance: SignalTolerance,
    *,
    z: float,
    prior_weight: float,
    min_evidence: float,
    baseline: float = 0.0,
) -> SignalScore:
    """1 while the bad rate's lower bound is within tolerance (above `baseline`, for
    signals judged against peers), falling linearly to 0 at `broken`."""
    prior_rate = min(1.0, baseline + tolerance.tolerated)
    weight = total + prior_weight
    rate = (bad + prior_weight * prior_rate) / weight if weight > 0 else 0.0
    score = 1.0
    if total >= min_evidence:
        excess = wilson_lower(bad, total, z) - baseline - tolerance.tolerated
        span = tolerance.broken - tolerance.tolerated
        score = 1.0 - min(1.0, max(0.0, excess / span))
    return SignalScore(signal, score, rate, bad, total, baseline)
