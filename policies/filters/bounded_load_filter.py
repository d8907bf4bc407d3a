"""Caps how far above the mean load a backend may run, so a hot prefix cannot pile up."""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import ClassVar, Literal

from pydantic import Field

from policies.answers import Verdicts
from policies.base import PolicyParams, Role, Verdict
from policies.predict import uncached_tokens_each
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot


@dataclass(frozen=True, slots=True)
class _Bound:
    """The limit every candidate is held to for this request; the rest is only for reasons."""

    limit: int
    by_requests: bool
    total: int
    n: int
    epsilon: float

    def describe(self, current: int, added: int, sign: str) -> str:
        unit = "in flight" if self.by_requests else "prefill tokens"
        return f"{current:,} + {added:,} {unit} {sign} {self.shown()}"

    def describe_kept(self, current: int, added: int) -> str:
        return f"least loaded, kept: {self.describe(current, added, '>')}"

    def shown(self) -> str:
        """`bound 6 (mean 4.0, ε 0.25)`."""
        mean = self.total / self.n
        mean_text = f"{mean:.1f}" if self.by_requests else f"{mean:,.0f}"
        return f"bound {self.limit:,} (mean {mean_text}, ε {self.epsilon:g})"


_Case = Literal["idle", "within", "least", "over"]
"""Under `min_in_flight`; within the bound; over it but kept as the least loaded; over it."""


def _reason(bound: _Bound, minimum: int, case: _Case, b: BackendView, now: int, more: int) -> str:
    if case == "idle":
        return f"{b.in_flight} in flight < min {minimum}, not bounded"
    if case == "least":
        return bound.describe_kept(now, more)
    return bound.describe(now, more, "≤" if case == "within" else ">")


@register_policy
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
        current, added = self._loads(snapshot, candidates)
        bound = self._bound(snapshot, current)
        limit, minimum = bound.limit, self.params.min_in_flight
        least = min(map(operator.add, current, added))
        cases: list[_Case] = []
        for b, now, more in zip(candidates, current, added, strict=True):
            if b.in_flight < minimum:
                cases.append("idle")
            elif now + more <= limit:
                cases.append("within")
            elif now + more == least:
                cases.append("least")
            else:
                cases.append("over")
        keep = [case != "over" for case in cases]
        why = partial(_reason, bound, minimum)
        return Verdicts(candidates, keep, why, cases, candidates, current, added)

    def _loads(
        self, snapshot: Snapshot, candidates: Sequence[BackendView]
    ) -> tuple[list[int], list[int]]:
        """Per candidate, (load now, load this request would add) in the configured unit."""
        if self.params.by == "requests":
            return [max(0, b.in_flight) for b in candidates], [1] * len(candidates)
        current = [max(0, b.queued_prefill_tokens) for b in candidates]
        return current, uncached_tokens_each(snapshot, candidates)

    def _bound(self, snapshot: Snapshot, current: Sequence[int]) -> _Bound:
        by_requests = self.params.by == "requests"
        added = 1 if by_requests else max(0, snapshot.request.prompt_tokens)
        n, total, eps = len(current), sum(current), self.params.epsilon
        # Rounded first so that float noise (1.1 * 10 = 11.000000000000002) cannot add one.
        limit = math.ceil(round((1.0 + eps) * (total + added) / n, 9))
        return _Bound(limit, by_requests, total, n, eps)
