"""A client's own Messages request through the Anthropic adapter: sent as it came (the
host's breakpoints added only to an unmarked one, on the blocks the gateway's edge made
each OpenAI message of), its headers passed on, and its stream's events kept as they came
beside the OpenAI translation."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.http.anthropic_ingress.messages_request import parse_messages_request
from gateway.http.anthropic_ingress.request_translation import to_chat_messages
from providers.anthropic.error_mapping import ErrorMapper
from providers.anthropic.native import _ends, native_body, native_headers
from providers.anthropic.stream_translation import DONE, StreamTranslator
from providers.base import ANTHROPIC_MESSAGES, NativeRequest
from providers.cache_breakpoints import CacheBreakpoints
from providers.errors import UpstreamStatusError
from providers.native import NativeEvents
from tests.providers.anthropic.fake_anthropic import split_each, sse
from tests.providers.anthropic.recorded import OVERLOADED, TOOL_STREAM, message_start

USE = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)"}
THINKING = {"type": "thinking", "thinking": "Read it first.", "signature": "c2ln"}
AGENT: dict[str, Any] = {
    "model": "claude-x",
    "max_tokens": 64,
    "system": "You edit code.",
    "tools": [{"name": "read", "input_schema": {"type": "object"}}],
    "messages": [
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": [THINKING, {"type": "text", "text": "Reading."}, USE]},
        {"role": "user", "content": [RESULT, {"type": "text", "text": "Go on."}]},
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "ZW5j"}, USE]},
        {"role": "user", "content": [RESULT]},
    ],
}
CONVERSATIONS = [
    AGENT,
    {**AGENT, "system": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": []}]},
    {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [RESULT, RESULT]}]},
]


def native(document: dict[str, Any], *, marked: bool = False) -> NativeRequest:
    headers = {"anthropic-version": "2023-06-01", "anthropic-beta": "a-beta"}
    return NativeRequest(ANTHROPIC_MESSAGES, orjson.dumps(document), headers, marked)


@pytest.mark.parametrize("document", CONVERSATIONS)
def test_each_openai_message_the_edge_makes_has_its_end_block(document: dict[str, Any]) -> None:
    made = to_chat_messages(parse_messages_request(orjson.dumps(document)))
    assert len(_ends(orjson.loads(orjson.dumps(document)))) == len(made)


def test_the_host_breakpoints_mark_the_blocks_ending_those_messages() -> None:
    # OpenAI messages: 0 system, 1 user, 2 assistant, 3 tool, 4 user "Go on.", 5 assistant,
    # 6 tool.
    sent = orjson.loads(native_body(native(AGENT), CacheBreakpoints((0, 3, 6), "1h")))
    mark = {"type": "ephemeral", "ttl": "1h"}
    assert sent["system"] == [{"type": "text", "text": "You edit code.", "cache_control": mark}]
    assert sent["messages"][2]["content"][0] == {**RESULT, "cache_control": mark}
    assert sent["messages"][2]["content"][1] == {"type": "text", "text": "Go on."}
    assert sent["messages"][4]["content"] == [{**RESULT, "cache_control": mark}]
    # Nothing else changed: thinking, its signature and the redacted block as they came.
    assert sent["messages"][1]["content"][0] == THINKING
    assert sent["messages"][3]["content"][0] == {"type": "redacted_thinking", "data": "ZW5j"}


def test_a_marked_request_or_no_breakpoints_is_sent_byte_for_byte() -> None:
    request = native(AGENT, marked=True)
    assert native_body(request, CacheBreakpoints((0,))) is request.body
    assert native_body(native(AGENT), None) == orjson.dumps(AGENT)


def test_the_clients_anthropic_headers_join_the_hosts() -> None:
    headers = native_headers(native(AGENT), {"traceparent": "00-ab-cd-01"})
    assert headers == {
        "traceparent": "00-ab-cd-01",
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "a-beta",
    }


def translator(events: NativeEvents) -> StreamTranslator:
    errors = ErrorMapper("claude-a", "sk-ant-secret")
    return StreamTranslator(errors, include_usage=True, created=42, native=events)


def test_a_native_stream_keeps_every_event_as_it_came_beside_the_chunks() -> None:
    events = NativeEvents()
    stream = translator(events)
    taken: list[tuple[str, bytes]] = []
    out = b""
    for piece in split_each(sse(*TOOL_STREAM)):
        out += stream.feed(piece)
        taken += events.take()
    assert out.endswith(DONE), "the OpenAI translation is whole as ever"
    assert [name for name, _ in taken] == [event["type"] for event in TOOL_STREAM]
    assert [orjson.loads(data) for _, data in taken] == TOOL_STREAM
    signature = orjson.loads(taken[3][1])["delta"]
    assert signature == {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}
    assert events.take() == []


def test_a_backends_error_event_is_not_kept() -> None:
    events = NativeEvents()
    stream = translator(events)
    stream.feed(sse(message_start())[0])
    with pytest.raises(UpstreamStatusError):
        stream.feed(sse(OVERLOADED)[0])
    assert [name for name, _ in events.take()] == ["message_start"]


IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}
USE = {"type": "tool_use", "id": "toolu_1", "name": "shot", "input": {}}
RESULT_WITH_IMAGE = {
    "type": "tool_result",
    "tool_use_id": "toolu_1",
    "content": [{"type": "text", "text": "screenshot"}, IMAGE],
}
SCREENSHOT_TURN: dict[str, Any] = {
    "model": "m",
    "max_tokens": 8,
    "messages": [
        {"role": "user", "content": "Take a screenshot."},
        {"role": "assistant", "content": [USE]},
        {"role": "user", "content": [RESULT_WITH_IMAGE]},
        {"role": "assistant", "content": "I see it."},
        {"role": "user", "content": "Now what?"},
    ],
}


def test_ends_match_edge_messages_with_image_in_tool_result() -> None:
    made = to_chat_messages(parse_messages_request(orjson.dumps(SCREENSHOT_TURN)))
    # user, assistant, tool, user(images), assistant, user = 6
    assert len(_ends(orjson.loads(orjson.dumps(SCREENSHOT_TURN)))) == len(made)


def test_host_breakpoint_after_assistant_lands_on_that_assistant() -> None:
    # OpenAI messages: 0 user, 1 assistant, 2 tool, 3 user (the image), 4 assistant, 5 user.
    sent = orjson.loads(native_body(native(SCREENSHOT_TURN), CacheBreakpoints((4,))))
    assert "cache_control" in sent["messages"][3]["content"][-1], sent["messages"]


THINKING_ONLY: dict[str, Any] = {
    "model": "m",
    "max_tokens": 8,
    "messages": [
        {"role": "user", "content": "Think."},
        # an answer cut by max_tokens while thinking: only its thinking block
        {"role": "assistant", "content": [THINKING]},
        {"role": "user", "content": "Go on."},
    ],
}


def test_host_breakpoint_never_marks_a_thinking_block() -> None:
    sent = orjson.loads(native_body(native(THINKING_ONLY), CacheBreakpoints((1,))))
    for turn in sent["messages"]:
        for block in turn["content"]:
            if block["type"] in ("thinking", "redacted_thinking"):
                assert "cache_control" not in block, block
