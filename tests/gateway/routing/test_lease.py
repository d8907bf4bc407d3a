"""A lease folds what the engine reported into the fleet: llama-server's cached tokens into
the prefix index, its own prefill and decode times into the speed estimates, and its
"not ready" into a health state that counts no failure."""

from __future__ import annotations

import random

import pytest

from gateway.config.backends import BackendConfig
from gateway.config.root import HealthConfig
from gateway.fleet.state import FleetState
from gateway.prefix.work import PromptWork
from gateway.routing.lease import Lease
from providers.errors import UpstreamNotReady, UpstreamStatusError
from providers.usage import usage_from_body
from tests import llama_server_replies as replies


class Prefixes:
    def __init__(self) -> None:
        self.remembered: list[str] = []
        self.corrected: list[tuple[str, int]] = []

    def remember(self, backend: str, work: PromptWork) -> None:
        self.remembered.append(backend)

    def correct(self, backend: str, work: PromptWork, reported_cached: int) -> None:
        self.corrected.append((backend, reported_cached))


def fleet(health: HealthConfig | None = None) -> FleetState:
    backend = BackendConfig.model_validate(
        {"name": "ll", "kind": "llama-cpp", "base_url": "http://10.0.0.7:8080/v1"}
        | {"models": ["m"], "cache": {"prefill_tokens_per_s": 10_000.0, "tpot_ms": 20.0}}
    )
    return FleetState([backend], health or HealthConfig(), clock=lambda: 0.0, rng=random.Random(0))


def lease(state: FleetState, prefixes: Prefixes, *, streaming: bool = False) -> Lease:
    return Lease(
        "ll", PromptWork(), state=state, prefixes=prefixes, streaming=streaming, clock=lambda: 0.0
    )


def test_a_whole_answer_teaches_the_engines_counts_and_times() -> None:
    state, prefixes = fleet(), Prefixes()
    held = lease(state, prefixes)
    held.committed()
    held.finish(usage_from_body(replies.CHAT_WARM))
    assert prefixes.corrected == [("ll", 40)]
    estimates = state.estimates("ll")
    # 16 tokens in 320.147 ms by the engine's clock: 15 intervals of 21.34 ms; 20 -> 20.27.
    assert estimates.tpot_ms == pytest.approx(20.0 + 0.2 * (320.147 / 15 - 20.0))
    # One uncached token says nothing of the prefill speed.
    assert (estimates.prefill_tokens_per_s, estimates.engine_prefill_samples) == (10_000.0, 0)


def test_a_streams_own_decode_time_wins_over_the_engines() -> None:
    state, prefixes = fleet(), Prefixes()
    held = lease(state, prefixes, streaming=True)
    held.committed()
    held.finish(usage_from_body(replies.STREAM_TAIL.split(b"data: ")[-2]), decode_s=1.5)
    assert prefixes.corrected == [("ll", 40)]
    assert state.estimates("ll").tpot_ms == pytest.approx(20.0 + 0.2 * (1500.0 / 15 - 20.0))


def test_a_loading_engine_is_not_ready_not_failing() -> None:
    state, prefixes = fleet(HealthConfig(consecutive_failures=1)), Prefixes()
    for _ in range(3):
        lease(state, prefixes).failed(
            UpstreamNotReady("loading the model", backend="ll", upstream_status=503)
        )
    (row,) = state.describe()
    assert (row["healthy"], row["health_reason"]) == (
        False,
        "not ready: loading the model (HTTP 503)",
    )
    assert (row["failures"], row["ejections"], row["in_flight"]) == (0, 0, 0)
    state.record_probe("ll", True, "probe ok (HTTP 200)")
    assert state.views(["ll"])["ll"].healthy


def test_any_other_503_still_counts_towards_ejection() -> None:
    state, prefixes = fleet(HealthConfig(consecutive_failures=1)), Prefixes()
    lease(state, prefixes).failed(
        UpstreamStatusError("busy", backend="ll", upstream_status=503, upstream_body=b"{}")
    )
    (row,) = state.describe()
    assert (row["failures"], row["ejections"]) == (1, 1)


def test_a_stream_teaches_what_the_ttft_prediction_missed() -> None:
    state = fleet()
    now = [0.0]
    held = Lease(
        "ll",
        PromptWork(),
        state=state,
        prefixes=None,
        streaming=True,
        clock=lambda: now[0],
        predicted_ttft_ms=100.0,
    )
    now[0] = 0.6  # the first byte, 500 ms later than predicted
    held.committed()
    estimates = state.estimates("ll")
    assert estimates.ttft_error_samples == 1
    assert estimates.ttft_error_ms == pytest.approx(0.2 * 500.0)
    assert state.views(["ll"])["ll"].ttft_error_ms == pytest.approx(100.0)
    # A whole answer's first byte is its last: no TTFT to learn from.
    whole = Lease("ll", PromptWork(), state=state, prefixes=None, streaming=False,
                  clock=lambda: now[0], predicted_ttft_ms=1.0)  # fmt: skip
    whole.committed()
    assert estimates.ttft_error_samples == 1
