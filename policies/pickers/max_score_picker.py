"""Orders the survivors by combined score, best first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from policies.base import Pick, PolicyParams, Role
from policies.decision import Ranked
from policies.register import register_policy
from policies.snapshot import Snapshot


@register_policy
class MaxScorePicker:
    """Sorts by total score, highest first.

    Exact ties are sorted by name and then rotated by `rng_seed`, so each tied backend
    leads equally often across requests while any one request stays reproducible.
    """

    role: ClassVar[Role] = "picker"
    type_name: ClassVar[str] = "max-score-picker"

    class Params(PolicyParams):
        pass

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def pick(self, snapshot: Snapshot, ranked: Sequence[Ranked]) -> Pick:
        if not ranked:
            return Pick((), "no candidates")
        order = sorted(ranked, key=lambda r: (-r.total, r.backend.name))
        if len({r.total for r in order}) < len(order):
            order = _rotate_ties(order, snapshot.request.rng_seed)
        return Pick(tuple(r.backend.name for r in order), _reason(order))


def _rotate_ties(by_score: list[Ranked], seed: int) -> list[Ranked]:
    order: list[Ranked] = []
    start = 0
    while start < len(by_score):
        end = start + 1
        while end < len(by_score) and by_score[end].total == by_score[start].total:
            end += 1
        group = by_score[start:end]
        shift = seed % len(group)
        order += group[shift:] + group[:shift]
        start = end
    return order


def _reason(order: list[Ranked]) -> str:
    best = order[0].total
    if len(order) == 1:
        return f"only candidate, score {best:.2f}"
    ties = sum(1 for r in order[1:] if r.total == best)
    if ties:
        return f"highest score {best:.2f} (tied with {ties} other(s), tie broken by seed)"
    return f"highest score {best:.2f} (next {order[1].total:.2f})"
