"""OpenAI stream chunks into the Responses API's events, in order, however the bytes split."""

from __future__ import annotations

import pytest

from gateway.http.relay.translated import TranslatedStream
from gateway.http.responses_ingress.response_translation import reply_context
from gateway.http.responses_ingress.responses_request import parse_responses_request
from gateway.http.responses_ingress.stream_translation import ResponseEvents
from providers.errors import UpstreamTimeout
from tests.gateway.http.openai_chunks import DONE, TEXT_STREAM, call, chunk, feed_in_pieces
from tests.gateway.http.responses_ingress.sse import kinds, response_events

CONTEXT = reply_context(parse_responses_request(b'{"model": "default", "input": "hi"}'), 42)
CREATED = ["response.created", "response.in_progress"]
TEXT_OPEN = ["response.output_item.added", "response.content_part.added"]
TEXT_CLOSE = [
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
]
CALL_CLOSE = ["response.function_call_arguments.done", "response.output_item.done"]
REASONING_OPEN = ["response.output_item.added", "response.reasoning_summary_part.added"]
REASONING_CLOSE = [
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
    "response.output_item.done",
]


def translate(stream: bytes, split: int | None = None) -> tuple[TranslatedStream, bytes]:
    return feed_in_pieces(ResponseEvents(CONTEXT), stream, split)


@pytest.mark.parametrize("split", [None, 1, 7, 64])
def test_text_stream_in_order_however_split(split: int | None) -> None:
    translator, out = translate(TEXT_STREAM, split)
    assert translator.finished and translator.failure is None
    events = response_events(out)
    assert kinds(events) == [
        *CREATED,
        *TEXT_OPEN,
        "response.output_text.delta",
        "response.output_text.delta",
        *TEXT_CLOSE,
        "response.completed",
    ]
    assert events[0]["response"]["status"] == "in_progress"
    assert events[0]["response"]["id"] == CONTEXT.response_id
    item_id = events[2]["item"]["id"]
    assert {e.get("item_id") for e in events[3:-2]} == {item_id}
    assert [e["delta"] for e in events[4:6]] == ["Hel", "lo"]
    assert events[6]["text"] == "Hello" and events[7]["part"]["text"] == "Hello"
    done = events[8]["item"]
    assert done["id"] == item_id and done["status"] == "completed"
    final = events[-1]["response"]
    assert final["status"] == "completed" and final["output"] == [done]
    assert final["usage"] == {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 4},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 13,
    }


def test_reasoning_then_text_then_calls() -> None:
    stream = (
        chunk({"role": "assistant", "reasoning_content": "think"})
        + chunk({"reasoning_content": "ing"})
        + chunk({"content": "Let me check."})
        + chunk(call(0, "", "get_weather"))
        + chunk(call(0, '{"city":'))
        + chunk(call(0, '"Oslo"}'))
        + chunk(call(1, '{"city":"Rome"}', "get_weather"))
        + chunk({}, "tool_calls")
        + DONE
    )
    _, out = translate(stream, 5)
    events = response_events(out)
    assert kinds(events) == [
        *CREATED,
        *REASONING_OPEN,
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        *REASONING_CLOSE,
        *TEXT_OPEN,
        "response.output_text.delta",
        *TEXT_CLOSE,
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        *CALL_CLOSE,
        "response.output_item.added",
        "response.function_call_arguments.delta",
        *CALL_CLOSE,
        "response.completed",
    ]
    final = events[-1]["response"]
    reasoning, message, first, second = final["output"]
    assert reasoning["summary"] == [{"type": "summary_text", "text": "thinking"}]
    assert message["content"][0]["text"] == "Let me check."
    assert (first["call_id"], first["name"], first["arguments"]) == (
        "call_0",
        "get_weather",
        '{"city":"Oslo"}',
    )
    assert second["arguments"] == '{"city":"Rome"}' and second["status"] == "completed"
    assert [e["output_index"] for e in events if e["type"] == "response.output_item.added"] == [
        0,
        1,
        2,
        3,
    ]
    added = next(
        e for e in events if e["type"] == "response.output_item.added" and e["output_index"] == 2
    )
    assert added["item"]["arguments"] == "" and added["item"]["status"] == "in_progress"
    assert final["usage"]["input_tokens"] == 42, "the gateway's estimate without a usage chunk"


def test_whole_calls_at_one_index_stay_apart() -> None:
    whole = [
        {"index": 0, "id": f"call_{n}", "function": {"name": "f", "arguments": "{}"}} for n in "ab"
    ]
    _, out = translate(chunk({"tool_calls": whole}, "tool_calls") + DONE)
    output = response_events(out)[-1]["response"]["output"]
    assert [(item["call_id"], item["arguments"]) for item in output] == [
        ("call_a", "{}"),
        ("call_b", "{}"),
    ]


def test_length_ends_incomplete() -> None:
    _, out = translate(chunk({"content": "cut"}) + chunk({}, "length") + DONE)
    events = response_events(out)
    assert events[-1]["type"] == "response.incomplete"
    final = events[-1]["response"]
    assert final["status"] == "incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["output"][0]["status"] == "incomplete"
    assert events[-2]["item"]["status"] == "incomplete"


def test_an_empty_answer_still_completes() -> None:
    _, out = translate(chunk({"role": "assistant"}, "stop") + DONE)
    assert kinds(response_events(out)) == [*CREATED, "response.completed"]


def test_backend_error_event_fails_the_response() -> None:
    stream = chunk({"content": "par"}) + b'data: {"error": {"message": "engine died"}}\n\n'
    translator, out = translate(stream + chunk({"content": "never"}))
    events = response_events(out)
    assert kinds(events) == [
        *CREATED,
        *TEXT_OPEN,
        "response.output_text.delta",
        "error",
        "response.failed",
    ]
    assert translator.finished
    error, failed = events[-2], events[-1]["response"]
    assert error["code"] == "upstream_stream_error"
    assert "engine died" not in error["message"], "not quoted: it may echo the request's key"
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": "server_error", "message": error["message"]}
    assert failed["output"][0]["status"] == "incomplete"
    assert failed["output"][0]["content"][0]["text"] == "par"


def test_fail_from_outside_and_only_once() -> None:
    translator, out = translate(chunk({"content": "a"}))
    failure = translator.fail(UpstreamTimeout("too slow"))
    events = response_events(out + failure)
    assert kinds(events)[-2:] == ["error", "response.failed"]
    assert events[-2]["code"] == "upstream_timeout"
    assert translator.fail(UpstreamTimeout("again")) == b""
    finished, _ = translate(TEXT_STREAM)
    assert finished.fail(UpstreamTimeout("late")) == b"", "a completed response stays completed"


def test_a_failure_before_any_chunk_still_opens_the_response() -> None:
    events = response_events(
        TranslatedStream(ResponseEvents(CONTEXT)).fail(UpstreamTimeout("slow"))
    )
    assert kinds(events) == [*CREATED, "error", "response.failed"]


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        (chunk({"content": "a"}) + b"data: {not json\n\n", "unreadable stream chunk"),
        (
            chunk(call(0, "{", "f")) + chunk(call(1, "{", "g")) + chunk(call(0, "}")),
            "interleaved",
        ),
    ],
    ids=["unreadable", "interleaved calls"],
)
def test_unreadable_streams_set_failure(stream: bytes, message: str) -> None:
    translator, out = translate(stream)
    assert translator.failure is not None and message in translator.failure.message
    assert not translator.finished
    assert kinds(response_events(out))[:2] == CREATED


def test_kept_text_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gateway.http.responses_ingress.stream_translation.MAX_KEPT_CHARS", 5)
    translator, _ = translate(chunk({"content": "abc"}) + chunk({"content": "def"}))
    assert translator.failure is not None and "exceeds 5 characters" in translator.failure.message
