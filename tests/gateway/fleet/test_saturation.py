"""The saturation detector: when a backend counts as full, and why."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.fleet.saturation import SaturationConfig, saturation
from policies.snapshot import BackendView


def view(**fields: Any) -> BackendView:
    base: dict[str, Any] = {
        "name": "e",
        "kind": "openai-compatible",
        "models": frozenset({"m"}),
        "healthy": True,
        "in_flight": 0,
        "max_concurrency": 8,
        "prefill_tokens_per_s": 1_000.0,
    }
    return BackendView(**{**base, **fields})


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({}, None),
        ({"in_flight": 8}, "at max_concurrency (8 in flight)"),
        ({"engine_stale": True}, "engine load reading stale (counted as full)"),
        ({"engine_waiting": 0}, None),
        ({"engine_waiting": 2}, "engine reports 2 waiting"),
        ({"engine_kv_usage": 0.5}, None),
        ({"engine_kv_usage": 0.95}, "engine KV cache 95% in use"),
        ({"queued_prefill_tokens": 1_499}, None),
        ({"queued_prefill_tokens": 1_500}, "1,500 prefill tokens queued (~1,500 ms)"),
    ],
)
def test_saturation_names_what_is_full(fields: dict[str, Any], why: str | None) -> None:
    assert saturation(view(**fields), SaturationConfig()) == why


def test_a_stale_reading_may_be_trusted_as_empty_when_configured() -> None:
    assert saturation(view(engine_stale=True), SaturationConfig(stale_is_full=False)) is None
