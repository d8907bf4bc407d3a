"""Drops unhealthy backends, keeping them all when none is healthy (panic mode)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from policies.answers import Verdicts
from policies.base import BackendView, PolicyParams, Role, Snapshot, Verdict


class HealthyFilter:
    """Like Envoy's panic threshold at 0%: an all-unhealthy pool is tried anyway,
    because a health signal that condemns every backend is more likely wrong than
    the whole fleet being down."""

    role: ClassVar[Role] = "filter"
    type_name: ClassVar[str] = "healthy-filter"

    class Params(PolicyParams):
        panic_mode: bool = True
        """Keep every candidate when all of them are unhealthy."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def filter(
        self, snapshot: Snapshot, candidates: Sequence[BackendView]
    ) -> Mapping[str, Verdict]:
        if self.params.panic_mode and candidates and not any(b.healthy for b in candidates):
            panic = Verdict(True, f"panic: all {len(candidates)} candidates unhealthy, keeping all")
            return {b.name: panic for b in candidates}
        return Verdicts(candidates, [b.healthy for b in candidates], _reason, candidates)


def _reason(backend: BackendView) -> str:
    return "healthy" if backend.healthy else backend.health_reason or "unhealthy"
