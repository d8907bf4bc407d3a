"""A Responses request as the OpenAI chat request the gateway routes and forwards.

`instructions` become the first system message; a string `input` one user message. Items,
in order: a message is a chat message (`developer` reads as `system`, which every backend
kind understands), with `input_text`/`output_text` parts as text and `input_image` parts as
`image_url` parts; `function_call` items join the assistant message before them as its
`tool_calls` (or make one); each `function_call_output` is a `tool` message, its images
following in one user message after the tool messages (OpenAI's hold text only); earlier
`reasoning` items are not sent on. Options: `max_output_tokens` → `max_completion_tokens`,
`reasoning.effort` → `reasoning_effort`, `text.format` → `response_format`.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.errors import InvalidRequest
from gateway.http.chat_messages import (
    AssistantMessage,
    ChatMessage,
    ContentPart,
    FunctionTool,
    ImagePart,
    NamedToolChoice,
    tool_call,
    user_content,
)
from gateway.http.responses_ingress.chat_request import ChatRequest, ResponseFormat
from gateway.http.responses_ingress.chat_request import JsonSchema as JsonSchemaSpec
from gateway.http.responses_ingress.input_items import (
    FunctionCallItem,
    FunctionCallOutputItem,
    MessageItem,
    Part,
    RefusalPart,
)
from gateway.http.responses_ingress.input_items import ImagePart as InputImage
from gateway.http.responses_ingress.responses_request import FunctionTool as ResponsesTool
from gateway.http.responses_ingress.responses_request import (
    JsonSchema,
    ResponsesRequest,
    TextConfig,
)

PART_SEPARATOR = "\n\n"
"""Between the texts of a system or assistant message given as parts: one string to send."""


def to_chat_request(request: ResponsesRequest) -> ChatRequest:
    body: ChatRequest = {
        "model": request.model,
        "messages": to_chat_messages(request),
        "stream": request.stream,
    }
    if request.stream:
        # Usage is only known if asked for; `response.completed` always carries it.
        body["stream_options"] = {"include_usage": True}
    if request.max_output_tokens is not None:
        body["max_completion_tokens"] = request.max_output_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.reasoning is not None and request.reasoning.effort is not None:
        body["reasoning_effort"] = request.reasoning.effort
    response_format = to_response_format(request.text)
    if response_format is not None:
        body["response_format"] = response_format
    if request.user is not None:
        body["user"] = request.user
    _add_tools(body, request)
    return body


def to_chat_messages(request: ResponsesRequest) -> list[ChatMessage]:
    builder = _Conversation()
    if request.instructions:
        builder.add({"role": "system", "content": request.instructions})
    if isinstance(request.input, str):
        builder.add({"role": "user", "content": request.input})
    else:
        for item in request.input:
            if isinstance(item, MessageItem):
                builder.add(_message(item))
            elif isinstance(item, FunctionCallItem):
                builder.call(item)
            elif isinstance(item, FunctionCallOutputItem):
                builder.output(item)
    messages = builder.finish()
    if not messages:
        raise InvalidRequest("input: no message or function call to send", param="input")
    return messages


def to_tools(tools: Sequence[ResponsesTool]) -> list[FunctionTool]:
    out: list[FunctionTool] = []
    for tool in tools:
        function: FunctionTool = {"type": "function", "function": {"name": tool.name}}
        if tool.description:
            function["function"]["description"] = tool.description
        if tool.parameters is not None:
            function["function"]["parameters"] = tool.parameters
        if tool.strict is not None:
            function["function"]["strict"] = tool.strict
        out.append(function)
    return out


def to_response_format(text: TextConfig | None) -> ResponseFormat | None:
    """`text.format` as chat's `response_format`; plain text asks for nothing."""
    found = text.format if text is not None else None
    if found is None or found.type == "text":
        return None
    if not isinstance(found, JsonSchema):
        return {"type": "json_object"}
    schema: JsonSchemaSpec = {"name": found.name, "schema": found.json_schema}
    if found.description is not None:
        schema["description"] = found.description
    if found.strict is not None:
        schema["strict"] = found.strict
    return {"type": "json_schema", "json_schema": schema}


class _Conversation:
    """The chat messages, built item by item: calls join the assistant message before
    them, and call outputs' images wait until the tool messages have ended."""

    def __init__(self) -> None:
        self.messages: list[ChatMessage] = []
        self._assistant: AssistantMessage | None = None
        self._images: list[ContentPart] = []

    def add(self, message: ChatMessage) -> None:
        self._flush_images()
        self.messages.append(message)
        self._assistant = message if message["role"] == "assistant" else None

    def call(self, item: FunctionCallItem) -> None:
        if self._assistant is None:
            # OpenAI's convention: null content, not "", when the assistant only called tools.
            self._assistant = {"role": "assistant", "content": None}
            self.add(self._assistant)
        call = tool_call(item.call_id, item.name, item.arguments)
        self._assistant.setdefault("tool_calls", []).append(call)

    def output(self, item: FunctionCallOutputItem) -> None:
        self._assistant = None
        if isinstance(item.output, str):
            text = item.output
        else:
            text = "\n".join(_texts(item.output))
            self._images.extend(_image(p) for p in item.output if isinstance(p, InputImage))
        self.messages.append({"role": "tool", "tool_call_id": item.call_id, "content": text})

    def finish(self) -> list[ChatMessage]:
        self._flush_images()
        return self.messages

    def _flush_images(self) -> None:
        if self._images:
            self.messages.append({"role": "user", "content": self._images})
            self._images = []


def _message(item: MessageItem) -> ChatMessage:
    role = "system" if item.role == "developer" else item.role
    if isinstance(item.content, str):
        text = item.content
    elif role == "user":
        return {"role": "user", "content": _user_content(item.content)}
    else:
        text = PART_SEPARATOR.join(_texts(item.content))  # images were refused
    if role == "assistant":
        return {"role": "assistant", "content": text}
    if role == "system":
        return {"role": "system", "content": text}
    return {"role": "user", "content": text}


def _user_content(parts: Sequence[Part]) -> str | list[ContentPart]:
    out: list[ContentPart] = []
    for part in parts:
        if isinstance(part, InputImage):
            out.append(_image(part))
        else:
            out.append({"type": "text", "text": _text(part)})
    return user_content(out)


def _texts(parts: Sequence[Part]) -> list[str]:
    return [_text(part) for part in parts if not isinstance(part, InputImage)]


def _text(part: Part) -> str:
    assert not isinstance(part, InputImage)
    return part.refusal if isinstance(part, RefusalPart) else part.text


def _image(part: InputImage) -> ImagePart:
    out: ImagePart = {"type": "image_url", "image_url": {"url": part.image_url}}
    if part.detail is not None:
        out["image_url"]["detail"] = part.detail
    return out


def _add_tools(body: ChatRequest, request: ResponsesRequest) -> None:
    if request.tools:
        body["tools"] = to_tools(request.tools)
        if request.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = request.parallel_tool_calls
    choice = request.tool_choice
    if choice is None or (not request.tools and choice in ("auto", "none")):
        return
    if not request.tools:
        kind = choice if isinstance(choice, str) else "function"
        raise InvalidRequest(f"tool_choice {kind!r} requires tools", param="tool_choice")
    if isinstance(choice, str):
        body["tool_choice"] = choice
    else:
        named: NamedToolChoice = {"type": "function", "function": {"name": choice.name}}
        body["tool_choice"] = named
