"""Column answers: a mapping of Score / Verdict made on lookup, read by column in the pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import ClassVar

import pytest

from policies.answers import Scores, Verdicts
from policies.base import PolicyParams, Role, Score, Verdict
from policies.config import PolicyConfig
from policies.snapshot import BackendView, Snapshot
from tests.policies.builders import backend, fleet, snapshot
from tests.policies.test_pipeline import pipeline

CALLS: list[str] = []


def _why(unit: str, count: int, name: str) -> str:
    CALLS.append(name)
    return f"{name}: {count} {unit}"


def test_scores_behave_as_a_mapping_of_score() -> None:
    candidates = fleet("a", "b")
    answer = Scores(candidates, [0.25, 1.0], partial(_why, "tokens"), [3, 4], ["a", "b"])
    assert list(answer) == ["a", "b"] and len(answer) == 2
    assert "b" in answer and "c" not in answer and 3 not in answer
    assert answer["b"] == Score(1.0, "b: 4 tokens")
    assert answer == {"a": Score(0.25, "a: 3 tokens"), "b": Score(1.0, "b: 4 tokens")}
    assert answer.get("c") is None
    with pytest.raises(KeyError):
        answer["c"]


def test_verdicts_behave_as_a_mapping_of_verdict() -> None:
    candidates = fleet("a", "b")
    answer = Verdicts(candidates, [True, False], partial(_why, "in flight"), [1, 9], ["a", "b"])
    assert answer["a"] == Verdict(True, "a: 1 in flight")
    assert answer["b"] == Verdict(False, "b: 9 in flight")


def test_pipeline_reads_columns_of_the_built_in_policies() -> None:
    candidates = [backend("a"), backend("b", in_flight=2)]
    pipe = pipeline(["healthy-filter", "load-scorer", "prefix-cache-scorer"], [])
    decision = pipe.decide(snapshot(candidates), candidates, "d")
    assert decision.order == ("a", "b")  # load-scorer: b has 2 in flight
    reports = decision.candidates
    assert reports[1].scores["load-scorer"].reason.startswith("2 in flight")
    assert reports[0].verdicts["healthy-filter"] == Verdict(True, "healthy")
    assert reports[0].scores["prefix-cache-scorer"] == Score(0.0, "no cached prefix")
    assert reports[1].total == pytest.approx((1 / (1 + 2 / 8) + 0.0) / 2)


def test_columns_for_another_candidate_list_are_read_by_name() -> None:
    """A plugin that answers with columns about a list other than the one it was given
    (here a reversed copy) is still read correctly, by name; its reasons are formatted
    only when the decision's reports are read."""
    CALLS.clear()
    policy = PolicyConfig(type="tests.policies.test_answers:ReversedScorer", name="rev")
    candidates = fleet("a", "b", "c")
    decision = pipeline(["rev"], [policy]).decide(snapshot(candidates), candidates, "d")
    assert decision.order == ("c", "b", "a") and CALLS == []
    assert decision.candidates[2].scores["rev"].reason == "c: 1.0 score"
    assert CALLS == ["c"]


class ReversedScorer:
    role: ClassVar[Role] = "scorer"

    class Params(PolicyParams):
        pass

    def __init__(self, name: str, params: Params) -> None:
        self.name = name

    def score(self, snapshot: Snapshot, candidates: Sequence[BackendView]) -> Scores:
        backwards = list(reversed(candidates))
        values = [1.0 - i / len(backwards) for i in range(len(backwards))]  # c 1.0, b .67, a .33
        names = [b.name for b in backwards]
        return Scores(backwards, values, partial(_why, "score"), values, names)


def test_columns_must_match_the_candidates() -> None:
    candidates = fleet("a", "b")
    with pytest.raises(ValueError, match="2 candidates but columns of lengths"):
        Scores(candidates, [1.0], str)
    with pytest.raises(ValueError, match="lengths"):
        Verdicts(candidates, [True, True], _why, ["x"], ["a", "b"])
