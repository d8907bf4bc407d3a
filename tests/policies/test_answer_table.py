"""Explaining a decision straight from the plugins' answers gives what its reports give."""

from __future__ import annotations

import dataclasses
import math

import pytest

from policies.config import PolicyConfig
from policies.decision import Decision
from policies.describe import describe_decision
from policies.pipeline import CandidateReports
from policies.snapshot import BackendView
from tests.policies.builders import backend, snapshot
from tests.policies.test_pipeline import FIXED, pipeline

# A non-column answer (a plain dict of Score) with out-of-range, NaN and missing values.
WILD = PolicyConfig(
    type=FIXED, name="wild", params={"values": {"a": math.nan, "b": 1.5, "c": -0.2, "d": 1}}
)
PIPE = pipeline(
    [
        "healthy-filter",
        "capacity-filter",
        "context-window-filter",
        ("wild", 2.0),
        ("least-load-scorer", 1.0),
        ("session-affinity-scorer", 0.5),
        ("load-scorer", 1.0),
    ],
    [WILD],
)
CASES = [
    [backend("a"), backend("b", in_flight=3), backend("c"), backend("d"), backend("e")],
    [backend("a", healthy=False, health_reason="probe failed"), backend("b"), backend("c")],
    [backend("a", in_flight=64), backend("b", context_window_tokens=10)],
    [backend("a"), backend("b", healthy=False), backend("b")],  # a repeated name
    [backend("e")],
    [backend("a", healthy=False)],
    [],
]


def with_reports(decision: Decision) -> Decision:
    """The same decision, its reports built first (the path taken once they were read)."""
    assert isinstance(decision.candidates, CandidateReports)
    answers = decision.candidates.answers()
    assert answers is not None
    built = CandidateReports(answers.candidates, answers.filtered, answers.scored, answers.totals)
    built.reports()
    return dataclasses.replace(decision, candidates=built)


@pytest.mark.parametrize("candidates", CASES)
def test_described_from_answers_as_from_reports(candidates: list[BackendView]) -> None:
    snap = snapshot(candidates, session_key="user-1", prompt_tokens=100)
    decision = PIPE.decide(snap, candidates, "d")
    fast = describe_decision(decision)
    assert fast == describe_decision(with_reports(decision))
    assert fast == describe_decision(
        dataclasses.replace(decision, candidates=tuple(decision.candidates))
    )


def test_answers_are_let_go_once_reports_are_built() -> None:
    decision = PIPE.decide(snapshot(CASES[0]), CASES[0], "d")
    assert isinstance(decision.candidates, CandidateReports)
    assert decision.candidates.answers() is not None
    reports = decision.candidates.reports()
    assert decision.candidates.answers() is None
    assert reports[0].scores["wild"].reason == "no score (got NaN: fixed nan)"
    assert reports[1].scores["wild"].reason == "fixed 1.5 (clamped from 1.5)"
