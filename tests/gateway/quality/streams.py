"""Builders of realistic OpenAI SSE streams and bodies for the collector's tests."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from gateway.quality.signals.collect import CollectBounds, CollectedResponse, StreamCollector


def event(payload: Any, *, newline: bytes = b"\n") -> bytes:
    data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    return b"data: " + data + newline + newline


DONE = b"data: [DONE]\n\n"


def chunk(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": None,
    }


def usage_chunk(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def text_stream(words: Iterable[str], finish: str = "stop") -> list[bytes]:
    """A chat stream: role chunk, one content chunk per word, finish chunk, usage, [DONE]."""
    events = [event(chunk({"role": "assistant", "content": ""}))]
    pieces = list(words)
    events += [event(chunk({"content": piece})) for piece in pieces]
    events.append(event(chunk({}, finish)))
    events.append(event(usage_chunk(prompt=12, completion=len(pieces), cached=4)))
    events.append(DONE)
    return events


def tool_fragment(
    index: int, *, name: str | None = None, arguments: str = "", call_id: str | None = None
) -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if name is not None:
        fragment["id"] = call_id or f"call_{index}"
        fragment["type"] = "function"
        fragment["function"]["name"] = name
    return fragment


def collect(parts: Iterable[bytes], bounds: CollectBounds | None = None) -> CollectedResponse:
    collector = StreamCollector(bounds)
    for part in parts:
        collector.feed(part)
    return collector.finish()


def split_every(data: bytes, size: int) -> Iterator[bytes]:
    """The bytes in pieces of `size`, cutting events, lines and UTF-8 sequences anywhere."""
    for start in range(0, len(data), size):
        yield data[start : start + size]
