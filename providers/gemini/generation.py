"""An OpenAI request's sampling, output-format and reasoning options as Gemini's
`generationConfig`, and its `tool_choice` as `toolConfig`."""

from __future__ import annotations

import re
from typing import Any

from providers.errors import UnsupportedRequest
from providers.gemini.openai_wire import ChatRequest, NamedToolChoice

# Google's own OpenAI-compatible endpoint maps effort to these budgets (1K, 8K, 24K).
_THINKING_BUDGET_TOKENS = {
    "none": 0,
    "minimal": 1024,
    "low": 1024,
    "medium": 8192,
    "high": 24576,
    "xhigh": 24576,
}
# Gemini 3 and later take a level instead of a budget (sending both is a 400); they
# cannot switch thinking off, so "none" asks for the least there is.
_THINKING_LEVEL = {
    "none": "minimal",
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "high",
}
_MODEL_GENERATION = re.compile(r"gemini-(\d+)")
_CALLING_MODE = {"none": "NONE", "auto": "AUTO", "required": "ANY"}


def generation_config(request: ChatRequest) -> dict[str, Any]:
    """Gemini's `generationConfig`; empty when the request sets none of it."""
    if request.n is not None and request.n != 1:
        raise UnsupportedRequest("Gemini returns one choice per request: n must be 1", param="n")
    config: dict[str, Any] = {
        "candidateCount": request.n,
        "maxOutputTokens": request.output_limit,
        "temperature": request.temperature,
        "topP": request.top_p,
        "stopSequences": request.stop_sequences or None,
        "seed": request.seed,
        "presencePenalty": request.presence_penalty,
        "frequencyPenalty": request.frequency_penalty,
        "thinkingConfig": thinking_config(request.reasoning_effort, request.model),
        **_output_format(request),
    }
    return {key: value for key, value in config.items() if value is not None}


def thinking_config(effort: str | None, model: str) -> dict[str, Any] | None:
    if effort is None:
        return None
    if effort not in _THINKING_BUDGET_TOKENS:
        raise UnsupportedRequest(
            f"reasoning_effort {effort!r} is not one of {', '.join(_THINKING_BUDGET_TOKENS)}",
            param="reasoning_effort",
        )
    # Without includeThoughts Gemini thinks but returns no thoughts to show as reasoning.
    config: dict[str, Any] = {"includeThoughts": effort != "none"}
    if is_gemini_3_or_later(model):
        config["thinkingLevel"] = _THINKING_LEVEL[effort]
    else:
        config["thinkingBudget"] = _THINKING_BUDGET_TOKENS[effort]
    return config


def tool_config(request: ChatRequest) -> dict[str, Any] | None:
    """`toolConfig` for `tool_choice`; None without tools, where it would mean nothing."""
    choice = request.tool_choice
    if choice is None or not request.tools:
        return None
    if isinstance(choice, NamedToolChoice):
        calling = {"mode": "ANY", "allowedFunctionNames": [choice.function.name]}
    else:
        calling = {"mode": _CALLING_MODE[choice]}
    return {"functionCallingConfig": calling}


def is_gemini_3_or_later(model: str) -> bool:
    """Whether `model` takes thinking levels and insists on thought signatures."""
    match = _MODEL_GENERATION.search(model)
    return match is not None and int(match.group(1)) >= 3


def _output_format(request: ChatRequest) -> dict[str, Any]:
    response_format = request.response_format
    if response_format is None or response_format.type == "text":
        return {}
    config: dict[str, Any] = {"responseMimeType": "application/json"}
    schema = response_format.json_schema
    if response_format.type == "json_schema" and schema is not None and schema.json_schema:
        config["responseJsonSchema"] = schema.json_schema
    return config
