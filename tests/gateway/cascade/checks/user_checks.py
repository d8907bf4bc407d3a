"""A user's own answer check, as a module outside the gateway declares one: loaded by
dotted path (`tests.gateway.cascade.checks.user_checks:shouting`) in the registry's tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from gateway.cascade.checks.registry import answer_check
from policies.strict_model import StrictModel

if TYPE_CHECKING:
    from gateway.cascade.answer import Answer, CheckRequest


class ShoutingParams(StrictModel):
    max_capitals: float = Field(0.5, ge=0, le=1, description="Share of letters in capitals.")


@answer_check("shouting", ShoutingParams, judges_start=True, asks_logprobs=True)
def shouting(request: CheckRequest, answer: Answer, params: ShoutingParams) -> str | None:
    """Mostly capital letters."""
    letters = [c for c in answer.text if c.isalpha()]
    if not letters:
        return None
    share = sum(c.isupper() for c in letters) / len(letters)
    return None if share <= params.max_capitals else f"shouting: {share:.0%} capitals"


NOT_A_CHECK = "shouting"
"""An attribute that is not an AnswerCheck."""
