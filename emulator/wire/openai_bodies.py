"""OpenAI wire format of emulator responses: JSON bodies and pre-serialised SSE events."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from emulator.content.generation import ChoiceOutput
from emulator.content.text import token_logprob, top_alternatives

SYSTEM_FINGERPRINT = "fp_switchyard_emulator"
DONE_EVENT = b"data: [DONE]\n\n"
_CHOICE_MARK = "__switchyard_choice__"

Json = dict[str, Any]
# Bytes, or a function rendering them when due (a body whose usage is known only then).
Payload = bytes | Callable[[], bytes]


@dataclass(frozen=True, slots=True)
class ResponseMeta:
    """Fields every body and chunk of one response repeats."""

    id: str
    object: str
    created: int
    model: str

    @classmethod
    def new(cls, prefix: str, object_name: str, model: str) -> ResponseMeta:
        return cls(f"{prefix}-{secrets.token_hex(12)}", object_name, int(time.time()), model)

    def head(self) -> Json:
        return {
            "id": self.id,
            "object": self.object,
            "created": self.created,
            "model": self.model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
        }


def usage(
    prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0, written_tokens: int = 0
) -> Json:
    """OpenAI's usage; `written_tokens` (a prompt cache's writes, which OpenAI does not
    report) appear as `cache_write_tokens` only when there are any."""
    details: Json = {"cached_tokens": cached_tokens}
    if written_tokens:
        details["cache_write_tokens"] = written_tokens
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": details,
    }


def error_body(message: str, error_type: str, param: str | None, code: str | None) -> bytes:
    return orjson.dumps(
        {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    )


def chat_body(
    meta: ResponseMeta, choices: list[ChoiceOutput], top_logprobs: int | None, usage_: Json
) -> bytes:
    rendered = [
        {
            "index": choice.index,
            "message": _chat_message(choice),
            "logprobs": _chat_logprobs(choice, top_logprobs),
            "finish_reason": choice.finish_reason,
        }
        for choice in choices
    ]
    return orjson.dumps({**meta.head(), "choices": rendered, "usage": usage_})


def completion_body(
    meta: ResponseMeta, choices: list[ChoiceOutput], top_logprobs: int | None, usage_: Json
) -> bytes:
    rendered = [
        {
            "index": choice.index,
            "text": "".join(choice.pieces),
            "logprobs": _completion_logprobs(choice, top_logprobs),
            "finish_reason": choice.finish_reason,
        }
        for choice in choices
    ]
    return orjson.dumps({**meta.head(), "choices": rendered, "usage": usage_})


def embeddings_body(model: str, vectors: list[Any], prompt_tokens: int) -> bytes:
    data = [
        {"object": "embedding", "index": index, "embedding": vector}
        for index, vector in enumerate(vectors)
    ]
    tokens = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}
    return orjson.dumps({"object": "list", "data": data, "model": model, "usage": tokens})


def _chat_message(choice: ChoiceOutput) -> Json:
    """The assistant's message; reasoning, when it reasoned, as vLLM's
    ``reasoning_content``."""
    text = "".join(choice.answer)
    message: Json = {"role": "assistant", "content": text, "refusal": None}
    if choice.tool_call is not None:
        call = {
            "id": choice.tool_call.id,
            "type": "function",
            "function": {"name": choice.tool_call.name, "arguments": text},
        }
        message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [call]}
    if choice.thinking_pieces:
        message["reasoning_content"] = "".join(choice.thinking)
    return message


def with_reasoning_tokens(usage_: Json, choices: list[ChoiceOutput]) -> Json:
    """Usage with ``completion_tokens_details.reasoning_tokens`` when any choice reasoned
    (``completion_tokens`` already holds them); unchanged otherwise."""
    reasoning = sum(choice.thinking_pieces for choice in choices)
    if not reasoning:
        return usage_
    return {**usage_, "completion_tokens_details": {"reasoning_tokens": reasoning}}


def _chat_logprobs(choice: ChoiceOutput, top_logprobs: int | None) -> Json | None:
    if top_logprobs is None or choice.tool_call is not None:
        return None
    return {
        "content": [
            chat_logprob(piece, top_logprobs, choice.logprob_salt) for piece in choice.answer
        ],
        "refusal": None,
    }


def chat_logprob(token: str, top_logprobs: int, salt: bytes = b"") -> Json:
    alternatives = [
        {"token": text, "logprob": logprob, "bytes": list(text.encode())}
        for text, logprob in top_alternatives(token, top_logprobs, salt)
    ]
    return {
        "token": token,
        "logprob": token_logprob(token, salt),
        "bytes": list(token.encode()),
        "top_logprobs": alternatives,
    }


def _completion_logprobs(choice: ChoiceOutput, top_logprobs: int | None) -> Json | None:
    if top_logprobs is None:
        return None
    return legacy_logprobs(choice.pieces, top_logprobs, salt=choice.logprob_salt)


def legacy_logprobs(
    pieces: list[str], top_logprobs: int, start_offset: int = 0, salt: bytes = b""
) -> Json:
    offsets: list[int] = []
    position = start_offset
    for piece in pieces:
        offsets.append(position)
        position += len(piece)
    return {
        "tokens": list(pieces),
        "token_logprobs": [token_logprob(piece, salt) for piece in pieces],
        "top_logprobs": [dict(top_alternatives(piece, top_logprobs, salt)) for piece in pieces],
        "text_offset": offsets,
    }


class ChunkFrame:
    """Serialises the constant part of a chunk once; each event only dumps its choice."""

    def __init__(self, meta: ResponseMeta, include_usage: bool) -> None:
        self._head = meta.head()
        frame: Json = {**self._head, "choices": [_CHOICE_MARK]}
        if include_usage:
            frame["usage"] = None
        before, after = orjson.dumps(frame).rsplit(f'"{_CHOICE_MARK}"'.encode(), 1)
        self._prefix = b"data: " + before
        self._suffix = after + b"\n\n"

    def event(self, choice: Json) -> bytes:
        return self._prefix + orjson.dumps(choice) + self._suffix

    def usage_event(self, usage_: Json) -> bytes:
        return b"data: " + orjson.dumps({**self._head, "choices": [], "usage": usage_}) + b"\n\n"


def error_event(message: str) -> bytes:
    return b"data: " + error_body(message, "server_error", None, "emulated_stream_error") + b"\n\n"
