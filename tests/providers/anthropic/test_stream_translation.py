"""Anthropic stream events -> OpenAI chunks, fed the way a network delivers them."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from providers.anthropic.error_mapping import ErrorMapper
from providers.anthropic.stream_translation import DONE, StreamTranslator
from providers.errors import UpstreamProtocolError, UpstreamStatusError
from tests.providers.anthropic.fake_anthropic import sse
from tests.providers.anthropic.recorded import (
    MESSAGE_STOP,
    OVERLOADED,
    PING,
    TEXT_STREAM,
    TOOL_STREAM,
    message_delta,
    message_start,
    text_delta,
)


def translator(include_usage: bool = False) -> StreamTranslator:
    return StreamTranslator(
        ErrorMapper("claude-a", "sk-ant-secret"), include_usage=include_usage, created=42
    )


def run(events: list[dict[str, Any]], *, include_usage: bool = False) -> bytes:
    stream = translator(include_usage)
    out = b"".join(stream.feed(piece) for piece in sse(*events))
    assert stream.finished
    return out


def chunks(out: bytes) -> list[dict[str, Any]]:
    """The JSON chunks of an OpenAI stream, checking it is `data:` events ending in [DONE]."""
    events = out.split(b"\n\n")
    assert events[-1] == b"" and events[-2] == b"data: [DONE]"
    assert all(event.startswith(b"data: ") for event in events[:-1])
    return [orjson.loads(event[len(b"data: ") :]) for event in events[:-2]]


def deltas(parsed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [chunk["choices"][0]["delta"] for chunk in parsed if chunk["choices"]]


def test_a_text_stream_with_a_ping() -> None:
    parsed = chunks(run(TEXT_STREAM))
    assert all(
        (c["id"], c["object"], c["created"], c["model"])
        == ("msg_01", "chat.completion.chunk", 42, "claude-test-1")
        for c in parsed
    )
    assert deltas(parsed) == [
        {"role": "assistant", "content": ""},
        {"content": "Hello"},
        {"content": ", world"},
        {},
    ]
    assert [c["choices"][0]["finish_reason"] for c in parsed] == [None, None, None, "stop"]
    assert all("usage" not in c for c in parsed), "usage only when the client asks for it"


def test_thinking_and_tool_calls() -> None:
    parsed = chunks(run(TOOL_STREAM))
    assert deltas(parsed) == [
        {"role": "assistant", "content": ""},
        {"reasoning_content": "Need weather."},
        {"content": "Checking."},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "toolu_01",
                    "type": "function",
                    "function": {"name": "weather", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Pa'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": 'ris"}'}}]},
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "toolu_02",
                    "type": "function",
                    "function": {"name": "time", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]},
        {},
    ]
    assert parsed[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_usage_comes_last_when_asked_for() -> None:
    parsed = chunks(run(TEXT_STREAM, include_usage=True))
    *content, final = parsed
    assert all(c["usage"] is None for c in content)
    assert final["choices"] == []
    assert final["usage"] == {
        "prompt_tokens": 25 + 100 + 10,
        "completion_tokens": 15,
        "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 100, "cache_write_tokens": 10},
    }


def test_message_delta_usage_is_cumulative_and_may_update_the_input() -> None:
    last = message_delta("max_tokens", 9)
    last["usage"] = {"output_tokens": 30, "input_tokens": 26}
    events = [
        message_start(),
        text_delta(0, "a"),
        message_delta("max_tokens", 9),
        last,
        MESSAGE_STOP,
    ]
    parsed = chunks(run(events, include_usage=True))
    finishes = [c["choices"][0]["finish_reason"] for c in parsed if c["choices"]]
    assert finishes == [None, None, "length"], "one finish chunk, from the first stop reason"
    assert parsed[-1]["usage"]["prompt_tokens"] == 26
    assert parsed[-1]["usage"]["completion_tokens"] == 30


def test_a_stream_without_message_delta_still_finishes() -> None:
    parsed = chunks(run([message_start(), text_delta(0, "x"), MESSAGE_STOP]))
    assert parsed[-1]["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize("cut", [1, 2, 3, 5, 11, 64])
def test_any_split_of_the_bytes_translates_the_same(cut: int) -> None:
    """Incremental: reads of any size, cut mid-line or mid-JSON, change nothing."""
    raw = b"".join(sse(*TOOL_STREAM))
    stream = translator()
    out = b"".join(stream.feed(raw[i : i + cut]) for i in range(0, len(raw), cut))
    assert out == run(TOOL_STREAM)


def test_nothing_is_held_back_once_an_event_is_complete() -> None:
    stream = translator()
    first, delta = sse(message_start(), text_delta(0, "Hel"))
    assert stream.feed(first).startswith(b"data: ")
    assert stream.feed(delta[:-1]) == b"", "the event's blank line has not arrived"
    assert b'"content":"Hel"' in stream.feed(delta[-1:])


def test_an_error_event_after_the_200_raises_the_mapped_error() -> None:
    stream = translator()
    stream.feed(b"".join(sse(message_start(), PING, text_delta(0, "partial"))))
    with pytest.raises(UpstreamStatusError) as caught:
        stream.feed(b"".join(sse(OVERLOADED)))
    error = caught.value
    assert (error.upstream_status, error.status, error.retryable) == (529, 502, True)
    assert "overloaded_error" in error.message and "Overloaded" in error.message
    assert error.backend == "claude-a"


def test_what_came_before_an_error_in_the_same_read_is_relayed_first() -> None:
    stream = translator()
    stream.feed(b"".join(sse(message_start())))
    out = stream.feed(b"".join(sse(text_delta(0, "last words"), OVERLOADED, MESSAGE_STOP)))
    assert b'"content":"last words"' in out
    assert not out.endswith(DONE), "nothing after the error is translated"
    with pytest.raises(UpstreamStatusError) as caught:
        stream.raise_failure()
    assert caught.value.upstream_status == 529
    with pytest.raises(UpstreamStatusError):
        stream.feed(b"".join(sse(PING)))


@pytest.mark.parametrize(
    ("events", "says"),
    [
        ([text_delta(0, "x")], "before message_start"),
        (
            [
                message_start(),
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": "{"},
                },
            ],
            "no tool",
        ),
    ],
)
def test_impossible_sequences_are_protocol_errors(events: list[dict[str, Any]], says: str) -> None:
    stream = translator()
    with pytest.raises(UpstreamProtocolError, match=says):
        stream.feed(b"".join(sse(*events)))
        stream.raise_failure()


def test_unreadable_events_are_protocol_errors() -> None:
    with pytest.raises(UpstreamProtocolError, match="unreadable"):
        translator().feed(b"data: {not json\n\n")


def test_pings_before_the_start_and_unknown_events_are_skipped() -> None:
    stream = translator()
    assert stream.feed(b"".join(sse(PING))) == b""
    stream.feed(b"".join(sse(message_start())))
    assert stream.feed(b"".join(sse({"type": "brand_new_event", "x": 1}))) == b""
    assert stream.feed(b'event: ping\r\ndata: {"type": "ping"}\r\n\r\n') == b""


def test_what_follows_message_stop_is_ignored() -> None:
    stream = translator()
    out = stream.feed(b"".join(sse(message_start(), MESSAGE_STOP, text_delta(0, "late"))))
    assert out.endswith(DONE)
    assert b"late" not in out


def test_a_runaway_line_is_a_protocol_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("providers.transport.sse.MAX_PENDING_BYTES", 64)
    stream = translator()
    with pytest.raises(UpstreamProtocolError, match="malformed stream: an event line exceeds 64"):
        stream.feed(b"event: ping\ndata: " + b"x" * 64)
