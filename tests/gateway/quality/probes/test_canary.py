from __future__ import annotations

import math

import pytest

from gateway.quality.probes.canary import CanaryAnswer, CanaryBaselines, drift, parse_canary


def answer(*tokens: tuple[str, float]) -> CanaryAnswer:
    return CanaryAnswer(tokens[0][0], dict(tokens))


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param(
            answer(("x", -0.1), ("y", -2.5)), answer(("x", -0.1), ("y", -2.5)), 0.0, id="same"
        ),
        pytest.param(
            answer(("x", -3.0), ("y", -3.5)),
            answer(("p", -3.0), ("q", -3.5)),
            1.0,
            id="disjoint-flat",
        ),
        pytest.param(
            CanaryAnswer("Paris", None), CanaryAnswer(" Paris", None), 0.0, id="token-only-same"
        ),
        pytest.param(
            CanaryAnswer("Paris", None), CanaryAnswer("Lyon", None), 1.0, id="token-only-differs"
        ),
    ],
)
def test_drift(a: CanaryAnswer, b: CanaryAnswer, expected: float) -> None:
    assert drift(a, b) == pytest.approx(expected)


def test_near_tie_swapping_places_drifts_little() -> None:
    a = answer(("x", math.log(0.51)), ("y", math.log(0.49)))
    b = answer(("y", math.log(0.51)), ("x", math.log(0.49)))
    assert drift(a, b) == pytest.approx(0.02)


def test_parse_canary_with_and_without_logprobs() -> None:
    body = {
        "choices": [
            {
                "message": {"content": "32"},
                "logprobs": {
                    "content": [
                        {
                            "token": "32",
                            "logprob": -0.1,
                            "top_logprobs": [{"token": "31", "logprob": -3.0}],
                        }
                    ]
                },
            }
        ]
    }
    parsed = parse_canary(body)
    assert parsed == CanaryAnswer("32", {"31": -3.0, "32": -0.1})
    assert parse_canary({"choices": [{"message": {"content": "32"}}]}) == CanaryAnswer("32", None)
    assert parse_canary({"choices": []}) is None


def test_majority_replaces_a_wrong_first_reference() -> None:
    baselines = CanaryBaselines(threshold=0.15)
    wrong, right = answer(("q", -0.1)), answer(("x", -0.1))
    assert baselines.judge("m", 0, "swapped", wrong) == 0.0  # first seen: the reference
    assert baselines.judge("m", 0, "a", right) == 1.0
    # a third backend agrees with "a": the majority's answer becomes the reference
    assert baselines.judge("m", 0, "b", right) == 0.0
    assert baselines.judge("m", 0, "swapped", wrong) == 1.0
