"""First come, first served: the longer a request has waited, the sooner it goes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from policies.base import PolicyParams, Role, Score
from policies.order.base import register_order
from policies.order.snapshot import QueueSnapshot, Waiting


@register_order
class AgeOrder:
    """`min(1, waited / horizon_s)`: alone, first come first served."""

    role: ClassVar[Role] = "order"
    type_name: ClassVar[str] = "age-order"

    class Params(PolicyParams):
        horizon_s: float = Field(10.0, gt=0)
        """A request that has waited this long scores 1."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, queue: QueueSnapshot, waiting: Sequence[Waiting]) -> Sequence[Score]:
        horizon = self.params.horizon_s
        return [
            Score(min(1.0, w.waited_s / horizon), f"waited {w.waited_s:.2f} s") for w in waiting
        ]
