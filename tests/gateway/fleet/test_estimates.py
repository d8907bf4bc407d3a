"""Speed estimates: the exact numbers each observation moves them to."""

from __future__ import annotations

import pytest

from gateway.config.backends import BackendConfig
from gateway.config.root import HealthConfig
from gateway.fleet.estimates import BackendEstimates
from gateway.fleet.state import FleetState

PRIOR_PREFILL = 10_000.0
PRIOR_TPOT_MS = 20.0


def estimates(network_ms: float = 0.0) -> BackendEstimates:
    return BackendEstimates(PRIOR_PREFILL, PRIOR_TPOT_MS, network_ms=network_ms)


@pytest.mark.parametrize(
    ("network_ms", "ttft_s", "uncached", "prefill", "network", "samples"),
    [
        # 2,000 tokens in 0.4 s = 5,000 tok/s; a fifth of the way from 10,000: 9,000.
        pytest.param(0.0, 0.4, 2_000, 9_000.0, 0.0, 1, id="prefill-step"),
        # 100 ms of it is the network: 2,000 tokens in 0.3 s = 6,666.7 tok/s.
        pytest.param(
            100.0, 0.4, 2_000, 10_000 + 0.2 * (2_000 / 0.3 - 10_000), 100.0, 1, id="less-network"
        ),
        # Faster than the network alone: prefill floors at 0.1 ms, 2,000 / 1e-4 = 2e7 tok/s.
        pytest.param(500.0, 0.4, 2_000, 10_000 + 0.2 * (2e7 - 10_000), 500.0, 1, id="floor"),
        # 256 uncached tokens is the least that says something about prefill speed.
        pytest.param(0.0, 0.128, 256, 10_000 + 0.2 * (2_000 - 10_000), 0.0, 1, id="least-prefill"),
        # Fewer: the time is network and overhead, 50 ms, a fifth of the way from 0: 10 ms.
        pytest.param(0.0, 0.05, 255, PRIOR_PREFILL, 10.0, 1, id="network-step"),
        pytest.param(30.0, 0.05, 10, PRIOR_PREFILL, 34.0, 1, id="network-from-30"),
        pytest.param(0.0, 0.0, 2_000, PRIOR_PREFILL, 0.0, 0, id="no-time-ignored"),
    ],
)
def test_a_ttft_observation_with_an_empty_queue(
    network_ms: float,
    ttft_s: float,
    uncached: int,
    prefill: float,
    network: float,
    samples: int,
) -> None:
    est = estimates(network_ms)
    est.observe_ttft(ttft_s, uncached, queue_was_empty=True)
    assert est.prefill_tokens_per_s == pytest.approx(prefill, rel=1e-12)
    assert est.network_ms == pytest.approx(network, rel=1e-12)
    assert est.ttft_samples == samples
    assert (est.tpot_ms, est.tpot_samples) == (PRIOR_TPOT_MS, 0)


@pytest.mark.parametrize(("ttft_s", "uncached"), [(0.4, 2_000), (0.05, 10)])
def test_a_queued_request_teaches_nothing(ttft_s: float, uncached: int) -> None:
    """Its TTFT includes waiting behind others: neither prefill speed nor network."""
    est = estimates(network_ms=30.0)
    est.observe_ttft(ttft_s, uncached, queue_was_empty=False)
    assert (est.prefill_tokens_per_s, est.network_ms, est.ttft_samples) == (PRIOR_PREFILL, 30.0, 0)


def test_prefill_observations_move_a_fifth_of_the_way_each() -> None:
    est = estimates()
    for expected in (9_000.0, 8_200.0, 7_560.0):
        est.observe_ttft(0.4, 2_000, queue_was_empty=True)  # 5,000 tok/s each time
        assert est.prefill_tokens_per_s == pytest.approx(expected, rel=1e-12)
    assert est.ttft_samples == 3


@pytest.mark.parametrize(
    ("decode_s", "completion_tokens", "tpot_ms", "samples"),
    [
        # 101 tokens are 100 intervals after the first: 3 s / 100 = 30 ms; 20 -> 22.
        pytest.param(3.0, 101, 22.0, 1, id="step"),
        pytest.param(0.5, 2, 20.0 + 0.2 * (500.0 - 20.0), 1, id="two-tokens-one-interval"),
        pytest.param(1.0, 1, PRIOR_TPOT_MS, 0, id="one-token-no-interval"),
        pytest.param(0.0, 101, PRIOR_TPOT_MS, 0, id="no-time"),
    ],
)
def test_tpot_from_decode_time_and_tokens(
    decode_s: float, completion_tokens: int, tpot_ms: float, samples: int
) -> None:
    est = estimates()
    est.observe_tpot(decode_s, completion_tokens)
    assert est.tpot_ms == pytest.approx(tpot_ms, rel=1e-12)
    assert est.tpot_samples == samples
    assert (est.prefill_tokens_per_s, est.network_ms, est.ttft_samples) == (PRIOR_PREFILL, 0.0, 0)


def test_the_views_carry_the_estimates_numbers() -> None:
    backend = BackendConfig.model_validate(
        {"name": "a", "kind": "vllm", "base_url": "http://10.0.0.11:8000/v1", "models": ["m"]}
        | {"cache": {"prefill_tokens_per_s": PRIOR_PREFILL, "tpot_ms": PRIOR_TPOT_MS}}
    )
    state = FleetState([backend], HealthConfig(), clock=lambda: 0.0)
    state.estimates("a").observe_ttft(0.4, 2_000, queue_was_empty=True)
    state.estimates("a").observe_ttft(0.05, 10, queue_was_empty=True)
    state.estimates("a").observe_tpot(3.0, 101)
    view = state.views(["a"])["a"]
    assert (view.prefill_tokens_per_s, view.network_ms) == (pytest.approx(9_000.0), 10.0)
    assert view.tpot_ms == pytest.approx(22.0)
    row = state.describe()[0]
    assert (row["prefill_tokens_per_s"], row["tpot_ms"]) == (9_000.0, 22.0)


@pytest.mark.parametrize(
    ("prefill_s", "uncached", "prefill", "samples"),
    [
        # llama-server's timings.prompt_ms: 2,000 tokens in 0.25 s = 8,000 tok/s; 10,000 -> 9,600.
        pytest.param(0.25, 2_000, 9_600.0, 1, id="step"),
        # A mostly cached prompt (CHAT_WARM: 1 token in 21 ms) says nothing of the speed.
        pytest.param(0.021, 1, PRIOR_PREFILL, 0, id="too-few-tokens"),
        pytest.param(0.0, 2_000, PRIOR_PREFILL, 0, id="no-time"),
    ],
)
def test_the_engines_own_prefill_time(
    prefill_s: float, uncached: int, prefill: float, samples: int
) -> None:
    est = estimates()
    est.observe_engine_prefill(prefill_s, uncached)
    assert est.prefill_tokens_per_s == pytest.approx(prefill, rel=1e-12)
    assert est.engine_prefill_samples == samples


def test_once_the_engine_reports_its_prefill_time_ttft_teaches_only_the_network() -> None:
    est = estimates()
    est.observe_engine_prefill(0.25, 2_000)  # 9,600
    est.observe_ttft(0.4, 2_000, queue_was_empty=True)  # would pull towards 5,000
    est.observe_ttft(0.05, 10, queue_was_empty=True)
    assert (est.prefill_tokens_per_s, est.network_ms) == (pytest.approx(9_600.0), 10.0)
    assert est.ttft_samples == 2
