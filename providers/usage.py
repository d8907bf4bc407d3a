"""Token usage as a backend reports it, normalised: prompt, completion, cached, cache-write
and reasoning tokens.

Reading usage must not slow the relay: a stream is only scanned for the one event that
carries a `usage` object (OpenAI sends `"usage":null` elsewhere), and parsed at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

_USAGE_OBJECT = b'"usage":{'
_MAX_TAIL_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class Usage:
    """Counts in OpenAI's terms; `None` where the backend does not say.

    `prompt_tokens` counts every input token, cached or not; `cached_tokens` is read from
    `prompt_tokens_details.cached_tokens`, else DeepSeek's `prompt_cache_hit_tokens`;
    `cache_write_tokens` (tokens written to a prompt cache, which Anthropic bills apart)
    from `prompt_tokens_details.cache_write_tokens`, and `reasoning_tokens` (within
    `completion_tokens`) from `completion_tokens_details.reasoning_tokens`.
    """

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None


def usage_of(data: Any) -> Usage | None:
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    cached = _detail(details, "cached_tokens")
    if cached is None:
        # DeepSeek's own names: hits and misses, which add up to prompt_tokens.
        cached = _detail(usage, "prompt_cache_hit_tokens")
    return Usage(
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cached_tokens=cached,
        cache_write_tokens=_detail(details, "cache_write_tokens"),
        reasoning_tokens=_detail(usage.get("completion_tokens_details"), "reasoning_tokens"),
    )


def _detail(details: Any, name: str) -> int | None:
    value = details.get(name) if isinstance(details, dict) else None
    return value if isinstance(value, int) else None


def usage_from_body(body: bytes) -> Usage | None:
    if _USAGE_OBJECT not in body and b'"usage": {' not in body:
        return None
    try:
        return usage_of(orjson.loads(body))
    except orjson.JSONDecodeError:
        return None


class UsageTap:
    """Keeps the stream's bytes from the usage event on, for parsing when it ends."""

    __slots__ = ("_tail",)

    def __init__(self) -> None:
        self._tail: bytes | None = None

    def feed(self, chunk: bytes) -> None:
        if self._tail is not None:
            if len(self._tail) < _MAX_TAIL_BYTES:
                self._tail += chunk
        elif _USAGE_OBJECT in chunk:
            self._tail = chunk[chunk.rfind(b"data:", 0, chunk.index(_USAGE_OBJECT)) :]

    def usage(self) -> Usage | None:
        if self._tail is None:
            return None
        for line in self._tail.split(b"\n"):
            if line.startswith(b"data:") and _USAGE_OBJECT in line:
                try:
                    return usage_of(orjson.loads(line[5:]))
                except orjson.JSONDecodeError:
                    return None
        return None
