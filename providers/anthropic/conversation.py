"""An OpenAI message list as Anthropic's `system` blocks and alternating turns.

The Messages API has no system role and wants user and assistant turns to alternate:
system and developer messages move to the top-level `system` (in order, wherever they
stood), tool results become `tool_result` blocks of a user turn, and neighbouring turns
of the same role are merged into one. Empty text is dropped: the API refuses empty text
blocks, and a turn left with no blocks is dropped with it. A client's `cache_control`
on a part, a message or a tool goes onto the block it became (a message's: its last).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from providers.anthropic.chat_request import (
    AssistantMessage,
    CacheControl,
    ChatMessage,
    ImagePart,
    RefusalPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UntranslatableRequest,
    UserMessage,
    UserPart,
)
from providers.anthropic.messages_wire import (
    Base64Source,
    CacheControlParam,
    ContentBlock,
    ImageBlock,
    MessageParam,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class Conversation:
    system: list[TextBlock]
    turns: list[MessageParam]
    ends: list[TextBlock | ContentBlock | None]
    """Per OpenAI message, the last block it became (None: it became none), where a
    cache breakpoint after that message goes."""


def to_conversation(messages: Sequence[ChatMessage]) -> Conversation:
    """The `system` blocks and the turns of `messages`."""
    system: list[TextBlock] = []
    turns: list[MessageParam] = []
    ends: list[TextBlock | ContentBlock | None] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            texts = _text_blocks(message.content)
            _mark_last(texts, message.cache_control)
            system.extend(texts)
            ends.append(texts[-1] if texts else None)
            continue
        role, blocks = _turn(message)
        _mark_last(blocks, message.cache_control)
        ends.append(blocks[-1] if blocks else None)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return Conversation(system, turns, ends)


def cache_control_param(control: CacheControl) -> CacheControlParam:
    param: CacheControlParam = {"type": control.type}
    if control.ttl is not None:
        param["ttl"] = control.ttl
    return param


def _mark_last(blocks: Sequence[TextBlock | ContentBlock], control: CacheControl | None) -> None:
    if control is not None and blocks:
        blocks[-1]["cache_control"] = cache_control_param(control)


def _turn(
    message: UserMessage | AssistantMessage | ToolMessage,
) -> tuple[Role, list[ContentBlock]]:
    if isinstance(message, UserMessage):
        return "user", _user_blocks(message.content)
    if isinstance(message, AssistantMessage):
        return "assistant", _assistant_blocks(message)
    return "user", [_tool_result(message)]


def _text_blocks(content: str | Sequence[TextPart | RefusalPart]) -> list[TextBlock]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[TextBlock] = []
    for part in content:
        text = _text_of(part)
        if text:
            blocks.append({"type": "text", "text": text})
            if isinstance(part, TextPart):
                _mark_last(blocks, part.cache_control)
    return blocks


def _text_of(part: TextPart | RefusalPart) -> str:
    return part.text if isinstance(part, TextPart) else part.refusal


def _user_blocks(content: str | Sequence[UserPart]) -> list[ContentBlock]:
    if isinstance(content, str):
        return list(_text_blocks(content))
    blocks: list[ContentBlock] = []
    for part in content:
        if isinstance(part, ImagePart):
            blocks.append(image_block(part.image_url.url))
        elif part.text:
            blocks.append({"type": "text", "text": part.text})
        else:
            continue
        _mark_last(blocks, part.cache_control)
    return blocks


def image_block(url: str) -> ImageBlock:
    """A data URL as a base64 source, an http(s) URL as a URL source the API fetches."""
    if url.startswith(("https://", "http://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    if url.startswith("data:"):
        header, comma, data = url[len("data:") :].partition(",")
        parameters = header.split(";")
        if comma and parameters[0] and parameters[-1] == "base64":
            source: Base64Source = {"type": "base64", "media_type": parameters[0], "data": data}
            return {"type": "image", "source": source}
    raise UntranslatableRequest(
        "image_url.url must be an http(s) URL or a data:<media type>;base64,... URL",
        param="image_url",
    )


def _assistant_blocks(message: AssistantMessage) -> list[ContentBlock]:
    blocks: list[ContentBlock] = []
    if message.content is not None:
        blocks.extend(_text_blocks(message.content))
    blocks.extend(_tool_use(call) for call in message.tool_calls)
    return blocks


def _tool_use(call: ToolCall) -> ToolUseBlock:
    arguments = call.function.arguments_object()
    if arguments is None:
        raise UntranslatableRequest(
            f"tool call {call.id}: function.arguments must be a JSON object",
            param="tool_calls",
        )
    return {"type": "tool_use", "id": call.id, "name": call.function.name, "input": arguments}


def _tool_result(message: ToolMessage) -> ToolResultBlock:
    content: str | list[TextBlock | ImageBlock]
    if isinstance(message.content, str):
        content = message.content
    else:
        content = list(_text_blocks(message.content))
    return {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": content}
