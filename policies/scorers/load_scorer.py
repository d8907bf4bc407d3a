"""Prefers the backends with less work queued, counted in requests and prefill tokens."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from pydantic import Field

from policies.answers import Scores
from policies.base import PolicyParams, Role, Score
from policies.register import register_policy
from policies.snapshot import BackendView, Snapshot


@register_policy
class LoadScorer:
    """Scores `1 / (1 + requests / in_flight_scale + queued_prefill_tokens / tokens_scale
    + kv_weight * engine KV usage)`.

    Requests in flight alone treat a 100-token chat and a 30,000-token document alike;
    the queued prefill tokens say how long a new request waits for its first token. Each
    scale is the load that, on its own, halves the score. Absolute rather than relative
    to the other candidates, so an idle fleet scores 1.0 everywhere.

    `requests` is the gateway's own in-flight count or, when the engine's scraped
    `/metrics` are fresh, its running + waiting requests if that is more: the engine also
    sees traffic that did not come through this gateway.
    """

    role: ClassVar[Role] = "scorer"
    type_name: ClassVar[str] = "load-scorer"

    class Params(PolicyParams):
        in_flight_scale: float = Field(8.0, gt=0)
        """Requests in flight that halve the score."""
        tokens_scale: float = Field(8192.0, gt=0)
        """Queued prefill tokens that halve the score."""
        kv_weight: float = Field(0.0, ge=0)
        """Load added by a full KV cache (engine-reported); 0 shows it without using it."""

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Mapping[str, Score]:
        p = self.params
        in_flight_scale, tokens_scale, kv_weight = p.in_flight_scale, p.tokens_scale, p.kv_weight
        loads = [
            effective_requests(b) / in_flight_scale
            + max(0, b.queued_prefill_tokens) / tokens_scale
            + kv_weight * (b.engine_kv_usage or 0.0)
            for b in candidates
        ]
        values = [1.0 / (1.0 + load) for load in loads]
        return Scores(candidates, values, _reason, candidates)


def effective_requests(b: BackendView) -> int:
    """Requests at the backend: ours in flight, or the engine's own count if higher."""
    own = max(0, b.in_flight)
    if b.engine_running is None and b.engine_waiting is None:
        return own
    return max(own, (b.engine_running or 0) + (b.engine_waiting or 0))


def _reason(b: BackendView) -> str:
    own = (
        f"{b.in_flight} in flight, {b.queued_prefill_tokens:,} prefill tokens queued, "
        f"{b.decoding} decoding"
    )
    engine = _engine_reason(b)
    return f"{own}; engine: {engine}" if engine else own


def _engine_reason(b: BackendView) -> str:
    parts = []
    if b.engine_running is not None:
        parts.append(f"{b.engine_running} running")
    if b.engine_waiting is not None:
        parts.append(f"{b.engine_waiting} waiting")
    if b.engine_kv_usage is not None:
        parts.append(f"KV {b.engine_kv_usage:.0%}")
    return ", ".join(parts)
