"""A Messages request on its way to a backend that speaks Anthropic's API, and back.

`native_request` is the client's request as an Anthropic backend gets it: its own bytes
and its `anthropic-version` and `anthropic-beta` headers. Only thinking blocks that carry
no signature are taken out: the gateway writes those itself for thinking an OpenAI-format
backend reported (`response_translation`), and Anthropic's API refuses them. When the
answer comes from such a backend (`UpstreamResponse.native_body`, `NativeEvents`), the
client gets it as it came, with the model renamed as every answer is; an answer from an
OpenAI-format backend is translated as before (`MessagesTranslation`'s parent).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import orjson
from starlette.responses import Response

from gateway.http.anthropic_ingress.errors import error_event
from gateway.http.anthropic_ingress.messages_request import (
    AssistantMessage,
    MessagesRequest,
    ThinkingBlock,
)
from gateway.http.anthropic_ingress.response_translation import ReplyContext
from gateway.http.dialect import NativeRelay, TranslatedRequest
from gateway.http.model_rename import renamed_body
from providers.base import ANTHROPIC_MESSAGES, NativeRequest

if TYPE_CHECKING:
    from gateway.http.relay.streaming import StreamOutcome
    from providers.base import UpstreamResponse

PASSED_HEADERS = ("anthropic-version", "anthropic-beta")
"""The client's headers a backend speaking Anthropic's API gets."""


def native_request(
    request: MessagesRequest, raw: bytes, headers: Mapping[str, str] | None, *, marked: bool
) -> NativeRequest | None:
    """`raw` for a backend of Anthropic's API; `marked`: it carries `cache_control`. None
    when an assistant turn holds nothing but unsigned thinking: without it the turn would
    be empty, which the API refuses, so the request goes translated (as to any backend)."""
    passed = {name: value for name in PASSED_HEADERS if (value := (headers or {}).get(name))}
    if any(_unsigned(block) for block in _assistant_blocks(request)):
        if any(_all_unsigned(message) for message in request.messages):
            return None
        raw = _without_unsigned(raw)
    return NativeRequest(ANTHROPIC_MESSAGES, raw, passed, marked)


class MessagesTranslation(TranslatedRequest[ReplyContext]):
    """A Messages request's way back: as its backend sent it when that spoke Anthropic's
    API, else translated from the OpenAI answer."""

    __slots__ = ("native",)

    def respond(
        self, response: UpstreamResponse, headers: dict[str, str], prompt_tokens: int
    ) -> Response:
        if response.native_body is None:
            return super().respond(response, headers, prompt_tokens)
        return Response(response.native_body, 200, headers, "application/json")

    def relay(
        self,
        chunks: AsyncIterator[bytes],
        outcome: StreamOutcome,
        prompt_tokens: int,
        native: NativeRelay | None = None,
    ) -> AsyncIterator[bytes]:
        if native is None:
            return super().relay(chunks, outcome, prompt_tokens)
        return relay_native(chunks, outcome, native)


async def relay_native(
    chunks: AsyncIterator[bytes], outcome: StreamOutcome, native: NativeRelay
) -> AsyncIterator[bytes]:
    """The backend's own events, written as the relay pulls the chunks translated from
    them (which feed usage, quality and the relay's bounds); a stream that fails ends with
    the gateway's `error` event after the events that came before the failure."""
    try:
        async for _chunk in chunks:
            events = native.events.take()
            if events:
                yield _written(events, native.model)
        out = _written(native.events.take(), native.model)
        if outcome.error is not None:
            out += error_event(outcome.error)
        if out:
            yield out
    finally:  # the relay under it ends (its stream closed) before the client's stream does
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


def _written(events: list[tuple[str, bytes]], model: str | None) -> bytes:
    parts: list[bytes] = []
    for name, data in events:
        if model is not None and name == "message_start":
            data = renamed_body(data, model)
        # A data field the backend split over lines stays one field of several lines.
        data = data.replace(b"\n", b"\ndata: ")
        parts += (b"event: ", name.encode(), b"\ndata: ", data, b"\n\n")
    return b"".join(parts)


def _assistant_blocks(request: MessagesRequest) -> list[Any]:
    return [
        block
        for message in request.messages
        if isinstance(message, AssistantMessage) and not isinstance(message.content, str)
        for block in message.content
    ]


def _all_unsigned(message: object) -> bool:
    if not isinstance(message, AssistantMessage) or isinstance(message.content, str):
        return False
    return bool(message.content) and all(_unsigned(block) for block in message.content)


def _unsigned(block: object) -> bool:
    return isinstance(block, ThinkingBlock) and block.type == "thinking" and not block.signature


def _without_unsigned(raw: bytes) -> bytes:
    document: Any = orjson.loads(raw)
    for message in document["messages"]:
        content = message["content"]
        if message["role"] == "assistant" and isinstance(content, list):
            message["content"] = [
                block
                for block in content
                if not (block.get("type") == "thinking" and not block.get("signature"))
            ]
    return orjson.dumps(document)
