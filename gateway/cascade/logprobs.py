"""The token log-probabilities of an OpenAI chat answer (`choices[0].logprobs.content[]
.logprob`), from a whole body or from a stream's SSE bytes; bounded, never raising."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import orjson

from providers.transport.sse import SseDecodeError, SseDecoder

MAX_LOGPROBS = 4096
"""Token log-probabilities kept per answer: the first ones."""


def body_logprobs(document: Mapping[str, Any] | None) -> tuple[float, ...]:
    """From a parsed chat-completions body (None or no logprobs: none)."""
    out: list[float] = []
    if document is not None:
        _add(document, out)
    return tuple(out)


def stream_logprobs(data: bytes) -> tuple[float, ...]:
    """From a chat-completions SSE stream's bytes (a whole or a held part)."""
    out: list[float] = []
    decoder = SseDecoder()
    try:
        events = decoder.feed(data) + decoder.flush()
    except SseDecodeError:
        return ()
    for payload in events:
        if len(out) >= MAX_LOGPROBS:
            break
        if not payload or payload == b"[DONE]" or b'"logprobs"' not in payload:
            continue
        try:
            chunk = orjson.loads(payload)
        except orjson.JSONDecodeError:
            continue
        if isinstance(chunk, Mapping):
            _add(chunk, out)
    return tuple(out)


def _add(document: Mapping[str, Any], out: list[float]) -> None:
    choices = document.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return
    logprobs = choices[0].get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not isinstance(content, list):
        return
    for token in content:
        if len(out) >= MAX_LOGPROBS:
            return
        value = token.get("logprob") if isinstance(token, Mapping) else None
        if isinstance(value, int | float) and math.isfinite(value):
            out.append(float(value))
