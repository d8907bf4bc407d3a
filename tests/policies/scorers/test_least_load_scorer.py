from __future__ import annotations

import pytest

from policies.scorers.least_load_scorer import LeastLoadScorer
from tests.policies.builders import backend, snapshot


@pytest.mark.parametrize(
    ("relative", "in_flight", "expected"),
    [
        (True, {"a": 0, "b": 3, "c": 7}, {"a": 1.0, "b": 0.25, "c": 0.125}),
        (True, {"a": 4, "b": 4}, {"a": 1.0, "b": 1.0}),
        (True, {"a": 9, "b": 4}, {"a": 0.5, "b": 1.0}),
        (False, {"a": 0, "b": 16, "c": 64}, {"a": 1.0, "b": 0.75, "c": 0.0}),
        (False, {"a": 80}, {"a": 0.0}),
    ],
)
def test_least_load(relative: bool, in_flight: dict[str, int], expected: dict[str, float]) -> None:
    policy = LeastLoadScorer("load", LeastLoadScorer.Params(relative=relative))
    candidates = [backend(n, in_flight=k, max_concurrency=64) for n, k in in_flight.items()]
    scores = policy.score(snapshot(candidates), candidates)
    assert {n: s.value for n, s in scores.items()} == pytest.approx(expected)
    assert scores["a"].reason == f"{in_flight['a']} in flight of 64"


def test_prefers_the_idle_backend() -> None:
    policy = LeastLoadScorer("load", LeastLoadScorer.Params())
    candidates = [backend("busy", in_flight=12), backend("idle"), backend("warm", in_flight=2)]
    scores = policy.score(snapshot(candidates), candidates)
    assert max(scores, key=lambda n: scores[n].value) == "idle"
