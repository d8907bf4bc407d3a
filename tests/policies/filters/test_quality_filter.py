from __future__ import annotations

import pytest

from policies.filters.quality_filter import QualityFilter
from policies.snapshot import QualityView
from tests.policies.builders import fleet, snapshot

OK = QualityView(fidelity=1.0, state="healthy", reason="no bad evidence")


def ejected(fidelity: float, reason: str = "looping output 9/10") -> QualityView:
    return QualityView(fidelity=fidelity, state="ejected", reason=reason, ejected_for_s=42.0)


def run(quality: dict[str, QualityView], names: str = "abcd", **params: float) -> dict[str, bool]:
    policy = QualityFilter("q", QualityFilter.Params(**{"explore_share": 0.0, **params}))
    verdicts = policy.filter(snapshot(fleet(*names), quality=quality), fleet(*names))
    return {name: verdict.keep for name, verdict in verdicts.items()}


@pytest.mark.parametrize(
    ("quality", "params", "kept"),
    [
        pytest.param({}, {}, "abcd", id="not-tracked"),
        pytest.param(dict.fromkeys("abcd", OK), {}, "abcd", id="all-healthy"),
        pytest.param({"a": ejected(0.3), "b": OK}, {}, "bcd", id="ejected-dropped"),
        pytest.param(
            {"a": ejected(0.3), "b": ejected(0.5), "c": ejected(0.1)},
            {},
            "bd",
            id="share-cap-keeps-the-best",
        ),
        pytest.param(
            {"a": ejected(0.3), "b": ejected(0.5), "c": ejected(0.1)},
            {"max_ejected_share": 1.0},
            "d",
            id="no-cap",
        ),
        pytest.param(
            dict.fromkeys("abcd", ejected(0.2)), {"max_ejected_share": 1.0}, "abcd", id="panic"
        ),
        pytest.param(
            {"a": QualityView(fidelity=0.7, state="probation", reason="x")},
            {"demoted_below": 0.8},
            "bcd",
            id="demoted-threshold",
        ),
        pytest.param(
            {"a": QualityView(fidelity=0.7, state="probation", reason="x")},
            {},
            "abcd",
            id="probation-kept",
        ),
    ],
)
def test_quality_filter(
    quality: dict[str, QualityView], params: dict[str, float], kept: str
) -> None:
    result = run(quality, **params)
    assert {name for name, keep in result.items() if keep} == set(kept)


def test_reason_names_the_signal() -> None:
    policy = QualityFilter("q", QualityFilter.Params(explore_share=0.0))
    quality = {"a": ejected(0.3, "tool-call schema failures 9/40 (half-life 10 min)")}
    verdicts = policy.filter(snapshot(fleet("a", "b"), quality=quality), fleet("a", "b"))
    assert verdicts["a"].reason == (
        "ejected for 42s more: tool-call schema failures 9/40 (half-life 10 min)"
    )
    assert verdicts["b"].reason == "quality not tracked"


def test_exploration_share_is_seeded_and_close_to_the_setting() -> None:
    policy = QualityFilter("q", QualityFilter.Params(explore_share=0.1))
    quality = {"a": ejected(0.3)}
    kept = 0
    for seed in range(4000):
        snap = snapshot(fleet("a", "b"), quality=quality, rng_seed=seed)
        verdict = policy.filter(snap, fleet("a", "b"))["a"]
        kept += verdict.keep
        assert verdict.keep == policy.filter(snap, fleet("a", "b"))["a"].keep
    assert 0.07 < kept / 4000 < 0.13
