from __future__ import annotations

from collections import Counter

import pytest
from pydantic import ValidationError

from policies.decision import Ranked
from policies.pickers.weighted_random_picker import WeightedRandomPicker
from tests.policies.builders import backend, snapshot

TOTALS = {"best": 0.9, "mid": 0.5, "low": 0.4}


def firsts(temperature: float, draws: int = 1000) -> Counter[str]:
    policy = WeightedRandomPicker("wr", WeightedRandomPicker.Params(temperature=temperature))
    ranked = [Ranked(backend(n), t) for n, t in TOTALS.items()]
    return Counter(policy.pick(snapshot(rng_seed=s), ranked).order[0] for s in range(draws))


@pytest.mark.parametrize(
    ("temperature", "best_share"),
    [(0.01, (0.99, 1.0)), (0.1, (0.95, 1.0)), (1.0, (0.35, 0.5)), (100.0, (0.28, 0.38))],
)
def test_temperature_controls_spread(temperature: float, best_share: tuple[float, float]) -> None:
    counts = firsts(temperature)
    low, high = best_share
    assert low <= counts["best"] / 1000 <= high
    if temperature >= 100:
        assert all(counts[n] > 280 for n in TOTALS)


@pytest.mark.parametrize("temperature", [1e-9, 1e-300, 0.5, 1e6])
def test_order_is_a_permutation_and_reason_gives_probability(temperature: float) -> None:
    policy = WeightedRandomPicker("wr", WeightedRandomPicker.Params(temperature=temperature))
    ranked = [Ranked(backend(n), t) for n, t in TOTALS.items()]
    pick = policy.pick(snapshot(rng_seed=5), ranked)
    assert sorted(pick.order) == sorted(TOTALS)
    assert pick.reason.startswith("sampled with p=")
    if temperature < 1e-6:
        assert pick.order == ("best", "mid", "low")
        assert pick.reason.startswith("sampled with p=1.00 (score 0.90")


def test_same_seed_same_order() -> None:
    policy = WeightedRandomPicker("wr", WeightedRandomPicker.Params())
    ranked = [Ranked(backend(n), t) for n, t in TOTALS.items()]
    assert policy.pick(snapshot(rng_seed=9), ranked) == policy.pick(snapshot(rng_seed=9), ranked)


@pytest.mark.parametrize("temperature", [0, -1])
def test_temperature_must_be_positive(temperature: float) -> None:
    with pytest.raises(ValidationError):
        WeightedRandomPicker.Params(temperature=temperature)
