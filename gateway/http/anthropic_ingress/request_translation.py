"""A Messages request as the OpenAI chat request the gateway routes and forwards.

The top-level `system` becomes the first message; a user turn's `tool_result` blocks
become `tool` messages (ahead of the rest of the turn, as OpenAI wants them right after
the assistant's calls), its text and images a user message; an assistant turn's text and
`tool_use` blocks one assistant message with `tool_calls`. Earlier turns' thinking is not
sent on. Options: `stop_sequences` → `stop`, `tool_choice` any → "required", a thinking
budget → `reasoning_effort`, `metadata.user_id` → `user` (the session key that
session affinity reads, unless `x-session-id` is sent; an Anthropic backend gets it back
as `metadata.user_id`); `top_k` and the rest of `metadata` are dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Literal

import orjson

from gateway.errors import InvalidRequest
from gateway.http.anthropic_ingress.messages_request import (
    AssistantMessage,
    Conversation,
    ImageBlock,
    MessagesRequest,
    TextBlock,
    Thinking,
    Tool,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
    UrlSource,
    UserMessage,
)
from gateway.http.anthropic_ingress.openai_request import ChatRequest, ReasoningEffort
from gateway.http.chat_messages import AssistantMessage as ChatAssistant
from gateway.http.chat_messages import (
    ChatMessage,
    ContentPart,
    FunctionTool,
    ImagePart,
    NamedToolChoice,
    ToolCall,
    ToolMessage,
    tool_call,
    user_content,
)

TOOL_CHOICES: Mapping[str, Literal["auto", "required", "none"]] = MappingProxyType(
    {"auto": "auto", "any": "required", "none": "none"}
)

SYSTEM_SEPARATOR = "\n\n"
"""Between the texts of a block-list `system`, which OpenAI gets as one string."""

TOOL_ERROR_PREFIX = "Error: "
"""Marks an `is_error` tool result: OpenAI's tool message has no such flag."""

EFFORT_FROM_BUDGET: Sequence[tuple[int, ReasoningEffort]] = ((16_384, "high"), (4_096, "medium"))
"""A thinking budget of at least this many tokens reads as this effort; smaller is "low".
They are the budgets the Anthropic adapter sends for each effort, so a request routed to
an Anthropic backend thinks about as long as asked."""


def to_chat_request(request: MessagesRequest) -> ChatRequest:
    body: ChatRequest = {
        "model": request.model,
        "messages": to_chat_messages(request),
        "max_tokens": request.max_tokens,
        "stream": request.stream,
    }
    if request.stream:
        # Usage is only known if asked for; Anthropic's message_delta always carries it.
        body["stream_options"] = {"include_usage": True}
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.stop_sequences:
        body["stop"] = list(request.stop_sequences)
    if request.metadata is not None and request.metadata.user_id:
        body["user"] = request.metadata.user_id
    effort = reasoning_effort(request.thinking)
    if effort is not None:
        body["reasoning_effort"] = effort
    _add_tools(body, request.tools, request.tool_choice)
    return body


def reasoning_effort(thinking: Thinking | None) -> ReasoningEffort | None:
    if thinking is None or thinking.type != "enabled" or thinking.budget_tokens is None:
        return None
    budget = thinking.budget_tokens
    return next((effort for least, effort in EFFORT_FROM_BUDGET if budget >= least), "low")


def to_chat_messages(conversation: Conversation) -> list[ChatMessage]:
    messages: list[ChatMessage] = []
    system = conversation.system
    if isinstance(system, list):
        system = SYSTEM_SEPARATOR.join(block.text for block in system if block.text)
    if system:
        messages.append({"role": "system", "content": system})
    for message in conversation.messages:
        if isinstance(message, UserMessage):
            messages.extend(_user_turn(message))
        else:
            messages.append(_assistant_turn(message))
    return messages


def to_tools(tools: Sequence[Tool]) -> list[FunctionTool]:
    return [_function(position, tool) for position, tool in enumerate(tools)]


def _user_turn(message: UserMessage) -> list[ChatMessage]:
    if isinstance(message.content, str):
        return [{"role": "user", "content": message.content}]
    results: list[ChatMessage] = []
    parts: list[ContentPart] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            tool_message, images = _tool_result(block)
            results.append(tool_message)
            # OpenAI's tool messages hold text only: their images follow in the user turn.
            parts.extend(images)
        elif isinstance(block, ImageBlock):
            parts.append(image_part(block))
        else:
            parts.append({"type": "text", "text": block.text})
    if parts or not results:
        results.append({"role": "user", "content": user_content(parts) or ""})
    return results


def image_part(block: ImageBlock) -> ImagePart:
    source = block.source
    if isinstance(source, UrlSource):
        return {"type": "image_url", "image_url": {"url": source.url}}
    data_url = f"data:{source.media_type};base64,{source.data}"
    return {"type": "image_url", "image_url": {"url": data_url}}


def _tool_result(block: ToolResultBlock) -> tuple[ToolMessage, list[ContentPart]]:
    images: list[ContentPart] = []
    if isinstance(block.content, str):
        text = block.content
    else:
        texts = [part.text for part in block.content if isinstance(part, TextBlock)]
        images = [image_part(part) for part in block.content if isinstance(part, ImageBlock)]
        text = "\n".join(texts)
    if block.is_error and not text.startswith(TOOL_ERROR_PREFIX):
        text = TOOL_ERROR_PREFIX + text
    return {"role": "tool", "tool_call_id": block.tool_use_id, "content": text}, images


def _assistant_turn(message: AssistantMessage) -> ChatAssistant:
    if isinstance(message.content, str):
        return {"role": "assistant", "content": message.content}
    texts = [block.text for block in message.content if isinstance(block, TextBlock)]
    calls = [_tool_call(b) for b in message.content if isinstance(b, ToolUseBlock)]
    # OpenAI's convention: null content, not "", when the assistant only called tools.
    out: ChatAssistant = {
        "role": "assistant",
        "content": "".join(texts) if texts or not calls else None,
    }
    if calls:
        out["tool_calls"] = calls
    return out


def _tool_call(block: ToolUseBlock) -> ToolCall:
    return tool_call(block.id, block.name, orjson.dumps(block.input).decode())


def _function(position: int, tool: Tool) -> FunctionTool:
    if tool.type not in (None, "custom"):
        raise InvalidRequest(
            f"tools.{position}: server tool {tool.type!r} is not supported by this gateway",
            param=f"tools.{position}.type",
        )
    if tool.input_schema is None:
        raise InvalidRequest(
            f"tools.{position}.input_schema: Field required", param=f"tools.{position}.input_schema"
        )
    function: FunctionTool = {
        "type": "function",
        "function": {"name": tool.name, "parameters": tool.input_schema},
    }
    if tool.description:
        function["function"]["description"] = tool.description
    return function


def _add_tools(body: ChatRequest, tools: list[Tool] | None, choice: ToolChoice | None) -> None:
    if tools:
        body["tools"] = to_tools(tools)
    if choice is None or (not tools and choice.type in ("auto", "none")):
        return
    if not tools:
        raise InvalidRequest(f"tool_choice {choice.type!r} requires tools", param="tool_choice")
    if choice.type == "tool":
        assert choice.name is not None  # checked when parsed
        named: NamedToolChoice = {"type": "function", "function": {"name": choice.name}}
        body["tool_choice"] = named
    else:
        body["tool_choice"] = TOOL_CHOICES[choice.type]
    if choice.disable_parallel_tool_use and choice.type != "none":
        body["parallel_tool_calls"] = False
