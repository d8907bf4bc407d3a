"""The built-in order policies and the queue order: bands, weights, ageing, arrival."""

from __future__ import annotations

from typing import Any

import pytest

from policies.order.age_order import AgeOrder
from policies.order.cache_affinity_order import CacheAffinityOrder
from policies.order.config import OrderPluginConfig
from policies.order.deadline_order import DeadlineOrder
from policies.order.fair_share_order import FairShareOrder
from policies.order.pipeline import QueueOrder, WeightedOrder, build_order
from policies.order.short_prefill_order import ShortPrefillOrder
from policies.order.snapshot import QueueSnapshot, Waiting
from policies.registry import PolicyConfigError


def waiting(key: int, **fields: Any) -> Waiting:
    defaults: dict[str, Any] = {
        "priority": "standard",
        "band": 1,
        "tenant": "t",
        "waited_s": 0.0,
        "prompt_tokens": 1_000,
    }
    return Waiting(key=key, **{**defaults, **fields})


def snapshot(*held: Waiting, service: dict[str, float] | None = None) -> QueueSnapshot:
    return QueueSnapshot("r", 100.0, held, service or {})


@pytest.mark.parametrize(("waited_s", "value"), [(0.0, 0.0), (5.0, 0.5), (10.0, 1.0), (30.0, 1.0)])
def test_age_order_grows_with_the_wait(waited_s: float, value: float) -> None:
    policy = AgeOrder("age", AgeOrder.Params(horizon_s=10))
    [score] = policy.score(snapshot(), [waiting(1, waited_s=waited_s)])
    assert score.value == pytest.approx(value)
    assert f"waited {waited_s:.2f} s" == score.reason


@pytest.mark.parametrize(
    ("slack_s", "value", "reason"),
    [
        (None, 0.0, "no TTFT target"),
        (5.0, 0.0, "must start within 5.00 s"),
        (2.5, 0.5, "must start within 2.50 s"),
        (0.0, 1.0, "must start within 0.00 s"),
        (-1.0, 1.0, "must start within 0.00 s"),
    ],
)
def test_deadline_order_favours_the_least_slack(
    slack_s: float | None, value: float, reason: str
) -> None:
    policy = DeadlineOrder("deadline", DeadlineOrder.Params(horizon_s=5))
    [score] = policy.score(snapshot(), [waiting(1, slack_s=slack_s)])
    assert (score.value, score.reason) == (pytest.approx(value), reason)


def test_fair_share_order_ranks_tenants_by_weighted_service() -> None:
    policy = FairShareOrder("fair", FairShareOrder.Params())
    held = [waiting(1, tenant="big"), waiting(2, tenant="small"), waiting(3, tenant="mid")]
    scores = policy.score(snapshot(*held, service={"big": 1_000, "mid": 500}), held)
    assert [s.value for s in scores] == [0.0, 1.0, 0.5]
    assert scores[0].reason == "tenant big: 1,000 weighted tokens lately"


def test_fair_share_order_says_nothing_between_equals() -> None:
    policy = FairShareOrder("fair", FairShareOrder.Params())
    held = [waiting(1, tenant="x"), waiting(2, tenant="y")]
    assert [s.value for s in policy.score(snapshot(*held), held)] == [1.0, 1.0]


@pytest.mark.parametrize(
    ("fields", "value", "reason"),
    [
        ({}, 0.0, "no cached prefix on a backend with room"),
        ({"cached_tokens": 900, "cached_on": "e1"}, 0.9, "900 of 1,000 prompt tokens cached on e1"),
        ({"follow_up": True}, 0.5, "follow-up turn of a live session; no cached prefix"),
        ({"follow_up": True, "cached_tokens": 800, "cached_on": "e1"}, 0.8, "800 of 1,000"),
    ],
)
def test_cache_affinity_order(fields: dict[str, Any], value: float, reason: str) -> None:
    policy = CacheAffinityOrder("cache", CacheAffinityOrder.Params(follow_up=0.5))
    [score] = policy.score(snapshot(), [waiting(1, **fields)])
    assert score.value == pytest.approx(value)
    assert reason in score.reason


def order(*plugins: tuple[Any, float], ageing_s: float | None = None) -> QueueOrder:
    return QueueOrder([WeightedOrder(p, w) for p, w in plugins], ageing_s=ageing_s)


def keys(ranked: list[Any]) -> list[int]:
    return [r.waiting.key for r in ranked]


def test_bands_are_strict_whatever_the_scores() -> None:
    age = AgeOrder("age", AgeOrder.Params())
    held = (waiting(1, band=2, waited_s=9), waiting(2, band=0), waiting(3, band=1, waited_s=5))
    assert keys(order((age, 100.0)).rank(snapshot(*held))) == [2, 3, 1]


def test_ageing_lifts_a_band_per_period_waited() -> None:
    age = AgeOrder("age", AgeOrder.Params())
    held = (waiting(1, band=0), waiting(2, band=2, waited_s=20.5))
    ranked = order((age, 1.0), ageing_s=10).rank(snapshot(*held))
    assert keys(ranked) == [2, 1]  # lifted to band 0, and waited longer
    assert ranked[0].band == 0
    assert "lifted from 2 by waiting" in ranked[0].reason()


def test_weights_combine_and_arrival_breaks_ties() -> None:
    cache = CacheAffinityOrder("cache", CacheAffinityOrder.Params())
    fair = FairShareOrder("fair", FairShareOrder.Params())
    held = (
        waiting(1, tenant="big", cached_tokens=1_000, cached_on="e"),
        waiting(2, tenant="small"),
        waiting(3, tenant="small"),
    )
    service = {"big": 10.0}
    assert keys(order((cache, 1.0), (fair, 2.0)).rank(snapshot(*held, service=service))) == [
        2,
        3,
        1,
    ]
    assert keys(order((cache, 3.0), (fair, 2.0)).rank(snapshot(*held, service=service))) == [
        1,
        2,
        3,
    ]


def test_a_score_out_of_range_is_clamped_by_the_framework() -> None:
    class Wild:
        role = "order"
        type_name = "wild-order"
        name = "wild"

        def score(self, queue: QueueSnapshot, held: Any) -> list[Any]:
            from policies.base import Score

            return [Score(float("nan") if w.key == 1 else 7.0, "wild") for w in held]

    ranked = order((Wild(), 1.0)).rank(snapshot(waiting(1), waiting(2)))
    assert [(r.waiting.key, r.total) for r in ranked] == [(2, 1.0), (1, 0.0)]


def test_build_order_names_each_problem_with_its_path() -> None:
    plugins = [
        OrderPluginConfig(type="age-order"),
        OrderPluginConfig(type="no-such-order"),
        OrderPluginConfig(type="deadline", params={"horizon_s": -1}),
        OrderPluginConfig(type="age"),
    ]
    with pytest.raises(PolicyConfigError) as failed:
        build_order(plugins, ageing_s=None, path="flow_control.order")
    problems = failed.value.problems
    assert problems[0].startswith("flow_control.order.1.type: unknown order policy 'no-such-order'")
    assert problems[1].startswith("flow_control.order.2.params.horizon_s:")
    assert problems[2] == "flow_control.order.3.name: 'age-order' appears twice"


def test_a_routing_policy_is_not_an_order_policy() -> None:
    plugins = [OrderPluginConfig(type="policies.scorers.load_scorer:LoadScorer")]
    with pytest.raises(PolicyConfigError, match="is not an order policy"):
        build_order(plugins, ageing_s=None, path="order")


def test_a_user_order_policy_loads_by_dotted_path() -> None:
    plugins = [OrderPluginConfig(type="policies.order.age_order:AgeOrder", name="mine")]
    built = build_order(plugins, ageing_s=None, path="order")
    assert [p.policy.name for p in built.plugins] == ["mine"]


@pytest.mark.parametrize(
    ("prompt", "cached", "value", "reason"),
    [
        (1_000, 1_000, 1.0, "0 prompt tokens to prefill"),
        (10_000, 2_000, 0.5, "8,000 prompt tokens to prefill"),
        (40_000, 0, 0.0, "40,000 prompt tokens to prefill"),
    ],
)
def test_short_prefill_order_favours_little_left_to_prefill(
    prompt: int, cached: int, value: float, reason: str
) -> None:
    policy = ShortPrefillOrder("short", ShortPrefillOrder.Params(horizon_tokens=16_000))
    held = [waiting(1, prompt_tokens=prompt, cached_tokens=cached)]
    [score] = policy.score(snapshot(*held), held)
    assert (score.value, score.reason) == (pytest.approx(value), reason)
