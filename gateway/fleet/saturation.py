"""Saturation: whether a backend can take one more request without queueing it inside the
engine, from what the gateway and the engine itself report.

Detection only (as health is): the admission queue (`gateway.admission`) acts on it. A
backend is saturated when it runs `max_concurrency` requests, when the engine reports
requests waiting for admission or its KV cache nearly full, when the prefill the gateway
has sent it and not yet seen answered would take longer than `max_queued_prefill_ms` at
its estimated speed, or when its load is polled and the last reading is stale (as
llm-d's detector does: a replica that cannot be seen is not assumed to be idle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from gateway.config.strict import StrictConfig
from policies.predict import prefill_ms

if TYPE_CHECKING:
    from policies.snapshot import BackendView


class SaturationConfig(StrictConfig):
    """When a backend counts as full (`flow_control.saturation`)."""

    max_engine_waiting: int = Field(
        1,
        ge=1,
        description="Requests the engine reports waiting for admission at which it is full.",
    )
    max_kv_usage: float = Field(
        0.9, gt=0, le=1, description="Share of its KV cache in use at which it is full."
    )
    max_queued_prefill_ms: float = Field(
        1500.0,
        gt=0,
        description="Prefill sent to it and not yet answered, in milliseconds at its speed, "
        "at which it is full.",
    )
    stale_is_full: bool = Field(
        True, description="A backend whose polled load reading is stale counts as full."
    )


def saturation(view: BackendView, config: SaturationConfig, share: float = 1.0) -> str | None:
    """Why `view` is full now, or None when it has room for one more request; `share`
    scales the KV and prefill limits down (a class that keeps room for higher ones)."""
    if view.in_flight >= view.max_concurrency:
        return f"at max_concurrency ({view.in_flight} in flight)"
    if view.engine_stale and config.stale_is_full:
        return "engine load reading stale (counted as full)"
    waiting = view.engine_waiting
    if waiting is not None and waiting >= config.max_engine_waiting:
        return f"engine reports {waiting} waiting"
    kv = view.engine_kv_usage
    if kv is not None and kv >= config.max_kv_usage * share:
        return f"engine KV cache {kv:.0%} in use"
    queued_ms = prefill_ms(view, view.queued_prefill_tokens)
    if queued_ms >= config.max_queued_prefill_ms * share:
        return f"{view.queued_prefill_tokens:,} prefill tokens queued (~{queued_ms:,.0f} ms)"
    return None
