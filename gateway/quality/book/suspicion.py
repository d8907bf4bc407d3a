"""The suspect's test: fresh evidence since a suspicion began, until it decides either way.

A healthy pair whose score dips below 1 (some signal's rate is, with confidence, above
what it tolerates) becomes a suspect. Before, such a pair stayed "healthy" and the
quality scorer ranked it below its peers, so it got no more traffic and no evidence that
could convict or clear it: a backend looping on a third of its answers stayed healthy
for good. Now each suspected signal gets a trial: a sequential probability ratio test
(Wald's SPRT) on the evidence since the suspicion began, not decayed (decay would cap
what can ever be gathered at a trickle's rate). It weighs two rates against each other:

- `p0`, the tolerated rate (above the peers' rate, for signals judged against peers);
- `p1`, as far above the signal's ejection level (the rate at which its score falls to
  `demote_below`) as `p0` is below it.

After each response the log-likelihood ratio moves up (a bad one) or down (a good one);
the trial convicts (ejected) when it crosses `ln((1 - beta) / alpha)` and clears
(healthy) when it crosses `ln(beta / (1 - alpha))`. `alpha` bounds the chance that a
backend at its tolerated rate is ejected, `beta` that one at `p1` is cleared, however
often the test looks: that is its guard against many comparisons (several backends, a
dozen signals, judged after every response). The trial uses new evidence only: the
responses that raised the suspicion cannot also confirm it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from gateway.quality.config import SignalTolerance

Conclusion = Literal["convicted", "cleared", "open"]


@dataclass(slots=True)
class Trial:
    """Per suspected signal: [bad, total] evidence weight since the suspicion began."""

    started: float
    counts: dict[str, list[float]] = field(default_factory=dict)

    def suspect(self, signal: str) -> None:
        self.counts.setdefault(signal, [0.0, 0.0])

    def add(self, signal: str, bad: bool, weight: float) -> None:
        counts = self.counts.get(signal)
        if counts is not None:
            counts[0] += weight if bad else 0.0
            counts[1] += weight


def ejection_level(tolerance: SignalTolerance, demote_below: float, baseline: float = 0.0) -> float:
    """The bad rate at which the signal's score falls to `demote_below`."""
    span = tolerance.broken - tolerance.tolerated
    return min(1.0, baseline + tolerance.tolerated + (1.0 - demote_below) * span)


@dataclass(frozen=True, slots=True)
class Hypotheses:
    """The two rates a trial weighs, and its error bounds."""

    p0: float
    p1: float
    alpha: float
    beta: float

    @classmethod
    def around(cls, tolerated: float, level: float, alpha: float, beta: float) -> Hypotheses | None:
        """None when no rate above the level is possible (a peer rate near 100 %)."""
        p0 = min(max(tolerated, _FLOOR), 1.0 - _FLOOR)
        p1 = min(2 * level - p0, 1.0 - _FLOOR)
        return cls(p0, p1, alpha, beta) if p1 > p0 else None

    def llr(self, bad: float, total: float) -> float:
        good = max(0.0, total - bad)
        return bad * math.log(self.p1 / self.p0) + good * self._good_step()

    def _good_step(self) -> float:
        return math.log((1.0 - self.p1) / (1.0 - self.p0))

    def conclude(self, bad: float, total: float) -> Conclusion:
        llr = self.llr(bad, total)
        if llr >= math.log((1.0 - self.beta) / self.alpha):
            return "convicted"
        if llr <= math.log(self.beta / (1.0 - self.alpha)):
            return "cleared"
        return "open"

    def needed(self, bad: float, total: float) -> float:
        """Responses the trial needs in all to clear if every further one is good."""
        lower = math.log(self.beta / (1.0 - self.alpha))
        gap = self.llr(bad, total) - lower
        return total + max(0.0, math.ceil(gap / -self._good_step()))


_FLOOR = 1e-3
"""Rates are kept inside (0, 1): a tolerated rate of 0 would make one bad answer infinite
evidence (it still convicts at once with these bounds, as such a tolerance means)."""
