"""Weighted fairness between tenants: the tenant that has had the least service lately
(tokens, decayed, divided by its weight) goes first, as llm-d's least-attained-service."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from policies.base import PolicyParams, Role, Score
from policies.order.base import register_order
from policies.order.snapshot import QueueSnapshot, Waiting


@register_order
class FairShareOrder:
    """`1 - service / most`, over the tenants waiting: the least served scores 1, the
    most served 0; equal service scores 1 for all (fairness has nothing to say)."""

    role: ClassVar[Role] = "order"
    type_name: ClassVar[str] = "fair-share-order"

    class Params(PolicyParams):
        pass

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, queue: QueueSnapshot, waiting: Sequence[Waiting]) -> Sequence[Score]:
        service = queue.tenant_service
        served = {w.tenant: service.get(w.tenant, 0.0) for w in waiting}
        least = min(served.values(), default=0.0)
        spread = max(served.values(), default=0.0) - least
        scores: dict[str, Score] = {}
        for tenant, value in served.items():
            share = 1.0 if spread <= 0 else 1.0 - (value - least) / spread
            scores[tenant] = Score(share, f"tenant {tenant}: {value:,.0f} weighted tokens lately")
        return [scores[w.tenant] for w in waiting]
