"""A backend's OpenAI stream chunks, and a translated stream fed them in pieces: for the
translating ingresses' stream tests."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.http.relay.translated import ClientEvents, TranslatedStream

DONE = b"data: [DONE]\n\n"
USAGE = {"prompt_tokens": 10, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 4}}


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> bytes:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    body = {"id": "chatcmpl-9", "model": "served", "choices": choices, **extra}
    return b"data: " + orjson.dumps(body) + b"\n\n"


def call(index: int, arguments: str, name: str | None = None) -> dict[str, Any]:
    head = {"id": f"call_{index}", "type": "function"} if name else {}
    function = {"name": name, "arguments": arguments} if name else {"arguments": arguments}
    return {"tool_calls": [{"index": index, **head, "function": function}]}


TEXT_STREAM = (
    chunk({"role": "assistant", "content": ""})
    + chunk({"content": "Hel"})
    + chunk({"content": "lo"})
    + chunk({}, "stop")
    + chunk(None, usage=USAGE)
    + DONE
)
"""The text "Hello", its stop, then the usage chunk: 10 prompt tokens (4 cached), 3 out."""


def feed_in_pieces(
    events: ClientEvents, stream: bytes, split: int | None = None
) -> tuple[TranslatedStream, bytes]:
    """The stream's translation with `events`, fed `split` bytes at a time (all at once by
    default), and all it returned."""
    translator = TranslatedStream(events)
    step = split or len(stream)
    out = b"".join(translator.feed(stream[i : i + step]) for i in range(0, len(stream), step))
    return translator, out
