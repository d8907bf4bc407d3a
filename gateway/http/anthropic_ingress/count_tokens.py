"""`POST /v1/messages/count_tokens`: a Messages request's prompt, counted by the gateway.

The request is translated as `/v1/messages` would translate it, and what the backend
would see is counted with the router's `TokenCounter` (cl100k, else bytes / 4): an
estimate, since the served model's tokenizer is the backend's. Images count a fixed
IMAGE_TOKENS each. Encoding is bounded per request (EXACT_CHARS); beyond it texts are
estimated, so a large body does not hold the event loop.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import orjson
from fastapi import Request
from starlette.responses import Response

from gateway.config.bounds import check_depth
from gateway.errors import SwitchyardError
from gateway.http.anthropic_ingress.errors import error_response
from gateway.http.anthropic_ingress.messages_dialect import MESSAGES
from gateway.http.anthropic_ingress.messages_request import parse_conversation
from gateway.http.anthropic_ingress.request_translation import to_chat_messages, to_tools
from gateway.http.chat_messages import ChatMessage, FunctionTool
from gateway.http.proxy import read_body
from gateway.http.responses import json_response
from gateway.prefix.token_count import TokenCounter
from gateway.process.service import Gateway

IMAGE_TOKENS = 1_600
"""Anthropic's count for an image of about 1.15 megapixels, the largest it keeps unscaled."""

MESSAGE_OVERHEAD_TOKENS = 3
"""Role and separators a chat template adds per message."""

EXACT_CHARS = 65_536
"""Characters encoded exactly per request (about 5 ms); the rest are estimated."""


async def count_tokens(request: Request) -> Response:
    """The handler `gateway.http.api` routes here, importing this module on the first call."""
    gateway: Gateway = request.app.state.gateway
    try:
        MESSAGES.authorize(request.headers, gateway.authorize)
        raw = await read_body(request, gateway.config.server.max_body_bytes)
        check_depth(raw, gateway.config.bounds.max_json_depth)
        conversation = parse_conversation(raw, gateway.config.bounds)
        gateway.router.route(conversation.model)
        messages = to_chat_messages(conversation)
        tools = to_tools(conversation.tools or ())
    except SwitchyardError as exc:
        return error_response(exc)
    tokens = prompt_tokens(gateway.router.fingerprinter.counter, messages, tools)
    return json_response({"input_tokens": tokens})


def prompt_tokens(
    counter: TokenCounter, messages: Sequence[ChatMessage], tools: Sequence[FunctionTool]
) -> int:
    total = MESSAGE_OVERHEAD_TOKENS * len(messages)
    exact_left = EXACT_CHARS
    for text in _texts(messages, tools):
        if text is None:
            total += IMAGE_TOKENS
            continue
        exact = len(text) <= exact_left
        if exact:
            exact_left -= len(text)
        total += counter.count(text, exact=exact)
    return total


def _texts(messages: Sequence[ChatMessage], tools: Sequence[FunctionTool]) -> Iterator[str | None]:
    """Every text the backend would read; None for each image."""
    if tools:
        yield orjson.dumps(tools).decode()
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            yield content
        elif content is not None:
            for part in content:
                yield part["text"] if part["type"] == "text" else None
        if message["role"] == "assistant":
            for call in message.get("tool_calls", ()):
                yield call["function"]["name"]
                yield call["function"]["arguments"]
