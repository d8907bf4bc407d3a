"""Token usage as a backend reports it, normalised: prompt, completion, cached, cache-write
and reasoning tokens, and an engine's own prefill and decode times.

llama.cpp's llama-server adds a `timings` object beside `usage` (`cache_n`, `prompt_n`,
`prompt_ms`, `predicted_n`, `predicted_ms`); in a stream it rides on the final chunk,
the only usage such a stream carries unless the client asked for `include_usage`. Its
`cache_n` is the cached count when `prompt_tokens_details` is absent (older servers).

Reading usage must not slow the relay: a stream is only scanned for the event that
carries a `usage` object (OpenAI sends `"usage":null` elsewhere) or `timings`, and
that event is decoded (`providers.transport.sse`) and parsed at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from providers.transport.sse import SseDecodeError, SseDecoder

_USAGE_OBJECT = b'"usage":{'
_TIMINGS_OBJECT = b'"timings":{'
_MAX_TAIL_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class Usage:
    """Counts in OpenAI's terms; `None` where the backend does not say.

    `prompt_tokens` counts every input token, cached or not; `cached_tokens` is read from
    `prompt_tokens_details.cached_tokens`, else DeepSeek's `prompt_cache_hit_tokens`;
    `cache_write_tokens` (tokens written to a prompt cache, which Anthropic bills apart)
    from `prompt_tokens_details.cache_write_tokens`, and `reasoning_tokens` (within
    `completion_tokens`) from `completion_tokens_details.reasoning_tokens`. Without
    `usage`, an engine's `timings` give the counts (`cache_n + prompt_n` prompt tokens,
    `predicted_n` completion tokens) and `cache_n` the cached ones.
    """

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None
    cache_write_tokens: int | None = None
    cache_write_1h_tokens: int | None = None
    """Of `cache_write_tokens`, those written with long (1-hour) retention, which Anthropic
    bills higher (`prompt_tokens_details.cache_write_1h_tokens`)."""
    reasoning_tokens: int | None = None
    prefill_ms: float | None = None
    """The engine's own time computing the uncached prompt tokens (`timings.prompt_ms`):
    no network, no queueing. None when the backend does not say."""
    decode_ms: float | None = None
    """The engine's own time generating after the first token (`timings.predicted_ms`)."""


def usage_of(data: Any) -> Usage | None:
    if not isinstance(data, dict):
        return None
    usage, timings = data.get("usage"), data.get("timings")
    timings = timings if isinstance(timings, dict) else {}
    if not isinstance(usage, dict):
        return _usage_of_timings(timings) if timings else None
    details = usage.get("prompt_tokens_details")
    cached = _detail(details, "cached_tokens")
    if cached is None:
        # DeepSeek's own names: hits and misses, which add up to prompt_tokens.
        cached = _detail(usage, "prompt_cache_hit_tokens")
    if cached is None:
        cached = _detail(timings, "cache_n")
    return Usage(
        prompt_tokens=_count(usage, "prompt_tokens"),
        completion_tokens=_count(usage, "completion_tokens"),
        cached_tokens=cached,
        cache_write_tokens=_detail(details, "cache_write_tokens"),
        cache_write_1h_tokens=_detail(details, "cache_write_1h_tokens"),
        reasoning_tokens=_detail(usage.get("completion_tokens_details"), "reasoning_tokens"),
        prefill_ms=_ms(timings, "prompt_ms"),
        decode_ms=_ms(timings, "predicted_ms"),
    )


def _usage_of_timings(timings: dict[str, Any]) -> Usage | None:
    """llama-server's `timings` alone (a stream's final chunk without `include_usage`)."""
    cached, computed = _detail(timings, "cache_n"), _detail(timings, "prompt_n")
    predicted = _detail(timings, "predicted_n")
    if computed is None or predicted is None:
        return None
    return Usage(
        prompt_tokens=(cached or 0) + computed,
        completion_tokens=predicted,
        cached_tokens=cached,
        prefill_ms=_ms(timings, "prompt_ms"),
        decode_ms=_ms(timings, "predicted_ms"),
    )


def _count(usage: dict[str, Any], name: str) -> int:
    """A token count as the backend reports it: a whole number, not negative; anything else
    (a string, a list, a negative number) counts 0 rather than failing the request."""
    value = usage.get(name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return 0


def _detail(details: Any, name: str) -> int | None:
    value = details.get(name) if isinstance(details, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ms(timings: dict[str, Any], name: str) -> float | None:
    value = timings.get(name)
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def usage_from_body(body: bytes, document: object = None) -> Usage | None:
    """The usage of a whole answer; `document` is `body` already parsed, if it was."""
    if _USAGE_OBJECT not in body and b'"usage": {' not in body and _TIMINGS_OBJECT not in body:
        return None
    if isinstance(document, dict):
        return usage_of(document)
    try:
        return usage_of(orjson.loads(body))
    except orjson.JSONDecodeError:
        return None


class UsageTap:
    """Keeps the stream's bytes from the usage event on, for parsing when it ends.

    A `usage` event anchors the tail for good; a `timings` event (llama-server's, on the
    final chunk, or on every chunk with `timings_per_token`) anchors it until a later one
    moves it on, so the tail stays short and the last timings are the ones read.
    """

    __slots__ = ("_on_usage", "_tail")

    def __init__(self) -> None:
        self._tail: bytes | None = None
        self._on_usage = False

    def feed(self, chunk: bytes) -> None:
        if self._on_usage:
            if len(self._tail or b"") < _MAX_TAIL_BYTES:
                self._tail = (self._tail or b"") + chunk
        elif _USAGE_OBJECT in chunk:
            self._on_usage = True
            self._tail = _from_event(chunk, chunk.index(_USAGE_OBJECT))
        elif _TIMINGS_OBJECT in chunk:
            self._tail = _from_event(chunk, chunk.rindex(_TIMINGS_OBJECT))
        elif self._tail is not None and len(self._tail) < _MAX_TAIL_BYTES:
            self._tail += chunk

    def usage(self) -> Usage | None:
        if self._tail is None:
            return None
        marker = _USAGE_OBJECT if self._on_usage else _TIMINGS_OBJECT
        decoder = SseDecoder()
        try:
            events = decoder.feed(self._tail) + decoder.flush()
        except SseDecodeError:
            return None  # a read too long to be events: no usage to read, and no fault of ours
        for data in events:
            if marker in data:
                try:
                    return usage_of(orjson.loads(data))
                except orjson.JSONDecodeError:
                    return None
        return None


def _from_event(chunk: bytes, at: int) -> bytes:
    """`chunk` from the start of the SSE event holding index `at`."""
    return chunk[max(0, chunk.rfind(b"data:", 0, at)) :]
