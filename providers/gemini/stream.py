"""Gemini's `streamGenerateContent?alt=sse` as OpenAI's `chat.completion.chunk` stream.

Each Gemini event is translated as it arrives: a role chunk first, then one chunk per
part (text, thought, whole function call), a finish chunk when Gemini gives its reason,
and at the end a usage chunk (when the client asked for one) and `[DONE]`. An error
event, or a stream that stops before Gemini finished, raises from `rest()`, so the relay
ends with an error event rather than a silent truncation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from time import time
from typing import Any

import orjson
from pydantic import ValidationError

from providers.base import UpstreamStream
from providers.gemini.errors import GeminiErrors
from providers.gemini.gemini_wire import GenerateContentResponse, UsageMetadata
from providers.gemini.response import completion_id, finish_reason, openai_usage, part_delta
from providers.translated_stream import TranslatedStream
from providers.transport.sse import SseDecodeError, SseDecoder

DONE = b"data: [DONE]\n\n"


class StreamTranslator:
    """The OpenAI chunks for each piece of a Gemini event stream, in order."""

    def __init__(self, model: str, include_usage: bool, errors: GeminiErrors) -> None:
        self._model = model
        self._include_usage = include_usage
        self._errors = errors
        self._events = SseDecoder()
        self._created = int(time())
        self._id: str | None = None
        self._tool_calls = 0
        self._finished = False
        self._usage: UsageMetadata | None = None

    def feed(self, raw: bytes) -> bytes:
        try:
            events = self._events.feed(raw)
        except SseDecodeError as exc:
            raise self._errors.malformed(f"a malformed stream: {exc}") from None
        return self._translate_all(events)

    def end(self) -> bytes:
        """The closing chunks; raises if Gemini stopped before giving a finish reason."""
        tail = self._translate_all(self._events.flush())
        if not self._finished:
            raise self._errors.malformed("a stream that ended before it finished")
        if self._include_usage and self._usage is not None:
            tail += self._sse({"choices": [], "usage": openai_usage(self._usage)})
        return tail + DONE

    def _translate_all(self, events: list[bytes]) -> bytes:
        # An event of blank data says nothing (and is no JSON to fail on).
        return b"".join(self._translate(data) for data in events if data.strip())

    def _translate(self, data: bytes) -> bytes:
        response = self._decode(data)
        chunks = []
        if self._id is None:
            self._id = completion_id(response)
            chunks.append(self._chunk({"role": "assistant", "content": ""}))
        if response.usage_metadata is not None:
            self._usage = response.usage_metadata
        candidate = response.candidate
        for part in candidate.parts if candidate is not None else []:
            delta = part_delta(part, self._tool_calls)
            if delta is not None:
                if "tool_calls" in delta:
                    self._tool_calls += 1
                chunks.append(self._chunk(delta))
        reason = "content_filter" if response.blocked else None
        if candidate is not None:
            reason = finish_reason(candidate.finish_reason, self._tool_calls > 0)
        if reason is not None and not self._finished:
            self._finished = True
            chunks.append(self._chunk({}, reason))
        return b"".join(chunks)

    def _decode(self, data: bytes) -> GenerateContentResponse:
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise self._errors.malformed("an unreadable stream event") from None
        if isinstance(payload, dict) and "error" in payload:
            raise self._errors.for_stream_event(payload["error"])
        try:
            return GenerateContentResponse.model_validate(payload)
        except ValidationError:
            raise self._errors.malformed("a stream event of an unknown shape") from None

    def _chunk(self, delta: dict[str, Any], reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}
        return self._sse({"choices": [choice]})

    def _sse(self, fields: dict[str, Any]) -> bytes:
        chunk = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            **fields,
        }
        return b"data: " + orjson.dumps(chunk) + b"\n\n"


class GeminiStream(TranslatedStream):
    """An UpstreamStream of OpenAI chunks over the raw Gemini stream under it."""

    def __init__(self, raw: UpstreamStream, translator: StreamTranslator) -> None:
        super().__init__(raw)
        self._translator = translator
        self._ended = False

    async def start(self) -> None:
        out = self._translator.feed(self._raw.first_chunk)
        while not out:
            raw = await anext(self._raw_rest, None)
            if raw is None:
                self._ended = True
                out = self._translator.end()
            else:
                out = self._translator.feed(raw)
        self.first_chunk = out

    async def rest(self) -> AsyncIterator[bytes]:
        if self._ended:
            return
        async for raw in self._raw_rest:
            out = self._translator.feed(raw)
            if out:
                yield out
        self._ended = True
        yield self._translator.end()
