"""Caps how far above the mean load a backend may run, so a hot prefix cannot pile up."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import ClassVar, Literal

from pydantic import Field

from policies.base import BackendView, PolicyParams, Role, Snapshot, Verdict
from policies.predict import uncached_tokens


@dataclass(frozen=True, slots=True)
class _Bound:
    """The limit every candidate is held to for this request."""

    limit: int
    unit: str
    shown: str
    """`bound 6 (mean 4.0, ε 0.25)`, formatted once per request."""

    def describe(self, current: int, added: int, sign: str) -> str:
        return f"{current:,} + {added:,} {self.unit} {sign} {self.shown}"

    def describe_kept(self, current: int, added: int) -> str:
        return f"least loaded, kept: {self.describe(current, added, '>')}"


def _below_min(in_flight: int, minimum: int) -> str:
    return f"{in_flight} in flight < min {minimum}, not bounded"


class BoundedLoadFilter:
    """Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam, 2018):
    drops a backend when `load + added > ceil((1 + epsilon) * (total + added) / n)` over the n
    candidates, i.e. when taking this request would put it more than ε above the mean.

    Affinity scorers keep choosing the backend that holds a hot prefix; this filter lets
    them until it is ε above the mean, then the prefix spills to the next best backend.
    With `by: requests` the load is `in_flight` and this request adds 1; with `by: tokens`
    it is `queued_prefill_tokens`, the backend adds its own uncached tokens and the bound
    the whole prompt. Backends under `min_in_flight` are never dropped, so an idle fleet
    keeps full affinity, and the least loaded candidates always survive.
    """

    role: ClassVar[Role] = "filter"
    type_name: ClassVar[str] = "bounded-load-filter"

    class Params(PolicyParams):
        epsilon: float = Field(0.25, ge=0)
        """How far above the mean load a backend may go, as a fraction of the mean."""
        min_in_flight: int = Field(2, ge=0)
        """Backends with fewer requests in flight than this are never dropped."""
        by: Literal["requests", "tokens"] = "requests"
        """Load measure: requests in flight, or queued prefill tokens."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def filter(
        self, snapshot: Snapshot, candidates: Sequence[BackendView]
    ) -> Mapping[str, Verdict]:
        if not candidates:
            return {}
        loads = {b.name: self._load(snapshot, b) for b in candidates}
        bound = self._bound(snapshot, [current for current, _ in loads.values()])
        least = min(current + added for current, added in loads.values())
        verdicts = {}
        for b in candidates:
            current, added = loads[b.name]
            if b.in_flight < self.params.min_in_flight:
                verdicts[b.name] = Verdict(
                    True, partial(_below_min, b.in_flight, self.params.min_in_flight)
                )
            elif current + added <= bound.limit:
                verdicts[b.name] = Verdict(True, partial(bound.describe, current, added, "≤"))
            elif current + added == least:
                verdicts[b.name] = Verdict(True, partial(bound.describe_kept, current, added))
            else:
                verdicts[b.name] = Verdict(False, partial(bound.describe, current, added, ">"))
        return verdicts

    def _load(self, snapshot: Snapshot, b: BackendView) -> tuple[int, int]:
        """(load now, load this request would add) in the configured unit."""
        if self.params.by == "requests":
            return max(0, b.in_flight), 1
        return max(0, b.queued_prefill_tokens), uncached_tokens(snapshot, b)

    def _bound(self, snapshot: Snapshot, current: Sequence[int]) -> _Bound:
        by_requests = self.params.by == "requests"
        added = 1 if by_requests else max(0, snapshot.request.prompt_tokens)
        n, total, eps = len(current), sum(current), self.params.epsilon
        # Rounded first so that float noise (1.1 * 10 = 11.000000000000002) cannot add one.
        limit = math.ceil(round((1.0 + eps) * (total + added) / n, 9))
        mean = f"{total / n:.1f}" if by_requests else f"{total / n:,.0f}"
        shown = f"bound {limit:,} (mean {mean}, ε {eps:g})"
        return _Bound(limit, "in flight" if by_requests else "prefill tokens", shown)
