"""What a cascade says of one attempt, on its request's record: which tier it was, why
the request started there, which checks its answer failed and what became of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from gateway.cascade.verdict import Failure

CascadeOutcome = Literal["escalated", "passed", "failed", "committed", "judge", "abandoned"]
"""escalated: the answer failed its checks (or the tier failed) and the request went on;
passed: the client's answer passed its checks; failed: the client's answer, from the last
tier, failed them (and says so); committed: streamed to the client before its checks
could judge the whole (the whole is judged after, in `failures`); judge: the judge
route's call about this tier's answer; abandoned: the client left (or the gateway failed)
before this attempt's answer reached it."""


@dataclass(frozen=True, slots=True)
class CascadeNote:
    cascade: str
    request_id: str
    """The decision id of the request's first attempt: every attempt's record carries it."""
    tier: int
    """This attempt's tier, 0 the first (cheapest)."""
    tier_route: str
    attempt: int
    """1 for the request's first attempt, 2 for the next …"""
    outcome: CascadeOutcome
    failures: tuple[Failure, ...] = ()
    start_tier: int = 0
    start_reason: str = ""
    kind: str = ""
    mean_logprob: float | None = None
    """The answer's mean token log-probability, when the tier returned them."""
    top: tuple[str, str] | None = None
    """(backend, model) of the last tier's first member: what the counterfactual cost of
    sending everything to the top tier is priced at."""
    top_tier: bool = False
    """The attempt ran on the last tier."""

    @property
    def final(self) -> bool:
        """This attempt's answer went to the client."""
        return self.outcome not in ("escalated", "judge", "abandoned")

    def describe(self) -> dict[str, Any]:
        return {
            "cascade": self.cascade,
            "request_id": self.request_id,
            "tier": self.tier,
            "tier_route": self.tier_route,
            "attempt": self.attempt,
            "outcome": self.outcome,
            "failures": [f.describe() for f in self.failures],
            "start_tier": self.start_tier,
            "start_reason": self.start_reason,
            "kind": self.kind,
            "mean_logprob": None if self.mean_logprob is None else round(self.mean_logprob, 4),
        }
