"""Passive quality signals: pure rules from one finished response to pieces of evidence.

Each signal emits one event for a response it applies to, good or bad, and none where it
does not apply, so that a score's rate is bad / applicable. The rules lean hard towards
silence where real, healthy providers differ (a named `tool_choice` answered with finish
"stop", a context window that ends generation before max_tokens, a prompt that asks for
a translation): a signal that cries wolf demotes healthy backends.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import orjson

from gateway.quality.config import SignalParams
from gateway.quality.signals.loops import Loop, find_loop, has_repeated_trigram, words_of
from gateway.quality.signals.observation import Dimension, Observation, SignalEvent, ToolCallSeen
from gateway.quality.signals.schema_check import UnusableSchema, schema_violation
from gateway.quality.signals.scripts import expected_scripts, script_letters

Check = Callable[[Observation, SignalParams], SignalEvent | None]


def evaluate(obs: Observation, params: SignalParams) -> list[SignalEvent]:
    """Every passive signal's verdict on one response, in a fixed order."""
    events = []
    for check in _CHECKS:  # a plain loop: every answer runs all of them
        verdict = check(obs, params)
        if verdict is not None:
            events.append(verdict)
    return events


def event(
    signal: str, bad: bool, detail: str = "", *, stratum: str = "", **extra: float
) -> SignalEvent:
    """A signal's event, with its dimension; the detail is kept only when bad."""
    if not bad and not extra and not stratum:
        known = _GOOD.get(signal)
        if known is not None:
            return known
    return _new_event(signal, bad, detail, stratum, extra)


def _new_event(
    signal: str, bad: bool, detail: str, stratum: str, extra: dict[str, float]
) -> SignalEvent:
    dimension: Dimension = "sla" if signal in ("ttft", "tpot") else "fidelity"
    detail = detail if bad else ""
    return SignalEvent(signal, bad, dimension, detail, extra=extra, stratum=stratum)


# Events are frozen values: the good verdicts most answers get are built once, not per answer.
_GOOD: Mapping[str, SignalEvent] = MappingProxyType(
    {
        name: _new_event(name, False, "", "", {})
        for name in (
            "error",
            "tool_call_json",
            "tool_call_name",
            "tool_call_schema",
            "finish_reason",
            "empty_output",
        )
    }
)
_NO_LOOP = _new_event("repetition", False, "", "", {"share": 0.0})
_LATIN_ONLY = _new_event("unexpected_script", False, "", "", {"share": 0.0})


def error_signal(obs: Observation, params: SignalParams) -> SignalEvent | None:
    """ok: good; error: bad. Capacity (429), client errors and cancels say nothing."""
    if obs.outcome == "ok":
        return event("error", False)
    if obs.outcome == "error":
        return event("error", True, f"backend failed: {obs.error_kind or 'unknown error'}")
    return None


def tool_call_json_signal(obs: Observation, params: SignalParams) -> SignalEvent | None:
    """Every tool call's arguments are a JSON object."""
    calls = _calls_with_whole_arguments(obs)
    if not calls:
        return None
    for call in calls:
        problem = parse_arguments(call.arguments)[1]
        if problem is not None:
            return event("tool_call_json", True, f"{problem} (tool {call.name!r})")
    return event("tool_call_json", False)


def tool_call_name_signal(obs: Observation, params: SignalParams) -> SignalEvent | None:
    """Every tool call names a declared tool."""
    calls = _judged_tool_calls(obs)
    if not calls or obs.tools is None:
        return None
    for call in calls:
        if call.name not in obs.tools:
            declared = ", ".join(list(obs.tools)[:8]) + (", …" if len(obs.tools) > 8 else "")
            return event(
                "tool_call_name", True, f"unknown tool {call.name!r} (declared: {declared})"
            )
    return event("tool_call_name", False)


def tool_call_schema_signal(obs: Observation, params: SignalParams) -> SignalEvent | None:
    """Every tool call's arguments satisfy the tool's declared JSON schema.

    Calls that are cut, not JSON or of an unknown tool are the other signals' business,
    and a schema that is itself invalid is no evidence: neither makes an event.
    """
    tools, judged, problem = obs.tools or {}, 0, None
    for call in _calls_with_whole_arguments(obs):
        schema = tools.get(call.name)
        arguments, not_json = parse_arguments(call.arguments)
        if not_json or not isinstance(schema, Mapping):
            continue
        try:
            violation = schema_violation(schema, arguments)
        except UnusableSchema:
            continue
        judged += 1
        if violation is not None and problem is None:
            problem = f"arguments of {call.name!r} fail its schema: {violation}"
    if judged == 0:
        return None
    return event("tool_call_schema", problem is not None, problem or "")


def _judged_tool_calls(obs: Observation) -> tuple[ToolCallSeen, ...]:
    """Tool calls judged at all: of a complete answer to a request that declared tools."""
    if obs.outcome != "ok" or not obs.tools or obs.inspected_bytes_capped:
        return ()
    return obs.tool_calls


def _calls_with_whole_arguments(obs: Observation) -> list[ToolCallSeen]:
    # Arguments cut by max_tokens ("length") or by the collector's bound prove nothing.
    if obs.finish_reason == "length":
        return []
    return [call for call in _judged_tool_calls(obs) if not call.arguments_cut]


def parse_arguments(arguments: str) -> tuple[Any, str | None]:
    """Tool call arguments as a JSON object, or None and why not, in the parser's words."""
    if not arguments.strip():
        return {}, None  # some servers send "" for a call without parameters
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        try:  # the standard library says what is wrong more plainly
            json.loads(arguments)
        except json.JSONDecodeError as exc:
            return None, f"arguments are not JSON: {exc.msg} at char {exc.pos}"
        return None, "arguments are not JSON"
    if not isinstance(value, dict):
        return None, f"arguments are a JSON {_json_kind(value)}, not an object"
    return value, None


def _json_kind(value: object) -> str:
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return names.get(type(value), "null")


def finish_reason_signal(obs: Observation, params: SignalParams) -> SignalEvent | None:
    """The finish reason agrees with what was sent and what was asked for."""
    if obs.outcome != "ok" or obs.finish_reason is None:
        return None
    problem = _tool_finish_problem(obs) or _early_length_problem(obs, params)
    return event("finish_reason", problem is not None, problem or "")


def _tool_finish_problem(obs: Observation) -> str | None:
    # A capped inspection may have missed tool calls that came after a long text.
    if obs.tool_calls or obs.inspected_bytes_capped:
        return None
    if obs.finish_reason == "tool_calls":
        return "finish_reason 'tool_calls' but no tool call was sent"
    # Providers answer a forced call with "tool_calls" or "stop"; a cut or filtered
    # answer ("length", "content_filter") is judged by other signals.
    if obs.tool_choice_required and obs.tools and obs.finish_reason not in _CUT_SHORT:
        return f"a tool call was forced but none came (finish {obs.finish_reason!r})"
    return None


_CUT_SHORT = ("length", "content_filter")


def _early_length_problem(obs: Observation, params: SignalParams) -> str | None:
    if obs.finish_reason != "length" or obs.max_tokens is None or obs.completion_tokens is None:
        return None
    prompt = obs.prompt_tokens_reported or obs.prompt_tokens_local
    if prompt is None or prompt + obs.max_tokens > params.assumed_context_tokens:
        return None
    margin = max(
        params.length_margin_tokens, math.ceil(params.length_margin_ratio * obs.max_tokens)
    )
    if obs.completion_tokens + margin >= obs.max_tokens:
        return None
    return (
        f"finish 'length' after {obs.completion_tokens:,} tokens "
        f"with max_tokens {obs.max_tokens:,} and a {prompt:,}-token prompt"
    )


def repetition_signal(obs: Observation, params: SignalParams) -> SignalEvent | None:
    """A unit of words repeated back to back over much of the answer, or to its end."""
    if obs.outcome != "ok" or "repeat" in obs.prompt_sample.casefold():
        return None
    window = obs.content[-params.repetition_window_chars :]
    windowed = len(window) < len(obs.content)
    words = words_of(window)[1:] if windowed else words_of(window)  # cut inside a word
    if len(words) < params.repetition_min_words:
        return None
    if not has_repeated_trigram(words):
        return _NO_LOOP
    loop = find_loop(words, max_period=params.repetition_max_period_words)
    if loop is None or not _degenerate(loop, params):
        share = loop.share if loop is not None and loop.repeats >= 2 else 0.0
        return event("repetition", False, share=share)
    # The phrase itself is the backend's output (it may quote a user): count its words only.
    phrase = f"a {len(loop.unit)}-word phrase"
    read = f"the output's last {len(window):,} characters" if windowed else "the output"
    detail = f"{phrase} repeated {loop.repeats:.0f} times covers {loop.share:.0%} of {read}"
    return event("repetition", True, detail, share=loop.share, repeats=loop.repeats)


def _degenerate(loop: Loop, params: SignalParams) -> bool:
    # Numbers and symbols repeat legitimately (a zero matrix, a separator row).
    has_letters = any(char.isalpha() for word in loop.unit for char in word)
    return (
        has_letters
        and loop.repeats >= params.repetition_min_repeats
        and loop.words >= params.repetition_min_loop_words
        and (loop.reaches_end or loop.share >= params.repetition_min_share)
    )


def empty_output_signal(obs: Observation, params: SignalParams) -> SignalEvent | None:
    """An ok answer with neither text nor a tool call, although tokens were generated."""
    if obs.outcome != "ok":
        return None
    if obs.content.strip() or obs.tool_calls or obs.finish_reason == "content_filter":
        return event("empty_output", False)
    if obs.reasoning.strip() and obs.finish_reason == "length":
        return event("empty_output", False)  # the budget ran out while thinking
    tokens = obs.completion_tokens or 0
    if tokens <= 0 and obs.finish_reason != "stop":
        return event("empty_output", False)
    where = f"{tokens:,} completion tokens" if obs.completion_tokens is not None else "no usage"
    detail = f"no content and no tool call (finish {obs.finish_reason!r}, {where})"
    return event("empty_output", True, detail)


def unexpected_script_signal(obs: Observation, params: SignalParams) -> SignalEvent | None:
    """Letters of a script that is neither Latin nor in (or named by) the prompt."""
    if obs.outcome != "ok" or not obs.prompt_sample.strip():
        return None
    letters = script_letters(obs.content[: params.script_window_chars])
    if letters.total < params.script_min_letters:
        return None
    if not letters.other:  # Latin only (the common case): the prompt need not be read
        return _LATIN_ONLY
    allowed = expected_scripts(obs.prompt_sample)
    unexpected = {name: n for name, n in letters.other.items() if name not in allowed}
    count = sum(unexpected.values())
    share = count / letters.total
    if count < params.script_min_unexpected or share <= params.script_max_share:
        return event("unexpected_script", False, share=share)
    names = ", ".join(sorted(unexpected, key=lambda name: -unexpected[name]))
    prompt = ", ".join(sorted({"latin", *allowed})) if len(allowed) < 5 else "many scripts"
    detail = f"{share:.0%} of {letters.total:,} letters are {names} (prompt: {prompt})"
    return event("unexpected_script", True, detail, share=share)


def truncation_signal(obs: Observation, params: SignalParams) -> SignalEvent | None:
    """The backend saw far fewer prompt tokens than the gateway counted: silent truncation."""
    reported, local = obs.prompt_tokens_reported, obs.prompt_tokens_local
    if reported is None or local is None or local < params.truncation_min_local_tokens:
        return None
    ratio = reported / local
    bad = ratio < params.truncation_min_ratio
    detail = f"reported {reported:,} prompt tokens, counted {local:,}" if bad else ""
    return event("truncation", bad, detail, ratio=ratio)


def max_tokens_hit_signal(obs: Observation, params: SignalParams) -> SignalEvent | None:
    """Stopped by max_tokens; judged against peers by the score, not alone."""
    if obs.outcome != "ok" or obs.max_tokens is None or obs.finish_reason is None:
        return None
    hit = obs.finish_reason == "length"
    detail = f"stopped at max_tokens {obs.max_tokens:,}" if hit else ""
    return event("max_tokens_hit", hit, detail, stratum=max_tokens_stratum(obs))


def max_tokens_stratum(obs: Observation) -> str:
    """How likely a healthy backend is to hit max_tokens on this request: a tool-calling
    request usually ends on its call, and a small max_tokens is hit far more often than a
    large one (powers of two). Peers are compared within a stratum, never across them."""
    kind = "tools" if obs.tools else "text"
    return f"{kind}/{(obs.max_tokens or 0).bit_length()}"


def ttft_signal(obs: Observation, params: SignalParams) -> SignalEvent | None:
    """Time to first token against the route's target."""
    return _over_target("ttft", "time to first token", obs.ttft_s, obs.ttft_target_ms)


def tpot_signal(obs: Observation, params: SignalParams) -> SignalEvent | None:
    """Time per output token against the route's target."""
    return _over_target("tpot", "time per output token", obs.tpot_s, obs.tpot_target_ms)


def _over_target(
    signal: str, what: str, measured_s: float | None, target_ms: float | None
) -> SignalEvent | None:
    if measured_s is None or target_ms is None:
        return None
    measured_ms = measured_s * 1000
    bad = measured_ms > target_ms
    detail = f"{what} {_ms(measured_ms)} over the {_ms(target_ms)} target" if bad else ""
    return event(signal, bad, detail, ms=measured_ms)


def _ms(value: float) -> str:
    return f"{value:,.0f} ms" if value >= 10 else f"{value:.1f} ms"


_CHECKS: tuple[Check, ...] = (
    error_signal,
    tool_call_json_signal,
    tool_call_name_signal,
    tool_call_schema_signal,
    finish_reason_signal,
    repetition_signal,
    empty_output_signal,
    unexpected_script_signal,
    truncation_signal,
    max_tokens_hit_signal,
    ttft_signal,
    tpot_signal,
)
