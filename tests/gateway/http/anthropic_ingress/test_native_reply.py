"""A Messages request for a backend of Anthropic's API (`native_reply`): the client's bytes
and its Anthropic headers, unsigned thinking taken out; the backend's own events written
back as the relay pulls their chunks, the model renamed, a failure ended with the
gateway's error event after what came before it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from gateway.http.anthropic_ingress.messages_request import parse_messages_request
from gateway.http.anthropic_ingress.native_reply import native_request, relay_native
from gateway.http.dialect import NativeRelay
from gateway.http.relay.streaming import StreamOutcome
from providers.base import ANTHROPIC_MESSAGES
from providers.errors import UpstreamTimeout
from providers.native import NativeEvents

SIGNED = {"type": "thinking", "thinking": "Plan.", "signature": "c2ln"}
UNSIGNED = {"type": "thinking", "thinking": "From an OpenAI backend.", "signature": ""}
REDACTED = {"type": "redacted_thinking", "data": "ZW5j"}
HEADERS = {
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "interleaved-thinking-2025-05-14",
    "x-api-key": "the gateway's own key",
    "authorization": "Bearer another",
}


def request(*assistant: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "claude",
        "max_tokens": 8,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [*assistant, {"type": "text", "text": "ok"}]},
            {"role": "user", "content": "more"},
        ],
    }


def test_the_clients_bytes_and_only_its_anthropic_headers_go_on() -> None:
    raw = orjson.dumps(request(SIGNED, REDACTED))
    native = native_request(parse_messages_request(raw), raw, HEADERS, marked=True)
    assert native.api == ANTHROPIC_MESSAGES and native.marked
    assert native.body is raw
    assert native.headers == {
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "interleaved-thinking-2025-05-14",
    }


def test_thinking_without_a_signature_is_taken_out() -> None:
    raw = orjson.dumps(request(UNSIGNED, SIGNED))
    native = native_request(parse_messages_request(raw), raw, None, marked=False)
    sent = orjson.loads(native.body)
    assert sent["messages"][1]["content"] == [SIGNED, {"type": "text", "text": "ok"}]
    assert native.headers == {}


def event(name: str, data: dict[str, Any]) -> tuple[str, bytes]:
    return name, orjson.dumps({"type": name, **data})


START = event("message_start", {"message": {"id": "msg_1", "model": "claude-upstream-id"}})
DELTA = event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "a"}})
STOP = event("message_stop", {})


async def pulled(
    events: NativeEvents, batches: list[list[tuple[str, bytes]]]
) -> AsyncIterator[bytes]:
    """The relay's chunks: each batch of native events lands as its chunk is translated."""
    for batch in batches:
        for name, data in batch:
            events.add(name, data)
        yield b"data: {}\n\n"


async def written(batches: list[list[tuple[str, bytes]]], outcome: StreamOutcome) -> list[bytes]:
    events = NativeEvents()
    chunks = pulled(events, batches)
    return [part async for part in relay_native(chunks, outcome, NativeRelay(events, "route"))]


async def test_events_go_out_as_their_chunks_are_pulled_the_model_renamed() -> None:
    parts = await written([[START], [DELTA], [STOP]], StreamOutcome())
    assert len(parts) == 3
    first = parts[0].split(b"\n")
    assert first[0] == b"event: message_start"
    assert orjson.loads(first[1].removeprefix(b"data: "))["message"]["model"] == "route"
    assert parts[1] == b"event: content_block_delta\ndata: " + DELTA[1] + b"\n\n"
    assert parts[2] == b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


async def test_a_failed_stream_ends_with_the_gateways_error_event() -> None:
    outcome = StreamOutcome()
    outcome.error = UpstreamTimeout("backend claude went silent", backend="claude")
    parts = await written([[START], [DELTA]], outcome)
    assert parts[-1].startswith(b"event: error\ndata: ")
    error = orjson.loads(parts[-1].split(b"data: ", 1)[1])
    assert error["type"] == "error" and "silent" in error["error"]["message"]
    assert not any(b"message_stop" in part for part in parts)


def test_a_turn_left_empty_without_unsigned_thinking_goes_translated() -> None:
    # An OpenAI-format backend's answer that was all reasoning (cut at max_tokens): the
    # gateway gave the client one thinking block with an empty signature.
    raw = orjson.dumps(
        request(UNSIGNED)
        | {
            "messages": [
                {"role": "user", "content": "Think hard."},
                {"role": "assistant", "content": [UNSIGNED]},
                {"role": "user", "content": "Go on."},
            ]
        }
    )
    assert native_request(parse_messages_request(raw), raw, HEADERS, marked=False) is None


async def test_closing_the_client_stream_closes_the_relay_under_it() -> None:
    events = NativeEvents()
    closed: list[bool] = []

    async def chunks() -> AsyncIterator[bytes]:
        try:
            for n in range(3):
                events.add("ping", b'{"type":"ping"}')
                yield b"data: %d\n\n" % n
        finally:
            closed.append(True)  # the relay's `finally`: the upstream stream's aclose()

    inner = chunks()
    out = relay_native(inner, StreamOutcome(), NativeRelay(events, None))
    assert await anext(out)
    await out.aclose()  # RelayResponse's finally when the client went away mid-send
    # relay_translated closes `chunks` in its finally; relay_native leaves it to the GC.
    assert closed == [True]


async def test_an_event_whose_data_had_several_lines_is_written_as_valid_sse() -> None:
    events = NativeEvents()
    # What SseDecoder gives for `data: {"type":"ping",\ndata: "x":1}\n\n`: lines joined by LF.
    events.add("ping", b'{"type":"ping",\n"x":1}')

    async def chunks() -> AsyncIterator[bytes]:
        yield b"data: x\n\n"

    written = b"".join(
        [c async for c in relay_native(chunks(), StreamOutcome(), NativeRelay(events, None))]
    )
    for line in written.split(b"\n"):
        assert line == b"" or line.startswith((b"event: ", b"data: ")), written


def test_a_request_only_anthropic_can_serve_is_routed_by_what_can_be_translated() -> None:
    from gateway.config.bounds import DEFAULT_BOUNDS
    from gateway.http.anthropic_ingress.messages_dialect import MESSAGES

    document = {"type": "document", "source": {"type": "text", "data": "x", "media_type": "t"}}
    body = request(SIGNED) | {
        "messages": [{"role": "user", "content": [document, {"type": "text", "text": "hi"}]}],
        "tools": [{"type": "web_search_20250305", "name": "web_search"}],
    }
    raw = orjson.dumps(body)
    translation = MESSAGES.read(raw, DEFAULT_BOUNDS, HEADERS)
    assert translation.native is not None and translation.native.body is raw
    assert translation.native.required is not None
    assert "server tool 'web_search_20250305'" in translation.native.required
    routed = orjson.loads(translation.body)
    assert routed["messages"] == [{"role": "user", "content": "hi"}] and "tools" not in routed
