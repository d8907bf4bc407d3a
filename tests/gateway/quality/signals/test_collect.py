"""The collector on hand-built streams and bodies: shapes real servers send, and bounds."""

from __future__ import annotations

import orjson
import pytest

from gateway.quality.signals.collect import CollectBounds, collect_body, observation_fields
from gateway.quality.signals.observation import Observation, ToolCallSeen
from tests.gateway.quality.streams import (
    DONE,
    chunk,
    collect,
    event,
    split_every,
    text_stream,
    tool_fragment,
    usage_chunk,
)

WORDS = ["Hello", ", wörld", " — ", "こんにちは", "! 🚀", " done."]
TEXT = "".join(WORDS)


def tool_stream() -> list[bytes]:
    """Two parallel calls, streamed as OpenAI does: name first, arguments in fragments."""
    return [
        event(chunk({"role": "assistant", "content": None})),
        event(chunk({"tool_calls": [tool_fragment(0, name="search")]})),
        event(chunk({"tool_calls": [tool_fragment(0, arguments='{"q": "tok')]})),
        event(chunk({"tool_calls": [tool_fragment(0, arguments='yo"}')]})),
        event(chunk({"tool_calls": [tool_fragment(1, name="fetch", arguments='{"url"')]})),
        event(chunk({"tool_calls": [tool_fragment(1, arguments=': "https://a.example/"}')]})),
        event(chunk({}, "tool_calls")),
        event(usage_chunk(prompt=80, completion=31)),
        DONE,
    ]


CALLS = (
    ToolCallSeen("search", '{"q": "tokyo"}'),
    ToolCallSeen("fetch", '{"url": "https://a.example/"}'),
)


def test_text_stream() -> None:
    result = collect(text_stream(WORDS))
    assert result.content == TEXT
    assert (result.finish_reason, result.done, result.malformed, result.error) == (
        "stop",
        True,
        None,
        None,
    )
    assert (result.prompt_tokens, result.completion_tokens, result.cached_tokens) == (12, 6, 4)
    assert not (result.capped or result.content_cut or result.tool_calls)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1000])
@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_split_anywhere_gives_the_same_result(size: int, newline: bytes) -> None:
    whole = b"".join(text_stream(WORDS) + tool_stream()[1:])
    whole = whole.replace(b"\n", newline)
    expected = collect([whole])
    assert collect(split_every(whole, size)) == expected
    assert expected.content == TEXT and expected.tool_calls == CALLS
    assert expected.done and expected.malformed is None


def test_tool_call_fragments_are_assembled_by_index() -> None:
    result = collect(tool_stream())
    assert result.tool_calls == CALLS
    assert (result.content, result.finish_reason, result.completion_tokens) == (
        "",
        "tool_calls",
        31,
    )


@pytest.mark.parametrize(
    ("fragments", "expected"),
    [
        pytest.param(
            [
                {"id": "a", "function": {"name": "f", "arguments": '{"x"'}},
                {"function": {"arguments": ": 1}"}},
                {"id": "b", "function": {"name": "g", "arguments": "{}"}},
            ],
            [("f", '{"x": 1}'), ("g", "{}")],
            id="no-index-new-id-starts-a-call",
        ),
        pytest.param(
            [
                {"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}},
                {"index": 0, "id": "b", "function": {"name": "g", "arguments": "{}"}},
            ],
            [("f", "{}"), ("g", "{}")],
            id="one-index-two-ids",
        ),
        pytest.param(
            [
                {"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"x": '}},
                {"index": 0, "function": {"name": "f", "arguments": "2}"}},
            ],
            [("f", '{"x": 2}')],
            id="name-repeated-not-concatenated",
        ),
        pytest.param(
            [{"index": 0, "id": "a", "function": {"name": "f", "arguments": {"x": 3}}}],
            [("f", '{"x":3}')],
            id="arguments-as-object",
        ),
    ],
)
def test_tool_call_variants(
    fragments: list[dict[str, object]], expected: list[tuple[str, str]]
) -> None:
    stream = [event(chunk({"tool_calls": [fragment]})) for fragment in fragments] + [DONE]
    assert [(call.name, call.arguments) for call in collect(stream).tool_calls] == expected


def test_reasoning_is_kept_apart_from_content() -> None:
    stream = [
        event(chunk({"role": "assistant", "reasoning_content": "Let me think. "})),
        event(chunk({"reasoning": "Hmm.", "reasoning_content": "Hmm."})),  # vLLM sends both
        event(chunk({"content": "42"}, "stop")),
        DONE,
    ]
    result = collect(stream)
    assert (result.reasoning, result.content) == ("Let me think. Hmm.", "42")


def test_legacy_completions_stream() -> None:
    def piece(text: str, finish: str | None = None) -> bytes:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
        return event({"object": "text_completion", "choices": [choice], "usage": None})

    result = collect([piece("been "), piece("how "), piece("", "length"), DONE])
    assert (result.content, result.finish_reason, result.done) == ("been how ", "length", True)


def test_other_choices_are_ignored() -> None:
    stream = [event(chunk({"content": "zero"})), event(chunk({"content": "one"}, index=1)), DONE]
    assert collect(stream).content == "zero"


def test_comments_keep_alives_and_other_fields_are_ignored() -> None:
    stream = [
        b": keep-alive\n\n",
        b"event: message\nid: 1\nretry: 1000\n",
        event(chunk({"content": "hi"})),
        b":\n\n",
        DONE,
    ]
    result = collect(stream)
    assert (result.content, result.done, result.malformed) == ("hi", True, None)


def test_data_split_over_several_lines_is_one_event() -> None:
    payload = orjson.dumps(chunk({"content": "multi"}), option=orjson.OPT_INDENT_2)
    lines = b"".join(b"data: " + line + b"\n" for line in payload.split(b"\n"))
    assert collect([lines, b"\n", DONE]).content == "multi"


@pytest.mark.parametrize(
    ("error_event", "expected"),
    [
        pytest.param(
            event({"error": {"message": "upstream overloaded", "type": "server_error"}}),
            "server_error: upstream overloaded",
            id="openai-shape",
        ),
        pytest.param(event({"error": "boom"}), "boom", id="string"),
        pytest.param(
            b"event: error\n" + event({"message": "bad gateway"}), "bad gateway", id="event-name"
        ),
    ],
)
def test_error_event(error_event: bytes, expected: str) -> None:
    result = collect([event(chunk({"content": "par"})), error_event])
    assert (result.error, result.content, result.done, result.malformed) == (
        expected,
        "par",
        False,
        None,
    )


def test_stream_without_done() -> None:
    result = collect(text_stream(WORDS)[:-1])
    assert (result.done, result.finish_reason, result.content) == (False, "stop", TEXT)


def test_stream_cut_inside_the_last_event_is_not_malformed() -> None:
    whole = b"".join(text_stream(WORDS)[:3])
    result = collect([whole[:-9]])
    assert (result.content, result.done, result.malformed) == ("Hello", False, None)


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        pytest.param(b'data: {"choices": [\n\n', "bad JSON in the data of event 2", id="json"),
        pytest.param(b"data: [1, 2]\n\n", "a JSON list, not an object", id="not-object"),
    ],
)
def test_malformed_data_is_reported_and_the_rest_kept(bad: bytes, fragment: str) -> None:
    stream = [event(chunk({"content": "a"})), bad, event(chunk({"content": "b"}, "stop")), DONE]
    result = collect(stream)
    assert result.malformed is not None and fragment in result.malformed
    assert (result.content, result.finish_reason, result.done) == ("ab", "stop", True)


def test_empty_stream() -> None:
    result = collect([])
    assert (result.content, result.done, result.malformed, result.bytes_seen) == (
        "",
        False,
        None,
        0,
    )


def test_content_bound() -> None:
    bounds = CollectBounds(max_content_chars=10)
    result = collect(text_stream(["0123456", "789abc", "def"]), bounds)
    assert (result.content, result.content_cut, result.done) == ("0123456789", True, True)


def test_tool_call_bounds() -> None:
    bounds = CollectBounds(max_tool_calls=1, max_argument_chars=8)
    result = collect(tool_stream(), bounds)
    assert result.tool_calls == (ToolCallSeen("search", '{"q": "t', arguments_cut=True),)
    assert result.tool_calls_cut


def test_byte_cap_keeps_the_start_and_the_tail() -> None:
    words = [f"w{i} " for i in range(3000)]
    stream = text_stream(words, finish="length")
    bounds = CollectBounds(max_bytes=64 * 1024, tail_bytes=1024)
    result = collect(stream, bounds)
    assert result.capped and result.bytes_seen == sum(map(len, stream))
    assert result.content.startswith("w0 w1 w2 ") and len(result.content) < 3000
    assert result.content == "".join(words)[: len(result.content)]
    # The facts that arrive last still come through the rolling tail.
    assert (result.finish_reason, result.completion_tokens, result.done) == ("length", 3000, True)
    assert result.malformed is None


def test_one_huge_chunk_past_the_cap() -> None:
    stream = b"".join(text_stream([f"w{i} " for i in range(3000)]))
    result = collect([stream], CollectBounds(max_bytes=4096, tail_bytes=512))
    assert result.capped and result.done and result.finish_reason == "stop"


BODY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c0",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"q": "tokyo"}'},
                    },
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "fetch", "arguments": '{"url": "https://a.example/"}'},
                    },
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 80, "completion_tokens": 31, "prompt_cache_hit_tokens": 64},
}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            BODY,
            {"tool_calls": CALLS, "finish_reason": "tool_calls", "cached_tokens": 64},
            id="chat-tool-calls",
        ),
        pytest.param(
            {
                "choices": [
                    {
                        "index": 0,
                        "message": {"content": "Paris.", "reasoning_content": "Capital."},
                        "finish_reason": "stop",
                    }
                ]
            },
            {"content": "Paris.", "reasoning": "Capital.", "finish_reason": "stop"},
            id="chat-text",
        ),
        pytest.param(
            {"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"text": "b"}]}}]},
            {"content": "ab"},
            id="content-parts",
        ),
        pytest.param(
            {"object": "text_completion", "choices": [{"text": "x y", "finish_reason": "length"}]},
            {"content": "x y", "finish_reason": "length"},
            id="completions",
        ),
        pytest.param(
            {"error": {"message": "no such model", "type": "invalid_request_error"}},
            {"error": "invalid_request_error: no such model"},
            id="error",
        ),
    ],
)
def test_collect_body(body: dict[str, object], expected: dict[str, object]) -> None:
    result = collect_body(orjson.dumps(body))
    assert {name: getattr(result, name) for name in expected} == expected
    assert result.done and result.malformed is None


@pytest.mark.parametrize("body", [b"", b"<html>502 Bad Gateway</html>", b'{"choices": [', b"[]"])
def test_malformed_body(body: bytes) -> None:
    result = collect_body(body)
    assert result.malformed is not None and result.malformed.startswith("response body is not")
    assert not result.done and result.content == ""


def test_plain_json_error_sent_instead_of_a_stream() -> None:
    body = b'{"error": {"message": "model overloaded", "type": "server_error"}}'
    result = collect(split_every(body, 10))
    assert (result.error, result.malformed) == ("server_error: model overloaded", None)


def test_observation_fields() -> None:
    result = collect(tool_stream())
    observation = Observation(
        backend="b", model="m", at=1.0, outcome="ok", **observation_fields(result)
    )
    assert observation.tool_calls == CALLS
    assert (observation.finish_reason, observation.prompt_tokens_reported) == ("tool_calls", 80)
    assert not observation.inspected_bytes_capped
    cut = collect(text_stream(["0123456789"]), CollectBounds(max_content_chars=4))
    assert observation_fields(cut)["inspected_bytes_capped"]
