"""Cache value: among requests of one band, those whose prompt is cached on a backend that
has room, and later turns of live sessions, go before cold starts (the fleet's
counterpart of an engine's longest-prefix-first scheduling)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from policies.base import PolicyParams, Role, Score
from policies.order.base import register_order
from policies.order.snapshot import QueueSnapshot, Waiting


@register_order
class CacheAffinityOrder:
    """The share of the prompt cached on a backend with room; a session's follow-up
    scores at least `follow_up`."""

    role: ClassVar[Role] = "order"
    type_name: ClassVar[str] = "cache-affinity-order"

    class Params(PolicyParams):
        follow_up: float = Field(0.5, ge=0, le=1)
        """The least a follow-up turn of a live session scores, cached or not."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, queue: QueueSnapshot, waiting: Sequence[Waiting]) -> Sequence[Score]:
        return [self._one(w) for w in waiting]

    def _one(self, w: Waiting) -> Score:
        share = w.cached_tokens / w.prompt_tokens if w.prompt_tokens > 0 else 0.0
        share = min(1.0, max(0.0, share))
        if w.cached_on is not None and w.cached_tokens > 0:
            why = (
                f"{w.cached_tokens:,} of {w.prompt_tokens:,} prompt tokens cached on {w.cached_on}"
            )
        else:
            why = "no cached prefix on a backend with room"
        if w.follow_up and share < self.params.follow_up:
            return Score(self.params.follow_up, f"follow-up turn of a live session; {why}")
        return Score(share, why)
