"""A backend's view: the snapshot policies read, built from its `BackendState` at a
moment, and whether one built earlier is still what would be built now."""

from __future__ import annotations

from typing import TYPE_CHECKING

from policies.snapshot import BackendView

if TYPE_CHECKING:
    from gateway.fleet.backend_state import BackendState
    from gateway.fleet.provider_limits import ProviderBudget


def still_current(state: BackendState, view: BackendView, now: float) -> bool:
    """`view` (built at an earlier `now`, nothing recorded since) is what `build_view` would
    build now: the same estimates, the engine reading it shows still fresh, and the
    provider budget it counts not lapsed."""
    est = state.estimates
    if now >= state.view_budget_until:
        return False
    if (
        view.prefill_tokens_per_s != est.prefill_tokens_per_s
        or view.tpot_ms != est.tpot_ms
        or view.network_ms != est.network_ms
        or view.ttft_error_ms != est.ttft_error_ms
    ):
        return False
    fresh = state.view_engine_fresh
    return fresh == (False, False) or state.engine.freshness(now) == fresh


def build_view(state: BackendState, now: float) -> BackendView:
    healthy, reason = state.health.status(now)
    cfg = state.config
    in_flight, queued, decoding = state.remote
    running, waiting, kv_usage = state.engine.load(now)
    return BackendView(
        name=cfg.name,
        kind=cfg.kind,
        models=state.models,
        healthy=healthy,
        in_flight=state.in_flight + in_flight,
        max_concurrency=capacity(state, now),
        health_reason=reason,
        queued_prefill_tokens=state.queued_prefill_tokens + queued,
        decoding=state.decoding + decoding,
        prefill_tokens_per_s=state.estimates.prefill_tokens_per_s,
        tpot_ms=state.estimates.tpot_ms,
        network_ms=state.estimates.network_ms,
        ttft_error_ms=state.estimates.ttft_error_ms,
        engine_running=running,
        engine_waiting=waiting,
        engine_kv_usage=kv_usage,
        engine_stale=state.engine.stale(now),
        context_window_tokens=context_window(state),
        tags=state.tags,
        provider_tokens_left=_tokens_left(state, now),
    )


def _tokens_left(state: BackendState, now: float) -> int | None:
    budget = current_budget(state, now)
    return budget.tokens_left(state.budget_tokens) if budget is not None else None


def context_window(state: BackendState) -> int | None:
    """The configured window, else the one the engine reported (a route member's own
    window, applied by the router, wins over both)."""
    configured = state.config.context_window_tokens
    return configured if configured is not None else state.engine.context_window_tokens


def capacity(state: BackendState, now: float) -> int:
    """`max_concurrency`, or fewer when the provider's request budget is nearly spent:
    what is in flight plus the requests it still takes before its reset."""
    limit = state.config.max_concurrency
    budget = current_budget(state, now)
    headroom = budget.headroom(state.requests) if budget is not None else None
    if headroom is None:
        return limit
    return min(limit, state.in_flight + state.remote[0] + headroom)


def current_budget(state: BackendState, now: float) -> ProviderBudget | None:
    budget = state.budget
    return budget if budget is not None and budget.current(now) else None
