"""The answer-check registry: built-ins by name, a user's check by `module:name`, and each
declaration's problems as a YAML-path suffix."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.cascade.answer import Answer, CheckRequest
from gateway.cascade.checks.builtin import BUILTIN_CHECKS
from gateway.cascade.checks.registry import CheckError, bind, check_problems, resolve
from tests.gateway.cascade.checks import user_checks

USER = "tests.gateway.cascade.checks.user_checks"
SHOUTING = f"{USER}:shouting"


def test_a_built_in_is_found_by_name() -> None:
    assert resolve("loop") is BUILTIN_CHECKS["loop"]
    assert resolve("loop").name == "loop"


def test_a_users_check_is_loaded_by_module_and_name() -> None:
    assert resolve(SHOUTING) is user_checks.shouting


def test_a_users_check_runs_with_its_params_validated() -> None:
    bound = bind(SHOUTING, {"max_capitals": 0.9})
    assert bound.name == "shouting"
    assert bound(CheckRequest(), Answer("HELLO THERe")) is None
    assert bound(CheckRequest(), Answer("HELLO THERE")) == "shouting: 100% capitals"
    assert bind(SHOUTING, {})(CheckRequest(), Answer("HELLO THERe")) == "shouting: 90% capitals"


def test_a_users_check_declares_what_it_can_judge() -> None:
    check = resolve(SHOUTING)
    assert (check.judges_start, check.asks_logprobs) == (True, True)


def test_an_unknown_name_lists_the_built_ins() -> None:
    with pytest.raises(CheckError) as raised:
        resolve("nope")
    message = str(raised.value)
    assert "'nope'" in message
    assert all(name in message for name in BUILTIN_CHECKS)
    assert "module:name" in message


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("nope", ".check: unknown check 'nope' (built-ins: cut_short, empty, logprob, loop, "),
        (
            "no_such_module_zz:check",
            ".check: cannot load check 'no_such_module_zz:check': No module named",
        ),
        (f"{USER}:absent", f".check: cannot load check '{USER}:absent': module"),
        (
            f"{USER}:NOT_A_CHECK",
            f".check: '{USER}:NOT_A_CHECK' is not an AnswerCheck (make it with answer_check)",
        ),
    ],
)
def test_a_check_that_cannot_be_found_is_a_problem_at_check(name: str, problem: str) -> None:
    found = check_problems(name, {})
    assert len(found) == 1
    assert found[0].startswith(problem)


def test_a_users_check_that_is_not_an_answer_check_is_refused() -> None:
    with pytest.raises(CheckError, match="is not an AnswerCheck"):
        bind(f"{USER}:NOT_A_CHECK", {})


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(":shouting", id="no-module"),
        pytest.param(".user_checks:shouting", id="relative-module"),
    ],
)
def test_a_malformed_module_path_is_a_problem_at_check(name: str) -> None:
    found = check_problems(name, {})
    assert len(found) == 1
    assert found[0].startswith(".check: ")


@pytest.mark.parametrize(
    ("name", "params", "problems"),
    [
        (
            "logprob",
            {"min_mean": 1, "min_tokenz": 3},
            [
                ".params.min_mean: Input should be less than or equal to 0",
                ".params.min_tokenz: Extra inputs are not permitted",
            ],
        ),
        ("empty", {"strict": True}, [".params.strict: Extra inputs are not permitted"]),
        (
            "refusal",
            {"patterns": ["ok", 3]},
            [".params.patterns.1: Input should be a valid string"],
        ),
        (SHOUTING, {"max_capitals": 2}, [".params.max_capitals: Input should be less than"]),
    ],
)
def test_bad_params_are_problems_at_their_path(
    name: str, params: dict[str, object], problems: list[str]
) -> None:
    found = check_problems(name, params)
    assert len(found) == len(problems)
    for got, expected in zip(found, problems, strict=True):
        assert got.startswith(expected)


def test_bind_raises_for_bad_params() -> None:
    with pytest.raises(ValidationError):
        bind("loop", {"min_repeats": 1})


@pytest.mark.parametrize(
    ("name", "params"),
    [("empty", {}), ("loop", {"min_repeats": 3}), (SHOUTING, {"max_capitals": 0.2})],
)
def test_a_good_declaration_has_no_problems(name: str, params: dict[str, object]) -> None:
    assert check_problems(name, params) == []


def test_a_refusal_pattern_that_is_not_a_regular_expression_is_a_problem() -> None:
    found = check_problems("refusal", {"patterns": ["(unclosed"]})
    assert len(found) == 1
    assert found[0].startswith(".params.patterns")
