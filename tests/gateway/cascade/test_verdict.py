"""A cascade's checks and their verdict: every failure reported, a held start judged only
by the checks that can judge one, log-probabilities asked for only when a check reads them."""

from __future__ import annotations

import pytest

from gateway.cascade.answer import Answer, CheckRequest
from gateway.cascade.checks.registry import CheckError
from gateway.cascade.config import CheckConfig
from gateway.cascade.verdict import CascadeChecks, Failure, Verdict

LOOP = "the river runs to the sea and " * 10
JSON_ASKED = CheckRequest(response_format={"type": "json_object"})


def checks(*declared: str | dict[str, object]) -> CascadeChecks:
    return CascadeChecks([CheckConfig.model_validate(d) for d in declared])


def test_a_passing_answer_is_judged_by_every_check() -> None:
    verdict = checks("empty", "loop", "response_format").judge(JSON_ASKED, Answer('{"a": 1}'))
    assert verdict.passed
    assert verdict.failures == ()
    assert verdict.judged == 3
    assert verdict.names == ""


def test_every_failure_is_reported_in_declared_order() -> None:
    verdict = checks("loop", "empty", "response_format", "refusal").judge(JSON_ASKED, Answer(LOOP))
    assert not verdict.passed
    assert [f.check for f in verdict.failures] == ["loop", "response_format"]
    assert verdict.names == "loop, response_format"
    assert verdict.failures[1].reason == "response_format json_object: the answer is not JSON"
    assert verdict.judged == 4


def test_params_reach_their_check() -> None:
    strict = checks({"check": "logprob", "params": {"min_mean": -0.1}})
    lenient = checks("logprob")
    answer = Answer("x", logprobs=(-0.3,))
    assert not strict.judge(CheckRequest(), answer).passed
    assert lenient.judge(CheckRequest(), answer).passed


def test_a_held_start_is_judged_only_by_checks_that_can_judge_a_start() -> None:
    declared = checks("empty", "loop", "response_format", "cut_short", "tool_calls", "logprob")
    start = Answer(LOOP, finish_reason="length", completion_tokens=3, complete=False)
    verdict = declared.judge(JSON_ASKED, start)
    assert [f.check for f in verdict.failures] == ["loop"]
    assert verdict.judged == 2  # loop, logprob


def test_the_same_answer_whole_is_judged_by_every_check() -> None:
    declared = checks("empty", "loop", "response_format", "cut_short", "tool_calls", "logprob")
    whole = Answer(LOOP, finish_reason="length", completion_tokens=3)
    verdict = declared.judge(JSON_ASKED, whole)
    assert verdict.names == "loop, response_format, cut_short"
    assert verdict.judged == 6


@pytest.mark.parametrize(
    ("declared", "asks"),
    [
        (("empty", "loop", "refusal", "response_format", "tool_calls", "cut_short"), False),
        (("empty", "logprob"), True),
        (("tests.gateway.cascade.checks.user_checks:shouting",), True),
    ],
)
def test_logprobs_are_asked_for_only_when_a_check_reads_them(
    declared: tuple[str, ...], asks: bool
) -> None:
    assert checks(*declared).asks_logprobs is asks


def test_an_unknown_check_cannot_be_bound() -> None:
    with pytest.raises(CheckError):
        checks("empty", "nope")


def test_a_failure_describes_itself_for_the_record() -> None:
    failure = Failure("loop", "loop: 'a b' repeated 9 times")
    assert failure.describe() == {"check": "loop", "reason": "loop: 'a b' repeated 9 times"}
    assert Verdict((failure,), 1).names == "loop"
