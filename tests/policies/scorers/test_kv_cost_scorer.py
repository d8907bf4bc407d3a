from __future__ import annotations

import math
from typing import Any

import pytest

from policies.scorers.kv_cost_scorer import KvCostScorer
from tests.policies.builders import backend, snapshot

PROMPT = 13_100
HOT_CACHED = 12_800
# Idle, default estimates (10,000 prefill tokens/s, 20 ms TPOT), 256 expected output tokens:
# hot: 30 ms TTFT + 0.5 * 20 * 256 = 2,590 ms; cold: 1,310 ms TTFT + 2,560 = 3,870 ms.
HOT_IDLE_COST = 30.0 + 2_560.0
COLD_IDLE_COST = 1_310.0 + 2_560.0


def scores_for(
    hot: dict[str, Any], *, params: dict[str, Any] | None = None, **request: Any
) -> dict[str, float]:
    policy = KvCostScorer("kv", KvCostScorer.Params.model_validate(params or {}))
    candidates = [backend("hot", **hot), backend("cold")]
    snap = snapshot(candidates, prompt_tokens=PROMPT, cached_tokens={"hot": HOT_CACHED}, **request)
    return {n: s.value for n, s in policy.score(snap, candidates).items()}


@pytest.mark.parametrize(
    ("hot", "params", "request_fields", "expected"),
    [
        pytest.param(
            {}, {}, {}, {"hot": 1.0, "cold": HOT_IDLE_COST / COLD_IDLE_COST}, id="idle-hit-wins"
        ),
        pytest.param(
            {}, {}, {"max_tokens": 16}, {"hot": 1.0, "cold": 190 / 1_470}, id="short-output"
        ),
        pytest.param(
            {},
            {},
            {"max_tokens": 100_000},
            {"hot": 1.0, "cold": HOT_IDLE_COST / COLD_IDLE_COST},
            id="output-capped",
        ),
        pytest.param(
            {}, {"decode_weight": 0}, {}, {"hot": 1.0, "cold": 30 / 1_310}, id="ttft-only"
        ),
        # 26,000 queued on the hot one: (26,300 / 10,000 s) + 13 chunked steps * 20 ms
        # = 2,890 ms TTFT, plus 0.5 * 20.6 ms * 256 of decode = 5,526.8 ms.
        pytest.param(
            {"queued_prefill_tokens": 26_000, "decoding": 3, "in_flight": 3},
            {},
            {},
            {"hot": COLD_IDLE_COST / 5_526.8, "cold": 1.0},
            id="queue-outweighs-cache",
        ),
    ],
)
def test_cost_ratio(
    hot: dict[str, Any],
    params: dict[str, Any],
    request_fields: dict[str, Any],
    expected: dict[str, float],
) -> None:
    assert scores_for(hot, params=params, **request_fields) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("hot", "reason"),
    [
        (
            {"in_flight": 3, "network_ms": 60.0},
            "12,800 of 13,100 prompt tokens cached; 3 in flight; "
            "predicted TTFT 90 ms, TPOT 20.0 ms",
        ),
        (
            {"in_flight": 9, "queued_prefill_tokens": 12_000, "decoding": 9},
            "12,800 of 13,100 prompt tokens cached; 9 in flight; "
            "predicted TTFT 1,370 ms, TPOT 21.8 ms",
        ),
    ],
)
def test_reasons_in_real_units(hot: dict[str, Any], reason: str) -> None:
    policy = KvCostScorer("kv", KvCostScorer.Params())
    candidates = [backend("hot", **hot), backend("cold")]
    snap = snapshot(candidates, prompt_tokens=PROMPT, cached_tokens={"hot": HOT_CACHED})
    scores = policy.score(snap, candidates)
    assert scores["hot"].reason == reason
    assert scores["cold"].reason == (
        "no cached prefix (13,100 prompt tokens); 0 in flight; "
        "predicted TTFT 1,310 ms, TPOT 20.0 ms"
    )


@pytest.mark.parametrize("queued", [0, 4_000, 12_000, 12_799, 12_800, 20_000, 100_000])
def test_idle_cold_replica_gets_a_fair_score(queued: int) -> None:
    """A new replica must warm up: against a hot one it never scores below the pure cost
    ratio of an idle hit, and wins once the hot queue outweighs the tokens its cache saves."""
    scores = scores_for({"queued_prefill_tokens": queued, "in_flight": queued // 4_000})
    assert scores["cold"] >= HOT_IDLE_COST / COLD_IDLE_COST > 0.6
    assert (scores["cold"] == 1.0) is (queued >= HOT_CACHED)  # queue vs. tokens saved


def test_zero_costs_are_floored_not_divided_by() -> None:
    policy = KvCostScorer("kv", KvCostScorer.Params(decode_weight=0))
    candidates = [backend("a"), backend("b")]
    scores = policy.score(snapshot(candidates), candidates)
    assert {n: s.value for n, s in scores.items()} == {"a": 1.0, "b": 1.0}


def test_no_candidates() -> None:
    policy = KvCostScorer("kv", KvCostScorer.Params())
    assert policy.score(snapshot(), []) == {}


@pytest.mark.parametrize(
    ("work_weight", "expected"),
    [
        # 13,000 queued on the hot one: 1,330 ms TTFT + 2,560 = 3,890 ms against the cold
        # one's 3,870: for itself, the request would rather recompute the prompt...
        (0.0, {"hot": 3_870 / 3_890, "cold": 1.0}),
        # ...but recomputing it adds 1,310 ms of prefill there, against 30 ms here.
        (1.0, {"hot": 1.0, "cold": (3_890 + 30) / (3_870 + 1_310)}),
    ],
)
def test_work_weight_counts_the_prefill_a_request_adds(
    work_weight: float, expected: dict[str, float]
) -> None:
    hot = {"queued_prefill_tokens": 13_000, "in_flight": 3}
    scores = scores_for(hot, params={"work_weight": work_weight})
    assert scores == pytest.approx(expected)


def test_a_nan_cost_scores_nothing_rather_than_best() -> None:
    """An infinite TPOT with no output tokens gives a NaN cost: no score, never the best."""
    candidates = [backend("ok"), backend("weird", tpot_ms=math.inf)]
    scores = KvCostScorer("kv", KvCostScorer.Params()).score(
        snapshot(candidates, max_tokens=0), candidates
    )
    assert scores["ok"].value == 1.0
    assert math.isnan(scores["weird"].value)


@pytest.mark.parametrize(
    ("delay_weight", "expected"),
    [
        # Both idle apart from 6 requests on the hot one (in flight, nothing queued): for
        # itself the hit is cheaper, 2,590 against 3,870 ms.
        (0.0, {"hot": 1.0, "cold": HOT_IDLE_COST / COLD_IDLE_COST}),
        # Its 300 uncached tokens hold up the hot one's 6 requests by 30 ms each; the cold
        # one has nobody to hold up. The hit still wins, by less.
        (1.0, {"hot": 1.0, "cold": (HOT_IDLE_COST + 6 * 30) / COLD_IDLE_COST}),
    ],
)
def test_delay_weight_charges_the_prefill_to_each_request_it_holds_up(
    delay_weight: float, expected: dict[str, float]
) -> None:
    scores = scores_for({"in_flight": 6}, params={"delay_weight": delay_weight})
    assert scores == pytest.approx(expected)


def test_delay_weight_keeps_a_cold_prompt_off_the_busy_backend() -> None:
    """Nothing cached anywhere: the busy backend's 20 requests would each wait 1,310 ms for
    the prompt there, so the idle one wins even though its own TTFT is the same."""
    policy = KvCostScorer("kv", KvCostScorer.Params(delay_weight=1.0))
    candidates = [backend("busy", in_flight=20), backend("idle")]
    snap = snapshot(candidates, prompt_tokens=PROMPT)
    scores = policy.score(snap, candidates)
    assert scores["idle"].value == 1.0
    assert scores["busy"].value == pytest.approx(COLD_IDLE_COST / (COLD_IDLE_COST + 20 * 1_310))
    assert scores["busy"].reason.endswith("its prefill holds up 20 others by 1,310 ms")
    assert "holds up" not in scores["idle"].reason
