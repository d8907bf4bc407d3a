"""One backend's live record in FleetState: its config, load counters, engine readings,
provider budget and the view last built from them (FleetState owns and writes it), and
the row `describe()` shows of it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gateway.fleet.scrape.engine_readings import EngineReadings, Polled

if TYPE_CHECKING:
    from gateway.config.backends import BackendConfig
    from gateway.config.credentials import BackendCredentials
    from gateway.fleet.estimates import BackendEstimates
    from gateway.fleet.health import BackendHealth
    from gateway.fleet.provider_limits import ProviderBudget
    from policies.snapshot import BackendView

REFUSAL_LOG_INTERVAL_S = 60.0
"""A backend refusing the gateway's key is logged at most once in this long."""


@dataclass(slots=True)
class BackendState:
    config: BackendConfig
    estimates: BackendEstimates
    health: BackendHealth
    """The detector's record for this backend: read here, written by HealthDetector."""
    credentials: BackendCredentials
    """Its key's variable and whether it was set when the fleet was built."""
    models: frozenset[str] = frozenset()
    """`config.models`, frozen once: every decision's views share it."""
    tags: frozenset[str] = frozenset()
    """`config.tags`, frozen once, likewise."""
    in_flight: int = 0
    queued_prefill_tokens: int = 0
    decoding: int = 0
    remote: tuple[int, int, int] = (0, 0, 0)
    """Other gateway replicas' (in_flight, queued_prefill_tokens, decoding) here."""
    requests: int = 0
    budget_tokens: int = 0
    """Tokens sent here so far, each request's prompt plus its `max_tokens`: what a
    provider's token budget may be charged."""
    engine: EngineReadings = field(default_factory=EngineReadings)
    """What the engine last said of itself: /metrics, /slots, /props."""
    budget: ProviderBudget | None = None
    """What the provider's rate-limit headers last said of its remaining budgets."""
    view: BackendView | None = None
    """The view last built, kept while nothing it shows has changed: every FleetState
    mutation clears it (FleetState.views has the time-dependent cases)."""
    view_engine_fresh: tuple[bool, bool] = (False, False)
    """Whether `view` shows a metrics and a slots reading, which go stale with time alone."""
    view_budget_until: float = math.inf
    """When the provider budget `view` counts lapses, which changes its capacity."""
    refusal_logged_at: float = -math.inf
    """When a refusal of its key was last logged (`FleetState.credentials_refused`)."""

    def refusal_to_log(self, now: float) -> bool:
        """Whether a refusal of its key at `now` is logged: the first, then at most one
        per `REFUSAL_LOG_INTERVAL_S`, however many requests it refuses."""
        if now - self.refusal_logged_at < REFUSAL_LOG_INTERVAL_S:
            return False
        self.refusal_logged_at = now
        return True


def readings_for(config: BackendConfig) -> EngineReadings:
    """Room for the readings of the sources this backend is polled for."""
    llama = config.llama_cpp_status
    return EngineReadings(
        metrics=Polled(config.metrics.stale_after_s)
        if config.metrics is not None and config.metrics.enabled
        else None,
        slots=Polled(llama.stale_after_s) if llama is not None and llama.slots else None,
    )


def describe_backend(
    state: BackendState,
    now: float,
    *,
    capacity: int,
    budget: ProviderBudget | None,
    context_window_tokens: int | None,
) -> dict[str, object]:
    """One backend's row of `GET /v1/switchyard/backends`; `budget`: the provider's
    remaining budgets as last read, while that reading holds."""
    healthy, reason = state.health.status(now)
    return {
        "name": state.config.name,
        "kind": state.config.kind,
        "models": state.config.models,
        "tags": sorted(state.tags),
        "healthy": healthy,
        "health_reason": reason,
        "in_flight": state.in_flight,
        "queued_prefill_tokens": state.queued_prefill_tokens,
        "decoding": state.decoding,
        "remote_in_flight": state.remote[0],
        "remote_queued_prefill_tokens": state.remote[1],
        "remote_decoding": state.remote[2],
        "prefill_tokens_per_s": round(state.estimates.prefill_tokens_per_s, 1),
        "tpot_ms": round(state.estimates.tpot_ms, 3),
        "max_concurrency": state.config.max_concurrency,
        "effective_max_concurrency": capacity,
        "provider_remaining_requests": budget.remaining_requests if budget else None,
        "provider_remaining_tokens": budget.remaining_tokens if budget else None,
        "provider_limits_read_at": round(budget.read_at_unix, 3) if budget else None,
        "requests": state.requests,
        "failures": state.health.failures,
        "ejections": state.health.ejections,
        "engine": state.engine.describe_metrics(now),
        "engine_slots": state.engine.describe_slots(now),
        "context_window_tokens": context_window_tokens,
        "context_window_source": window_source(state),
        "credentials": state.credentials.describe(),
    }


def window_source(state: BackendState) -> str | None:
    if state.config.context_window_tokens is not None:
        return "config"
    return "engine" if state.engine.context_window_tokens is not None else None
