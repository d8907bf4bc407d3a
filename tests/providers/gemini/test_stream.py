"""Gemini SSE sequences (recorded-style) as OpenAI chunk streams, including broken ones."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from providers.errors import UpstreamError, UpstreamProtocolError, UpstreamStatusError
from providers.gemini.errors import GeminiErrors
from providers.gemini.stream import GeminiStream, StreamTranslator
from tests.providers.gemini.fake_gemini import sse

USAGE_1 = {"promptTokenCount": 10, "totalTokenCount": 22, "thoughtsTokenCount": 12}
USAGE_END = {
    "promptTokenCount": 10,
    "candidatesTokenCount": 3,
    "cachedContentTokenCount": 4,
    "thoughtsTokenCount": 12,
    "totalTokenCount": 25,
}


def event(*parts: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-2.5-flash", **extra}


THINK_THEN_ANSWER = sse(
    event({"text": "Pondering.", "thought": True}, usageMetadata=USAGE_1, responseId="r1"),
    event({"text": "Hello"}, usageMetadata=USAGE_1, responseId="r1"),
    event({"text": " there"}, finish="STOP", usageMetadata=USAGE_END, responseId="r1"),
)
CALLS = sse(
    event(
        {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}, "thoughtSignature": "c2ln"},
        {"functionCall": {"name": "now", "args": {}}},
        finish="STOP",
        usageMetadata=USAGE_END,
    ),
)


def translator(include_usage: bool = False) -> StreamTranslator:
    return StreamTranslator("gemini-2.5-flash", include_usage, GeminiErrors("g", "KEY-123"))


def chunks_of(data: bytes) -> list[Any]:
    """Each SSE event's JSON, with "[DONE]" kept as the string."""
    events = [e for e in data.split(b"\n\n") if e]
    assert all(e.startswith(b"data: ") for e in events)
    return [e[6:].decode() if e == b"data: [DONE]" else orjson.loads(e[6:]) for e in events]


def deltas(chunks: list[Any]) -> list[tuple[dict[str, Any], str | None]]:
    return [
        (c["choices"][0]["delta"], c["choices"][0]["finish_reason"])
        for c in chunks
        if isinstance(c, dict) and c["choices"]
    ]


def translate(pieces: list[bytes], include_usage: bool = False) -> list[Any]:
    t = translator(include_usage)
    return chunks_of(b"".join(t.feed(p) for p in pieces) + t.end())


def test_thoughts_then_text_then_finish() -> None:
    chunks = translate(THINK_THEN_ANSWER)
    assert deltas(chunks) == [
        ({"role": "assistant", "content": ""}, None),
        ({"reasoning_content": "Pondering."}, None),
        ({"content": "Hello"}, None),
        ({"content": " there"}, None),
        ({}, "stop"),
    ]
    assert chunks[-1] == "[DONE]"
    first = chunks[0]
    assert (first["id"], first["object"], first["model"]) == (
        "chatcmpl-r1",
        "chat.completion.chunk",
        "gemini-2.5-flash",
    )
    assert {c["id"] for c in chunks[:-1]} == {"chatcmpl-r1"}
    assert not any("usage" in c for c in chunks[:-1]), "no usage chunk unless asked"


def test_usage_chunk_when_the_client_asked_for_it() -> None:
    chunks = translate(THINK_THEN_ANSWER, include_usage=True)
    usage_chunk = chunks[-2]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"] == {
        "prompt_tokens": 10,
        "completion_tokens": 15,
        "total_tokens": 25,
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 12},
    }
    assert chunks[-1] == "[DONE]"


def test_function_calls_stream_whole_with_indexes_and_finish_as_tool_calls() -> None:
    found = deltas(translate(CALLS))
    calls = [d["tool_calls"][0] for d, _ in found if "tool_calls" in d]
    assert [c["index"] for c in calls] == [0, 1]
    assert [c["function"] for c in calls] == [
        {"name": "weather", "arguments": '{"city":"Oslo"}'},
        {"name": "now", "arguments": "{}"},
    ]
    assert all(c["id"].startswith("call_") and c["type"] == "function" for c in calls)
    assert calls[0]["extra_content"] == {"google": {"thought_signature": "c2ln"}}
    assert found[-1] == ({}, "tool_calls")


@pytest.mark.parametrize(
    ("reason", "openai"), [("MAX_TOKENS", "length"), ("SAFETY", "content_filter")]
)
def test_finish_reasons_in_streams(reason: str, openai: str) -> None:
    found = deltas(translate(sse(event({"text": "a"}), event(finish=reason))))
    assert found[-1] == ({}, openai)


def test_a_blocked_prompt_ends_with_content_filter() -> None:
    found = deltas(translate(sse({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})))
    assert found[-1] == ({}, "content_filter")


def test_events_split_anywhere_across_reads_translate_the_same() -> None:
    whole = b"".join(THINK_THEN_ANSWER)
    bytewise = [whole[i : i + 7] for i in range(0, len(whole), 7)]
    assert deltas(translate(bytewise)) == deltas(translate(THINK_THEN_ANSWER))


def test_a_runaway_event_is_a_malformed_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("providers.transport.sse.MAX_PENDING_BYTES", 64)
    t = translator()
    with pytest.raises(UpstreamProtocolError, match="malformed stream: an event's data exceeds"):
        t.feed(b"data: " + b"x" * 64 + b"\n")


@pytest.mark.parametrize(
    ("error", "status", "retryable"),
    [
        ({"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}, 429, True),
        ({"code": 503, "message": "Overloaded", "status": "UNAVAILABLE"}, 502, True),
        ({"code": 500, "message": "Internal", "status": "INTERNAL"}, 502, True),
        ({"code": 400, "message": "Bad", "status": "INVALID_ARGUMENT"}, 400, False),
    ],
)
def test_an_error_event_mid_stream_raises_its_mapped_error(
    error: dict[str, Any], status: int, retryable: bool
) -> None:
    t = translator()
    out = t.feed(THINK_THEN_ANSWER[0])
    assert deltas(chunks_of(out))[1] == ({"reasoning_content": "Pondering."}, None)
    with pytest.raises(UpstreamStatusError) as caught:
        t.feed(sse({"error": error})[0])
    assert (caught.value.status, caught.value.retryable) == (status, retryable)


@pytest.mark.parametrize(
    "pieces",
    [
        THINK_THEN_ANSWER[:2],
        [*THINK_THEN_ANSWER[:1], b"data: {not json\r\n\r\n"],
        [b'data: {"candidates": 7}\r\n\r\n'],
    ],
    ids=["ended-before-finishing", "unreadable-event", "unknown-shape"],
)
def test_a_broken_stream_is_a_protocol_error(pieces: list[bytes]) -> None:
    t = translator()
    with pytest.raises(UpstreamProtocolError):
        for piece in pieces:
            t.feed(piece)
        t.end()


class RawStream:
    """An in-memory UpstreamStream of raw bytes that remembers being closed."""

    content_type = "text/event-stream"
    rate_limit = None

    def __init__(self, pieces: list[bytes], error: UpstreamError | None = None) -> None:
        self.first_chunk, self._rest, self._error = pieces[0], pieces[1:], error
        self.closed = False

    async def rest(self) -> AsyncIterator[bytes]:
        for piece in self._rest:
            yield piece
        if self._error is not None:
            raise self._error

    async def aclose(self) -> None:
        self.closed = True


async def test_the_first_chunk_waits_for_a_whole_event() -> None:
    whole = b"".join(THINK_THEN_ANSWER)
    raw = RawStream([whole[:5], whole[5:40], whole[40:]])
    stream = GeminiStream(raw, translator())
    await stream.start()
    assert deltas(chunks_of(stream.first_chunk))[0] == ({"role": "assistant", "content": ""}, None)
    rest = b"".join([chunk async for chunk in stream.rest()])
    assert chunks_of(stream.first_chunk + rest)[-1] == "[DONE]"
    await stream.aclose()
    assert raw.closed


async def test_a_transport_error_after_the_start_comes_out_of_rest() -> None:
    raw = RawStream(THINK_THEN_ANSWER[:2], UpstreamProtocolError("reset", backend="g"))
    stream = GeminiStream(raw, translator())
    await stream.start()
    with pytest.raises(UpstreamProtocolError):
        async for _ in stream.rest():
            pass


async def test_a_stream_that_ends_before_any_event_fails_at_the_start() -> None:
    stream = GeminiStream(RawStream([b": keep-alive\r\n\r\n"]), translator())
    with pytest.raises(UpstreamProtocolError):
        await stream.start()
