"""The built-in answer checks (`registry.py` has the contract): an answer cut short by
the tier's own limits, empty, a refusal, a loop, `response_format` JSON or JSON-schema
invalid, tool calls that do not match the request's tools, and low confidence from the
tokens' log-probabilities."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import Field, field_validator

from gateway.cascade.checks.registry import AnswerCheck, NoParams, answer_check
from gateway.quality.signals.loops import find_loop, has_repeated_trigram, words_of
from gateway.quality.signals.rules import parse_arguments
from gateway.quality.signals.schema_check import UnusableSchema, schema_violation
from policies.strict_model import StrictModel

if TYPE_CHECKING:
    from gateway.cascade.answer import Answer, CheckRequest


@answer_check("cut_short", NoParams)
def cut_short(request: CheckRequest, answer: Answer, params: NoParams) -> str | None:
    """Stopped for length below what the client allowed: the tier's own output cap or
    context window cut it, where a stronger tier may finish."""
    if not answer.complete or answer.finish_reason != "length":
        return None
    asked, written = request.max_tokens, answer.completion_tokens
    if asked is not None and (written is None or written >= asked):
        return None  # the client's own cap: a stronger tier would stop there too
    allowed = f"the client allowed {asked}" if asked is not None else "the client set no cap"
    return f"cut short at {written if written is not None else '?'} tokens ({allowed})"


@answer_check("empty", NoParams)
def empty(request: CheckRequest, answer: Answer, params: NoParams) -> str | None:
    """Neither text nor a tool call."""
    if not answer.complete or answer.text.strip() or answer.tool_calls:
        return None
    return "empty answer"


_REFUSALS = (
    r"i(?:'m| am) (?:sorry|afraid)[^.]{0,40}(?:can(?:no|')t|unable|not able)",
    r"i (?:can(?:no|')t|won't|will not|am unable to|am not able to) "
    r"(?:help|assist|provide|answer|do|comply|fulfil)",
    r"as an ai(?: language model)?,? i",
    r"i(?:'m| am) not (?:able|allowed) to",
)


class RefusalParams(StrictModel):
    patterns: list[str] = Field(
        default_factory=lambda: list(_REFUSALS),
        description="Regular expressions (case-insensitive) a refusal's start matches.",
    )
    within_chars: int = Field(200, ge=1, le=10_000, description="Of the answer's start read.")

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
        return patterns


@answer_check("refusal", RefusalParams, judges_start=True)
def refusal(request: CheckRequest, answer: Answer, params: RefusalParams) -> str | None:
    """The answer begins by declining."""
    start = answer.text[: params.within_chars].lower().replace("\u2019", "'")
    for pattern in params.patterns:
        match = re.search(pattern, start, re.IGNORECASE)
        if match is not None:
            return f"refused: {start[match.start() : match.end()]!r}"
    return None


class LoopParams(StrictModel):
    min_repeats: float = Field(4.0, ge=2, description="Back-to-back copies of a unit.")
    min_loop_words: int = Field(24, ge=1, description="Words the loop covers at least.")
    max_period_words: int = Field(200, ge=1, description="Longest repeated unit.")
    window_chars: int = Field(8192, ge=256, description="The end of the answer read.")


@answer_check("loop", LoopParams, judges_start=True)
def loop(request: CheckRequest, answer: Answer, params: LoopParams) -> str | None:
    """A unit of words repeated back to back (the quality signals' loop detector)."""
    words = words_of(answer.text[-params.window_chars :])
    if not has_repeated_trigram(words):
        return None
    found = find_loop(words, max_period=params.max_period_words)
    if found is None or found.repeats < params.min_repeats:
        return None
    if found.words < params.min_loop_words:
        return None
    unit = " ".join(found.unit[:8]) + (" …" if len(found.unit) > 8 else "")
    return f"loop: {unit!r} repeated {found.repeats:.0f} times"


@answer_check("response_format", NoParams)
def response_format(request: CheckRequest, answer: Answer, params: NoParams) -> str | None:
    """The text is JSON when `response_format` asks for it, valid against its schema
    when it gives one."""
    asked = request.response_format
    kind = asked.get("type") if asked is not None else None
    if kind not in ("json_object", "json_schema") or not answer.complete or answer.tool_calls:
        return None
    if answer.text_cut:
        return None  # only the start was kept: no evidence either way
    try:
        value = orjson.loads(answer.text.strip())
    except orjson.JSONDecodeError:
        return f"response_format {kind}: the answer is not JSON"
    if kind == "json_object":
        return None if isinstance(value, dict) else "response_format json_object: not an object"
    schema = _schema_of(asked)
    if schema is None:
        return None
    try:
        violation = schema_violation(schema, value)
    except UnusableSchema:
        return None  # the request's schema is at fault: no evidence about the answer
    return None if violation is None else f"response_format json_schema: {violation}"


def _schema_of(asked: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    spec = asked.get("json_schema") if asked is not None else None
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    return schema if isinstance(schema, Mapping) else None


class ToolCallParams(StrictModel):
    expect_call: bool = Field(
        False,
        description="A text answer to a request with tools fails (as with tool_choice "
        "required, which always does).",
    )


@answer_check("tool_calls", ToolCallParams)
def tool_calls(request: CheckRequest, answer: Answer, params: ToolCallParams) -> str | None:
    """Every tool call names a declared tool with arguments that are a JSON object valid
    against its schema; a call was made where one is required."""
    tools = request.tools
    if not tools or not answer.complete:
        return None
    if not answer.tool_calls:
        expected = params.expect_call and request.tool_choice != "none"
        if request.tools_required or expected:
            return "no tool call, where the request called for one"
        return None
    forced = _forced_tool(request.tool_choice)
    for call in answer.tool_calls:
        if call.name not in tools:
            return f"unknown tool {call.name!r}"
        if forced is not None and call.name != forced:
            return f"called {call.name!r} where the request named {forced!r}"
        if call.arguments_cut:
            continue
        arguments, problem = parse_arguments(call.arguments)
        if problem is not None:
            return f"{problem} (tool {call.name!r})"
        schema = tools[call.name]
        if not isinstance(schema, Mapping) or not schema:
            continue
        try:
            violation = schema_violation(schema, arguments)
        except UnusableSchema:
            continue
        if violation is not None:
            return f"arguments of {call.name!r} fail its schema: {violation}"
    return None


def _forced_tool(choice: Any) -> str | None:
    """The tool `tool_choice` names (`{"type": "function", "function": {"name": …}}`)."""
    function = choice.get("function") if isinstance(choice, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    return name if isinstance(name, str) else None


class LogprobParams(StrictModel):
    min_mean: float = Field(
        -0.5,
        le=0,
        description="The answer's mean token log-probability must reach this "
        "(-0.5: a geometric-mean token probability of 0.61).",
    )
    min_tokens: int = Field(1, ge=1, description="Fewer log-probabilities: not judged.")


@answer_check("logprob", LogprobParams, judges_start=True, asks_logprobs=True)
def logprob(request: CheckRequest, answer: Answer, params: LogprobParams) -> str | None:
    """Low confidence: the tokens' mean log-probability under `min_mean`. An engine that
    returns none is not judged."""
    values = answer.logprobs
    if len(values) < params.min_tokens:
        return None
    mean = math.fsum(values) / len(values)
    if mean >= params.min_mean:
        return None
    return f"low confidence: mean token logprob {mean:.2f} < {params.min_mean:g}"


BUILTIN_CHECKS: Mapping[str, AnswerCheck[Any]] = MappingProxyType(
    {
        check.name: check
        for check in (cut_short, empty, refusal, loop, response_format, tool_calls, logprob)
    }
)
