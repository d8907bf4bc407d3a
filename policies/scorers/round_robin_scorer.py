"""Rotates the first choice over the candidates by the route's request counter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from policies.base import PolicyParams, Role, Score
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot


@register_policy
class RoundRobinScorer:
    """The candidate in rotation slot 1 (`seq % n` over names sorted) scores 1.0 and
    each later slot 1/n less, so the rotation order is also the fallback order."""

    role: ClassVar[Role] = "scorer"
    type_name: ClassVar[str] = "round-robin-scorer"

    class Params(PolicyParams):
        pass

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        names = sorted(b.name for b in candidates)
        n = len(names)
        start = snapshot.request.seq % n if n else 0
        scores: dict[str, Score] = {}
        for position, name in enumerate(names):
            slot = (position - start) % n
            scores[name] = Score(1.0 - slot / n, f"rotation slot {slot + 1} of {n}")
        return scores
