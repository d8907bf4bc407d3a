"""Shortest prefill first: a request with little left to prefill on a backend that has
room goes before a long cold prompt, so more requests start within their targets (the
queue's counterpart of Dynamo's shortest-job-first)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from policies.base import PolicyParams, Role, Score
from policies.order.base import register_order
from policies.order.snapshot import QueueSnapshot, Waiting


@register_order
class ShortPrefillOrder:
    """`1 - uncached / horizon_tokens`, clamped: the uncached part of the prompt on the
    backend with room that holds most of it."""

    role: ClassVar[Role] = "order"
    type_name: ClassVar[str] = "short-prefill-order"

    class Params(PolicyParams):
        horizon_tokens: int = Field(16_384, ge=1)
        """An uncached prompt this long or longer scores 0."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, queue: QueueSnapshot, waiting: Sequence[Waiting]) -> Sequence[Score]:
        horizon = self.params.horizon_tokens
        out = []
        for w in waiting:
            uncached = max(0, w.prompt_tokens - w.cached_tokens)
            value = max(0.0, 1.0 - uncached / horizon)
            out.append(Score(value, f"{uncached:,} prompt tokens to prefill"))
        return out
