"""A Messages request as the OpenAI chat request the gateway routes and forwards.

The top-level `system` becomes the first message; a user turn's `tool_result` blocks
become `tool` messages (ahead of the rest of the turn, as OpenAI wants them right after
the assistant's calls), its text and images a user message; an assistant turn's text and
`tool_use` blocks one assistant message with `tool_calls`. Earlier turns' thinking is not
sent on. Options: `stop_sequences` → `stop`, `tool_choice` any → "required", a thinking
budget → `reasoning_effort`, `metadata.user_id` → `user` (the session key that
session affinity reads, unless `x-session-id` is sent; an Anthropic backend gets it back
as `metadata.user_id`); `top_k` and the rest of `metadata` are dropped.

With `marks`, the client's `cache_control` breakpoints stay where they were, in the
convention the Anthropic adapter reads back onto the same blocks: on text and image
parts, on tools, on a `tool` message (its `tool_result` block; a mark on a part inside a
tool result goes there too, the end of that block), and on an assistant message for a
marked `tool_use` (its last block). A `system` with a marked block stays a list of text
parts, and so does a turn with a marked text. Without `marks` (for every other backend)
the body is the same translation with none of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Literal

import orjson

from gateway.errors import InvalidRequest
from gateway.http.anthropic_ingress.messages_request import (
    AssistantMessage,
    CacheControl,
    Conversation,
    ImageBlock,
    MessagesRequest,
    OpaqueBlock,
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
from gateway.http.chat_messages import CacheControl as ControlParam
from gateway.http.chat_messages import (
    ChatMessage,
    ContentPart,
    FunctionTool,
    ImagePart,
    NamedToolChoice,
    TextPart,
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


def inexpressible(conversation: Conversation) -> InvalidRequest | None:
    """Why `conversation` has no OpenAI translation, naming the first part that has none
    (a block the gateway keeps as it came, a server tool); None when it has one."""
    for position, tool in enumerate(conversation.tools or ()):
        if tool.type not in (None, "custom"):
            return InvalidRequest(
                f"tools.{position}: server tool {tool.type!r} is served only by a backend "
                "of Anthropic's API",
                param=f"tools.{position}.type",
            )
    for turn, message in enumerate(conversation.messages):
        for index, block in enumerate(() if isinstance(message.content, str) else message.content):
            if isinstance(block, OpaqueBlock):
                return InvalidRequest(
                    f"messages.{turn}.content.{index}: {block.type!r} blocks are served only "
                    "by a backend of Anthropic's API",
                    param=f"messages.{turn}.content.{index}",
                )
    return None


def to_chat_request(
    request: MessagesRequest, *, marks: bool = False, lossy: bool = False
) -> ChatRequest:
    """The OpenAI request; with `marks`, the client's cache breakpoints carried. Raises
    `inexpressible`'s error for a request it cannot express, unless `lossy`: then those
    parts are left out (a body to route by, never to send: the request goes only to a
    backend of Anthropic's API, as it came)."""
    if not lossy and (problem := inexpressible(request)) is not None:
        raise problem
    body: ChatRequest = {
        "model": request.model,
        "messages": to_chat_messages(request, marks=marks),
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
    _add_tools(body, request.tools, request.tool_choice, marks)
    return body


def reasoning_effort(thinking: Thinking | None) -> ReasoningEffort | None:
    if thinking is None or thinking.type != "enabled" or thinking.budget_tokens is None:
        return None
    budget = thinking.budget_tokens
    return next((effort for least, effort in EFFORT_FROM_BUDGET if budget >= least), "low")


def to_chat_messages(conversation: Conversation, *, marks: bool = False) -> list[ChatMessage]:
    messages: list[ChatMessage] = []
    system = _system(conversation.system, marks)
    if system:
        messages.append({"role": "system", "content": system})
    for message in conversation.messages:
        if isinstance(message, UserMessage):
            messages.extend(_user_turn(message, marks))
        else:
            messages.append(_assistant_turn(message, marks))
    return messages


def to_tools(tools: Sequence[Tool], *, marks: bool = False) -> list[FunctionTool]:
    """The client tools (a server tool has no OpenAI form: `inexpressible` names it)."""
    return [
        _function(position, tool, marks)
        for position, tool in enumerate(tools)
        if tool.type in (None, "custom")
    ]


def _system(system: str | list[TextBlock] | None, marks: bool) -> str | list[TextPart] | None:
    if not isinstance(system, list):
        return system
    if marks and any(block.cache_control is not None for block in system):
        return [_text_part(block, marks) for block in system if block.text]
    return SYSTEM_SEPARATOR.join(block.text for block in system if block.text)


def _text_part(block: TextBlock, marks: bool) -> TextPart:
    part: TextPart = {"type": "text", "text": block.text}
    if marks and block.cache_control is not None:
        part["cache_control"] = _control(block.cache_control)
    return part


def _control(control: CacheControl) -> ControlParam:
    param: ControlParam = {"type": control.type}
    if control.ttl is not None:
        param["ttl"] = control.ttl
    return param


def _user_turn(message: UserMessage, marks: bool) -> list[ChatMessage]:
    if isinstance(message.content, str):
        return [{"role": "user", "content": message.content}]
    results: list[ChatMessage] = []
    parts: list[ContentPart] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            tool_message, images = _tool_result(block, marks)
            results.append(tool_message)
            # OpenAI's tool messages hold text only: their images follow in the user turn.
            parts.extend(images)
        elif isinstance(block, ImageBlock):
            parts.append(image_part(block, marks))
        elif isinstance(block, TextBlock):
            parts.append(_text_part(block, marks))
    if parts or not results:
        results.append({"role": "user", "content": user_content(parts) or ""})
    return results


def image_part(block: ImageBlock, marks: bool = False) -> ImagePart:
    source = block.source
    if isinstance(source, UrlSource):
        part: ImagePart = {"type": "image_url", "image_url": {"url": source.url}}
    else:
        data_url = f"data:{source.media_type};base64,{source.data}"
        part = {"type": "image_url", "image_url": {"url": data_url}}
    if marks and block.cache_control is not None:
        part["cache_control"] = _control(block.cache_control)
    return part


def _tool_result(block: ToolResultBlock, marks: bool) -> tuple[ToolMessage, list[ContentPart]]:
    images: list[ContentPart] = []
    control = block.cache_control
    if isinstance(block.content, str):
        text = block.content
    else:
        texts = [part.text for part in block.content if isinstance(part, TextBlock)]
        images = [image_part(p, marks) for p in block.content if isinstance(p, ImageBlock)]
        text = "\n".join(texts)
        inner = [p.cache_control for p in block.content if isinstance(p, TextBlock)]
        control = control or next((c for c in inner if c is not None), None)
    if block.is_error and not text.startswith(TOOL_ERROR_PREFIX):
        text = TOOL_ERROR_PREFIX + text
    result: ToolMessage = {"role": "tool", "tool_call_id": block.tool_use_id, "content": text}
    if marks and control is not None:
        result["cache_control"] = _control(control)
    return result, images


def _assistant_turn(message: AssistantMessage, marks: bool) -> ChatAssistant:
    if isinstance(message.content, str):
        return {"role": "assistant", "content": message.content}
    texts = [block for block in message.content if isinstance(block, TextBlock)]
    uses = [block for block in message.content if isinstance(block, ToolUseBlock)]
    calls = [_tool_call(block) for block in uses]
    # OpenAI's convention: null content, not "", when the assistant only called tools.
    out: ChatAssistant = {
        "role": "assistant",
        "content": "".join(b.text for b in texts) if texts or not calls else None,
    }
    if marks and any(block.cache_control is not None for block in texts):
        out["content"] = [_text_part(block, marks) for block in texts if block.text]
    if calls:
        out["tool_calls"] = calls
    used = next((b.cache_control for b in reversed(uses) if b.cache_control is not None), None)
    if marks and used is not None:
        out["cache_control"] = _control(used)
    return out


def _tool_call(block: ToolUseBlock) -> ToolCall:
    return tool_call(block.id, block.name, orjson.dumps(block.input).decode())


def _function(position: int, tool: Tool, marks: bool) -> FunctionTool:
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
    if marks and tool.cache_control is not None:
        function["cache_control"] = _control(tool.cache_control)
    return function


def _add_tools(
    body: ChatRequest, tools: list[Tool] | None, choice: ToolChoice | None, marks: bool
) -> None:
    functions = to_tools(tools or (), marks=marks)
    if functions:
        body["tools"] = functions
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
