from __future__ import annotations

import pytest

from policies.healthy_filter import HealthyFilter
from tests.policies.builders import backend, snapshot


@pytest.mark.parametrize(
    ("health", "panic_mode", "kept", "reasons"),
    [
        pytest.param(
            {"a": True, "b": True}, True, {"a", "b"}, {"a": "healthy", "b": "healthy"}, id="all-up"
        ),
        pytest.param(
            {"a": True, "b": False},
            True,
            {"a"},
            {"a": "healthy", "b": "ejected: 3 consecutive failures"},
            id="one-down",
        ),
        pytest.param(
            {"a": False, "b": False, "c": False},
            True,
            {"a", "b", "c"},
            dict.fromkeys("abc", "panic: all 3 candidates unhealthy, keeping all"),
            id="panic",
        ),
        pytest.param(
            {"a": False, "b": False},
            False,
            set(),
            dict.fromkeys("ab", "ejected: 3 consecutive failures"),
            id="panic-off",
        ),
    ],
)
def test_healthy_filter(
    health: dict[str, bool], panic_mode: bool, kept: set[str], reasons: dict[str, str]
) -> None:
    policy = HealthyFilter("health", HealthyFilter.Params(panic_mode=panic_mode))
    candidates = [
        backend(n, healthy=up, health_reason="" if up else "ejected: 3 consecutive failures")
        for n, up in health.items()
    ]
    verdicts = policy.filter(snapshot(candidates), candidates)
    assert {n for n, v in verdicts.items() if v.keep} == kept
    assert {n: v.reason for n, v in verdicts.items()} == reasons


def test_unhealthy_without_reason_says_unhealthy() -> None:
    policy = HealthyFilter("health", HealthyFilter.Params())
    candidates = [backend("a"), backend("b", healthy=False)]
    assert policy.filter(snapshot(candidates), candidates)["b"].reason == "unhealthy"
