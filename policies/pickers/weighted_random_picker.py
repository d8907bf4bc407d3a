"""Samples an order from the softmax of the combined scores."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from policies.base import Pick, PolicyParams, Role
from policies.decision import Ranked
from policies.register import register_policy
from policies.snapshot import Snapshot


@register_policy
class WeightedRandomPicker:
    """Draws the whole order without replacement, each step with probability
    proportional to `exp(total / temperature)` among the candidates not yet drawn.

    Low temperatures approach max-score; high ones approach uniform, which spreads
    load when scores differ only a little.
    """

    role: ClassVar[Role] = "picker"
    type_name: ClassVar[str] = "weighted-random-picker"

    class Params(PolicyParams):
        temperature: float = Field(1.0, gt=0)

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def pick(self, snapshot: Snapshot, ranked: Sequence[Ranked]) -> Pick:
        if not ranked:
            return Pick((), "no candidates")
        rng = random.Random(snapshot.request.rng_seed)
        pool = sorted(ranked, key=lambda r: r.backend.name)
        weights = _softmax_weights([r.total for r in pool], self.params.temperature)
        first_p = 1.0 / sum(weights)  # times the chosen one's weight, below
        order: list[Ranked] = []
        while pool and (remaining := sum(weights)) > 0.0:
            i = _draw(weights, rng.random() * remaining)
            if not order:
                first_p *= weights[i]
            order.append(pool.pop(i))
            weights.pop(i)
        # Weights that underflowed to 0 are astronomically unlikely: rank them by score.
        order += sorted(pool, key=lambda r: -r.total)
        reason = (
            f"sampled with p={first_p:.2f} (score {order[0].total:.2f}, "
            f"temperature {self.params.temperature:g})"
        )
        return Pick(tuple(r.backend.name for r in order), reason)


def _softmax_weights(totals: list[float], temperature: float) -> list[float]:
    # Relative to the best total, so exp() stays finite at tiny temperatures and the
    # best candidate keeps weight 1: the first draw always has a positive sum.
    top = max(totals)
    return [math.exp((t - top) / temperature) for t in totals]


def _draw(weights: list[float], target: float) -> int:
    for i, w in enumerate(weights):
        target -= w
        if target < 0:
            return i
    return len(weights) - 1
