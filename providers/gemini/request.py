"""An OpenAI chat request as a Gemini `generateContent` call: messages, tools and options.

System and developer messages become `systemInstruction`; the rest become `contents`
with Gemini's two roles, `user` and `model`. Tool results go back as `functionResponse`
parts named after the call they answer (OpenAI names them only by the call's id).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson
from pydantic import ValidationError

from providers.base import UpstreamRequest
from providers.errors import UnsupportedRequest
from providers.gemini.generation import generation_config, is_gemini_3_or_later, tool_config
from providers.gemini.openai_wire import ChatRequest, ContentPart, Message, Tool, ToolCall

_DATA_URL = re.compile(r"^data:([^;,]+)(?:;[^,;]*)*;base64,(.*)$", re.DOTALL)
# Google's documented stand-in for a tool call that carries no thought signature
# (history written by another model or backend); Gemini 3 refuses unsigned calls.
SKIP_SIGNATURE = "skip_thought_signature_validator"


@dataclass(frozen=True, slots=True)
class GeminiCall:
    """One chat request, translated: the Gemini body and what answering needs to know."""

    model: str
    body: bytes
    include_usage: bool

    def generate(self) -> UpstreamRequest:
        return UpstreamRequest(f"/{model_path(self.model)}:generateContent", self.body, False)

    def stream(self) -> UpstreamRequest:
        path = f"/{model_path(self.model)}:streamGenerateContent?alt=sse"
        return UpstreamRequest(path, self.body, True)


def model_path(model: str) -> str:
    """`models/{id}`, or a full resource name (`tunedModels/...`) as given."""
    return quote(model if "/" in model else f"models/{model}", safe="/")


def translate_request(raw: bytes) -> GeminiCall:
    """The Gemini call for an OpenAI chat body; UnsupportedRequest if it has no translation."""
    request = parse_chat_request(raw)
    signed = is_gemini_3_or_later(request.model)
    body: dict[str, Any] = {"contents": contents_of(request.messages, sign_calls=signed)}
    system = system_instruction(request.messages)
    if system is not None:
        body["systemInstruction"] = system
    if request.tools:
        body["tools"] = [{"functionDeclarations": [_declaration(t) for t in request.tools]}]
    config = tool_config(request)
    if config is not None:
        body["toolConfig"] = config
    generation = generation_config(request)
    if generation:
        body["generationConfig"] = generation
    return GeminiCall(request.model, orjson.dumps(body), request.include_usage)


def parse_chat_request(raw: bytes) -> ChatRequest:
    try:
        return ChatRequest.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise UnsupportedRequest(
            f"invalid chat request at {where}: {first['msg']}", param=where, code="invalid_request"
        ) from None


def system_instruction(messages: list[Message]) -> dict[str, Any] | None:
    parts = [
        {"text": text}
        for m in messages
        if m.role in ("system", "developer")
        for text in _texts(m.content, "system")
    ]
    return {"parts": parts} if parts else None


def contents_of(messages: list[Message], *, sign_calls: bool = False) -> list[dict[str, Any]]:
    """`sign_calls`: give unsigned tool calls the stand-in signature (Gemini 3 and later)."""
    names = _tool_names_by_id(messages)
    contents: list[dict[str, Any]] = []
    answering_tools = False
    for message in messages:
        if message.role in ("system", "developer"):
            continue
        if message.role in ("tool", "function"):
            part = _function_response(message, names)
            # Answers to one turn's parallel calls go back together, in one user turn.
            if answering_tools:
                contents[-1]["parts"].append(part)
            else:
                contents.append({"role": "user", "parts": [part]})
            answering_tools = True
            continue
        answering_tools = False
        if message.role == "assistant":
            parts, role = _model_parts(message, sign_calls), "model"
        else:
            parts, role = _user_parts(message), "user"
        if parts:
            contents.append({"role": role, "parts": parts})
    return contents


def _user_parts(message: Message) -> list[dict[str, Any]]:
    if isinstance(message.content, str):
        return [{"text": message.content}] if message.content else []
    return [_user_part(part) for part in message.content or []]


def _user_part(part: ContentPart) -> dict[str, Any]:
    if part.type == "text" and part.text is not None:
        return {"text": part.text}
    if part.type == "image_url" and part.image_url is not None:
        return _inline_data(part.image_url.url, "image_url")
    if part.type == "input_audio" and part.input_audio is not None:
        audio = part.input_audio
        return {"inlineData": {"mimeType": f"audio/{audio.format}", "data": audio.data}}
    if part.type == "file" and part.file is not None and part.file.file_data:
        return _inline_data(part.file.file_data, "file")
    raise UnsupportedRequest(
        f"content part {part.type!r} has no Gemini translation", param="messages"
    )


def _inline_data(url: str, kind: str) -> dict[str, Any]:
    match = _DATA_URL.match(url)
    if match is None:
        # Gemini fetches no URLs; it takes inline base64 data (or files it stores).
        raise UnsupportedRequest(
            f"{kind} must be a base64 data URL for Gemini (data:<mime>;base64,...)",
            param="messages",
        )
    return {"inlineData": {"mimeType": match.group(1), "data": match.group(2)}}


def _model_parts(message: Message, sign_calls: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": t} for t in _texts(message.content, "assistant") if t]
    for index, call in enumerate(message.tool_calls or ()):
        part: dict[str, Any] = {
            "functionCall": {"name": call.function.name, "args": _arguments(call)}
        }
        signature = _thought_signature(call)
        if signature is None and sign_calls and index == 0:
            # Gemini checks the signature of a turn's first call only.
            signature = SKIP_SIGNATURE
        if signature is not None:
            part["thoughtSignature"] = signature
        parts.append(part)
    return parts


def _arguments(call: ToolCall) -> dict[str, Any]:
    args = call.function.arguments_object()
    if args is None:
        raise UnsupportedRequest(
            f"tool call {call.id}: arguments must be a JSON object for Gemini",
            param="messages",
        )
    return args


def _thought_signature(call: ToolCall) -> str | None:
    google = (call.extra_content or {}).get("google")
    signature = google.get("thought_signature") if isinstance(google, dict) else None
    return signature if isinstance(signature, str) and signature else None


def _function_response(message: Message, names: dict[str, str]) -> dict[str, Any]:
    name = message.name if message.role == "function" else names.get(message.tool_call_id or "")
    if not name:
        raise UnsupportedRequest(
            f"tool message answers an unknown tool_call_id {message.tool_call_id!r}",
            param="messages",
        )
    text = "".join(_texts(message.content, "tool"))
    try:
        result = orjson.loads(text)
    except orjson.JSONDecodeError:
        result = None
    # Gemini takes an object as the response; anything else is wrapped in one.
    response = result if isinstance(result, dict) else {"result": text}
    return {"functionResponse": {"name": name, "response": response}}


def _tool_names_by_id(messages: list[Message]) -> dict[str, str]:
    return {
        call.id: call.function.name
        for message in messages
        if message.role == "assistant"
        for call in message.tool_calls or ()
    }


def _texts(content: str | list[ContentPart] | None, role: str) -> list[str]:
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    texts = []
    for part in content:
        text = part.text if part.type == "text" else part.refusal
        if text is None:
            raise UnsupportedRequest(
                f"a {role} message may hold only text, not {part.type!r}", param="messages"
            )
        texts.append(text)
    return texts


def _declaration(tool: Tool) -> dict[str, Any]:
    function = tool.function
    if tool.type != "function" or function is None:
        raise UnsupportedRequest(
            f"tool type {tool.type!r} has no Gemini translation", param="tools"
        )
    declaration: dict[str, Any] = {"name": function.name}
    if function.description:
        declaration["description"] = function.description
    if function.parameters:
        # The JSON Schema field takes OpenAI's schemas as they are; `parameters` takes
        # only Gemini's OpenAPI subset and refuses keys such as additionalProperties.
        declaration["parametersJsonSchema"] = function.parameters
    return declaration
