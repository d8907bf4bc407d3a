"""The engine's requests: what to generate (or embed), whatever format asked, and the one
error every front door raises for a request it refuses.

Each format reads its own requests into these (``wire/openai_request.py``, and the
Anthropic and Gemini doors through their chat form).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

DEFAULT_MAX_TOKENS = 16
"""A text completion's cap when it sets none: OpenAI's legacy default."""
DEFAULT_CHAT_MAX_TOKENS = 4096
"""A chat answer's cap when the request sets none (OpenAI's and Gemini's doors): a real
engine's is what is left of its context; the end-of-sequence draw ends most answers far
earlier."""
# Bounds keep one request from allocating gigabytes of pre-rendered chunks.
MAX_TOKENS_LIMIT = 131_072
MAX_CHOICES = 128
MAX_TOP_LOGPROBS = 20


class BadRequest(Exception):
    """A request the emulator refuses; rendered in the format of the path it came by."""

    def __init__(
        self,
        message: str,
        param: str | None = None,
        *,
        status: int = 400,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.code = code


@dataclass(frozen=True, slots=True)
class Sampling:
    """Fields shared by chat and text completions."""

    n: int
    seed: int | None
    stop: tuple[str, ...]
    stream: bool
    include_usage: bool


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """The function the emulator calls, and the names of every function the request declared."""

    name: str
    parameters: object
    declared: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """What to generate for a chat or text completion request."""

    model: str
    prompts: tuple[str, ...]
    prompt_tokens: tuple[int, ...]
    sampling: Sampling
    max_tokens: int
    top_logprobs: int | None  # None: no logprobs; otherwise how many alternatives
    tool: ToolSpec | None = None
    json_schema: object | None = None
    json_object: bool = False
    thinking_tokens: int = 0  # thinking before the answer, on top of max_tokens
    ignore_eos: bool = False  # vLLM's: the answer runs to exactly max_tokens
    min_tokens: int = 0  # vLLM's: no end-of-sequence before this many tokens


@dataclass(frozen=True, slots=True)
class EmbeddingRequest:
    model: str
    inputs: tuple[str, ...]
    prompt_tokens: int
    dimensions: int | None
    base64: bool


def parse_json_body(raw: bytes) -> dict[str, Any]:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"Request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequest("Request body must be a JSON object.")
    return body


def message_text(message: object) -> str:
    """The text of a chat message: its string content or its text parts, joined."""
    if not isinstance(message, dict):
        raise BadRequest("Each message must be an object.", "messages")
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""
