from __future__ import annotations

from collections import Counter

import pytest

from policies.scorers.round_robin_scorer import RoundRobinScorer
from tests.policies.builders import fleet, snapshot

POLICY = RoundRobinScorer("rr", RoundRobinScorer.Params())


@pytest.mark.parametrize(("n", "seqs"), [(1, 10), (2, 100), (4, 100), (5, 100), (3, 99)])
def test_each_backend_gets_an_equal_share(n: int, seqs: int) -> None:
    candidates = fleet(*(f"b{i}" for i in range(n)))
    firsts: Counter[str] = Counter()
    for seq in range(seqs):
        scores = POLICY.score(snapshot(candidates, seq=seq), candidates)
        firsts[max(scores, key=lambda name: scores[name].value)] += 1
    assert set(firsts.values()) == {seqs // n}


@pytest.mark.parametrize(
    ("seq", "expected_order"),
    [
        (0, ["a", "b", "c"]),
        (1, ["b", "c", "a"]),
        (2, ["c", "a", "b"]),
        (3, ["a", "b", "c"]),
        (1_000_001, ["c", "a", "b"]),
    ],
)
def test_rotation_order_is_the_fallback_order(seq: int, expected_order: list[str]) -> None:
    candidates = fleet("c", "a", "b")  # input order does not matter
    scores = POLICY.score(snapshot(candidates, seq=seq), candidates)
    assert sorted(scores, key=lambda name: -scores[name].value) == expected_order
    first = scores[expected_order[0]]
    assert (first.value, first.reason) == (1.0, "rotation slot 1 of 3")
    assert scores[expected_order[2]].reason == "rotation slot 3 of 3"
    assert all(0.0 < s.value <= 1.0 for s in scores.values())
