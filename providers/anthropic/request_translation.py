"""An OpenAI chat-completions request body as an Anthropic Messages API request body.

The conversation itself is `conversation.py`'s job; this module maps the options around
it: limits, sampling, stop sequences, tools and tool choice, and extended thinking.
Anything the Messages API cannot honour raises `UntranslatableRequest`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from providers.anthropic.cache_breakpoints import MAX_BREAKPOINTS, add_breakpoints, count_marked
from providers.anthropic.chat_request import (
    CacheControl,
    ChatRequest,
    FunctionDefinition,
    NamedToolChoice,
    ReasoningEffort,
    UntranslatableRequest,
    parse_chat_request,
    sets_cache_control,
)
from providers.anthropic.conversation import cache_control_param, to_conversation
from providers.anthropic.messages_wire import (
    MessagesRequest,
    ThinkingParam,
    ToolChoiceParam,
    ToolParam,
)
from providers.cache_breakpoints import CacheBreakpoints

DEFAULT_MAX_TOKENS = 4096
"""The answer's budget when the client sets none: Anthropic requires `max_tokens`."""

MIN_THINKING_BUDGET_TOKENS = 1024
"""The smallest `budget_tokens` the API accepts."""

THINKING_BUDGET_TOKENS: Mapping[ReasoningEffort, int] = MappingProxyType(
    {"low": 1024, "medium": 4096, "high": 16384}
)
"""OpenAI's `reasoning_effort` as a thinking budget; "none" and "minimal" do not think."""

_EMPTY_SCHEMA = MappingProxyType({"type": "object", "properties": {}})


@dataclass(frozen=True, slots=True)
class TranslatedRequest:
    body: MessagesRequest
    include_usage: bool
    """The client asked for a final usage chunk (`stream_options.include_usage`)."""
    breakpoints: int = 0
    """Cache breakpoints the adapter added (the host asked, the client set none)."""


def to_messages_request(
    raw: bytes, *, stream: bool, breakpoints: CacheBreakpoints | None = None
) -> TranslatedRequest:
    """The Messages API body for an OpenAI chat body; `stream` overrides the body's flag.
    `breakpoints` are added unless the client set any `cache_control` of its own."""
    request = parse_chat_request(raw)
    conversation = to_conversation(request.messages)
    system, turns = conversation.system, conversation.turns
    thinking_budget = _thinking_budget(request)
    body: MessagesRequest = {
        "model": request.model,
        "messages": turns,
        "max_tokens": _max_tokens(request, thinking_budget),
        "stream": stream,
    }
    if system:
        body["system"] = system
    if request.thinking is not None and request.thinking.type == "disabled":
        body["thinking"] = {"type": "disabled"}
    elif thinking_budget is not None:
        body["thinking"] = _thinking(thinking_budget, body["max_tokens"])
    _add_sampling(body, request)
    _add_tools(body, request)
    added = 0
    if not sets_cache_control(request):
        if breakpoints is not None:
            added = add_breakpoints(body, conversation.ends, breakpoints)
    elif (marked := count_marked(body)) > MAX_BREAKPOINTS:
        raise UntranslatableRequest(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {marked}.",
            param="cache_control",
        )
    return TranslatedRequest(
        body, include_usage=stream and request.include_usage, breakpoints=added
    )


def _thinking_budget(request: ChatRequest) -> int | None:
    # Anthropic's own `thinking` object, when given, wins over OpenAI's reasoning_effort.
    if request.thinking is not None:
        if request.thinking.type == "disabled":
            return None
        if request.thinking.budget_tokens is None:
            raise UntranslatableRequest(
                "thinking.budget_tokens is required when thinking is enabled",
                param="thinking.budget_tokens",
            )
        return request.thinking.budget_tokens
    if request.reasoning_effort is None:
        return None
    return THINKING_BUDGET_TOKENS.get(request.reasoning_effort)


def _max_tokens(request: ChatRequest, thinking_budget: int | None) -> int:
    limit = request.output_limit
    if limit is not None:
        return limit
    # OpenAI counts reasoning within the completion's limit; with none given, thinking
    # gets its budget on top of the default answer's.
    return DEFAULT_MAX_TOKENS + (thinking_budget or 0)


def _thinking(budget: int, max_tokens: int) -> ThinkingParam:
    # The API wants budget_tokens < max_tokens: a budget that does not fit is clipped,
    # unless what is left is below the API's minimum.
    clipped = min(budget, max_tokens - 1)
    if clipped < MIN_THINKING_BUDGET_TOKENS:
        raise UntranslatableRequest(
            f"thinking needs max_tokens above {MIN_THINKING_BUDGET_TOKENS} "
            f"(got {max_tokens}) and a budget of at least {MIN_THINKING_BUDGET_TOKENS}",
            param="max_completion_tokens",
        )
    return {"type": "enabled", "budget_tokens": clipped}


def _add_sampling(body: MessagesRequest, request: ChatRequest) -> None:
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.top_k is not None:
        body["top_k"] = request.top_k
    stop = request.stop_sequences
    if stop:
        body["stop_sequences"] = stop
    if request.user:
        body["metadata"] = {"user_id": request.user}


def _add_tools(body: MessagesRequest, request: ChatRequest) -> None:
    if not request.tools:
        if request.tool_choice not in (None, "none", "auto"):
            raise UntranslatableRequest("tool_choice requires tools", param="tool_choice")
        return
    body["tools"] = [_tool(tool.function, tool.cache_control) for tool in request.tools]
    choice = _tool_choice(request.tool_choice)
    if request.parallel_tool_calls is False and choice["type"] != "none":
        choice["disable_parallel_tool_use"] = True
    if request.tool_choice is not None or "disable_parallel_tool_use" in choice:
        body["tool_choice"] = choice


def _tool(function: FunctionDefinition, control: CacheControl | None) -> ToolParam:
    tool: ToolParam = {
        "name": function.name,
        "input_schema": dict(function.parameters or _EMPTY_SCHEMA),
    }
    if function.description:
        tool["description"] = function.description
    if control is not None:
        tool["cache_control"] = cache_control_param(control)
    return tool


def _tool_choice(choice: str | NamedToolChoice | None) -> ToolChoiceParam:
    if isinstance(choice, NamedToolChoice):
        return {"type": "tool", "name": choice.function.name}
    if choice == "none":
        return {"type": "none"}
    if choice == "required":
        return {"type": "any"}
    return {"type": "auto"}
