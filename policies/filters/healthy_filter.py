"""Drops unhealthy backends, keeping them all when none is healthy (panic mode), and
never more than a set share of the candidates (`max_ejected_share`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

from pydantic import Field

from policies.answers import Verdicts
from policies.base import PolicyParams, Role, Verdict
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot


@register_policy
class HealthyFilter:
    """Like Envoy's panic threshold at 0%: an all-unhealthy pool is tried anyway,
    because a health signal that condemns every backend is more likely wrong than
    the whole fleet being down. Like Envoy's `max_ejection_percent`, a share of the
    candidates may be dropped for being unhealthy, and at least one always may."""

    role: ClassVar[Role] = "filter"
    type_name: ClassVar[str] = "healthy-filter"

    class Params(PolicyParams):
        panic_mode: bool = True
        """Keep every candidate when all of them are unhealthy."""
        max_ejected_share: float = Field(1.0, gt=0, le=1)
        """At most this share of the candidates (rounded down, but at least one) is dropped
        for being unhealthy; the other unhealthy ones are kept, the first ones in candidate
        order. 1.0: every unhealthy candidate may be dropped."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def filter(
        self, snapshot: Snapshot, candidates: Sequence[BackendView]
    ) -> Mapping[str, Verdict]:
        if self.params.panic_mode and candidates and not any(b.healthy for b in candidates):
            panic = Verdict(True, f"panic: all {len(candidates)} candidates unhealthy, keeping all")
            return {b.name: panic for b in candidates}
        keep = [b.healthy for b in candidates]
        share = self.params.max_ejected_share
        if share < 1.0:
            allowed = _ejectable(share, len(candidates))
            if (unhealthy := keep.count(False)) > allowed:
                return self._capped(candidates, keep, unhealthy - allowed)
        return Verdicts(candidates, keep, _reason, candidates)

    def _capped(
        self, candidates: Sequence[BackendView], keep: list[bool], back_in: int
    ) -> Verdicts:
        """Keep the first `back_in` unhealthy candidates, saying why."""
        cap = (
            f"kept: at most {self.params.max_ejected_share * 100:.4g}% "
            f"of {len(candidates)} candidates may be ejected"
        )
        notes = [""] * len(candidates)
        for i, healthy in enumerate(keep):
            if back_in == 0:
                break
            if not healthy:
                keep[i], notes[i] = True, cap
                back_in -= 1
        return Verdicts(candidates, keep, _capped_reason, candidates, notes)


def _ejectable(share: float, candidates: int) -> int:
    """How many of `candidates` may be dropped as unhealthy: the share rounded down, but at
    least one, as Envoy's max_ejection_percent ("will eject at least one host regardless
    of the value")."""
    # The nudge keeps the share as written: 0.29 of 100 is 29, though 0.29 * 100 < 29.
    return max(1, math.floor(share * candidates + 1e-9))


def _reason(backend: BackendView) -> str:
    return "healthy" if backend.healthy else backend.health_reason or "unhealthy"


def _capped_reason(backend: BackendView, note: str) -> str:
    if not note:
        return _reason(backend)
    health = f"unhealthy ({backend.health_reason})" if backend.health_reason else "unhealthy"
    return f"{health}, {note}"
