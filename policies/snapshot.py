"""What a policy reads: an immutable snapshot of the fleet and the request, per decision.

The gateway builds one `Snapshot` per routing decision; policies only read it (and share
numbers they derive from it through `Snapshot.derived`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from policies.prices import Prices

Endpoint = Literal["chat.completions", "completions", "embeddings"]


@dataclass(frozen=True, slots=True)
class BackendView:
    """One backend as the policies see it at decision time."""

    name: str
    kind: str
    models: frozenset[str]
    healthy: bool
    in_flight: int
    max_concurrency: int
    health_reason: str = ""
    queued_prefill_tokens: int = 0
    """Uncached prompt tokens dispatched here and not yet prefilled (first byte not seen)."""
    decoding: int = 0
    """Streams past their first token, i.e. sequences in the decode batch."""
    prefill_tokens_per_s: float = 10_000.0
    """Estimated uncached prefill speed (a configured prior, refined from traffic)."""
    tpot_ms: float = 20.0
    """Estimated time per output token under the current load."""
    network_ms: float = 0.0
    """Estimated fixed overhead of a request to this backend (connection, queueing)."""
    ttft_error_ms: float = 0.0
    """Recent mean of measured less predicted TTFT of streams sent here: what the latency
    model (`policies.predict`) misses on this backend. Flow control adds it to its
    predictions; the routing policies do not (their scores compare backends)."""
    engine_running: int | None = None
    """Requests the engine itself reports running (its scraped `/metrics`), every client's
    included; None when the backend is not scraped or the last reading is stale."""
    engine_waiting: int | None = None
    """Requests the engine itself reports queued, not yet admitted; None as above."""
    engine_kv_usage: float | None = None
    """Fraction (0..1) of the KV cache the engine reports in use; None as above."""
    engine_stale: bool = False
    """The engine's load is polled but no current reading says it: the last is older than
    its `stale_after_s`, or every poll failed. A saturation detector counts it as full."""
    context_window_tokens: int | None = None
    """Prompt plus output tokens one sequence may hold for the route's model here; None
    when unknown."""
    tags: frozenset[str] = frozenset()
    """Placement tags: what the backend is (`local`, `eu`, `no-retention`)."""
    provider_tokens_left: int | None = None
    """Tokens the provider's rate-limit headers last said it takes before their reset, less
    what was sent since (prompt plus `max_tokens` per request); None when not reported."""


class CacheWrite(NamedTuple):
    """Prompt tokens a request is predicted to write to a backend's prompt cache."""

    tokens: int
    ttl: Literal["5m", "1h"]
    """The retention asked: a write is billed at the price of its retention."""


QualityState = Literal["healthy", "suspect", "probation", "ejected", "unknown"]


@dataclass(frozen=True, slots=True)
class QualityView:
    """A backend's live quality for the request's model (gateway/quality/), as policies see it."""

    fidelity: float = 1.0
    """In [0, 1]: is this the right model, served correctly (errors, tool calls, loops,
    truncation, canary drift). The worst signal sets it."""
    sla: float = 1.0
    """In [0, 1]: does it meet the TTFT / TPOT it promised, lately."""
    state: QualityState = "unknown"
    """healthy; suspect (some evidence against it, not yet conclusive: evidence is being
    gathered); ejected (kept off traffic until `ejected_for_s` passes); probation (back
    from an ejection, not yet above the restore threshold); unknown (no evidence yet)."""
    reason: str = "no evidence yet"
    """The signal that hurt most, in words."""
    ejected_for_s: float = 0.0
    evidence_seen: float = 0.0
    """For a suspect: responses judged since the suspicion began."""
    evidence_needed: float = 0.0
    """For a suspect: responses its test needs to clear it if all further ones are good."""


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What the policies may know about the request being routed."""

    route: str
    model: str
    endpoint: Endpoint
    stream: bool
    session_key: str | None
    seq: int
    """Per-route request counter; lets rotation policies stay pure."""
    rng_seed: int
    """Per-request seed; randomised policies derive their randomness from it."""
    prompt_tokens: int = 0
    """Prompt tokens (tiktoken count, or an estimate), tools included."""
    max_tokens: int | None = None
    ttft_slo_ms: float | None = None
    tpot_slo_ms: float | None = None
    member_models: Mapping[str, str] = field(default_factory=dict)
    """The upstream model id asked of each backend whose id differs from `model` (a route
    over differently named models); empty when every backend takes `model`."""
    required_tags: frozenset[str] = frozenset()
    """Placement tags the serving backend must all carry (the route's, the request's)."""

    def model_at(self, backend: str) -> str:
        """The upstream model id this request asks of `backend`."""
        return self.member_models.get(backend, self.model) if self.member_models else self.model


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Immutable view of the fleet for one decision."""

    request: RequestInfo
    backends: Mapping[str, BackendView]
    now_s: float
    cached_tokens: Mapping[str, int] = field(default_factory=dict)
    """Predicted prompt tokens already in each backend's KV cache (from the prefix index)."""
    quality: Mapping[str, QualityView] = field(default_factory=dict)
    """Each backend's live quality for the request's model; absent: no quality tracking."""
    cache_writes: Mapping[str, CacheWrite] = field(default_factory=dict)
    """Per explicit-caching backend (Anthropic's): the prompt tokens this request is
    predicted to write to its cache, its uncached part up to its last breakpoint (the
    client's or the gateway's); absent: none written."""
    prices: Mapping[str, Prices] = field(default_factory=dict)
    """Each backend's prices for the model the request asks of it; absent: no price
    configured (a local engine, or prices not given)."""
    derived: dict[tuple[object, ...], dict[str, float]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """Numbers computed from this snapshot alone, shared by the policies of one decision:
    per key (e.g. `("ttft", chunk_tokens)`), a number per backend name (e.g. predicted TTFT,
    read by both sla-filter and kv-cost-scorer)."""
