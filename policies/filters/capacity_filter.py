"""Drops backends that already run as many requests as they accept."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from policies.base import PolicyParams, Role, Verdict
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot


@register_policy
class CapacityFilter:
    """Drops a backend when `in_flight >= max_concurrency`, or when its provider's token
    budget (rate-limit headers) has fewer tokens left than this request may use: its
    prompt plus `max_tokens`."""

    role: ClassVar[Role] = "filter"
    type_name: ClassVar[str] = "capacity-filter"

    class Params(PolicyParams):
        pass

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def filter(
        self, snapshot: Snapshot, candidates: Sequence[BackendView]
    ) -> Mapping[str, Verdict]:
        need = snapshot.request.prompt_tokens + (snapshot.request.max_tokens or 0)
        return {b.name: _verdict(b, need) for b in candidates}


def _verdict(b: BackendView, need_tokens: int) -> Verdict:
    if b.in_flight >= b.max_concurrency:
        return Verdict(False, f"at capacity: {b.in_flight} of {b.max_concurrency} in flight")
    left = b.provider_tokens_left
    if left is not None and need_tokens > left:
        return Verdict(
            False,
            f"provider token budget: {left:,} tokens left before its reset, "
            f"this request may use {need_tokens:,}",
        )
    return Verdict(True, f"{b.in_flight} of {b.max_concurrency} in flight")
