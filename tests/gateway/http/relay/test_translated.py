"""The chunk loop the translating ingresses share: what a client format is told of the
backend's chunks, and how the relay ends a stream that fails, breaks or stops short."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable

import pytest

from gateway.http.anthropic_ingress.response_translation import ReplyContext as AnthropicContext
from gateway.http.anthropic_ingress.stream_translation import MessageEvents
from gateway.http.openai_reply import ChatReply, MessageOut
from gateway.http.relay.streaming import StreamOutcome
from gateway.http.relay.translated import (
    ClientEvents,
    StreamSummary,
    TranslatedStream,
    relay_translated,
    text_only,
)
from gateway.http.responses_ingress.response_translation import reply_context
from gateway.http.responses_ingress.responses_request import parse_responses_request
from gateway.http.responses_ingress.stream_translation import ResponseEvents
from providers.errors import ApiError, UpstreamTimeout
from tests.gateway.http.openai_chunks import (
    DONE,
    TEXT_STREAM,
    USAGE,
    call,
    chunk,
    feed_in_pieces,
)


class Recorder:
    """A client format that names what it is told."""

    def __init__(self) -> None:
        self.started = False
        self.summary: StreamSummary | None = None

    def start(self, chunk: ChatReply | None) -> bytes:
        if self.started:
            return b""
        self.started = True
        return b"<start>"

    def delta(self, delta: MessageOut) -> bytes:
        return f"<{delta.content}>".encode() if delta.content else b""

    def text(self, text: str) -> bytes:
        return f"<{text}>".encode()

    def end(self, summary: StreamSummary) -> bytes:
        self.summary = summary
        return b"<end>"

    def fail(self, error: ApiError) -> bytes:
        return f"<fail {error.code}>".encode()


def test_chunks_are_told_in_order_and_summed_up() -> None:
    recorder = Recorder()
    translator, out = feed_in_pieces(recorder, TEXT_STREAM, 3)
    assert out == b"<start><Hel><lo><end>"
    assert translator.finished and translator.failure is None
    summary = recorder.summary
    assert summary is not None and summary.usage is not None
    assert (summary.finish_reason, summary.output_chunks) == ("stop", 2)
    assert (summary.usage.prompt_tokens, summary.usage.cached_tokens) == (10, 4)


def test_a_backend_error_event_fails_the_stream_and_nothing_follows() -> None:
    error = b'data: {"error": "engine fell over"}\n\n'
    translator, out = feed_in_pieces(Recorder(), chunk({"content": "a"}) + error + DONE)
    assert out == b"<start><a><fail upstream_stream_error>"
    assert translator.finished and translator.failure is None


def test_unreadable_bytes_set_failure() -> None:
    translator, out = feed_in_pieces(Recorder(), chunk({"content": "a"}) + b"data: {nope\n\n")
    assert out == b"<start><a>"
    assert translator.failure is not None and not translator.finished


def test_a_runaway_line_sets_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("providers.transport.sse.MAX_PENDING_BYTES", 64)
    translator = TranslatedStream(Recorder())
    assert translator.feed(b"data: " + b"x" * 64) == b""
    failure = translator.failure
    assert failure is not None and not translator.finished
    assert failure.message == "backend sent a malformed stream: an event line exceeds 64 bytes"


async def relayed(
    parts: list[bytes], outcome: StreamOutcome, *, error_before: int | None = None
) -> tuple[bytes, bool]:
    """What the client gets, and whether the relayed chunks were closed; `error_before`: the
    relay records its own error before that part."""
    closed = False

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal closed
        try:
            for position, part in enumerate(parts):
                if position == error_before:
                    outcome.error = UpstreamTimeout("too slow")
                yield part
        finally:
            closed = True

    stream = TranslatedStream(Recorder())
    out = b"".join([part async for part in relay_translated(chunks(), outcome, stream)])
    return out, closed


async def test_a_whole_stream_is_relayed() -> None:
    outcome = StreamOutcome()
    out, closed = await relayed([chunk({"content": "a"}), DONE], outcome)
    assert out == b"<start><a><end>" and closed
    assert outcome.error is None and outcome.status == "ok"


async def test_the_relays_own_error_ends_the_stream() -> None:
    out, closed = await relayed(
        [chunk({"content": "a"}), b"", DONE], StreamOutcome(), error_before=1
    )
    assert out == b"<start><a><fail upstream_timeout>" and closed


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ([chunk({"content": "a"}), b"data: {nope\n\n", DONE], "unreadable stream chunk"),
        ([chunk({"content": "a"})], "before its end"),
    ],
    ids=["unreadable", "short"],
)
async def test_an_unreadable_or_short_stream_is_ended_by_the_gateway(
    parts: list[bytes], message: str
) -> None:
    outcome = StreamOutcome()
    out, closed = await relayed(parts, outcome)
    assert out == b"<start><a><fail upstream_protocol_error>" and closed
    assert outcome.error is not None and message in outcome.error.message
    assert outcome.status == "upstream_protocol_error"


class Told(Recorder):
    """A recorder that says whether a chunk came as a whole delta or as plain text."""

    def delta(self, delta: MessageOut) -> bytes:
        return f"<delta {delta.content}>".encode() if delta.content else b""

    def text(self, text: str) -> bytes:
        return f"<text {text}>".encode()


def test_plain_text_chunks_after_the_first_are_told_as_text() -> None:
    translator, out = feed_in_pieces(Told(), TEXT_STREAM, 5)
    # The first chunk opens the stream read whole; "Hel" and "lo" are plain text; the
    # finish and usage chunks are read whole again (and add no text).
    assert out == b"<start><text Hel><text lo><end>"
    assert translator.finished


@pytest.mark.parametrize(
    ("document", "text"),
    [
        ({"id": "c", "choices": [{"index": 0, "delta": {"content": "hi"}}]}, "hi"),
        ({"choices": [{"delta": {"role": "assistant", "content": ""}, "logprobs": None}]}, ""),
        ({"choices": [{"delta": {"content": "a", "tool_calls": None, "reasoning": None}}]}, "a"),
        ({"choices": [{"delta": {"content": "a"}}], "usage": None}, "a"),
        ({"choices": [{"delta": {"content": "a"}}], "usage": {"prompt_tokens": 1}}, None),
        ({"choices": [{"delta": {"content": "a"}, "finish_reason": "stop"}]}, None),
        ({"choices": [{"delta": {"content": "a"}, "stop_reason": "</s>"}]}, None),
        ({"choices": [{"index": 1, "delta": {"content": "a"}}]}, None),
        ({"choices": [{"delta": {"content": "a"}}, {"index": 1, "delta": {}}]}, None),
        ({"choices": [{"delta": {"content": "a", "reasoning_content": "hm"}}]}, None),
        ({"choices": [{"delta": {"content": "a", "tool_calls": []}}]}, None),
        ({"choices": [{"delta": {"content": "a", "audio": None}}]}, None),
        ({"choices": [{"delta": {"content": 7}}]}, None),
        ({"choices": [{"delta": {"content": None}}]}, None),
        ({"choices": [{"delta": "a"}]}, None),
        ({"choices": "a"}, None),
        ({"choices": [{"delta": {"content": "a"}}], "error": "boom"}, None),
        (["a"], None),
    ],
)
def test_text_only_takes_plain_text_chunks_and_nothing_else(
    document: object, text: str | None
) -> None:
    assert text_only(document) == text


def test_a_malformed_chunk_after_the_first_still_fails_the_stream() -> None:
    bad = b'data: {"choices": [{"index": 0, "delta": {"content": 7}}]}\n\n'
    translator, out = feed_in_pieces(Told(), chunk({"content": "a"}) + bad + DONE)
    assert out == b"<start><delta a>"
    assert translator.failure is not None and "unreadable" in translator.failure.message


MIXED_STREAM = (
    chunk({"role": "assistant", "content": ""})
    + chunk({"reasoning_content": "Think"})
    + chunk({"content": "Hel", "reasoning_content": None})
    + chunk({"content": "lo"})
    + chunk(call(0, "", "lookup"))
    + chunk(call(0, '{"q": 1}'))
    + chunk({"content": " again"})
    + chunk({}, "stop")
    + chunk(None, usage=USAGE)
    + DONE
)


@pytest.mark.parametrize(
    "events",
    [
        lambda: MessageEvents(AnthropicContext(model="m", stop_sequences=(), prompt_tokens=3)),
        lambda: ResponseEvents(
            reply_context(parse_responses_request(b'{"model": "m", "input": "hi"}'), 3)
        ),
    ],
    ids=["messages", "responses"],
)
@pytest.mark.parametrize("stream", [TEXT_STREAM, MIXED_STREAM], ids=["text", "mixed"])
def test_plain_text_read_straight_gives_the_events_of_the_whole_reading(
    events: Callable[[], ClientEvents], stream: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, fast = feed_in_pieces(events(), stream, 7)
    monkeypatch.setattr("gateway.http.relay.translated.text_only", lambda document: None)
    _, whole = feed_in_pieces(events(), stream, 7)
    ids = re.compile(rb"(msg|resp|rs|fc|call)_[0-9a-f]{24}")
    assert ids.sub(b"ID", fast) == ids.sub(b"ID", whole)
    assert b'"lo"' in fast
