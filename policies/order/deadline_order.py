"""Earliest deadline first: the less time a request has left to start within its TTFT
target, the sooner it goes; requests without a target come after those with one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from policies.base import PolicyParams, Role, Score
from policies.order.base import register_order
from policies.order.snapshot import QueueSnapshot, Waiting

_NO_TARGET = Score(0.0, "no TTFT target")


@register_order
class DeadlineOrder:
    """`1 - slack / horizon_s`, clamped to [0, 1]; 0 without a target."""

    role: ClassVar[Role] = "order"
    type_name: ClassVar[str] = "deadline-order"

    class Params(PolicyParams):
        horizon_s: float = Field(5.0, gt=0)
        """Slack beyond this scores 0: the deadline is too far to matter yet."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, queue: QueueSnapshot, waiting: Sequence[Waiting]) -> Sequence[Score]:
        return [self._one(w.slack_s) for w in waiting]

    def _one(self, slack_s: float | None) -> Score:
        if slack_s is None:
            return _NO_TARGET
        value = min(1.0, max(0.0, 1.0 - slack_s / self.params.horizon_s))
        return Score(value, f"must start within {max(0.0, slack_s):.2f} s")
