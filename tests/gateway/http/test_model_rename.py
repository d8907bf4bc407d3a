"""The upstream model id becomes the route's public name in whole bodies and in streams cut
into chunks anywhere."""

from __future__ import annotations

import orjson
import pytest

from gateway.http.model_rename import (
    StreamRenamer,
    renamed_response,
    stream_renamer,
)
from providers.base import UpstreamResponse

UPSTREAM = "Qwen/Qwen2.5-7B-Instruct-Turbo"


def event(model: str, content: str, **extra: object) -> bytes:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "model": model, **extra}
    chunk["choices"] = [{"index": 0, "delta": {"content": content}}]
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


STREAM = (
    event(UPSTREAM, "Hello")
    + event(UPSTREAM, ' a "model": "x" in text', usage=None)
    + b": keep-alive\n\n"
    + event(UPSTREAM, "\\n done")
    + b"data: [DONE]\n\n"
)
EXPECTED = STREAM.replace(b'"model":"' + UPSTREAM.encode() + b'"', b'"model":"qwen"')


@pytest.mark.parametrize("size", [1, 2, 3, 7, 16, 31, 64, len(STREAM)])
def test_a_stream_cut_anywhere_is_renamed_exactly(size: int) -> None:
    renamer = StreamRenamer("qwen")
    pieces = [STREAM[i : i + size] for i in range(0, len(STREAM), size)]
    out = b"".join(renamer.feed(piece) for piece in pieces) + renamer.flush()
    assert out == EXPECTED
    assert out.count(b'"model":"qwen"') == 3


def test_bytes_after_the_field_are_not_held_back() -> None:
    renamer = StreamRenamer("qwen")
    first = event(UPSTREAM, "Hello")
    cut = first.index(UPSTREAM.encode()) + len(UPSTREAM) + 5  # just past the field
    head, tail = first[:cut], first[cut:]
    assert renamer.feed(head) == head.replace(UPSTREAM.encode(), b"qwen")
    assert renamer.feed(tail) == tail


def test_a_line_without_the_field_is_held_only_until_its_newline() -> None:
    renamer = StreamRenamer("qwen")
    assert renamer.feed(b"data: [DO") == b""
    assert renamer.feed(b"NE]\n\n") == b"data: [DONE]\n\n"
    assert renamer.feed(b'data: {"partial') == b""
    assert renamer.flush() == b'data: {"partial'
    assert renamer.flush() == b""


def test_only_the_first_model_field_of_a_line_changes() -> None:
    line = b'data: {"model":"up","tool":{"model":"up"}}\n'
    assert StreamRenamer("pub").feed(line) == b'data: {"model":"pub","tool":{"model":"up"}}\n'


def test_escapes_in_names_stay_valid_json() -> None:
    line = b'data: {"model":"a\\"b","x":1}\n'
    out = StreamRenamer('p"q').feed(line)
    assert orjson.loads(out[6:]) == {"model": 'p"q', "x": 1}


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (
            b'{"id":"x","model":"up","choices":[]}',
            "application/json",
            b'{"id":"x","model":"pub","choices":[]}',
        ),
        # OpenAI's own bodies are pretty-printed.
        (
            b'{\n  "model": "up-2024",\n  "n": 1\n}',
            "application/json",
            b'{\n  "model":"pub",\n  "n": 1\n}',
        ),
        # Embeddings name the model after the vectors.
        (
            b'{"data":[{"embedding":[0.1]}],"model":"up"}',
            "application/json",
            b'{"data":[{"embedding":[0.1]}],"model":"pub"}',
        ),
        (b'{"id":"x"}', "application/json", b'{"id":"x"}'),
        (b'"model":"up"', "text/plain", b'"model":"up"'),
    ],
    ids=["compact", "pretty", "embeddings", "no-field", "not-json"],
)
def test_a_whole_body(body: bytes, content_type: str, expected: bytes) -> None:
    response = UpstreamResponse(200, content_type, body)
    assert renamed_response(response, "pub", "up").body == expected


def test_nothing_changes_when_the_backend_was_asked_for_the_public_name() -> None:
    response = UpstreamResponse(200, "application/json", b'{"model":"dated-id"}')
    assert renamed_response(response, "gpt", "gpt") is response
    assert stream_renamer("text/event-stream", "gpt", "gpt") is None
    assert stream_renamer("application/json", "pub", "up") is None
    assert isinstance(
        stream_renamer("text/event-stream; charset=utf-8", "pub", "up"), StreamRenamer
    )


def test_the_rename_never_touches_a_tool_inputs_model_key() -> None:
    from gateway.http.model_rename import renamed_response
    from providers.base import UpstreamResponse

    # A valid Messages answer whose keys come in another order (a Go or sorted-keys
    # Anthropic-compatible proxy): tool_use input is a JSON object, not a string, here.
    native_answer = orjson.dumps(
        {
            "content": [
                {
                    "type": "tool_use",
                    "id": "t",
                    "name": "switch_model",
                    "input": {"model": "gpt-4o"},
                }
            ],
            "id": "msg_1",
            "model": "claude-backend-id",
            "role": "assistant",
            "stop_reason": "tool_use",
            "type": "message",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    response = UpstreamResponse(
        200, "application/json", b'{"model":"claude-backend-id"}', None, native_body=native_answer
    )
    renamed = orjson.loads(renamed_response(response, "default", "claude-backend-id").native_body)
    assert renamed["content"][0]["input"] == {"model": "gpt-4o"}, renamed
    assert renamed["model"] == "default"
