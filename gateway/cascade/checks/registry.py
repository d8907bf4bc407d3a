"""The answer-check contract and lookup: a built-in by name, or a user's check as
`package.module:name` (an `AnswerCheck` made with `answer_check`), with validated params.

A check is a pure function of the request's expectations, one tier's answer and its
params: None when the answer passes, else why it fails, in words an operator reads in
the record. A check that cannot judge (no schema asked, no log-probabilities returned)
passes: only evidence escalates.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import ValidationError

from policies.strict_model import StrictModel, did_you_mean

if TYPE_CHECKING:
    from gateway.cascade.answer import Answer, CheckRequest

P = TypeVar("P", bound=StrictModel)


class NoParams(StrictModel):
    """A check that takes no params."""


@dataclass(frozen=True, slots=True)
class AnswerCheck(Generic[P]):
    """A registered check: its function, params model and what it can judge."""

    name: str
    judge: Callable[[CheckRequest, Answer, P], str | None]
    params: type[P]
    judges_start: bool = False
    """It can judge the start of an answer (a stream held only so long): a loop, a
    refusal, a low log-probability so far. Checks of the whole (JSON, tool calls, a cut
    answer) judge only a complete one."""
    asks_logprobs: bool = False
    """It reads token log-probabilities: the gateway asks the tiers for them."""


def answer_check(
    name: str, params: type[P], *, judges_start: bool = False, asks_logprobs: bool = False
) -> Callable[[Callable[[CheckRequest, Answer, P], str | None]], AnswerCheck[P]]:
    """Make a check of a function (a user's check module uses it the same way)."""

    def make(judge: Callable[[CheckRequest, Answer, P], str | None]) -> AnswerCheck[P]:
        return AnswerCheck(name, judge, params, judges_start, asks_logprobs)

    return make


@dataclass(frozen=True, slots=True)
class BoundCheck:
    """A check with its params validated: what a cascade runs."""

    check: AnswerCheck[Any]
    params: StrictModel

    @property
    def name(self) -> str:
        return self.check.name

    def __call__(self, request: CheckRequest, answer: Answer) -> str | None:
        return self.check.judge(request, answer, self.params)


class CheckError(ValueError):
    """A check that cannot be found or built (a path-less problem)."""


def resolve(name: str) -> AnswerCheck[Any]:
    """A built-in by name, else `package.module:name`; raises `CheckError`."""
    from gateway.cascade.checks.builtin import BUILTIN_CHECKS

    found = BUILTIN_CHECKS.get(name)
    if found is not None:
        return found
    module_name, sep, attribute = name.partition(":")
    if not sep:
        known = ", ".join(sorted(BUILTIN_CHECKS))
        hint = did_you_mean(name, BUILTIN_CHECKS)
        raise CheckError(f"unknown check {name!r}{hint} (built-ins: {known}; or module:name)")
    try:
        loaded = getattr(importlib.import_module(module_name), attribute)
    # A malformed path (`:x`, `.mod:x`) raises ValueError or TypeError, not ImportError.
    except (ImportError, AttributeError, ValueError, TypeError) as exc:
        raise CheckError(f"cannot load check {name!r}: {exc}") from None
    if not isinstance(loaded, AnswerCheck):
        raise CheckError(f"{name!r} is not an AnswerCheck (make it with answer_check)")
    return loaded


def bind(name: str, params: Mapping[str, Any]) -> BoundCheck:
    """The check named, its params validated; raises `CheckError` or `ValidationError`."""
    check = resolve(name)
    return BoundCheck(check, check.params.model_validate(dict(params)))


def check_problems(name: str, params: Mapping[str, Any]) -> list[str]:
    """What is wrong with a check's declaration, each as a path suffix (`.check: ...`)."""
    try:
        bind(name, params)
    except CheckError as exc:
        return [f".check: {exc}"]
    except ValidationError as exc:
        return [
            f".params.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        ]
    return []
