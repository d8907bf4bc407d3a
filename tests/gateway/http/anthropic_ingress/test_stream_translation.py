"""OpenAI stream chunks into Anthropic stream events, in order, however the bytes split."""

from __future__ import annotations

import pytest

from gateway.http.anthropic_ingress.response_translation import ReplyContext
from gateway.http.anthropic_ingress.stream_translation import MessageEvents
from gateway.http.relay.translated import TranslatedStream
from tests.gateway.http.anthropic_ingress.sse import anthropic_events as events
from tests.gateway.http.openai_chunks import DONE, TEXT_STREAM, call, chunk, feed_in_pieces

CONTEXT = ReplyContext(model="default", stop_sequences=(), prompt_tokens=42)


def translate(stream: bytes, split: int | None = None) -> tuple[TranslatedStream, bytes]:
    return feed_in_pieces(MessageEvents(CONTEXT), stream, split)


@pytest.mark.parametrize("split", [None, 1, 7, 64])
def test_text_stream_in_order_however_split(split: int | None) -> None:
    translator, out = translate(TEXT_STREAM, split)
    seen = events(out)
    assert [kind for kind, _ in seen] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = seen[0][1]["message"]
    assert start["id"] == "msg_chatcmpl-9" and start["model"] == "served"
    assert start["content"] == [] and start["usage"]["input_tokens"] == 42
    assert seen[1][1]["content_block"] == {"type": "text", "text": ""}
    assert [e["delta"]["text"] for _, e in seen[2:4]] == ["Hel", "lo"]
    assert seen[5][1]["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert seen[5][1]["usage"] == {
        "input_tokens": 6,
        "output_tokens": 3,
        "cache_read_input_tokens": 4,
    }
    assert translator.finished and translator.failure is None


def test_thinking_text_and_two_tool_calls_become_blocks_in_order() -> None:
    stream = (
        chunk({"role": "assistant", "content": None, "reasoning_content": "plan"})
        + chunk({"reasoning_content": " more"})
        + chunk({"content": "ok"})
        + chunk(call(0, "", name="read"))
        + chunk(call(0, '{"path":'))
        + chunk(call(0, '"a"}'))
        + chunk(call(1, "{}", name="list"))
        + chunk({}, "tool_calls")
        + DONE
    )
    _, out = translate(stream)
    seen = events(out)
    blocks = [(e["index"], e["content_block"]) for k, e in seen if k == "content_block_start"]
    assert blocks == [
        (0, {"type": "thinking", "thinking": "", "signature": ""}),
        (1, {"type": "text", "text": ""}),
        (2, {"type": "tool_use", "id": "call_0", "name": "read", "input": {}}),
        (3, {"type": "tool_use", "id": "call_1", "name": "list", "input": {}}),
    ]
    deltas = [(e["index"], e["delta"]) for k, e in seen if k == "content_block_delta"]
    assert deltas == [
        (0, {"type": "thinking_delta", "thinking": "plan"}),
        (0, {"type": "thinking_delta", "thinking": " more"}),
        (1, {"type": "text_delta", "text": "ok"}),
        (2, {"type": "input_json_delta", "partial_json": '{"path":'}),
        (2, {"type": "input_json_delta", "partial_json": '"a"}'}),
        (3, {"type": "input_json_delta", "partial_json": "{}"}),
    ]
    stops = [e["index"] for k, e in seen if k == "content_block_stop"]
    assert stops == [0, 1, 2, 3]
    # Each block stops before the next starts.
    kinds = [(k, e.get("index")) for k, e in seen if k.startswith("content_block_s")]
    assert kinds == [
        (k, i) for i in range(4) for k in ("content_block_start", "content_block_stop")
    ]
    message_delta = next(e for k, e in seen if k == "message_delta")
    assert message_delta["delta"]["stop_reason"] == "tool_use"
    assert message_delta["usage"]["output_tokens"] == 7, "estimated: one per chunk with output"


def test_backend_error_event_becomes_an_error_event() -> None:
    error = b'data: {"error": {"message": "engine fell over", "type": "server_error"}}\n\n'
    translator, out = translate(chunk({"content": "a"}) + error + chunk({"content": "late"}))
    seen = events(out)
    assert [k for k, _ in seen][-1] == "error"
    assert seen[-1][1]["error"]["type"] == "api_error"
    # Not quoted: a backend's error may echo the request, and the provider's key with it.
    assert seen[-1][1]["error"]["message"] == "backend ended the stream with an error event"
    assert translator.finished and translator.failure is None
    assert b"late" not in out


def test_unreadable_chunk_sets_failure_after_what_came_before() -> None:
    translator, out = translate(chunk({"content": "a"}) + b"data: {nope\n\n")
    assert [k for k, _ in events(out)] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
    ]
    assert translator.failure is not None and not translator.finished


def test_done_alone_still_makes_a_whole_message() -> None:
    _, out = translate(DONE)
    assert [k for k, _ in events(out)] == ["message_start", "message_delta", "message_stop"]
