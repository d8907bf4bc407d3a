from __future__ import annotations

from collections import Counter

import pytest

from policies.scorers.random_scorer import RandomScorer
from tests.policies.builders import fleet, snapshot

CANDIDATES = fleet("a", "b", "c", "d")


def scores_for(name: str, seed: int) -> dict[str, float]:
    policy = RandomScorer(name, RandomScorer.Params())
    return {n: s.value for n, s in policy.score(snapshot(rng_seed=seed), CANDIDATES).items()}


@pytest.mark.parametrize("seed", [0, 1, 42, 2**63 - 1, -5])
def test_same_seed_same_scores_and_in_range(seed: int) -> None:
    first = scores_for("rand", seed)
    assert first == scores_for("rand", seed)
    assert all(0.0 <= v < 1.0 for v in first.values())


@pytest.mark.parametrize("seed", [0, 7, 99])
def test_two_random_scorers_differ(seed: int) -> None:
    assert scores_for("rand-a", seed) != scores_for("rand-b", seed)


def test_score_does_not_depend_on_the_other_candidates() -> None:
    policy = RandomScorer("rand", RandomScorer.Params())
    alone = policy.score(snapshot(rng_seed=3), CANDIDATES[:1])["a"]
    assert alone == policy.score(snapshot(rng_seed=3), CANDIDATES)["a"]


def test_uniform_enough() -> None:
    wins: Counter[str] = Counter()
    values: list[float] = []
    for seed in range(4000):
        scores = scores_for("rand", seed)
        wins[max(scores, key=scores.__getitem__)] += 1
        values += scores.values()
    assert abs(sum(values) / len(values) - 0.5) < 0.02
    assert all(850 < count < 1150 for count in wins.values())
