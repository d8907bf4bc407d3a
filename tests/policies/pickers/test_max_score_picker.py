from __future__ import annotations

from collections import Counter

import pytest

from policies.decision import Ranked
from policies.pickers.max_score_picker import MaxScorePicker
from tests.policies.builders import backend, snapshot

POLICY = MaxScorePicker("max", MaxScorePicker.Params())


def ranked(totals: dict[str, float]) -> list[Ranked]:
    return [Ranked(backend(name), total) for name, total in totals.items()]


@pytest.mark.parametrize(
    ("totals", "order", "reason"),
    [
        ({"a": 0.61, "b": 0.87, "c": 0.1}, ("b", "a", "c"), "highest score 0.87 (next 0.61)"),
        ({"a": 0.3}, ("a",), "only candidate, score 0.30"),
        ({"a": 0.0, "b": 1.0}, ("b", "a"), "highest score 1.00 (next 0.00)"),
        ({}, (), "no candidates"),
    ],
)
def test_orders_by_total(totals: dict[str, float], order: tuple[str, ...], reason: str) -> None:
    pick = POLICY.pick(snapshot(), ranked(totals))
    assert (pick.order, pick.reason) == (order, reason)


@pytest.mark.parametrize("seed", [0, 1, 2, 12345])
def test_ties_are_deterministic_per_seed(seed: int) -> None:
    totals = {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.1}
    first = POLICY.pick(snapshot(rng_seed=seed), ranked(totals))
    again = POLICY.pick(snapshot(rng_seed=seed), ranked(dict(reversed(totals.items()))))
    assert first == again
    assert first.order[-1] == "d"
    assert first.reason == "highest score 0.50 (tied with 2 other(s), tie broken by seed)"


def test_ties_are_shared_fairly_across_seeds() -> None:
    totals = {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.9}
    seconds = Counter(
        POLICY.pick(snapshot(rng_seed=s), ranked(totals)).order[1] for s in range(300)
    )
    assert seconds == {"a": 100, "b": 100, "c": 100}
