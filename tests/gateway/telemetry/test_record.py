"""Derived values of a finished request: the deciding policy, TPOT, overhead and cost."""

from __future__ import annotations

import pytest

from gateway.telemetry.config import PricingConfig
from gateway.telemetry.record import deciding_policy
from policies.snapshot import BackendView
from providers.usage import Usage
from tests.gateway.telemetry.builders import decision, record
from tests.policies.builders import snapshot
from tests.policies.test_answer_table import CASES, PIPE, with_reports


@pytest.mark.parametrize(
    ("scores", "weights", "expected"),
    [
        # prefix sets a apart from b; load would favour b but weighs little
        ({"a": {"prefix": 0.9, "load": 0.2}, "b": {"prefix": 0.1, "load": 0.6}}, {}, "prefix"),
        # the same raw gaps, but load weighs 3x: load decides for a
        (
            {"a": {"prefix": 0.3, "load": 0.9}, "b": {"prefix": 0.5, "load": 0.2}},
            {"load": 3.0},
            "load",
        ),
        # a chosen although it scores lower everywhere: the picker decided (exploration)
        ({"a": {"load": 0.1}, "b": {"load": 0.9}}, {}, "max-score-picker"),
    ],
)
def test_deciding_policy_is_the_largest_weighted_gap(
    scores: dict[str, dict[str, float]], weights: dict[str, float], expected: str
) -> None:
    assert deciding_policy(decision("a", scores), weights).name == expected


def test_deciding_policy_names_the_filter_that_left_one_survivor() -> None:
    made = decision("a", {"a": {"load": 1.0}}, dropped={"b": "quality", "c": "quality"})
    decided = deciding_policy(made, {})
    assert decided.name == "quality"
    assert "only a passed" in decided.reason


def test_deciding_policy_for_a_single_backend_and_for_none() -> None:
    assert deciding_policy(decision("a", {"a": {"load": 1.0}}), {}).name == "only-candidate"
    assert deciding_policy(decision(None, {}), {}).name == "none"


@pytest.mark.parametrize("candidates", CASES)
@pytest.mark.parametrize("weights", [{}, {"wild": 2.0, "load-scorer": 0.1}])
def test_deciding_policy_from_answers_as_from_reports(
    candidates: list[BackendView], weights: dict[str, float]
) -> None:
    made = PIPE.decide(snapshot(candidates, session_key="user-1"), candidates, "d")
    assert deciding_policy(made, weights) == deciding_policy(with_reports(made), weights)


def test_tpot_overhead_and_retries() -> None:
    made = record(
        stream=True,
        e2e_s=2.0,
        ttft_s=0.30,
        decode_s=1.0,
        usage=Usage(100, 11, 40),
        attempts=(("b", "upstream_unavailable", 50.0), ("a", "ok", 200.0)),
    )
    assert made.tpot_s == pytest.approx(0.1)
    assert made.overhead_s == pytest.approx(0.05)  # 300 ms to first byte, 250 ms upstream
    assert made.retries == 1
    failed_twice = record(
        attempts=(("b", "upstream_unavailable", 5.0), ("a", "upstream_timeout", 9.0))
    )
    assert failed_twice.retries == 1  # the last failure is the request's own error
    assert record(backend=None, attempts=(("b", "x", 1.0),)).blamed_backend == "b"
    assert record(usage=Usage(10, 1, 0), decode_s=1.0).tpot_s is None


def test_cost_charges_cached_tokens_at_their_price() -> None:
    pricing = PricingConfig(
        input_usd_per_mtok=2.0, cached_input_usd_per_mtok=0.5, output_usd_per_mtok=8.0
    )
    made = record(
        usage=Usage(prompt_tokens=1_000_000, completion_tokens=500_000, cached_tokens=600_000)
    )
    # 400k uncached x $2 + 600k cached x $0.5 + 500k out x $8
    assert made.cost_usd(pricing) == pytest.approx(0.8 + 0.3 + 4.0)
    assert made.cost_usd(None) == 0.0
    no_cache_price = PricingConfig(input_usd_per_mtok=1.0)
    assert made.cost_usd(no_cache_price) == pytest.approx(1.0)
