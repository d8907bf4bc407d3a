"""Deciding: a built pipeline filters, scores, picks and keeps every reason and timing."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from policies.base import Score
from policies.config import PluginRef, PolicyConfig, ProfileConfig
from policies.pipeline import Pipeline, PolicyContractError
from policies.profiles import build_pipeline
from tests.policies.builders import backend, fleet, snapshot

FIXED = "tests.policies.user_plugins:FixedScorer"


def fixed(name: str, **values: float) -> PolicyConfig:
    return PolicyConfig(type=FIXED, name=name, params={"values": values})


def pipeline(refs: Sequence[str | tuple[str, float]], policies: list[PolicyConfig]) -> Pipeline:
    plugins = [
        PluginRef(ref=r) if isinstance(r, str) else PluginRef(ref=r[0], weight=r[1]) for r in refs
    ]
    return build_pipeline(ProfileConfig(name="p", plugins=plugins), policies, profile_index=0)


@pytest.mark.parametrize(
    ("w_one", "w_two", "expected"),
    [
        (1.0, 1.0, {"a": 0.5, "b": 0.5}),
        (3.0, 1.0, {"a": 0.75, "b": 0.25}),
        (1.0, 0.0, {"a": 1.0, "b": 0.0}),
        (0.0, 0.0, {"a": 0.0, "b": 0.0}),
    ],
)
def test_weights_combine_as_weighted_mean(
    w_one: float, w_two: float, expected: dict[str, float]
) -> None:
    pipe = pipeline(
        [("one", w_one), ("two", w_two)], [fixed("one", a=1.0, b=0.0), fixed("two", a=0.0, b=1.0)]
    )
    candidates = fleet("a", "b")
    decision = pipe.decide(snapshot(candidates), candidates, "d1")
    assert {c.backend: c.total for c in decision.candidates} == pytest.approx(expected)
    assert decision.picker == "max-score-picker"  # appended when no picker is declared


@pytest.mark.parametrize(
    ("value", "clamped", "reason"),
    [
        (3.0, 1.0, "fixed 3.0 (clamped from 3)"),
        (-0.5, 0.0, "fixed -0.5 (clamped from -0.5)"),
        (math.nan, 0.0, "no score (got NaN: fixed nan)"),
        (math.inf, 1.0, "fixed inf (clamped from inf)"),
        (0.25, 0.25, "fixed 0.25"),
        (None, 0.0, "no score"),
    ],
)
def test_framework_clamps_user_scores(value: float | None, clamped: float, reason: str) -> None:
    values = {"a": value} if value is not None else {}
    pipe = pipeline(["wild"], [PolicyConfig(type=FIXED, name="wild", params={"values": values})])
    candidates = fleet("a")
    report = pipe.decide(snapshot(candidates), candidates, "d").candidates[0]
    assert report.scores["wild"] == Score(clamped, reason)
    assert report.total == clamped


def test_every_reason_and_timing_is_kept() -> None:
    pipe = pipeline(
        [
            "healthy-filter",
            "capacity-filter",
            "least-load-scorer",
            "round-robin",
            "max-score-picker",
        ],
        [],
    )
    candidates = [
        backend("a", in_flight=1),
        backend("b", in_flight=64),
        backend("c", healthy=False, health_reason="ejected: timeout"),
        backend("d", in_flight=3),
    ]
    decision = pipe.decide(snapshot(candidates, seq=1, now_s=12.5), candidates, "d42")
    reports = {c.backend: c for c in decision.candidates}
    assert list(reports) == ["a", "b", "c", "d"]
    assert (reports["c"].dropped_by, reports["c"].drop_reason) == (
        "healthy-filter",
        "ejected: timeout",
    )
    assert (reports["b"].dropped_by, reports["b"].drop_reason) == (
        "capacity-filter",
        "at capacity: 64 of 64 in flight",
    )
    assert reports["b"].verdicts["healthy-filter"].reason == "healthy"
    assert reports["a"].verdicts["capacity-filter"].reason == "1 of 64 in flight"
    assert reports["a"].scores["least-load-scorer"].reason == "1 in flight of 64"
    assert reports["d"].scores["round-robin-scorer"].reason == "rotation slot 1 of 2"
    assert reports["b"].scores == {} and reports["b"].total == 0.0
    # a: (1.0 + 0.5) / 2, d: (0.5 + 1.0) / 2 -> a tie, both orders allowed
    assert sorted(decision.order) == ["a", "d"]
    assert set(decision.timings_us) == {
        "healthy-filter",
        "capacity-filter",
        "least-load-scorer",
        "round-robin-scorer",
        "max-score-picker",
    }
    assert all(t >= 0 for t in decision.timings_us.values())
    assert decision.total_us >= sum(decision.timings_us.values())
    assert (decision.id, decision.route, decision.model, decision.created_at) == (
        "d42",
        "route-a",
        "m",
        12.5,
    )
    assert decision.chosen == decision.order[0]


@pytest.mark.parametrize(
    ("candidates", "refs", "reason", "timed"),
    [
        (
            [backend("a", healthy=False), backend("b", healthy=False)],
            ["health", "least-load-scorer"],
            "no candidates left after health",
            {"health"},
        ),
        (
            [backend("a", in_flight=64), backend("b", models=["other"])],
            ["model-match-filter", "capacity-filter", "least-load-scorer"],
            "no candidates left after capacity-filter",
            {"model-match-filter", "capacity-filter"},
        ),
        ([], ["least-load-scorer"], "no candidates", set()),
    ],
)
def test_no_survivors(candidates: list[Any], refs: list[str], reason: str, timed: set[str]) -> None:
    strict = PolicyConfig(type="healthy-filter", name="health", params={"panic_mode": False})
    decision = pipeline(refs, [strict]).decide(snapshot(candidates), candidates, "d")
    assert (decision.order, decision.chosen, decision.picker_reason) == ((), None, reason)
    assert set(decision.timings_us) == timed
    assert all(c.dropped_by is not None for c in decision.candidates)


def test_panic_mode_reason_is_visible() -> None:
    candidates = [backend("a", healthy=False), backend("b", healthy=False)]
    decision = pipeline(["healthy-filter"], []).decide(snapshot(candidates), candidates, "d")
    assert len(decision.order) == 2
    verdict = decision.candidates[0].verdicts["healthy-filter"]
    assert verdict.reason == "panic: all 2 candidates unhealthy, keeping all"


def test_plugin_exceptions_propagate() -> None:
    boom = PolicyConfig(type="tests.policies.user_plugins:ExplodingScorer", name="boom")
    with pytest.raises(RuntimeError, match="scorer bug"):
        pipeline(["boom"], [boom]).decide(snapshot(), fleet("a"), "d")


def test_picker_naming_a_dropped_backend_is_a_contract_error() -> None:
    rogue = PolicyConfig(type="tests.policies.user_plugins.RoguePicker", name="rogue")
    with pytest.raises(PolicyContractError, match="rogue"):
        pipeline(["rogue"], [rogue]).decide(snapshot(), fleet("a"), "d")


def test_candidate_reports_follow_each_filter_and_scorer() -> None:
    """Reports are built from the plugins' answers when read: a dropped candidate has the
    verdicts up to the filter that dropped it and no scores; a survivor has every one."""
    strict = PolicyConfig(type="healthy-filter", name="health", params={"panic_mode": False})
    pipe = pipeline(["health", "capacity-filter", ("one", 2.0)], [strict, fixed("one", b=0.5)])
    full = backend("c", in_flight=4, max_concurrency=4)
    candidates = [backend("a", healthy=False), backend("b"), full]
    decision = pipe.decide(snapshot(candidates), candidates, "d")
    reports = decision.candidates
    assert [r.backend for r in reports] == ["a", "b", "c"] and len(reports) == 3
    a, b, c = reports
    assert (a.dropped_by, list(a.verdicts), a.scores) == ("health", ["health"], {})
    assert (c.dropped_by, list(c.verdicts)) == ("capacity-filter", ["health", "capacity-filter"])
    assert b.dropped_by is None and list(b.verdicts) == ["health", "capacity-filter"]
    assert b.scores == {"one": Score(0.5, "fixed 0.5")} and b.total == 0.5
    # A sequence like the tuple it stands for, the same on every read.
    assert reports == tuple(reports) and reports[1:] == (b, c) and reports[0] is a
