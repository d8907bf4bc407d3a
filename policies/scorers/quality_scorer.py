"""Prefers backends with better live quality for the request's model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import ClassVar

from pydantic import Field

from policies.base import PolicyParams, Role, Score
from policies.filters.quality_filter import seeded_share
from policies.register import register_policy
from policies.snapshot import BackendView, QualityView, Snapshot


@register_policy
class QualityScorer:
    """Scores `fidelity ** (1 - sla_weight) * sla ** sla_weight`.

    Fidelity (right model, served correctly) and SLA (fast enough lately) are kept apart
    by the quality book; `sla_weight` says how much the second counts here. A backend
    with no evidence yet scores 1, like a healthy one: new replicas must get traffic.

    A suspect (some evidence against it, not yet conclusive) scores as if its fidelity
    were 1 on `suspect_explore_share` of requests, drawn from the request's seed: ranked
    below its peers on every request, it would get no traffic, and its trial no evidence
    to convict or clear it with.
    """

    role: ClassVar[Role] = "scorer"
    type_name: ClassVar[str] = "quality-scorer"

    class Params(PolicyParams):
        sla_weight: float = Field(0.25, ge=0, le=1)
        """Share of the score that comes from the SLA dimension."""
        suspect_explore_share: float = Field(0.25, ge=0, le=1)
        """Share of requests on which a suspect is scored as if its fidelity were 1."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        weight = self.params.sla_weight
        scores: dict[str, Score] = {}
        for b in candidates:
            view = snapshot.quality.get(b.name)
            if view is None:
                scores[b.name] = _UNTRACKED
                continue
            share = self.params.suspect_explore_share
            seed = snapshot.request.rng_seed
            if view.state == "suspect" and seeded_share(seed, f"suspect:{b.name}", share):
                scores[b.name] = Score(view.sla**weight, partial(_explored, view))
                continue
            value = view.fidelity ** (1.0 - weight) * view.sla**weight
            scores[b.name] = Score(value, partial(_describe, view))
        return scores


def _describe(view: QualityView) -> str:
    head = f"quality {view.state}: fidelity {view.fidelity:.2f}, SLA {view.sla:.2f}"
    if view.fidelity >= 1.0 and view.sla >= 1.0:
        return head
    return f"{head}; {view.reason}"


def _explored(view: QualityView) -> str:
    return f"explored for evidence, scored as fidelity 1: {view.reason}"


_UNTRACKED = Score(1.0, "quality not tracked")
