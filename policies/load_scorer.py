"""Prefers the backends with less work queued, counted in requests and prefill tokens."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from pydantic import Field

from policies.base import BackendView, PolicyParams, Role, Score, Snapshot


class LoadScorer:
    """Scores `1 / (1 + in_flight / in_flight_scale + queued_prefill_tokens / tokens_scale)`.

    Requests in flight alone treat a 100-token chat and a 30,000-token document alike;
    the queued prefill tokens say how long a new request waits for its first token. Each
    scale is the load that, on its own, halves the score. Absolute rather than relative
    to the other candidates, so an idle fleet scores 1.0 everywhere.
    """

    role: ClassVar[Role] = "scorer"
    type_name: ClassVar[str] = "load-scorer"

    class Params(PolicyParams):
        in_flight_scale: float = Field(8.0, gt=0)
        """Requests in flight that halve the score."""
        tokens_scale: float = Field(8192.0, gt=0)
        """Queued prefill tokens that halve the score."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        return {b.name: Score(self._value(b), _reason(b)) for b in candidates}

    def _value(self, b: BackendView) -> float:
        load = (
            max(0, b.in_flight) / self.params.in_flight_scale
            + max(0, b.queued_prefill_tokens) / self.params.tokens_scale
        )
        return 1.0 / (1.0 + load)


def _reason(b: BackendView) -> str:
    return (
        f"{b.in_flight} in flight, {b.queued_prefill_tokens:,} prefill tokens queued, "
        f"{b.decoding} decoding"
    )
