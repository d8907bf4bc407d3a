"""Prefers the backends with the fewest requests in flight."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import ClassVar

from policies.base import PolicyParams, Role, Score
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot


@register_policy
class LeastLoadScorer:
    """Scores `(min + 1) / (in_flight + 1)` against the least-loaded candidate, or, with
    `relative: false`, the free share of the backend's own `max_concurrency`."""

    role: ClassVar[Role] = "scorer"
    type_name: ClassVar[str] = "least-load-scorer"

    class Params(PolicyParams):
        relative: bool = True
        """Score against the least-loaded candidate rather than each backend's limit."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        if self.params.relative:
            least = min((b.in_flight for b in candidates), default=0)
            return {
                b.name: Score((least + 1) / (b.in_flight + 1), partial(_reason, b))
                for b in candidates
            }
        return {b.name: Score(_free_share(b), partial(_reason, b)) for b in candidates}


def _free_share(b: BackendView) -> float:
    return max(0.0, 1.0 - b.in_flight / b.max_concurrency) if b.max_concurrency > 0 else 0.0


def _reason(b: BackendView) -> str:
    return f"{b.in_flight} in flight of {b.max_concurrency}"
